"""Refactoring guard: CostModel.evaluate() must keep returning the same numbers.

EXPECTED below was produced by evaluate() after the calibration's MT-NLG rows moved onto
DeepSpeed's pipeline engine (training.pipeline_exchange "sequential") and the refit that followed
(issue 20, 2026-12-05: network_efficiency 0.702 -> 0.701; the iteration times moved by at most
0.13%, the ZeRO-3 cases most); before that after each device's measured matmul ceiling
(`DeviceType.matmul_efficiency`) replaced the Hopper-only `max_efficiency`, and the refit that
followed (issue 20, 2026-12-02; cross-checked before the refit, with constants equal to the old
ones over the A100's ceiling: every case without an H100 equalled the previous table within 1e-15,
the five with one moved by at most 0.22%; the T4's measured ceiling, 0.369 against the 0.869
assumed before, changed only "t4-a100-mixed-1f1b"); before that after Megatron's cross-entropy was
counted kernel by kernel (38 + 14 bytes per 16-bit logit, were 12 + 12) and the refit that followed
(issue 20, 2026-12-02; unaligned head dimensions, costed in the same change set, occur in no case);
before that after blocking pipeline sends became the default (training.pipeline_p2p = "auto":
Megatron-LM's and DeepSpeed's behaviour) and the refit that followed (issue 20, 2026-12-02;
cross-checked before the refit: the table then equalled the previous code's with "blocking" set,
except the interleaved case, which "auto" keeps overlapped, and the two "overlapped" cases equalled
the previous default's "plan1-1f1b-zero1" and "plan1-gpipe-zero0"); before that the interleaved
1F1B schedule, Megatron's fp32 gradients with bf16, the TP communication overlap and the refit that
followed them; before that the compute model by kernel, the peaks per precision, the NIC sharing by
a stage's own GPUs, the per-pass ZeRO overlap; the first table came from commit 81cae90) with
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
        "iteration_time_s": 4.183817193276248, "tokens_per_s": 125313.31455938747,
        "mfu": 0.45552970717997937, "hfu": 0.46563744057439665, "num_gpus_used": 8,
        "memory_ok": True, "peak_memory_fraction": 0.11467013359069825, "extrapolated": [],
        "breakdown.compute_s": 3.266658346073494, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.04785629569479738, "breakdown.p2p_s": 0.0029214739047619927,
        "breakdown.dp_comm_s": 0.0003697019428571429, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.041026704980222206, "stage.fwd_s@i": 0.06590289126973597,
        "stage.bwd_s": 0.07135485308625948, "stage.bwd_s@i": 0.11100392916842977,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.006457580314608001, "stage.tail_s@i": 0.009492528740306873,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.041026704980222206,
        "replica.fwd_s@i": 0.11565526384876351, "replica.bwd_s": 0.07135485308625948,
        "replica.bwd_s@i": 0.19030208133277035, "replica.compute_s": 0.09440325711410072,
        "replica.compute_s@i": 0.24752786708629576, "replica.tp_comm_s": 0.017978300952380954,
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
        "iteration_time_s": 4.18982160626992, "tokens_per_s": 125133.72865694844,
        "mfu": 0.4548768897691612, "hfu": 0.46497013781994495, "num_gpus_used": 8,
        "memory_ok": False, "peak_memory_fraction": 1.6574658274650573, "extrapolated": [],
        "breakdown.compute_s": 3.266658346073494, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.04785629569479799, "breakdown.p2p_s": 0.0057530563047620805,
        "breakdown.dp_comm_s": 0.0004896025904761905, "breakdown.optimizer_s": 0.006105859892103972,
        "stage.fwd_s": 0.041026704980222206, "stage.fwd_s@i": 0.06590289126973597,
        "stage.bwd_s": 0.07135485308625948, "stage.bwd_s@i": 0.11100392916842977,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.009630410908279034, "stage.tail_s@i": 0.012665359333977907,
        "stage.in_flight": 128.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 0.041026704980222206,
        "replica.fwd_s@i": 0.11565526384876351, "replica.bwd_s": 0.07135485308625948,
        "replica.bwd_s@i": 0.19030208133277035, "replica.compute_s": 0.09440325711410072,
        "replica.compute_s@i": 0.24752786708629576, "replica.tp_comm_s": 0.017978300952380954,
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
        "iteration_time_s": 4.1846377041231815, "tokens_per_s": 125288.7435113945,
        "mfu": 0.45544038832079276, "hfu": 0.46554613982203924, "num_gpus_used": 8,
        "memory_ok": True, "peak_memory_fraction": 0.10638811588287353, "extrapolated": [],
        "breakdown.compute_s": 3.266658346073494, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.048921607836968695, "breakdown.p2p_s": 0.0029214739047619927,
        "breakdown.dp_comm_s": 0.00012490064761904764,
        "breakdown.optimizer_s": 0.003052929946051986, "stage.fwd_s": 0.041026704980222206,
        "stage.fwd_s@i": 0.06590289126973597, "stage.bwd_s": 0.07242016522843091,
        "stage.bwd_s@i": 0.1120692413106012, "stage.p2p_next_s": 4.494575238095238e-05,
        "stage.p2p_next_s@i": 4.494575238095238e-05, "stage.tail_s": 0.006212779019369906,
        "stage.tail_s@i": 0.009247727445068778, "stage.in_flight": 3.0, "stage.in_flight@i": 4.0,
        "replica.fwd_s": 0.041026704980222206, "replica.fwd_s@i": 0.11565526384876351,
        "replica.bwd_s": 0.07242016522843091, "replica.bwd_s@i": 0.19136739347494178,
        "replica.compute_s": 0.09440325711410072, "replica.compute_s@i": 0.24752786708629576,
        "replica.tp_comm_s": 0.017978300952380954, "replica.tp_comm_s@i": 0.058429478095238095,
        "replica.zero_comm_s": 0.0010653121421714284,
        "replica.zero_comm_s@i": 0.0010653121421714284, "replica.dp_comm_s": 0.00012490064761904764,
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
        "iteration_time_s": 4.188411268017735, "tokens_per_s": 125175.86417633046,
        "mfu": 0.4550300576976727, "hfu": 0.465126704386485, "num_gpus_used": 8, "memory_ok": False,
        "peak_memory_fraction": 1.6574658274650573, "extrapolated": [],
        "breakdown.compute_s": 3.266658346073494, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.04998848997914085, "breakdown.p2p_s": 0.0057530563047620805,
        "breakdown.dp_comm_s": 0.0, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.041560146051307915, "stage.fwd_s@i": 0.06643633234082169,
        "stage.bwd_s": 0.07295360629951662, "stage.bwd_s@i": 0.11260268238168691,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.006087878371750858, "stage.tail_s@i": 0.00912282679744973,
        "stage.in_flight": 128.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 0.041560146051307915,
        "replica.fwd_s@i": 0.11618870491984923, "replica.bwd_s": 0.07295360629951662,
        "replica.bwd_s@i": 0.1919008345460275, "replica.compute_s": 0.09440325711410072,
        "replica.compute_s@i": 0.24752786708629576, "replica.tp_comm_s": 0.017978300952380954,
        "replica.tp_comm_s@i": 0.058429478095238095, "replica.zero_comm_s": 0.002132194284342857,
        "replica.zero_comm_s@i": 0.002132194284342857, "replica.dp_comm_s": 0.0,
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
        "iteration_time_s": 4.188539062076248, "tokens_per_s": 125172.04500896115,
        "mfu": 0.4550161745424826, "hfu": 0.46511251317843005, "num_gpus_used": 8,
        "memory_ok": True, "peak_memory_fraction": 0.11467013359069825, "extrapolated": [],
        "breakdown.compute_s": 3.266658346073494, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.04785629569479738, "breakdown.p2p_s": 0.0029214739047619927,
        "breakdown.dp_comm_s": 0.005091570742857142, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.041026704980222206, "stage.fwd_s@i": 0.06590289126973597,
        "stage.bwd_s": 0.07135485308625948, "stage.bwd_s@i": 0.11100392916842977,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.011179449114608001, "stage.tail_s@i": 0.014214397540306872,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.041026704980222206,
        "replica.fwd_s@i": 0.11565526384876351, "replica.bwd_s": 0.07135485308625948,
        "replica.bwd_s@i": 0.19030208133277035, "replica.compute_s": 0.09440325711410072,
        "replica.compute_s@i": 0.24752786708629576, "replica.tp_comm_s": 0.017978300952380954,
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
        "iteration_time_s": 4.15705746302885, "tokens_per_s": 126119.9790146758,
        "mfu": 0.4584620342387761, "hfu": 0.46863483293995245, "num_gpus_used": 8,
        "memory_ok": True, "peak_memory_fraction": 0.12473788261413574, "extrapolated": [],
        "breakdown.compute_s": 3.266658346073494, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.02392814784739961, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.0003697019428571429, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.041026704980222206, "stage.fwd_s@i": 0.06590289126973597,
        "stage.bwd_s": 0.07135485308625948, "stage.bwd_s@i": 0.11100392916842977,
        "stage.p2p_next_s": 8.989150476190476e-05, "stage.p2p_next_s@i": 0.00013483725714285715,
        "stage.tail_s": 0.006457580314608001, "stage.tail_s@i": 0.009492528740306873,
        "stage.in_flight": 4.0, "stage.in_flight@i": 5.5, "replica.fwd_s": 0.041026704980222206,
        "replica.fwd_s@i": 0.11565526384876351, "replica.bwd_s": 0.07135485308625948,
        "replica.bwd_s@i": 0.19030208133277035, "replica.compute_s": 0.09440325711410072,
        "replica.compute_s@i": 0.24752786708629576, "replica.tp_comm_s": 0.017978300952380954,
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
        "iteration_time_s": 3.3509423925143436, "tokens_per_s": 156459.86668443028,
        "mfu": 0.568751353411855, "hfu": 0.5813713581171237, "num_gpus_used": 8, "memory_ok": True,
        "peak_memory_fraction": 0.10638811588287353, "extrapolated": [],
        "breakdown.compute_s": 3.266658346073494, "breakdown.tp_comm_s": 0.03451833782857143,
        "breakdown.bubble_s": 0.04354150346622633, "breakdown.p2p_s": 0.0029214739047619927,
        "breakdown.dp_comm_s": 0.00024980129523809527,
        "breakdown.optimizer_s": 0.003052929946051986, "stage.fwd_s": 0.032397120523079345,
        "stage.fwd_s@i": 0.05080111846973597, "stage.bwd_s": 0.06272526862911662,
        "stage.bwd_s@i": 0.09590215636842978, "stage.p2p_next_s": 4.494575238095238e-05,
        "stage.p2p_next_s@i": 4.494575238095238e-05, "stage.tail_s": 0.006337679666988953,
        "stage.tail_s@i": 0.009372628092687825, "stage.in_flight": 3.0, "stage.in_flight@i": 4.0,
        "replica.fwd_s": 0.032397120523079345, "replica.fwd_s@i": 0.08760911436304923,
        "replica.bwd_s": 0.06272526862911662, "replica.bwd_s@i": 0.16225593184705606,
        "replica.compute_s": 0.09440325711410072, "replica.compute_s@i": 0.24752786708629576,
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
        "iteration_time_s": 4.166561975514656, "tokens_per_s": 125832.28164636616,
        "mfu": 0.457416218010841, "hfu": 0.46756581113081175, "num_gpus_used": 8, "memory_ok": True,
        "peak_memory_fraction": 0.14626057147979737, "extrapolated": [],
        "breakdown.compute_s": 3.266658346073494, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.01595209856493194, "breakdown.p2p_s": 0.014397622679364638,
        "breakdown.dp_comm_s": 0.0004896025904761905, "breakdown.optimizer_s": 0.006105859892103972,
        "stage.fwd_s": 0.041026704980222206, "stage.fwd_s@i": 0.06590289126973597,
        "stage.bwd_s": 0.07135485308625948, "stage.bwd_s@i": 0.11100392916842977,
        "stage.p2p_next_s": 8.989150476190476e-05, "stage.p2p_next_s@i": 0.00013483725714285715,
        "stage.tail_s": 0.009630410908279034, "stage.tail_s@i": 0.012665359333977907,
        "stage.in_flight": 4.0, "stage.in_flight@i": 5.666666666666667,
        "replica.fwd_s": 0.041026704980222206, "replica.fwd_s@i": 0.11565526384876351,
        "replica.bwd_s": 0.07135485308625948, "replica.bwd_s@i": 0.19030208133277035,
        "replica.compute_s": 0.09440325711410072, "replica.compute_s@i": 0.24752786708629576,
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
        "iteration_time_s": 4.180985610876248, "tokens_per_s": 125398.18329824868,
        "mfu": 0.4558382157522578, "hfu": 0.4659527946330381, "num_gpus_used": 8, "memory_ok": True,
        "peak_memory_fraction": 0.11467013359069825, "extrapolated": [],
        "breakdown.compute_s": 3.266658346073494, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.04785629569479766, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.0003697019428571429, "breakdown.optimizer_s": 0.003052929946051986,
        "stage.fwd_s": 0.041026704980222206, "stage.fwd_s@i": 0.06590289126973597,
        "stage.bwd_s": 0.07135485308625948, "stage.bwd_s@i": 0.11100392916842977,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.006457580314608001, "stage.tail_s@i": 0.009492528740306873,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.041026704980222206,
        "replica.fwd_s@i": 0.11565526384876351, "replica.bwd_s": 0.07135485308625948,
        "replica.bwd_s@i": 0.19030208133277035, "replica.compute_s": 0.09440325711410072,
        "replica.compute_s@i": 0.24752786708629576, "replica.tp_comm_s": 0.017978300952380954,
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
        "iteration_time_s": 4.184158441469919, "tokens_per_s": 125303.09435792173,
        "mfu": 0.4554925554583337, "hfu": 0.46559946449444545, "num_gpus_used": 8,
        "memory_ok": False, "peak_memory_fraction": 1.6574658274650573, "extrapolated": [],
        "breakdown.compute_s": 3.266658346073494, "breakdown.tp_comm_s": 0.8629584457142857,
        "breakdown.bubble_s": 0.04785629569479766, "breakdown.p2p_s": 8.989150476190476e-05,
        "breakdown.dp_comm_s": 0.0004896025904761905, "breakdown.optimizer_s": 0.006105859892103972,
        "stage.fwd_s": 0.041026704980222206, "stage.fwd_s@i": 0.06590289126973597,
        "stage.bwd_s": 0.07135485308625948, "stage.bwd_s@i": 0.11100392916842977,
        "stage.p2p_next_s": 4.494575238095238e-05, "stage.p2p_next_s@i": 4.494575238095238e-05,
        "stage.tail_s": 0.009630410908279034, "stage.tail_s@i": 0.012665359333977907,
        "stage.in_flight": 128.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 0.041026704980222206,
        "replica.fwd_s@i": 0.11565526384876351, "replica.bwd_s": 0.07135485308625948,
        "replica.bwd_s@i": 0.19030208133277035, "replica.compute_s": 0.09440325711410072,
        "replica.compute_s@i": 0.24752786708629576, "replica.tp_comm_s": 0.017978300952380954,
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
        "iteration_time_s": 69.46501591511384, "tokens_per_s": 30190.04562761084,
        "mfu": 0.09351288235400153, "hfu": 0.11594378341186523, "num_gpus_used": 40,
        "memory_ok": True, "peak_memory_fraction": 0.5655865669250488, "extrapolated": [],
        "breakdown.compute_s": 30.06254843340094, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 1.3531000741611057, "breakdown.p2p_s": 1.0418555211412293,
        "breakdown.dp_comm_s": 1.2825521842372296, "breakdown.optimizer_s": 0.0018719764590485533,
        "stage.fwd_s": 1.0651786836397692, "stage.fwd_s@i": 2.70639700689427,
        "stage.bwd_s": 2.3437225204936976, "stage.bwd_s@i": 5.9210219502638815,
        "stage.p2p_next_s": 0.04596786122681883, "stage.p2p_next_s@i": 0.07661043537803139,
        "stage.tail_s": 1.3076318732529866, "stage.tail_s@i": 2.63019949892281,
        "stage.in_flight": 6.0, "stage.in_flight@i": 10.0, "replica.fwd_s": 1.138124806947361,
        "replica.fwd_s@i": 6.609555585555622, "replica.bwd_s": 2.554741919708679,
        "replica.bwd_s@i": 14.697676460822176, "replica.compute_s": 1.8722502195322306,
        "replica.compute_s@i": 10.081392446225419, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 2.004114284960011,
        "replica.dp_comm_s@i": 8.746347811991399, "replica.optimizer_s": 0.02352889536496342,
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
        "iteration_time_s": 70.49236498063031, "tokens_per_s": 29750.058755671616,
        "mfu": 0.0921500344437841, "hfu": 0.1142540296694088, "num_gpus_used": 40,
        "memory_ok": False, "peak_memory_fraction": 4.373428153991699, "extrapolated": [],
        "breakdown.compute_s": 30.06254843340094, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 1.8191596916190855, "breakdown.p2p_s": 1.9917753198288208,
        "breakdown.dp_comm_s": 0.8939218336081365, "breakdown.optimizer_s": 0.0018719764590485533,
        "stage.fwd_s": 1.0651786836397692, "stage.fwd_s@i": 2.70639700689427,
        "stage.bwd_s": 2.8287530974830877, "stage.bwd_s@i": 6.906002556798548,
        "stage.p2p_next_s": 0.04596786122681883, "stage.p2p_next_s@i": 0.07661043537803139,
        "stage.tail_s": 0.30795843666579836, "stage.tail_s@i": 0.627672149557957,
        "stage.in_flight": 96.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 1.138124806947361,
        "replica.fwd_s@i": 6.609555585555622, "replica.bwd_s": 3.8907142444713996,
        "replica.bwd_s@i": 20.548332228023135, "replica.compute_s": 1.8722502195322306,
        "replica.compute_s@i": 10.081392446225419, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 1.3359723247627202,
        "replica.zero_comm_s@i": 5.850655767200957, "replica.dp_comm_s": 0.31932003424741917,
        "replica.dp_comm_s@i": 1.3125085664441973, "replica.optimizer_s": 0.02352889536496342,
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
        "iteration_time_s": 78.72711536927741, "tokens_per_s": 26638.24262025985,
        "mfu": 0.08251126477223683, "hfu": 0.10230321182461041, "num_gpus_used": 40,
        "memory_ok": True, "peak_memory_fraction": 0.4946951389312744, "extrapolated": [],
        "breakdown.compute_s": 14.644297744273745, "breakdown.tp_comm_s": 20.776998034285715,
        "breakdown.bubble_s": 2.348036924067424, "breakdown.p2p_s": 1.5169394204850217,
        "breakdown.dp_comm_s": 39.42713865653589, "breakdown.optimizer_s": 0.01370458962962963,
        "stage.fwd_s": 1.3489125016101786, "stage.fwd_s@i": 3.281322799113032,
        "stage.bwd_s": 3.338137998553977, "stage.bwd_s@i": 7.9322305152182695,
        "stage.p2p_next_s": 0.04596786122681883, "stage.p2p_next_s@i": 0.07661043537803139,
        "stage.tail_s": 0.021656918905914868, "stage.tail_s@i": 0.053483875942951904,
        "stage.in_flight": 6.0, "stage.in_flight@i": 10.0, "replica.fwd_s": 1.8696881121461664,
        "replica.fwd_s@i": 9.830402719901596, "replica.bwd_s": 4.897969673359692,
        "replica.bwd_s@i": 25.097598940227538, "replica.compute_s": 1.8722502195322306,
        "replica.compute_s@i": 10.081392446225419, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 3.0747910588498186,
        "replica.zero_comm_s@i": 13.620769613751335, "replica.dp_comm_s": 0.0,
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
        "iteration_time_s": 70.9221261239141, "tokens_per_s": 29569.784700699565,
        "mfu": 0.09159164023987927, "hfu": 0.11356169365103119, "num_gpus_used": 40,
        "memory_ok": False, "peak_memory_fraction": 4.562471961975097, "extrapolated": [],
        "breakdown.compute_s": 30.06254843340094, "breakdown.tp_comm_s": 35.72308772571429,
        "breakdown.bubble_s": 1.3531000741611168, "breakdown.p2p_s": 1.9917753198288208,
        "breakdown.dp_comm_s": 1.7803827120546334, "breakdown.optimizer_s": 0.01123185875429132,
        "stage.fwd_s": 1.0651786836397692, "stage.fwd_s@i": 2.70639700689427,
        "stage.bwd_s": 2.3437225204936976, "stage.bwd_s@i": 5.9210219502638815,
        "stage.p2p_next_s": 0.04596786122681883, "stage.p2p_next_s@i": 0.07661043537803139,
        "stage.tail_s": 1.8411067179669756, "stage.tail_s@i": 3.701845361580133,
        "stage.in_flight": 96.0, "stage.in_flight@i": 192.0, "replica.fwd_s": 1.138124806947361,
        "replica.fwd_s@i": 6.609555585555622, "replica.bwd_s": 2.554741919708679,
        "replica.bwd_s@i": 14.697676460822176, "replica.compute_s": 1.8722502195322306,
        "replica.compute_s@i": 10.081392446225419, "replica.tp_comm_s": 1.8206165071238094,
        "replica.tp_comm_s@i": 11.22583960015238, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 3.0017515310710094,
        "replica.dp_comm_s@i": 13.239513038538508, "replica.optimizer_s": 0.07928591067424709,
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
        "iteration_time_s": 40.72168831679043, "tokens_per_s": 25749.816457576726,
        "mfu": 0.06030850873235454, "hfu": 0.06186972278949643, "num_gpus_used": 14,
        "memory_ok": True, "peak_memory_fraction": 0.689031720161438, "extrapolated": [],
        "breakdown.compute_s": 36.07844653506554, "breakdown.tp_comm_s": 0.0,
        "breakdown.bubble_s": 0.055379504680673874, "breakdown.p2p_s": 0.49976182995720697,
        "breakdown.dp_comm_s": 4.0658935910870095, "breakdown.optimizer_s": 0.022206856,
        "stage.fwd_s": 0.2021448496337024, "stage.fwd_s@i": 0.22364347710423294,
        "stage.bwd_s": 0.4169603821573672, "stage.bwd_s@i": 0.4508412593675072,
        "stage.p2p_next_s": 0.007688643537803138, "stage.p2p_next_s@i": 0.007688643537803138,
        "stage.tail_s": 4.09229132840443, "stage.tail_s@i": 4.0964822097218505,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.23003043586755617,
        "replica.fwd_s@i": 0.4751725404423196, "replica.bwd_s": 0.47185732184094176,
        "replica.bwd_s@i": 0.9565794584185889, "replica.compute_s": 0.6830308671942122,
        "replica.compute_s@i": 1.3789161195466229, "replica.tp_comm_s": 0.018856890514285712,
        "replica.tp_comm_s@i": 0.05283587931428572, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 6.2384627099483705,
        "replica.dp_comm_s@i": 10.313024832618833, "replica.optimizer_s": 0.02525079518587543,
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
        "iteration_time_s": 21.768685456254296, "tokens_per_s": 48169.00873997133,
        "mfu": 0.2464212380597236, "hfu": 0.32501627061303356, "num_gpus_used": 16,
        "memory_ok": False, "peak_memory_fraction": 1.2160619795322418, "extrapolated": [],
        "breakdown.compute_s": 17.450628748788816, "breakdown.tp_comm_s": 3.628161316571429,
        "breakdown.bubble_s": 0.12538136653445164, "breakdown.p2p_s": 0.23103930613409318,
        "breakdown.dp_comm_s": 0.3288600685363326, "breakdown.optimizer_s": 0.004614649689174705,
        "stage.fwd_s": 0.07947343732207056, "stage.fwd_s@i": 0.12538611684186105,
        "stage.bwd_s": 0.21058597659800632, "stage.bwd_s@i": 0.32935134446384273,
        "stage.p2p_next_s": 0.0009024972895863053, "stage.p2p_next_s@i": 0.0009024972895863053,
        "stage.tail_s": 0.443498016764486, "stage.tail_s@i": 0.7769727349899933,
        "stage.in_flight": 256.0, "stage.in_flight@i": 384.0, "replica.fwd_s": 0.1237506944970484,
        "replica.fwd_s@i": 0.38652612674576114, "replica.bwd_s": 0.33052980614466365,
        "replica.bwd_s@i": 1.01658117683426, "replica.compute_s": 0.3729872648321882,
        "replica.compute_s@i": 1.1731938986276402, "replica.tp_comm_s": 0.08129323580952381,
        "replica.tp_comm_s@i": 0.22991340495238097, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.5848728380778756,
        "replica.dp_comm_s@i": 1.9476859788480985, "replica.optimizer_s": 0.020497443302131713,
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
        "iteration_time_s": 21.699591335316633, "tokens_per_s": 48322.38468442565,
        "mfu": 0.24720587305865085, "hfu": 0.32605116169284376, "num_gpus_used": 16,
        "memory_ok": True, "peak_memory_fraction": 0.17940475791692734, "extrapolated": [],
        "breakdown.compute_s": 17.450628748788816, "breakdown.tp_comm_s": 3.628161316571429,
        "breakdown.bubble_s": 0.1253813665344526, "breakdown.p2p_s": 0.1164221503566329,
        "breakdown.dp_comm_s": 0.37438310337612934, "breakdown.optimizer_s": 0.004614649689174705,
        "stage.fwd_s": 0.07947343732207056, "stage.fwd_s@i": 0.12538611684186105,
        "stage.bwd_s": 0.21058597659800632, "stage.bwd_s@i": 0.32935134446384273,
        "stage.p2p_next_s": 0.0009024972895863053, "stage.p2p_next_s@i": 0.0009024972895863053,
        "stage.tail_s": 0.5634418463111432, "stage.tail_s@i": 0.9424395993764474,
        "stage.in_flight": 3.0, "stage.in_flight@i": 4.0, "replica.fwd_s": 0.1237506944970484,
        "replica.fwd_s@i": 0.38652612674576114, "replica.bwd_s": 0.33052980614466365,
        "replica.bwd_s@i": 1.01658117683426, "replica.compute_s": 0.3729872648321882,
        "replica.compute_s@i": 1.1731938986276402, "replica.tp_comm_s": 0.08129323580952381,
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
        "iteration_time_s": 19.38223181973389, "tokens_per_s": 54099.85855872384,
        "mfu": 0.2875125189974448, "hfu": 0.33763887077862115, "num_gpus_used": 26,
        "memory_ok": True, "peak_memory_fraction": 0.21729049682617188, "extrapolated": [],
        "breakdown.compute_s": 17.709078773363466, "breakdown.tp_comm_s": 1.1045868105142858,
        "breakdown.bubble_s": 0.1290224203309316, "breakdown.p2p_s": 0.12862494881597608,
        "breakdown.dp_comm_s": 0.3040053851986859, "breakdown.optimizer_s": 0.0069134815105443845,
        "stage.fwd_s": 0.0832925463911667, "stage.fwd_s@i": 0.2113091290179665,
        "stage.bwd_s": 0.19271163631380547, "stage.bwd_s@i": 0.5048394748717216,
        "stage.p2p_next_s": 0.0028869913266761768, "stage.p2p_next_s@i": 0.004337986990014265,
        "stage.tail_s": 0.3829734250221946, "stage.tail_s@i": 1.0729220678534583,
        "stage.in_flight": 10.0, "stage.in_flight@i": 20.0, "replica.fwd_s": 0.0832925463911667,
        "replica.fwd_s@i": 0.4673422942715661, "replica.bwd_s": 0.19271163631380547,
        "replica.bwd_s@i": 1.1290951519875538, "replica.compute_s": 0.24885694826687693,
        "replica.compute_s@i": 1.4544088687353103, "replica.tp_comm_s": 0.02714723443809524,
        "replica.tp_comm_s@i": 0.14202857752380954, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.36686599918600044,
        "replica.dp_comm_s@i": 2.370515227964245, "replica.optimizer_s": 0.016107425836194213,
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
        "iteration_time_s": 77.00677475463911, "tokens_per_s": 13616.672082956322,
        "mfu": 0.07236550695753437, "hfu": 0.08498206665109252, "num_gpus_used": 26,
        "memory_ok": False, "peak_memory_fraction": 3.512522315979004, "extrapolated": [],
        "breakdown.compute_s": 17.709078773363466, "breakdown.tp_comm_s": 1.1045868105142858,
        "breakdown.bubble_s": 0.23440757679523377, "breakdown.p2p_s": 0.25147591497860683,
        "breakdown.dp_comm_s": 57.70031219747697, "breakdown.optimizer_s": 0.0069134815105443845,
        "stage.fwd_s": 0.2136221833845143, "stage.fwd_s@i": 0.5833036978883644,
        "stage.bwd_s": 0.618550844827542, "stage.bwd_s@i": 1.691955167527662,
        "stage.p2p_next_s": 0.0028869913266761768, "stage.p2p_next_s@i": 0.004337986990014265,
        "stage.tail_s": 0.016107425836194213, "stage.tail_s@i": 0.038172992408043165,
        "stage.in_flight": 512.0, "stage.in_flight@i": 1280.0, "replica.fwd_s": 0.2136221833845143,
        "replica.fwd_s@i": 1.3226667268960646, "replica.bwd_s": 0.618550844827542,
        "replica.bwd_s@i": 3.8387638129279025, "replica.compute_s": 0.24885694826687693,
        "replica.compute_s@i": 1.4544088687353103, "replica.tp_comm_s": 0.02714723443809524,
        "replica.tp_comm_s@i": 0.14202857752380954, "replica.zero_comm_s": 0.5561688455070841,
        "replica.zero_comm_s@i": 3.564993093564847, "replica.dp_comm_s": 0.0,
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
        "iteration_time_s": 287.27920298828366, "tokens_per_s": 3650.0240500972322,
        "mfu": 0.31036757196859205, "hfu": 0.3644785865018601, "num_gpus_used": 26,
        "memory_ok": True, "peak_memory_fraction": 0.27353553771972655, "extrapolated": [],
        "breakdown.compute_s": 272.0970380292151, "breakdown.tp_comm_s": 2.086293621028571,
        "breakdown.bubble_s": 1.741228612265782, "breakdown.p2p_s": 0.25594989763197906,
        "breakdown.dp_comm_s": 11.091779346631666, "breakdown.optimizer_s": 0.0069134815105443845,
        "stage.fwd_s": 1.0987490795141845, "stage.fwd_s@i": 2.7969946384125572,
        "stage.bwd_s": 2.8711377252200796, "stage.bwd_s@i": 7.560276679424092,
        "stage.p2p_next_s": 0.005758982653352354, "stage.p2p_next_s@i": 0.008645973980028532,
        "stage.tail_s": 0.029420523989325334, "stage.tail_s@i": 0.06978071966245816,
        "stage.in_flight": 10.0, "stage.in_flight@i": 20.0, "replica.fwd_s": 1.0987490795141845,
        "replica.fwd_s@i": 6.193485756209303, "replica.bwd_s": 2.8711377252200796,
        "replica.bwd_s@i": 16.93855458783212, "replica.compute_s": 3.801211947787441,
        "replica.compute_s@i": 22.14017640326668, "replica.tp_comm_s": 0.05127446887619048,
        "replica.tp_comm_s@i": 0.26825715504761904, "replica.zero_comm_s": 0.1174003880706326,
        "replica.zero_comm_s@i": 0.7236067857271232, "replica.dp_comm_s": 0.013313098153131123,
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
        "iteration_time_s": 0.17924427270408927, "tokens_per_s": 91405.98889342486,
        "mfu": 0.024136051083085964, "hfu": 0.02636990107486832, "num_gpus_used": 10,
        "memory_ok": True, "peak_memory_fraction": 0.09474293390909831, "extrapolated": [
            "stage 1 A100-80G: tp 4 scaled from measured tp 2 (micro-batch 2)",
            "stage 2 A100-80G: micro-batch 4 scaled from measured 2",
        ], "breakdown.compute_s": 0.14400000000000002, "breakdown.tp_comm_s": 0.0,
        "breakdown.bubble_s": 0.01665224739038628, "breakdown.p2p_s": 0.0035606565477888726,
        "breakdown.dp_comm_s": 0.014663978899247445, "breakdown.optimizer_s": 0.0003673898666666667,
        "stage.fwd_s": 0.016046047915881937, "stage.fwd_s@i": 0.03851209583176387,
        "stage.bwd_s": 0.036606199474504345, "stage.bwd_s@i": 0.0904523989490087,
        "stage.p2p_next_s": 0.0010173304422253923, "stage.p2p_next_s@i": 0.0015259956633380885,
        "stage.tail_s": 0.01754287404588438, "stage.tail_s@i": 0.034875031365574606,
        "stage.in_flight": 6.0, "stage.in_flight@i": 10.0, "replica.fwd_s": 0.017146047915881937,
        "replica.fwd_s@i": 0.08951023957940968, "replica.bwd_s": 0.0390633423316472,
        "replica.bwd_s@i": 0.21061956880109312, "replica.compute_s": 0.05463142453324342,
        "replica.compute_s@i": 0.29223997980907424, "replica.tp_comm_s": 0.0015779657142857143,
        "replica.tp_comm_s@i": 0.007889828571428571, "replica.zero_comm_s": 0.0,
        "replica.zero_comm_s@i": 0.0, "replica.dp_comm_s": 0.021081871286123335,
        "replica.dp_comm_s@i": 0.09842162587231222, "replica.optimizer_s": 0.0028139490894940793,
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
        "iteration_time_s": 26.537607319046433, "tokens_per_s": 118538.49377529467,
        "mfu": 0.3089925729526456, "hfu": 0.31176670705516346, "num_gpus_used": 768,
        "memory_ok": True, "peak_memory_fraction": 0.2209091901779175, "extrapolated": [],
        "breakdown.compute_s": 21.224401478023168, "breakdown.tp_comm_s": 3.7588254720000003,
        "breakdown.bubble_s": 1.1714109423867443, "breakdown.p2p_s": 0.30801808279600684,
        "breakdown.dp_comm_s": 0.07037366270270196, "breakdown.optimizer_s": 0.004577681137812653,
        "stage.fwd_s": 0.42745485186247606, "stage.fwd_s@i": 8.819894718912355,
        "stage.bwd_s": 0.776486333948772, "stage.bwd_s@i": 15.823056573358988,
        "stage.p2p_next_s": 0.014415457175463615, "stage.p2p_next_s@i": 0.30289110231098426,
        "stage.tail_s": 2.5097565716953065, "stage.tail_s@i": 54.199241651956214,
        "stage.in_flight": 1176.0, "stage.in_flight@i": 19600.0,
        "replica.fwd_s": 0.42745485186247606, "replica.fwd_s@i": 25.604774453012116,
        "replica.bwd_s": 0.776486333948772, "replica.bwd_s@i": 45.9161970521794,
        "replica.compute_s": 1.0322175079445808, "replica.compute_s@i": 60.12143522572484,
        "replica.tp_comm_s": 0.17172367786666676, "replica.tp_comm_s@i": 11.399536279466668,
        "replica.zero_comm_s": 0.0, "replica.zero_comm_s@i": 0.0,
        "replica.dp_comm_s": 2.346378278661786, "replica.dp_comm_s@i": 147.0854344831131,
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
