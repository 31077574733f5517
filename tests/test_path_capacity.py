"""The path capacity of formulations Sec. 4.10 is a relaxation, and its walks' windows keep every
plan that can beat the stop.

Every plan of every sub-problem of small random instances of two node groups is enumerated and
costed: the path question must hold at the plan's bottleneck and tail (else the walk would cut
it away), with the links between node groups charged Q and charged exactly; the walks' bound
must not exceed the sub-problem's optimum; and every plan cheaper than the stop must have its
bottleneck in the window the walks leave open (the sub-problem's model is confined to it). A
last check shows what the path capacity is for: on a cluster of 4-GPU cloud VMs it closes a
sub-problem the LP walks leave open.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from bound_sweep import valid_plans
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from test_bounds import P2P_MODES, SETTINGS, _with_p2p, mixed_memory_bound_instances

from haap_solver.instance import Instance, load_instance
from haap_solver.search import tuning
from haap_solver.search.formulation import SubProblem
from haap_solver.search.solve import SearchState
from haap_solver.search.subproblem_bounds import _layer_rate_bounds, strong_lower_bound

INSTANCES = Path(__file__).resolve().parent.parent / "instances"


def _check(instance: Instance, mixed: bool = False) -> int:
    """Check every enumerable sub-problem; with `mixed`, the search over plans with a mixed
    stage (row (M)), whose windows come from the LP walk (the path capacity does not apply).
    The walk with exact links runs on these small clusters too (it is gated by cluster size)."""
    saved = tuning.PATH_EXACT_LINKS_MIN_GPUS
    tuning.PATH_EXACT_LINKS_MIN_GPUS = 0
    try:
        return _check_all(instance, mixed)
    finally:
        tuning.PATH_EXACT_LINKS_MIN_GPUS = saved


def _check_all(instance: Instance, mixed: bool) -> int:
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
            plans = valid_plans(state, sub, limit=3000, only_mixed=mixed)
            if not plans:
                continue
            checked += 1
            for plan in plans if path is not None else ():
                assert path.holds(p, plan.bottleneck, plan.tail), (sub, plan)
                assert path.holds_exact(p, plan.bottleneck, plan.tail), (sub, plan)
            best = min(plan.iteration_s for plan in plans)
            for stop in (2 * best, 1.2 * best, 1.05 * best, best * (1 + 1e-6)):
                bound = strong_lower_bound(state, sub, floors, p_cap, stop)
                assert bound <= best * (1 + 1e-9), (sub, stop, bound, best)
                t_lo, t_hi = state.window(sub, stop)
                # (every plan cheaper than the stop keeps its bottleneck in the window)
                for plan in plans:
                    if plan.iteration_s < stop * (1 - 1e-9):
                        assert t_lo * (1 - 1e-9) <= plan.bottleneck < t_hi * (1 + 1e-9), (
                            sub, stop, plan, t_lo, t_hi)
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
    sub-problem (6 stages, micro-batch 8) against the optimum (4.3490 s): the LP walks of Sec.
    4.5 leave it open (their link sides charge one stage per node group at the other group's
    NIC); the path walk, which charges every stage next to the other group, closes it."""
    instance = load_instance(INSTANCES / "gpt3-2.7b-a100x32-v100x96-4gpu.toml")
    sub, incumbent = SubProblem(6, 8, "1f1b"), 4.3490
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


def test_answers_implied_by_earlier_ones_are_the_computed_ones() -> None:
    """PathCapacity.holds answers a question from an earlier one where monotonicity decides it
    (a "yes" at a lower or equal (t, r), a "no" at a higher or equal one): on a grid of
    questions asked in a scrambled order, on gpt3-2.7b-a100x32-v100x96-4gpu's micro-batch 8,
    every answer equals the dynamic program's own, and some came from the earlier ones."""
    import random

    instance = load_instance(INSTANCES / "gpt3-2.7b-a100x32-v100x96-4gpu.toml")
    state = SearchState(instance, mixed=False)
    path = state.path_capacity(8, "1f1b", 32)
    assert path is not None
    t_values = path.t_values
    r_values = state.positional_bound(8, "1f1b").tail_values()
    questions = [(p, float(t_values[i]), float(r_values[j]), exact)
                 for p in (4, 5) for i in range(0, len(t_values), max(1, len(t_values) // 12))
                 for j in range(0, len(r_values), max(1, len(r_values) // 6))
                 for exact in (False, True)]
    random.Random(0).shuffle(questions)
    implied = 0
    for p, t, r, exact in questions:
        computed = sum(map(len, path._known.get((p, exact), ((), ()))))
        answer = path.holds(p, t, r, exact_links=exact)
        implied += sum(map(len, path._known.get((p, exact), ((), ())))) == computed
        # (a question at a candidate stands for every bottleneck below the next one)
        k = t_values.index(t) + 1
        asked_t = t_values[k] * (1 - 1e-9) if k < len(t_values) else math.inf
        assert answer == path._holds(p, asked_t * (1 + 1e-12), r * (1 + 1e-12), exact), \
            (p, t, r, exact)
    assert implied > 0
    assert any(path.holds(p, t, r, exact_links=e) for p, t, r, e in questions)
    assert not all(path.holds(p, t, r, exact_links=e) for p, t, r, e in questions)
