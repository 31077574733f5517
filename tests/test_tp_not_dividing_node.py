"""TP degrees that do not divide the node size or are not powers of two (formulations/
stage-assignment.md Sec. 1): TP 2 on 3-GPU nodes, TP 4 on 6-GPU nodes, TP 3 with 12 heads.

A TP group must sit on one node, and the validator accepts any degree up to the node size. The
search used to take only powers of two that *divide* the node size, so on 3-GPU nodes it had
TP 1 alone. On 60 random small instances (benchmarks/bruteforce_agreement.py --validator-space)
a plan with TP 2 on a 3-GPU node beat the search's "optimal" on 3, and on a fourth the search
said "no plan fits" where such a plan exists; with 6, 12 or 24 heads and tight memory (TP 3 and
6 legal) on 5 of 40 such instances, 3 of them "no plan fits". Now the degree is any one up to
the node size that divides the model's heads and FFN width; a node of q GPUs holds floor(q / t)
replicas of TP t. Replicas of a power-of-two degree are chain items of Sec. 1.3 (the level test
of row (4c) is exact for sizes that divide each other, whatever the node size), others pattern
items, one per replica; a group with either gets the packing rows.

Planted bugs these tests catch (each checked by hand): the old degrees (``gpus_per_node % t``
back in ``parallelism.tp_candidates``, or powers of two only): the search says "no plan fits"
in the memory test; ``space.budget_packs`` ignoring the TP degree, or TP-3 replicas as chain
items: the packing unit tests fail.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from haap_solver.baselines.bruteforce import bruteforce
from haap_solver.cluster import NodeGroup
from haap_solver.devices import DEVICE_PRESETS
from haap_solver.errors import HaapError
from haap_solver.instance import Instance, make_instance
from haap_solver.model import ModelSpec
from haap_solver.search.solve import solve
from haap_solver.search.space import (
    StageConfig,
    budget_packs,
    canonical_placement,
    packing_items,
)
from haap_solver.target_rules import target_violations
from haap_solver.training import TrainingSpec
from haap_solver.validate import check_plan


def _three_gpu_nodes(memory_gib: float, num_nodes: int = 2, *, heads: int = 8,
                     gpus_per_node: int = 3) -> Instance:
    """A small GPT on 3-GPU nodes whose GPUs are so small that only TP 2 (8 heads, 0.3 GiB) or
    TP 3 (12 heads, 0.5 GiB) holds the layers the stages need: at TP 1 no plan fits (measured:
    the roomiest TP-1 stage holds 1 layer, and 6 GPUs of one layer each leave the embedding and
    head nowhere)."""
    hidden = 128 * heads
    model = ModelSpec(name="m", num_layers=4, hidden_size=hidden, ffn_hidden_size=4 * hidden,
                      num_attention_heads=heads, vocab_size=8192, seq_length=1024,
                      learned_position_embeddings=True, uses_dropout=True)
    training = TrainingSpec(global_batch_size=4, dtype="fp16", zero_stage=0,
                            recompute=("none",), schedules=("1f1b",),
                            max_micro_batch_share=4, reserved_memory_gib=0.0)
    device = replace(DEVICE_PRESETS["A100-80G"], name="small-a100", memory_gib=memory_gib)
    return make_instance(model=model, training=training, name="tp2-on-3-gpu-nodes",
                         extra_devices={"small-a100": device},
                         node_groups=[NodeGroup(name="g", device="small-a100",
                                                num_nodes=num_nodes,
                                                gpus_per_node=gpus_per_node,
                                                nic_gbit_s=100.0)])


@pytest.mark.parametrize(("backend", "heads", "memory_gib", "tp"),
                         [("highs", 8, 0.3, 2), ("cpsat", 8, 0.3, 2), ("highs", 12, 0.5, 3),
                          ("cpsat", 12, 0.5, 3)])
def test_tp_degree_where_memory_needs_it(backend: str, heads: int, memory_gib: float,
                                          tp: int) -> None:
    """Before: "no plan fits" (TP 1 alone on 3-GPU nodes); the brute force over what the
    validator accepts finds the same optimum as the documented space's."""
    inst = _three_gpu_nodes(memory_gib, heads=heads)
    truth = bruteforce(inst)  # (documented space)
    wider = bruteforce(inst, space="validator")
    assert truth.plan is not None and wider.plan is not None
    assert truth.iteration_time_s == pytest.approx(wider.iteration_time_s, rel=1e-9)
    res = solve(inst, backend=backend, threads=1, seed=0, seed_with_baselines=False,
                mixed=False)
    assert res.status == "optimal" and res.plan is not None
    check_plan(inst, res.plan)
    assert res.iteration_time_s == pytest.approx(truth.iteration_time_s, rel=1e-9)
    assert any(r.tp == tp for s in res.plan.stages for r in s.replicas)


def _config(tp: int, dp: int) -> StageConfig:
    return StageConfig(node_group="g", device="small-a100", tp=tp, dp=dp, recompute="none",
                       gpus_per_node=3)


def _node_loads(inst: Instance, configs: list[StageConfig]) -> list[int]:
    """GPUs per node of group "g" in the canonical placement of `configs`, which must place
    every replica of each."""
    placed = canonical_placement(inst, configs)
    assert placed is not None
    loads = [0] * inst.cluster.group("g").num_nodes
    for stage, config in zip(placed, configs, strict=True):
        (groups,) = stage
        assert sum(pl.replicas for pl in groups) == config.dp
        for pl in groups:
            loads[pl.node] += pl.replicas * config.tp
    return loads


def test_tp2_replicas_take_one_per_three_gpu_node() -> None:
    """Two TP-2 stages of 4 and 2 GPUs fit the 6 GPUs of two 3-GPU nodes by budget, but each
    node holds one TP-2 replica: they need three nodes. The budget alone must not decide, and
    the canonical placement puts one replica on each node."""
    group = _three_gpu_nodes(0.3).cluster.group("g")
    assert not budget_packs(group, 4, 2)
    assert not budget_packs(group, 2, 2)  # (2 of 3 GPUs: rows too, as before)
    assert budget_packs(group, 6, 1)
    two_nodes, three_nodes = _three_gpu_nodes(0.3, 2), _three_gpu_nodes(0.3, 3)
    pair = [_config(2, 2), _config(2, 1)]
    assert canonical_placement(two_nodes, pair) is None
    loads = _node_loads(three_nodes, pair)
    assert max(loads) <= 3 and sum(loads) == 6


def test_tp3_replicas_are_pattern_items() -> None:
    """Replicas of TP 3 on 6-GPU nodes do not tile with powers of two: a TP-3 stage of 9 GPUs,
    two 4-GPU stages and a 1-GPU stage fill the 18 GPUs of three 6-GPU nodes by budget, and
    every size passes the level test of the powers of two, but they do not pack (a node with a
    4 has 2 GPUs left, no room for a 3). So a spread TP-3 stage is pattern items, one per
    replica, its group gets the packing rows, and the exact packer finds the packing on four
    nodes."""
    three = _three_gpu_nodes(0.5, 3, heads=12, gpus_per_node=6)
    four = _three_gpu_nodes(0.5, 4, heads=12, gpus_per_node=6)
    group = three.cluster.group("g")
    assert not budget_packs(group, 9, 3)
    assert budget_packs(group, 12, 3)  # (whole nodes of TP-3 pairs)
    configs = [StageConfig(node_group="g", device="small-a100", tp=tp, dp=dp, recompute="none",
                           gpus_per_node=6) for tp, dp in ((3, 3), (4, 1), (4, 1), (1, 1))]
    assert packing_items(configs[0], group) == ((3, 3, 3), ())
    assert canonical_placement(three, configs) is None
    loads = _node_loads(four, configs)
    assert max(loads) <= 6 and sum(loads) == 18


def test_engines_refuse_tp_groups_that_would_cross_nodes() -> None:
    """Megatron-LM, DeepSpeed, torchtitan and FlagScale give a TP group consecutive ranks, so on
    3-GPU nodes a TP-2 group would straddle two nodes: the plan haap found (each TP group on one
    node) is not what those engines would run, and a target names it (docs/targets.md)."""
    inst = _three_gpu_nodes(0.3)
    plan = bruteforce(inst).plan
    assert plan is not None and any(r.tp == 2 for s in plan.stages for r in s.replicas)
    for target in ("megatron", "deepspeed", "torchtitan", "flagscale"):
        violations = target_violations(inst, plan, target)
        assert any("consecutive ranks" in v for v in violations), target
    engine = replace(inst, training=replace(inst.training, target="megatron"))
    with pytest.raises(HaapError):  # (TP 1 alone: no plan fits, as before for every target)
        solve(engine, backend="highs", threads=1, seed=0, mixed=False)
