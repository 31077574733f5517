"""Refactoring guard: CostModel.evaluate() must keep returning the same numbers.

EXPECTED below was produced by evaluate() after the deliberate change to per-pass ZeRO overlap
and the refit of the efficiency constants (the first table came from commit 81cae90) with
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


ALL = {"schedules": ("1f1b", "gpipe")}

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
        "iteration_time_s": 5.049966817403297, "tokens_per_s": 103820.08812279483,
        "mfu": 0.37739911762978395, "hfu": 0.3857732139931261, "num_gpus_used": 8,
        "memory_ok": True, "peak_memory_fraction": 0.10638811588287353, "extrapolated": [],
        "breakdown.compute_s": 4.128194991981344, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.05542075696161475, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.00024980129523809527,
        "breakdown.optimizer_s": 0.003052929946051986, "stage.fwd_s": 0.046947280325327745,
        "stage.fwd_s@i": 0.07544255291970382, "stage.bwd_s": 0.08646024910028105,
        "stage.bwd_s@i": 0.1359517489698992, "stage.p2p_next_s": 4.494575238095238e-05,
        "stage.p2p_next_s@i": 4.494575238095238e-05, "stage.tail_s": 0.006337679666988953,
        "stage.tail_s@i": 0.009372628092687825, "stage.in_flight": 3.0, "stage.in_flight@i": 4.0,
        "replica.fwd_s": 0.046947280325327745, "replica.fwd_s@i": 0.132433098108456,
        "replica.bwd_s": 0.08646024910028105, "replica.bwd_s@i": 0.23493474870913544,
        "replica.compute_s": 0.11542922847322785, "replica.compute_s@i": 0.30893836872235336,
        "replica.tp_comm_s": 0.017978300952380954, "replica.tp_comm_s@i": 0.058429478095238095,
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
    "plan1-gpipe-zero0": {
        "iteration_time_s": 5.053019747349349, "tokens_per_s": 103757.36217437594,
        "mfu": 0.3771711008941616, "hfu": 0.38554013780180457, "num_gpus_used": 8,
        "memory_ok": False, "peak_memory_fraction": 1.6533492088317872, "extrapolated": [],
        "breakdown.compute_s": 4.128194991981344, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.05542075696161475, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.00024980129523809527,
        "breakdown.optimizer_s": 0.006105859892103972, "stage.fwd_s": 0.046947280325327745,
        "stage.fwd_s@i": 0.07544255291970382, "stage.bwd_s": 0.08646024910028105,
        "stage.bwd_s@i": 0.1359517489698992, "stage.p2p_next_s": 4.494575238095238e-05,
        "stage.p2p_next_s@i": 4.494575238095238e-05, "stage.tail_s": 0.009390609613040939,
        "stage.tail_s@i": 0.012425558038739811, "stage.in_flight": 128.0,
        "stage.in_flight@i": 192.0, "replica.fwd_s": 0.046947280325327745,
        "replica.fwd_s@i": 0.132433098108456, "replica.bwd_s": 0.08646024910028105,
        "replica.bwd_s@i": 0.23493474870913544, "replica.compute_s": 0.11542922847322785,
        "replica.compute_s@i": 0.30893836872235336, "replica.tp_comm_s": 0.017978300952380954,
        "replica.tp_comm_s@i": 0.058429478095238095, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.00024980129523809527,
        "replica.dp_comm_s@i": 0.00024980129523809527, "replica.optimizer_s": 0.009140808317802843,
        "replica.optimizer_s@i": 0.01824565359489946, "replica.params_local": 532517376.0,
        "replica.params_local@i": 1062939648.0, "memory.weights": 1065034752.0,
        "memory.weights@i": 2125879296.0, "memory.grads": 1065034752.0,
        "memory.grads@i": 2125879296.0, "memory.optimizer": 6390208512.0,
        "memory.optimizer@i": 12755275776.0, "memory.activations": 219244658688.0,
        "memory.activations@i": 548111646720.0, "memory.extras": 27691319296.0,
        "memory.extras@i": 109959970816.0, "memory.total": 259751223296.0,
        "memory.total@i": 685816070144.0,
    },
    "plan1-1f1b-zero2": {
        "iteration_time_s": 5.050555436659677, "tokens_per_s": 103807.98836390006,
        "mfu": 0.37735513347977034, "hfu": 0.38572825388028303, "num_gpus_used": 8,
        "memory_ok": True, "peak_memory_fraction": 0.10224710702896118, "extrapolated": [],
        "breakdown.compute_s": 4.128194991981344, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.056134276865614785, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.00012490064761904764,
        "breakdown.optimizer_s": 0.003052929946051986, "stage.fwd_s": 0.046947280325327745,
        "stage.fwd_s@i": 0.07544255291970382, "stage.bwd_s": 0.08717376900428106,
        "stage.bwd_s@i": 0.13666526887389918, "stage.p2p_next_s": 4.494575238095238e-05,
        "stage.p2p_next_s@i": 4.494575238095238e-05, "stage.tail_s": 0.006212779019369906,
        "stage.tail_s@i": 0.009247727445068778, "stage.in_flight": 3.0, "stage.in_flight@i": 4.0,
        "replica.fwd_s": 0.046947280325327745, "replica.fwd_s@i": 0.132433098108456,
        "replica.bwd_s": 0.08717376900428106, "replica.bwd_s@i": 0.23564826861313545,
        "replica.compute_s": 0.11542922847322785, "replica.compute_s@i": 0.30893836872235336,
        "replica.tp_comm_s": 0.017978300952380954, "replica.tp_comm_s@i": 0.058429478095238095,
        "replica.zero_comm_s": 0.000713519904, "replica.zero_comm_s@i": 0.000713519904,
        "replica.dp_comm_s": 0.00012490064761904764, "replica.dp_comm_s@i": 0.00012490064761904764,
        "replica.optimizer_s": 0.006087878371750858, "replica.optimizer_s@i": 0.015192723648847474,
        "replica.params_local": 532517376.0, "replica.params_local@i": 1062939648.0,
        "memory.weights": 1065034752.0, "memory.weights@i": 2125879296.0,
        "memory.grads": 709324800.0, "memory.grads@i": 1770169344.0,
        "memory.optimizer": 4255948800.0, "memory.optimizer@i": 10621016064.0,
        "memory.activations": 5138546688.0, "memory.activations@i": 10277093376.0,
        "memory.extras": 436871168.0, "memory.extras@i": 1722318848.0,
        "memory.total": 15900693504.0, "memory.total@i": 37253895168.0,
    },
    "plan1-gpipe-zero3": {
        "iteration_time_s": 5.051857575820058, "tokens_per_s": 103781.23138495117,
        "mfu": 0.3772578684857953, "hfu": 0.3856288306766189, "num_gpus_used": 8,
        "memory_ok": False, "peak_memory_fraction": 1.6533492088317872, "extrapolated": [],
        "breakdown.compute_s": 4.128194991981344, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.05756131667361486, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.0, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.04766080022932775, "stage.fwd_s@i": 0.07615607282370382,
        "stage.bwd_s": 0.08788728890828106, "stage.bwd_s@i": 0.1373787887778992,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.006087878371750858, "stage.tail_s@i": 0.00912282679744973,
        "stage.in_flight": 128.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 0.04766080022932775,
        "replica.fwd_s@i": 0.13314661801245598, "replica.bwd_s": 0.08788728890828106,
        "replica.bwd_s@i": 0.23636178851713543, "replica.compute_s": 0.11542922847322785,
        "replica.compute_s@i": 0.30893836872235336, "replica.tp_comm_s": 0.017978300952380954,
        "replica.tp_comm_s@i": 0.058429478095238095, "replica.zero_comm_s": 0.002140559712,
        "replica.zero_comm_s@i": 0.002140559712, "replica.dp_comm_s": 0.0,
        "replica.dp_comm_s@i": 0.0, "replica.optimizer_s": 0.006087878371750858,
        "replica.optimizer_s@i": 0.015192723648847474, "replica.params_local": 532517376.0,
        "replica.params_local@i": 1062939648.0, "memory.weights": 709324800.0,
        "memory.weights@i": 1770169344.0, "memory.grads": 709324800.0,
        "memory.grads@i": 1770169344.0, "memory.optimizer": 4255948800.0,
        "memory.optimizer@i": 10621016064.0, "memory.activations": 219244658688.0,
        "memory.activations@i": 548111646720.0, "memory.extras": 27691319296.0,
        "memory.extras@i": 109959970816.0, "memory.total": 256905543680.0,
        "memory.total@i": 682970390528.0,
    },
    "plan1-1f1b-zero1-no-overlap": {
        "iteration_time_s": 5.053114729936629, "tokens_per_s": 103755.41186387728,
        "mfu": 0.37716401126945986, "hfu": 0.38553289086565806, "num_gpus_used": 8,
        "memory_ok": True, "peak_memory_fraction": 0.10638811588287353, "extrapolated": [],
        "breakdown.compute_s": 4.128194991981344, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.05542075696161475, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.0033977138285714286, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.046947280325327745, "stage.fwd_s@i": 0.07544255291970382,
        "stage.bwd_s": 0.08646024910028105, "stage.bwd_s@i": 0.1359517489698992,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.009485592200322288, "stage.tail_s@i": 0.012520540626021159,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.046947280325327745,
        "replica.fwd_s@i": 0.132433098108456, "replica.bwd_s": 0.08646024910028105,
        "replica.bwd_s@i": 0.23493474870913544, "replica.compute_s": 0.11542922847322785,
        "replica.compute_s@i": 0.30893836872235336, "replica.tp_comm_s": 0.017978300952380954,
        "replica.tp_comm_s@i": 0.058429478095238095, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.0033977138285714286,
        "replica.dp_comm_s@i": 0.0033977138285714286, "replica.optimizer_s": 0.006087878371750858,
        "replica.optimizer_s@i": 0.015192723648847474, "replica.params_local": 532517376.0,
        "replica.params_local@i": 1062939648.0, "memory.weights": 1065034752.0,
        "memory.weights@i": 2125879296.0, "memory.grads": 1065034752.0,
        "memory.grads@i": 2125879296.0, "memory.optimizer": 4255948800.0,
        "memory.optimizer@i": 10621016064.0, "memory.activations": 5138546688.0,
        "memory.activations@i": 10277093376.0, "memory.extras": 436871168.0,
        "memory.extras@i": 1722318848.0, "memory.total": 16256403456.0,
        "memory.total@i": 37609605120.0,
    },
    "llama-mixed-1f1b-zero1": {
        "iteration_time_s": 70.60510158003929, "tokens_per_s": 29702.55623274798,
        "mfu": 0.09200289661257745, "hfu": 0.11407159794017886, "num_gpus_used": 40,
        "memory_ok": True, "peak_memory_fraction": 0.5340792655944824, "extrapolated": [],
        "breakdown.compute_s": 32.652654797315876, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 1.4347358661868923, "breakdown.p2p_s": 0.11502443095046855,
        "breakdown.dp_comm_s": 0.6777267834127204, "breakdown.optimizer_s": 0.0018719764590485533,
        "stage.fwd_s": 1.0824688297425984, "stage.fwd_s@i": 2.7334134348238104,
        "stage.bwd_s": 2.4890089902889856, "stage.bwd_s@i": 6.290447281079356,
        "stage.p2p_next_s": 0.057512215475234274, "stage.p2p_next_s@i": 0.08626832321285141,
        "stage.tail_s": 0.700830281952287, "stage.tail_s@i": 1.4150010782261724,
        "stage.in_flight": 6.0, "stage.in_flight@i": 10.0, "replica.fwd_s": 1.1721108922927663,
        "replica.fwd_s@i": 6.74270240794674, "replica.bwd_s": 2.745710801253775,
        "replica.bwd_s@i": 15.750198581941618, "replica.compute_s": 2.097205186422732,
        "replica.compute_s@i": 11.267061389735979, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.786080283320249,
        "replica.dp_comm_s@i": 3.258193680807572, "replica.optimizer_s": 0.02352889536496342,
        "replica.optimizer_s@i": 0.12904347363099797, "replica.params_local": 3338515456.0,
        "replica.params_local@i": 11978558464.0, "memory.weights": 6677030912.0,
        "memory.weights@i": 23957116928.0, "memory.grads": 6677030912.0,
        "memory.grads@i": 23957116928.0, "memory.optimizer": 10736719872.0,
        "memory.optimizer@i": 44255569920.0, "memory.activations": 38134349824.0,
        "memory.activations@i": 56581685248.0, "memory.extras": 4336910336.0,
        "memory.extras@i": 30358372352.0, "memory.total": 75151976448.0,
        "memory.total@i": 215617083392.0,
    },
    "llama-mixed-gpipe-zero2": {
        "iteration_time_s": 70.7428663450458, "tokens_per_s": 29644.713429778436,
        "mfu": 0.09182373003244584, "hfu": 0.11384945473767565, "num_gpus_used": 40,
        "memory_ok": False, "peak_memory_fraction": 4.365551328659057, "extrapolated": [],
        "breakdown.compute_s": 32.652654797315876, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 1.6336786275821478, "breakdown.p2p_s": 0.11502443095046855,
        "breakdown.dp_comm_s": 0.6165487870239654, "breakdown.optimizer_s": 0.0018719764590485533,
        "stage.fwd_s": 1.0824688297425984, "stage.fwd_s@i": 2.7334134348238104,
        "stage.bwd_s": 2.7006403860842623, "stage.bwd_s@i": 6.723685950493909,
        "stage.p2p_next_s": 0.057512215475234274, "stage.p2p_next_s@i": 0.08626832321285141,
        "stage.tail_s": 0.23161979428734153, "stage.tail_s@i": 0.47499486480104325,
        "stage.in_flight": 96.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 1.1721108922927663,
        "replica.fwd_s@i": 6.74270240794674, "replica.bwd_s": 3.275669443878229,
        "replica.bwd_s@i": 18.09619079073071, "replica.compute_s": 2.097205186422732,
        "replica.compute_s@i": 11.267061389735979, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 0.5299586426244541,
        "replica.zero_comm_s@i": 2.3459922087890934, "replica.dp_comm_s": 0.24110735586124468,
        "replica.dp_comm_s@i": 0.9977838168917817, "replica.optimizer_s": 0.02352889536496342,
        "replica.optimizer_s@i": 0.12904347363099797, "replica.params_local": 3338515456.0,
        "replica.params_local@i": 11978558464.0, "memory.weights": 6677030912.0,
        "memory.weights@i": 23957116928.0, "memory.grads": 1789453312.0,
        "memory.grads@i": 7375928320.0, "memory.optimizer": 10736719872.0,
        "memory.optimizer@i": 44255569920.0, "memory.activations": 408208277504.0,
        "memory.activations@i": 617915875328.0, "memory.extras": 138781130752.0,
        "memory.extras@i": 971467915264.0, "memory.total": 574782546944.0,
        "memory.total@i": 1701479627776.0,
    },
    "llama-mixed-1f1b-zero3": {
        "iteration_time_s": 71.88333606034573, "tokens_per_s": 29174.383312419595,
        "mfu": 0.090366894707497, "hfu": 0.11204316885352127, "num_gpus_used": 40,
        "memory_ok": True, "peak_memory_fraction": 0.4868183135986328, "extrapolated": [],
        "breakdown.compute_s": 32.652654797315876, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 2.16075561433547, "breakdown.p2p_s": 0.11502443095046855,
        "breakdown.dp_comm_s": 1.2181089024000002, "breakdown.optimizer_s": 0.01370458962962963,
        "stage.fwd_s": 1.3627622405066493, "stage.fwd_s@i": 3.3039761341759117,
        "stage.bwd_s": 2.972801230873525, "stage.bwd_s@i": 7.277983517896436,
        "stage.p2p_next_s": 0.057512215475234274, "stage.p2p_next_s@i": 0.08626832321285141,
        "stage.tail_s": 0.021656918905914868, "stage.tail_s@i": 0.053483875942951904,
        "stage.in_flight": 6.0, "stage.in_flight@i": 10.0, "replica.fwd_s": 1.8676262039664748,
        "replica.fwd_s@i": 9.819583307901624, "replica.bwd_s": 4.015044585856247,
        "replica.bwd_s@i": 21.340378445928046, "replica.compute_s": 2.097205186422732,
        "replica.compute_s@i": 11.267061389735979, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 1.9648490962761802,
        "replica.zero_comm_s@i": 8.667060763941311, "replica.dp_comm_s": 0.0,
        "replica.dp_comm_s@i": 0.0, "replica.optimizer_s": 0.02352889536496342,
        "replica.optimizer_s@i": 0.12904347363099797, "replica.params_local": 3338515456.0,
        "replica.params_local@i": 11978558464.0, "memory.weights": 1789453312.0,
        "memory.weights@i": 7375928320.0, "memory.grads": 1789453312.0,
        "memory.grads@i": 7375928320.0, "memory.optimizer": 10736719872.0,
        "memory.optimizer@i": 44255569920.0, "memory.activations": 38134349824.0,
        "memory.activations@i": 56581685248.0, "memory.extras": 4336910336.0,
        "memory.extras@i": 30358372352.0, "memory.total": 65376821248.0,
        "memory.total@i": 182454706176.0,
    },
    "llama-mixed-gpipe-zero0": {
        "iteration_time_s": 70.61446146233453, "tokens_per_s": 29698.619186080068,
        "mfu": 0.09199070171276115, "hfu": 0.11405647785418174, "num_gpus_used": 40,
        "memory_ok": False, "peak_memory_fraction": 4.530964660644531, "extrapolated": [],
        "breakdown.compute_s": 32.652654797315876, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 1.4347358661868923, "breakdown.p2p_s": 0.11502443095046855,
        "breakdown.dp_comm_s": 0.6777267834127204, "breakdown.optimizer_s": 0.01123185875429132,
        "stage.fwd_s": 1.0824688297425984, "stage.fwd_s@i": 2.7334134348238104,
        "stage.bwd_s": 2.4890089902889856, "stage.bwd_s@i": 6.290447281079356,
        "stage.p2p_next_s": 0.057512215475234274, "stage.p2p_next_s@i": 0.08626832321285141,
        "stage.tail_s": 0.7344984083726819, "stage.tail_s@i": 1.4854382662010692,
        "stage.in_flight": 96.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 1.1721108922927663,
        "replica.fwd_s@i": 6.74270240794674, "replica.bwd_s": 2.745710801253775,
        "replica.bwd_s@i": 15.750198581941618, "replica.compute_s": 2.097205186422732,
        "replica.compute_s@i": 11.267061389735979, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.786080283320249,
        "replica.dp_comm_s@i": 3.258193680807572, "replica.optimizer_s": 0.07928591067424709,
        "replica.optimizer_s@i": 0.3834632291593433, "replica.params_local": 3338515456.0,
        "replica.params_local@i": 11978558464.0, "memory.weights": 6677030912.0,
        "memory.weights@i": 23957116928.0, "memory.grads": 6677030912.0,
        "memory.grads@i": 23957116928.0, "memory.optimizer": 40062185472.0,
        "memory.optimizer@i": 143742701568.0, "memory.activations": 408208277504.0,
        "memory.activations@i": 617915875328.0, "memory.extras": 138781130752.0,
        "memory.extras@i": 971467915264.0, "memory.total": 608995590144.0,
        "memory.total@i": 1817547948032.0,
    },
    "t4-a100-mixed-1f1b": {
        "iteration_time_s": 21.185211084930685, "tokens_per_s": 49495.659769274884,
        "mfu": 0.11592352257449365, "hfu": 0.11892444958795852, "num_gpus_used": 14,
        "memory_ok": True, "peak_memory_fraction": 0.689031720161438, "extrapolated": [],
        "breakdown.compute_s": 17.060162168114907, "breakdown.tp_comm_s": 0.0,
        "breakdown.bubble_s": 0.06638784141195068, "breakdown.p2p_s": 0.0431821616064257,
        "breakdown.dp_comm_s": 3.993272057797402, "breakdown.optimizer_s": 0.022206856,
        "stage.fwd_s": 0.1090885222763544, "stage.fwd_s@i": 0.13335791850100118,
        "stage.bwd_s": 0.22386435301239016, "stage.bwd_s@i": 0.26598279819969256,
        "stage.p2p_next_s": 0.02159108080321285, "stage.p2p_next_s@i": 0.02159108080321285,
        "stage.tail_s": 4.0194928453366705, "stage.tail_s@i": 4.023506776875938,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.14092083687546406,
        "replica.fwd_s@i": 0.29854815160111203, "replica.bwd_s": 0.28776887011719327,
        "replica.bwd_s@i": 0.5958701135041882, "replica.compute_s": 0.40983281647837166,
        "replica.compute_s@i": 0.8415823857910145, "replica.tp_comm_s": 0.018856890514285712,
        "replica.tp_comm_s@i": 0.05283587931428572, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 6.019679084253509,
        "replica.dp_comm_s@i": 10.021088824299907, "replica.optimizer_s": 0.02525079518587543,
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
        "iteration_time_s": 25.908939508992923, "tokens_per_s": 40471.59088221431,
        "mfu": 0.20704307172437378, "hfu": 0.2730786013331105, "num_gpus_used": 16,
        "memory_ok": False, "peak_memory_fraction": 1.2160619795322418, "extrapolated": [],
        "breakdown.compute_s": 21.82100729833339, "breakdown.tp_comm_s": 3.628161316571429,
        "breakdown.bubble_s": 0.1497226484963572, "breakdown.p2p_s": 0.003378918875502008,
        "breakdown.dp_comm_s": 0.30205467702706845, "breakdown.optimizer_s": 0.004614649689174705,
        "stage.fwd_s": 0.09328890313000626, "stage.fwd_s@i": 0.14671489939177904,
        "stage.bwd_s": 0.2552553751702983, "stage.bwd_s@i": 0.4006510087124694,
        "stage.p2p_next_s": 0.001689459437751004, "stage.p2p_next_s@i": 0.001689459437751004,
        "stage.tail_s": 0.38809071666511535, "stage.tail_s@i": 0.6947600433813585,
        "stage.in_flight": 256.0, "stage.in_flight@i": 384.0, "replica.fwd_s": 0.14409236448117269,
        "replica.fwd_s@i": 0.4442129191767975, "replica.bwd_s": 0.3966599766959194,
        "replica.bwd_s@i": 1.2181976658773643, "replica.compute_s": 0.4594591053675683,
        "replica.compute_s@i": 1.432497180101781, "replica.tp_comm_s": 0.08129323580952381,
        "replica.tp_comm_s@i": 0.22991340495238097, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.4623761860885518,
        "replica.dp_comm_s@i": 1.5635438818245542, "replica.optimizer_s": 0.020497443302131713,
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
        "iteration_time_s": 25.95821478573649, "tokens_per_s": 40394.7655358862,
        "mfu": 0.206650051451552, "hfu": 0.2725602288731974, "num_gpus_used": 16, "memory_ok": True,
        "peak_memory_fraction": 0.17940475791692734, "extrapolated": [],
        "breakdown.compute_s": 21.82100729833339, "breakdown.tp_comm_s": 3.628161316571429,
        "breakdown.bubble_s": 0.1497226484963572, "breakdown.p2p_s": 0.003378918875502008,
        "breakdown.dp_comm_s": 0.3513299537706381, "breakdown.optimizer_s": 0.004614649689174705,
        "stage.fwd_s": 0.09328890313000626, "stage.fwd_s@i": 0.14671489939177904,
        "stage.bwd_s": 0.2552553751702983, "stage.bwd_s@i": 0.4006510087124694,
        "stage.p2p_next_s": 0.001689459437751004, "stage.p2p_next_s@i": 0.001689459437751004,
        "stage.tail_s": 0.5294953181907365, "stage.tail_s@i": 0.8854399216505493,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.14409236448117269,
        "replica.fwd_s@i": 0.4442129191767975, "replica.bwd_s": 0.3966599766959194,
        "replica.bwd_s@i": 1.2181976658773643, "replica.compute_s": 0.4594591053675683,
        "replica.compute_s@i": 1.432497180101781, "replica.tp_comm_s": 0.08129323580952381,
        "replica.tp_comm_s@i": 0.22991340495238097, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.8590361627844711,
        "replica.dp_comm_s@i": 2.7817415477019187, "replica.optimizer_s": 0.020497443302131713,
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
        "iteration_time_s": 20.594045218526826, "tokens_per_s": 50916.46584599511,
        "mfu": 0.27059444781984177, "hfu": 0.3177712195609398, "num_gpus_used": 26,
        "memory_ok": True, "peak_memory_fraction": 0.19853553771972657, "extrapolated": [],
        "breakdown.compute_s": 19.187751543679116, "breakdown.tp_comm_s": 1.1045868105142858,
        "breakdown.bubble_s": 0.14872299982486964, "breakdown.p2p_s": 0.005420270200803213,
        "breakdown.dp_comm_s": 0.1406501127972061, "breakdown.optimizer_s": 0.0069134815105443845,
        "stage.fwd_s": 0.09211184567366182, "stage.fwd_s@i": 0.23056211123339426,
        "stage.bwd_s": 0.2151450475433431, "stage.bwd_s@i": 0.5584273485639178,
        "stage.p2p_next_s": 0.0027101351004016065, "stage.p2p_next_s@i": 0.00407270265060241,
        "stage.tail_s": 0.16301945206140656, "stage.tail_s@i": 0.47067904610183103,
        "stage.in_flight": 10.0, "stage.in_flight@i": 20.0, "replica.fwd_s": 0.09211184567366182,
        "replica.fwd_s@i": 0.5074626423528592, "replica.bwd_s": 0.2151450475433431,
        "replica.bwd_s@i": 1.2449919506050677, "replica.compute_s": 0.28010965877890964,
        "replica.compute_s@i": 1.610426015434117, "replica.tp_comm_s": 0.02714723443809524,
        "replica.tp_comm_s@i": 0.14202857752380954, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.14691202622521235,
        "replica.dp_comm_s@i": 1.003694108630939, "replica.optimizer_s": 0.016107425836194213,
        "replica.optimizer_s@i": 0.08230412555174105, "replica.params_local": 2656531968.0,
        "replica.params_local@i": 14970915840.0, "memory.weights": 5313063936.0,
        "memory.weights@i": 29941831680.0, "memory.grads": 5313063936.0,
        "memory.grads@i": 29941831680.0, "memory.optimizer": 11260471296.0,
        "memory.optimizer@i": 57537638400.0, "memory.activations": 7262568448.0,
        "memory.activations@i": 30283792384.0, "memory.extras": 289738752.0,
        "memory.extras@i": 2293407744.0, "memory.total": 38028840960.0,
        "memory.total@i": 197243142144.0,
    },
    "gpt3-6.7b-empty-ends-gpipe-zero3": {
        "iteration_time_s": 58.43682641341483, "tokens_per_s": 17943.753354807228,
        "mfu": 0.0953616860515351, "hfu": 0.11198751312206984, "num_gpus_used": 26,
        "memory_ok": False, "peak_memory_fraction": 3.5031448364257813, "extrapolated": [],
        "breakdown.compute_s": 19.187751543679116, "breakdown.tp_comm_s": 1.1045868105142858,
        "breakdown.bubble_s": 0.2060815987253955, "breakdown.p2p_s": 0.005420270200803213,
        "breakdown.dp_comm_s": 37.92607270878469, "breakdown.optimizer_s": 0.0069134815105443845,
        "stage.fwd_s": 0.21724256791815263, "stage.fwd_s@i": 0.5858334100894129,
        "stage.bwd_s": 0.44367036723675074, "stage.bwd_s@i": 1.2037615718892332,
        "stage.p2p_next_s": 0.0027101351004016065, "stage.p2p_next_s@i": 0.00407270265060241,
        "stage.tail_s": 0.016107425836194213, "stage.tail_s@i": 0.038172992408043165,
        "stage.in_flight": 512.0, "stage.in_flight@i": 1280.0, "replica.fwd_s": 0.21724256791815263,
        "replica.fwd_s@i": 1.3230150944319337, "replica.bwd_s": 0.44367036723675074,
        "replica.bwd_s@i": 2.723943981194198, "replica.compute_s": 0.28010965877890964,
        "replica.compute_s@i": 1.610426015434117, "replica.tp_comm_s": 0.02714723443809524,
        "replica.tp_comm_s@i": 0.14202857752380954, "replica.zero_comm_s": 0.3536560419378984,
        "replica.zero_comm_s@i": 2.294504482668205, "replica.dp_comm_s": 0.0,
        "replica.dp_comm_s@i": 0.0, "replica.optimizer_s": 0.016107425836194213,
        "replica.optimizer_s@i": 0.08230412555174105, "replica.params_local": 2656531968.0,
        "replica.params_local@i": 14970915840.0, "memory.weights": 1876745216.0,
        "memory.weights@i": 9589606400.0, "memory.grads": 1876745216.0,
        "memory.grads@i": 9589606400.0, "memory.optimizer": 11260471296.0,
        "memory.optimizer@i": 57537638400.0, "memory.activations": 309648818176.0,
        "memory.activations@i": 1290563092480.0, "memory.extras": 30644109312.0,
        "memory.extras@i": 287113740288.0, "memory.total": 363896823808.0,
        "memory.total@i": 1701638324224.0,
    },
    "gpt3-6.7b-empty-ends-1f1b-zero2-fp32": {
        "iteration_time_s": 45.605906739093456, "tokens_per_s": 22992.1094650917,
        "mfu": 0.1221910645514531, "hfu": 0.14349445790482915, "num_gpus_used": 26,
        "memory_ok": True, "peak_memory_fraction": 0.27353553771972655, "extrapolated": [],
        "breakdown.compute_s": 19.187751543679116, "breakdown.tp_comm_s": 2.086293621028571,
        "breakdown.bubble_s": 0.2034883148013983, "breakdown.p2p_s": 0.010810540401606426,
        "breakdown.dp_comm_s": 24.110649237672224, "breakdown.optimizer_s": 0.0069134815105443845,
        "stage.fwd_s": 0.10293833961102608, "stage.fwd_s@i": 0.2558489675326633,
        "stage.bwd_s": 0.4540591341426129, "stage.bwd_s@i": 1.2277605121482384,
        "stage.p2p_next_s": 0.005405270200803213, "stage.p2p_next_s@i": 0.008115405301204819,
        "stage.tail_s": 0.15779911416763043, "stage.tail_s@i": 0.45519759559853107,
        "stage.in_flight": 10.0, "stage.in_flight@i": 20.0, "replica.fwd_s": 0.10293833961102608,
        "replica.fwd_s@i": 0.5616702233759377, "replica.bwd_s": 0.4540591341426129,
        "replica.bwd_s@i": 2.775163268159489, "replica.compute_s": 0.280233081162431,
        "replica.compute_s@i": 1.6105494378176384, "replica.tp_comm_s": 0.05127446887619048,
        "replica.tp_comm_s@i": 0.26825715504761904, "replica.zero_comm_s": 0.22548992371501747,
        "replica.zero_comm_s@i": 1.4580268986701692, "replica.dp_comm_s": 0.14169168833143622,
        "replica.dp_comm_s@i": 0.9676904329085914, "replica.optimizer_s": 0.016107425836194213,
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
        "iteration_time_s": 0.17668258425515823, "tokens_per_s": 92731.26759533273,
        "mfu": 0.02448599526984893, "hfu": 0.026752233443775655, "num_gpus_used": 10,
        "memory_ok": True, "peak_memory_fraction": 0.0937653382619222, "extrapolated": [
            "stage 1 A100-80G: tp 4 scaled from measured tp 2 (micro-batch 2)",
            "stage 2 A100-80G: micro-batch 4 scaled from measured 2",
        ], "breakdown.compute_s": 0.14400000000000002, "breakdown.tp_comm_s": 0.0,
        "breakdown.bubble_s": 0.017146431146717253, "breakdown.p2p_s": 0.007307026934404284,
        "breakdown.dp_comm_s": 0.00786173630737002, "breakdown.optimizer_s": 0.0003673898666666667,
        "stage.fwd_s": 0.016196221858371072, "stage.fwd_s@i": 0.03881244371674215,
        "stage.bwd_s": 0.03695020928834618, "stage.bwd_s@i": 0.09114041857669236,
        "stage.p2p_next_s": 0.003653513467202142, "stage.p2p_next_s@i": 0.005480270200803213,
        "stage.tail_s": 0.010680649434959336, "stage.tail_s@i": 0.021210564162772137,
        "stage.in_flight": 6.0, "stage.in_flight@i": 10.0, "replica.fwd_s": 0.017296221858371073,
        "replica.fwd_s@i": 0.09026110929185537, "replica.bwd_s": 0.03940735214548904,
        "replica.bwd_s@i": 0.2123396178703023, "replica.compute_s": 0.0551256082895744,
        "replica.compute_s@i": 0.2947108985907291, "replica.tp_comm_s": 0.0015779657142857143,
        "replica.tp_comm_s@i": 0.007889828571428571, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.0109905302861805,
        "replica.dp_comm_s@i": 0.0514339653378063, "replica.optimizer_s": 0.0028139490894940793,
        "replica.optimizer_s@i": 0.011560874217489093, "replica.params_local": 106884608.0,
        "replica.params_local@i": 350051328.0, "memory.weights": 213769216.0,
        "memory.weights@i": 700102656.0, "memory.grads": 213769216.0, "memory.grads@i": 700102656.0,
        "memory.optimizer": 815195136.0, "memory.optimizer@i": 3317520384.0,
        "memory.activations": 774125568.0, "memory.activations@i": 2038839296.0,
        "memory.extras": 276824064.0, "memory.extras@i": 1900019712.0,
        "memory.total": 10883617792.0, "memory.total@i": 45163806720.0,
    },
    "bench-48-stages": {
        "iteration_time_s": 29.29797408162811, "tokens_per_s": 107370.15437434606,
        "mfu": 0.27988022457365225, "hfu": 0.28239298812712804, "num_gpus_used": 768,
        "memory_ok": True, "peak_memory_fraction": 0.2084908127784729, "extrapolated": [],
        "breakdown.compute_s": 24.177366098425153, "breakdown.tp_comm_s": 3.7588254720000003,
        "breakdown.bubble_s": 1.2965171859814342, "breakdown.p2p_s": 0.027084459116465866,
        "breakdown.dp_comm_s": 0.03360318496724272, "breakdown.optimizer_s": 0.004577681137812653,
        "stage.fwd_s": 0.4694866027512272, "stage.fwd_s@i": 9.55535705331238,
        "stage.bwd_s": 0.863405832670866, "stage.bwd_s@i": 17.355444131575204,
        "stage.p2p_next_s": 0.013542229558232933, "stage.p2p_next_s@i": 0.2845864828915663,
        "stage.tail_s": 1.2538586303224983, "stage.tail_s@i": 27.806087210195308,
        "stage.in_flight": 1176.0, "stage.in_flight@i": 19600.0,
        "replica.fwd_s": 0.4694866027512272, "replica.fwd_s@i": 27.727097954434683,
        "replica.bwd_s": 0.863405832670866, "replica.bwd_s@i": 50.33952072938389,
        "replica.compute_s": 1.161168757555427, "replica.compute_s@i": 66.66708240435194,
        "replica.tp_comm_s": 0.17172367786666676, "replica.tp_comm_s@i": 11.399536279466668,
        "replica.zero_comm_s": 0.0, "replica.zero_comm_s@i": 0.0,
        "replica.dp_comm_s": 1.0904803372889733, "replica.dp_comm_s@i": 70.41776704057594,
        "replica.optimizer_s": 0.16337829303352383, "replica.optimizer_s@i": 10.49277732936498,
        "replica.params_local": 21902727168.0, "replica.params_local@i": 1565823435264.0,
        "memory.weights": 43805454336.0, "memory.weights@i": 3131646870528.0,
        "memory.grads": 43805454336.0, "memory.grads@i": 3131646870528.0,
        "memory.optimizer": 131416363008.0, "memory.optimizer@i": 9394940611584.0,
        "memory.activations": 251788787712.0, "memory.activations@i": 12085861810176.0,
        "memory.extras": 215041024.0, "memory.extras@i": 9245538304.0,
        "memory.total": 574110315520.0, "memory.total@i": 35123505581056.0,
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
