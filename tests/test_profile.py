"""Measured profiles (haap_solver.cost.profile, docs/cost-model.md Sec. 9): exact hits,
interpolation, flagged extrapolation and TP scaling, and instances that point at a profile file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from haap_solver.cost import flops
from haap_solver.cost.evaluate import CostModel
from haap_solver.cost.profile import Profile, load_profile
from haap_solver.costing import evaluate
from haap_solver.errors import InputError
from haap_solver.instance import Instance, load_instance
from haap_solver.plan import Placement, Plan, ReplicaGroup, Stage
from haap_solver.validate import plan_violations

DATA = Path(__file__).parent / "data" / "profiles"
PROFILE_FILE = DATA / "a100-small-gpt.toml"
A100 = "A100-80G"


@pytest.fixture(scope="module")
def profile() -> Profile:
    return load_profile(PROFILE_FILE)


def test_devices(profile: Profile) -> None:
    assert profile.devices == ["A100-80G", "H100"]
    assert profile.has_device(A100) and not profile.has_device("V100-32G")


def test_exact_hit_is_the_measured_entry(profile: Profile) -> None:
    e = profile.lookup(A100, 1, 2)
    assert (e.tp, e.micro_batch) == (1, 2)
    assert e.layer_fwd_s == 1.9e-3 and e.layer_bwd_s == 4.0e-3
    assert e.head_fwd_s == 5.8e-3 and e.layer_optimizer_s == 5.0e-4
    assert e.layer_activation_bytes == 8.0e7
    assert e.extrapolated is None


def test_interpolation_inside_the_measured_range(profile: Profile) -> None:
    e = profile.lookup(A100, 1, 3)  # halfway between micro-batches 2 and 4
    assert e.micro_batch == 3 and e.extrapolated is None
    assert e.layer_fwd_s == pytest.approx((1.9e-3 + 3.7e-3) / 2)
    assert e.layer_bwd_s == pytest.approx((4.0e-3 + 7.8e-3) / 2)
    assert e.embedding_fwd_s == pytest.approx((1.8e-4 + 3.4e-4) / 2)
    assert e.head_bwd_s == pytest.approx((1.16e-2 + 2.28e-2) / 2)
    assert e.layer_activation_bytes == pytest.approx(1.2e8)
    # The optimizer step does not depend on the micro-batch: nearest point (tie -> smaller).
    assert e.layer_optimizer_s == 5.0e-4


def test_extrapolation_above_the_range_is_flagged(profile: Profile) -> None:
    e = profile.lookup(A100, 1, 8)  # the line through micro-batches 2 and 4
    assert e.layer_fwd_s == pytest.approx(3.7e-3 + 2 * (3.7e-3 - 1.9e-3))
    assert e.layer_bwd_s == pytest.approx(7.8e-3 + 2 * (7.8e-3 - 4.0e-3))
    assert e.layer_optimizer_s == 5.2e-4  # nearest measured micro-batch (4), not extrapolated
    assert e.extrapolated == "micro-batch 8 extrapolated from measured 2 and 4"


def test_extrapolation_below_the_range_is_flagged_and_stays_positive(profile: Profile) -> None:
    e = profile.lookup(A100, 8, 1)  # tp 8 has micro-batches 2 and 4
    assert e.layer_bwd_s == pytest.approx(1.5 * 2.0e-3 - 0.5 * 5.0e-3)
    # 1.5 x 1e-3 - 0.5 x 3e-3 = 0: clamped to a small positive time, never zero.
    assert 0 < e.layer_fwd_s <= 1e-3 * 1e-3
    assert e.extrapolated == "micro-batch 1 extrapolated from measured 2 and 4"


def test_single_point_scales_proportionally(profile: Profile) -> None:
    e = profile.lookup(A100, 2, 4)  # tp 2 measured at micro-batch 2 only
    assert e.layer_fwd_s == pytest.approx(2 * 1.1e-3)
    assert e.head_fwd_s == pytest.approx(2 * 3.0e-3)
    assert e.layer_optimizer_s == 2.5e-4  # not scaled with the micro-batch
    assert e.extrapolated == "micro-batch 4 scaled from measured 2"


def test_tp_scaling_from_nearest_measured_tp(profile: Profile) -> None:
    # tp 4: tp 2 and tp 8 are equally near in log scale; the smaller wins. Work splits over TP.
    e = profile.lookup(A100, 4, 2)
    assert e.tp == 4 and e.micro_batch == 2
    assert e.layer_fwd_s == pytest.approx(1.1e-3 * 2 / 4)
    assert e.layer_bwd_s == pytest.approx(2.3e-3 * 2 / 4)
    assert e.layer_optimizer_s == pytest.approx(2.5e-4 * 2 / 4)
    assert e.extrapolated == "tp 4 scaled from measured tp 2 (micro-batch 2)"
    # Both rules at once: both are named.
    both = profile.lookup(A100, 4, 4)
    assert both.layer_fwd_s == pytest.approx(2 * 1.1e-3 * 2 / 4)
    assert both.extrapolated is not None
    assert "tp 4 scaled from measured tp 2" in both.extrapolated
    assert "micro-batch 4 scaled from measured 2" in both.extrapolated
    # H100 tp 2: tp 1 is nearer than tp 8 in log scale.
    h = profile.lookup("H100", 2, 2)
    assert h.layer_fwd_s == pytest.approx(8.0e-4 / 2)
    assert h.extrapolated == "tp 2 scaled from measured tp 1 (micro-batch 2)"


def test_lookups_are_cached(profile: Profile) -> None:
    assert profile.lookup(A100, 1, 3) is profile.lookup(A100, 1, 3)


def test_duplicate_entries_are_rejected(tmp_path: Path) -> None:
    text = PROFILE_FILE.read_text()
    first = text.index("[[entry]]")
    second = text.index("[[entry]]", first + 1)
    bad = tmp_path / "dup.toml"
    bad.write_text(text + "\n" + text[first:second])
    with pytest.raises(InputError, match="duplicate"):
        load_profile(bad)


# -- An instance with `profile = "file.toml"` ----------------------------------------------------
INSTANCE_TOML = """
name = "small-gpt-profiled"
profile = "{profile}"

[model]
num_layers = 6
hidden_size = 1024
ffn_hidden_size = 4096
num_attention_heads = 16
vocab_size = 32000
seq_length = 1024
uses_dropout = true
learned_position_embeddings = true

[training]
global_batch_size = 16
zero_stage = 1

[cluster]
[[cluster.node_groups]]
name = "a100"
device = "A100-80G"
num_nodes = 1
gpus_per_node = 8
nic_gbit_s = 200
nics_per_node = 8

[[cluster.node_groups]]
name = "a10"
device = "A10"
num_nodes = 1
gpus_per_node = 4
nic = "ethernet"
nic_gbit_s = 100
"""


@pytest.fixture
def instance(tmp_path: Path) -> Instance:
    # A relative path resolves against the instance file's directory.
    shutil.copy(PROFILE_FILE, tmp_path / "measured.toml")
    path = tmp_path / "inst.toml"
    path.write_text(INSTANCE_TOML.format(profile="measured.toml"))
    return load_instance(path)


def _rg(group: str, device: str, count: int, tp: int, share: int, node: int = 0) -> ReplicaGroup:
    return ReplicaGroup(node_group=group, device=device, count=count, tp=tp,
                        micro_batch_share=share, placement=(Placement(node=node, replicas=count),))


def _plan(recompute: str = "none") -> Plan:
    return Plan(micro_batch_size=4, num_micro_batches=4, stages=(
        Stage(first_layer=0, num_layers=2, recompute=recompute,
              replicas=(_rg("a100", A100, 1, 1, 4),)),              # tp 1, mb 4: measured
        Stage(first_layer=2, num_layers=4, recompute=recompute,
              replicas=(_rg("a100", A100, 2, 1, 2),)),              # tp 1, mb 2: measured
    ))


def test_instance_profile_path_resolves(instance: Instance, tmp_path: Path) -> None:
    assert instance.profile == str(tmp_path / "measured.toml")


def test_evaluate_uses_measured_times(instance: Instance) -> None:
    plan = _plan()
    assert plan_violations(instance, plan) == []
    prof = load_profile(PROFILE_FILE)
    cm = CostModel(instance)
    assert cm.profile is not None
    ev = cm.evaluate(plan)
    assert ev.extrapolated == []
    mb4, mb2 = prof.lookup(A100, 1, 4), prof.lookup(A100, 1, 2)
    # Per-layer forward is the profile's, and measured times already include TP communication.
    layer = cm.layer_cost(A100, 1, 4, "none")
    assert layer.fwd_s == mb4.layer_fwd_s and layer.bwd_s == mb4.layer_bwd_s
    assert layer.tp_fwd_s == layer.tp_bwd_s == 0.0
    assert layer.activation_bytes == mb4.layer_activation_bytes
    first, last = ev.stages
    assert first.replicas[0].fwd_s == pytest.approx(2 * mb4.layer_fwd_s + mb4.embedding_fwd_s)
    assert first.replicas[0].compute_s == pytest.approx(
        2 * (mb4.layer_fwd_s + mb4.layer_bwd_s) + mb4.embedding_fwd_s + mb4.embedding_bwd_s)
    assert last.replicas[0].fwd_s == pytest.approx(4 * mb2.layer_fwd_s + mb2.head_fwd_s)
    assert last.replicas[0].tp_comm_s == 0.0
    # Optimizer: the measured per-layer step, scaled to the stage's local (ZeRO-1 sharded) params.
    rep = last.replicas[0]
    per_layer_local = instance.model.params_per_layer / rep.tp
    assert rep.optimizer_s == pytest.approx(
        mb2.layer_optimizer_s * (rep.params_local / 2) / per_layer_local)
    # The module-level evaluate() (which validates first) reads the same profile.
    assert evaluate(instance, plan).iteration_time_s == pytest.approx(ev.iteration_time_s)
    # ... and differs from the analytical model.
    analytical = CostModel(instance, profile=Profile([])).evaluate(plan)
    assert analytical.iteration_time_s != pytest.approx(ev.iteration_time_s)


def test_recomputation_adds_its_share_of_the_measured_forward(instance: Instance) -> None:
    cm = CostModel(instance)
    m = instance.model
    e = load_profile(PROFILE_FILE).lookup(A100, 1, 2)
    for mode in ("selective", "full"):
        share = flops.recompute_forward_flops(m, 2, mode) / flops.layer_forward_flops(m, 2)
        assert cm.layer_cost(A100, 1, 2, mode).bwd_s == pytest.approx(
            e.layer_bwd_s + share * e.layer_fwd_s)
    assert cm.layer_cost(A100, 1, 2, "full").bwd_s == pytest.approx(
        e.layer_bwd_s + e.layer_fwd_s)


def test_evaluation_flags_extrapolated_entries(instance: Instance) -> None:
    plan = Plan(micro_batch_size=4, num_micro_batches=4, stages=(
        Stage(first_layer=0, num_layers=2, replicas=(_rg("a100", A100, 1, 1, 4),)),
        Stage(first_layer=2, num_layers=4, replicas=(_rg("a100", A100, 1, 4, 4),)),
    ))
    assert plan_violations(instance, plan) == []
    ev = CostModel(instance).evaluate(plan)
    assert ev.extrapolated == [
        f"stage 1 {A100}: tp 4 scaled from measured tp 2 (micro-batch 4); "
        "micro-batch 4 scaled from measured 2"]
    # tp 2 was measured at micro-batch 2 only: x 4/2 for the batch, x 2/4 for the TP degree.
    expected = load_profile(PROFILE_FILE).lookup(A100, 2, 2).layer_fwd_s * (4 / 2) * (2 / 4)
    assert CostModel(instance).layer_cost(A100, 4, 4, "none").fwd_s == pytest.approx(expected)


def test_devices_without_measurements_stay_analytical(instance: Instance) -> None:
    plan = Plan(micro_batch_size=4, num_micro_batches=4, stages=(
        Stage(first_layer=0, num_layers=3, replicas=(_rg("a100", A100, 1, 1, 4),)),
        Stage(first_layer=3, num_layers=3, replicas=(_rg("a10", "A10", 1, 2, 4),)),
    ))
    assert plan_violations(instance, plan) == []
    ev = CostModel(instance).evaluate(plan)
    measured, analytical = ev.stages[0].replicas[0], ev.stages[1].replicas[0]
    assert measured.tp_comm_s == 0.0
    assert analytical.tp_comm_s > 0.0  # the A10 stage is costed by the formulas (TP 2 on PCIe)
    assert ev.extrapolated == []
