"""TP degrees that do not divide the node size (formulations/stage-assignment.md Sec. 1): TP 2
on 3-GPU nodes, TP 4 on 6-GPU nodes.

A TP group must sit on one node, and the validator accepts any degree up to the node size. The
search used to take only powers of two that *divide* the node size, so on 3-GPU nodes it had
TP 1 alone. On 60 random small instances (benchmarks/bruteforce_agreement.py --validator-space)
a plan with TP 2 on a 3-GPU node beat the search's "optimal" on 3, and on a fourth the search
said "no plan fits" where such a plan exists. Now the degree is any power of two up to the node
size; a node of q GPUs holds floor(q / t) replicas of TP t, so their replicas are chain items of
Sec. 1.3 and a group with them gets the packing rows (the level test of row (4c) is exact for
sizes that divide each other, whatever the node size).

Planted bugs these tests catch (each checked by hand): the old degrees (``gpus_per_node % t``
back in ``parallelism.tp_candidates``): the search says "no plan fits" in the memory test;
``space.budget_packs`` ignoring the TP degree: the packing unit test fails.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from haap_solver.baselines.bruteforce import bruteforce
from haap_solver.cluster import NodeGroup
from haap_solver.devices import DEVICE_PRESETS
from haap_solver.instance import Instance, make_instance
from haap_solver.model import ModelSpec
from haap_solver.search.solve import solve
from haap_solver.search.space import StageConfig, budget_packs, canonical_placement
from haap_solver.training import TrainingSpec
from haap_solver.validate import check_plan


def _three_gpu_nodes(memory_gib: float, num_nodes: int = 2) -> Instance:
    """A small GPT on 3-GPU nodes whose GPUs are so small that only TP 2 holds the layers the
    four stages need: at TP 1 no plan fits (measured: the roomiest TP-1 stage holds 1 layer,
    and 6 GPUs of one layer each leave the embedding and head nowhere)."""
    model = ModelSpec(name="m", num_layers=4, hidden_size=1024, ffn_hidden_size=4096,
                      num_attention_heads=8, vocab_size=8192, seq_length=1024,
                      learned_position_embeddings=True, uses_dropout=True)
    training = TrainingSpec(global_batch_size=4, dtype="fp16", zero_stage=0,
                            recompute=("none",), schedules=("1f1b",),
                            max_micro_batch_share=4, reserved_memory_gib=0.0)
    device = replace(DEVICE_PRESETS["A100-80G"], name="small-a100", memory_gib=memory_gib)
    return make_instance(model=model, training=training, name="tp2-on-3-gpu-nodes",
                         extra_devices={"small-a100": device},
                         node_groups=[NodeGroup(name="g", device="small-a100",
                                                num_nodes=num_nodes, gpus_per_node=3,
                                                nic_gbit_s=100.0)])


@pytest.mark.parametrize("backend", ["highs", "cpsat"])
def test_tp2_on_three_gpu_nodes_where_memory_needs_it(backend: str) -> None:
    inst = _three_gpu_nodes(0.3)
    truth = bruteforce(inst)  # (documented space)
    wider = bruteforce(inst, space="validator")
    assert truth.plan is not None and wider.plan is not None
    assert truth.iteration_time_s == pytest.approx(wider.iteration_time_s, rel=1e-9)
    res = solve(inst, backend=backend, threads=1, seed=0, seed_with_baselines=False,
                mixed=False)
    assert res.status == "optimal" and res.plan is not None
    check_plan(inst, res.plan)
    assert res.iteration_time_s == pytest.approx(truth.iteration_time_s, rel=1e-9)
    assert any(r.tp == 2 for s in res.plan.stages for r in s.replicas)


def _config(tp: int, dp: int) -> StageConfig:
    return StageConfig(node_group="g", device="small-a100", tp=tp, dp=dp, recompute="none",
                       gpus_per_node=3)


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
    placed = canonical_placement(three_nodes, pair)
    assert placed is not None
    loads = [0, 0, 0]
    for stage, config in zip(placed, pair, strict=True):
        (groups,) = stage
        assert sum(pl.replicas for pl in groups) == config.dp
        for pl in groups:
            loads[pl.node] += pl.replicas * config.tp
    assert max(loads) <= 3 and sum(loads) == 6
