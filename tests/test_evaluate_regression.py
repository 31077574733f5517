"""Refactoring guard: CostModel.evaluate() must keep returning the same numbers.

EXPECTED below was produced by evaluate() after the interleaved 1F1B schedule, Megatron's fp32
gradients with bf16, the TP communication overlap and the refit that followed them (issue 20,
2026-12-02; before that the compute model by kernel, the peaks per
precision, the NIC sharing by a stage's own GPUs, the per-pass ZeRO overlap; the first table came
from commit 81cae90) with
`python tests/test_evaluate_regression.py`, which prints the table. The cases cover 1F1B and GPipe,
ZeRO 0-3, mixed stages with two replica groups of different device types and TP degrees, rings
inside one node and over the network (within one node group and across NIC classes), empty first
and last stages, full and selective recomputation, no gradient-reduce overlap, fp32, a measured
profile with extrapolated entries, and the 48-stage plan of benchmarks/bench_evaluate.py.

The numbers are a guard, not a specification: if the cost model is changed on purpose, regenerate
them and say so in the commit. A pure refactoring must keep every value within 1e-12 relative.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from collections.abc import Callable
from dataclasses import FrozenInstanceError, replace
from pathlib import Path
from typing import Any

import pytest

from haap_solver.cluster import NodeGroup
from haap_solver.cost.evaluate import CostModel, Evaluation
from haap_solver.cost.profile import load_profile
from haap_solver.instance import Instance, load_instance, make_instance
from haap_solver.model import ModelSpec
from haap_solver.plan import Placement, Plan, ReplicaGroup, Stage
from haap_solver.training import Schedule, TrainingSpec
from haap_solver.validate import plan_violations

ROOT = Path(__file__).resolve().parent.parent
INSTANCES = ROOT / "instances"
REL = 1e-12


def _rg(group: str, device: str, count: int, tp: int, share: int,
        *placement: tuple[int, int]) -> ReplicaGroup:
    """A replica group; `placement` is (node, replicas) pairs (default: all on node 0)."""
    where = placement or ((0, count),)
    return ReplicaGroup(node_group=group, device=device, count=count, tp=tp,
                        micro_batch_share=share,
                        placement=tuple(Placement(node=n, replicas=k) for n, k in where))


def _with(instance: Instance, **training: Any) -> Instance:
    t = replace(instance.training, **training)
    return replace(instance, training=t)


ALL = {"schedules": ("1f1b", "gpipe", "interleaved-1f1b")}

# The 2-stage plan of /tmp/plan1.json (GPT-3 1.3B on one DGX A100), inlined.
PLAN1 = Plan(micro_batch_size=4, num_micro_batches=64, stages=(
    Stage(first_layer=0, num_layers=12, recompute="selective",
          replicas=(_rg("a100", "A100-80G", 2, 2, 2),)),
    Stage(first_layer=12, num_layers=12, recompute="none",
          replicas=(_rg("a100", "A100-80G", 1, 4, 4),)),
))


def _plan1(schedule: Schedule, zero: int, **training: Any) -> Callable[[], tuple[CostModel, Plan]]:
    def build() -> tuple[CostModel, Plan]:
        inst = _with(load_instance(INSTANCES / "gpt3-1.3b-a100x8.toml"), zero_stage=zero,
                     **ALL, **training)
        return CostModel(inst), replace(PLAN1, schedule=schedule)
    return build


def _llama_mixed(schedule: Schedule, zero: int) -> Callable[[], tuple[CostModel, Plan]]:
    """Three stages on H100 / A100 (2 nodes) / L40S; stage 1 mixes A100 TP 4 and L40S TP 4."""
    def build() -> tuple[CostModel, Plan]:
        inst = _with(load_instance(INSTANCES / "llama3-8b-h100-a100-l40s.toml"),
                     zero_stage=zero, **ALL)
        plan = Plan(schedule=schedule, micro_batch_size=8, num_micro_batches=32, stages=(
            Stage(first_layer=0, num_layers=10, recompute="selective",
                  replicas=(_rg("dgx-h100", "H100", 4, 2, 2),)),
            Stage(first_layer=10, num_layers=12, recompute="full",
                  replicas=(_rg("dgx-a100", "A100-80G", 4, 4, 1, (0, 2), (1, 2)),
                            _rg("l40s-pcie", "L40S", 2, 4, 2))),
            Stage(first_layer=22, num_layers=10, recompute="full",
                  replicas=(_rg("l40s-pcie", "L40S", 2, 4, 4, (1, 2)),)),
        ))
        return CostModel(inst), plan
    return build


def _t4_a100() -> tuple[CostModel, Plan]:
    """fp16 GPT-3 1.3B: a stage mixing T4 (Ethernet) and A100 (RoCE) replicas, TP 1 and 2."""
    inst = _with(load_instance(INSTANCES / "gpt3-1.3b-t4x4-a100x12.toml"), **ALL)
    plan = Plan(schedule="1f1b", micro_batch_size=8, num_micro_batches=64, stages=(
        Stage(first_layer=0, num_layers=14, recompute="selective",
              replicas=(_rg("hgx-a100", "A100-80G", 2, 2, 3), _rg("t4-box", "T4", 2, 1, 1))),
        Stage(first_layer=14, num_layers=10, recompute="none",
              replicas=(_rg("hgx-a100", "A100-80G", 2, 4, 4, (1, 1), (2, 1)),)),
    ))
    return CostModel(inst), plan


def _a100_v100(overlap: bool) -> Callable[[], tuple[CostModel, Plan]]:
    """fp16 GPT-3 2.7B: A100-40G and V100 replicas in every stage, different TP degrees."""
    def build() -> tuple[CostModel, Plan]:
        inst = _with(load_instance(INSTANCES / "gpt3-2.7b-a100-40gx8-v100x8.toml"),
                     overlap_grad_reduce=overlap, **ALL)
        plan = Plan(schedule="gpipe" if overlap else "1f1b", micro_batch_size=4,
                    num_micro_batches=128, stages=(
            Stage(first_layer=0, num_layers=18, recompute="full",
                  replicas=(_rg("dgx-a100-40g", "A100-40G", 1, 4, 3),
                            _rg("dgx1-v100", "V100-32G", 1, 4, 1))),
            Stage(first_layer=18, num_layers=14, recompute="full",
                  replicas=(_rg("dgx-a100-40g", "A100-40G", 2, 2, 1),
                            _rg("dgx1-v100", "V100-32G", 1, 4, 2))),
        ))
        return CostModel(inst), plan
    return build


def _gpt3_67b(schedule: Schedule, zero: int, dtype: str = "bf16") -> Callable[[],
                                                                         tuple[CostModel, Plan]]:
    """Four stages on 4 DGX A100 nodes: empty first and last stages, DP over two nodes."""
    def build() -> tuple[CostModel, Plan]:
        inst = _with(load_instance(INSTANCES / "gpt3-6.7b-a100x32.toml"), zero_stage=zero,
                     dtype=dtype, **ALL)
        g, d = "dgx-a100", "A100-80G"
        plan = Plan(schedule=schedule, micro_batch_size=4, num_micro_batches=128, stages=(
            Stage(first_layer=0, num_layers=0, replicas=(_rg(g, d, 2, 1, 2),)),
            Stage(first_layer=0, num_layers=16, recompute="selective",
                  replicas=(_rg(g, d, 2, 4, 2, (0, 1), (1, 1)),)),
            Stage(first_layer=16, num_layers=16, recompute="full",
                  replicas=(_rg(g, d, 4, 2, 1, (1, 1), (2, 3)),)),
            Stage(first_layer=32, num_layers=0, replicas=(_rg(g, d, 1, 8, 4, (3, 1)),)),
        ))
        return CostModel(inst), plan
    return build


SMALL = ModelSpec(name="small-gpt", num_layers=6, hidden_size=1024, ffn_hidden_size=4096,
                  num_attention_heads=16, vocab_size=32000, seq_length=1024, uses_dropout=True,
                  learned_position_embeddings=True)


def _profiled() -> tuple[CostModel, Plan]:
    """Measured A100 times (one entry extrapolated) next to an analytical A10 replica."""
    training = TrainingSpec(global_batch_size=16, zero_stage=1)
    groups = [NodeGroup(name="a100", device="A100-80G", num_nodes=1, gpus_per_node=8,
                        nic_gbit_s=200, nics_per_node=8),
              NodeGroup(name="a10", device="A10", num_nodes=1, gpus_per_node=4,
                        nic="ethernet", nic_gbit_s=100)]
    inst = make_instance(model=SMALL, training=training, node_groups=groups)
    profile = load_profile(ROOT / "tests" / "data" / "profiles" / "a100-small-gpt.toml")
    plan = Plan(micro_batch_size=4, num_micro_batches=4, stages=(
        Stage(first_layer=0, num_layers=2, replicas=(_rg("a100", "A100-80G", 2, 1, 2),)),
        Stage(first_layer=2, num_layers=2, recompute="selective",
              replicas=(_rg("a100", "A100-80G", 1, 4, 2, (0, 1)), _rg("a10", "A10", 1, 2, 2))),
        Stage(first_layer=4, num_layers=2, recompute="full",
              replicas=(_rg("a100", "A100-80G", 1, 2, 4, (0, 1)),)),
    ))
    return CostModel(inst, profile=profile), plan


def _bench() -> tuple[CostModel, Plan]:
    path = ROOT / "benchmarks" / "bench_evaluate.py"
    spec = importlib.util.spec_from_file_location("_bench_evaluate", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    inst, plan = module.build()
    return CostModel(inst), plan


CASES: dict[str, Callable[[], tuple[CostModel, Plan]]] = {
    "plan1-1f1b-zero1": _plan1("1f1b", 1),
    "plan1-gpipe-zero0": _plan1("gpipe", 0),
    "plan1-1f1b-zero2": _plan1("1f1b", 2),
    "plan1-gpipe-zero3": _plan1("gpipe", 3),
    "plan1-1f1b-zero1-no-overlap": _plan1("1f1b", 1, overlap_grad_reduce=False),
    "plan1-interleaved-zero1": _plan1("interleaved-1f1b", 1, virtual_stages=2),
    "plan1-1f1b-zero1-tp-overlap-bf16-grads": _plan1("1f1b", 1, tp_comm_overlap=True,
                                                     grad_dtype="param"),
    "plan1-interleaved-blocking-zero0": _plan1("interleaved-1f1b", 0, virtual_stages=3,
                                               pipeline_p2p="blocking"),
    "llama-mixed-1f1b-zero1": _llama_mixed("1f1b", 1),
    "llama-mixed-gpipe-zero2": _llama_mixed("gpipe", 2),
    "llama-mixed-1f1b-zero3": _llama_mixed("1f1b", 3),
    "llama-mixed-gpipe-zero0": _llama_mixed("gpipe", 0),
    "t4-a100-mixed-1f1b": _t4_a100,
    "a100-v100-mixed-gpipe": _a100_v100(True),
    "a100-v100-mixed-1f1b-no-overlap": _a100_v100(False),
    "gpt3-6.7b-empty-ends-1f1b-zero1": _gpt3_67b("1f1b", 1),
    "gpt3-6.7b-empty-ends-gpipe-zero3": _gpt3_67b("gpipe", 3),
    "gpt3-6.7b-empty-ends-1f1b-zero2-fp32": _gpt3_67b("1f1b", 2, "fp32"),
    "profiled-extrapolated": _profiled,
    "bench-48-stages": _bench,
}

# Plans the validator must accept. GPipe keeps all micro-batches in flight, so the GPipe cases
# overfill memory (memory_ok False); evaluate() does not validate and their numbers are pinned too.
VALID = {name for name in CASES if "gpipe" not in name}

STAGE_FIELDS = ("fwd_s", "bwd_s", "p2p_next_s", "tail_s", "in_flight")
REPLICA_FIELDS = ("fwd_s", "bwd_s", "compute_s", "tp_comm_s", "zero_comm_s", "dp_comm_s",
                  "optimizer_s", "params_local")
MEMORY_FIELDS = ("weights", "grads", "optimizer", "activations", "extras", "total")


def fingerprint(ev: Evaluation) -> dict[str, Any]:
    """Every number of an evaluation, with per-stage values summed (plain and index-weighted)."""
    out: dict[str, Any] = {
        "iteration_time_s": ev.iteration_time_s, "tokens_per_s": ev.tokens_per_s,
        "mfu": ev.mfu, "hfu": ev.hfu, "num_gpus_used": ev.num_gpus_used,
        "memory_ok": ev.memory_ok, "peak_memory_fraction": ev.peak_memory_fraction,
        "extrapolated": list(ev.extrapolated),
    }
    for key, value in ev.breakdown.items():
        out[f"breakdown.{key}"] = value
    sums: dict[str, float] = {}

    def add(key: str, index: int, value: float) -> None:
        sums[key] = sums.get(key, 0.0) + value
        sums[f"{key}@i"] = sums.get(f"{key}@i", 0.0) + (index + 1) * value

    for i, s in enumerate(ev.stages):
        for f in STAGE_FIELDS:
            add(f"stage.{f}", i, float(getattr(s, f)))
        for j, r in enumerate(s.replicas):
            for f in REPLICA_FIELDS:
                add(f"replica.{f}", 3 * i + j, getattr(r, f))
            for f in MEMORY_FIELDS:
                add(f"memory.{f}", 3 * i + j, getattr(r.memory, f))
    out.update(sums)
    return out


def _close(actual: Any, expected: Any) -> bool:
    if isinstance(expected, float):
        return math.isclose(actual, expected, rel_tol=REL, abs_tol=0.0)
    return bool(actual == expected)


@pytest.mark.parametrize("name", sorted(CASES))
def test_evaluate_matches_pinned_numbers(name: str) -> None:
    cm, plan = CASES[name]()
    if name in VALID:
        assert plan_violations(cm.instance, plan, cost_model=cm) == []
    got = fingerprint(cm.evaluate(plan))
    want = EXPECTED[name]
    assert sorted(got) == sorted(want)
    bad = {k: (got[k], want[k]) for k in want if not _close(got[k], want[k])}
    assert not bad, bad
    # A warm model (every coefficient cached) gives the same numbers as a cold one.
    again = fingerprint(cm.evaluate(plan))
    assert again == got


# The module (``haap_solver.cost.evaluate`` the attribute is the function of that name).
evaluate_module = sys.modules[CostModel.__module__]


def _fresh(cm: CostModel, plan: Plan) -> dict[str, Any]:
    return fingerprint(CostModel(cm.instance, profile=cm.profile).evaluate(plan))


def test_one_model_costs_many_plans_like_fresh_models(monkeypatch: pytest.MonkeyPatch) -> None:
    # evaluate()'s stage and link caches are keyed by configuration: a model that has costed
    # other plans (stages shifted, schedule changed, stages reordered) must give what a fresh
    # model gives, also when its caches overflow and are cleared on every insertion.
    cm, plan = _llama_mixed("1f1b", 1)()
    s0, s1, s2 = plan.stages
    variants = [
        plan,
        replace(plan, schedule="gpipe"),
        replace(plan, micro_batch_size=4, num_micro_batches=64),
        replace(plan, stages=(s0, replace(s1, num_layers=11),
                              replace(s2, first_layer=21, num_layers=11))),
        replace(plan, stages=(s0, s2, s1)),
        replace(plan, stages=(s1, s0)),
        replace(plan, stages=(s2,)),
        plan,
    ]
    for limit in (evaluate_module._CACHE_LIMIT, 1):
        monkeypatch.setattr(evaluate_module, "_CACHE_LIMIT", limit)
        shared = CostModel(cm.instance)
        for _ in range(2):
            for variant in variants:
                assert fingerprint(shared.evaluate(variant)) == _fresh(cm, variant)


def test_reports_are_frozen_and_stage_lists_are_fresh() -> None:
    cm, plan = _plan1("1f1b", 1)()
    first = cm.evaluate(plan)
    with pytest.raises(FrozenInstanceError):
        first.stages[0].replicas[0].fwd_s = 0.0  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        first.stages[0].replicas[0].memory.weights = 0.0  # type: ignore[misc]
    # Evaluations share the (frozen) replica reports but not the stage reports or their lists.
    first.stages[0].replicas.clear()
    first.stages[0].fwd_s = 0.0
    assert fingerprint(cm.evaluate(plan)) == EXPECTED["plan1-1f1b-zero1"]


def test_breakdown_adds_up() -> None:
    for name in sorted(CASES):
        want = EXPECTED[name]
        total = sum(v for k, v in want.items() if k.startswith("breakdown."))
        assert total == pytest.approx(want["iteration_time_s"], rel=1e-12), name


# Produced by CostModel.evaluate() after the per-pass ZeRO overlap change (module docstring).
EXPECTED: dict[str, dict[str, Any]] = {
    "plan1-1f1b-zero1": {
        "iteration_time_s": 4.083171816112544, "tokens_per_s": 128402.14020167236,
        "mfu": 0.4667579780569198, "hfu": 0.4771148551772359, "num_gpus_used": 8, "memory_ok": True,
        "peak_memory_fraction": 0.11467013359069825, "extrapolated": [],
        "breakdown.compute_s": 3.1686418117371744, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.048059035267413064, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.0003697019428571429, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.039532191632330634, "stage.fwd_s@i": 0.06284624580199483,
        "stage.bwd_s": 0.07152059765776167, "stage.bwd_s@i": 0.11120029751077655,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.006457580314608001, "stage.tail_s@i": 0.009492528740306873,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.039532191632330634,
        "replica.fwd_s@i": 0.10947435414132321, "replica.bwd_s": 0.07152059765776167,
        "replica.bwd_s@i": 0.1905596972168063, "replica.compute_s": 0.09307448833771136,
        "replica.compute_s@i": 0.24160457326289142, "replica.tp_comm_s": 0.017978300952380954,
        "replica.tp_comm_s@i": 0.058429478095238095, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.0003697019428571429,
        "replica.dp_comm_s@i": 0.0003697019428571429, "replica.optimizer_s": 0.006087878371750858,
        "replica.optimizer_s@i": 0.015192723648847474, "replica.params_local": 532517376.0,
        "replica.params_local@i": 1062939648.0, "memory.weights": 1065034752.0,
        "memory.weights@i": 2125879296.0, "memory.grads": 2130069504.0,
        "memory.grads@i": 4251758592.0, "memory.optimizer": 4255948800.0,
        "memory.optimizer@i": 10621016064.0, "memory.activations": 5138546688.0,
        "memory.activations@i": 10277093376.0, "memory.extras": 436871168.0,
        "memory.extras@i": 1722318848.0, "memory.total": 17321438208.0,
        "memory.total@i": 39735484416.0,
    },
    "plan1-gpipe-zero0": {
        "iteration_time_s": 4.086344646706215, "tokens_per_s": 128302.44272778132,
        "mfu": 0.4663955651621061, "hfu": 0.4767444007148543, "num_gpus_used": 8,
        "memory_ok": False, "peak_memory_fraction": 1.6574658274650573, "extrapolated": [],
        "breakdown.compute_s": 3.1686418117371744, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.048059035267413064, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.0004896025904761905, "breakdown.optimizer_s": 0.006105859892103972,
        "stage.fwd_s": 0.039532191632330634, "stage.fwd_s@i": 0.06284624580199483,
        "stage.bwd_s": 0.07152059765776167, "stage.bwd_s@i": 0.11120029751077655,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.009630410908279034, "stage.tail_s@i": 0.012665359333977907,
        "stage.in_flight": 128.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 0.039532191632330634,
        "replica.fwd_s@i": 0.10947435414132321, "replica.bwd_s": 0.07152059765776167,
        "replica.bwd_s@i": 0.1905596972168063, "replica.compute_s": 0.09307448833771136,
        "replica.compute_s@i": 0.24160457326289142, "replica.tp_comm_s": 0.017978300952380954,
        "replica.tp_comm_s@i": 0.058429478095238095, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.0004896025904761905,
        "replica.dp_comm_s@i": 0.0004896025904761905, "replica.optimizer_s": 0.009140808317802843,
        "replica.optimizer_s@i": 0.01824565359489946, "replica.params_local": 532517376.0,
        "replica.params_local@i": 1062939648.0, "memory.weights": 1065034752.0,
        "memory.weights@i": 2125879296.0, "memory.grads": 2130069504.0,
        "memory.grads@i": 4251758592.0, "memory.optimizer": 6390208512.0,
        "memory.optimizer@i": 12755275776.0, "memory.activations": 219244658688.0,
        "memory.activations@i": 548111646720.0, "memory.extras": 27691319296.0,
        "memory.extras@i": 109959970816.0, "memory.total": 260816258048.0,
        "memory.total@i": 687941949440.0,
    },
    "plan1-1f1b-zero2": {
        "iteration_time_s": 4.083921079969078, "tokens_per_s": 128378.58267426895,
        "mfu": 0.4666723434729358, "hfu": 0.47702732045033996, "num_gpus_used": 8,
        "memory_ok": True, "peak_memory_fraction": 0.10638811588287353, "extrapolated": [],
        "breakdown.compute_s": 3.1686418117371744, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.04905310041918454, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.00012490064761904764,
        "breakdown.optimizer_s": 0.003052929946051986, "stage.fwd_s": 0.039532191632330634,
        "stage.fwd_s@i": 0.06284624580199483, "stage.bwd_s": 0.07251466280953311,
        "stage.bwd_s@i": 0.11219436266254798, "stage.p2p_next_s": 4.494575238095238e-05,
        "stage.p2p_next_s@i": 4.494575238095238e-05, "stage.tail_s": 0.006212779019369906,
        "stage.tail_s@i": 0.009247727445068778, "stage.in_flight": 3.0, "stage.in_flight@i": 4.0,
        "replica.fwd_s": 0.039532191632330634, "replica.fwd_s@i": 0.10947435414132321,
        "replica.bwd_s": 0.07251466280953311, "replica.bwd_s@i": 0.19155376236857774,
        "replica.compute_s": 0.09307448833771136, "replica.compute_s@i": 0.24160457326289142,
        "replica.tp_comm_s": 0.017978300952380954, "replica.tp_comm_s@i": 0.058429478095238095,
        "replica.zero_comm_s": 0.0009940651517714285,
        "replica.zero_comm_s@i": 0.0009940651517714285, "replica.dp_comm_s": 0.00012490064761904764,
        "replica.dp_comm_s@i": 0.00012490064761904764, "replica.optimizer_s": 0.006087878371750858,
        "replica.optimizer_s@i": 0.015192723648847474, "replica.params_local": 532517376.0,
        "replica.params_local@i": 1062939648.0, "memory.weights": 1065034752.0,
        "memory.weights@i": 2125879296.0, "memory.grads": 1418649600.0,
        "memory.grads@i": 3540338688.0, "memory.optimizer": 4255948800.0,
        "memory.optimizer@i": 10621016064.0, "memory.activations": 5138546688.0,
        "memory.activations@i": 10277093376.0, "memory.extras": 436871168.0,
        "memory.extras@i": 1722318848.0, "memory.total": 16610018304.0,
        "memory.total@i": 39024064512.0,
    },
    "plan1-gpipe-zero3": {
        "iteration_time_s": 4.0847917094732304, "tokens_per_s": 128351.22015746833,
        "mfu": 0.46657287727247876, "hfu": 0.476925647197697, "num_gpus_used": 8,
        "memory_ok": False, "peak_memory_fraction": 1.6574658274650573, "extrapolated": [],
        "breakdown.compute_s": 3.1686418117371744, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.05004863057095643, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.0, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.04002995670821635, "stage.fwd_s@i": 0.06334401087788054,
        "stage.bwd_s": 0.07301242788541881, "stage.bwd_s@i": 0.11269212773843369,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.006087878371750858, "stage.tail_s@i": 0.00912282679744973,
        "stage.in_flight": 128.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 0.04002995670821635,
        "replica.fwd_s@i": 0.10997211921720892, "replica.bwd_s": 0.07301242788541881,
        "replica.bwd_s@i": 0.19205152744446344, "replica.compute_s": 0.09307448833771136,
        "replica.compute_s@i": 0.24160457326289142, "replica.tp_comm_s": 0.017978300952380954,
        "replica.tp_comm_s@i": 0.058429478095238095, "replica.zero_comm_s": 0.001989595303542857,
        "replica.zero_comm_s@i": 0.001989595303542857, "replica.dp_comm_s": 0.0,
        "replica.dp_comm_s@i": 0.0, "replica.optimizer_s": 0.006087878371750858,
        "replica.optimizer_s@i": 0.015192723648847474, "replica.params_local": 532517376.0,
        "replica.params_local@i": 1062939648.0, "memory.weights": 709324800.0,
        "memory.weights@i": 1770169344.0, "memory.grads": 1418649600.0,
        "memory.grads@i": 3540338688.0, "memory.optimizer": 4255948800.0,
        "memory.optimizer@i": 10621016064.0, "memory.activations": 219244658688.0,
        "memory.activations@i": 548111646720.0, "memory.extras": 27691319296.0,
        "memory.extras@i": 109959970816.0, "memory.total": 257614868480.0,
        "memory.total@i": 684740559872.0,
    },
    "plan1-1f1b-zero1-no-overlap": {
        "iteration_time_s": 4.087893684912544, "tokens_per_s": 128253.82468605383,
        "mfu": 0.46621883244707374, "hfu": 0.47656374648353556, "num_gpus_used": 8,
        "memory_ok": True, "peak_memory_fraction": 0.11467013359069825, "extrapolated": [],
        "breakdown.compute_s": 3.1686418117371744, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.048059035267413064, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.005091570742857142, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.039532191632330634, "stage.fwd_s@i": 0.06284624580199483,
        "stage.bwd_s": 0.07152059765776167, "stage.bwd_s@i": 0.11120029751077655,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.011179449114608001, "stage.tail_s@i": 0.014214397540306872,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.039532191632330634,
        "replica.fwd_s@i": 0.10947435414132321, "replica.bwd_s": 0.07152059765776167,
        "replica.bwd_s@i": 0.1905596972168063, "replica.compute_s": 0.09307448833771136,
        "replica.compute_s@i": 0.24160457326289142, "replica.tp_comm_s": 0.017978300952380954,
        "replica.tp_comm_s@i": 0.058429478095238095, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.005091570742857142,
        "replica.dp_comm_s@i": 0.005091570742857142, "replica.optimizer_s": 0.006087878371750858,
        "replica.optimizer_s@i": 0.015192723648847474, "replica.params_local": 532517376.0,
        "replica.params_local@i": 1062939648.0, "memory.weights": 1065034752.0,
        "memory.weights@i": 2125879296.0, "memory.grads": 2130069504.0,
        "memory.grads@i": 4251758592.0, "memory.optimizer": 4255948800.0,
        "memory.optimizer@i": 10621016064.0, "memory.activations": 5138546688.0,
        "memory.activations@i": 10277093376.0, "memory.extras": 436871168.0,
        "memory.extras@i": 1722318848.0, "memory.total": 17321438208.0,
        "memory.total@i": 39735484416.0,
    },
    "plan1-interleaved-zero1": {
        "iteration_time_s": 4.059142298478838, "tokens_per_s": 129162.26174097833,
        "mfu": 0.4695211157445528, "hfu": 0.47993930403434576, "num_gpus_used": 8,
        "memory_ok": True, "peak_memory_fraction": 0.12473788261413574, "extrapolated": [],
        "breakdown.compute_s": 3.1686418117371744, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.02402951763370687, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.0003697019428571429, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.039532191632330634, "stage.fwd_s@i": 0.06284624580199483,
        "stage.bwd_s": 0.07152059765776167, "stage.bwd_s@i": 0.11120029751077655,
        "stage.p2p_next_s": 8.989150476190476e-05, "stage.p2p_next_s@i": 0.00013483725714285715,
        "stage.tail_s": 0.006457580314608001, "stage.tail_s@i": 0.009492528740306873,
        "stage.in_flight": 4.0, "stage.in_flight@i": 5.5, "replica.fwd_s": 0.039532191632330634,
        "replica.fwd_s@i": 0.10947435414132321, "replica.bwd_s": 0.07152059765776167,
        "replica.bwd_s@i": 0.1905596972168063, "replica.compute_s": 0.09307448833771136,
        "replica.compute_s@i": 0.24160457326289142, "replica.tp_comm_s": 0.017978300952380954,
        "replica.tp_comm_s@i": 0.058429478095238095, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.0003697019428571429,
        "replica.dp_comm_s@i": 0.0003697019428571429, "replica.optimizer_s": 0.006087878371750858,
        "replica.optimizer_s@i": 0.015192723648847474, "replica.params_local": 532517376.0,
        "replica.params_local@i": 1062939648.0, "memory.weights": 1065034752.0,
        "memory.weights@i": 2125879296.0, "memory.grads": 2130069504.0,
        "memory.grads@i": 4251758592.0, "memory.optimizer": 4255948800.0,
        "memory.optimizer@i": 10621016064.0, "memory.activations": 6851395584.0,
        "memory.activations@i": 14559215616.0, "memory.extras": 445259776.0,
        "memory.extras@i": 1730707456.0, "memory.total": 19042675712.0,
        "memory.total@i": 44025995264.0,
    },
    "plan1-1f1b-zero1-tp-overlap-bf16-grads": {
        "iteration_time_s": 3.2502970153506396, "tokens_per_s": 161304.64309073004,
        "mfu": 0.586362726835932, "hfu": 0.5993735097154325, "num_gpus_used": 8, "memory_ok": True,
        "peak_memory_fraction": 0.10638811588287353, "extrapolated": [],
        "breakdown.compute_s": 3.1686418117371744, "breakdown.tp_comm_s": 0.03451833782857143,
        "breakdown.bubble_s": 0.043744243038842015, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.00024980129523809527,
        "breakdown.optimizer_s": 0.003052929946051986, "stage.fwd_s": 0.030902607175187776,
        "stage.fwd_s@i": 0.04774447300199483, "stage.bwd_s": 0.06289101320061882,
        "stage.bwd_s@i": 0.09609852471077654, "stage.p2p_next_s": 4.494575238095238e-05,
        "stage.p2p_next_s@i": 4.494575238095238e-05, "stage.tail_s": 0.006337679666988953,
        "stage.tail_s@i": 0.009372628092687825, "stage.in_flight": 3.0, "stage.in_flight@i": 4.0,
        "replica.fwd_s": 0.030902607175187776, "replica.fwd_s@i": 0.08142820465560893,
        "replica.bwd_s": 0.06289101320061882, "replica.bwd_s@i": 0.162513547731092,
        "replica.compute_s": 0.09307448833771136, "replica.compute_s@i": 0.24160457326289142,
        "replica.tp_comm_s": 0.000719132038095238, "replica.tp_comm_s@i": 0.002337179123809524,
        "replica.zero_comm_s": 0.0, "replica.zero_comm_s@i": 0.0,
        "replica.dp_comm_s": 0.00024980129523809527, "replica.dp_comm_s@i": 0.00024980129523809527,
        "replica.optimizer_s": 0.006087878371750858, "replica.optimizer_s@i": 0.015192723648847474,
        "replica.params_local": 532517376.0, "replica.params_local@i": 1062939648.0,
        "memory.weights": 1065034752.0, "memory.weights@i": 2125879296.0,
        "memory.grads": 1065034752.0, "memory.grads@i": 2125879296.0,
        "memory.optimizer": 4255948800.0, "memory.optimizer@i": 10621016064.0,
        "memory.activations": 5138546688.0, "memory.activations@i": 10277093376.0,
        "memory.extras": 436871168.0, "memory.extras@i": 1722318848.0,
        "memory.total": 16256403456.0, "memory.total@i": 37609605120.0,
    },
    "plan1-interleaved-blocking-zero0": {
        "iteration_time_s": 4.068613021035876, "tokens_per_s": 128861.60401328001,
        "mfu": 0.46842818697524075, "hfu": 0.4788221243052276, "num_gpus_used": 8,
        "memory_ok": True, "peak_memory_fraction": 0.14626057147979737, "extrapolated": [],
        "breakdown.compute_s": 3.1686418117371744, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.016019678422471297, "breakdown.p2p_s": 0.014397622679364638,
        "breakdown.dp_comm_s": 0.0004896025904761905, "breakdown.optimizer_s": 0.006105859892103972,
        "stage.fwd_s": 0.039532191632330634, "stage.fwd_s@i": 0.06284624580199483,
        "stage.bwd_s": 0.07152059765776167, "stage.bwd_s@i": 0.11120029751077655,
        "stage.p2p_next_s": 8.989150476190476e-05, "stage.p2p_next_s@i": 0.00013483725714285715,
        "stage.tail_s": 0.009630410908279034, "stage.tail_s@i": 0.012665359333977907,
        "stage.in_flight": 4.0, "stage.in_flight@i": 5.666666666666667,
        "replica.fwd_s": 0.039532191632330634, "replica.fwd_s@i": 0.10947435414132321,
        "replica.bwd_s": 0.07152059765776167, "replica.bwd_s@i": 0.1905596972168063,
        "replica.compute_s": 0.09307448833771136, "replica.compute_s@i": 0.24160457326289142,
        "replica.tp_comm_s": 0.017978300952380954, "replica.tp_comm_s@i": 0.058429478095238095,
        "replica.zero_comm_s": 0.0, "replica.zero_comm_s@i": 0.0,
        "replica.dp_comm_s": 0.0004896025904761905, "replica.dp_comm_s@i": 0.0004896025904761905,
        "replica.optimizer_s": 0.009140808317802843, "replica.optimizer_s@i": 0.01824565359489946,
        "replica.params_local": 532517376.0, "replica.params_local@i": 1062939648.0,
        "memory.weights": 1065034752.0, "memory.weights@i": 2125879296.0,
        "memory.grads": 2130069504.0, "memory.grads@i": 4251758592.0,
        "memory.optimizer": 6390208512.0, "memory.optimizer@i": 12755275776.0,
        "memory.activations": 6851395584.0, "memory.activations@i": 15415640064.0,
        "memory.extras": 445259776.0, "memory.extras@i": 1730707456.0,
        "memory.total": 21176935424.0, "memory.total@i": 47016679424.0,
    },
    "llama-mixed-1f1b-zero1": {
        "iteration_time_s": 67.2975673904708, "tokens_per_s": 31162.374530300665,
        "mfu": 0.09652464588056843, "hfu": 0.11967797755947067, "num_gpus_used": 40,
        "memory_ok": True, "peak_memory_fraction": 0.5655865669250488, "extrapolated": [],
        "breakdown.compute_s": 28.82294498893055, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 1.3530876140726258, "breakdown.p2p_s": 0.09326573290882778,
        "breakdown.dp_comm_s": 1.3033093523854675, "breakdown.optimizer_s": 0.0018719764590485533,
        "stage.fwd_s": 1.0268760119411016, "stage.fwd_s@i": 2.5915486700366124,
        "stage.bwd_s": 2.343275124464176, "stage.bwd_s@i": 5.92159783728863,
        "stage.p2p_next_s": 0.04663286645441389, "stage.p2p_next_s@i": 0.07771877742402315,
        "stage.tail_s": 1.3283890414012245, "stage.tail_s@i": 2.6717138352192857,
        "stage.in_flight": 6.0, "stage.in_flight@i": 10.0, "replica.fwd_s": 1.1001076768613325,
        "replica.fwd_s@i": 6.343246427263681, "replica.bwd_s": 2.5551508372017184,
        "replica.bwd_s@i": 14.705188658787247, "replica.compute_s": 1.8346420069392413,
        "replica.compute_s@i": 9.822595485898548, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 2.0450204440375095,
        "replica.dp_comm_s@i": 8.930121439230653, "replica.optimizer_s": 0.02352889536496342,
        "replica.optimizer_s@i": 0.12904347363099797, "replica.params_local": 3338515456.0,
        "replica.params_local@i": 11978558464.0, "memory.weights": 6677030912.0,
        "memory.weights@i": 23957116928.0, "memory.grads": 13354061824.0,
        "memory.grads@i": 47914233856.0, "memory.optimizer": 10736719872.0,
        "memory.optimizer@i": 44255569920.0, "memory.activations": 38134349824.0,
        "memory.activations@i": 56581685248.0, "memory.extras": 4336910336.0,
        "memory.extras@i": 30358372352.0, "memory.total": 81829007360.0,
        "memory.total@i": 239574200320.0,
    },
    "llama-mixed-gpipe-zero2": {
        "iteration_time_s": 67.3167524924705, "tokens_per_s": 31153.493333395283,
        "mfu": 0.09649713660378163, "hfu": 0.11964386964247255, "num_gpus_used": 40,
        "memory_ok": False, "peak_memory_fraction": 4.373428153991699, "extrapolated": [],
        "breakdown.compute_s": 28.82294498893055, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 1.8159123245619455, "breakdown.p2p_s": 0.09326573290882778,
        "breakdown.dp_comm_s": 0.8596697438958417, "breakdown.optimizer_s": 0.0018719764590485533,
        "stage.fwd_s": 1.0268760119411016, "stage.fwd_s@i": 2.5915486700366124,
        "stage.bwd_s": 2.823802036044913, "stage.bwd_s@i": 6.8965733152235895,
        "stage.p2p_next_s": 0.04663286645441389, "stage.p2p_next_s@i": 0.07771877742402315,
        "stage.tail_s": 0.3143066170335035, "stage.tail_s@i": 0.6403685102933673,
        "stage.in_flight": 96.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 1.1001076768613325,
        "replica.fwd_s@i": 6.343246427263681, "replica.bwd_s": 3.895991663292353,
        "replica.bwd_s@i": 20.569361091641607, "replica.compute_s": 1.8346420069392413,
        "replica.compute_s@i": 9.822595485898548, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 1.3408408260906344,
        "replica.zero_comm_s@i": 5.864172432854361, "replica.dp_comm_s": 0.3261086301747308,
        "replica.dp_comm_s@i": 1.3401033657130503, "replica.optimizer_s": 0.02352889536496342,
        "replica.optimizer_s@i": 0.12904347363099797, "replica.params_local": 3338515456.0,
        "replica.params_local@i": 11978558464.0, "memory.weights": 6677030912.0,
        "memory.weights@i": 23957116928.0, "memory.grads": 3578906624.0,
        "memory.grads@i": 14751856640.0, "memory.optimizer": 10736719872.0,
        "memory.optimizer@i": 44255569920.0, "memory.activations": 408208277504.0,
        "memory.activations@i": 617915875328.0, "memory.extras": 138781130752.0,
        "memory.extras@i": 971467915264.0, "memory.total": 576572000256.0,
        "memory.total@i": 1708855556096.0,
    },
    "llama-mixed-1f1b-zero3": {
        "iteration_time_s": 77.45629669305329, "tokens_per_s": 27075.293933954425,
        "mfu": 0.08386501986702224, "hfu": 0.10398169166130634, "num_gpus_used": 40,
        "memory_ok": True, "peak_memory_fraction": 0.4946951389312744, "extrapolated": [],
        "breakdown.compute_s": 14.70678840586348, "breakdown.tp_comm_s": 20.776998034285715,
        "breakdown.bubble_s": 2.304254164969363, "breakdown.p2p_s": 0.09326573290882778,
        "breakdown.dp_comm_s": 39.561285765396285, "breakdown.optimizer_s": 0.01370458962962963,
        "stage.fwd_s": 1.3097913099353855, "stage.fwd_s@i": 3.1643386284119233,
        "stage.bwd_s": 3.3396213614572687, "stage.bwd_s@i": 7.935171328435043,
        "stage.p2p_next_s": 0.04663286645441389, "stage.p2p_next_s@i": 0.07771877742402315,
        "stage.tail_s": 0.021656918905914868, "stage.tail_s@i": 0.053483875942951904,
        "stage.in_flight": 6.0, "stage.in_flight@i": 10.0, "replica.fwd_s": 1.836323209464683,
        "replica.fwd_s@i": 9.581157639126909, "replica.bwd_s": 4.916886010412378,
        "replica.bwd_s@i": 25.178891588989607, "replica.compute_s": 1.8346420069392413,
        "replica.compute_s@i": 9.822595485898548, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 3.0979507058140108,
        "replica.zero_comm_s@i": 13.711614142065592, "replica.dp_comm_s": 0.0,
        "replica.dp_comm_s@i": 0.0, "replica.optimizer_s": 0.02352889536496342,
        "replica.optimizer_s@i": 0.12904347363099797, "replica.params_local": 3338515456.0,
        "replica.params_local@i": 11978558464.0, "memory.weights": 1789453312.0,
        "memory.weights@i": 7375928320.0, "memory.grads": 3578906624.0,
        "memory.grads@i": 14751856640.0, "memory.optimizer": 10736719872.0,
        "memory.optimizer@i": 44255569920.0, "memory.activations": 38134349824.0,
        "memory.activations@i": 56581685248.0, "memory.extras": 4336910336.0,
        "memory.extras@i": 30358372352.0, "memory.total": 67166274560.0,
        "memory.total@i": 189830634496.0,
    },
    "llama-mixed-gpipe-zero0": {
        "iteration_time_s": 67.81196229447372, "tokens_per_s": 30925.98900018715,
        "mfu": 0.09579244783952019, "hfu": 0.11877014744078696, "num_gpus_used": 40,
        "memory_ok": False, "peak_memory_fraction": 4.562471961975097, "extrapolated": [],
        "breakdown.compute_s": 28.82294498893055, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 1.3530876140726258, "breakdown.p2p_s": 0.09326573290882778,
        "breakdown.dp_comm_s": 1.8083443740931373, "breakdown.optimizer_s": 0.01123185875429132,
        "stage.fwd_s": 1.0268760119411016, "stage.fwd_s@i": 2.5915486700366124,
        "stage.bwd_s": 2.343275124464176, "stage.bwd_s@i": 5.92159783728863,
        "stage.p2p_next_s": 0.04663286645441389, "stage.p2p_next_s@i": 0.07771877742402315,
        "stage.tail_s": 1.8690683800054795, "stage.tail_s@i": 3.757768685657141,
        "stage.in_flight": 96.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 1.1001076768613325,
        "replica.fwd_s@i": 6.343246427263681, "replica.bwd_s": 2.5551508372017184,
        "replica.bwd_s@i": 14.705188658787247, "replica.compute_s": 1.8346420069392413,
        "replica.compute_s@i": 9.822595485898548, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 3.0570666779290403,
        "replica.dp_comm_s@i": 13.488127110790158, "replica.optimizer_s": 0.07928591067424709,
        "replica.optimizer_s@i": 0.3834632291593433, "replica.params_local": 3338515456.0,
        "replica.params_local@i": 11978558464.0, "memory.weights": 6677030912.0,
        "memory.weights@i": 23957116928.0, "memory.grads": 13354061824.0,
        "memory.grads@i": 47914233856.0, "memory.optimizer": 40062185472.0,
        "memory.optimizer@i": 143742701568.0, "memory.activations": 408208277504.0,
        "memory.activations@i": 617915875328.0, "memory.extras": 138781130752.0,
        "memory.extras@i": 971467915264.0, "memory.total": 615672621056.0,
        "memory.total@i": 1841505064960.0,
    },
    "t4-a100-mixed-1f1b": {
        "iteration_time_s": 20.796095738022906, "tokens_per_s": 50421.7721061371,
        "mfu": 0.11809256537317978, "hfu": 0.1211496426742082, "num_gpus_used": 14,
        "memory_ok": True, "peak_memory_fraction": 0.689031720161438, "extrapolated": [],
        "breakdown.compute_s": 16.364669292437814, "breakdown.tp_comm_s": 0.0,
        "breakdown.bubble_s": 0.05381445437931396, "breakdown.p2p_s": 0.01559895548480463,
        "breakdown.dp_comm_s": 4.339806179720973, "breakdown.optimizer_s": 0.022206856,
        "stage.fwd_s": 0.10207439883897088, "stage.fwd_s@i": 0.12199971137695634,
        "stage.bwd_s": 0.2074380132346856, "stage.bwd_s@i": 0.24132715507601576,
        "stage.p2p_next_s": 0.007799477742402315, "stage.p2p_next_s@i": 0.007799477742402315,
        "stage.tail_s": 4.3662455018506625, "stage.tail_s@i": 4.370477967980352,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.13007712126666637,
        "replica.fwd_s@i": 0.27200214518160815, "replica.bwd_s": 0.2625690210052414,
        "replica.bwd_s@i": 0.5377853179225873, "replica.compute_s": 0.373789251757622,
        "replica.compute_s@i": 0.7569515837899098, "replica.tp_comm_s": 0.018856890514285712,
        "replica.tp_comm_s@i": 0.05283587931428572, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 6.544373792847668,
        "replica.dp_comm_s@i": 10.892973258588901, "replica.optimizer_s": 0.02525079518587543,
        "replica.optimizer_s@i": 0.051361763554683665, "replica.params_local": 1369832960.0,
        "replica.params_local@i": 2636854272.0, "memory.weights": 2739665920.0,
        "memory.weights@i": 5273708544.0, "memory.grads": 2739665920.0,
        "memory.grads@i": 5273708544.0, "memory.optimizer": 4564383744.0,
        "memory.optimizer@i": 9730102272.0, "memory.activations": 11418992640.0,
        "memory.activations@i": 19697762304.0, "memory.extras": 449454080.0,
        "memory.extras@i": 1743290368.0, "memory.total": 28354613248.0,
        "memory.total@i": 56750957568.0,
    },
    "a100-v100-mixed-gpipe": {
        "iteration_time_s": 21.374645251040143, "tokens_per_s": 49057.00130620758,
        "mfu": 0.2509639976739191, "hfu": 0.33100792457810074, "num_gpus_used": 16,
        "memory_ok": False, "peak_memory_fraction": 1.2160619795322418, "extrapolated": [],
        "breakdown.compute_s": 17.280030020921735, "breakdown.tp_comm_s": 3.628161316571429,
        "breakdown.bubble_s": 0.12585176127753714, "breakdown.p2p_s": 0.0018309713458755426,
        "breakdown.dp_comm_s": 0.33415653123439026, "breakdown.optimizer_s": 0.004614649689174705,
        "stage.fwd_s": 0.07790427536934719, "stage.fwd_s@i": 0.12213017892808983,
        "stage.bwd_s": 0.2112927307323553, "stage.bwd_s@i": 0.330412071997778,
        "stage.p2p_next_s": 0.0009154856729377713, "stage.p2p_next_s@i": 0.0009154856729377713,
        "stage.tail_s": 0.45104901451278534, "stage.tail_s@i": 0.7898201954363503,
        "stage.in_flight": 256.0, "stage.in_flight@i": 384.0, "replica.fwd_s": 0.12127824651539819,
        "replica.fwd_s@i": 0.3743930106464026, "replica.bwd_s": 0.33166330635061636,
        "replica.bwd_s@i": 1.0197997922800703, "replica.compute_s": 0.37164831705649076,
        "replica.compute_s@i": 1.1642793979740922, "replica.tp_comm_s": 0.08129323580952381,
        "replica.tp_comm_s@i": 0.22991340495238097, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.596985975270223,
        "replica.dp_comm_s@i": 1.9873625465525395, "replica.optimizer_s": 0.020497443302131713,
        "replica.optimizer_s@i": 0.057822669406692874, "replica.params_local": 1697639040.0,
        "replica.params_local@i": 5160492800.0, "memory.weights": 3395278080.0,
        "memory.weights@i": 10320985600.0, "memory.grads": 3395278080.0,
        "memory.grads@i": 10320985600.0, "memory.optimizer": 8340633600.0,
        "memory.optimizer@i": 22967087360.0, "memory.activations": 43306713088.0,
        "memory.activations@i": 115782647808.0, "memory.extras": 56053727232.0,
        "memory.extras@i": 250060734464.0, "memory.total": 123081564672.0,
        "memory.total@i": 435222244608.0,
    },
    "a100-v100-mixed-1f1b-no-overlap": {
        "iteration_time_s": 21.420289523664895, "tokens_per_s": 48952.466251286896,
        "mfu": 0.2504292210960315, "hfu": 0.33030258322714906, "num_gpus_used": 16,
        "memory_ok": True, "peak_memory_fraction": 0.17940475791692734, "extrapolated": [],
        "breakdown.compute_s": 17.280030020921735, "breakdown.tp_comm_s": 3.628161316571429,
        "breakdown.bubble_s": 0.12585176127753714, "breakdown.p2p_s": 0.0018309713458755426,
        "breakdown.dp_comm_s": 0.37980080385914133, "breakdown.optimizer_s": 0.004614649689174705,
        "stage.fwd_s": 0.07790427536934719, "stage.fwd_s@i": 0.12213017892808983,
        "stage.bwd_s": 0.2112927307323553, "stage.bwd_s@i": 0.330412071997778,
        "stage.p2p_next_s": 0.0009154856729377713, "stage.p2p_next_s@i": 0.0009154856729377713,
        "stage.tail_s": 0.5714195901310464, "stage.tail_s@i": 0.9558350436793623,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.12127824651539819,
        "replica.fwd_s@i": 0.3743930106464026, "replica.bwd_s": 0.33166330635061636,
        "replica.bwd_s@i": 1.0197997922800703, "replica.compute_s": 0.37164831705649076,
        "replica.compute_s@i": 1.1642793979740922, "replica.tp_comm_s": 0.08129323580952381,
        "replica.tp_comm_s@i": 0.22991340495238097, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.9286492816208394,
        "replica.dp_comm_s@i": 3.0071623388326096, "replica.optimizer_s": 0.020497443302131713,
        "replica.optimizer_s@i": 0.057822669406692874, "replica.params_local": 1697639040.0,
        "replica.params_local@i": 5160492800.0, "memory.weights": 3395278080.0,
        "memory.weights@i": 10320985600.0, "memory.grads": 3395278080.0,
        "memory.grads@i": 10320985600.0, "memory.optimizer": 8340633600.0,
        "memory.optimizer@i": 22967087360.0, "memory.activations": 881328128.0,
        "memory.activations@i": 2158952448.0, "memory.extras": 443162624.0,
        "memory.extras@i": 1960153088.0, "memory.total": 25045615104.0,
        "memory.total@i": 73497967872.0,
    },
    "gpt3-6.7b-empty-ends-1f1b-zero1": {
        "iteration_time_s": 19.358196858215464, "tokens_per_s": 54167.02845208399,
        "mfu": 0.28786949193148315, "hfu": 0.3380580801360694, "num_gpus_used": 26,
        "memory_ok": True, "peak_memory_fraction": 0.21729049682617188, "extrapolated": [],
        "breakdown.compute_s": 17.80268911813261, "breakdown.tp_comm_s": 1.1045868105142858,
        "breakdown.bubble_s": 0.12870680968736825, "breakdown.p2p_s": 0.0058571083068017366,
        "breakdown.dp_comm_s": 0.30944353006385394, "breakdown.optimizer_s": 0.0069134815105443845,
        "stage.fwd_s": 0.08284441925114491, "stage.fwd_s@i": 0.20897748099856647,
        "stage.bwd_s": 0.19357548362877336, "stage.bwd_s@i": 0.5070341027381154,
        "stage.p2p_next_s": 0.0029285541534008683, "stage.p2p_next_s@i": 0.004400331230101303,
        "stage.tail_s": 0.39005097509768694, "stage.tail_s@i": 1.092515312869611,
        "stage.in_flight": 10.0, "stage.in_flight@i": 20.0, "replica.fwd_s": 0.08284441925114491,
        "replica.fwd_s@i": 0.4612436044934097, "replica.bwd_s": 0.19357548362877336,
        "replica.bwd_s@i": 1.1339513409567996, "replica.compute_s": 0.24927266844182303,
        "replica.compute_s@i": 1.4531663679264, "replica.tp_comm_s": 0.02714723443809524,
        "replica.tp_comm_s@i": 0.14202857752380954, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.37394354926149276,
        "replica.dp_comm_s@i": 2.415139862861718, "replica.optimizer_s": 0.016107425836194213,
        "replica.optimizer_s@i": 0.08230412555174105, "replica.params_local": 2656531968.0,
        "replica.params_local@i": 14970915840.0, "memory.weights": 5313063936.0,
        "memory.weights@i": 29941831680.0, "memory.grads": 10626127872.0,
        "memory.grads@i": 59883663360.0, "memory.optimizer": 11260471296.0,
        "memory.optimizer@i": 57537638400.0, "memory.activations": 7262568448.0,
        "memory.activations@i": 30283792384.0, "memory.extras": 289738752.0,
        "memory.extras@i": 2293407744.0, "memory.total": 43341904896.0,
        "memory.total@i": 227184973824.0,
    },
    "gpt3-6.7b-empty-ends-gpipe-zero3": {
        "iteration_time_s": 77.41465435308727, "tokens_per_s": 13544.929041696136,
        "mfu": 0.0719842301286705, "hfu": 0.08453431613782604, "num_gpus_used": 26,
        "memory_ok": False, "peak_memory_fraction": 3.512522315979004, "extrapolated": [],
        "breakdown.compute_s": 17.80268911813261, "breakdown.tp_comm_s": 1.1045868105142858,
        "breakdown.bubble_s": 0.23384694019954533, "breakdown.p2p_s": 0.0058571083068017366,
        "breakdown.dp_comm_s": 58.260760894423484, "breakdown.optimizer_s": 0.0069134815105443845,
        "stage.fwd_s": 0.2139089991840212, "stage.fwd_s@i": 0.5835261698525293,
        "stage.bwd_s": 0.6228132286957565, "stage.bwd_s@i": 1.7042437317109902,
        "stage.p2p_next_s": 0.0029285541534008683, "stage.p2p_next_s@i": 0.004400331230101303,
        "stage.tail_s": 0.016107425836194213, "stage.tail_s@i": 0.038172992408043165,
        "stage.in_flight": 512.0, "stage.in_flight@i": 1280.0, "replica.fwd_s": 0.2139089991840212,
        "replica.fwd_s@i": 1.3227605111895453, "replica.bwd_s": 0.6228132286957565,
        "replica.bwd_s@i": 3.8671047377414576, "replica.compute_s": 0.24927266844182303,
        "replica.compute_s@i": 1.4531663679264, "replica.tp_comm_s": 0.02714723443809524,
        "replica.tp_comm_s@i": 0.14202857752380954, "replica.zero_comm_s": 0.5603023249998593,
        "replica.zero_comm_s@i": 3.5946703034807936, "replica.dp_comm_s": 0.0,
        "replica.dp_comm_s@i": 0.0, "replica.optimizer_s": 0.016107425836194213,
        "replica.optimizer_s@i": 0.08230412555174105, "replica.params_local": 2656531968.0,
        "replica.params_local@i": 14970915840.0, "memory.weights": 1876745216.0,
        "memory.weights@i": 9589606400.0, "memory.grads": 3753490432.0,
        "memory.grads@i": 19179212800.0, "memory.optimizer": 11260471296.0,
        "memory.optimizer@i": 57537638400.0, "memory.activations": 309648818176.0,
        "memory.activations@i": 1290563092480.0, "memory.extras": 30644109312.0,
        "memory.extras@i": 287113740288.0, "memory.total": 365773569024.0,
        "memory.total@i": 1711227930624.0,
    },
    "gpt3-6.7b-empty-ends-1f1b-zero2-fp32": {
        "iteration_time_s": 287.948170941035, "tokens_per_s": 3641.5442285088297,
        "mfu": 0.3096465187368882, "hfu": 0.36363182129047833, "num_gpus_used": 26,
        "memory_ok": True, "peak_memory_fraction": 0.27353553771972655, "extrapolated": [],
        "breakdown.compute_s": 273.5948035455215, "breakdown.tp_comm_s": 2.086293621028571,
        "breakdown.bubble_s": 1.7482638729663253, "breakdown.p2p_s": 0.011684216613603473,
        "breakdown.dp_comm_s": 10.500212203394504, "breakdown.optimizer_s": 0.0069134815105443845,
        "stage.fwd_s": 1.1040725558966904, "stage.fwd_s@i": 2.8096623125935754,
        "stage.bwd_s": 2.8799284101597924, "stage.bwd_s@i": 7.582981591825044,
        "stage.p2p_next_s": 0.005842108306801736, "stage.p2p_next_s@i": 0.008770662460202604,
        "stage.tail_s": 0.029585679824177757, "stage.tail_s@i": 0.07021012483307446,
        "stage.in_flight": 10.0, "stage.in_flight@i": 20.0, "replica.fwd_s": 1.1040725558966904,
        "replica.fwd_s@i": 6.220841825987345, "replica.bwd_s": 2.8799284101597924,
        "replica.bwd_s@i": 16.98908795515555, "replica.compute_s": 3.8214927549024202,
        "replica.compute_s@i": 22.256589233482526, "replica.tp_comm_s": 0.05127446887619048,
        "replica.tp_comm_s@i": 0.26825715504761904, "replica.zero_comm_s": 0.11123374227787239,
        "replica.zero_comm_s@i": 0.6850833926127495, "replica.dp_comm_s": 0.013478253987983545,
        "replica.dp_comm_s@i": 0.06915488929912682, "replica.optimizer_s": 0.016107425836194213,
        "replica.optimizer_s@i": 0.08230412555174105, "replica.params_local": 2656531968.0,
        "replica.params_local@i": 14970915840.0, "memory.weights": 10626127872.0,
        "memory.weights@i": 59883663360.0, "memory.grads": 3753490432.0,
        "memory.grads@i": 19179212800.0, "memory.optimizer": 7506980864.0,
        "memory.optimizer@i": 38358425600.0, "memory.activations": 14107672576.0,
        "memory.activations@i": 58872168448.0, "memory.extras": 306515968.0,
        "memory.extras@i": 2461179904.0, "memory.total": 44890722304.0,
        "memory.total@i": 225999290368.0,
    },
    "profiled-extrapolated": {
        "iteration_time_s": 0.17799936718381787, "tokens_per_s": 92045.27105470232,
        "mfu": 0.024304855633946285, "hfu": 0.02655432889580104, "num_gpus_used": 10,
        "memory_ok": True, "peak_memory_fraction": 0.09474293390909831, "extrapolated": [
            "stage 1 A100-80G: tp 4 scaled from measured tp 2 (micro-batch 2)",
            "stage 2 A100-80G: micro-batch 4 scaled from measured 2",
        ], "breakdown.compute_s": 0.14400000000000002, "breakdown.tp_comm_s": 0.0,
        "breakdown.bubble_s": 0.01666346252070268, "breakdown.p2p_s": 0.0020623694356005787,
        "breakdown.dp_comm_s": 0.01490614536084792, "breakdown.optimizer_s": 0.0003673898666666667,
        "stage.fwd_s": 0.01604978872091385, "stage.fwd_s@i": 0.03851957744182769,
        "stage.bwd_s": 0.03661367379978884, "stage.bwd_s@i": 0.09046734759957768,
        "stage.p2p_next_s": 0.0010311847178002894, "stage.p2p_next_s@i": 0.001546777076700434,
        "stage.tail_s": 0.017785040507484855, "stage.tail_s@i": 0.035359364288775556,
        "stage.in_flight": 6.0, "stage.in_flight@i": 10.0, "replica.fwd_s": 0.01714978872091385,
        "replica.fwd_s@i": 0.08952894360456924, "replica.bwd_s": 0.0390708166569317,
        "replica.bwd_s@i": 0.21065694042751562, "replica.compute_s": 0.05464263966355983,
        "replica.compute_s@i": 0.2922960554606563, "replica.tp_comm_s": 0.0015779657142857143,
        "replica.tp_comm_s@i": 0.007889828571428571, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.0214488581411663,
        "replica.dp_comm_s@i": 0.10013173975408454, "replica.optimizer_s": 0.0028139490894940793,
        "replica.optimizer_s@i": 0.011560874217489093, "replica.params_local": 106884608.0,
        "replica.params_local@i": 350051328.0, "memory.weights": 213769216.0,
        "memory.weights@i": 700102656.0, "memory.grads": 427538432.0,
        "memory.grads@i": 1400205312.0, "memory.optimizer": 815195136.0,
        "memory.optimizer@i": 3317520384.0, "memory.activations": 774125568.0,
        "memory.activations@i": 2038839296.0, "memory.extras": 276824064.0,
        "memory.extras@i": 1900019712.0, "memory.total": 11097387008.0,
        "memory.total@i": 45863909376.0,
    },
    "bench-48-stages": {
        "iteration_time_s": 26.383882519508244, "tokens_per_s": 119229.15430183744,
        "mfu": 0.3107929077328211, "hfu": 0.3135832052339019, "num_gpus_used": 768,
        "memory_ok": True, "peak_memory_fraction": 0.2209091901779175, "extrapolated": [],
        "breakdown.compute_s": 21.34256491181154, "breakdown.tp_comm_s": 3.7588254720000003,
        "breakdown.bubble_s": 1.1770806864099979, "breakdown.p2p_s": 0.02924134726483356,
        "breakdown.dp_comm_s": 0.07159242088406151, "breakdown.optimizer_s": 0.004577681137812653,
        "stage.fwd_s": 0.42934477881927396, "stage.fwd_s@i": 8.856142994150177,
        "stage.bwd_s": 0.7804200096529766, "stage.bwd_s@i": 15.90359436445327,
        "stage.p2p_next_s": 0.01462067363241678, "stage.p2p_next_s@i": 0.30719285487698983,
        "stage.tail_s": 2.5510093592705636, "stage.tail_s@i": 55.079688331486686,
        "stage.in_flight": 1176.0, "stage.in_flight@i": 19600.0,
        "replica.fwd_s": 0.42934477881927396, "replica.fwd_s@i": 25.709739424811982,
        "replica.bwd_s": 0.7804200096529766, "replica.bwd_s@i": 46.149943074053866,
        "replica.compute_s": 1.0380411106055831, "replica.compute_s@i": 60.460146219399185,
        "replica.tp_comm_s": 0.17172367786666676, "replica.tp_comm_s@i": 11.399536279466668,
        "replica.zero_comm_s": 0.0, "replica.zero_comm_s@i": 0.0,
        "replica.dp_comm_s": 2.387631066237039, "replica.dp_comm_s@i": 149.64426894655392,
        "replica.optimizer_s": 0.16337829303352383, "replica.optimizer_s@i": 10.49277732936498,
        "replica.params_local": 21902727168.0, "replica.params_local@i": 1565823435264.0,
        "memory.weights": 43805454336.0, "memory.weights@i": 3131646870528.0,
        "memory.grads": 87610908672.0, "memory.grads@i": 6263293741056.0,
        "memory.optimizer": 131416363008.0, "memory.optimizer@i": 9394940611584.0,
        "memory.activations": 251788787712.0, "memory.activations@i": 12085861810176.0,
        "memory.extras": 215041024.0, "memory.extras@i": 9245538304.0,
        "memory.total": 617915769856.0, "memory.total@i": 38255152451584.0,
    },
}


def _lit(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _print_table() -> None:
    """Print the EXPECTED table from the current code (only when the model changes on purpose)."""
    print("EXPECTED: dict[str, dict[str, Any]] = {")
    for case, build in CASES.items():
        cm, plan = build()
        print(f"    {_lit(case)}: {{")
        line = " " * 7
        for key, value in fingerprint(cm.evaluate(plan)).items():
            item = f" {_lit(key)}: {value!r},"
            if isinstance(value, list) and len(line) + len(item) > 100:
                print(line + f" {_lit(key)}: [")
                for entry in value:
                    print(f"            {_lit(entry)},")
                line = " " * 8 + "],"
                continue
            if len(line) + len(item) > 100:
                print(line)
                line = " " * 7
            line += item
        print(line)
        print("    },")
    print("}")


if __name__ == "__main__":
    _print_table()
    sys.exit(0)
