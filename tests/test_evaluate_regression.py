"""Refactoring guard: CostModel.evaluate() must keep returning the same numbers.

EXPECTED below was produced by evaluate() after the compute model by kernel, the peaks per
precision, the NIC sharing by a stage's own GPUs and the refit of 2026-12-01 (issue 20; before
that, the per-pass ZeRO overlap; the first table came from commit 81cae90) with
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
        "iteration_time_s": 4.057819891591365, "tokens_per_s": 129204.35455660128,
        "mfu": 0.4696741284395128, "hfu": 0.4800957119228622, "num_gpus_used": 8, "memory_ok": True,
        "peak_memory_fraction": 0.10638811588287353, "extrapolated": [],
        "breakdown.compute_s": 3.143745227474944, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.04772359565608286, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.00024980129523809527,
        "breakdown.optimizer_s": 0.003052929946051986, "stage.fwd_s": 0.039290708718854636,
        "stage.fwd_s@i": 0.06247509317881971, "stage.bwd_s": 0.07103763183080969,
        "stage.bwd_s@i": 0.11045799226442632, "stage.p2p_next_s": 4.494575238095238e-05,
        "stage.p2p_next_s@i": 4.494575238095238e-05, "stage.tail_s": 0.006337679666988953,
        "stage.tail_s@i": 0.009372628092687825, "stage.in_flight": 3.0, "stage.in_flight@i": 4.0,
        "replica.fwd_s": 0.039290708718854636, "replica.fwd_s@i": 0.10884386209874986,
        "replica.bwd_s": 0.07103763183080969, "replica.bwd_s@i": 0.18929871313165958,
        "replica.compute_s": 0.09235003959728336, "replica.compute_s@i": 0.23971309713517136,
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
        "iteration_time_s": 4.060872821537417, "tokens_per_s": 129107.21981229357,
        "mfu": 0.4693210313900326, "hfu": 0.4797347800147938, "num_gpus_used": 8,
        "memory_ok": False, "peak_memory_fraction": 1.6533492088317872, "extrapolated": [],
        "breakdown.compute_s": 3.143745227474944, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.04772359565608286, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.00024980129523809527,
        "breakdown.optimizer_s": 0.006105859892103972, "stage.fwd_s": 0.039290708718854636,
        "stage.fwd_s@i": 0.06247509317881971, "stage.bwd_s": 0.07103763183080969,
        "stage.bwd_s@i": 0.11045799226442632, "stage.p2p_next_s": 4.494575238095238e-05,
        "stage.p2p_next_s@i": 4.494575238095238e-05, "stage.tail_s": 0.009390609613040939,
        "stage.tail_s@i": 0.012425558038739811, "stage.in_flight": 128.0,
        "stage.in_flight@i": 192.0, "replica.fwd_s": 0.039290708718854636,
        "replica.fwd_s@i": 0.10884386209874986, "replica.bwd_s": 0.07103763183080969,
        "replica.bwd_s@i": 0.18929871313165958, "replica.compute_s": 0.09235003959728336,
        "replica.compute_s@i": 0.23971309713517136, "replica.tp_comm_s": 0.017978300952380954,
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
        "iteration_time_s": 4.058537623973231, "tokens_per_s": 129181.5054031043,
        "mfu": 0.4695910688840427, "hfu": 0.48001080936170154, "num_gpus_used": 8,
        "memory_ok": True, "peak_memory_fraction": 0.10224710702896118, "extrapolated": [],
        "breakdown.compute_s": 3.143745227474944, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.04856622868556815, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.00012490064761904764,
        "breakdown.optimizer_s": 0.003052929946051986, "stage.fwd_s": 0.039290708718854636,
        "stage.fwd_s@i": 0.06247509317881971, "stage.bwd_s": 0.07188026486029539,
        "stage.bwd_s@i": 0.11130062529391203, "stage.p2p_next_s": 4.494575238095238e-05,
        "stage.p2p_next_s@i": 4.494575238095238e-05, "stage.tail_s": 0.006212779019369906,
        "stage.tail_s@i": 0.009247727445068778, "stage.in_flight": 3.0, "stage.in_flight@i": 4.0,
        "replica.fwd_s": 0.039290708718854636, "replica.fwd_s@i": 0.10884386209874986,
        "replica.bwd_s": 0.07188026486029539, "replica.bwd_s@i": 0.1901413461611453,
        "replica.compute_s": 0.09235003959728336, "replica.compute_s@i": 0.23971309713517136,
        "replica.tp_comm_s": 0.017978300952380954, "replica.tp_comm_s@i": 0.058429478095238095,
        "replica.zero_comm_s": 0.0008426330294857143,
        "replica.zero_comm_s@i": 0.0008426330294857143, "replica.dp_comm_s": 0.00012490064761904764,
        "replica.dp_comm_s@i": 0.00012490064761904764, "replica.optimizer_s": 0.006087878371750858,
        "replica.optimizer_s@i": 0.015192723648847474, "replica.params_local": 532517376.0,
        "replica.params_local@i": 1062939648.0, "memory.weights": 1065034752.0,
        "memory.weights@i": 2125879296.0, "memory.grads": 709324800.0,
        "memory.grads@i": 1770169344.0, "memory.optimizer": 4255948800.0,
        "memory.optimizer@i": 10621016064.0, "memory.activations": 5138546688.0,
        "memory.activations@i": 10277093376.0, "memory.extras": 436871168.0,
        "memory.extras@i": 1722318848.0, "memory.total": 15900693504.0,
        "memory.total@i": 37253895168.0,
    },
    "plan1-gpipe-zero3": {
        "iteration_time_s": 4.060097989384583, "tokens_per_s": 129131.85873119037,
        "mfu": 0.4694105969685169, "hfu": 0.47982633296089505, "num_gpus_used": 8,
        "memory_ok": False, "peak_memory_fraction": 1.6533492088317872, "extrapolated": [],
        "breakdown.compute_s": 3.143745227474944, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.050251494744539604, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.0, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.04013334174834035, "stage.fwd_s@i": 0.06331772620830542,
        "stage.bwd_s": 0.07272289788978112, "stage.bwd_s@i": 0.11214325832339775,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.006087878371750858, "stage.tail_s@i": 0.00912282679744973,
        "stage.in_flight": 128.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 0.04013334174834035,
        "replica.fwd_s@i": 0.10968649512823558, "replica.bwd_s": 0.07272289788978112,
        "replica.bwd_s@i": 0.19098397919063104, "replica.compute_s": 0.09235003959728336,
        "replica.compute_s@i": 0.23971309713517136, "replica.tp_comm_s": 0.017978300952380954,
        "replica.tp_comm_s@i": 0.058429478095238095, "replica.zero_comm_s": 0.0025278990884571428,
        "replica.zero_comm_s@i": 0.0025278990884571428, "replica.dp_comm_s": 0.0,
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
        "iteration_time_s": 4.060967804124697, "tokens_per_s": 129104.20010409446,
        "mfu": 0.4693100543697811, "hfu": 0.47972355942580813, "num_gpus_used": 8,
        "memory_ok": True, "peak_memory_fraction": 0.10638811588287353, "extrapolated": [],
        "breakdown.compute_s": 3.143745227474944, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.04772359565608286, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.0033977138285714286, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.039290708718854636, "stage.fwd_s@i": 0.06247509317881971,
        "stage.bwd_s": 0.07103763183080969, "stage.bwd_s@i": 0.11045799226442632,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.009485592200322288, "stage.tail_s@i": 0.012520540626021159,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.039290708718854636,
        "replica.fwd_s@i": 0.10884386209874986, "replica.bwd_s": 0.07103763183080969,
        "replica.bwd_s@i": 0.18929871313165958, "replica.compute_s": 0.09235003959728336,
        "replica.compute_s@i": 0.23971309713517136, "replica.tp_comm_s": 0.017978300952380954,
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
        "iteration_time_s": 66.42354665234404, "tokens_per_s": 31572.41830184617,
        "mfu": 0.09779474581488111, "hfu": 0.1212527359027961, "num_gpus_used": 40,
        "memory_ok": True, "peak_memory_fraction": 0.5340792655944824, "extrapolated": [],
        "breakdown.compute_s": 28.620386407397795, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 1.3450030944435367, "breakdown.p2p_s": 0.07976530376237623,
        "breakdown.dp_comm_s": 0.653432144566997, "breakdown.optimizer_s": 0.0018719764590485533,
        "stage.fwd_s": 1.0227879870494783, "stage.fwd_s@i": 2.583327011001316,
        "stage.bwd_s": 2.332948674053809, "stage.bwd_s@i": 5.8995116758045665,
        "stage.p2p_next_s": 0.039882651881188114, "stage.p2p_next_s@i": 0.06646841980198018,
        "stage.tail_s": 0.6765356431065637, "stage.tail_s@i": 1.3664118005347257,
        "stage.in_flight": 6.0, "stage.in_flight@i": 10.0, "replica.fwd_s": 1.0955469998648957,
        "replica.fwd_s@i": 6.32405853305389, "replica.bwd_s": 2.54340643047691,
        "replica.bwd_s@i": 14.65148617449435, "replica.compute_s": 1.8183369232179967,
        "replica.compute_s@i": 9.74970510739586, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.7442969570136161,
        "replica.dp_comm_s@i": 3.073571688120131, "replica.optimizer_s": 0.02352889536496342,
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
        "iteration_time_s": 66.68855956981477, "tokens_per_s": 31446.95302354729,
        "mfu": 0.09740612037344272, "hfu": 0.12077089101815337, "num_gpus_used": 40,
        "memory_ok": False, "peak_memory_fraction": 4.365551328659057, "extrapolated": [],
        "breakdown.compute_s": 28.620386407397795, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 1.5624514262264582, "breakdown.p2p_s": 0.07976530376237623,
        "breakdown.dp_comm_s": 0.7009967302548048, "breakdown.optimizer_s": 0.0018719764590485533,
        "stage.fwd_s": 1.0227879870494783, "stage.fwd_s@i": 2.583327011001316,
        "stage.bwd_s": 2.5653816788424386, "stage.bwd_s@i": 6.376158722050171,
        "stage.p2p_next_s": 0.039882651881188114, "stage.p2p_next_s@i": 0.06646841980198018,
        "stage.tail_s": 0.24259450213532383, "stage.tail_s@i": 0.49694428049700784,
        "stage.in_flight": 96.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 1.0955469998648957,
        "replica.fwd_s@i": 6.32405853305389, "replica.bwd_s": 3.101713676523347,
        "replica.bwd_s@i": 17.13430296413067, "replica.compute_s": 1.8183369232179967,
        "replica.compute_s@i": 9.74970510739586, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 0.5583072460464363,
        "replica.zero_comm_s@i": 2.4828167896363187, "replica.dp_comm_s": 0.24992602481216458,
        "replica.dp_comm_s@i": 1.0309024537983988, "replica.optimizer_s": 0.02352889536496342,
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
        "iteration_time_s": 67.96868150423238, "tokens_per_s": 30854.68120886546,
        "mfu": 0.09557157380762768, "hfu": 0.11849629243524766, "num_gpus_used": 40,
        "memory_ok": True, "peak_memory_fraction": 0.4868183135986328, "extrapolated": [],
        "breakdown.compute_s": 28.620386407397795, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 2.0932088691797235, "breakdown.p2p_s": 0.07976530376237623,
        "breakdown.dp_comm_s": 1.4385286085485713, "breakdown.optimizer_s": 0.01370458962962963,
        "stage.fwd_s": 1.3072980657524496, "stage.fwd_s@i": 3.1641282050756008,
        "stage.bwd_s": 2.841598389104165, "stage.bwd_s@i": 6.940373179241965,
        "stage.p2p_next_s": 0.039882651881188114, "stage.p2p_next_s@i": 0.06646841980198018,
        "stage.tail_s": 0.021656918905914868, "stage.tail_s@i": 0.053483875942951904,
        "stage.in_flight": 6.0, "stage.in_flight@i": 10.0, "replica.fwd_s": 1.7753314866039458,
        "replica.fwd_s@i": 9.344861359375004, "replica.bwd_s": 3.809875337280122,
        "replica.bwd_s@i": 20.26032111808144, "replica.compute_s": 1.8183369232179967,
        "replica.compute_s@i": 9.74970510739586, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 1.9462533935422623,
        "replica.zero_comm_s@i": 8.629637769908204, "replica.dp_comm_s": 0.0,
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
        "iteration_time_s": 66.43290653463929, "tokens_per_s": 31567.969992499246,
        "mfu": 0.09778096729219307, "hfu": 0.12123565233088535, "num_gpus_used": 40,
        "memory_ok": False, "peak_memory_fraction": 4.530964660644531, "extrapolated": [],
        "breakdown.compute_s": 28.620386407397795, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 1.3450030944435367, "breakdown.p2p_s": 0.07976530376237623,
        "breakdown.dp_comm_s": 0.653432144566997, "breakdown.optimizer_s": 0.01123185875429132,
        "stage.fwd_s": 1.0227879870494783, "stage.fwd_s@i": 2.583327011001316,
        "stage.bwd_s": 2.332948674053809, "stage.bwd_s@i": 5.8995116758045665,
        "stage.p2p_next_s": 0.039882651881188114, "stage.p2p_next_s@i": 0.06646841980198018,
        "stage.tail_s": 0.7102037695269585, "stage.tail_s@i": 1.4368489885096225,
        "stage.in_flight": 96.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 1.0955469998648957,
        "replica.fwd_s@i": 6.32405853305389, "replica.bwd_s": 2.54340643047691,
        "replica.bwd_s@i": 14.65148617449435, "replica.compute_s": 1.8183369232179967,
        "replica.compute_s@i": 9.74970510739586, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.7442969570136161,
        "replica.dp_comm_s@i": 3.073571688120131, "replica.optimizer_s": 0.07928591067424709,
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
        "iteration_time_s": 20.017729822597005, "tokens_per_s": 52382.363499397194,
        "mfu": 0.12268445609037414, "hfu": 0.12586040425203615, "num_gpus_used": 14,
        "memory_ok": True, "peak_memory_fraction": 0.689031720161438, "extrapolated": [],
        "breakdown.compute_s": 16.241116659858548, "breakdown.tp_comm_s": 0.0,
        "breakdown.bubble_s": 0.053480920849375044, "breakdown.p2p_s": 0.013348883960396036,
        "breakdown.dp_comm_s": 3.6875765019286844, "breakdown.optimizer_s": 0.022206856,
        "stage.fwd_s": 0.1013197177009736, "stage.fwd_s@i": 0.12113385239564545,
        "stage.bwd_s": 0.20592865095869106, "stage.bwd_s@i": 0.239595437113394,
        "stage.p2p_next_s": 0.006674441980198018, "stage.p2p_next_s@i": 0.006674441980198018,
        "stage.tail_s": 3.7135937124806633, "stage.tail_s@i": 3.7174040670326423,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.1291287435180859,
        "replica.fwd_s@i": 0.2700767306084032, "replica.bwd_s": 0.2606722655080805,
        "replica.bwd_s@i": 0.5339344887761774, "replica.compute_s": 0.37094411851188064,
        "replica.compute_s@i": 0.751175340070295, "replica.tp_comm_s": 0.018856890514285712,
        "replica.tp_comm_s@i": 0.05283587931428572, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 5.565351054508008,
        "replica.dp_comm_s@i": 9.260454507723821, "replica.optimizer_s": 0.02525079518587543,
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
        "iteration_time_s": 21.177456925253058, "tokens_per_s": 49513.78268415343,
        "mfu": 0.2533007829975215, "hfu": 0.33409001789554627, "num_gpus_used": 16,
        "memory_ok": False, "peak_memory_fraction": 1.2160619795322418, "extrapolated": [],
        "breakdown.compute_s": 17.1385389703218, "breakdown.tp_comm_s": 3.628161316571429,
        "breakdown.bubble_s": 0.12507390803028517, "breakdown.p2p_s": 0.0015672910891089105,
        "breakdown.dp_comm_s": 0.27950078955126056, "breakdown.optimizer_s": 0.004614649689174705,
        "stage.fwd_s": 0.07742609474325007, "stage.fwd_s@i": 0.12136828098770817,
        "stage.bwd_s": 0.20988765927839018, "stage.bwd_s@i": 0.3281853190252854,
        "stage.p2p_next_s": 0.0007836455445544553, "stage.p2p_next_s@i": 0.0007836455445544553,
        "stage.tail_s": 0.37091244064723294, "stage.tail_s@i": 0.6550278798876682,
        "stage.in_flight": 256.0, "stage.in_flight@i": 384.0, "replica.fwd_s": 0.12051519006267408,
        "replica.fwd_s@i": 0.37197725203816256, "replica.bwd_s": 0.32941577226752655,
        "replica.bwd_s@i": 1.0127485279800064, "replica.compute_s": 0.36863772652067683,
        "replica.compute_s@i": 1.154812375065788, "replica.tp_comm_s": 0.08129323580952381,
        "replica.tp_comm_s@i": 0.22991340495238097, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.46477194258395843,
        "replica.dp_comm_s@i": 1.5590011578285738, "replica.optimizer_s": 0.020497443302131713,
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
        "iteration_time_s": 21.22276392712094, "tokens_per_s": 49408.079155043815,
        "mfu": 0.2527600287824807, "hfu": 0.3333767923648466, "num_gpus_used": 16,
        "memory_ok": True, "peak_memory_fraction": 0.17940475791692734, "extrapolated": [],
        "breakdown.compute_s": 17.1385389703218, "breakdown.tp_comm_s": 3.628161316571429,
        "breakdown.bubble_s": 0.12507390803028517, "breakdown.p2p_s": 0.0015672910891089105,
        "breakdown.dp_comm_s": 0.32480779141914184, "breakdown.optimizer_s": 0.004614649689174705,
        "stage.fwd_s": 0.07742609474325007, "stage.fwd_s@i": 0.12136828098770817,
        "stage.bwd_s": 0.20988765927839018, "stage.bwd_s@i": 0.3281853190252854,
        "stage.p2p_next_s": 0.0007836455445544553, "stage.p2p_next_s@i": 0.0007836455445544553,
        "stage.tail_s": 0.4904405536363693, "stage.tail_s@i": 0.8198629947446858,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.12051519006267408,
        "replica.fwd_s@i": 0.37197725203816256, "replica.bwd_s": 0.32941577226752655,
        "replica.bwd_s@i": 1.0127485279800064, "replica.compute_s": 0.36863772652067683,
        "replica.compute_s@i": 1.154812375065788, "replica.tp_comm_s": 0.08129323580952381,
        "replica.tp_comm_s@i": 0.22991340495238097, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.794187714851485,
        "replica.dp_comm_s@i": 2.57174968580858, "replica.optimizer_s": 0.020497443302131713,
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
        "iteration_time_s": 19.022208299018775, "tokens_per_s": 55123.77866528193,
        "mfu": 0.2929541200835012, "hfu": 0.3440291874588494, "num_gpus_used": 26,
        "memory_ok": True, "peak_memory_fraction": 0.19853553771972657, "extrapolated": [],
        "breakdown.compute_s": 17.647975945061567, "breakdown.tp_comm_s": 1.1045868105142858,
        "breakdown.bubble_s": 0.1277682651784021, "breakdown.p2p_s": 0.005013331485148514,
        "breakdown.dp_comm_s": 0.12995046526882653, "breakdown.optimizer_s": 0.0069134815105443845,
        "stage.fwd_s": 0.08222939691533586, "stage.fwd_s@i": 0.20740839236563968,
        "stage.bwd_s": 0.19204326479100087, "stage.bwd_s@i": 0.5029894029737987,
        "stage.p2p_next_s": 0.002506665742574257, "stage.p2p_next_s@i": 0.0037674986138613855,
        "stage.tail_s": 0.15199639869846762, "stage.tail_s@i": 0.43793329184757357,
        "stage.in_flight": 10.0, "stage.in_flight@i": 20.0, "replica.fwd_s": 0.08222939691533586,
        "replica.fwd_s@i": 0.4577663832662473, "replica.bwd_s": 0.19204326479100087,
        "replica.bwd_s@i": 1.1248816793393945, "replica.compute_s": 0.24712542726824152,
        "replica.compute_s@i": 1.440619485081832, "replica.tp_comm_s": 0.02714723443809524,
        "replica.tp_comm_s@i": 0.14202857752380954, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.13588897286227342,
        "replica.dp_comm_s@i": 0.9275029525940445, "replica.optimizer_s": 0.016107425836194213,
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
        "iteration_time_s": 55.44860567539681, "tokens_per_s": 18910.773088479396,
        "mfu": 0.10050089134625004, "hfu": 0.11802271283600815, "num_gpus_used": 26,
        "memory_ok": False, "peak_memory_fraction": 3.5031448364257813, "extrapolated": [],
        "breakdown.compute_s": 17.647975945061567, "breakdown.tp_comm_s": 1.1045868105142858,
        "breakdown.bubble_s": 0.19111789801174348, "breakdown.p2p_s": 0.005013331485148514,
        "breakdown.dp_comm_s": 36.492998208813525, "breakdown.optimizer_s": 0.0069134815105443845,
        "stage.fwd_s": 0.20393252635898212, "stage.fwd_s@i": 0.5507272882389409,
        "stage.bwd_s": 0.4187913166870527, "stage.bwd_s@i": 1.1386610334532583,
        "stage.p2p_next_s": 0.002506665742574257, "stage.p2p_next_s@i": 0.0037674986138613855,
        "stage.tail_s": 0.016107425836194213, "stage.tail_s@i": 0.038172992408043165,
        "stage.in_flight": 512.0, "stage.in_flight@i": 1280.0, "replica.fwd_s": 0.20393252635898212,
        "replica.fwd_s@i": 1.2443168119988588, "replica.bwd_s": 0.4187913166870527,
        "replica.bwd_s@i": 2.578400466985669, "replica.compute_s": 0.24712542726824152,
        "replica.compute_s@i": 1.440619485081832, "replica.tp_comm_s": 0.02714723443809524,
        "replica.tp_comm_s@i": 0.14202857752380954, "replica.zero_comm_s": 0.3484511813396981,
        "replica.zero_comm_s@i": 2.2400692163788865, "replica.dp_comm_s": 0.0,
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
        "iteration_time_s": 290.16536004072174, "tokens_per_s": 3613.718742488225,
        "mfu": 0.30728047171458683, "hfu": 0.36085326595102873, "num_gpus_used": 26,
        "memory_ok": True, "peak_memory_fraction": 0.27353553771972655, "extrapolated": [],
        "breakdown.compute_s": 271.11939277638476, "breakdown.tp_comm_s": 2.086293621028571,
        "breakdown.bubble_s": 1.7455150517939209, "breakdown.p2p_s": 0.009996662970297027,
        "breakdown.dp_comm_s": 15.19724844703366, "breakdown.optimizer_s": 0.0069134815105443845,
        "stage.fwd_s": 1.0942321985237455, "stage.fwd_s@i": 2.7845568944667463,
        "stage.bwd_s": 2.9043842536638396, "stage.bwd_s@i": 7.652879133025099,
        "stage.p2p_next_s": 0.004998331485148513, "stage.p2p_next_s@i": 0.0075049972277227706,
        "stage.tail_s": 0.027909245900032808, "stage.tail_s@i": 0.06585139663029758,
        "stage.in_flight": 10.0, "stage.in_flight@i": 20.0, "replica.fwd_s": 1.0942321985237455,
        "replica.fwd_s@i": 6.165206286352747, "replica.bwd_s": 2.9043842536638396,
        "replica.bwd_s@i": 17.14986889174762, "replica.compute_s": 3.7871368961251153,
        "replica.compute_s@i": 22.055839107969437, "replica.tp_comm_s": 0.05127446887619048,
        "replica.tp_comm_s@i": 0.26825715504761904, "replica.zero_comm_s": 0.1602050871862793,
        "replica.zero_comm_s@i": 0.9909789150833088, "replica.dp_comm_s": 0.011801820063838597,
        "replica.dp_comm_s@i": 0.05943157253908611, "replica.optimizer_s": 0.016107425836194213,
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
        "iteration_time_s": 0.17018930957252495, "tokens_per_s": 96269.26650770668,
        "mfu": 0.025420215483587055, "hfu": 0.027772918001229243, "num_gpus_used": 10,
        "memory_ok": True, "peak_memory_fraction": 0.0937653382619222, "extrapolated": [
            "stage 1 A100-80G: tp 4 scaled from measured tp 2 (micro-batch 2)",
            "stage 2 A100-80G: micro-batch 4 scaled from measured 2",
        ], "breakdown.compute_s": 0.14400000000000002, "breakdown.tp_comm_s": 0.0,
        "breakdown.bubble_s": 0.016644902604248862, "breakdown.p2p_s": 0.0017811104950495047,
        "breakdown.dp_comm_s": 0.007395906606559902, "breakdown.optimizer_s": 0.0003673898666666667,
        "stage.fwd_s": 0.01604360208209591, "stage.fwd_s@i": 0.03850720416419182,
        "stage.bwd_s": 0.03660130052215296, "stage.bwd_s@i": 0.09044260104430593,
        "stage.p2p_next_s": 0.0008905552475247523, "stage.p2p_next_s@i": 0.0013358328712871285,
        "stage.tail_s": 0.010214819734149219, "stage.tail_s@i": 0.020278904761151902,
        "stage.in_flight": 6.0, "stage.in_flight@i": 10.0, "replica.fwd_s": 0.01714360208209591,
        "replica.fwd_s@i": 0.08949801041047956, "replica.bwd_s": 0.03905844337929582,
        "replica.bwd_s@i": 0.21059507403933625, "replica.compute_s": 0.05462407974710602,
        "replica.compute_s@i": 0.29220325587838725, "replica.tp_comm_s": 0.0015779657142857143,
        "replica.tp_comm_s@i": 0.007889828571428571, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.010117331351868718,
        "replica.dp_comm_s@i": 0.04747533989974906, "replica.optimizer_s": 0.0028139490894940793,
        "replica.optimizer_s@i": 0.011560874217489093, "replica.params_local": 106884608.0,
        "replica.params_local@i": 350051328.0, "memory.weights": 213769216.0,
        "memory.weights@i": 700102656.0, "memory.grads": 213769216.0, "memory.grads@i": 700102656.0,
        "memory.optimizer": 815195136.0, "memory.optimizer@i": 3317520384.0,
        "memory.activations": 774125568.0, "memory.activations@i": 2038839296.0,
        "memory.extras": 276824064.0, "memory.extras@i": 1900019712.0,
        "memory.total": 10883617792.0, "memory.total@i": 45163806720.0,
    },
    "bench-48-stages": {
        "iteration_time_s": 26.132686381485854, "tokens_per_s": 120375.22488421414,
        "mfu": 0.3137803533022343, "hfu": 0.31659747207786654, "num_gpus_used": 768,
        "memory_ok": True, "peak_memory_fraction": 0.2084908127784729, "extrapolated": [],
        "breakdown.compute_s": 21.147341055138675, "breakdown.tp_comm_s": 3.7588254720000003,
        "breakdown.bubble_s": 1.1649215820976508, "breakdown.p2p_s": 0.02507519920792077,
        "breakdown.dp_comm_s": 0.03194539190379582, "breakdown.optimizer_s": 0.004577681137812653,
        "stage.fwd_s": 0.4252070114718126, "stage.fwd_s@i": 8.753525706671862,
        "stage.bwd_s": 0.772144474958053, "stage.bwd_s@i": 15.698359789496646,
        "stage.p2p_next_s": 0.012537599603960385, "stage.p2p_next_s@i": 0.2635274043564356,
        "stage.tail_s": 1.197647492530918, "stage.tail_s@i": 26.326861079211707,
        "stage.in_flight": 1176.0, "stage.in_flight@i": 19600.0,
        "replica.fwd_s": 0.4252070114718126, "replica.fwd_s@i": 25.410163097071973,
        "replica.bwd_s": 0.772144474958053, "replica.bwd_s@i": 45.55079041857384,
        "replica.compute_s": 1.0256278085631971, "replica.compute_s@i": 59.56141723617913,
        "replica.tp_comm_s": 0.17172367786666676, "replica.tp_comm_s@i": 11.399536279466668,
        "replica.zero_comm_s": 0.0, "replica.zero_comm_s@i": 0.0,
        "replica.dp_comm_s": 1.0342691994973936, "replica.dp_comm_s@i": 66.09251092320832,
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
