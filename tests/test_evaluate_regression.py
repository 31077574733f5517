"""Refactoring guard: CostModel.evaluate() must keep returning the same numbers.

EXPECTED below was produced by evaluate() after blocking pipeline sends became the default
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
        "iteration_time_s": 4.075130176198784, "tokens_per_s": 128655.521990968,
        "mfu": 0.4676790528260968, "hfu": 0.4780563676435738, "num_gpus_used": 8, "memory_ok": True,
        "peak_memory_fraction": 0.11467013359069825, "extrapolated": [],
        "breakdown.compute_s": 3.1579131402325418, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.04791448445828589, "breakdown.p2p_s": 0.0029214739047619927,
        "breakdown.dp_comm_s": 0.0003697019428571429, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.03942812953186829, "stage.fwd_s@i": 0.06268630520411253,
        "stage.bwd_s": 0.07131247345683697, "stage.bwd_s@i": 0.11088041631501193,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.006457580314608001, "stage.tail_s@i": 0.009492528740306873,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.03942812953186829,
        "replica.fwd_s@i": 0.109202656548601, "replica.bwd_s": 0.07131247345683697,
        "replica.bwd_s@i": 0.19001630203136183, "replica.compute_s": 0.09276230203632432,
        "replica.compute_s@i": 0.2407894804847247, "replica.tp_comm_s": 0.017978300952380954,
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
        "iteration_time_s": 4.081134589192456, "tokens_per_s": 128466.23617569596,
        "mfu": 0.4669909750084493, "hfu": 0.4773530220903083, "num_gpus_used": 8,
        "memory_ok": False, "peak_memory_fraction": 1.6574658274650573, "extrapolated": [],
        "breakdown.compute_s": 3.1579131402325418, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.0479144844582865, "breakdown.p2p_s": 0.0057530563047620805,
        "breakdown.dp_comm_s": 0.0004896025904761905, "breakdown.optimizer_s": 0.006105859892103972,
        "stage.fwd_s": 0.03942812953186829, "stage.fwd_s@i": 0.06268630520411253,
        "stage.bwd_s": 0.07131247345683697, "stage.bwd_s@i": 0.11088041631501193,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.009630410908279034, "stage.tail_s@i": 0.012665359333977907,
        "stage.in_flight": 128.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 0.03942812953186829,
        "replica.fwd_s@i": 0.109202656548601, "replica.bwd_s": 0.07131247345683697,
        "replica.bwd_s@i": 0.19001630203136183, "replica.compute_s": 0.09276230203632432,
        "replica.compute_s@i": 0.2407894804847247, "replica.tp_comm_s": 0.017978300952380954,
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
        "iteration_time_s": 4.075886225482975, "tokens_per_s": 128631.65726316959,
        "mfu": 0.4675923015299223, "hfu": 0.47796769142579815, "num_gpus_used": 8,
        "memory_ok": True, "peak_memory_fraction": 0.10638811588287353, "extrapolated": [],
        "breakdown.compute_s": 3.1579131402325418, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.04891533503771445, "breakdown.p2p_s": 0.0029214739047619927,
        "breakdown.dp_comm_s": 0.00012490064761904764,
        "breakdown.optimizer_s": 0.003052929946051986, "stage.fwd_s": 0.03942812953186829,
        "stage.fwd_s@i": 0.06268630520411253, "stage.bwd_s": 0.07231332403626556,
        "stage.bwd_s@i": 0.1118812668944405, "stage.p2p_next_s": 4.494575238095238e-05,
        "stage.p2p_next_s@i": 4.494575238095238e-05, "stage.tail_s": 0.006212779019369906,
        "stage.tail_s@i": 0.009247727445068778, "stage.in_flight": 3.0, "stage.in_flight@i": 4.0,
        "replica.fwd_s": 0.03942812953186829, "replica.fwd_s@i": 0.109202656548601,
        "replica.bwd_s": 0.07231332403626556, "replica.bwd_s@i": 0.19101715261079039,
        "replica.compute_s": 0.09276230203632432, "replica.compute_s@i": 0.2407894804847247,
        "replica.tp_comm_s": 0.017978300952380954, "replica.tp_comm_s@i": 0.058429478095238095,
        "replica.zero_comm_s": 0.0010008505794285717,
        "replica.zero_comm_s@i": 0.0010008505794285717, "replica.dp_comm_s": 0.00012490064761904764,
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
        "iteration_time_s": 4.079595232814785, "tokens_per_s": 128514.71042588183,
        "mfu": 0.467167185023088, "hfu": 0.47753314202305186, "num_gpus_used": 8,
        "memory_ok": False, "peak_memory_fraction": 1.6574658274650573, "extrapolated": [],
        "breakdown.compute_s": 3.1579131402325418, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.04991766061714309, "breakdown.p2p_s": 0.0057530563047620805,
        "breakdown.dp_comm_s": 0.0, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.03992929232158257, "stage.fwd_s@i": 0.06318746799382681,
        "stage.bwd_s": 0.07281448682597984, "stage.bwd_s@i": 0.1123824296841548,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.006087878371750858, "stage.tail_s@i": 0.00912282679744973,
        "stage.in_flight": 128.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 0.03992929232158257,
        "replica.fwd_s@i": 0.10970381933831527, "replica.bwd_s": 0.07281448682597984,
        "replica.bwd_s@i": 0.19151831540050468, "replica.compute_s": 0.09276230203632432,
        "replica.compute_s@i": 0.2407894804847247, "replica.tp_comm_s": 0.017978300952380954,
        "replica.tp_comm_s@i": 0.058429478095238095, "replica.zero_comm_s": 0.0020031761588571433,
        "replica.zero_comm_s@i": 0.0020031761588571433, "replica.dp_comm_s": 0.0,
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
        "iteration_time_s": 4.079852044998784, "tokens_per_s": 128506.62088167862,
        "mfu": 0.4671377785093822, "hfu": 0.4775030830091997, "num_gpus_used": 8, "memory_ok": True,
        "peak_memory_fraction": 0.11467013359069825, "extrapolated": [],
        "breakdown.compute_s": 3.1579131402325418, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.04791448445828589, "breakdown.p2p_s": 0.0029214739047619927,
        "breakdown.dp_comm_s": 0.005091570742857142, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.03942812953186829, "stage.fwd_s@i": 0.06268630520411253,
        "stage.bwd_s": 0.07131247345683697, "stage.bwd_s@i": 0.11088041631501193,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.011179449114608001, "stage.tail_s@i": 0.014214397540306872,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.03942812953186829,
        "replica.fwd_s@i": 0.109202656548601, "replica.bwd_s": 0.07131247345683697,
        "replica.bwd_s@i": 0.19001630203136183, "replica.compute_s": 0.09276230203632432,
        "replica.compute_s@i": 0.2407894804847247, "replica.tp_comm_s": 0.017978300952380954,
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
        "iteration_time_s": 4.048341351569642, "tokens_per_s": 129506.865767809,
        "mfu": 0.4707737948552056, "hfu": 0.4812197787997707, "num_gpus_used": 8, "memory_ok": True,
        "peak_memory_fraction": 0.12473788261413574, "extrapolated": [],
        "breakdown.compute_s": 3.1579131402325418, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.02395724222914342, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.0003697019428571429, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.03942812953186829, "stage.fwd_s@i": 0.06268630520411253,
        "stage.bwd_s": 0.07131247345683697, "stage.bwd_s@i": 0.11088041631501193,
        "stage.p2p_next_s": 8.989150476190476e-05, "stage.p2p_next_s@i": 0.00013483725714285715,
        "stage.tail_s": 0.006457580314608001, "stage.tail_s@i": 0.009492528740306873,
        "stage.in_flight": 4.0, "stage.in_flight@i": 5.5, "replica.fwd_s": 0.03942812953186829,
        "replica.fwd_s@i": 0.109202656548601, "replica.bwd_s": 0.07131247345683697,
        "replica.bwd_s@i": 0.19001630203136183, "replica.compute_s": 0.09276230203632432,
        "replica.compute_s@i": 0.2407894804847247, "replica.tp_comm_s": 0.017978300952380954,
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
        "iteration_time_s": 3.2422553754368795, "tokens_per_s": 161704.72072371983,
        "mfu": 0.5878170595031822, "hfu": 0.6008601125214587, "num_gpus_used": 8, "memory_ok": True,
        "peak_memory_fraction": 0.10638811588287353, "extrapolated": [],
        "breakdown.compute_s": 3.1579131402325418, "breakdown.tp_comm_s": 0.03451833782857143,
        "breakdown.bubble_s": 0.043599692229714396, "breakdown.p2p_s": 0.0029214739047619927,
        "breakdown.dp_comm_s": 0.00024980129523809527,
        "breakdown.optimizer_s": 0.003052929946051986, "stage.fwd_s": 0.03079854507472543,
        "stage.fwd_s@i": 0.04758453240411253, "stage.bwd_s": 0.06268288899969413,
        "stage.bwd_s@i": 0.09577864351501193, "stage.p2p_next_s": 4.494575238095238e-05,
        "stage.p2p_next_s@i": 4.494575238095238e-05, "stage.tail_s": 0.006337679666988953,
        "stage.tail_s@i": 0.009372628092687825, "stage.in_flight": 3.0, "stage.in_flight@i": 4.0,
        "replica.fwd_s": 0.03079854507472543, "replica.fwd_s@i": 0.08115650706288671,
        "replica.bwd_s": 0.06268288899969413, "replica.bwd_s@i": 0.16197015254564756,
        "replica.compute_s": 0.09276230203632432, "replica.compute_s@i": 0.2407894804847247,
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
        "iteration_time_s": 4.0578361659282, "tokens_per_s": 129203.8363702821,
        "mfu": 0.4696722447668713, "hfu": 0.48009378645347167, "num_gpus_used": 8,
        "memory_ok": True, "peak_memory_fraction": 0.14626057147979737, "extrapolated": [],
        "breakdown.compute_s": 3.1579131402325418, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.015971494819427813, "breakdown.p2p_s": 0.014397622679364638,
        "breakdown.dp_comm_s": 0.0004896025904761905, "breakdown.optimizer_s": 0.006105859892103972,
        "stage.fwd_s": 0.03942812953186829, "stage.fwd_s@i": 0.06268630520411253,
        "stage.bwd_s": 0.07131247345683697, "stage.bwd_s@i": 0.11088041631501193,
        "stage.p2p_next_s": 8.989150476190476e-05, "stage.p2p_next_s@i": 0.00013483725714285715,
        "stage.tail_s": 0.009630410908279034, "stage.tail_s@i": 0.012665359333977907,
        "stage.in_flight": 4.0, "stage.in_flight@i": 5.666666666666667,
        "replica.fwd_s": 0.03942812953186829, "replica.fwd_s@i": 0.109202656548601,
        "replica.bwd_s": 0.07131247345683697, "replica.bwd_s@i": 0.19001630203136183,
        "replica.compute_s": 0.09276230203632432, "replica.compute_s@i": 0.2407894804847247,
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
        "iteration_time_s": 4.072298593798784, "tokens_per_s": 128744.97975133144,
        "mfu": 0.4680042430704584, "hfu": 0.4783887735233609, "num_gpus_used": 8, "memory_ok": True,
        "peak_memory_fraction": 0.11467013359069825, "extrapolated": [],
        "breakdown.compute_s": 3.1579131402325418, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.047914484458286166, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.0003697019428571429, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.03942812953186829, "stage.fwd_s@i": 0.06268630520411253,
        "stage.bwd_s": 0.07131247345683697, "stage.bwd_s@i": 0.11088041631501193,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.006457580314608001, "stage.tail_s@i": 0.009492528740306873,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.03942812953186829,
        "replica.fwd_s@i": 0.109202656548601, "replica.bwd_s": 0.07131247345683697,
        "replica.bwd_s@i": 0.19001630203136183, "replica.compute_s": 0.09276230203632432,
        "replica.compute_s@i": 0.2407894804847247, "replica.tp_comm_s": 0.017978300952380954,
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
        "iteration_time_s": 4.075471424392456, "tokens_per_s": 128644.74938090319,
        "mfu": 0.467639893029505, "hfu": 0.4780163389315688, "num_gpus_used": 8, "memory_ok": False,
        "peak_memory_fraction": 1.6574658274650573, "extrapolated": [],
        "breakdown.compute_s": 3.1579131402325418, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.047914484458286166, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.0004896025904761905, "breakdown.optimizer_s": 0.006105859892103972,
        "stage.fwd_s": 0.03942812953186829, "stage.fwd_s@i": 0.06268630520411253,
        "stage.bwd_s": 0.07131247345683697, "stage.bwd_s@i": 0.11088041631501193,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.009630410908279034, "stage.tail_s@i": 0.012665359333977907,
        "stage.in_flight": 128.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 0.03942812953186829,
        "replica.fwd_s@i": 0.109202656548601, "replica.bwd_s": 0.07131247345683697,
        "replica.bwd_s@i": 0.19001630203136183, "replica.compute_s": 0.09276230203632432,
        "replica.compute_s@i": 0.2407894804847247, "replica.tp_comm_s": 0.017978300952380954,
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
        "iteration_time_s": 68.17638884742911, "tokens_per_s": 30760.678813499264,
        "mfu": 0.09528040382904264, "hfu": 0.11813527961986568, "num_gpus_used": 40,
        "memory_ok": True, "peak_memory_fraction": 0.5655865669250488, "extrapolated": [],
        "breakdown.compute_s": 28.73565652964556, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 1.3511960713499214, "breakdown.p2p_s": 1.0584603482898522,
        "breakdown.dp_comm_s": 1.306116195970447, "breakdown.optimizer_s": 0.0018719764590485533,
        "stage.fwd_s": 1.025645133239899, "stage.fwd_s@i": 2.5885364866238607,
        "stage.bwd_s": 2.339886696090013, "stage.bwd_s@i": 5.913141803022423,
        "stage.p2p_next_s": 0.046700427130434784, "stage.p2p_next_s@i": 0.07783137855072464,
        "stage.tail_s": 1.331195884986204, "stage.tail_s@i": 2.6773275223892448,
        "stage.in_flight": 6.0, "stage.in_flight@i": 10.0, "replica.fwd_s": 1.0986731184458727,
        "replica.fwd_s@i": 6.33550857009623, "replica.bwd_s": 2.5511513696847836,
        "replica.bwd_s@i": 14.68310821974215, "replica.compute_s": 1.8292079810068467,
        "replica.compute_s@i": 9.792777189686, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 2.051068128488408,
        "replica.dp_comm_s@i": 8.957553017900166, "replica.optimizer_s": 0.02352889536496342,
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
        "iteration_time_s": 69.16682157739179, "tokens_per_s": 30320.201972176288,
        "mfu": 0.09391603825138262, "hfu": 0.11644364416762953, "num_gpus_used": 40,
        "memory_ok": False, "peak_memory_fraction": 4.373428153991699, "extrapolated": [],
        "breakdown.compute_s": 28.73565652964556, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 1.8178060930128077, "breakdown.p2p_s": 2.023519842318835,
        "breakdown.dp_comm_s": 0.8648794102412548, "breakdown.optimizer_s": 0.0018719764590485533,
        "stage.fwd_s": 1.025645133239899, "stage.fwd_s@i": 2.5885364866238607,
        "stage.bwd_s": 2.824319752981461, "stage.bwd_s@i": 6.896024599939034,
        "stage.p2p_next_s": 0.046700427130434784, "stage.p2p_next_s@i": 0.07783137855072464,
        "stage.tail_s": 0.31564959099034506, "stage.tail_s@i": 0.6430544582070504,
        "stage.in_flight": 96.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 1.0986731184458727,
        "replica.fwd_s@i": 6.33550857009623, "replica.bwd_s": 3.8982167447353966,
        "replica.bwd_s@i": 20.576223438913765, "replica.compute_s": 1.8292079810068467,
        "replica.compute_s@i": 9.792777189686, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 1.3470653750506134,
        "replica.zero_comm_s@i": 5.893115219171616, "replica.dp_comm_s": 0.3274963477992947,
        "replica.dp_comm_s@i": 1.3456989798790282, "replica.optimizer_s": 0.02352889536496342,
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
        "iteration_time_s": 79.0527141540612, "tokens_per_s": 26528.526217493094,
        "mfu": 0.08217142106379112, "hfu": 0.10188184992950006, "num_gpus_used": 40,
        "memory_ok": True, "peak_memory_fraction": 0.4946951389312744, "extrapolated": [],
        "breakdown.compute_s": 14.66220018511846, "breakdown.tp_comm_s": 20.776998034285715,
        "breakdown.bubble_s": 2.301321559620388, "breakdown.p2p_s": 1.541114095304354,
        "breakdown.dp_comm_s": 39.75737569010266, "breakdown.optimizer_s": 0.01370458962962963,
        "stage.fwd_s": 1.310270141127563, "stage.fwd_s@i": 3.1647933689660457,
        "stage.bwd_s": 3.3409443531649146, "stage.bwd_s@i": 7.936280666872797,
        "stage.p2p_next_s": 0.046700427130434784, "stage.p2p_next_s@i": 0.07783137855072464,
        "stage.tail_s": 0.021656918905914868, "stage.tail_s@i": 0.053483875942951904,
        "stage.in_flight": 6.0, "stage.in_flight@i": 10.0, "replica.fwd_s": 1.8376203532850646,
        "replica.fwd_s@i": 9.586125473379518, "replica.bwd_s": 4.92064830144059,
        "replica.bwd_s@i": 25.192777221956845, "replica.compute_s": 1.8292079810068467,
        "replica.compute_s@i": 9.792777189686, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 3.108444166594998,
        "replica.zero_comm_s@i": 13.760285905497986, "replica.dp_comm_s": 0.0,
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
        "iteration_time_s": 69.65657518027508, "tokens_per_s": 30107.02140569579,
        "mfu": 0.0932557169825993, "hfu": 0.11562493187641562, "num_gpus_used": 40,
        "memory_ok": False, "peak_memory_fraction": 4.562471961975097, "extrapolated": [],
        "breakdown.compute_s": 28.73565652964556, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 1.3511960713499307, "breakdown.p2p_s": 2.023519842318835,
        "breakdown.dp_comm_s": 1.8118831524921861, "breakdown.optimizer_s": 0.01123185875429132,
        "stage.fwd_s": 1.025645133239899, "stage.fwd_s@i": 2.5885364866238607,
        "stage.bwd_s": 2.339886696090013, "stage.bwd_s@i": 5.913141803022423,
        "stage.p2p_next_s": 0.046700427130434784, "stage.p2p_next_s@i": 0.07783137855072464,
        "stage.tail_s": 1.8726071584045283, "stage.tail_s@i": 3.7648462424552385,
        "stage.in_flight": 96.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 1.0986731184458727,
        "replica.fwd_s@i": 6.33550857009623, "replica.bwd_s": 2.5511513696847836,
        "replica.bwd_s@i": 14.68310821974215, "replica.compute_s": 1.8292079810068467,
        "replica.compute_s@i": 9.792777189686, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 3.0645782320080763,
        "replica.dp_comm_s@i": 13.522146102786293, "replica.optimizer_s": 0.07928591067424709,
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
        "iteration_time_s": 21.241903987445447, "tokens_per_s": 49363.559905916976,
        "mfu": 0.11561413218423636, "hfu": 0.1186070499692098, "num_gpus_used": 14,
        "memory_ok": True, "peak_memory_fraction": 0.689031720161438, "extrapolated": [],
        "breakdown.compute_s": 16.311426823731523, "breakdown.tp_comm_s": 0.0,
        "breakdown.bubble_s": 0.05367072495680403, "breakdown.p2p_s": 0.5076979605797105,
        "breakdown.dp_comm_s": 4.346901622177408, "breakdown.optimizer_s": 0.022206856,
        "stage.fwd_s": 0.10174918450695515, "stage.fwd_s@i": 0.12162658723743683,
        "stage.bwd_s": 0.20678758457065416, "stage.bwd_s@i": 0.24058090679697677,
        "stage.p2p_next_s": 0.007810737855072463, "stage.p2p_next_s@i": 0.007810737855072463,
        "stage.tail_s": 4.3733451690829535, "stage.tail_s@i": 4.377581859988498,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.12966843735968328,
        "replica.fwd_s@i": 0.2711724273276018, "replica.bwd_s": 0.26175165319127525,
        "replica.bwd_s@i": 0.5361258822145747, "replica.compute_s": 0.3725632000366728,
        "replica.compute_s@i": 0.7544624302278907, "replica.tp_comm_s": 0.018856890514285712,
        "replica.tp_comm_s@i": 0.05283587931428572, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 6.554910815933598,
        "replica.dp_comm_s@i": 10.910618398458833, "replica.optimizer_s": 0.02525079518587543,
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
        "iteration_time_s": 21.546904300915934, "tokens_per_s": 48664.80981935889,
        "mfu": 0.24895763893260783, "hfu": 0.3283616460318709, "num_gpus_used": 16,
        "memory_ok": False, "peak_memory_fraction": 1.2160619795322418, "extrapolated": [],
        "breakdown.compute_s": 17.21905735950188, "breakdown.tp_comm_s": 3.628161316571429,
        "breakdown.bubble_s": 0.12551656140109557, "breakdown.p2p_s": 0.23470213565217435,
        "breakdown.dp_comm_s": 0.33485227810018253, "breakdown.optimizer_s": 0.004614649689174705,
        "stage.fwd_s": 0.07769821325242224, "stage.fwd_s@i": 0.12180185466335079,
        "stage.bwd_s": 0.21068724405549433, "stage.bwd_s@i": 0.3294524985513885,
        "stage.p2p_next_s": 0.0009168052173913043, "stage.p2p_next_s@i": 0.0009168052173913043,
        "stage.tail_s": 0.4522225489993039, "stage.tail_s@i": 0.7916894767886612,
        "stage.in_flight": 256.0, "stage.in_flight@i": 384.0, "replica.fwd_s": 0.12094942301356601,
        "replica.fwd_s@i": 0.37335198910427836, "replica.bwd_s": 0.3306947777115486,
        "replica.bwd_s@i": 1.0167611947933264, "replica.compute_s": 0.3703509649155908,
        "replica.compute_s@i": 1.1601997789452239, "replica.tp_comm_s": 0.08129323580952381,
        "replica.tp_comm_s@i": 0.22991340495238097, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.5993002854768571,
        "replica.dp_comm_s@i": 1.9947590459796198, "replica.optimizer_s": 0.020497443302131713,
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
        "iteration_time_s": 21.47596897102831, "tokens_per_s": 48825.550149311486,
        "mfu": 0.24977994838321063, "hfu": 0.3294462276735718, "num_gpus_used": 16,
        "memory_ok": True, "peak_memory_fraction": 0.17940475791692734, "extrapolated": [],
        "breakdown.compute_s": 17.21905735950188, "breakdown.tp_comm_s": 3.628161316571429,
        "breakdown.bubble_s": 0.12551656140109405, "breakdown.p2p_s": 0.11826787304347672,
        "breakdown.dp_comm_s": 0.380351210821256, "breakdown.optimizer_s": 0.004614649689174705,
        "stage.fwd_s": 0.07769821325242224, "stage.fwd_s@i": 0.12180185466335079,
        "stage.bwd_s": 0.21068724405549433, "stage.bwd_s@i": 0.3294524985513885,
        "stage.p2p_next_s": 0.0009168052173913043, "stage.p2p_next_s@i": 0.0009168052173913043,
        "stage.tail_s": 0.5722300826553582, "stage.tail_s@i": 0.9571959431657889,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.12094942301356601,
        "replica.fwd_s@i": 0.37335198910427836, "replica.bwd_s": 0.3306947777115486,
        "replica.bwd_s@i": 1.0167611947933264, "replica.compute_s": 0.3703509649155908,
        "replica.compute_s@i": 1.1601997789452239, "replica.tp_comm_s": 0.08129323580952381,
        "replica.tp_comm_s@i": 0.22991340495238097, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.9299950631884057,
        "replica.dp_comm_s@i": 3.0115202407729464, "replica.optimizer_s": 0.020497443302131713,
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
        "iteration_time_s": 19.416918460965974, "tokens_per_s": 54003.21385228881,
        "mfu": 0.28699890281183604, "hfu": 0.3370357082119015, "num_gpus_used": 26,
        "memory_ok": True, "peak_memory_fraction": 0.21729049682617188, "extrapolated": [],
        "breakdown.compute_s": 17.73601865467323, "breakdown.tp_comm_s": 1.1045868105142858,
        "breakdown.bubble_s": 0.12830236321297678, "breakdown.p2p_s": 0.13065476684058147,
        "breakdown.dp_comm_s": 0.3104423842143545, "breakdown.optimizer_s": 0.0069134815105443845,
        "stage.fwd_s": 0.0825793880107383, "stage.fwd_s@i": 0.20830131448805195,
        "stage.bwd_s": 0.19291520539901605, "stage.bwd_s@i": 0.5052911224702541,
        "stage.p2p_next_s": 0.0029327766956521737, "stage.p2p_next_s@i": 0.004406665043478261,
        "stage.tail_s": 0.3915063075849114, "stage.tail_s@i": 1.0964248319945604,
        "stage.in_flight": 10.0, "stage.in_flight@i": 20.0, "replica.fwd_s": 0.0825793880107383,
        "replica.fwd_s@i": 0.4597451674426793, "replica.bwd_s": 0.19291520539901605,
        "replica.bwd_s@i": 1.1300429566127304, "replica.compute_s": 0.24834735897165913,
        "replica.compute_s@i": 1.4477595465316, "replica.tp_comm_s": 0.02714723443809524,
        "replica.tp_comm_s@i": 0.14202857752380954, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.37539888174871716,
        "replica.dp_comm_s@i": 2.4239577552621174, "replica.optimizer_s": 0.016107425836194213,
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
        "iteration_time_s": 77.7865646672246, "tokens_per_s": 13480.16851606532,
        "mfu": 0.07164006172690834, "hfu": 0.08413014371801676, "num_gpus_used": 26,
        "memory_ok": False, "peak_memory_fraction": 3.512522315979004, "extrapolated": [],
        "breakdown.compute_s": 17.73601865467323, "breakdown.tp_comm_s": 1.1045868105142858,
        "breakdown.bubble_s": 0.23422297232431355, "breakdown.p2p_s": 0.2554439802898586,
        "breakdown.dp_comm_s": 58.44937876791236, "breakdown.optimizer_s": 0.0069134815105443845,
        "stage.fwd_s": 0.21425535144347924, "stage.fwd_s@i": 0.5844421535171673,
        "stage.bwd_s": 0.6237956227019238, "stage.bwd_s@i": 1.7068900430314198,
        "stage.p2p_next_s": 0.0029327766956521737, "stage.p2p_next_s@i": 0.004406665043478261,
        "stage.tail_s": 0.016107425836194213, "stage.tail_s@i": 0.038172992408043165,
        "stage.in_flight": 512.0, "stage.in_flight@i": 1280.0, "replica.fwd_s": 0.21425535144347924,
        "replica.fwd_s@i": 1.3248157576645434, "replica.bwd_s": 0.6237956227019238,
        "replica.bwd_s@i": 3.8730788836904115, "replica.compute_s": 0.24834735897165913,
        "replica.compute_s@i": 1.4477595465316, "replica.tp_comm_s": 0.02714723443809524,
        "replica.tp_comm_s@i": 0.14202857752380954, "replica.zero_comm_s": 0.5625563807356486,
        "replica.zero_comm_s@i": 3.6081065172995452, "replica.dp_comm_s": 0.0,
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
        "iteration_time_s": 287.21047137383687, "tokens_per_s": 3650.8975281585745,
        "mfu": 0.3104418452504515, "hfu": 0.3645658089543066, "num_gpus_used": 26,
        "memory_ok": True, "peak_memory_fraction": 0.27353553771972655, "extrapolated": [],
        "breakdown.compute_s": 272.5280761301713, "breakdown.tp_comm_s": 2.086293621028571,
        "breakdown.bubble_s": 1.7420194566278846, "breakdown.p2p_s": 0.26000953368114055,
        "breakdown.dp_comm_s": 10.58715915081739, "breakdown.optimizer_s": 0.0069134815105443845,
        "stage.fwd_s": 1.0998320560501846, "stage.fwd_s@i": 2.7988436484253425,
        "stage.bwd_s": 2.8702698801110484, "stage.bwd_s@i": 7.557584616043415,
        "stage.p2p_next_s": 0.005850553391304348, "stage.p2p_next_s@i": 0.00878333008695652,
        "stage.tail_s": 0.029602458699573633, "stage.tail_s@i": 0.07025374990910374,
        "stage.in_flight": 10.0, "stage.in_flight@i": 20.0, "replica.fwd_s": 1.0998320560501846,
        "replica.fwd_s@i": 6.196866833175658, "replica.bwd_s": 2.8702698801110484,
        "replica.bwd_s@i": 16.932214087908147, "replica.compute_s": 3.8066878033797966,
        "replica.compute_s@i": 22.170080091165723, "replica.tp_comm_s": 0.05127446887619048,
        "replica.tp_comm_s@i": 0.26825715504761904, "replica.zero_comm_s": 0.11213966390524564,
        "replica.zero_comm_s@i": 0.690743674870463, "replica.dp_comm_s": 0.013495032863379422,
        "replica.dp_comm_s@i": 0.06925220677642291, "replica.optimizer_s": 0.016107425836194213,
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
        "iteration_time_s": 0.17957376661166768, "tokens_per_s": 91238.27109686221,
        "mfu": 0.024091764648965126, "hfu": 0.026321515823995882, "num_gpus_used": 10,
        "memory_ok": True, "peak_memory_fraction": 0.09474293390909831, "extrapolated": [
            "stage 1 A100-80G: tp 4 scaled from measured tp 2 (micro-batch 2)",
            "stage 2 A100-80G: micro-batch 4 scaled from measured 2",
        ], "breakdown.compute_s": 0.14400000000000002, "breakdown.tp_comm_s": 0.0,
        "breakdown.bubble_s": 0.016655464506007616, "breakdown.p2p_s": 0.0036140728115941945,
        "breakdown.dp_comm_s": 0.014936839427399179, "breakdown.optimizer_s": 0.0003673898666666667,
        "stage.fwd_s": 0.01604712271601549, "stage.fwd_s@i": 0.03851424543203098,
        "stage.bwd_s": 0.03660834178999213, "stage.bwd_s@i": 0.09045668357998427,
        "stage.p2p_next_s": 0.0010325922318840579, "stage.p2p_next_s@i": 0.001548888347826087,
        "stage.tail_s": 0.017815734574036114, "stage.tail_s@i": 0.035420752421878074,
        "stage.in_flight": 6.0, "stage.in_flight@i": 10.0, "replica.fwd_s": 0.01714712271601549,
        "replica.fwd_s@i": 0.08951561358007747, "replica.bwd_s": 0.03906548464713498,
        "replica.bwd_s@i": 0.21063028037853204, "replica.compute_s": 0.054634641648864765,
        "replica.compute_s@i": 0.29225606538718096, "replica.tp_comm_s": 0.0015779657142857143,
        "replica.tp_comm_s@i": 0.007889828571428571, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.02149223323609483,
        "replica.dp_comm_s@i": 0.10033593420034992, "replica.optimizer_s": 0.0028139490894940793,
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
        "iteration_time_s": 26.57974542369973, "tokens_per_s": 118350.56919676602,
        "mfu": 0.3085027126786431, "hfu": 0.311272448817551, "num_gpus_used": 768,
        "memory_ok": True, "peak_memory_fraction": 0.2209091901779175, "extrapolated": [],
        "breakdown.compute_s": 21.258437201518046, "breakdown.tp_comm_s": 3.7588254720000003,
        "breakdown.bubble_s": 1.1732454960327465, "breakdown.p2p_s": 0.31285988556521704,
        "breakdown.dp_comm_s": 0.07179968744590819, "breakdown.optimizer_s": 0.004577681137812653,
        "stage.fwd_s": 0.42802986826371, "stage.fwd_s@i": 8.83092015163801,
        "stage.bwd_s": 0.7777901885418469, "stage.bwd_s@i": 15.853148679428937,
        "stage.p2p_next_s": 0.014641522434782615, "stage.p2p_next_s@i": 0.30762988799999996,
        "stage.tail_s": 2.55822986310037, "stage.tail_s@i": 55.227764467802025,
        "stage.in_flight": 1176.0, "stage.in_flight@i": 19600.0, "replica.fwd_s": 0.42802986826371,
        "replica.fwd_s@i": 25.63670071838661, "replica.bwd_s": 0.7777901885418469,
        "replica.bwd_s@i": 46.003865661203136, "replica.compute_s": 1.0340963789388917,
        "replica.compute_s@i": 60.241030100123076, "replica.tp_comm_s": 0.17172367786666676,
        "replica.tp_comm_s@i": 11.399536279466668, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 2.3948515700668502,
        "replica.dp_comm_s@i": 150.07405634784038, "replica.optimizer_s": 0.16337829303352383,
        "replica.optimizer_s@i": 10.49277732936498, "replica.params_local": 21902727168.0,
        "replica.params_local@i": 1565823435264.0, "memory.weights": 43805454336.0,
        "memory.weights@i": 3131646870528.0, "memory.grads": 87610908672.0,
        "memory.grads@i": 6263293741056.0, "memory.optimizer": 131416363008.0,
        "memory.optimizer@i": 9394940611584.0, "memory.activations": 251788787712.0,
        "memory.activations@i": 12085861810176.0, "memory.extras": 215041024.0,
        "memory.extras@i": 9245538304.0, "memory.total": 617915769856.0,
        "memory.total@i": 38255152451584.0,
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
