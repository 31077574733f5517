"""Property tests of the cost model and the validator (hypothesis).

Valid plans come from a small strategy (1-4 stages on a 2-node x 8-GPU cluster, one or two replica
groups per stage, any layer split, empty first/last stages allowed); the tests then change one thing
and check what must follow.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from haap_solver.cluster import NodeGroup
from haap_solver.cost.evaluate import BREAKDOWN_KEYS, CostModel, Evaluation
from haap_solver.devices import DEVICE_PRESETS, DeviceType
from haap_solver.instance import Instance, make_instance
from haap_solver.model import ModelSpec, model_preset
from haap_solver.plan import Placement, Plan, ReplicaGroup, Stage
from haap_solver.training import RECOMPUTE_MODES, SCHEDULES, TrainingSpec
from haap_solver.validate import plan_violations

# HAAP_PROPERTY_EXAMPLES raises the example count for a stress run (CI keeps 100).
SETTINGS = settings(max_examples=int(os.environ.get("HAAP_PROPERTY_EXAMPLES", "100")),
                    deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

# Small GPT: every plan of the strategy fits an 80 GB GPU.
SMALL = ModelSpec(name="small-gpt", num_layers=8, hidden_size=1024, ffn_hidden_size=4096,
                  num_attention_heads=16, vocab_size=32000, seq_length=1024, uses_dropout=True,
                  learned_position_embeddings=True)
BASE_DEVICE = DEVICE_PRESETS["A100-80G"]
GROUP = "g"
DEVICE = "X"


def make(*, zero_stage: int = 1, schedules: tuple[str, ...] = SCHEDULES,
         recompute: tuple[str, ...] = RECOMPUTE_MODES, device: DeviceType | None = None,
         nic_gbit_s: float = 200.0, overlap: bool = True, model: ModelSpec = SMALL,
         num_nodes: int = 2, gpus_per_node: int = 8, global_batch: int = 32) -> Instance:
    dev = replace(device or BASE_DEVICE, name=DEVICE)
    training = TrainingSpec(global_batch_size=global_batch, zero_stage=zero_stage,
                            schedules=schedules, recompute=recompute,  # type: ignore[arg-type]
                            overlap_grad_reduce=overlap,
                            empty_end_stages=True)  # (the plans drawn may have empty ends)
    group = NodeGroup(name=GROUP, device=DEVICE, num_nodes=num_nodes,
                      gpus_per_node=gpus_per_node, nic_gbit_s=nic_gbit_s)
    return make_instance(model=model, training=training, node_groups=[group],
                         extra_devices={DEVICE: dev})


# The validator's instance restricts recomputation and schedule so that both can be violated.
VAL_INST = make(schedules=("1f1b",), recompute=("none", "selective"))


def _place(free: list[int], tp: int, count: int) -> tuple[Placement, ...] | None:
    """Greedy placement of `count` replicas of `tp` GPUs; updates `free`, or None if impossible."""
    trial = list(free)
    per_node: dict[int, int] = {}
    for _ in range(count):
        node = next((n for n, f in enumerate(trial) if f >= tp), None)
        if node is None:
            return None
        trial[node] -= tp
        per_node[node] = per_node.get(node, 0) + 1
    free[:] = trial
    return tuple(Placement(node=n, replicas=k) for n, k in sorted(per_node.items()))


@st.composite
def plans(draw: st.DrawFn, inst: Instance, min_stages: int = 1, max_stages: int = 4) -> Plan:
    m, t = inst.model, inst.training
    group = inst.cluster.node_groups[0]
    total_gpus = group.num_gpus
    p = draw(st.integers(min_stages, min(max_stages, m.num_layers, total_gpus)))
    # Cut points 0..L (unique): only the first and the last stage can end up empty.
    cuts = sorted(draw(st.lists(st.integers(0, m.num_layers), min_size=p - 1, max_size=p - 1,
                                unique=True)))
    bounds = [0, *cuts, m.num_layers]
    mbs = draw(st.sampled_from([b for b in (1, 2, 4, 8) if t.global_batch_size % b == 0]))
    free = [group.gpus_per_node] * group.num_nodes
    stages = []
    for i in range(p):
        reserve = p - i - 1  # one GPU for each later stage
        options = []
        for tp in (1, 2, 4, 8):
            if tp > group.gpus_per_node or any(n % tp for n in (
                    m.num_attention_heads, m.kv_heads, m.ffn_hidden_size)):
                continue
            for dp in (d for d in range(1, mbs + 1) if mbs % d == 0):
                trial = list(free)
                if _place(trial, tp, dp) is not None and sum(trial) >= reserve:
                    options.append((tp, dp))
        tp, dp = draw(st.sampled_from(options))
        if dp >= 2 and draw(st.booleans()):
            # Heterogeneous shares: one replica takes x sequences, the other dp - 1 take y each.
            y = draw(st.integers(1, (mbs - 1) // (dp - 1)))
            shares = [(1, mbs - (dp - 1) * y), (dp - 1, y)]
        else:
            shares = [(dp, mbs // dp)]
        groups = []
        for count, share in shares:
            placement = _place(free, tp, count)
            assert placement is not None
            groups.append(ReplicaGroup(node_group=group.name, device=group.device, count=count,
                                       tp=tp, micro_batch_share=share, placement=placement))
        stages.append(Stage(first_layer=bounds[i], num_layers=bounds[i + 1] - bounds[i],
                            recompute=draw(st.sampled_from(t.recompute)),
                            replicas=tuple(groups)))
    return Plan(schedule=draw(st.sampled_from(t.schedules)), micro_batch_size=mbs,
                num_micro_batches=t.global_batch_size // mbs, stages=tuple(stages))


def with_stage(plan: Plan, i: int, **changes: object) -> Plan:
    stages = list(plan.stages)
    stages[i] = replace(stages[i], **changes)  # type: ignore[arg-type]
    return replace(plan, stages=tuple(stages))


def with_replica(plan: Plan, i: int, j: int, **changes: object) -> Plan:
    reps = list(plan.stages[i].replicas)
    reps[j] = replace(reps[j], **changes)  # type: ignore[arg-type]
    return with_stage(plan, i, replicas=tuple(reps))


def stage_time(ev: Evaluation, i: int) -> float:
    return ev.stages[i].time_per_micro_batch_s


def stage_memory(ev: Evaluation, i: int) -> list[float]:
    return [r.memory.total for r in ev.stages[i].replicas]


LE = 1 + 1e-9  # relative slack for floating-point noise


# -- The strategy itself -------------------------------------------------------------------------
@SETTINGS
@given(plans(VAL_INST))
def test_generated_plans_are_valid(plan: Plan) -> None:
    assert plan_violations(VAL_INST, plan) == []


# -- Monotonicity in the layer count -------------------------------------------------------------
@SETTINGS
@given(st.data(), st.integers(0, 3))
def test_more_layers_never_faster_or_lighter(data: st.DataObject, zero_stage: int) -> None:
    inst = make(zero_stage=zero_stage)
    plan = data.draw(plans(inst))
    i = data.draw(st.integers(0, plan.num_stages - 1))
    cm = CostModel(inst)
    before = cm.evaluate(plan)
    n = plan.stages[i].num_layers
    after = cm.evaluate(with_stage(plan, i, num_layers=n + data.draw(st.integers(1, 3))))
    assert stage_time(before, i) <= stage_time(after, i) * LE
    for b, a in zip(stage_memory(before, i), stage_memory(after, i), strict=True):
        assert b <= a * LE


@SETTINGS
@given(st.data(), st.integers(0, 3), st.booleans())
def test_moving_a_layer_moves_cost_monotonically(data: st.DataObject, zero_stage: int,
                                                 forward: bool) -> None:
    """Moving a layer from stage j to stage k = j +- 1: j gets no slower or heavier, k no faster
    or lighter."""
    inst = make(zero_stage=zero_stage)
    plan = data.draw(plans(inst, min_stages=2))
    a = data.draw(st.integers(0, plan.num_stages - 2))  # boundary between stages a and a + 1
    sa, sb = plan.stages[a], plan.stages[a + 1]
    if forward:  # the last layer of a moves to a + 1
        giver, taker = a, a + 1
        moved = with_stage(with_stage(plan, a, num_layers=sa.num_layers - 1), a + 1,
                           first_layer=sb.first_layer - 1, num_layers=sb.num_layers + 1)
    else:  # the first layer of a + 1 moves to a
        giver, taker = a + 1, a
        moved = with_stage(with_stage(plan, a, num_layers=sa.num_layers + 1), a + 1,
                           first_layer=sb.first_layer + 1, num_layers=sb.num_layers - 1)
    if plan.stages[giver].num_layers == 0:
        return
    cm = CostModel(inst)
    before, after = cm.evaluate(plan), cm.evaluate(moved)
    assert stage_time(after, giver) <= stage_time(before, giver) * LE
    assert stage_time(before, taker) <= stage_time(after, taker) * LE
    for b, x in zip(stage_memory(before, giver), stage_memory(after, giver), strict=True):
        assert x <= b * LE
    for b, x in zip(stage_memory(before, taker), stage_memory(after, taker), strict=True):
        assert b <= x * LE


# -- A faster device never makes a plan slower ----------------------------------------------------
@SETTINGS
@given(st.data(), st.integers(0, 3), st.booleans(),
       st.sampled_from(["peak_tflops", "hbm_gb_s", "intra_node_gb_s", "nic_gbit_s"]),
       st.floats(1.0, 8.0))
def test_faster_hardware_never_slower(data: st.DataObject, zero_stage: int, overlap: bool,
                                      what: str, factor: float) -> None:
    base = make(zero_stage=zero_stage, overlap=overlap)
    if what == "nic_gbit_s":
        fast = make(zero_stage=zero_stage, overlap=overlap, nic_gbit_s=200.0 * factor)
    else:
        dev = replace(BASE_DEVICE, **{what: getattr(BASE_DEVICE, what) * factor})
        fast = make(zero_stage=zero_stage, overlap=overlap, device=dev)
    plan = data.draw(plans(base))
    slow_t = CostModel(base).evaluate(plan).iteration_time_s
    fast_t = CostModel(fast).evaluate(plan).iteration_time_s
    assert fast_t <= slow_t * LE


# -- Evaluation invariants ---------------------------------------------------------------------
@SETTINGS
@given(st.data(), st.integers(0, 3), st.booleans())
def test_breakdown_adds_up_and_utilisation_bounded(data: st.DataObject, zero_stage: int,
                                                   overlap: bool) -> None:
    inst = make(zero_stage=zero_stage, overlap=overlap)
    plan = data.draw(plans(inst))
    ev = CostModel(inst).evaluate(plan)
    assert set(ev.breakdown) == set(BREAKDOWN_KEYS)
    assert sum(ev.breakdown.values()) == pytest.approx(ev.iteration_time_s, rel=1e-9)
    for key, value in ev.breakdown.items():
        assert value >= -1e-9 * ev.iteration_time_s, key
    assert 0 < ev.mfu <= ev.hfu * LE
    assert ev.hfu <= 1.0
    assert ev.memory_ok
    assert ev.num_gpus_used == plan.num_gpus
    assert ev.tokens_per_s == pytest.approx(
        inst.training.global_batch_size * inst.model.seq_length / ev.iteration_time_s)


# -- The validator rejects every kind of corrupted plan -----------------------------------------
def _gap(plan: Plan, d: st.DataObject) -> Plan:
    i = d.draw(st.integers(0, plan.num_stages - 1))
    s = plan.stages[i]
    return with_stage(plan, i, first_layer=s.first_layer + 1, num_layers=max(0, s.num_layers - 1))


def _overlap(plan: Plan, d: st.DataObject) -> Plan:
    i = d.draw(st.integers(1, plan.num_stages - 1))
    s = plan.stages[i]
    return with_stage(plan, i, first_layer=s.first_layer - 1, num_layers=s.num_layers + 1)


def _wrong_total(plan: Plan, d: st.DataObject) -> Plan:
    last = plan.num_stages - 1
    return with_stage(plan, last, num_layers=plan.stages[last].num_layers
                      + d.draw(st.integers(1, 3)))


def _empty_middle(plan: Plan, d: st.DataObject) -> Plan:
    i = d.draw(st.integers(1, plan.num_stages - 2))
    s, nxt = plan.stages[i], plan.stages[i + 1]
    out = with_stage(plan, i, num_layers=0)
    return with_stage(out, i + 1, first_layer=s.first_layer,
                      num_layers=s.num_layers + nxt.num_layers)


def _node_overuse(plan: Plan, d: st.DataObject) -> Plan:
    i = d.draw(st.integers(0, plan.num_stages - 1))
    r = plan.stages[i].replicas[0]
    extra = 8 // r.tp + 1
    first = replace(r.placement[0], replicas=r.placement[0].replicas + extra)
    return with_replica(plan, i, 0, count=r.count + extra,
                        placement=(first, *r.placement[1:]))


def _group_budget(plan: Plan, d: st.DataObject) -> Plan:
    i = d.draw(st.integers(0, plan.num_stages - 1))
    hog = ReplicaGroup(node_group=GROUP, device=DEVICE, count=16, tp=1, micro_batch_share=1,
                       placement=(Placement(node=0, replicas=8), Placement(node=1, replicas=8)))
    return with_stage(plan, i, replicas=(*plan.stages[i].replicas, hog))


def _replica_edit(**changes: object):  # type: ignore[no-untyped-def]
    def corrupt(plan: Plan, d: st.DataObject) -> Plan:
        i = d.draw(st.integers(0, plan.num_stages - 1))
        j = d.draw(st.integers(0, len(plan.stages[i].replicas) - 1))
        r = plan.stages[i].replicas[j]
        values = {k: (v(r) if callable(v) else v) for k, v in changes.items()}
        return with_replica(plan, i, j, **values)
    return corrupt


def _bad_placement_node(plan: Plan, d: st.DataObject) -> Plan:
    i = d.draw(st.integers(0, plan.num_stages - 1))
    r = plan.stages[i].replicas[0]
    bad = replace(r.placement[-1], node=d.draw(st.sampled_from([2, 5, -1])))
    return with_replica(plan, i, 0, placement=(*r.placement[:-1], bad))


def _recompute(plan: Plan, d: st.DataObject) -> Plan:
    return with_stage(plan, d.draw(st.integers(0, plan.num_stages - 1)), recompute="full")


CORRUPTIONS = {
    # kind: (min stages, corruption, pattern one message must match)
    "layer gap": (1, _gap, r"leaves a gap"),
    "layer overlap": (2, _overlap, r"overlaps the previous stage"),
    "wrong total layers": (1, _wrong_total, r"the stages end at layer \d+ but the model has 8"),
    "empty middle stage": (3, _empty_middle, r"holds no layers"),
    "gpu over-use on a node": (1, _node_overuse,
                               r"node \d of node group 'g' is given \d+ GPUs but has 8"),
    "node-group budget": (1, _group_budget, r"node group 'g' is given \d+ GPUs but has 16"),
    "tp spans nodes": (1, _replica_edit(tp=16), r"tp 16 spans nodes"),
    "tp does not divide heads": (1, _replica_edit(tp=3),
                                 r"tp 3 does not divide the model's num_attention_heads"),
    "batch arithmetic": (1, lambda p, d: replace(p, num_micro_batches=p.num_micro_batches + 1),
                         r"but training.global_batch_size is 32"),
    "replica shares": (1, _replica_edit(micro_batch_share=lambda r: r.micro_batch_share + 1),
                       r"replica shares add up to \d+ sequences"),
    "unknown node group": (1, _replica_edit(node_group="nope"),
                           r"node_group 'nope' is not a node group"),
    "device mismatch": (1, _replica_edit(device="H100"), r"device is 'H100' but node group 'g'"),
    "placement node out of range": (1, _bad_placement_node, r"is outside node group 'g'"),
    "placement count": (1, _replica_edit(count=lambda r: r.count + 1),
                        r"placement places \d+ replicas but count is \d+"),
    "disallowed recompute": (1, _recompute, r"recompute 'full' is not allowed"),
    "disallowed schedule": (1, lambda p, d: replace(p, schedule="gpipe"),
                            r"schedule 'gpipe' is not allowed"),
}


@pytest.mark.parametrize("kind", list(CORRUPTIONS))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_validator_rejects_corrupted_plans(kind: str, data: st.DataObject) -> None:
    min_stages, corrupt, pattern = CORRUPTIONS[kind]
    plan = data.draw(plans(VAL_INST, min_stages=min_stages))
    assert plan_violations(VAL_INST, plan) == []
    violations = plan_violations(VAL_INST, corrupt(plan, data))
    assert violations, kind
    assert all(isinstance(v, str) and v for v in violations)
    assert any(re.search(pattern, v) for v in violations), violations


# A 13B model on a single 24 GB GPU: 16 bytes of model state per parameter alone is 208 GB.
HUGE_INST = make(model=model_preset("gpt3-13b"), device=DEVICE_PRESETS["A10"], num_nodes=1,
                 gpus_per_node=1, global_batch=8, zero_stage=0,
                 schedules=("1f1b", "gpipe"))  # one GPU: no interleaving (it needs 2 stages)


@SETTINGS
@given(plans(HUGE_INST))
def test_validator_rejects_memory_overflow(plan: Plan) -> None:
    violations = plan_violations(HUGE_INST, plan)
    assert any(re.search(r"needs [\d.]+ GiB per X but it has 24\.00 GiB", v)
               for v in violations), violations
    assert not CostModel(HUGE_INST).evaluate(plan).memory_ok
