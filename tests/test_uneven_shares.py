"""Uneven shares (formulations Sec. 1): a single-type stage's DP degree need not divide the
micro-batch; `b mod d` replicas take `ceil(b / d)` sequences, the others `floor(b / d)`, written
as two replica groups of the node group, which the validator accepts.

Before 2026-12-02 the space held only DP degrees dividing `b`: on 47 of 120 random small
instances aimed at it (benchmarks/gap_probe.py --gap same_group: one node group, a global batch
of few divisors, 5, 7, 11) a valid plan with a stage written as two replica groups of different
shares on one node group beat the search's "optimal", by 1.41x at the median and 5.4x at most
(37 of them one TP degree and two shares, the case closed here).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import pytest

from haap_solver.baselines.bruteforce import bruteforce
from haap_solver.cluster import NodeGroup
from haap_solver.cost.evaluate import CostModel
from haap_solver.devices import DEVICE_PRESETS
from haap_solver.instance import Instance, make_instance
from haap_solver.model import ModelSpec
from haap_solver.plan import Placement, Plan, ReplicaGroup, Stage
from haap_solver.search.solve import solve
from haap_solver.search.space import split_placement
from haap_solver.training import TrainingSpec
from haap_solver.validate import plan_violations


def _prime_batch_instance(*, memory_gib: float = 1.0, batch: int = 5,
                          nodes: int = 1) -> Instance:
    """Four L40S GPUs a node with 1 GiB each, a global batch of 5, at most 2 sequences a
    replica: at micro-batch 5 a stage needs DP 3 or 4, neither of which divides 5 (the
    probe's seed 0)."""
    model = ModelSpec(name="uneven-gpt", num_layers=4, hidden_size=768, ffn_hidden_size=3072,
                      num_attention_heads=8, vocab_size=2048, seq_length=1024,
                      learned_position_embeddings=True, uses_dropout=True)
    training = TrainingSpec(global_batch_size=batch, dtype="fp16", zero_stage=0,
                            recompute=("full",), schedules=("1f1b",), max_micro_batch_share=2,
                            reserved_memory_gib=0.0)
    small = replace(DEVICE_PRESETS["L40S"], name="L40S-1G", memory_gib=memory_gib)
    return make_instance(model=model, training=training, name="uneven-shares",
                         node_groups=[NodeGroup(name="g0", device="L40S-1G", num_nodes=nodes,
                                                gpus_per_node=4, nic_gbit_s=400.0)],
                         extra_devices={"L40S-1G": small})


def _uneven(plan: Plan) -> bool:
    return any(len({r.micro_batch_share for r in s.replicas}) > 1
               and len({r.node_group for r in s.replicas}) == 1 for s in plan.stages)


@pytest.mark.parametrize("backend", ["highs", "cpsat"])
def test_search_finds_the_uneven_plan(backend: str) -> None:
    """The search's optimum is the brute force's over the documented space and over every plan
    the validator accepts (space="validator"), and it has an uneven stage. Fails with the
    uneven configurations taken out of `space.stage_configs` (the search then proves a
    plan 1.67x slower "optimal"; checked)."""
    inst = _prime_batch_instance()
    res = solve(inst, backend=backend, threads=1, seed=0, time_limit_s=60,
                seed_with_baselines=False)
    assert res.status == "optimal" and res.plan is not None
    assert not plan_violations(inst, res.plan)
    documented = bruteforce(inst, mixed=True)
    wider = bruteforce(inst, mixed=True, space="validator")
    assert math.isclose(res.iteration_time_s, documented.iteration_time_s, rel_tol=1e-9)
    assert math.isclose(res.iteration_time_s, wider.iteration_time_s, rel_tol=1e-9)
    assert _uneven(res.plan)


def test_floor_and_ceiling_split_is_the_fastest() -> None:
    """Why one split per (group, TP, DP) is enough: over every split of the micro-batch into
    `d` replicas' shares (written as one replica group per distinct share), on one node and
    spread over two, the floor/ceiling split is the fastest valid one (evaluate(), the
    validator)."""
    inst = _prime_batch_instance(memory_gib=8.0, batch=7, nodes=2)
    cm = CostModel(inst)
    b = 7
    for d in (2, 3, 4):
        best: dict[bool, float] = {}
        even: dict[bool, float] = {}
        for shares in itertools.combinations_with_replacement(range(1, b + 1), d):
            if sum(shares) != b:
                continue
            groups = sorted({s: shares.count(s) for s in shares}.items(), reverse=True)
            for spread in (False, True):
                where = split_placement(
                    (Placement(node=0, replicas=1), Placement(node=1, replicas=d - 1))
                    if spread else (Placement(node=0, replicas=d),),
                    tuple(n for _, n in groups))
                stage = Stage(first_layer=0, num_layers=4, recompute="full", replicas=tuple(
                    ReplicaGroup(node_group="g0", device="L40S-1G", count=n, tp=1,
                                 micro_batch_share=s, placement=pl)
                    for (s, n), pl in zip(groups, where, strict=True)))
                plan = Plan(instance=inst.name, schedule="1f1b", micro_batch_size=b,
                            num_micro_batches=1, stages=(stage,))
                if plan_violations(inst, plan):
                    continue
                t = cm.evaluate(plan).iteration_time_s
                best[spread] = min(best.get(spread, math.inf), t)
                if max(shares) - min(shares) <= 1:
                    even[spread] = t
        assert even and even == best


def test_split_placement_keeps_every_replica_where_it_was() -> None:
    whole = (Placement(node=0, replicas=2), Placement(node=1, replicas=3))
    parts = split_placement(whole, (3, 2))
    assert parts == ((Placement(node=0, replicas=2), Placement(node=1, replicas=1)),
                     (Placement(node=1, replicas=2),))
    assert split_placement(whole, (5,)) == (whole,)


def test_uneven_shares_are_cut_above_32_gpus_and_the_result_says_so() -> None:
    """The size cut (space.UNEVEN_MAX_GPUS): at 32 GPUs a DP degree of 3 at micro-batch 4 is in
    the space, at 64 only the divisors, and the cut is listed in outside_space."""
    from haap_solver.search.outside import outside_space
    from haap_solver.search.space import UNEVEN_MAX_GPUS, stage_configs

    def cluster(nodes: int) -> Instance:
        return make_instance(
            model=ModelSpec(name="m", num_layers=4, hidden_size=512, ffn_hidden_size=2048,
                            num_attention_heads=8, vocab_size=8192, seq_length=512),
            training=TrainingSpec(global_batch_size=64, recompute=("none",)),
            node_groups=[NodeGroup(name="g", device="A100-80G", num_nodes=nodes,
                                   gpus_per_node=8, nic_gbit_s=200.0)])

    small, large = cluster(UNEVEN_MAX_GPUS // 8), cluster(2 * UNEVEN_MAX_GPUS // 8)
    assert any(c.uneven and c.dp == 3 for c in stage_configs(small, 4))
    assert not any(c.uneven for c in stage_configs(large, 4))
    assert not any("uneven" in k for k in outside_space(small, mixed=True))
    assert any("uneven" in k for k in outside_space(large, mixed=True))
