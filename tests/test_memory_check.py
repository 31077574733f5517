"""The validator's own memory calculation (haap_solver.memory_check) against the cost model's.

Two calculations of the same per-GPU memory, written apart, must agree term by term on every plan
shape: devices, TP, shares, DP, layers, recomputation modes, stage positions, schedules, ZeRO
stages, precisions, model variants and measured profiles. Then the validator, which uses the
independent one, must reject a plan the cost model under-estimates (a memory bug in the cost model
no longer passes every cross-check silently).
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from haap_solver.cluster import NodeGroup
from haap_solver.cost.evaluate import CostModel, MemoryReport
from haap_solver.cost.profile import Profile, ProfileEntry, load_profile
from haap_solver.devices import DEVICE_PRESETS
from haap_solver.instance import Instance, make_instance
from haap_solver.memory_check import (
    MeasuredActivations,
    gpu_memory,
    layer_activations,
    measured_activations,
    stage_params,
)
from haap_solver.model import PRESETS, ModelSpec
from haap_solver.plan import Placement, Plan, ReplicaGroup, Stage
from haap_solver.training import TrainingSpec
from haap_solver.validate import plan_violations

PROFILE = Path(__file__).parent / "data" / "profiles" / "a100-small-gpt.toml"
DEVICES = ("A100-80G", "H100", "V100-32G", "L40S", "T4")
TOLERANCE = 1e-12


def rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1.0)


@st.composite
def models(draw: st.DrawFn) -> ModelSpec:
    heads = draw(st.sampled_from([8, 16, 32]))
    head_dim = draw(st.sampled_from([16, 64, 128]))
    gated = draw(st.booleans())
    kv = draw(st.sampled_from([None, heads, heads // 2, heads // 8]))
    return ModelSpec(
        name="m", num_layers=draw(st.integers(2, 40)), hidden_size=heads * head_dim,
        ffn_hidden_size=heads * draw(st.sampled_from([8, 64, 224, 448])),
        num_attention_heads=heads, num_kv_heads=kv,
        vocab_size=draw(st.sampled_from([1000, 50257, 128256])),
        seq_length=draw(st.sampled_from([128, 1024, 2048, 8192])), gated_mlp=gated,
        tied_embeddings=draw(st.booleans()), learned_position_embeddings=draw(st.booleans()),
        uses_dropout=draw(st.booleans()))


@st.composite
def trainings(draw: st.DrawFn) -> TrainingSpec:
    return TrainingSpec(
        global_batch_size=draw(st.sampled_from([8, 12, 64, 96])),
        dtype=draw(st.sampled_from(["bf16", "fp16", "fp32"])),
        zero_stage=draw(st.integers(0, 3)),
        schedules=("1f1b", "gpipe", "interleaved-1f1b"),
        virtual_stages=draw(st.integers(2, 4)),
        sequence_parallel=draw(st.booleans()), flash_attention=draw(st.booleans()),
        reserved_memory_gib=draw(st.sampled_from([0.0, 2.0, 3.5])))


@st.composite
def plans(draw: st.DrawFn, instance: Instance) -> Plan:
    """A plan of 1-5 stages with 1-3 replica groups each (structure is not validated here)."""
    groups = instance.cluster.node_groups
    schedule = draw(st.sampled_from(["1f1b", "gpipe", "interleaved-1f1b"]))
    # Megatron's interleaved schedule (and the validator) needs p >= 2 and m a multiple of p.
    p = draw(st.integers(2 if schedule == "interleaved-1f1b" else 1, 5))
    L = instance.model.num_layers
    cuts = sorted(draw(st.lists(st.integers(0, L), min_size=p - 1, max_size=p - 1)))
    bounds = [0, *cuts, L]
    stages = []
    for i in range(p):
        reps = []
        for _ in range(draw(st.integers(1, 3))):
            g = draw(st.sampled_from(groups))
            count = draw(st.integers(1, 16))
            reps.append(ReplicaGroup(
                node_group=g.name, device=g.device, count=count,
                tp=draw(st.sampled_from([1, 2, 4, 8])),
                micro_batch_share=draw(st.integers(1, 6)),
                placement=(Placement(node=0, replicas=count),)))
        stages.append(Stage(first_layer=bounds[i], num_layers=bounds[i + 1] - bounds[i],
                            recompute=draw(st.sampled_from(["none", "selective", "full"])),
                            replicas=tuple(reps)))
    m = draw(st.integers(1, 64)) * (p if schedule == "interleaved-1f1b" else 1)
    return Plan(schedule=schedule,  # type: ignore[arg-type]
                micro_batch_size=1, num_micro_batches=m, stages=tuple(stages))


@st.composite
def profiles(draw: st.DrawFn, devices: tuple[str, ...]) -> Profile | None:
    """None, or measured points (some without activations) for some of the devices."""
    if draw(st.booleans()):
        return None
    entries = []
    for device in draw(st.lists(st.sampled_from(devices), min_size=1, max_size=2, unique=True)):
        for tp in draw(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=3,
                                unique=True)):
            for mb in draw(st.lists(st.integers(1, 6), min_size=1, max_size=3, unique=True)):
                act = draw(st.one_of(st.none(), st.floats(1e5, 1e10)))
                entries.append(ProfileEntry(device=device, tp=tp, micro_batch=mb,
                                            layer_fwd_s=1e-3, layer_bwd_s=2e-3,
                                            layer_activation_bytes=act))
    return Profile(entries)


def instance_of(model: ModelSpec, training: TrainingSpec, devices: list[str]) -> Instance:
    if training.dtype == "bf16" and not all(DEVICE_PRESETS[d].supports_bf16 for d in devices):
        training = replace(training, dtype="fp16")  # V100 and T4 have no bf16
    groups = [NodeGroup(name=f"g{k}", device=d, num_nodes=2, gpus_per_node=8,
                        nic_gbit_s=200.0)
              for k, d in enumerate(devices)]
    return make_instance(model=model, training=training, node_groups=groups)


def cost_model_memory(cm: CostModel, plan: Plan, i: int, j: int) -> MemoryReport:
    """What the validator asked before it had its own calculation (and the searches ask)."""
    p = len(plan.stages)
    stage = plan.stages[i]
    r = stage.replicas[j]
    n, first, last = cm.in_flight(plan.schedule, i, p, plan.num_micro_batches)
    return cm.replica_memory(device=r.device, tp=r.tp, share=r.micro_batch_share, dp=stage.dp,
                             num_layers=stage.num_layers, recompute=stage.recompute,
                             params=cm.stage_params(stage, i, p), is_first=i == 0,
                             is_last=i == p - 1, in_flight=n, in_flight_first=first,
                             in_flight_last=last)


def assert_agree(instance: Instance, plan: Plan, profile: Profile | None) -> None:
    cm = CostModel(instance, profile=profile)
    measured = measured_activations(profile)
    for i, stage in enumerate(plan.stages):
        for j in range(len(stage.replicas)):
            mine = gpu_memory(instance, plan, i, j, measured=measured)
            theirs = cost_model_memory(cm, plan, i, j)
            pairs = {"weights": (mine.weights_bytes, theirs.weights),
                     "grads": (mine.grads_bytes, theirs.grads),
                     "optimizer": (mine.optimizer_bytes, theirs.optimizer),
                     "activations": (mine.activations_bytes, theirs.activations),
                     "extras": (mine.extras_bytes, theirs.extras),
                     "reserved": (mine.reserved_bytes, theirs.reserved),
                     "capacity": (mine.capacity_bytes, theirs.capacity),
                     "total": (mine.total_bytes, theirs.total)}
            for what, (a, b) in pairs.items():
                assert rel(a, b) <= TOLERANCE, (what, i, j, a, b, plan)
            assert mine.fits == theirs.fits


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_independent_memory_equals_cost_model(data: st.DataObject) -> None:
    model = data.draw(models())
    training = data.draw(trainings())
    devices = data.draw(st.lists(st.sampled_from(DEVICES), min_size=1, max_size=3, unique=True))
    instance = instance_of(model, training, devices)
    plan = data.draw(plans(instance))
    profile = data.draw(profiles(tuple(devices)))
    assert_agree(instance, plan, profile)


@pytest.mark.parametrize("name", ["gpt3-175b", "gpt3-1.3b", "llama3-8b", "llama3-70b",
                                  "llama3.2-1b", "llama3.1-405b"])
def test_presets_agree_at_every_position(name: str) -> None:
    """The shipped presets, every recomputation mode and schedule, first/middle/last stages."""
    model = PRESETS[name]
    for zero in (0, 1, 3):
        training = TrainingSpec(global_batch_size=64, zero_stage=zero,
                                schedules=("1f1b", "gpipe", "interleaved-1f1b"))
        instance = instance_of(model, training, ["A100-80G", "H100"])
        for schedule in ("1f1b", "gpipe", "interleaved-1f1b"):
            for rc in ("none", "selective", "full"):
                reps = (ReplicaGroup(node_group="g0", device="A100-80G", count=2, tp=4,
                                     micro_batch_share=1,
                                     placement=(Placement(node=0, replicas=2),)),
                        ReplicaGroup(node_group="g1", device="H100", count=1, tp=8,
                                     micro_batch_share=2,
                                     placement=(Placement(node=0, replicas=1),)))
                per = model.num_layers // 4
                stages = tuple(Stage(first_layer=k * per, num_layers=per if k < 3 else
                                     model.num_layers - 3 * per, recompute=rc, replicas=reps)
                               for k in range(4))
                plan = Plan(schedule=schedule, micro_batch_size=4, num_micro_batches=16,
                            stages=stages)
                assert_agree(instance, plan, None)


def test_shipped_profile_agrees() -> None:
    """The test profile's interpolated, extrapolated and TP-scaled activations."""
    profile = load_profile(PROFILE)
    model = ModelSpec(name="small", num_layers=8, hidden_size=1024, ffn_hidden_size=4096,
                      num_attention_heads=16, vocab_size=50257, seq_length=1024)
    training = TrainingSpec(global_batch_size=64, schedules=("1f1b", "gpipe"))
    instance = instance_of(model, training, ["A100-80G", "H100", "V100-32G"])
    measured = measured_activations(profile)
    assert measured is not None
    checked = 0
    for device in ("A100-80G", "H100"):
        for tp in (1, 2, 4, 8):
            for share in range(1, 9):
                theirs = CostModel(instance, profile=profile).layer_cost(device, tp, share, "none")
                mine = measured.at(device, tp, share)
                if mine is None:
                    mine = layer_activations(model, training, batch=share, tp=tp,
                                             recompute="none")
                assert rel(mine, theirs.activation_bytes) <= TOLERANCE, (device, tp, share)
                checked += 1
    assert checked == 64


def test_interpolation_by_hand() -> None:
    """The plain interpolation against values worked out by hand."""
    m = MeasuredActivations([("d", 2, 2, 100.0), ("d", 2, 4, 300.0), ("d", 8, 1, 40.0),
                             ("e", 1, 3, None), ("e", 1, 5, 10.0)])
    assert m.at("d", 2, 3) == 200.0  # between
    assert m.at("d", 2, 6) == 500.0  # above: through (2, 100) and (4, 300)
    assert m.at("d", 2, 1) == 0.0  # below: 100 - 100 = 0, clamped at 0
    assert m.at("d", 8, 3) == 120.0  # single point: proportional
    assert m.at("d", 4, 2) == 50.0  # TP 4: nearest is 2 (tie with 8: the smaller), x 2/4
    assert m.at("d", 16, 1) == 20.0  # TP 16 from TP 8, x 8/16
    assert m.at("e", 1, 4) is None  # a neighbour without a measurement
    assert m.at("e", 1, 5) == 10.0


def test_parameters_by_hand() -> None:
    """GPT-3 175B: 174.6B parameters (Brown et al. 2020 quote 175.0B), 12 h^2 + 13 h per layer."""
    gpt = PRESETS["gpt3-175b"]
    h = gpt.hidden_size
    one = stage_params(gpt, num_layers=1, is_first=False, is_last=False, num_stages=3)
    assert one == 12 * h * h + 13 * h
    whole = stage_params(gpt, num_layers=96, is_first=True, is_last=True, num_stages=1)
    assert whole == 96 * (12 * h * h + 13 * h) + 50257 * h + 2048 * h + 2 * h
    assert 174.5e9 < whole < 174.7e9
    # Llama-3 8B, untied: 8.03B parameters (Meta's model card).
    llama = PRESETS["llama3-8b"]
    total = stage_params(llama, num_layers=32, is_first=True, is_last=True, num_stages=1)
    assert abs(total - 8.03e9) < 0.01e9


def test_korthikanti_table_2() -> None:
    """Korthikanti et al. 2022, Table 2, on GPT-3 175B (t = 8, s = 2048, b = 1)."""
    gpt = PRESETS["gpt3-175b"]
    s, h, a, t = gpt.seq_length, gpt.hidden_size, gpt.num_attention_heads, 8
    base = TrainingSpec(global_batch_size=8, flash_attention=False, sequence_parallel=False)
    sp = replace(base, sequence_parallel=True)
    sbh = s * h

    def acts(training: TrainingSpec, tp: int, rc: str) -> float:
        return layer_activations(gpt, training, batch=1, tp=tp, recompute=rc)

    assert math.isclose(acts(base, 1, "none"), sbh * (34 + 5 * a * s / h))
    assert math.isclose(acts(base, t, "none"), sbh * (10 + 24 / t + 5 * a * s / (h * t)))
    assert math.isclose(acts(sp, t, "none"), sbh / t * (34 + 5 * a * s / h))
    assert math.isclose(acts(sp, t, "selective"), 34 * sbh / t)
    assert math.isclose(acts(base, t, "selective"), sbh * (10 + 24 / t))
    assert math.isclose(acts(base, t, "full"), 2 * sbh)


def _overflowing_case() -> tuple[Instance, Plan]:
    """GPT-3 350M on one 16 GiB T4, GPipe with 32 micro-batches in flight: far over capacity."""
    model = PRESETS["gpt3-350m"]
    training = TrainingSpec(global_batch_size=32, dtype="fp16", schedules=("gpipe",),
                            recompute=("none",))
    instance = make_instance(model=model, training=training, node_groups=[
        NodeGroup(name="g0", device="T4", num_nodes=1, gpus_per_node=1,
                  nic_gbit_s=100.0)])
    rep = ReplicaGroup(node_group="g0", device="T4", count=1, tp=1, micro_batch_share=1,
                       placement=(Placement(node=0, replicas=1),))
    plan = Plan(schedule="gpipe", micro_batch_size=1, num_micro_batches=32,
                stages=(Stage(first_layer=0, num_layers=24, recompute="none", replicas=(rep,)),))
    return instance, plan


def test_validator_rejects_overflow_with_breakdown() -> None:
    instance, plan = _overflowing_case()
    violations = plan_violations(instance, plan)
    assert len(violations) == 1
    msg = violations[0]
    assert msg.startswith("stages[0].replicas[0] needs ")
    assert "GiB per T4 but it has 16.00 GiB" in msg
    assert "for 32 micro-batches in flight" in msg


def test_validator_catches_a_cost_model_memory_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    """The planted bug of issue 25: activations without the micro-batches in flight. The search
    and evaluate() would both believe the plan fits; the validator must still reject it."""
    instance, plan = _overflowing_case()
    real = CostModel.replica_memory

    def forgetful(self: CostModel, **kw: object) -> MemoryReport:
        kw["in_flight"] = kw["in_flight_first"] = kw["in_flight_last"] = 1
        return real(self, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(CostModel, "replica_memory", forgetful)
    assert CostModel(instance).evaluate(plan).memory_ok  # the buggy cost model says it fits
    assert plan_violations(instance, plan)  # the validator does not


def test_validator_accepts_what_fits() -> None:
    """Same plan with one micro-batch of GPipe in flight and recomputation: fits the T4."""
    instance, plan = _overflowing_case()
    training = replace(instance.training, global_batch_size=1, recompute=("full",))
    instance = replace(instance, training=training)
    plan = replace(plan, num_micro_batches=1,
                   stages=(replace(plan.stages[0], recompute="full"),))
    assert plan_violations(instance, plan) == []
    assert CostModel(instance).evaluate(plan).memory_ok
