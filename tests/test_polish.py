"""The local search around the incumbent (haap_solver/search/polish.py).

It proves nothing, so what it must get right is that every plan it returns is a valid plan of
the searched space, costed by evaluate(), faster than the one it started from, and never
below the brute force's optimum; and that it finds what it is there for: on clusters of many
small nodes the plans a few moves from the models' first plans (a stage re-shaped on its own
GPUs, the micro-batch halved), which the models reach only after a minute or more.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest
from random_instances import random_instance

from haap_solver.baselines.bruteforce import bruteforce
from haap_solver.baselines.uniform import uniform
from haap_solver.errors import InfeasibleError
from haap_solver.instance import load_instance
from haap_solver.plan import Plan
from haap_solver.search import tuning
from haap_solver.search.branch_and_bound import BranchAndBound
from haap_solver.search.dp import best_layer_split
from haap_solver.search.polish import (
    REORDER_ALL_MAX,
    Polish,
    _distinct_orders,
    _multiset_orders,
    _reorders,
)
from haap_solver.search.repair import plan_configs
from haap_solver.search.space import build_plan
from haap_solver.search.state import SearchState
from haap_solver.validate import check_plan

SMALL_NODES = Path(__file__).resolve().parents[1] / "instances" \
    / "gpt3-2.7b-a100x32-v100x96-4gpu.toml"
HELD_PLAN = (("a100-vm:tp4xdp4:none", "a100-vm:tp4xdp4:none", "v100-vm:tp4xdp8:none",
              "v100-vm:tp4xdp8:none", "v100-vm:tp4xdp8:none"), 16)
"""The stage sequence and micro-batch size of the plan the search held for all of a 30 s limit
on SMALL_NODES before the local search (4.655 s, gap 10.7%, docs/benchmarks.md at a500a9c)."""


def held_plan(state: SearchState) -> Plan:
    """HELD_PLAN on its best layer split (so only a change of stages can beat it)."""
    labels, b = HELD_PLAN
    by_label = {c.label(): c for c in state.configs(b)}
    configs = [by_label[label] for label in labels]
    split = best_layer_split(state.instance, state.cache, configs, b, "1f1b")
    assert split is not None
    plan = build_plan(state.instance, configs, split[0], micro_batch=b, schedule="1f1b")
    assert plan is not None
    return plan


def test_polish_moves_off_the_held_plan_on_small_nodes() -> None:
    instance = load_instance(SMALL_NODES)
    state = SearchState(instance)
    plan = held_plan(state)
    ev = state.cost_model.evaluate(plan)
    got = Polish(state, max_stages=32, deadline=time.perf_counter() + 60).run(plan, ev)
    assert got is not None
    better, its = got
    check_plan(instance, better)
    assert its.iteration_time_s == state.cost_model.evaluate(better).iteration_time_s
    # The plans two moves away are 3.5% and 5.2% faster; more than 3% is what it is for.
    assert its.iteration_time_s < 0.97 * ev.iteration_time_s
    configs = plan_configs(instance, better)
    assert configs is not None
    assert all(c in state.configs(better.micro_batch_size) for c in configs)


def test_search_polishes_an_improved_incumbent() -> None:
    """`before_each` polishes an incumbent that improved since; the polished plan is the
    incumbent after (and shared, like any)."""
    instance = load_instance(SMALL_NODES)
    shared: list[float] = []
    search = BranchAndBound(instance, backend="highs", time_limit_s=60, threads=1, seed=0,
                            state=None, max_stages=None, progress=None,
                            seed_with_baselines=False, mixed=False,
                            share_incumbent=lambda plan, ev: shared.append(ev.iteration_time_s))
    plan = held_plan(search.state)
    ev = search.cm.evaluate(plan)
    search.improved(plan, ev)
    search.before_each(search.candidates[0], 0)
    assert search.best_time < 0.97 * ev.iteration_time_s
    assert search.polished == 1 and not search.unpolished
    assert shared[-1] == search.best_time
    assert search.best_plan is not None
    check_plan(instance, search.best_plan)


def test_short_limits_still_give_the_local_search_its_floor(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """At a 1 s limit the shares give a call 0.03 s; it gets POLISH_MIN_S (where the deadline
    leaves that much), and no more in all."""
    instance = load_instance(SMALL_NODES)
    search = BranchAndBound(instance, backend="highs", time_limit_s=1.0, threads=1, seed=0,
                            state=None, max_stages=None, progress=None,
                            seed_with_baselines=False, mixed=False)
    given: list[float] = []

    def run(self: Polish, plan: Plan, ev: object) -> None:
        given.append(self.deadline - time.perf_counter())
        time.sleep(0.3)  # (uses all of it)

    monkeypatch.setattr(Polish, "run", run)
    plan = held_plan(search.state)
    search.deadline = time.perf_counter() + 10.0  # (the set-up's time is not the point here)
    for _ in range(2):
        search.improved(plan, search.cm.evaluate(plan))
        search.polish_incumbent()
    assert len(given) == 1  # (the second call: the floor in all is spent)
    assert tuning.POLISH_MIN_S - 0.05 <= given[0] <= tuning.POLISH_MIN_S
    assert tuning.POLISH_SHARE * 1.0 < tuning.POLISH_MIN_S  # (the case this is about)


def test_polish_keeps_the_stage_cap() -> None:
    instance = load_instance(SMALL_NODES)
    state = SearchState(instance)
    plan = held_plan(state)
    ev = state.cost_model.evaluate(plan)
    got = Polish(state, max_stages=len(plan.stages),
                 deadline=time.perf_counter() + 60).run(plan, ev)
    assert got is None or len(got[0].stages) <= len(plan.stages)
    polish = Polish(state, max_stages=len(plan.stages), deadline=time.perf_counter() + 60)
    configs = tuple(plan_configs(instance, plan) or ())
    moves = list(polish.other_moves(configs, plan.micro_batch_size))
    assert moves and max(len(s) for s in moves) == len(configs)
    polish.max_stages = len(plan.stages) + 1  # (then the splits and inserts are there)
    assert max(len(s) for s in polish.other_moves(configs, plan.micro_batch_size)) \
        == len(configs) + 1


def test_reshape_estimates_are_the_screen_estimates() -> None:
    """`Screen.estimate_reshapes` (what the other stages give computed once) gives the numbers
    `Screen.estimate` gives each re-shaped sequence."""
    instance = load_instance(SMALL_NODES)
    state = SearchState(instance)
    plan = held_plan(state)
    configs = plan_configs(instance, plan)
    assert configs is not None
    polish = Polish(state, max_stages=32, deadline=time.perf_counter() + 60)
    screen = polish.screen(plan.micro_batch_size, plan.schedule)
    checked = 0
    for i, candidates in enumerate(polish.reshapes(tuple(configs), plan.micro_batch_size)):
        got = screen.estimate_reshapes(configs, i, candidates)
        for est, c in zip(got, candidates, strict=True):
            want = screen.estimate([*configs[:i], c, *configs[i + 1:]])
            assert est == pytest.approx(want, rel=1e-12) or est == want  # (inf == inf)
            checked += 1
    assert checked > 100


@pytest.mark.parametrize("seed", range(0, 40, 2))
def test_polish_against_the_brute_force(seed: int) -> None:
    """On random tiny instances, from the best uniform grid: a valid plan, faster than it and
    not faster than the brute force's optimum, or nothing."""
    instance = random_instance(seed)
    try:
        truth = bruteforce(instance)
    except InfeasibleError:
        return
    state = SearchState(instance)
    base = uniform(instance, cost_model=state.cost_model)
    if base.plan is None or base.evaluation is None:
        return
    got = Polish(state, max_stages=instance.model.num_layers,
                 deadline=time.perf_counter() + 60).run(base.plan, base.evaluation)
    if got is None:
        return
    plan, ev = got
    check_plan(instance, plan)
    assert ev.iteration_time_s < base.iteration_time_s
    assert ev.iteration_time_s >= truth.iteration_time_s * (1 - 1e-9)


THREE_TYPES = Path(__file__).resolve().parents[1] / "instances" \
    / "gpt3-6.7b-a100x128-v100x256-a10x128-4gpu.toml"
MISORDERED = (("a100-vm:tp4xdp16:none", "a10-vm:tp4xdp16:none", "a10-vm:tp4xdp16:none",
               "v100-vm:tp4xdp16:none", "v100-vm:tp4xdp16:none", "v100-vm:tp4xdp16:none",
               "v100-vm:tp4xdp16:none", "a100-vm:tp4xdp16:none"), 16)
"""The first plan of the sub-problem of THREE_TYPES's optimum (8 stages, micro-batch 16) that
the search found (its warm start, 2026-12-05): the optimum's stages in another order."""


def test_polish_reorders_the_stages() -> None:
    """From MISORDERED, the local search reaches the best order of its stages, which every
    order's exact split (brute force over the 420 distinct orders) finds faster: neighbour swaps
    alone, each having to improve, did not get there."""
    instance = load_instance(THREE_TYPES)
    state = SearchState(instance)
    labels, b = MISORDERED
    by_label = {c.label(): c for c in state.configs(b)}
    configs = [by_label[label] for label in labels]
    start = best_layer_split(instance, state.cache, configs, b, "1f1b")
    assert start is not None
    orders = set(itertools.permutations(configs))
    assert len(orders) == 420
    best = min(split[1] for order in orders
               if (split := best_layer_split(instance, state.cache, list(order), b, "1f1b")))
    assert best < start[1] * (1 - 1e-3)  # (the case is about something)
    plan = build_plan(instance, configs, start[0], micro_batch=b, schedule="1f1b")
    assert plan is not None
    got = Polish(state, max_stages=len(configs), deadline=time.perf_counter() + 60).run(
        plan, state.cost_model.evaluate(plan))
    assert got is not None
    better, its = got
    check_plan(instance, better)
    assert its.iteration_time_s <= best * (1 + 1e-9)


@pytest.mark.parametrize("code", [[0, 0, 1], [0, 1, 2, 1, 0], [2, 2, 2], [0, 1, 0, 1, 2, 2]])
def test_multiset_orders_are_every_distinct_order_once(code: list[int]) -> None:
    got = [tuple(order) for order in _multiset_orders(code)]
    assert len(got) == len(set(got)) == len(set(itertools.permutations(code)))
    assert set(got) == set(itertools.permutations(code))
    assert _distinct_orders(code) == len(got)


def test_reorders_beyond_the_cap_move_one_stage() -> None:
    seq = tuple(range(9))  # (9! orders, over REORDER_ALL_MAX)
    assert _distinct_orders(list(seq)) > REORDER_ALL_MAX
    moved = set(_reorders(seq))  # type: ignore[arg-type]
    assert seq not in moved
    assert len(moved) == 9 * 8 - 8  # (p (p - 1) moves; each neighbour swap comes twice)
    assert all(sorted(m) == list(seq) for m in moved)
