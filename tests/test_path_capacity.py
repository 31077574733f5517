"""The path capacity of formulations Sec. 4.10 is a relaxation, and its walk's window keeps every
plan that can beat the stop.

Every plan of every sub-problem of small random instances of two node groups is enumerated and
costed: the path question must hold at the plan's bottleneck and tail (else the walk would cut
it away), the walk's bound must not exceed the sub-problem's optimum, and the optimum's
bottleneck must lie in the window the walk leaves open wherever the optimum is below the stop
(the sub-problem's model is confined to that window). A last check shows what the path capacity
is for: on a cluster of 4-GPU cloud VMs it closes a sub-problem the LP walks leave open.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from test_bounds import (
    P2P_MODES,
    SETTINGS,
    _sequences,
    _with_p2p,
    compositions,
    mixed_memory_bound_instances,
)

from haap_solver.cost.pipeline import links_around
from haap_solver.instance import Instance, load_instance
from haap_solver.search import tuning
from haap_solver.search.formulation import SubProblem
from haap_solver.search.solve import SearchState
from haap_solver.search.space import build_plan
from haap_solver.search.subproblem_bounds import _layer_rate_bounds, strong_lower_bound
from haap_solver.validate import plan_violations

INSTANCES = Path(__file__).resolve().parent.parent / "instances"


def _plans(instance: Instance, state: SearchState, sub: SubProblem,
           limit: int = 3000) -> list[tuple[float, float, float]] | None:
    """(iteration time, bottleneck, largest tail) of every valid plan of the sub-problem, by
    enumeration (None past `limit` candidates); the bottleneck is the period of Sec. 5: the
    stage time with both links under blocking sends, else the larger of the stage times and
    twice the links."""
    cm = state.cost_model
    L, p, b = instance.model.num_layers, sub.num_stages, sub.micro_batch
    budget = {g.name: g.num_gpus for g in instance.cluster.node_groups}
    out = []
    seen = 0
    for seq in _sequences(state.configs(b), p, dict(budget)):
        if state.require_mixed and not any(c.mixed for c in seq):
            continue
        for layers in compositions(L, p):
            seen += 1
            if seen > limit:
                return None
            plan = build_plan(instance, seq, layers, micro_batch=b, schedule=sub.schedule,
                              note="test")
            if plan is None or plan_violations(instance, plan, cost_model=cm):
                continue
            coeffs = [state.cache.coefficients(c, b, i == 0, i == p - 1, p > 1)
                      for i, c in enumerate(seq)]
            evaluation = cm.evaluate(plan)
            links = [s.p2p_next_s for s in evaluation.stages[:-1]]
            taus = [co.tau(n) for co, n in zip(coeffs, layers, strict=True)]
            if instance.training.blocks_p2p(sub.schedule):
                periods = [tau + links_around(links, i) for i, tau in enumerate(taus)]
            else:
                periods = [*taus, *(2 * c for c in links)]
            tail = max(co.tail(n) for co, n in zip(coeffs, layers, strict=True))
            out.append((evaluation.iteration_time_s, max(periods), tail))
    return out


def _check(instance: Instance, mixed: bool = False) -> int:
    """Check every enumerable sub-problem; with `mixed`, the search over plans with a mixed
    stage (row (M)), whose windows come from the LP walk (the path capacity does not apply)."""
    state = SearchState(instance, mixed=mixed)
    state.require_mixed = mixed
    L = instance.model.num_layers
    p_cap = min(L, instance.cluster.num_gpus)
    checked = 0
    for b in state.micro_batches():
        configs = state.configs(b)
        if not configs:
            continue
        floors = _layer_rate_bounds(state, b, configs)
        path = state.path_capacity(b, "1f1b", p_cap)
        if (path is None) != mixed:
            continue
        for p in range(1, p_cap + 1):
            sub = SubProblem(p, b, "1f1b")
            plans = _plans(instance, state, sub)
            if not plans:
                continue
            checked += 1
            for _, bottleneck, tail in plans if path is not None else ():
                assert path.holds(p, bottleneck, tail), (sub, bottleneck, tail)
            best = min(plans)[0]
            for stop in (2 * best, 1.2 * best, 1.05 * best, best * (1 + 1e-6)):
                bound = strong_lower_bound(state, sub, floors, p_cap, stop)
                assert bound <= best * (1 + 1e-9), (sub, stop, bound, best)
                t_lo, t_hi = state.window(sub, stop)
                # (every plan cheaper than the stop keeps its bottleneck in the window)
                for time_s, bottleneck, _ in plans:
                    if time_s < stop * (1 - 1e-9):
                        assert t_lo * (1 - 1e-9) <= bottleneck < t_hi * (1 + 1e-9), (
                            sub, stop, time_s, bottleneck, t_lo, t_hi)
    return checked


@settings(max_examples=8, **SETTINGS)
@given(mixed_memory_bound_instances(), st.sampled_from(P2P_MODES))
def test_path_capacity_is_a_relaxation(instance: Instance, p2p: str) -> None:
    instance = replace(_with_p2p(instance, p2p),
                       training=replace(_with_p2p(instance, p2p).training,
                                        schedules=("1f1b",)))
    assume(_check(instance) > 0)


@settings(max_examples=6, **SETTINGS)
@given(mixed_memory_bound_instances(), st.sampled_from(P2P_MODES))
def test_lp_window_keeps_every_cheaper_plan(instance: Instance, p2p: str) -> None:
    """Where the path capacity does not apply (the search over plans with a mixed stage), the
    window comes from the LP walk's question: the same checks of bound and window."""
    instance = replace(_with_p2p(instance, p2p),
                       training=replace(_with_p2p(instance, p2p).training,
                                        schedules=("1f1b",)))
    assume(_check(instance, mixed=True) > 0)


def test_path_walk_closes_what_the_lp_walks_leave_open() -> None:
    """gpt3-2.7b-a100x32-v100x96-4gpu (32 A100 and 96 V100 in 4-GPU VMs, one NIC each), the
    sub-problem (6 stages, micro-batch 8) against the optimum (4.4111 s): the LP walks of Sec.
    4.5 leave it open (their link sides charge one stage per node group at the other group's
    NIC); the path walk, which charges every stage next to the other group, closes it."""
    instance = load_instance(INSTANCES / "gpt3-2.7b-a100x32-v100x96-4gpu.toml")
    sub, incumbent = SubProblem(6, 8, "1f1b"), 4.4111
    bounds = {}
    for on in (False, True):
        state = SearchState(instance, mixed=False)
        floors = _layer_rate_bounds(state, 8, state.configs(8))
        saved = tuning.PATH_CAPACITY
        tuning.PATH_CAPACITY = on
        try:
            bounds[on] = strong_lower_bound(state, sub, floors, 32, incumbent)
        finally:
            tuning.PATH_CAPACITY = saved
    assert bounds[False] < 0.99 * incumbent
    assert bounds[True] >= incumbent
    assert math.isfinite(bounds[True])
