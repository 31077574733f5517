"""Empty end stages (formulations Sec. 1.2): a first stage that holds only the embedding, a last
stage that holds only the LM head, searched when training.empty_end_stages is on.

* Their bounds are valid: on tiny instances, every bound of every sub-problem with an empty end
  stage is at most the least iteration time over that sub-problem's plans, enumerated.
* The search finds them and proves them: where a head-only last stage is the fastest plan, the
  search with the option returns it as optimal, faster than the best plan without it.
* Off by default, and then no plan has an empty stage.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import replace

import pytest
from bound_sweep import sizes_and_schedules
from random_instances import random_instance
from tiny_instances import tiny_instance

from haap_solver.baselines.bruteforce import bruteforce
from haap_solver.cluster import NodeGroup
from haap_solver.cost.evaluate import CostModel
from haap_solver.devices import DEVICE_PRESETS
from haap_solver.instance import Instance, make_instance
from haap_solver.model import ModelSpec
from haap_solver.search.formulation import SubProblem
from haap_solver.search.solve import SearchState, solve
from haap_solver.search.space import build_plan, micro_batch_candidates, stage_configs
from haap_solver.search.subproblem_bounds import (
    granular_lower_bound,
    lower_bound,
    strong_lower_bound,
)
from haap_solver.search.subproblems import _stage_count_cap, _subproblems
from haap_solver.training import TrainingSpec
from haap_solver.validate import check_plan, plan_violations


def _with_empty_ends(instance: Instance, on: bool = True) -> Instance:
    return replace(instance, training=replace(instance.training, empty_end_stages=on))


def head_only_wins() -> Instance:
    """Seed 11 of the agreement tests' generator: 2 layers on 3 GPUs of three device types,
    where a head-only last stage beats every plan without one by about a fifth."""
    return random_instance(11)


def _layer_splits(total: int, parts: int, empty_first: bool,
                  empty_last: bool) -> Iterator[list[int]]:
    for split in itertools.product(range(total + 1), repeat=parts):
        if sum(split) != total:
            continue
        if all(n >= (0 if (i == 0 and empty_first) or (i == parts - 1 and empty_last) else 1)
               for i, n in enumerate(split)):
            yield list(split)


def family_optima(instance: Instance, *, mixed: bool = False,
                  with_mixed_stage: bool = False) -> dict[SubProblem, float]:
    """The least iteration time of every sub-problem with an empty end stage, by enumerating
    its plans (stage configurations, layer splits with zero layers exactly at its empty ends).
    `mixed`: the mixed-type configurations of the space too (`SearchState.mixed_space`, in
    every position, empty ends included); `with_mixed_stage`: only plans with a mixed stage
    (what the second search bounds, row (M) of Sec. 1.1)."""
    cm = CostModel(instance)
    state = SearchState(instance, mixed=True)
    L, gpus = instance.model.num_layers, instance.cluster.num_gpus
    budget = {g.name: g.num_gpus for g in instance.cluster.node_groups}
    best: dict[SubProblem, float] = {}
    for b in micro_batch_candidates(instance):
        configs = stage_configs(instance, b) + (state.mixed_space(b) if mixed else [])
        for schedule in instance.training.schedules:
            for p in range(2, min(L + 2, gpus) + 1):
                for seq in itertools.product(configs, repeat=p):
                    if with_mixed_stage and not any(c.mixed for c in seq):
                        continue
                    used: dict[str, int] = {}
                    for c in seq:
                        for g in c.groups:
                            used[g] = used.get(g, 0) + c.gpus_in(g)
                    if any(n > budget[g] for g, n in used.items()):
                        continue
                    for ef, el in ((True, False), (False, True), (True, True)):
                        sub = SubProblem(p, b, schedule, ef, el)
                        for layers in _layer_splits(L, p, ef, el):
                            if (ef and layers[0]) or (el and layers[-1]):
                                continue
                            plan = build_plan(instance, list(seq), layers, micro_batch=b,
                                              schedule=schedule)  # type: ignore[arg-type]
                            if plan is None or plan_violations(instance, plan, cost_model=cm):
                                continue
                            t = cm.evaluate(plan).iteration_time_s
                            best[sub] = min(best.get(sub, math.inf), t)
    return best


BOUND_INSTANCES = [
    head_only_wins(),
    random_instance(76),  # (its optimum has both ends empty)
    _with_empty_ends(tiny_instance(
        devices=[("T4", 3.0), ("A100-80G", 4.0)], groups=[(0, 1, 2), (1, 1, 1)], layers=3,
        hidden=1024, heads=4, seq=256, batch=2, recompute=("none", "full"),
        schedules=("1f1b", "gpipe"))),
    _with_empty_ends(tiny_instance(
        devices=[("V100-32G", 2.6), ("H100", 3.0)], groups=[(0, 1, 3), (1, 1, 1)], layers=2,
        hidden=512, heads=4, seq=1024, batch=4, recompute=("none",))),
]


def _check_every_bound(state: SearchState, optima: dict[SubProblem, float]) -> int:
    """Every bound of every sub-problem with an empty end stage against `optima`; how many
    finite optima were checked."""
    instance = state.instance
    p_max = _stage_count_cap(instance, None)
    checked = 0
    for b, floors, schedule in sizes_and_schedules(state):
        for sub in _subproblems(instance, b, schedule, 1, None, empty_ends=True):
            if not sub.empty_ends:
                continue
            best = optima.get(sub, math.inf)
            for bound in (lower_bound(state, sub, floors),
                          granular_lower_bound(state, sub, floors, p_max),
                          strong_lower_bound(state, sub, floors, p_max),
                          strong_lower_bound(state, sub, floors, p_max, 2 * best),
                          strong_lower_bound(state, sub, floors, p_max, integer=True),
                          state.bottleneck_floor(sub, p_max) * sub.num_micro_batches(
                              instance)):
                assert bound <= best * (1 + 1e-9), (sub, bound, best)
                checked += math.isfinite(best)
    return checked


@pytest.mark.parametrize("instance", BOUND_INSTANCES,
                         ids=["seed-11", "seed-76", "t4-a100", "v100x3-h100"])
def test_every_bound_of_an_empty_end_sub_problem_is_below_its_plans(instance: Instance) -> None:
    optima = family_optima(instance)
    assert optima, "the instance has no plan with an empty end stage"
    assert _check_every_bound(SearchState(instance), optima) >= 10


def empty_mixed_end_wins(with_a100: bool) -> Instance:
    """Two instances of benchmarks/gap_probe.py's fast_nic generator (seeds 55 and 62, written
    out) where a plan whose empty last stage has two replica groups beats every plan whose
    empty ends are single-type: 1 layer on 2 nodes of 2 small L40S (two TP degrees on the
    node group at the end), or 2 layers on those and one small A100 (an L40S and the A100 at
    the end)."""
    l40s = replace(DEVICE_PRESETS["L40S"], name="l40s",
                   memory_gib=0.3035888671875 if with_a100 else 0.31265830993652344)
    a100 = replace(DEVICE_PRESETS["A100-80G"], name="a100", memory_gib=0.1897430419921875)
    groups = [NodeGroup(name="g0", device="l40s", num_nodes=2, gpus_per_node=2,
                        nic_gbit_s=800.0 if with_a100 else 3200.0)]
    if with_a100:
        groups.append(NodeGroup(name="g1", device="a100", num_nodes=1, gpus_per_node=1,
                                nic_gbit_s=400.0))
    model = ModelSpec(name="probe-gpt", num_layers=2 if with_a100 else 1,
                      hidden_size=768, ffn_hidden_size=3072, num_attention_heads=4,
                      vocab_size=8192 if with_a100 else 4096, seq_length=1024,
                      learned_position_embeddings=True, uses_dropout=True)
    training = TrainingSpec(global_batch_size=2, dtype="fp16",
                            zero_stage=1 if with_a100 else 3,
                            recompute=("full",) if with_a100 else ("none",),
                            max_micro_batch_share=12 if with_a100 else 6,
                            reserved_memory_gib=0.0, empty_end_stages=True)
    return make_instance(model=model, training=training, node_groups=groups,
                         extra_devices={"l40s": l40s, "a100": a100}, name="empty-mixed-end")


MIXED_END_INSTANCES = [empty_mixed_end_wins(False), empty_mixed_end_wins(True)]


@pytest.mark.parametrize("instance", MIXED_END_INSTANCES, ids=["l40s-two-tp", "l40s-a100"])
@pytest.mark.parametrize("require_mixed", [False, True])
def test_every_bound_holds_with_mixed_empty_end_stages(instance: Instance,
                                                       require_mixed: bool) -> None:
    """The same with mixed-type configurations at every position, empty ends included; with
    `require_mixed` (the second search) against the plans with a mixed stage only, where the
    only mixed stage may be an empty end (so its decoder stages' bound must not ask one)."""
    optima = family_optima(instance, mixed=True, with_mixed_stage=require_mixed)
    assert any(s.empty_ends for s in optima)
    state = SearchState(instance, mixed=True)
    state.require_mixed = require_mixed
    assert _check_every_bound(state, optima) >= 10


@pytest.mark.parametrize("instance", MIXED_END_INSTANCES, ids=["l40s-two-tp", "l40s-a100"])
def test_an_empty_end_stage_of_several_replica_groups_is_searched(instance: Instance) -> None:
    """The search with mixed stages finds the validator's best plan there (benchmarks/
    gap_probe.py: before empty end stages took mixed-type configurations it proved a slower
    plan optimal), and that plan's empty end stage has several replica groups."""
    res = solve(instance, threads=1, time_limit_s=60, seed_with_baselines=False, mixed=True)
    widest = bruteforce(instance, mixed=True, space="validator")
    assert res.status == "optimal"
    check_plan(instance, res.plan)
    assert res.iteration_time_s <= widest.iteration_time_s * (1 + 1e-9)
    assert any(s.num_layers == 0 and len(s.replicas) > 1 for s in res.plan.stages)
    # The documented space, enumerated, agrees.
    assert bruteforce(instance, mixed=True).iteration_time_s == pytest.approx(
        res.iteration_time_s, rel=1e-9)


@pytest.mark.parametrize("backend", ["highs", "cpsat", "cbc"])
def test_a_head_only_last_stage_is_found_and_proven(backend: str) -> None:
    instance = head_only_wins()
    best = min(family_optima(instance).values())
    with_ends = solve(instance, backend=backend, time_limit_s=60, seed_with_baselines=False,
                      mixed=False)
    without = solve(_with_empty_ends(instance, False), backend=backend, time_limit_s=60,
                    seed_with_baselines=False, mixed=False)
    assert with_ends.status == without.status == "optimal"
    check_plan(instance, with_ends.plan)
    assert with_ends.plan.stages[-1].num_layers == 0
    assert with_ends.iteration_time_s == pytest.approx(best, rel=1e-9)
    assert with_ends.iteration_time_s < without.iteration_time_s * (1 - 1e-3)
    assert all(s.num_layers >= 1 for s in without.plan.stages)
