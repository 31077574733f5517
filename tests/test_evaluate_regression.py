"""Refactoring guard: CostModel.evaluate() must keep returning the same numbers.

EXPECTED below was produced by commit 81cae90's evaluate() (before evaluate() was optimised) with
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


# Produced by commit 81cae90's CostModel.evaluate() (see the module docstring).
EXPECTED: dict[str, dict[str, Any]] = {
    "plan1-1f1b-zero1": {
        "iteration_time_s": 5.119826868745602, "tokens_per_s": 102403.46274217953,
        "mfu": 0.372249505658507, "hfu": 0.3805093374545334, "num_gpus_used": 8, "memory_ok": True,
        "peak_memory_fraction": 0.10638811588287353, "extrapolated": [],
        "breakdown.compute_s": 4.197750347549604, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.0557254527356601, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.00024980129523809527,
        "breakdown.optimizer_s": 0.003052929946051986, "stage.fwd_s": 0.04740649645762361,
        "stage.fwd_s@i": 0.07626403652891772, "stage.bwd_s": 0.08739253117278391,
        "stage.bwd_s@i": 0.13760856599623808, "stage.p2p_next_s": 4.494575238095238e-05,
        "stage.p2p_next_s@i": 4.494575238095238e-05, "stage.tail_s": 0.006337679666988953,
        "stage.tail_s@i": 0.009372628092687825, "stage.in_flight": 3.0, "stage.in_flight@i": 4.0,
        "replica.fwd_s": 0.04740649645762361, "replica.fwd_s@i": 0.13397911667150592,
        "replica.bwd_s": 0.08739253117278391, "replica.bwd_s@i": 0.23804063564314643,
        "replica.compute_s": 0.11682072667802657, "replica.compute_s@i": 0.31359027421941427,
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
        "iteration_time_s": 5.122879798691654, "tokens_per_s": 102342.4364034267,
        "mfu": 0.37202766721843306, "hfu": 0.38028257664875303, "num_gpus_used": 8,
        "memory_ok": False, "peak_memory_fraction": 1.6533492088317872, "extrapolated": [],
        "breakdown.compute_s": 4.197750347549604, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.0557254527356601, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.00024980129523809527,
        "breakdown.optimizer_s": 0.006105859892103972, "stage.fwd_s": 0.04740649645762361,
        "stage.fwd_s@i": 0.07626403652891772, "stage.bwd_s": 0.08739253117278391,
        "stage.bwd_s@i": 0.13760856599623808, "stage.p2p_next_s": 4.494575238095238e-05,
        "stage.p2p_next_s@i": 4.494575238095238e-05, "stage.tail_s": 0.009390609613040939,
        "stage.tail_s@i": 0.012425558038739811, "stage.in_flight": 128.0,
        "stage.in_flight@i": 192.0, "replica.fwd_s": 0.04740649645762361,
        "replica.fwd_s@i": 0.13397911667150592, "replica.bwd_s": 0.08739253117278391,
        "replica.bwd_s@i": 0.23804063564314643, "replica.compute_s": 0.11682072667802657,
        "replica.compute_s@i": 0.31359027421941427, "replica.tp_comm_s": 0.017978300952380954,
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
        "iteration_time_s": 5.1204545617110115, "tokens_per_s": 102390.9095728423,
        "mfu": 0.3722038733043356, "hfu": 0.3804626925655858, "num_gpus_used": 8, "memory_ok": True,
        "peak_memory_fraction": 0.10224710702896118, "extrapolated": [],
        "breakdown.compute_s": 4.197750347549604, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.05647804634868847, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.00012490064761904764,
        "breakdown.optimizer_s": 0.003052929946051986, "stage.fwd_s": 0.04740649645762361,
        "stage.fwd_s@i": 0.07626403652891772, "stage.bwd_s": 0.08814512478581248,
        "stage.bwd_s@i": 0.13836115960926665, "stage.p2p_next_s": 4.494575238095238e-05,
        "stage.p2p_next_s@i": 4.494575238095238e-05, "stage.tail_s": 0.006212779019369906,
        "stage.tail_s@i": 0.009247727445068778, "stage.in_flight": 3.0, "stage.in_flight@i": 4.0,
        "replica.fwd_s": 0.04740649645762361, "replica.fwd_s@i": 0.13397911667150592,
        "replica.bwd_s": 0.08814512478581248, "replica.bwd_s@i": 0.238793229256175,
        "replica.compute_s": 0.11682072667802657, "replica.compute_s@i": 0.31359027421941427,
        "replica.tp_comm_s": 0.017978300952380954, "replica.tp_comm_s@i": 0.058429478095238095,
        "replica.zero_comm_s": 0.0007525936130285713,
        "replica.zero_comm_s@i": 0.0007525936130285713, "replica.dp_comm_s": 0.00012490064761904764,
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
        "iteration_time_s": 5.121834848289449, "tokens_per_s": 102363.31618054761,
        "mfu": 0.3721035678423318, "hfu": 0.38036016142904977, "num_gpus_used": 8,
        "memory_ok": False, "peak_memory_fraction": 1.6533492088317872, "extrapolated": [],
        "breakdown.compute_s": 4.197750347549604, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.05798323357474522, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.0, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.04740649645762361, "stage.fwd_s@i": 0.07626403652891772,
        "stage.bwd_s": 0.08965031201186963, "stage.bwd_s@i": 0.13986634683532378,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.006087878371750858, "stage.tail_s@i": 0.00912282679744973,
        "stage.in_flight": 128.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 0.04740649645762361,
        "replica.fwd_s@i": 0.13397911667150592, "replica.bwd_s": 0.08965031201186963,
        "replica.bwd_s@i": 0.24029841648223213, "replica.compute_s": 0.11682072667802657,
        "replica.compute_s@i": 0.31359027421941427, "replica.tp_comm_s": 0.017978300952380954,
        "replica.tp_comm_s@i": 0.058429478095238095, "replica.zero_comm_s": 0.002257780839085714,
        "replica.zero_comm_s@i": 0.002257780839085714, "replica.dp_comm_s": 0.0,
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
        "iteration_time_s": 5.122974781278935, "tokens_per_s": 102340.53892201927,
        "mfu": 0.3720207696341425, "hfu": 0.380275526014196, "num_gpus_used": 8, "memory_ok": True,
        "peak_memory_fraction": 0.10638811588287353, "extrapolated": [],
        "breakdown.compute_s": 4.197750347549604, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.0557254527356601, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.0033977138285714286, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.04740649645762361, "stage.fwd_s@i": 0.07626403652891772,
        "stage.bwd_s": 0.08739253117278391, "stage.bwd_s@i": 0.13760856599623808,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.009485592200322288, "stage.tail_s@i": 0.012520540626021159,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.04740649645762361,
        "replica.fwd_s@i": 0.13397911667150592, "replica.bwd_s": 0.08739253117278391,
        "replica.bwd_s@i": 0.23804063564314643, "replica.compute_s": 0.11682072667802657,
        "replica.compute_s@i": 0.31359027421941427, "replica.tp_comm_s": 0.017978300952380954,
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
        "iteration_time_s": 70.75238915588906, "tokens_per_s": 29640.72344439614,
        "mfu": 0.09181137115633643, "hfu": 0.11383413134245168, "num_gpus_used": 40,
        "memory_ok": True, "peak_memory_fraction": 0.5340792655944824, "extrapolated": [],
        "breakdown.compute_s": 32.794600522000934, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 1.4372377796981375, "breakdown.p2p_s": 0.11548811010752688,
        "breakdown.dp_comm_s": 0.6801030419091241, "breakdown.optimizer_s": 0.0018719764590485533,
        "stage.fwd_s": 1.0840943481767766, "stage.fwd_s@i": 2.7379114440478887,
        "stage.bwd_s": 2.4943211892624655, "stage.bwd_s@i": 6.304931190886242,
        "stage.p2p_next_s": 0.05774405505376344, "stage.p2p_next_s@i": 0.08661608258064515,
        "stage.tail_s": 0.7032065404486907, "stage.tail_s@i": 1.4197535952189797,
        "stage.in_flight": 6.0, "stage.in_flight@i": 10.0, "replica.fwd_s": 1.1742001694463928,
        "replica.fwd_s@i": 6.7555935820860356, "replica.bwd_s": 2.7524142763855997,
        "replica.bwd_s@i": 15.79097046342156, "replica.compute_s": 2.1059979387081826,
        "replica.compute_s@i": 11.320724445355216, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.789844631098533,
        "replica.dp_comm_s@i": 3.2746391612025882, "replica.optimizer_s": 0.02352889536496342,
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
        "iteration_time_s": 70.92223446828112, "tokens_per_s": 29569.73952841149,
        "mfu": 0.09159150031989, "hfu": 0.11356152016848502, "num_gpus_used": 40,
        "memory_ok": False, "peak_memory_fraction": 4.365551328659057, "extrapolated": [],
        "breakdown.compute_s": 32.794600522000934, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 1.6479095345720394, "breakdown.p2p_s": 0.11548811010752688,
        "breakdown.dp_comm_s": 0.6392765994272808, "breakdown.optimizer_s": 0.0018719764590485533,
        "stage.fwd_s": 1.0840943481767766, "stage.fwd_s@i": 2.7379114440478887,
        "stage.bwd_s": 2.718376432324939, "stage.bwd_s@i": 6.763563852906504,
        "stage.p2p_next_s": 0.05774405505376344, "stage.p2p_next_s@i": 0.08661608258064515,
        "stage.tail_s": 0.2321122854563712, "stage.tail_s@i": 0.4759798471391026,
        "stage.in_flight": 96.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 1.1742001694463928,
        "replica.fwd_s@i": 6.7555935820860356, "replica.bwd_s": 3.25162079198944,
        "replica.bwd_s@i": 18.02717349610351, "replica.compute_s": 2.1059979387081826,
        "replica.compute_s@i": 11.320724445355216, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 0.49920651560384094,
        "replica.zero_comm_s@i": 2.2362030326819515, "replica.dp_comm_s": 0.24171500299463358,
        "replica.dp_comm_s@i": 1.0003295613896965, "replica.optimizer_s": 0.02352889536496342,
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
        "iteration_time_s": 72.12639785250046, "tokens_per_s": 29076.06732681572,
        "mfu": 0.09006236349516637, "hfu": 0.11166558985011775, "num_gpus_used": 40,
        "memory_ok": True, "peak_memory_fraction": 0.4868183135986328, "extrapolated": [],
        "breakdown.compute_s": 32.794600522000934, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 2.1947020389452305, "breakdown.p2p_s": 0.11548811010752688,
        "breakdown.dp_comm_s": 1.2848148661028571, "breakdown.optimizer_s": 0.01370458962962963,
        "stage.fwd_s": 1.0840943481767766, "stage.fwd_s@i": 2.7379114440478887,
        "stage.bwd_s": 3.291935913075271, "stage.bwd_s@i": 7.9317271661977955,
        "stage.p2p_next_s": 0.05774405505376344, "stage.p2p_next_s@i": 0.08661608258064515,
        "stage.tail_s": 0.021656918905914868, "stage.tail_s@i": 0.053483875942951904,
        "stage.in_flight": 6.0, "stage.in_flight@i": 10.0, "replica.fwd_s": 1.1742001694463928,
        "replica.fwd_s@i": 6.7555935820860356, "replica.bwd_s": 4.76337640177203,
        "replica.bwd_s@i": 24.67839887039243, "replica.compute_s": 2.1059979387081826,
        "replica.compute_s@i": 11.320724445355216, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 2.0109621253864307,
        "replica.zero_comm_s@i": 8.887428406970871, "replica.dp_comm_s": 0.0,
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
        "iteration_time_s": 70.7617490381843, "tokens_per_s": 29636.802771343868,
        "mfu": 0.09179922697336938, "hfu": 0.11381907413873599, "num_gpus_used": 40,
        "memory_ok": False, "peak_memory_fraction": 4.530964660644531, "extrapolated": [],
        "breakdown.compute_s": 32.794600522000934, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 1.4372377796981375, "breakdown.p2p_s": 0.11548811010752688,
        "breakdown.dp_comm_s": 0.6801030419091241, "breakdown.optimizer_s": 0.01123185875429132,
        "stage.fwd_s": 1.0840943481767766, "stage.fwd_s@i": 2.7379114440478887,
        "stage.bwd_s": 2.4943211892624655, "stage.bwd_s@i": 6.304931190886242,
        "stage.p2p_next_s": 0.05774405505376344, "stage.p2p_next_s@i": 0.08661608258064515,
        "stage.tail_s": 0.7368746668690855, "stage.tail_s@i": 1.4901907831938765,
        "stage.in_flight": 96.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 1.1742001694463928,
        "replica.fwd_s@i": 6.7555935820860356, "replica.bwd_s": 2.7524142763855997,
        "replica.bwd_s@i": 15.79097046342156, "replica.compute_s": 2.1059979387081826,
        "replica.compute_s@i": 11.320724445355216, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.789844631098533,
        "replica.dp_comm_s@i": 3.2746391612025882, "replica.optimizer_s": 0.07928591067424709,
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
        "iteration_time_s": 21.15543750637198, "tokens_per_s": 49565.31859405747,
        "mfu": 0.11608667013904454, "hfu": 0.11909182057432036, "num_gpus_used": 14,
        "memory_ok": True, "peak_memory_fraction": 0.689031720161438, "extrapolated": [],
        "breakdown.compute_s": 17.011964535228458, "breakdown.tp_comm_s": 0.0,
        "breakdown.bubble_s": 0.06729052290051815, "breakdown.p2p_s": 0.043356041290322576,
        "breakdown.dp_comm_s": 4.0106195509526845, "breakdown.optimizer_s": 0.022206856,
        "stage.fwd_s": 0.1091497971923791, "stage.fwd_s@i": 0.13372008724654855,
        "stage.bwd_s": 0.22395267157108267, "stage.bwd_s@i": 0.2666729044174304,
        "stage.p2p_next_s": 0.021678020645161288, "stage.p2p_next_s@i": 0.021678020645161288,
        "stage.tail_s": 4.036851211720783, "stage.tail_s@i": 4.0408760164888795,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.1411500581995423,
        "replica.fwd_s@i": 0.2994404355002603, "replica.bwd_s": 0.2882170738360005,
        "replica.bwd_s@i": 0.5976102110997785, "replica.compute_s": 0.41051024152125704,
        "replica.compute_s@i": 0.8442147672857531, "replica.tp_comm_s": 0.018856890514285712,
        "replica.tp_comm_s@i": 0.05283587931428572, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 6.045094577504971,
        "replica.dp_comm_s@i": 10.063884430393138, "replica.optimizer_s": 0.02525079518587543,
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
        "iteration_time_s": 26.203720432847582, "tokens_per_s": 40016.30236771879,
        "mfu": 0.204713923536542, "hfu": 0.2700065809842365, "num_gpus_used": 16,
        "memory_ok": False, "peak_memory_fraction": 1.2160619795322418, "extrapolated": [],
        "breakdown.compute_s": 22.112679697988685, "breakdown.tp_comm_s": 3.628161316571429,
        "breakdown.bubble_s": 0.15150172384221358, "breakdown.p2p_s": 0.0033925032258064515,
        "breakdown.dp_comm_s": 0.30337054153027454, "breakdown.optimizer_s": 0.004614649689174705,
        "stage.fwd_s": 0.09429940101241396, "stage.fwd_s@i": 0.1482911263201315,
        "stage.bwd_s": 0.2583026432560494, "stage.bwd_s@i": 0.40541123837458276,
        "stage.p2p_next_s": 0.0016962516129032258, "stage.p2p_next_s@i": 0.0016962516129032258,
        "stage.tail_s": 0.3889205036768109, "stage.tail_s@i": 0.6969056948962601,
        "stage.in_flight": 256.0, "stage.in_flight@i": 384.0, "replica.fwd_s": 0.14551941285281572,
        "replica.fwd_s@i": 0.44838223188283177, "replica.bwd_s": 0.40096340764834154,
        "replica.bwd_s@i": 1.230810521783967, "replica.compute_s": 0.4651895846916334,
        "replica.compute_s@i": 1.449279348714418, "replica.tp_comm_s": 0.08129323580952381,
        "replica.tp_comm_s@i": 0.22991340495238097, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.46153636869574455,
        "replica.dp_comm_s@i": 1.5621468789328787, "replica.optimizer_s": 0.020497443302131713,
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
        "iteration_time_s": 26.253096417482183, "tokens_per_s": 39941.04098523568,
        "mfu": 0.20432890413226715, "hfu": 0.2694987612367327, "num_gpus_used": 16,
        "memory_ok": True, "peak_memory_fraction": 0.17940475791692734, "extrapolated": [],
        "breakdown.compute_s": 22.112679697988685, "breakdown.tp_comm_s": 3.628161316571429,
        "breakdown.bubble_s": 0.15150172384221358, "breakdown.p2p_s": 0.0033925032258064515,
        "breakdown.dp_comm_s": 0.35274652616487456, "breakdown.optimizer_s": 0.004614649689174705,
        "stage.fwd_s": 0.09429940101241396, "stage.fwd_s@i": 0.1482911263201315,
        "stage.bwd_s": 0.2583026432560494, "stage.bwd_s@i": 0.40541123837458276,
        "stage.p2p_next_s": 0.0016962516129032258, "stage.p2p_next_s@i": 0.0016962516129032258,
        "stage.tail_s": 0.531581268069103, "stage.tail_s@i": 0.8889424439231522,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.14551941285281572,
        "replica.fwd_s@i": 0.44838223188283177, "replica.bwd_s": 0.40096340764834154,
        "replica.bwd_s@i": 1.230810521783967, "replica.compute_s": 0.4651895846916334,
        "replica.compute_s@i": 1.449279348714418, "replica.tp_comm_s": 0.08129323580952381,
        "replica.tp_comm_s@i": 0.22991340495238097, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.862499776344086,
        "replica.dp_comm_s@i": 2.792957400716846, "replica.optimizer_s": 0.020497443302131713,
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
        "iteration_time_s": 20.541870803058508, "tokens_per_s": 51045.78886962312,
        "mfu": 0.2712817322098239, "hfu": 0.31857832850404433, "num_gpus_used": 26,
        "memory_ok": True, "peak_memory_fraction": 0.19853553771972657, "extrapolated": [],
        "breakdown.compute_s": 19.133503125711684, "breakdown.tp_comm_s": 1.1045868105142858,
        "breakdown.bubble_s": 0.14941385150397282, "breakdown.p2p_s": 0.005442005161290323,
        "breakdown.dp_comm_s": 0.14201152865673083, "breakdown.optimizer_s": 0.0069134815105443845,
        "stage.fwd_s": 0.09223002015517201, "stage.fwd_s@i": 0.23066063642652554,
        "stage.bwd_s": 0.21529390897556902, "stage.bwd_s@i": 0.5583434699472488,
        "stage.p2p_next_s": 0.0027210025806451614, "stage.p2p_next_s@i": 0.004089003870967742,
        "stage.tail_s": 0.16439814131558517, "stage.tail_s@i": 0.47479784046971296,
        "stage.in_flight": 10.0, "stage.in_flight@i": 20.0, "replica.fwd_s": 0.09223002015517201,
        "replica.fwd_s@i": 0.5075218689692327, "replica.bwd_s": 0.21529390897556902,
        "replica.bwd_s@i": 1.2444425918906086, "replica.compute_s": 0.28037669469264576,
        "replica.compute_s@i": 1.6099358833360318, "replica.tp_comm_s": 0.02714723443809524,
        "replica.tp_comm_s@i": 0.14202857752380954, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.14829071547939096,
        "replica.dp_comm_s@i": 1.0132931132262275, "replica.optimizer_s": 0.016107425836194213,
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
        "iteration_time_s": 60.18845393964348, "tokens_per_s": 17421.547346132265,
        "mfu": 0.092586433601905, "hfu": 0.10872840946117139, "num_gpus_used": 26,
        "memory_ok": False, "peak_memory_fraction": 3.5031448364257813, "extrapolated": [],
        "breakdown.compute_s": 19.133503125711684, "breakdown.tp_comm_s": 1.1045868105142858,
        "breakdown.bubble_s": 1.3146332821912898, "breakdown.p2p_s": 0.005442005161290323,
        "breakdown.dp_comm_s": 38.62337523455439, "breakdown.optimizer_s": 0.0069134815105443845,
        "stage.fwd_s": 0.09223002015517201, "stage.fwd_s@i": 0.23066063642652554,
        "stage.bwd_s": 0.5776081739389638, "stage.bwd_s@i": 1.58171027544733,
        "stage.p2p_next_s": 0.0027210025806451614, "stage.p2p_next_s@i": 0.004089003870967742,
        "stage.tail_s": 0.016107425836194213, "stage.tail_s@i": 0.038172992408043165,
        "stage.in_flight": 512.0, "stage.in_flight@i": 1280.0, "replica.fwd_s": 0.09223002015517201,
        "replica.fwd_s@i": 0.5075218689692327, "replica.bwd_s": 0.5776081739389638,
        "replica.bwd_s@i": 3.589914478464063, "replica.compute_s": 0.28037669469264576,
        "replica.compute_s@i": 1.6099358833360318, "replica.tp_comm_s": 0.02714723443809524,
        "replica.tp_comm_s@i": 0.14202857752380954, "replica.zero_comm_s": 0.3623142649633947,
        "replica.zero_comm_s@i": 2.345471886573454, "replica.dp_comm_s": 0.0,
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
        "iteration_time_s": 43.02337062015311, "tokens_per_s": 24372.24199046886,
        "mfu": 0.12952574877231426, "hfu": 0.15210790717822006, "num_gpus_used": 26,
        "memory_ok": True, "peak_memory_fraction": 0.27353553771972655, "extrapolated": [],
        "breakdown.compute_s": 19.133503125711684, "breakdown.tp_comm_s": 2.086293621028571,
        "breakdown.bubble_s": 0.20627547780724736, "breakdown.p2p_s": 0.010854010322580643,
        "breakdown.dp_comm_s": 21.579530903772483, "breakdown.optimizer_s": 0.0069134815105443845,
        "stage.fwd_s": 0.10305651409253626, "stage.fwd_s@i": 0.25594749272579453,
        "stage.bwd_s": 0.4365193088565913, "stage.bwd_s@i": 1.172556307942066,
        "stage.p2p_next_s": 0.005427005161290322, "stage.p2p_next_s@i": 0.008148007741935484,
        "stage.tail_s": 0.15917780342180907, "stage.tail_s@i": 0.4593163899664131,
        "stage.in_flight": 10.0, "stage.in_flight@i": 20.0, "replica.fwd_s": 0.10305651409253626,
        "replica.fwd_s@i": 0.5617294499923112, "replica.bwd_s": 0.4365193088565913,
        "replica.bwd_s@i": 2.6446303061130165, "replica.compute_s": 0.2805001170761671,
        "replica.compute_s@i": 1.6100593057195531, "replica.tp_comm_s": 0.05127446887619048,
        "replica.tp_comm_s@i": 0.26825715504761904, "replica.zero_comm_s": 0.20780123699676994,
        "replica.zero_comm_s@i": 1.328043295338155, "replica.dp_comm_s": 0.14307037758561486,
        "replica.dp_comm_s@i": 0.9772894375038802, "replica.optimizer_s": 0.016107425836194213,
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
        "iteration_time_s": 0.17677511247064437, "tokens_per_s": 92682.72988778757,
        "mfu": 0.024473178729018854, "hfu": 0.02673823070104663, "num_gpus_used": 10,
        "memory_ok": True, "peak_memory_fraction": 0.0937653382619222, "extrapolated": [
            "stage 1 A100-80G: tp 4 scaled from measured tp 2 (micro-batch 2)",
            "stage 2 A100-80G: micro-batch 4 scaled from measured 2",
        ], "breakdown.compute_s": 0.14400000000000002, "breakdown.tp_comm_s": 0.0,
        "breakdown.bubble_s": 0.0172093899877482, "breakdown.p2p_s": 0.00733600688172043,
        "breakdown.dp_comm_s": 0.007862325734509066, "breakdown.optimizer_s": 0.0003673898666666667,
        "stage.fwd_s": 0.01621625421688092, "stage.fwd_s@i": 0.03885250843376184,
        "stage.bwd_s": 0.036993135770867276, "stage.bwd_s@i": 0.09122627154173456,
        "stage.p2p_next_s": 0.003668003440860215, "stage.p2p_next_s@i": 0.005502005161290322,
        "stage.tail_s": 0.010681238862098383, "stage.tail_s@i": 0.02121174301705023,
        "stage.in_flight": 6.0, "stage.in_flight@i": 10.0, "replica.fwd_s": 0.01731625421688092,
        "replica.fwd_s@i": 0.0903612710844046, "replica.bwd_s": 0.039450278628010135,
        "replica.bwd_s@i": 0.2125542502829078, "replica.compute_s": 0.05518856713060534,
        "replica.compute_s@i": 0.29502569279588386, "replica.tp_comm_s": 0.0015779657142857143,
        "replica.tp_comm_s@i": 0.007889828571428571, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.01101287766814962,
        "replica.dp_comm_s@i": 0.05152394429282183, "replica.optimizer_s": 0.0028139490894940793,
        "replica.optimizer_s@i": 0.011560874217489093, "replica.params_local": 106884608.0,
        "replica.params_local@i": 350051328.0, "memory.weights": 213769216.0,
        "memory.weights@i": 700102656.0, "memory.grads": 213769216.0, "memory.grads@i": 700102656.0,
        "memory.optimizer": 815195136.0, "memory.optimizer@i": 3317520384.0,
        "memory.activations": 774125568.0, "memory.activations@i": 2038839296.0,
        "memory.extras": 276824064.0, "memory.extras@i": 1900019712.0,
        "memory.total": 10883617792.0, "memory.total@i": 45163806720.0,
    },
    "bench-48-stages": {
        "iteration_time_s": 29.30595827989042, "tokens_per_s": 107340.9021454378,
        "mfu": 0.2798039732127053, "hfu": 0.2823160521817629, "num_gpus_used": 768,
        "memory_ok": True, "peak_memory_fraction": 0.2084908127784729, "extrapolated": [],
        "breakdown.compute_s": 24.18469195315922, "breakdown.tp_comm_s": 3.7588254720000003,
        "breakdown.bubble_s": 1.2968442750700946, "breakdown.p2p_s": 0.027191775483870965,
        "breakdown.dp_comm_s": 0.03382712303942187, "breakdown.optimizer_s": 0.004577681137812653,
        "stage.fwd_s": 0.4695977603110993, "stage.fwd_s@i": 9.557396876884527,
        "stage.bwd_s": 0.8636313030729988, "stage.bwd_s@i": 17.359586158238955,
        "stage.p2p_next_s": 0.013595887741935483, "stage.p2p_next_s@i": 0.2857112670967742,
        "stage.tail_s": 1.261509797702459, "stage.tail_s@i": 27.96945832884053,
        "stage.in_flight": 1176.0, "stage.in_flight@i": 19600.0,
        "replica.fwd_s": 0.4695977603110993, "replica.fwd_s@i": 27.732995110031375,
        "replica.bwd_s": 0.8636313030729988, "replica.bwd_s@i": 50.35149586857088,
        "replica.compute_s": 1.1615053855174318, "replica.compute_s@i": 66.68495469913559,
        "replica.tp_comm_s": 0.17172367786666676, "replica.tp_comm_s@i": 11.399536279466668,
        "replica.zero_comm_s": 0.0, "replica.zero_comm_s@i": 0.0,
        "replica.dp_comm_s": 1.0981315046689364, "replica.dp_comm_s@i": 70.8925780617517,
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
