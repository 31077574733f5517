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
from random_instances import random_instance
from tiny_instances import tiny_instance

from haap_solver.cost.evaluate import CostModel
from haap_solver.instance import Instance
from haap_solver.search.formulation import SubProblem
from haap_solver.search.solve import SearchState, solve
from haap_solver.search.space import build_plan, micro_batch_candidates, stage_configs
from haap_solver.search.subproblem_bounds import (
    _layer_rate_bounds,
    granular_lower_bound,
    lower_bound,
    strong_lower_bound,
)
from haap_solver.search.subproblems import _stage_count_cap, _subproblems
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


def family_optima(instance: Instance) -> dict[SubProblem, float]:
    """The least iteration time of every sub-problem with an empty end stage, by enumerating
    its plans (stage configurations, layer splits with zero layers exactly at its empty ends)."""
    cm = CostModel(instance)
    L, gpus = instance.model.num_layers, instance.cluster.num_gpus
    budget = {g.name: g.num_gpus for g in instance.cluster.node_groups}
    best: dict[SubProblem, float] = {}
    for b in micro_batch_candidates(instance):
        configs = stage_configs(instance, b)
        for schedule in instance.training.schedules:
            for p in range(2, min(L + 2, gpus) + 1):
                for seq in itertools.product(configs, repeat=p):
                    used: dict[str, int] = {}
                    for c in seq:
                        used[c.node_group] = used.get(c.node_group, 0) + c.gpus
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


@pytest.mark.parametrize("instance", BOUND_INSTANCES,
                         ids=["seed-11", "seed-76", "t4-a100", "v100x3-h100"])
def test_every_bound_of_an_empty_end_sub_problem_is_below_its_plans(instance: Instance) -> None:
    optima = family_optima(instance)
    assert optima, "the instance has no plan with an empty end stage"
    state = SearchState(instance)
    p_max = _stage_count_cap(instance, None)
    checked = 0
    for b in state.micro_batches():
        configs = state.configs(b)
        if not configs:
            continue
        floors = _layer_rate_bounds(state, b, configs)
        for schedule in instance.training.schedules:
            for sub in _subproblems(instance, b, schedule, 1, None, empty_ends=True):
                if not sub.empty_ends:
                    continue
                best = optima.get(sub, math.inf)
                for bound in (lower_bound(state, sub, floors),
                              granular_lower_bound(state, sub, floors, p_max),
                              strong_lower_bound(state, sub, floors, p_max),
                              strong_lower_bound(state, sub, floors, p_max, 2 * best),
                              strong_lower_bound(state, sub, floors, p_max, integer=True)):
                    assert bound <= best * (1 + 1e-9), (sub, bound, best)
                    checked += math.isfinite(best)
    assert checked >= 10


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
