"""Refactoring guard: CostModel.evaluate() must keep returning the same numbers.

EXPECTED below was produced by evaluate() after the interleaved 1F1B schedule and the refit
that followed it (issue 20, 2026-12-02; before that the compute model by kernel, the peaks per
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
        "iteration_time_s": 4.083051915464925, "tokens_per_s": 128405.91078800938,
        "mfu": 0.46677168461392887, "hfu": 0.47712886586857867, "num_gpus_used": 8,
        "memory_ok": True, "peak_memory_fraction": 0.10638811588287353, "extrapolated": [],
        "breakdown.compute_s": 3.1686418117371744, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.048059035267413064, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.00024980129523809527,
        "breakdown.optimizer_s": 0.003052929946051986, "stage.fwd_s": 0.039532191632330634,
        "stage.fwd_s@i": 0.06284624580199483, "stage.bwd_s": 0.07152059765776167,
        "stage.bwd_s@i": 0.11120029751077655, "stage.p2p_next_s": 4.494575238095238e-05,
        "stage.p2p_next_s@i": 4.494575238095238e-05, "stage.tail_s": 0.006337679666988953,
        "stage.tail_s@i": 0.009372628092687825, "stage.in_flight": 3.0, "stage.in_flight@i": 4.0,
        "replica.fwd_s": 0.039532191632330634, "replica.fwd_s@i": 0.10947435414132321,
        "replica.bwd_s": 0.07152059765776167, "replica.bwd_s@i": 0.1905596972168063,
        "replica.compute_s": 0.09307448833771136, "replica.compute_s@i": 0.24160457326289142,
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
        "iteration_time_s": 4.086104845410977, "tokens_per_s": 128309.97241512718,
        "mfu": 0.4664229365255073, "hfu": 0.47677237942052, "num_gpus_used": 8, "memory_ok": False,
        "peak_memory_fraction": 1.6533492088317872, "extrapolated": [],
        "breakdown.compute_s": 3.1686418117371744, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.048059035267413064, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.00024980129523809527,
        "breakdown.optimizer_s": 0.006105859892103972, "stage.fwd_s": 0.039532191632330634,
        "stage.fwd_s@i": 0.06284624580199483, "stage.bwd_s": 0.07152059765776167,
        "stage.bwd_s@i": 0.11120029751077655, "stage.p2p_next_s": 4.494575238095238e-05,
        "stage.p2p_next_s@i": 4.494575238095238e-05, "stage.tail_s": 0.009390609613040939,
        "stage.tail_s@i": 0.012425558038739811, "stage.in_flight": 128.0,
        "stage.in_flight@i": 192.0, "replica.fwd_s": 0.039532191632330634,
        "replica.fwd_s@i": 0.10947435414132321, "replica.bwd_s": 0.07152059765776167,
        "replica.bwd_s@i": 0.1905596972168063, "replica.compute_s": 0.09307448833771136,
        "replica.compute_s@i": 0.24160457326289142, "replica.tp_comm_s": 0.017978300952380954,
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
        "iteration_time_s": 4.08375265927765, "tokens_per_s": 128383.87721864089,
        "mfu": 0.4666915898096549, "hfu": 0.477046993843379, "num_gpus_used": 8, "memory_ok": True,
        "peak_memory_fraction": 0.10224710702896118, "extrapolated": [],
        "breakdown.compute_s": 3.1686418117371744, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.048884679727756675, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.00012490064761904764,
        "breakdown.optimizer_s": 0.003052929946051986, "stage.fwd_s": 0.039532191632330634,
        "stage.fwd_s@i": 0.06284624580199483, "stage.bwd_s": 0.07234624211810453,
        "stage.bwd_s@i": 0.1120259419711194, "stage.p2p_next_s": 4.494575238095238e-05,
        "stage.p2p_next_s@i": 4.494575238095238e-05, "stage.tail_s": 0.006212779019369906,
        "stage.tail_s@i": 0.009247727445068778, "stage.in_flight": 3.0, "stage.in_flight@i": 4.0,
        "replica.fwd_s": 0.039532191632330634, "replica.fwd_s@i": 0.10947435414132321,
        "replica.bwd_s": 0.07234624211810453, "replica.bwd_s@i": 0.19138534167714916,
        "replica.compute_s": 0.09307448833771136, "replica.compute_s@i": 0.24160457326289142,
        "replica.tp_comm_s": 0.017978300952380954, "replica.tp_comm_s@i": 0.058429478095238095,
        "replica.zero_comm_s": 0.0008256444603428571,
        "replica.zero_comm_s@i": 0.0008256444603428571, "replica.dp_comm_s": 0.00012490064761904764,
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
        "iteration_time_s": 4.085279047550716, "tokens_per_s": 128335.90897893035,
        "mfu": 0.4665172192069292, "hfu": 0.4768687541371977, "num_gpus_used": 8,
        "memory_ok": False, "peak_memory_fraction": 1.6533492088317872, "extrapolated": [],
        "breakdown.compute_s": 3.1686418117371744, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.05053596864844212, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.0, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.04035783609267349, "stage.fwd_s@i": 0.06367189026233769,
        "stage.bwd_s": 0.07317188657844739, "stage.bwd_s@i": 0.11285158643146226,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.006087878371750858, "stage.tail_s@i": 0.00912282679744973,
        "stage.in_flight": 128.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 0.04035783609267349,
        "replica.fwd_s@i": 0.11029999860166607, "replica.bwd_s": 0.07317188657844739,
        "replica.bwd_s@i": 0.19221098613749202, "replica.compute_s": 0.09307448833771136,
        "replica.compute_s@i": 0.24160457326289142, "replica.tp_comm_s": 0.017978300952380954,
        "replica.tp_comm_s@i": 0.058429478095238095, "replica.zero_comm_s": 0.0024769333810285713,
        "replica.zero_comm_s@i": 0.0024769333810285713, "replica.dp_comm_s": 0.0,
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
        "iteration_time_s": 4.086199827998258, "tokens_per_s": 128306.98988522973,
        "mfu": 0.46641209465307254, "hfu": 0.47676129697814135, "num_gpus_used": 8,
        "memory_ok": True, "peak_memory_fraction": 0.10638811588287353, "extrapolated": [],
        "breakdown.compute_s": 3.1686418117371744, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.048059035267413064, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.0033977138285714286, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.039532191632330634, "stage.fwd_s@i": 0.06284624580199483,
        "stage.bwd_s": 0.07152059765776167, "stage.bwd_s@i": 0.11120029751077655,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.009485592200322288, "stage.tail_s@i": 0.012520540626021159,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.039532191632330634,
        "replica.fwd_s@i": 0.10947435414132321, "replica.bwd_s": 0.07152059765776167,
        "replica.bwd_s@i": 0.1905596972168063, "replica.compute_s": 0.09307448833771136,
        "replica.compute_s@i": 0.24160457326289142, "replica.tp_comm_s": 0.017978300952380954,
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
    "plan1-interleaved-zero1": {
        "iteration_time_s": 4.059022397831219, "tokens_per_s": 129166.07710273609,
        "mfu": 0.4695349850658648, "hfu": 0.4799534811015631, "num_gpus_used": 8, "memory_ok": True,
        "peak_memory_fraction": 0.11645586490631103, "extrapolated": [],
        "breakdown.compute_s": 3.1686418117371744, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.02402951763370687, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.00024980129523809527,
        "breakdown.optimizer_s": 0.003052929946051986, "stage.fwd_s": 0.039532191632330634,
        "stage.fwd_s@i": 0.06284624580199483, "stage.bwd_s": 0.07152059765776167,
        "stage.bwd_s@i": 0.11120029751077655, "stage.p2p_next_s": 8.989150476190476e-05,
        "stage.p2p_next_s@i": 0.00013483725714285715, "stage.tail_s": 0.006337679666988953,
        "stage.tail_s@i": 0.009372628092687825, "stage.in_flight": 4.0, "stage.in_flight@i": 5.5,
        "replica.fwd_s": 0.039532191632330634, "replica.fwd_s@i": 0.10947435414132321,
        "replica.bwd_s": 0.07152059765776167, "replica.bwd_s@i": 0.1905596972168063,
        "replica.compute_s": 0.09307448833771136, "replica.compute_s@i": 0.24160457326289142,
        "replica.tp_comm_s": 0.017978300952380954, "replica.tp_comm_s@i": 0.058429478095238095,
        "replica.zero_comm_s": 0.0, "replica.zero_comm_s@i": 0.0,
        "replica.dp_comm_s": 0.00024980129523809527, "replica.dp_comm_s@i": 0.00024980129523809527,
        "replica.optimizer_s": 0.006087878371750858, "replica.optimizer_s@i": 0.015192723648847474,
        "replica.params_local": 532517376.0, "replica.params_local@i": 1062939648.0,
        "memory.weights": 1065034752.0, "memory.weights@i": 2125879296.0,
        "memory.grads": 1065034752.0, "memory.grads@i": 2125879296.0,
        "memory.optimizer": 4255948800.0, "memory.optimizer@i": 10621016064.0,
        "memory.activations": 6851395584.0, "memory.activations@i": 14559215616.0,
        "memory.extras": 445259776.0, "memory.extras@i": 1730707456.0,
        "memory.total": 17977640960.0, "memory.total@i": 41900115968.0,
    },
    "plan1-interleaved-blocking-zero0": {
        "iteration_time_s": 4.068373219740638, "tokens_per_s": 128869.19947659662,
        "mfu": 0.46845579744259347, "hfu": 0.47885034742031435, "num_gpus_used": 8,
        "memory_ok": True, "peak_memory_fraction": 0.13797855377197266, "extrapolated": [],
        "breakdown.compute_s": 3.1686418117371744, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.016019678422471297, "breakdown.p2p_s": 0.014397622679364638,
        "breakdown.dp_comm_s": 0.00024980129523809527,
        "breakdown.optimizer_s": 0.006105859892103972, "stage.fwd_s": 0.039532191632330634,
        "stage.fwd_s@i": 0.06284624580199483, "stage.bwd_s": 0.07152059765776167,
        "stage.bwd_s@i": 0.11120029751077655, "stage.p2p_next_s": 8.989150476190476e-05,
        "stage.p2p_next_s@i": 0.00013483725714285715, "stage.tail_s": 0.009390609613040939,
        "stage.tail_s@i": 0.012425558038739811, "stage.in_flight": 4.0,
        "stage.in_flight@i": 5.666666666666667, "replica.fwd_s": 0.039532191632330634,
        "replica.fwd_s@i": 0.10947435414132321, "replica.bwd_s": 0.07152059765776167,
        "replica.bwd_s@i": 0.1905596972168063, "replica.compute_s": 0.09307448833771136,
        "replica.compute_s@i": 0.24160457326289142, "replica.tp_comm_s": 0.017978300952380954,
        "replica.tp_comm_s@i": 0.058429478095238095, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.00024980129523809527,
        "replica.dp_comm_s@i": 0.00024980129523809527, "replica.optimizer_s": 0.009140808317802843,
        "replica.optimizer_s@i": 0.01824565359489946, "replica.params_local": 532517376.0,
        "replica.params_local@i": 1062939648.0, "memory.weights": 1065034752.0,
        "memory.weights@i": 2125879296.0, "memory.grads": 1065034752.0,
        "memory.grads@i": 2125879296.0, "memory.optimizer": 6390208512.0,
        "memory.optimizer@i": 12755275776.0, "memory.activations": 6851395584.0,
        "memory.activations@i": 15415640064.0, "memory.extras": 445259776.0,
        "memory.extras@i": 1730707456.0, "memory.total": 20111900672.0,
        "memory.total@i": 44890800128.0,
    },
    "llama-mixed-1f1b-zero1": {
        "iteration_time_s": 66.62908990995282, "tokens_per_s": 31475.020938065292,
        "mfu": 0.0974930600097924, "hfu": 0.12087868483343406, "num_gpus_used": 40,
        "memory_ok": True, "peak_memory_fraction": 0.5340792655944824, "extrapolated": [],
        "breakdown.compute_s": 28.82294498893055, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 1.3482365283151032, "breakdown.p2p_s": 0.07986410587360596,
        "breakdown.dp_comm_s": 0.6530845846602268, "breakdown.optimizer_s": 0.0018719764590485533,
        "stage.fwd_s": 1.0252589833552614, "stage.fwd_s@i": 2.5899316414507725,
        "stage.bwd_s": 2.340041067292496, "stage.bwd_s@i": 5.91836378011695,
        "stage.p2p_next_s": 0.03993205293680298, "stage.p2p_next_s@i": 0.06655075489467163,
        "stage.tail_s": 0.6761880831997934, "stage.tail_s@i": 1.3657166807211851,
        "stage.in_flight": 6.0, "stage.in_flight@i": 10.0, "replica.fwd_s": 1.0984906482754924,
        "replica.fwd_s@i": 6.341629398677841, "replica.bwd_s": 2.5519167800300386,
        "replica.bwd_s@i": 14.701954601615569, "replica.compute_s": 1.8297909211817214,
        "replica.compute_s@i": 9.817744400141027, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.7425947181108379,
        "replica.dp_comm_s@i": 3.06540805351301, "replica.optimizer_s": 0.02352889536496342,
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
        "iteration_time_s": 66.87977616562812, "tokens_per_s": 31357.042744975584,
        "mfu": 0.09712762562036419, "hfu": 0.12042559383000723, "num_gpus_used": 40,
        "memory_ok": False, "peak_memory_fraction": 4.365551328659057, "extrapolated": [],
        "breakdown.compute_s": 28.82294498893055, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 1.5615609274778515, "breakdown.p2p_s": 0.07986410587360596,
        "breakdown.dp_comm_s": 0.6904464411727707, "breakdown.optimizer_s": 0.0018719764590485533,
        "stage.fwd_s": 1.0252589833552614, "stage.fwd_s@i": 2.5899316414507725,
        "stage.bwd_s": 2.5680480291180965, "stage.bwd_s@i": 6.3859212195359225,
        "stage.p2p_next_s": 0.03993205293680298, "stage.p2p_next_s@i": 0.06655075489467163,
        "stage.tail_s": 0.24171174402471818, "stage.tail_s@i": 0.49517876427579655,
        "stage.in_flight": 96.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 1.0984906482754924,
        "replica.fwd_s@i": 6.341629398677841, "replica.bwd_s": 3.1034997742074273,
        "replica.bwd_s@i": 17.153102477896095, "replica.compute_s": 1.8297909211817214,
        "replica.compute_s@i": 9.817744400141027, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 0.5515829941773887,
        "replica.zero_comm_s@i": 2.451147876280527, "replica.dp_comm_s": 0.2490759837279084,
        "replica.dp_comm_s@i": 1.0275350064877238, "replica.optimizer_s": 0.02352889536496342,
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
        "iteration_time_s": 68.13426322118447, "tokens_per_s": 30779.69733366029,
        "mfu": 0.09533931320136697, "hfu": 0.1182083195618904, "num_gpus_used": 40,
        "memory_ok": True, "peak_memory_fraction": 0.4868183135986328, "extrapolated": [],
        "breakdown.compute_s": 28.82294498893055, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 2.0851357954021137, "breakdown.p2p_s": 0.07986410587360596,
        "breakdown.dp_comm_s": 1.4095260156342857, "breakdown.optimizer_s": 0.01370458962962963,
        "stage.fwd_s": 1.306235889995556, "stage.fwd_s@i": 3.1634289704991327,
        "stage.bwd_s": 2.840011115727788, "stage.bwd_s@i": 6.9413909085230765,
        "stage.p2p_next_s": 0.03993205293680298, "stage.p2p_next_s@i": 0.06655075489467163,
        "stage.tail_s": 0.021656918905914868, "stage.tail_s@i": 0.053483875942951904,
        "stage.in_flight": 6.0, "stage.in_flight@i": 10.0, "replica.fwd_s": 1.774306627845673,
        "replica.fwd_s@i": 9.342679161344229, "replica.bwd_s": 3.807943009516003,
        "replica.bwd_s@i": 20.259647443485463, "replica.compute_s": 1.8297909211817214,
        "replica.compute_s@i": 9.817744400141027, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 1.931842209056145,
        "replica.zero_comm_s@i": 8.55874260453628, "replica.dp_comm_s": 0.0,
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
        "iteration_time_s": 66.63844979224807, "tokens_per_s": 31470.60002953367,
        "mfu": 0.09747936636041821, "hfu": 0.12086170649336807, "num_gpus_used": 40,
        "memory_ok": False, "peak_memory_fraction": 4.530964660644531, "extrapolated": [],
        "breakdown.compute_s": 28.82294498893055, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 1.3482365283151032, "breakdown.p2p_s": 0.07986410587360596,
        "breakdown.dp_comm_s": 0.6530845846602268, "breakdown.optimizer_s": 0.01123185875429132,
        "stage.fwd_s": 1.0252589833552614, "stage.fwd_s@i": 2.5899316414507725,
        "stage.bwd_s": 2.340041067292496, "stage.bwd_s@i": 5.91836378011695,
        "stage.p2p_next_s": 0.03993205293680298, "stage.p2p_next_s@i": 0.06655075489467163,
        "stage.tail_s": 0.7098562096201882, "stage.tail_s@i": 1.436153868696082,
        "stage.in_flight": 96.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 1.0984906482754924,
        "replica.fwd_s@i": 6.341629398677841, "replica.bwd_s": 2.5519167800300386,
        "replica.bwd_s@i": 14.701954601615569, "replica.compute_s": 1.8297909211817214,
        "replica.compute_s@i": 9.817744400141027, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.7425947181108379,
        "replica.dp_comm_s@i": 3.06540805351301, "replica.optimizer_s": 0.07928591067424709,
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
        "iteration_time_s": 20.145128173257728, "tokens_per_s": 52051.09597624524,
        "mfu": 0.12190859617907462, "hfu": 0.1250644595562617, "num_gpus_used": 14,
        "memory_ok": True, "peak_memory_fraction": 0.689031720161438, "extrapolated": [],
        "breakdown.compute_s": 16.364669292437814, "breakdown.tp_comm_s": 0.0,
        "breakdown.bubble_s": 0.05381445437931631, "breakdown.p2p_s": 0.013365350978934324,
        "breakdown.dp_comm_s": 3.6910722194616628, "breakdown.optimizer_s": 0.022206856,
        "stage.fwd_s": 0.10207439883897088, "stage.fwd_s@i": 0.12199971137695634,
        "stage.bwd_s": 0.2074380132346856, "stage.bwd_s@i": 0.24132715507601576,
        "stage.p2p_next_s": 0.006682675489467162, "stage.p2p_next_s@i": 0.006682675489467162,
        "stage.tail_s": 3.7170925192128514, "stage.tail_s@i": 3.7209059629640406,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.13007712126666637,
        "replica.fwd_s@i": 0.27200214518160815, "replica.bwd_s": 0.2625690210052414,
        "replica.bwd_s@i": 0.5377853179225873, "replica.compute_s": 0.373789251757622,
        "replica.compute_s@i": 0.7569515837899098, "replica.tp_comm_s": 0.018856890514285712,
        "replica.tp_comm_s@i": 0.05283587931428572, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 5.570853830080202,
        "replica.dp_comm_s@i": 9.269462268426622, "replica.optimizer_s": 0.02525079518587543,
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
        "iteration_time_s": 21.319792951258506, "tokens_per_s": 49183.216853806385,
        "mfu": 0.25160968651650206, "hfu": 0.3318595532008816, "num_gpus_used": 16,
        "memory_ok": False, "peak_memory_fraction": 1.2160619795322418, "extrapolated": [],
        "breakdown.compute_s": 17.280030020921735, "breakdown.tp_comm_s": 3.628161316571429,
        "breakdown.bubble_s": 0.1258517612775397, "breakdown.p2p_s": 0.0015692208178438663,
        "breakdown.dp_comm_s": 0.2795659819807838, "breakdown.optimizer_s": 0.004614649689174705,
        "stage.fwd_s": 0.07790427536934719, "stage.fwd_s@i": 0.12213017892808983,
        "stage.bwd_s": 0.2112927307323553, "stage.bwd_s@i": 0.330412071997778,
        "stage.p2p_next_s": 0.0007846104089219331, "stage.p2p_next_s@i": 0.0007846104089219331,
        "stage.tail_s": 0.3706626184211821, "stage.tail_s@i": 0.6548432500911405,
        "stage.in_flight": 256.0, "stage.in_flight@i": 384.0, "replica.fwd_s": 0.12127824651539819,
        "replica.fwd_s@i": 0.3743930106464026, "replica.bwd_s": 0.33166330635061636,
        "replica.bwd_s@i": 1.0197997922800703, "replica.compute_s": 0.37164831705649076,
        "replica.compute_s@i": 1.1642793979740922, "replica.tp_comm_s": 0.08129323580952381,
        "replica.tp_comm_s@i": 0.22991340495238097, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.46350845771381977,
        "replica.dp_comm_s@i": 1.555136435890107, "replica.optimizer_s": 0.020497443302131713,
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
        "iteration_time_s": 21.36543722388326, "tokens_per_s": 49078.14378017287,
        "mfu": 0.25107215756232976, "hfu": 0.3311505816146369, "num_gpus_used": 16,
        "memory_ok": True, "peak_memory_fraction": 0.17940475791692734, "extrapolated": [],
        "breakdown.compute_s": 17.280030020921735, "breakdown.tp_comm_s": 3.628161316571429,
        "breakdown.bubble_s": 0.1258517612775397, "breakdown.p2p_s": 0.0015692208178438663,
        "breakdown.dp_comm_s": 0.3252102546055349, "breakdown.optimizer_s": 0.004614649689174705,
        "stage.fwd_s": 0.07790427536934719, "stage.fwd_s@i": 0.12213017892808983,
        "stage.bwd_s": 0.2112927307323553, "stage.bwd_s@i": 0.330412071997778,
        "stage.p2p_next_s": 0.0007846104089219331, "stage.p2p_next_s@i": 0.0007846104089219331,
        "stage.tail_s": 0.4910331940394431, "stage.tail_s@i": 0.8208580983341527,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.12127824651539819,
        "replica.fwd_s@i": 0.3743930106464026, "replica.bwd_s": 0.33166330635061636,
        "replica.bwd_s@i": 1.0197997922800703, "replica.compute_s": 0.37164831705649076,
        "replica.compute_s@i": 1.1642793979740922, "replica.tp_comm_s": 0.08129323580952381,
        "replica.tp_comm_s@i": 0.22991340495238097, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.7951717640644361,
        "replica.dp_comm_s@i": 2.5749362281701775, "replica.optimizer_s": 0.020497443302131713,
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
        "iteration_time_s": 19.17725615396119, "tokens_per_s": 54678.10366517995,
        "mfu": 0.29058559001064677, "hfu": 0.3412477161615565, "num_gpus_used": 26,
        "memory_ok": True, "peak_memory_fraction": 0.19853553771972657, "extrapolated": [],
        "breakdown.compute_s": 17.80268911813261, "breakdown.tp_comm_s": 1.1045868105142858,
        "breakdown.bubble_s": 0.12870680968736647, "breakdown.p2p_s": 0.005019506617100372,
        "breakdown.dp_comm_s": 0.12934042749928243, "breakdown.optimizer_s": 0.0069134815105443845,
        "stage.fwd_s": 0.08284441925114491, "stage.fwd_s@i": 0.20897748099856647,
        "stage.bwd_s": 0.19357548362877336, "stage.bwd_s@i": 0.5070341027381154,
        "stage.p2p_next_s": 0.002509753308550186, "stage.p2p_next_s@i": 0.0037721299628252786,
        "stage.tail_s": 0.15139126848287593, "stage.tail_s@i": 0.43611299364684614,
        "stage.in_flight": 10.0, "stage.in_flight@i": 20.0, "replica.fwd_s": 0.08284441925114491,
        "replica.fwd_s@i": 0.4612436044934097, "replica.bwd_s": 0.19357548362877336,
        "replica.bwd_s@i": 1.1339513409567996, "replica.compute_s": 0.24927266844182303,
        "replica.compute_s@i": 1.4531663679264, "replica.tp_comm_s": 0.02714723443809524,
        "replica.tp_comm_s@i": 0.14202857752380954, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.13528384264668172,
        "replica.dp_comm_s@i": 0.9232523184230454, "replica.optimizer_s": 0.016107425836194213,
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
        "iteration_time_s": 55.39278259752277, "tokens_per_s": 18929.830761867044,
        "mfu": 0.10060217293603396, "hfu": 0.11814165235810115, "num_gpus_used": 26,
        "memory_ok": False, "peak_memory_fraction": 3.5031448364257813, "extrapolated": [],
        "breakdown.compute_s": 17.80268911813261, "breakdown.tp_comm_s": 1.1045868105142858,
        "breakdown.bubble_s": 0.19069860249652026, "breakdown.p2p_s": 0.005019506617100372,
        "breakdown.dp_comm_s": 36.282875078251706, "breakdown.optimizer_s": 0.0069134815105443845,
        "stage.fwd_s": 0.2037936385769573, "stage.fwd_s@i": 0.5504102760316099,
        "stage.bwd_s": 0.41807801866096156, "stage.bwd_s@i": 1.1369526273607589,
        "stage.p2p_next_s": 0.002509753308550186, "stage.p2p_next_s@i": 0.0037721299628252786,
        "stage.tail_s": 0.016107425836194213, "stage.tail_s@i": 0.038172992408043165,
        "stage.in_flight": 512.0, "stage.in_flight@i": 1280.0, "replica.fwd_s": 0.2037936385769573,
        "replica.fwd_s@i": 1.2436435509409152, "replica.bwd_s": 0.41807801866096156,
        "replica.bwd_s@i": 2.574701844760354, "replica.compute_s": 0.24927266844182303,
        "replica.compute_s@i": 1.4531663679264, "replica.tp_comm_s": 0.02714723443809524,
        "replica.tp_comm_s@i": 0.14202857752380954, "replica.zero_comm_s": 0.34545175435800063,
        "replica.zero_comm_s@i": 2.2231504502510595, "replica.dp_comm_s": 0.0,
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
        "iteration_time_s": 292.3672236810026, "tokens_per_s": 3586.503257095895,
        "mfu": 0.3049662940529522, "hfu": 0.35813562313262204, "num_gpus_used": 26,
        "memory_ok": True, "peak_memory_fraction": 0.27353553771972655, "extrapolated": [],
        "breakdown.compute_s": 273.5948035455215, "breakdown.tp_comm_s": 2.086293621028571,
        "breakdown.bubble_s": 1.7597805549108123, "breakdown.p2p_s": 0.010009013234200743,
        "breakdown.dp_comm_s": 14.909423464797024, "breakdown.optimizer_s": 0.0069134815105443845,
        "stage.fwd_s": 1.1040725558966904, "stage.fwd_s@i": 2.8096623125935754,
        "stage.bwd_s": 2.9258998558575904, "stage.bwd_s@i": 7.70934748628061,
        "stage.p2p_next_s": 0.005004506617100371, "stage.p2p_next_s@i": 0.007514259925650557,
        "stage.tail_s": 0.02792151478491386, "stage.tail_s@i": 0.06588329573098832,
        "stage.in_flight": 10.0, "stage.in_flight@i": 20.0, "replica.fwd_s": 1.1040725558966904,
        "replica.fwd_s@i": 6.220841825987345, "replica.bwd_s": 2.9258998558575904,
        "replica.bwd_s@i": 17.27624274712665, "replica.compute_s": 3.8214927549024202,
        "replica.compute_s@i": 22.256589233482526, "replica.tp_comm_s": 0.05127446887619048,
        "replica.tp_comm_s@i": 0.26825715504761904, "replica.zero_comm_s": 0.1572051879756702,
        "replica.zero_comm_s@i": 0.9722381845838486, "replica.dp_comm_s": 0.011814088948719652,
        "replica.dp_comm_s@i": 0.059502732071396225, "replica.optimizer_s": 0.016107425836194213,
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
        "iteration_time_s": 0.17020991791843557, "tokens_per_s": 96257.61060440201,
        "mfu": 0.025417137704100323, "hfu": 0.027769555365795794, "num_gpus_used": 10,
        "memory_ok": True, "peak_memory_fraction": 0.0937653382619222, "extrapolated": [
            "stage 1 A100-80G: tp 4 scaled from measured tp 2 (micro-batch 2)",
            "stage 2 A100-80G: micro-batch 4 scaled from measured 2",
        ], "breakdown.compute_s": 0.14400000000000002, "breakdown.tp_comm_s": 0.0,
        "breakdown.bubble_s": 0.016663462520702693, "breakdown.p2p_s": 0.0017831688723667907,
        "breakdown.dp_comm_s": 0.007395896658699389, "breakdown.optimizer_s": 0.0003673898666666667,
        "stage.fwd_s": 0.01604978872091385, "stage.fwd_s@i": 0.03851957744182769,
        "stage.bwd_s": 0.03661367379978884, "stage.bwd_s@i": 0.09046734759957768,
        "stage.p2p_next_s": 0.0008915844361833953, "stage.p2p_next_s@i": 0.001337376654275093,
        "stage.tail_s": 0.010214809786288706, "stage.tail_s@i": 0.020278884865430877,
        "stage.in_flight": 6.0, "stage.in_flight@i": 10.0, "replica.fwd_s": 0.01714978872091385,
        "replica.fwd_s@i": 0.08952894360456924, "replica.bwd_s": 0.0390708166569317,
        "replica.bwd_s@i": 0.21065694042751562, "replica.compute_s": 0.05464263966355983,
        "replica.compute_s@i": 0.2922960554606563, "replica.tp_comm_s": 0.0015779657142857143,
        "replica.tp_comm_s@i": 0.007889828571428571, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.010123503068895884,
        "replica.dp_comm_s@i": 0.04750001681999721, "replica.optimizer_s": 0.0028139490894940793,
        "replica.optimizer_s@i": 0.011560874217489093, "replica.params_local": 106884608.0,
        "replica.params_local@i": 350051328.0, "memory.weights": 213769216.0,
        "memory.weights@i": 700102656.0, "memory.grads": 213769216.0, "memory.grads@i": 700102656.0,
        "memory.optimizer": 815195136.0, "memory.optimizer@i": 3317520384.0,
        "memory.activations": 774125568.0, "memory.activations@i": 2038839296.0,
        "memory.extras": 276824064.0, "memory.extras@i": 1900019712.0,
        "memory.total": 10883617792.0, "memory.total@i": 45163806720.0,
    },
    "bench-48-stages": {
        "iteration_time_s": 26.335716830318972, "tokens_per_s": 119447.2138452857,
        "mfu": 0.3113613203829319, "hfu": 0.31415672109054577, "num_gpus_used": 768,
        "memory_ok": True, "peak_memory_fraction": 0.2084908127784729, "extrapolated": [],
        "breakdown.compute_s": 21.34256491181154, "breakdown.tp_comm_s": 3.7588254720000003,
        "breakdown.bubble_s": 1.1728017117289804, "breakdown.p2p_s": 0.02510568892193311,
        "breakdown.dp_comm_s": 0.03184136471870663, "breakdown.optimizer_s": 0.004577681137812653,
        "stage.fwd_s": 0.4279184539256021, "stage.fwd_s@i": 8.798264507159395,
        "stage.bwd_s": 0.777567359865633, "stage.bwd_s@i": 15.787837390471708,
        "stage.p2p_next_s": 0.012552844460966555, "stage.p2p_next_s@i": 0.2638469674349443,
        "stage.tail_s": 1.1944624436511628, "stage.tail_s@i": 26.28497573296226,
        "stage.in_flight": 1176.0, "stage.in_flight@i": 19600.0,
        "replica.fwd_s": 0.4279184539256021, "replica.fwd_s@i": 25.538956613626986,
        "replica.bwd_s": 0.777567359865633, "replica.bwd_s@i": 45.80837745168387,
        "replica.compute_s": 1.0337621359245677, "replica.compute_s@i": 59.94779778584419,
        "replica.tp_comm_s": 0.17172367786666676, "replica.tp_comm_s@i": 11.399536279466668,
        "replica.zero_comm_s": 0.0, "replica.zero_comm_s@i": 0.0,
        "replica.dp_comm_s": 1.0310841506176387, "replica.dp_comm_s@i": 65.97322498221948,
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
