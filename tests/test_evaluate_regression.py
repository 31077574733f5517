"""Refactoring guard: CostModel.evaluate() must keep returning the same numbers.

EXPECTED below was produced by evaluate() after Megatron's cross-entropy was counted kernel by
kernel (38 + 14 bytes per 16-bit logit, were 12 + 12) and the refit that followed (issue 20,
2026-12-02; unaligned head dimensions, costed in the same change set, occur in no case); before
that after blocking pipeline sends became the default
(training.pipeline_p2p = "auto": Megatron-LM's and DeepSpeed's behaviour) and the refit that
followed (issue 20, 2026-12-02; cross-checked before the refit: the table then equalled the
previous code's with "blocking" set, except the interleaved case, which "auto" keeps overlapped,
and the two "overlapped" cases equalled the previous default's "plan1-1f1b-zero1" and
"plan1-gpipe-zero0"); before that the interleaved 1F1B schedule, Megatron's fp32
gradients with bf16, the TP communication overlap and the refit that followed them; before that
the compute model by kernel, the peaks per precision, the NIC sharing by a stage's own GPUs, the
per-pass ZeRO overlap; the first table came from commit 81cae90) with
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
                     dtype=dtype, empty_end_stages=True, **ALL)
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
    "plan1-1f1b-overlapped-zero1": _plan1("1f1b", 1, pipeline_p2p="overlapped"),
    "plan1-gpipe-overlapped-zero0": _plan1("gpipe", 0, pipeline_p2p="overlapped"),
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
        "iteration_time_s": 4.1845982640781285, "tokens_per_s": 125289.92436398221,
        "mfu": 0.4554446808689182, "hfu": 0.4655505276173711, "num_gpus_used": 8, "memory_ok": True,
        "peak_memory_fraction": 0.11467013359069825, "extrapolated": [],
        "breakdown.compute_s": 3.267429146969857, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.047866565600314936, "breakdown.p2p_s": 0.0029214739047619927,
        "breakdown.dp_comm_s": 0.0003697019428571429, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.04103419475595597, "stage.fwd_s@i": 0.0659144086049448,
        "stage.bwd_s": 0.07136967698004912, "stage.bwd_s@i": 0.11102676926675004,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.006457580314608001, "stage.tail_s@i": 0.009492528740306873,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.04103419475595597,
        "replica.fwd_s@i": 0.11567483630292244, "replica.bwd_s": 0.07136967698004912,
        "replica.bwd_s@i": 0.19034095384015187, "replica.compute_s": 0.09442557078362414,
        "replica.compute_s@i": 0.24758631204783618, "replica.tp_comm_s": 0.017978300952380954,
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
        "iteration_time_s": 4.190602677071801, "tokens_per_s": 125110.40544801738,
        "mfu": 0.4547921069623843, "hfu": 0.46488347377031203, "num_gpus_used": 8,
        "memory_ok": False, "peak_memory_fraction": 1.6574658274650573, "extrapolated": [],
        "breakdown.compute_s": 3.267429146969857, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.04786656560031555, "breakdown.p2p_s": 0.0057530563047620805,
        "breakdown.dp_comm_s": 0.0004896025904761905, "breakdown.optimizer_s": 0.006105859892103972,
        "stage.fwd_s": 0.04103419475595597, "stage.fwd_s@i": 0.0659144086049448,
        "stage.bwd_s": 0.07136967698004912, "stage.bwd_s@i": 0.11102676926675004,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.009630410908279034, "stage.tail_s@i": 0.012665359333977907,
        "stage.in_flight": 128.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 0.04103419475595597,
        "replica.fwd_s@i": 0.11567483630292244, "replica.bwd_s": 0.07136967698004912,
        "replica.bwd_s@i": 0.19034095384015187, "replica.compute_s": 0.09442557078362414,
        "replica.compute_s@i": 0.24758631204783618, "replica.tp_comm_s": 0.017978300952380954,
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
        "iteration_time_s": 4.185415382211233, "tokens_per_s": 125265.46402737423,
        "mfu": 0.45535576445958265, "hfu": 0.46545963824481096, "num_gpus_used": 8,
        "memory_ok": True, "peak_memory_fraction": 0.10638811588287353, "extrapolated": [],
        "breakdown.compute_s": 3.267429146969857, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.048928485028657265, "breakdown.p2p_s": 0.0029214739047619927,
        "breakdown.dp_comm_s": 0.00012490064761904764,
        "breakdown.optimizer_s": 0.003052929946051986, "stage.fwd_s": 0.04103419475595597,
        "stage.fwd_s@i": 0.0659144086049448, "stage.bwd_s": 0.07243159640839197,
        "stage.bwd_s@i": 0.11208868869509289, "stage.p2p_next_s": 4.494575238095238e-05,
        "stage.p2p_next_s@i": 4.494575238095238e-05, "stage.tail_s": 0.006212779019369906,
        "stage.tail_s@i": 0.009247727445068778, "stage.in_flight": 3.0, "stage.in_flight@i": 4.0,
        "replica.fwd_s": 0.04103419475595597, "replica.fwd_s@i": 0.11567483630292244,
        "replica.bwd_s": 0.07243159640839197, "replica.bwd_s@i": 0.1914028732684947,
        "replica.compute_s": 0.09442557078362414, "replica.compute_s@i": 0.24758631204783618,
        "replica.tp_comm_s": 0.017978300952380954, "replica.tp_comm_s@i": 0.058429478095238095,
        "replica.zero_comm_s": 0.001061919428342857, "replica.zero_comm_s@i": 0.001061919428342857,
        "replica.dp_comm_s": 0.00012490064761904764, "replica.dp_comm_s@i": 0.00012490064761904764,
        "replica.optimizer_s": 0.006087878371750858, "replica.optimizer_s@i": 0.015192723648847474,
        "replica.params_local": 532517376.0, "replica.params_local@i": 1062939648.0,
        "memory.weights": 1065034752.0, "memory.weights@i": 2125879296.0,
        "memory.grads": 1418649600.0, "memory.grads@i": 3540338688.0,
        "memory.optimizer": 4255948800.0, "memory.optimizer@i": 10621016064.0,
        "memory.activations": 5138546688.0, "memory.activations@i": 10277093376.0,
        "memory.extras": 436871168.0, "memory.extras@i": 1722318848.0,
        "memory.total": 16610018304.0, "memory.total@i": 39024064512.0,
    },
    "plan1-gpipe-zero3": {
        "iteration_time_s": 4.189185548391958, "tokens_per_s": 125152.72812426531,
        "mfu": 0.454945955229714, "hfu": 0.4650407357716855, "num_gpus_used": 8, "memory_ok": False,
        "peak_memory_fraction": 1.6574658274650573, "extrapolated": [],
        "breakdown.compute_s": 3.267429146969857, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.04999196945700091, "breakdown.p2p_s": 0.0057530563047620805,
        "breakdown.dp_comm_s": 0.0, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.04156593697012739, "stage.fwd_s@i": 0.06644615081911621,
        "stage.bwd_s": 0.0729633386225634, "stage.bwd_s@i": 0.11262043090926432,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.006087878371750858, "stage.tail_s@i": 0.00912282679744973,
        "stage.in_flight": 128.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 0.04156593697012739,
        "replica.fwd_s@i": 0.11620657851709386, "replica.bwd_s": 0.0729633386225634,
        "replica.bwd_s@i": 0.19193461548266616, "replica.compute_s": 0.09442557078362414,
        "replica.compute_s@i": 0.24758631204783618, "replica.tp_comm_s": 0.017978300952380954,
        "replica.tp_comm_s@i": 0.058429478095238095, "replica.zero_comm_s": 0.002125403856685714,
        "replica.zero_comm_s@i": 0.002125403856685714, "replica.dp_comm_s": 0.0,
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
        "iteration_time_s": 4.189320132878128, "tokens_per_s": 125148.70751589135,
        "mfu": 0.45493133981105943, "hfu": 0.46502579605199656, "num_gpus_used": 8,
        "memory_ok": True, "peak_memory_fraction": 0.11467013359069825, "extrapolated": [],
        "breakdown.compute_s": 3.267429146969857, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.047866565600314936, "breakdown.p2p_s": 0.0029214739047619927,
        "breakdown.dp_comm_s": 0.005091570742857142, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.04103419475595597, "stage.fwd_s@i": 0.0659144086049448,
        "stage.bwd_s": 0.07136967698004912, "stage.bwd_s@i": 0.11102676926675004,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.011179449114608001, "stage.tail_s@i": 0.014214397540306872,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.04103419475595597,
        "replica.fwd_s@i": 0.11567483630292244, "replica.bwd_s": 0.07136967698004912,
        "replica.bwd_s@i": 0.19034095384015187, "replica.compute_s": 0.09442557078362414,
        "replica.compute_s@i": 0.24758631204783618, "replica.tp_comm_s": 0.017978300952380954,
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
        "iteration_time_s": 4.157833398877972, "tokens_per_s": 126096.44247445888,
        "mfu": 0.45837647594586245, "hfu": 0.4685473761969469, "num_gpus_used": 8,
        "memory_ok": True, "peak_memory_fraction": 0.12473788261413574, "extrapolated": [],
        "breakdown.compute_s": 3.267429146969857, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.023933282800158166, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.0003697019428571429, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.04103419475595597, "stage.fwd_s@i": 0.0659144086049448,
        "stage.bwd_s": 0.07136967698004912, "stage.bwd_s@i": 0.11102676926675004,
        "stage.p2p_next_s": 8.989150476190476e-05, "stage.p2p_next_s@i": 0.00013483725714285715,
        "stage.tail_s": 0.006457580314608001, "stage.tail_s@i": 0.009492528740306873,
        "stage.in_flight": 4.0, "stage.in_flight@i": 5.5, "replica.fwd_s": 0.04103419475595597,
        "replica.fwd_s@i": 0.11567483630292244, "replica.bwd_s": 0.07136967698004912,
        "replica.bwd_s@i": 0.19034095384015187, "replica.compute_s": 0.09442557078362414,
        "replica.compute_s@i": 0.24758631204783618, "replica.tp_comm_s": 0.017978300952380954,
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
        "iteration_time_s": 3.3517234633162247, "tokens_per_s": 156423.40596955598,
        "mfu": 0.5686188141136276, "hfu": 0.5812358779088531, "num_gpus_used": 8, "memory_ok": True,
        "peak_memory_fraction": 0.10638811588287353, "extrapolated": [],
        "breakdown.compute_s": 3.267429146969857, "breakdown.tp_comm_s": 0.03451833782857143,
        "breakdown.bubble_s": 0.04355177337174433, "breakdown.p2p_s": 0.0029214739047619927,
        "breakdown.dp_comm_s": 0.00024980129523809527,
        "breakdown.optimizer_s": 0.003052929946051986, "stage.fwd_s": 0.032404610298813114,
        "stage.fwd_s@i": 0.05081263580494479, "stage.bwd_s": 0.06274009252290627,
        "stage.bwd_s@i": 0.09592499646675004, "stage.p2p_next_s": 4.494575238095238e-05,
        "stage.p2p_next_s@i": 4.494575238095238e-05, "stage.tail_s": 0.006337679666988953,
        "stage.tail_s@i": 0.009372628092687825, "stage.in_flight": 3.0, "stage.in_flight@i": 4.0,
        "replica.fwd_s": 0.032404610298813114, "replica.fwd_s@i": 0.08762868681720815,
        "replica.bwd_s": 0.06274009252290627, "replica.bwd_s@i": 0.16229480435443758,
        "replica.compute_s": 0.09442557078362414, "replica.compute_s@i": 0.24758631204783618,
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
        "iteration_time_s": 4.167336199712859, "tokens_per_s": 125808.9040274996,
        "mfu": 0.45733123741708454, "hfu": 0.4674789449055106, "num_gpus_used": 8,
        "memory_ok": True, "peak_memory_fraction": 0.14626057147979737, "extrapolated": [],
        "breakdown.compute_s": 3.267429146969857, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.015955521866771717, "breakdown.p2p_s": 0.014397622679364638,
        "breakdown.dp_comm_s": 0.0004896025904761905, "breakdown.optimizer_s": 0.006105859892103972,
        "stage.fwd_s": 0.04103419475595597, "stage.fwd_s@i": 0.0659144086049448,
        "stage.bwd_s": 0.07136967698004912, "stage.bwd_s@i": 0.11102676926675004,
        "stage.p2p_next_s": 8.989150476190476e-05, "stage.p2p_next_s@i": 0.00013483725714285715,
        "stage.tail_s": 0.009630410908279034, "stage.tail_s@i": 0.012665359333977907,
        "stage.in_flight": 4.0, "stage.in_flight@i": 5.666666666666667,
        "replica.fwd_s": 0.04103419475595597, "replica.fwd_s@i": 0.11567483630292244,
        "replica.bwd_s": 0.07136967698004912, "replica.bwd_s@i": 0.19034095384015187,
        "replica.compute_s": 0.09442557078362414, "replica.compute_s@i": 0.24758631204783618,
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
    "plan1-1f1b-overlapped-zero1": {
        "iteration_time_s": 4.181766681678129, "tokens_per_s": 125374.76141294546,
        "mfu": 0.4557530742444196, "hfu": 0.46586576392313805, "num_gpus_used": 8,
        "memory_ok": True, "peak_memory_fraction": 0.11467013359069825, "extrapolated": [],
        "breakdown.compute_s": 3.267429146969857, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.047866565600315214, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.0003697019428571429, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.04103419475595597, "stage.fwd_s@i": 0.0659144086049448,
        "stage.bwd_s": 0.07136967698004912, "stage.bwd_s@i": 0.11102676926675004,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.006457580314608001, "stage.tail_s@i": 0.009492528740306873,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.04103419475595597,
        "replica.fwd_s@i": 0.11567483630292244, "replica.bwd_s": 0.07136967698004912,
        "replica.bwd_s@i": 0.19034095384015187, "replica.compute_s": 0.09442557078362414,
        "replica.compute_s@i": 0.24758631204783618, "replica.tp_comm_s": 0.017978300952380954,
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
    "plan1-gpipe-overlapped-zero0": {
        "iteration_time_s": 4.1849395122718, "tokens_per_s": 125279.70797728199,
        "mfu": 0.45540754301442643, "hfu": 0.4655125657122715, "num_gpus_used": 8,
        "memory_ok": False, "peak_memory_fraction": 1.6574658274650573, "extrapolated": [],
        "breakdown.compute_s": 3.267429146969857, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.047866565600315214, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.0004896025904761905, "breakdown.optimizer_s": 0.006105859892103972,
        "stage.fwd_s": 0.04103419475595597, "stage.fwd_s@i": 0.0659144086049448,
        "stage.bwd_s": 0.07136967698004912, "stage.bwd_s@i": 0.11102676926675004,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.009630410908279034, "stage.tail_s@i": 0.012665359333977907,
        "stage.in_flight": 128.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 0.04103419475595597,
        "replica.fwd_s@i": 0.11567483630292244, "replica.bwd_s": 0.07136967698004912,
        "replica.bwd_s@i": 0.19034095384015187, "replica.compute_s": 0.09442557078362414,
        "replica.compute_s@i": 0.24758631204783618, "replica.tp_comm_s": 0.017978300952380954,
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
    "llama-mixed-1f1b-zero1": {
        "iteration_time_s": 69.46826762638248, "tokens_per_s": 30188.632474311897,
        "mfu": 0.09350850514835492, "hfu": 0.11593835624749319, "num_gpus_used": 40,
        "memory_ok": True, "peak_memory_fraction": 0.5655865669250488, "extrapolated": [],
        "breakdown.compute_s": 30.068703961079162, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 1.3502389715363639, "breakdown.p2p_s": 1.0418555211412293,
        "breakdown.dp_comm_s": 1.2825094704523894, "breakdown.optimizer_s": 0.0018719764590485533,
        "stage.fwd_s": 1.064648926939448, "stage.fwd_s@i": 2.7059934723268455,
        "stage.bwd_s": 2.341583534809218, "stage.bwd_s@i": 5.91923900555153,
        "stage.p2p_next_s": 0.04596786122681883, "stage.p2p_next_s@i": 0.07661043537803139,
        "stage.tail_s": 1.3075891594681464, "stage.tail_s@i": 2.6301140713531295,
        "stage.in_flight": 6.0, "stage.in_flight@i": 10.0, "replica.fwd_s": 1.1376093919471053,
        "replica.fwd_s@i": 6.609486381850006, "replica.bwd_s": 2.5526456478090402,
        "replica.bwd_s@i": 14.696849476022821, "replica.compute_s": 1.869638532632336,
        "replica.compute_s@i": 10.080496257720448, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 2.0039985483457903,
        "replica.dp_comm_s@i": 8.745811842705136, "replica.optimizer_s": 0.02352889536496342,
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
        "iteration_time_s": 70.49284229807824, "tokens_per_s": 29749.8573136293,
        "mfu": 0.0921494104822891, "hfu": 0.11425325603849706, "num_gpus_used": 40,
        "memory_ok": False, "peak_memory_fraction": 4.373428153991699, "extrapolated": [],
        "breakdown.compute_s": 30.068703961079162, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 1.8154575413679144, "breakdown.p2p_s": 1.9917753198288208,
        "breakdown.dp_comm_s": 0.8919457736290103, "breakdown.optimizer_s": 0.0018719764590485533,
        "stage.fwd_s": 1.064648926939448, "stage.fwd_s@i": 2.7059934723268455,
        "stage.bwd_s": 2.8257126471036376, "stage.bwd_s@i": 6.90236916851614,
        "stage.p2p_next_s": 0.04596786122681883, "stage.p2p_next_s@i": 0.07661043537803139,
        "stage.tail_s": 0.30791572288095803, "stage.tail_s@i": 0.6275867219882764,
        "stage.in_flight": 96.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 1.1376093919471053,
        "replica.fwd_s@i": 6.609486381850006, "replica.bwd_s": 3.887476144107389,
        "replica.bwd_s@i": 20.541967242088006, "replica.compute_s": 1.869638532632336,
        "replica.compute_s@i": 10.080496257720448, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 1.334830496298349,
        "replica.zero_comm_s@i": 5.8451177660651865, "replica.dp_comm_s": 0.31927732046257884,
        "replica.dp_comm_s@i": 1.312337711304836, "replica.optimizer_s": 0.02352889536496342,
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
        "iteration_time_s": 78.68975811550823, "tokens_per_s": 26650.888885966622,
        "mfu": 0.08255043625186431, "hfu": 0.10235177935280036, "num_gpus_used": 40,
        "memory_ok": True, "peak_memory_fraction": 0.4946951389312744, "extrapolated": [],
        "breakdown.compute_s": 14.64741910827808, "breakdown.tp_comm_s": 20.776998034285715,
        "breakdown.bubble_s": 2.3451239791434464, "breakdown.p2p_s": 1.5169394204850217,
        "breakdown.dp_comm_s": 39.38957298368635, "breakdown.optimizer_s": 0.01370458962962963,
        "stage.fwd_s": 1.3480002923927379, "stage.fwd_s@i": 3.2801306074213104,
        "stage.bwd_s": 3.3350608781960123, "stage.bwd_s@i": 7.928500034888775,
        "stage.p2p_next_s": 0.04596786122681883, "stage.p2p_next_s@i": 0.07661043537803139,
        "stage.tail_s": 0.021656918905914868, "stage.tail_s@i": 0.053483875942951904,
        "stage.in_flight": 6.0, "stage.in_flight@i": 10.0, "replica.fwd_s": 1.868707445757538,
        "replica.fwd_s@i": 9.828055471833714, "replica.bwd_s": 4.894694903017168,
        "replica.bwd_s@i": 25.091016018108185, "replica.compute_s": 1.869638532632336,
        "replica.compute_s@i": 10.080496257720448, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 3.0731473090185606,
        "replica.zero_comm_s@i": 13.61273563206907, "replica.dp_comm_s": 0.0,
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
        "iteration_time_s": 70.92537783518272, "tokens_per_s": 29568.429016668593,
        "mfu": 0.09158744104379785, "hfu": 0.11355648719531393, "num_gpus_used": 40,
        "memory_ok": False, "peak_memory_fraction": 4.562471961975097, "extrapolated": [],
        "breakdown.compute_s": 30.068703961079162, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 1.3502389715363676, "breakdown.p2p_s": 1.991775319828814,
        "breakdown.dp_comm_s": 1.7803399982697932, "breakdown.optimizer_s": 0.01123185875429132,
        "stage.fwd_s": 1.064648926939448, "stage.fwd_s@i": 2.7059934723268455,
        "stage.bwd_s": 2.341583534809218, "stage.bwd_s@i": 5.91923900555153,
        "stage.p2p_next_s": 0.04596786122681883, "stage.p2p_next_s@i": 0.07661043537803139,
        "stage.tail_s": 1.8410640041821353, "stage.tail_s@i": 3.7017599340104526,
        "stage.in_flight": 96.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 1.1376093919471053,
        "replica.fwd_s@i": 6.609486381850006, "replica.bwd_s": 2.5526456478090402,
        "replica.bwd_s@i": 14.696849476022821, "replica.compute_s": 1.869638532632336,
        "replica.compute_s@i": 10.080496257720448, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 3.001635794456788,
        "replica.dp_comm_s@i": 13.238977069252245, "replica.optimizer_s": 0.07928591067424709,
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
        "iteration_time_s": 21.14729805887232, "tokens_per_s": 49584.39593941749,
        "mfu": 0.1161313510885624, "hfu": 0.11913765818527686, "num_gpus_used": 14,
        "memory_ok": True, "peak_memory_fraction": 0.689031720161438, "extrapolated": [],
        "breakdown.compute_s": 16.29377684784171, "breakdown.tp_comm_s": 0.0,
        "breakdown.bubble_s": 0.05538983746798226, "breakdown.p2p_s": 0.4997618299572035,
        "breakdown.dp_comm_s": 4.276162687605424, "breakdown.optimizer_s": 0.022206856,
        "stage.fwd_s": 0.10328193736124218, "stage.fwd_s@i": 0.12478401990377033,
        "stage.bwd_s": 0.206698163354265, "stage.bwd_s@i": 0.24058591827971734,
        "stage.p2p_next_s": 0.007688643537803138, "stage.p2p_next_s@i": 0.007688643537803138,
        "stage.tail_s": 4.302560424922845, "stage.tail_s@i": 4.306751306240265,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.13117351989699394,
        "replica.fwd_s@i": 0.2774596223432924, "replica.bwd_s": 0.26160689134093335,
        "replica.bwd_s@i": 0.5360805645461031, "replica.compute_s": 0.3739235207236416,
        "replica.compute_s@i": 0.7607043075751097, "replica.tp_comm_s": 0.018856890514285712,
        "replica.tp_comm_s@i": 0.05283587931428572, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 6.448720018163691,
        "replica.dp_comm_s@i": 10.733551237352568, "replica.optimizer_s": 0.02525079518587543,
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
        "iteration_time_s": 21.77308735192402, "tokens_per_s": 48159.2703437779,
        "mfu": 0.24637141873170595, "hfu": 0.32495056161682756, "num_gpus_used": 16,
        "memory_ok": False, "peak_memory_fraction": 1.2160619795322418, "extrapolated": [],
        "breakdown.compute_s": 17.455017024614094, "breakdown.tp_comm_s": 3.628161316571429,
        "breakdown.bubble_s": 0.12540544202813209, "breakdown.p2p_s": 0.23103930613409318,
        "breakdown.dp_comm_s": 0.3288496128870967, "breakdown.optimizer_s": 0.004614649689174705,
        "stage.fwd_s": 0.07948829546103627, "stage.fwd_s@i": 0.12540979892381887,
        "stage.bwd_s": 0.21062947735760937, "stage.bwd_s@i": 0.32942030468533867,
        "stage.p2p_next_s": 0.0009024972895863053, "stage.p2p_next_s@i": 0.0009024972895863053,
        "stage.tail_s": 0.443471923518254, "stage.tail_s@i": 0.7769361860945253,
        "stage.in_flight": 256.0, "stage.in_flight@i": 384.0, "replica.fwd_s": 0.12377440635708802,
        "replica.fwd_s@i": 0.38660123648069, "replica.bwd_s": 0.3305994001504987,
        "replica.bwd_s@i": 1.0167996132323704, "replica.compute_s": 0.3730805706980629,
        "replica.compute_s@i": 1.1734874447606796, "replica.tp_comm_s": 0.08129323580952381,
        "replica.tp_comm_s@i": 0.22991340495238097, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.5848032440720405,
        "replica.dp_comm_s@i": 1.9474675424499879, "replica.optimizer_s": 0.020497443302131713,
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
        "iteration_time_s": 21.70400368663559, "tokens_per_s": 48312.5609053259,
        "mfu": 0.24715561693191065, "hfu": 0.32598487658277303, "num_gpus_used": 16,
        "memory_ok": True, "peak_memory_fraction": 0.17940475791692734, "extrapolated": [],
        "breakdown.compute_s": 17.455017024614094, "breakdown.tp_comm_s": 3.628161316571429,
        "breakdown.bubble_s": 0.12540544202813303, "breakdown.p2p_s": 0.1164221503566329,
        "breakdown.dp_comm_s": 0.37438310337612934, "breakdown.optimizer_s": 0.004614649689174705,
        "stage.fwd_s": 0.07948829546103627, "stage.fwd_s@i": 0.12540979892381887,
        "stage.bwd_s": 0.21062947735760937, "stage.bwd_s@i": 0.32942030468533867,
        "stage.p2p_next_s": 0.0009024972895863053, "stage.p2p_next_s@i": 0.0009024972895863053,
        "stage.tail_s": 0.5634418463111432, "stage.tail_s@i": 0.9424395993764474,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.12377440635708802,
        "replica.fwd_s@i": 0.38660123648069, "replica.bwd_s": 0.3305994001504987,
        "replica.bwd_s@i": 1.0167996132323704, "replica.compute_s": 0.3730805706980629,
        "replica.compute_s@i": 1.1734874447606796, "replica.tp_comm_s": 0.08129323580952381,
        "replica.tp_comm_s@i": 0.22991340495238097, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.9154026442225393,
        "replica.dp_comm_s@i": 2.964267155682358, "replica.optimizer_s": 0.020497443302131713,
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
        "iteration_time_s": 19.387071230356042, "tokens_per_s": 54086.35412439979,
        "mfu": 0.28744074997561025, "hfu": 0.3375545891912538, "num_gpus_used": 26,
        "memory_ok": True, "peak_memory_fraction": 0.21729049682617188, "extrapolated": [],
        "breakdown.compute_s": 17.71391727392937, "breakdown.tp_comm_s": 1.1045868105142858,
        "breakdown.bubble_s": 0.1290516680049636, "breakdown.p2p_s": 0.12862494881597608,
        "breakdown.dp_comm_s": 0.30397704758090577, "breakdown.optimizer_s": 0.0069134815105443845,
        "stage.fwd_s": 0.08331181066962876, "stage.fwd_s@i": 0.21135828805337792,
        "stage.bwd_s": 0.19275942049504996, "stage.bwd_s@i": 0.5049657154731836,
        "stage.p2p_next_s": 0.0028869913266761768, "stage.p2p_next_s@i": 0.004337986990014265,
        "stage.tail_s": 0.38292680815154656, "stage.tail_s@i": 1.0728004964943822,
        "stage.in_flight": 10.0, "stage.in_flight@i": 20.0, "replica.fwd_s": 0.08331181066962876,
        "replica.fwd_s@i": 0.46745124282087636, "replica.bwd_s": 0.19275942049504996,
        "replica.bwd_s@i": 1.1293783054294508, "replica.compute_s": 0.2489239967265835,
        "replica.compute_s@i": 1.4548009707265175, "replica.tp_comm_s": 0.02714723443809524,
        "replica.tp_comm_s@i": 0.14202857752380954, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.3668193823153524,
        "replica.dp_comm_s@i": 2.3702437476283125, "replica.optimizer_s": 0.016107425836194213,
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
        "iteration_time_s": 76.9893655156968, "tokens_per_s": 13619.751156232265,
        "mfu": 0.07238187062533921, "hfu": 0.0850012832415168, "num_gpus_used": 26,
        "memory_ok": False, "peak_memory_fraction": 3.512522315979004, "extrapolated": [],
        "breakdown.compute_s": 17.71391727392937, "breakdown.tp_comm_s": 1.1045868105142858,
        "breakdown.bubble_s": 0.2342975527596839, "breakdown.p2p_s": 0.2514759149785998,
        "breakdown.dp_comm_s": 57.678174482004316, "breakdown.optimizer_s": 0.0069134815105443845,
        "stage.fwd_s": 0.2135490636099621, "stage.fwd_s@i": 0.5831243477481516,
        "stage.bwd_s": 0.6183787904500916, "stage.bwd_s@i": 1.6915126446015836,
        "stage.p2p_next_s": 0.0028869913266761768, "stage.p2p_next_s@i": 0.004337986990014265,
        "stage.tail_s": 0.016107425836194213, "stage.tail_s@i": 0.038172992408043165,
        "stage.in_flight": 512.0, "stage.in_flight@i": 1280.0, "replica.fwd_s": 0.2135490636099621,
        "replica.fwd_s@i": 1.3222749160245306, "replica.bwd_s": 0.6183787904500916,
        "replica.bwd_s@i": 3.837780352904567, "replica.compute_s": 0.2489239967265835,
        "replica.compute_s@i": 1.4548009707265175, "replica.tp_comm_s": 0.02714723443809524,
        "replica.tp_comm_s@i": 0.14202857752380954, "replica.zero_comm_s": 0.555856622895375,
        "replica.zero_comm_s@i": 3.5632257206787705, "replica.dp_comm_s": 0.0,
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
        "iteration_time_s": 287.32169257913586, "tokens_per_s": 3649.4842787103344,
        "mfu": 0.3103216743162834, "hfu": 0.3644246868262879, "num_gpus_used": 26,
        "memory_ok": True, "peak_memory_fraction": 0.27353553771972655, "extrapolated": [],
        "breakdown.compute_s": 272.1744540382696, "breakdown.tp_comm_s": 2.086293621028571,
        "breakdown.bubble_s": 1.7416044774575457, "breakdown.p2p_s": 0.25594989763197906,
        "breakdown.dp_comm_s": 11.056477063237656, "breakdown.optimizer_s": 0.0069134815105443845,
        "stage.fwd_s": 1.0990573079695771, "stage.fwd_s@i": 2.797781182979141,
        "stage.bwd_s": 2.871534375438126, "stage.bwd_s@i": 7.5612851011579165,
        "stage.p2p_next_s": 0.005758982653352354, "stage.p2p_next_s@i": 0.008645973980028532,
        "stage.tail_s": 0.029420523989325334, "stage.tail_s@i": 0.06978071966245816,
        "stage.in_flight": 10.0, "stage.in_flight@i": 20.0, "replica.fwd_s": 1.0990573079695771,
        "replica.fwd_s@i": 6.195228932998267, "replica.bwd_s": 2.871534375438126,
        "replica.bwd_s@i": 16.940786552597494, "replica.compute_s": 3.802284723142746,
        "replica.compute_s@i": 22.146450035125998, "replica.tp_comm_s": 0.05127446887619048,
        "replica.tp_comm_s@i": 0.26825715504761904, "replica.zero_comm_s": 0.11703249138876698,
        "replica.zero_comm_s@i": 0.7213082954221477, "replica.dp_comm_s": 0.013313098153131123,
        "replica.dp_comm_s@i": 0.06819698545698277, "replica.optimizer_s": 0.016107425836194213,
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
        "iteration_time_s": 0.17924446371871622, "tokens_per_s": 91405.8914852232,
        "mfu": 0.024136025362130914, "hfu": 0.026369872973376583, "num_gpus_used": 10,
        "memory_ok": True, "peak_memory_fraction": 0.09474293390909831, "extrapolated": [
            "stage 1 A100-80G: tp 4 scaled from measured tp 2 (micro-batch 2)",
            "stage 2 A100-80G: micro-batch 4 scaled from measured 2",
        ], "breakdown.compute_s": 0.14400000000000002, "breakdown.tp_comm_s": 0.0,
        "breakdown.bubble_s": 0.01665281314948782, "breakdown.p2p_s": 0.0035606565477888726,
        "breakdown.dp_comm_s": 0.014663604154772854, "breakdown.optimizer_s": 0.0003673898666666667,
        "stage.fwd_s": 0.016046238930508893, "stage.fwd_s@i": 0.03851247786101779,
        "stage.bwd_s": 0.036606574218978935, "stage.bwd_s@i": 0.09045314843795788,
        "stage.p2p_next_s": 0.0010173304422253923, "stage.p2p_next_s@i": 0.0015259956633380885,
        "stage.tail_s": 0.01754249930140979, "stage.tail_s@i": 0.034874281876625425,
        "stage.in_flight": 6.0, "stage.in_flight@i": 10.0, "replica.fwd_s": 0.017146238930508893,
        "replica.fwd_s@i": 0.08951119465254448, "replica.bwd_s": 0.03906371707612179,
        "replica.bwd_s@i": 0.2106214425234661, "replica.compute_s": 0.05463199029234497,
        "replica.compute_s@i": 0.29224280860458196, "replica.tp_comm_s": 0.0015779657142857143,
        "replica.tp_comm_s@i": 0.007889828571428571, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.021081496541648745,
        "replica.dp_comm_s@i": 0.09841975214993927, "replica.optimizer_s": 0.0028139490894940793,
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
        "iteration_time_s": 26.54415569534278, "tokens_per_s": 118509.25062769745,
        "mfu": 0.3089163452638205, "hfu": 0.3116897949944484, "num_gpus_used": 768,
        "memory_ok": True, "peak_memory_fraction": 0.2209091901779175, "extrapolated": [],
        "breakdown.compute_s": 21.230548711475695, "breakdown.tp_comm_s": 3.7588254720000003,
        "breakdown.bubble_s": 1.1718174165064121, "breakdown.p2p_s": 0.30801808279600684,
        "breakdown.dp_comm_s": 0.07036833142685463, "breakdown.optimizer_s": 0.004577681137812653,
        "stage.fwd_s": 0.42762174851985074, "stage.fwd_s@i": 8.824612129401254,
        "stage.bwd_s": 0.7767339156212928, "stage.bwd_s@i": 15.82901103017931,
        "stage.p2p_next_s": 0.014415457175463615, "stage.p2p_next_s@i": 0.30289110231098426,
        "stage.tail_s": 2.5095089900227907, "stage.tail_s@i": 54.193287195135895,
        "stage.in_flight": 1176.0, "stage.in_flight@i": 19600.0,
        "replica.fwd_s": 0.42762174851985074, "replica.fwd_s@i": 25.61859289116406,
        "replica.bwd_s": 0.7767339156212928, "replica.bwd_s@i": 45.93356525929531,
        "replica.compute_s": 1.0326319862744764, "replica.compute_s@i": 60.15262187099274,
        "replica.tp_comm_s": 0.17172367786666676, "replica.tp_comm_s@i": 11.399536279466668,
        "replica.zero_comm_s": 0.0, "replica.zero_comm_s@i": 0.0,
        "replica.dp_comm_s": 2.346130696989262, "replica.dp_comm_s@i": 147.06806627599707,
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
