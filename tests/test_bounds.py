"""The search's lower bounds are valid: never above the best plan of the sub-problem they bound.

Every plan of every sub-problem (stage count, micro-batch, schedule) of small random instances is
enumerated and costed by evaluate(); the bottleneck floors (Sec. 4.3 GPU-granular capacity,
Sec. 4.4 positional LP) must not exceed the slowest stage of any valid plan, and the strong lower
bound (with and without an incumbent to stop at) must not exceed the best iteration time.
A bound that is too high would prune the optimum: the solver would then report a wrong plan as
optimal.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from bound_sweep import _sequences, compositions, sizes_and_schedules, valid_plans
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from tiny_instances import tiny_instance

from haap_solver.instance import Instance, load_instance
from haap_solver.search.bounds import (
    NEG,
    ROLES,
    PositionalBound,
    _combine,
    _group_capacity,
    _group_history,
    _solve_lp,
    lp_minimum_floor,
    new_bound_lp_solver,
)
from haap_solver.search.coefficients import (
    Affine,
    hull_candidates,
    pieces_below,
    pieces_below_pairs,
)
from haap_solver.search.formulation import SubProblem
from haap_solver.search.solve import SearchState
from haap_solver.search.space import build_plan
from haap_solver.search.subproblem_bounds import (
    BottleneckCosts,
    _layer_rate_bounds,
    _stage_time_cap,
    fluid_fill,
    group_layer_rates,
    lower_bound,
    refined_interval_cost,
    strong_lower_bound,
)
from haap_solver.validate import plan_violations

INSTANCES = Path(__file__).resolve().parent.parent / "instances"

PRESETS = ("A100-80G", "V100-32G", "T4", "H100")


@st.composite
def memory_bound_instances(draw: st.DrawFn) -> Instance:
    """Small devices and long sequences, so that in-flight activations decide what fits where."""
    n_dev = draw(st.integers(1, 2))
    devices = [(draw(st.sampled_from(PRESETS)), draw(st.sampled_from([2.0, 2.5, 3.0, 6.0])))
               for _ in range(n_dev)]
    groups = [(draw(st.integers(0, n_dev - 1)), 1, draw(st.sampled_from([1, 2, 4])))
              for _ in range(draw(st.integers(1, 2)))]
    recompute = tuple(r for r in ("none", "full") if draw(st.booleans())) or ("none",)
    return tiny_instance(devices=devices, groups=groups, layers=draw(st.integers(3, 6)),
                         hidden=draw(st.sampled_from([512, 1024])), heads=4,
                         seq=draw(st.sampled_from([512, 1024])), batch=draw(st.integers(2, 8)),
                         recompute=recompute,
                         schedules=draw(st.sampled_from([("1f1b",), ("1f1b", "gpipe")])),
                         zero=draw(st.sampled_from([0, 1])), overlap=draw(st.booleans()))


def _sub_problem_optima(instance: Instance, state: SearchState, sub: SubProblem,
                        limit: int = 4000) -> tuple[float, float, float] | None:
    """(least iteration time, least bottleneck, bottleneck of the fastest plan) over every valid
    plan of the sub-problem (with state.require_mixed: with a mixed-type stage), by enumeration;
    None when it has no valid plan or more than `limit` plans."""
    plans = valid_plans(state, sub, limit=limit, only_mixed=state.require_mixed)
    if not plans:
        return None
    fastest = min(plans, key=lambda plan: plan.iteration_s)
    return (fastest.iteration_s, min(plan.bottleneck for plan in plans), fastest.bottleneck)


P2P_MODES = ("overlapped", "blocking")
"""Both ways pipeline sends meet compute (training.pipeline_p2p), drawn per example."""
OVERLAPPED = "overlapped"
"""The sends of the checks below whose truth is a plan's max_i tau_i and tails (the overlapped
period; "auto", the default, blocks): under blocking the bounds add each stage's least link
sides to tau, which the end-to-end checks above cover in both modes."""


def _with_p2p(instance: Instance, p2p: str) -> Instance:
    """`instance` with pipeline sends `p2p` (training.pipeline_p2p). Blocking: a stage's period
    is tau_i + c_{i-1} + c_i, and the bottleneck bounds charge each stage its least link sides
    (formulations (6b))."""
    return replace(instance, training=replace(instance.training, pipeline_p2p=p2p))


SETTINGS = dict(deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
"""The settings of the hypothesis checks below; each has a thorough twin marked slow (more
examples, `pytest -m slow`), since a few drawn instances with a 4-GPU node group and uneven
shares take 15-30 s each to enumerate and bound."""


@settings(max_examples=6, **SETTINGS)
@given(memory_bound_instances(), st.sampled_from(P2P_MODES))
def test_bounds_never_exceed_the_sub_problem_optimum(instance: Instance, p2p: str) -> None:
    assume(_check_bounds(SearchState(_with_p2p(instance, p2p))))


@pytest.mark.slow
@settings(max_examples=40, **SETTINGS)
@given(memory_bound_instances(), st.sampled_from(P2P_MODES))
def test_bounds_never_exceed_the_sub_problem_optimum_thorough(instance: Instance,
                                                             p2p: str) -> None:
    assume(_check_bounds(SearchState(_with_p2p(instance, p2p))))


@st.composite
def mixed_memory_bound_instances(draw: st.DrawFn) -> Instance:
    """Two node groups of different device types, so that mixed-type stages exist."""
    first, second = draw(st.permutations(PRESETS))[:2]
    devices = [(first, draw(st.sampled_from([2.5, 3.0, 6.0]))),
               (second, draw(st.sampled_from([2.0, 3.0, 6.0])))]
    groups = [(0, 1, draw(st.sampled_from([1, 2]))), (1, 1, draw(st.sampled_from([1, 2])))]
    recompute = draw(st.sampled_from([("none",), ("none", "full")]))
    return tiny_instance(devices=devices, groups=groups, layers=draw(st.integers(3, 5)),
                         hidden=draw(st.sampled_from([512, 1024])), heads=4,
                         seq=draw(st.sampled_from([512, 1024])),
                         batch=draw(st.sampled_from([2, 3, 4, 6, 8])), recompute=recompute,
                         schedules=draw(st.sampled_from([("1f1b",), ("1f1b", "gpipe")])),
                         zero=draw(st.sampled_from([0, 1])), overlap=draw(st.booleans()))


def _check_mixed_bounds(instance: Instance, p2p: str) -> None:
    state = SearchState(_with_p2p(instance, p2p), mixed=True)
    assume(any(c.mixed for b in state.micro_batches() for c in state.configs(b)))
    assume(_check_bounds(state))


@settings(max_examples=6, **SETTINGS)
@given(mixed_memory_bound_instances(), st.sampled_from(P2P_MODES))
def test_bounds_stay_valid_with_mixed_stages(instance: Instance, p2p: str) -> None:
    """The same with mixed-type stages among the candidates: the capacity bound's relaxation
    (Sec. 4.3), the GPU matrix of the positional LPs (Sec. 4.4-4.6) and the fluid rates of the
    parts (Sec. 4.1)."""
    _check_mixed_bounds(instance, p2p)


@pytest.mark.slow
@settings(max_examples=40, **SETTINGS)
@given(mixed_memory_bound_instances(), st.sampled_from(P2P_MODES))
def test_bounds_stay_valid_with_mixed_stages_thorough(instance: Instance, p2p: str) -> None:
    _check_mixed_bounds(instance, p2p)


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(mixed_memory_bound_instances())
def test_bounds_of_plans_with_a_mixed_stage(instance: Instance) -> None:
    """Once the single-type space is proven, the bounds cover only plans with a mixed stage
    (row (M) in the positional LPs): still never above the best such plan."""
    state = SearchState(instance, mixed=True)
    assume(any(c.mixed for b in state.micro_batches() for c in state.configs(b)))
    state.require_mixed = True
    assume(_check_bounds(state))


def _check_bounds(state: SearchState) -> int:
    """Check every bound of every enumerable sub-problem; returns how many were checked."""
    instance = state.instance
    L = instance.model.num_layers
    p_cap = min(L, instance.cluster.num_gpus)
    checked = 0
    for b, floors, schedule in sizes_and_schedules(state):
        for p in range(1, p_cap + 1):
            sub = SubProblem(p, b, schedule)
            truth = _sub_problem_optima(instance, state, sub)
            if truth is None:
                continue
            best_time, best_bottleneck, fastest_bottleneck = truth
            checked += 1
            floor = state.bottleneck_floor(sub, p_cap)
            assert floor <= best_bottleneck * (1 + 1e-9), (sub, floor, best_bottleneck)
            cheap = lower_bound(state, sub, floors)
            assert cheap <= best_time * (1 + 1e-9), (sub, cheap, best_time)
            for incumbent in (2 * best_time, 1.2 * best_time, 1.05 * best_time):
                # The fastest plan beats these incumbents: its bottleneck is within the cap.
                cap = _stage_time_cap(state, sub, floors, incumbent)
                assert fastest_bottleneck <= cap * (1 + 1e-9), (sub, incumbent, cap)
            for incumbent in (math.inf, 2 * best_time, 1.2 * best_time, 1.05 * best_time,
                              best_time, 0.7 * best_time):
                # One state for all: what a bisection stopped early keeps must stay valid.
                bound = strong_lower_bound(state, sub, floors, p_cap, incumbent)
                assert bound <= best_time * (1 + 1e-9), (sub, incumbent, bound, best_time)
            for incumbent in (math.inf, best_time):
                # The walk with integer stage counts (Sec. 4.5, integer walk); against the
                # tightest valid incumbent only (each finite one costs a full walk).
                bound = strong_lower_bound(state, sub, floors, p_cap, incumbent,
                                           integer=True)
                assert bound <= best_time * (1 + 1e-9), (sub, incumbent, bound, best_time)
    return checked


def test_positional_floor_sees_in_flight_memory() -> None:
    """A 1F1B pipeline whose first stage holds p micro-batches: with 2 stages on 2 identical
    GPUs, memory forces the first stage to hold fewer layers than the last. The GPU-granular
    bound (one micro-batch in flight everywhere) cannot see it; the positional bound must, and
    must still be below the true best bottleneck."""
    inst = tiny_instance(devices=[("T4", 2.5)], groups=[(0, 1, 2)], layers=6, hidden=512,
                         heads=4, seq=1024, batch=8, recompute=("none",), zero=0)
    state = SearchState(inst)
    found = False
    for b in state.micro_batches():
        sub = SubProblem(2, b, "1f1b")
        truth = _sub_problem_optima(inst, state, sub)
        if truth is None:
            continue
        granular = state.capacity_bound(b, 2).bottleneck_floor(2)
        floor = state.bottleneck_floor(sub, 2)
        assert floor <= truth[1] * (1 + 1e-9)
        found = found or floor > granular * (1 + 1e-6)
    assert found, "no micro-batch where the positional floor is tighter"


def test_tail_walk_is_valid_and_not_trivial() -> None:
    """The R_min(T) walk (Sec. 4.5) against enumeration, on an instance where the data-parallel
    tail decides: every plan costs at least (m - 1) T + tail (its bottleneck and its tail), so
    the walk with that cost may not exceed the least such value over the valid plans, and on
    some sub-problem it must beat the trivial (m - 1) T_floor + smallest tail."""
    inst = tiny_instance(devices=[("A100-80G", 4.0)], groups=[(0, 2, 2)], layers=4, hidden=1024,
                         heads=4, seq=256, batch=8, recompute=("none",), zero=0, overlap=False)
    inst = _with_p2p(inst, OVERLAPPED)
    state = SearchState(inst)
    p_cap = min(inst.model.num_layers, inst.cluster.num_gpus)
    budget = {g.name: g.num_gpus for g in inst.cluster.node_groups}
    beaten = 0
    for b in state.micro_batches():
        m = inst.training.global_batch_size // b
        positional = state.positional_bound(b, "1f1b")
        t_values = state.capacity_bound(b, p_cap).t_values
        for p in range(1, p_cap + 1):
            sub = SubProblem(p, b, "1f1b")
            floor = state.bottleneck_floor(sub, p_cap)
            truth = math.inf
            for seq in _sequences(state.configs(b), p, dict(budget)):
                for layers in compositions(inst.model.num_layers, p):
                    plan = build_plan(inst, seq, layers, micro_batch=b, schedule="1f1b",
                                      note="test")
                    if plan is None or plan_violations(inst, plan, cost_model=state.cost_model):
                        continue
                    coeffs = [state.cache.coefficients(c, b, i == 0, i == p - 1, p > 1)
                              for i, c in enumerate(seq)]
                    t = max(co.tau(n) for co, n in zip(coeffs, layers, strict=True))
                    tail = max(co.tail(n) for co, n in zip(coeffs, layers, strict=True))
                    truth = min(truth, (m - 1) * t + tail)
            if not math.isfinite(truth):
                continue
            walk = positional.objective_floor(p, lambda a, _b, m=m: (m - 1) * a, t_values,
                                              floor)
            assert walk <= truth * (1 + 1e-9), (p, b, walk, truth)
            trivial = (m - 1) * floor + float(positional.tail_values()[0])
            beaten += walk > trivial * (1 + 1e-6)
    assert beaten, "the tail walk never improved on the trivial bound"


def _knapsack_by_enumeration(gains: list[tuple[int, list[int]]], budget: int, k: int,
                             roles: int) -> float:
    """Most layers of at most k stages (items reused freely) within `budget` GPUs whose roles
    are exactly `roles` (bit 1: one first stage, bit 2: one last stage), by enumeration."""
    best = -math.inf

    def rec(start: int, left: int, stages: int, got: int, total: float) -> None:
        nonlocal best
        if got == roles:
            best = max(best, total)
        if stages == k:
            return
        for i in range(start, len(gains)):
            w, n = gains[i]
            if w > left:
                continue
            for role, bit in ((0, 0), (1, 1), (2, 2)):
                if n[role] and not got & bit:
                    rec(i, left - w, stages + 1, got | bit, total + n[role])

    rec(0, budget, 0, 0, 0.0)
    return best


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.sampled_from([1, 2, 4]),
                          st.lists(st.sampled_from([0, 1, 2, 5]), min_size=3, max_size=3)),
                max_size=4),
       st.sampled_from([2, 4, 8]), st.integers(1, 3))
def test_group_knapsack_matches_enumeration(gains: list[tuple[int, list[int]]], budget: int,
                                            p_max: int) -> None:
    """The capacity bound's dynamic program (Sec. 4.3) against enumeration of stage multisets."""
    gains = [(w, n) for w, n in gains if w <= budget]
    hist, _ = _group_history(gains, budget, p_max)
    for k in range(p_max + 1):
        for roles in range(4):
            truth = _knapsack_by_enumeration(gains, budget, k, roles)
            got = hist[k, roles, -1]
            if math.isinf(truth):
                assert got < NEG / 2, (k, roles, got)
            else:
                assert got == truth, (k, roles, got, truth)


def _free_fill(free: list[tuple[int, float]], budget: int) -> float:
    """Most layers of free items (reused freely, not stages) within `budget` GPUs."""
    best = 0.0
    for i, (w, n) in enumerate(free):
        if w <= budget:
            best = max(best, n + _free_fill(free[i:], budget - w))
    return best


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.sampled_from([1, 2, 4]),
                          st.lists(st.sampled_from([0, 1, 2, 5]), min_size=3, max_size=3)),
                max_size=3),
       st.lists(st.tuples(st.sampled_from([1, 2, 4]), st.sampled_from([0.5, 1.5, 2.25])),
                min_size=1, max_size=2),
       st.sampled_from([2, 4, 8]), st.integers(1, 3))
def test_group_capacity_with_free_items_matches_enumeration(
        gains: list[tuple[int, list[int]]], free: list[tuple[int, float]], budget: int,
        p_max: int) -> None:
    """The mixed-stage relaxation (Sec. 4.3): free items (a mixed stage's share in a group other
    than the one it counts in) fill the GPUs the stages leave, against enumeration."""
    gains = [(w, n) for w, n in gains if w <= budget]
    best = _group_capacity([(w, [float(v) for v in n]) for w, n in gains], budget, p_max, free)
    for k in range(p_max + 1):
        for roles in range(4):
            truth = max((_knapsack_by_enumeration(gains, left, k, roles)
                         + _free_fill(free, budget - left) for left in range(budget + 1)),
                        default=-math.inf)
            if math.isinf(truth) or truth < NEG / 2:
                assert best[k, roles] < NEG / 2, (k, roles, best[k, roles])
            else:
                assert abs(best[k, roles] - truth) < 1e-9, (k, roles, best[k, roles], truth)


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(mixed_memory_bound_instances())
def test_fluid_rates_cover_every_stage(instance: Instance) -> None:
    """The lemma behind the fluid bound (Sec. 4.1) for every configuration, mixed ones included:
    a stage of n layers and time tau has n <= tau sum_parts rho_g(part) gpus(part), and
    tau >= n x the per-layer floor."""
    state = SearchState(instance, mixed=True)
    checked = 0
    for b in state.micro_batches():
        configs = state.configs(b)
        if not configs:
            continue
        rho, per_layer = group_layer_rates(state, b, configs)
        for c in configs:
            co = state.cache.coefficients(c, b, False, False, True)
            for n in range(1, instance.model.num_layers + 1):
                tau = co.tau(n)
                reach = tau * sum(rho[part.node_group] * part.gpus
                                  for part in c.replica_parts(b))
                assert n <= reach * (1 + 1e-9), (c.label(), n, reach)
                assert n * per_layer <= tau * (1 + 1e-9), (c.label(), n, tau)
                checked += c.mixed
    assume(checked)


def _check_tail_pairs(instance: Instance,
                      micro_batches: list[int] | None = None) -> tuple[int, int]:
    """Compare every (T_c, R_c) pair of the tail staircase with a count-by-count minimum; returns
    (pairs compared, pairs whose tail is least at a larger count than `layers`)."""
    state = SearchState(instance, mixed=True)
    L = instance.model.num_layers
    roles_of = {True: ((True, True, False),),
                False: ((False, False, True), (True, False, True), (False, True, True))}
    compared = later = 0
    for b in micro_batches or state.micro_batches():
        for layers in range(1, L + 1):
            for only, roles in roles_of.items():
                expected = []
                for c in state.configs(b):
                    for role in roles:
                        top = min(L, state.cache.max_layers(c, b, *role, 1))
                        if top < layers:
                            continue
                        co = state.cache.coefficients(c, b, *role)
                        counts = range(layers, top + 1)
                        least_tail = min(co.tail(n) for n in counts)
                        later += least_tail < co.tail(layers)
                        expected.append((c.gpus, min(co.tau(n) for n in counts), least_tail))
                gpus, taus, tails = state._tail_pairs(b, layers, only)
                got = zip(gpus.tolist(), taus.tolist(), tails.tolist(), strict=True)
                assert sorted(got) == sorted(expected)
                compared += len(expected)
    return compared, later


@settings(max_examples=10, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(mixed_memory_bound_instances())
def test_tail_pairs_are_the_least_time_and_tail_of_each_configuration(instance: Instance) -> None:
    """The (T_c, R_c) pairs of the tail staircase (Sec. 4.5) are, for every configuration and role
    that holds at least `layers` layers, the least stage time and the least tail over the layer
    counts it may take from `layers` on, computed here one count at a time."""
    compared, _ = _check_tail_pairs(instance)
    assume(compared)


def test_tail_pairs_where_the_tail_falls_with_more_layers() -> None:
    """The same on a shipped instance where a longer stage hides more of its all-reduce, so the
    least tail is not at the fewest layers (the case a plain lookup at `layers` gets wrong)."""
    instance = load_instance(INSTANCES / "llama3.2-1b-h100x4-l40sx4.toml")
    compared, later = _check_tail_pairs(instance, micro_batches=[4, 8])
    assert compared and later


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.lists(st.tuples(st.integers(-3, 3), st.integers(-3, 3)), min_size=1,
                         max_size=4), min_size=2, max_size=6),
       st.integers(1, 6))
def test_pieces_below_pairs_matches_pieces_below(raw: list[list[tuple[int, int]]],
                                                 n_max: int) -> None:
    """The vectorised dominance test of the S(T) LP's column pruning gives pieces_below's answer
    on every pair, pieces of unequal counts included (small integers make ties common)."""
    pieces = [tuple(Affine(slope / 2, intercept / 2) for slope, intercept in ps) for ps in raw]
    first, second = np.nonzero(~np.eye(len(pieces), dtype=bool))
    vectorised = pieces_below_pairs(pieces, first, second, n_max)
    assert vectorised.tolist() == [pieces_below(pieces[a], pieces[b], n_max)
                                   for a, b in zip(first, second, strict=True)]


def _continuous_stage_sum(positional: PositionalBound, p: int, t: float) -> float:
    """The S(T) LP as first written (Sec. 4.6 before the hull formulation): per class and usable
    configuration a stage share z, layers y in [z, N z] (continuous) and w above every affine
    piece of tau; no column pruning. Solved by scipy, independently of the search's LP code."""
    from scipy.optimize import linprog

    merged = positional._merged(p, t * (1 + 1e-12), math.inf)
    cols: list[tuple[int, int, int, tuple[Affine, ...]]] = []  # (class, config, N, pieces)
    for k, (role, _, _, (most, _)) in enumerate(merged):
        for ci in np.nonzero(most >= 1)[0]:
            pieces = positional.cache.coefficients(positional.configs[ci], positional.b,
                                                   *role).tau_pieces
            cols.append((k, int(ci), int(most[ci]), pieces))
    n_var = 3 * len(cols)  # z, y, w per column
    eq_rows, eq_rhs, ub_rows, ub_rhs = [], [], [], []
    for k, (_, _, mult, _) in enumerate(merged):
        eq_rows.append([1.0 if j % 3 == 0 and cols[j // 3][0] == k else 0.0
                        for j in range(n_var)])
        eq_rhs.append(float(mult))
    eq_rows.append([1.0 if j % 3 == 1 else 0.0 for j in range(n_var)])
    eq_rhs.append(float(positional.L))
    for g in range(len(positional.groups)):
        ub_rows.append([positional.use[cols[j // 3][1], g] if j % 3 == 0 else 0.0
                        for j in range(n_var)])
        ub_rhs.append(float(positional.budget[g]))
    if positional.require_mixed:
        ub_rows.append([-1.0 if j % 3 == 0 and positional.is_mixed[cols[j // 3][1]] else 0.0
                        for j in range(n_var)])
        ub_rhs.append(-1.0)
    for i, (_, _, top, pieces) in enumerate(cols):
        z, y, w = 3 * i, 3 * i + 1, 3 * i + 2
        for coeffs in ({y: 1.0, z: -float(top)}, {z: 1.0, y: -1.0}):  # y <= N z, y >= z
            ub_rows.append([coeffs.get(j, 0.0) for j in range(n_var)])
            ub_rhs.append(0.0)
        for piece in pieces:  # a y + b z - w <= 0
            ub_rows.append([{y: piece.slope, z: piece.intercept, w: -1.0}.get(j, 0.0)
                            for j in range(n_var)])
            ub_rhs.append(0.0)
    cost = [1.0 if j % 3 == 2 else 0.0 for j in range(n_var)]
    res = linprog(cost, A_ub=ub_rows, b_ub=ub_rhs, A_eq=eq_rows, b_eq=eq_rhs, method="highs")
    return math.inf if res.status == 2 else float(res.fun)


def _valid_plans(state: SearchState, b: int, schedule: str,
                 p: int) -> Iterator[tuple[list, tuple[int, ...]]]:
    """(stage sequence, layer split) of every valid plan with p stages, micro-batch b and
    `schedule` (with state.require_mixed: with a mixed-type stage), by enumeration."""
    instance = state.instance
    budget = {g.name: g.num_gpus for g in instance.cluster.node_groups}
    for seq in _sequences(state.configs(b), p, dict(budget)):
        if state.require_mixed and not any(c.mixed for c in seq):
            continue
        for layers in compositions(instance.model.num_layers, p):
            plan = build_plan(instance, seq, layers, micro_batch=b,
                              schedule=schedule,
                              note="test")
            if plan is None or plan_violations(instance, plan, cost_model=state.cost_model):
                continue
            yield seq, layers


def _check_stage_sums(state: SearchState) -> int:
    """S(T) of every enumerable sub-problem against its valid plans (S(T) at a plan's bottleneck
    may not exceed the plan's sum of stage times and pipeline links) and against the continuous
    LP (the hull formulation may only be tighter); the fluid fill and the stage-count rate
    (Sec. 4.1) against every plan. Returns how many bottleneck values were compared."""
    instance = state.instance
    L = instance.model.num_layers
    compared = 0
    for b in state.micro_batches():
        if not state.configs(b):
            continue
        floors = _layer_rate_bounds(state, b, state.configs(b))
        for schedule in instance.training.schedules:
            positional = state.positional_bound(b, schedule)
            for p in range(1, min(L, instance.cluster.num_gpus) + 1):
                sums: dict[float, float] = {}  # least sum of stage times per plan bottleneck
                for seq, layers in _valid_plans(state, b, schedule, p):
                    taus = [state.cache.coefficients(c, b, i == 0, i == p - 1, p > 1).tau(n)
                            for i, (c, n) in enumerate(zip(seq, layers, strict=True))]
                    # The objective's 2 sum_j c_j: each link is its slower side (model (8)).
                    links = [max(state.cache.p2p_side(a, b, z.link_key),
                                 state.cache.p2p_side(z, b, a.link_key))
                             for a, z in itertools.pairwise(seq)]
                    sums[max(taus)] = min(sums.get(max(taus), math.inf),
                                          sum(taus) + 2 * sum(links))
                    # The fluid bounds of Sec. 4.1 hold for every plan.
                    _, layer_floor, rate = floors
                    fluid = fluid_fill(L, p, layer_floor, rate, np.array([max(taus)]))[0]
                    assert fluid <= sum(taus) * (1 + 1e-9), (p, b, fluid, sum(taus))
                    reach = state.rate_by_stage_count(b)[p]
                    assert L / reach <= max(taus) * (1 + 1e-9), (p, b, L / reach, taus)
                for t, least in sums.items():
                    floor = positional.stage_sum_floor(p, t)
                    assert floor <= least * (1 + 1e-9), (b, schedule, p, t, floor, least)
                    reference = _continuous_stage_sum(positional, p, t)
                    assert floor >= reference - 1e-9 * max(1.0, abs(reference)), (floor,
                                                                                   reference)
                    compared += 1
    return compared


@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(mixed_memory_bound_instances(), st.booleans())
def test_stage_sum_floor_against_plans_and_the_continuous_lp(instance: Instance,
                                                             require_mixed: bool) -> None:
    """S(T) (Sec. 4.6) and the fluid bounds (Sec. 4.1), mixed-type stages among the candidates,
    with and without row (M)."""
    state = SearchState(_with_p2p(instance, OVERLAPPED), mixed=True)
    state.require_mixed = require_mixed
    assume(_check_stage_sums(state))


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(-30, 30)), min_size=1, max_size=5),
       st.integers(1, 24))
def test_hull_candidates_span_the_lower_hull(raw: list[tuple[int, int]], count: int) -> None:
    """The S(T) LP keeps only hull_candidates (plus the last count that fits) of each stage's
    points (n, tau(n)): for every last count N, each integer point must lie on or above the line
    between the kept points either side of it, so the hull of the kept points is the hull of
    all of them (the LP would otherwise over-estimate the stage sum)."""
    pieces = tuple(Affine(slope / 4, intercept / 4) for slope, intercept in raw)
    tau = [max(p.at(n) for p in pieces) for n in range(1, count + 1)]
    candidates = hull_candidates(pieces, count)
    for top in range(1, count + 1):
        kept = [n for n in range(1, top) if candidates[n - 1]] + [top]
        for n in range(1, top + 1):
            left = max(k for k in kept if k <= n)
            right = min(k for k in kept if k >= n)
            if left == right:
                continue
            line = tau[left - 1] + (tau[right - 1] - tau[left - 1]) * (n - left) / (right - left)
            assert line <= tau[n - 1] + 1e-9, (pieces, top, n, line, tau[n - 1])


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.data(), st.booleans())
def test_undominated_by_room_matches_the_pairwise_test(data: st.DataObject,
                                                       require_mixed: bool) -> None:
    """The capacity LP's column pruning (per use class, Pareto fronts) keeps exactly the
    configurations the pairwise definition keeps: usable, and no usable one with no more GPUs in
    any group, room for no fewer layers and needing no more beats it (ties: lower index)."""
    positional = _mixed_positional(require_mixed)
    n, L = len(positional.configs), positional.L
    most = np.array(data.draw(st.lists(st.integers(0, min(L, 4)), min_size=n, max_size=n)))
    fewest = np.array([data.draw(st.integers(1, int(k))) if k else 0 for k in most])
    beats = (positional._leaner & (most[:, None] >= most[None, :])
             & (fewest[:, None] <= fewest[None, :]))
    expected = _survivors(beats, most >= 1)
    assert positional._undominated_by_room(most, fewest).tolist() == expected.tolist()


@settings(max_examples=20, deadline=None, derandomize=True)
@given(st.data(), st.booleans(), st.sampled_from([(True, False, True), (False, False, True),
                                                   (False, True, True), (True, True, False)]))
def test_undominated_at_matches_the_pairwise_test(data: st.DataObject, require_mixed: bool,
                                                  role: tuple[bool, bool, bool]) -> None:
    """S(T)'s column pruning (pairs listed once per role) keeps exactly the configurations the
    pairwise definition keeps: usable, and no usable one with no more GPUs in any group, room for
    no fewer layers, stage time no larger on [1, L] and (with links) no slower least link side
    beats it (ties: lower index)."""
    positional = _mixed_positional(require_mixed)
    n, L = len(positional.configs), positional.L
    most = np.array(data.draw(st.lists(st.integers(0, min(L, 3)), min_size=n, max_size=n)))
    pieces = [positional.cache.coefficients(c, positional.b, *role).tau_pieces
              for c in positional.configs]
    pi = positional.link_floor()
    links = role[2] and not (role[0] and role[1])
    faster = np.array([[bool(positional._leaner[a, b]) and pieces_below(pieces[a], pieces[b], L)
                        and (not links or pi[a] <= pi[b]) for b in range(n)] for a in range(n)])
    beats = faster & (most[:, None] >= most[None, :])
    expected = _survivors(beats, most >= 1)
    assert positional._undominated_at(role, most).tolist() == expected.tolist()
    # Ties: of two configurations that beat each other, alone in the LP, the lower index stays.
    for a, b in zip(*np.nonzero(np.triu(faster & faster.T, 1)), strict=True):
        alone = np.zeros(n, dtype=int)
        alone[[a, b]] = 1
        assert positional._undominated_at(role, alone).tolist() == [a]


def _survivors(beats: np.ndarray, usable: np.ndarray) -> np.ndarray:
    """The pairwise definition: the usable configurations no usable one beats (beats[a, b]: a
    dominates b); of two that beat each other, the lower index stays."""
    beats = beats & usable[:, None]
    idx = np.arange(len(usable))
    beats = beats & ~(beats & beats.T & (idx[:, None] > idx[None, :]))
    return np.nonzero(usable & ~beats.any(axis=0))[0]


_POSITIONAL: dict[bool, PositionalBound] = {}


def _mixed_positional(require_mixed: bool) -> PositionalBound:
    """The positional bound of a shipped instance with single-type and mixed configurations."""
    if require_mixed not in _POSITIONAL:
        state = SearchState(load_instance(INSTANCES / "llama3.2-1b-h100x4-l40sx4.toml"),
                            mixed=True)
        state.require_mixed = require_mixed
        b = max(state.micro_batches(), key=lambda b: len(state.configs(b)))
        _POSITIONAL[require_mixed] = state.positional_bound(b, "1f1b")
    positional = _POSITIONAL[require_mixed]
    assert positional.is_mixed.any() and not positional.is_mixed.all()
    return positional


def test_fluid_fill_by_hand() -> None:
    """fluid_fill on a case solved by hand: 4 layers in 2 stages, s = 0.2, C = 8, T = 0.55. A
    stage holds at most T / s = 2.75 layers, so only the split (2, 2) is left, each stage at its
    best tau = 0.5 (2 / tau + 2 / tau = C, and 0.4 <= tau <= T): the sum is 1. The
    Cauchy-Schwarz fill, which allows (3, 1), gives (sqrt(3) + 1)^2 / 8 = 0.93."""
    capped, free = fluid_fill(4, 2, 0.2, 8.0, np.array([0.55, np.inf]))
    schwarz = (math.sqrt(3) + 1) ** 2 / 8
    assert schwarz + 0.02 < capped <= 1.0 + 1e-12  # (a grid of multipliers: 0.99)
    assert free <= schwarz + 1e-12
    assert math.isinf(fluid_fill(4, 2, 0.2, 8.0, np.array([0.35]))[0])  # stages of <= 1 layer


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.data(), st.booleans())
def test_layer_ranges_match_their_definition(data: st.DataObject, finite_tail: bool) -> None:
    """The positional LPs' layer range of every configuration at a position (most and fewest
    layers with stage time <= t, tail <= r and memory within capacity), read off the per-role
    table, against the definition applied to the time and tail matrices directly."""
    positional = _mixed_positional(False)
    role = data.draw(st.sampled_from([(True, False, True), (False, False, True),
                                      (False, True, True), (True, True, False)]))
    in_flight = data.draw(st.integers(1, 4))
    tau_m, tail_m = positional._matrices(role)
    t = data.draw(st.sampled_from(sorted(set(tau_m[np.isfinite(tau_m)].tolist()))))
    tails = sorted(set(tail_m[np.isfinite(tail_m)].tolist()))
    r = data.draw(st.sampled_from(tails)) if finite_tail else math.inf
    room = positional._room(role, in_flight)
    most, fewest = positional._layers(room[None, :], positional._layer_table(role, t, r))
    most, fewest = most[0], fewest[0]
    ok = ((tau_m <= t) & (tail_m <= r)
          & (np.arange(tau_m.shape[1])[None, :] < room[:, None]))
    for c in range(len(positional.configs)):
        counts = np.nonzero(ok[c])[0] + 1
        expected = (counts.max(), counts.min()) if len(counts) else (0, 0)
        assert (most[c], fewest[c]) == expected, (c, most[c], fewest[c], expected)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.integers(1, 6), st.data())
def test_combine_is_the_max_plus_convolution(n: int, data: st.DataObject) -> None:
    """Node groups combine by c[k, f] = max over k1 + k2 = k and disjoint role sets f1 | f2 = f
    of a[k1, f1] + b[k2, f2] (Sec. 4.3), here by enumeration; NEG marks what cannot be had."""
    values = st.one_of(st.just(NEG), st.integers(0, 9).map(float))
    a, b = (np.array(data.draw(st.lists(st.lists(values, min_size=4, max_size=4), min_size=n,
                                        max_size=n))) for _ in range(2))
    got = _combine(a, b)
    for k in range(n):
        for f in range(4):
            best = max([a[k1, f1] + b[k - k1, f2] for k1 in range(k + 1) for f1 in range(4)
                        for f2 in range(4) if not f1 & f2 and f1 | f2 == f] + [NEG])
            assert got[k, f] == best, (k, f, got[k, f], best)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.lists(st.integers(0, 30), min_size=2, max_size=6), st.integers(1, 4),
       st.integers(1, 60))
def test_cap_below_is_the_end_of_the_last_interval_that_may_beat(fills: list[int], m: int,
                                                                  stop: int) -> None:
    """BottleneckCosts.cap_below (Sec. 4.2): every bottleneck in an interval whose bound is below
    `stop` is at most the cap, and the cap is the end of such an interval (or inf)."""
    grid = np.arange(1.0, len(fills) + 1)  # intervals [1, 2), [2, 3), ..., [n, inf)
    costs = BottleneckCosts(grid, np.array(fills, dtype=float), m)
    bounds = np.maximum(np.array(fills, dtype=float), grid) + (m - 1) * grid
    cap = costs.cap_below(float(stop))
    ends = [*grid[1:].tolist(), math.inf]
    may = [end for bound, end in zip(bounds, ends, strict=True) if bound < stop]
    assert cap == (max(may) if may else grid[0])


@pytest.mark.parametrize("require_mixed", [False, True])
def test_stage_sum_pruning_leaves_s_unchanged(monkeypatch: pytest.MonkeyPatch,
                                              require_mixed: bool) -> None:
    """S(T) drops a configuration another one beats in GPUs, room, stage time and least link
    side (_undominated_at): the LP optimum must be the one over every usable configuration, for
    every micro-batch, stage count and a spread of bottlenecks. On this Ethernet cluster the
    link sides differ enough that pruning on stage time alone changes S."""
    state = SearchState(load_instance(INSTANCES / "llama3.2-1b-rtx4090-a10.toml"), mixed=True)
    state.require_mixed = require_mixed
    pruned: dict[tuple[int, int, float], float] = {}
    for b in state.micro_batches():
        if not state.configs(b):
            continue
        positional = state.positional_bound(b, "1f1b")
        t_values = sorted({float(v) for role in ROLES
                           for v in positional._matrices(role)[0].ravel() if np.isfinite(v)})
        for q in (0.05, 0.1, 0.2, 0.3, 0.4, 0.6, 0.8, 1.0):
            t = t_values[int(q * (len(t_values) - 1))]
            for p in range(1, min(positional.L, 12) + 1):
                pruned[(b, p, t)] = positional.stage_sum_floor(p, t)
        positional._sums.clear()
    monkeypatch.setattr(PositionalBound, "_undominated_at",
                        lambda self, role, most: np.nonzero(most >= 1)[0])
    for (b, p, t), value in pruned.items():
        full = state.positional_bound(b, "1f1b").stage_sum_floor(p, t)
        assert value == pytest.approx(full, rel=1e-9, abs=1e-12), (b, p, t, value, full)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.floats(0.01, 10.0), min_size=1, max_size=30, unique=True),
       st.lists(st.floats(0.0, 100.0), min_size=30, max_size=30), st.floats(0.0, 3.0),
       st.integers(1, 20), st.data())
def test_refined_interval_cost_is_a_valid_and_exact_floor(
        raw_t: list[float], raw_s: list[float], fill: float, m: int,
        data: st.DataObject) -> None:
    """The walk's interval bound (Sec. 4.5) with the cost's own form: the stage sum S does not
    grow with T, the cost pairs an interval's least T with S at its largest. Refined, it must
    stay at or below the cost of every candidate bottleneck in the interval (else it would cut
    plans), never drop below the plain interval bound, and with enough splits equal the least
    cost of a single candidate."""
    t_values = sorted(raw_t)
    stage_sum = dict(zip(t_values, sorted(raw_s, reverse=True), strict=False))

    def cost(a: float, b: float) -> float:
        return max(fill, a, stage_sum[b]) + (m - 1) * a

    lo = data.draw(st.integers(0, len(t_values) - 1))
    hi = data.draw(st.integers(lo, len(t_values) - 1))
    splits = data.draw(st.integers(0, 12))
    best_point = min(cost(t, t) for t in t_values[lo:hi + 1])
    refined = refined_interval_cost(cost, t_values, t_values[lo], t_values[hi], splits,
                                    math.inf)
    assert cost(t_values[lo], t_values[hi]) <= refined <= best_point + 1e-12
    exact = refined_interval_cost(cost, t_values, t_values[lo], t_values[hi],
                                  2 * (hi - lo + 1), math.inf)
    assert exact == pytest.approx(best_point, abs=1e-12)
    # With a limit the splitting stops once the least piece reaches it: still a valid floor.
    limit = data.draw(st.floats(0.0, 100.0))
    capped = refined_interval_cost(cost, t_values, t_values[lo], t_values[hi], splits, limit)
    assert cost(t_values[lo], t_values[hi]) <= capped <= best_point + 1e-12


def _check_integer_sequences(state: SearchState) -> int:
    """The integer capacity program (PositionalBound.integer_sequence) against every valid plan
    of every enumerable sub-problem: at each plan's bottleneck T and tail R it must admit some
    sequence (every plan is one of its points; checked at the Pareto-least (T, R) pairs, the
    others follow by monotonicity), and the sequence it returns there must keep the GPU
    budgets and leave room at its real positions (role, micro-batches in flight) for a split of
    the L layers with every stage time <= T and tail <= R. Returns how many pairs were
    checked."""
    instance = state.instance
    L = instance.model.num_layers
    checked = 0
    for b in state.micro_batches():
        m = instance.training.global_batch_size // b
        for schedule in instance.training.schedules:
            positional = state.positional_bound(b, schedule)
            for p in range(1, min(L, instance.cluster.num_gpus) + 1):
                pairs: set[tuple[float, float]] = set()
                for seq, layers in _valid_plans(state, b, schedule, p):
                    coeffs = [state.cache.coefficients(c, b, i == 0, i == p - 1, p > 1)
                              for i, c in enumerate(seq)]
                    pairs.add((max(co.tau(n) for co, n in zip(coeffs, layers, strict=True)),
                               max(co.tail(n) for co, n in zip(coeffs, layers, strict=True))))
                least = [(t, r) for t, r in pairs
                         if not any(u <= t and v <= r and (u, v) != (t, r) for u, v in pairs)]
                for t, r in least:
                    for most_layers in (False, True):
                        found = positional.integer_sequence(p, t, r, most_layers=most_layers)
                        assert found is not None, (b, schedule, p, t, r, most_layers)
                        _assert_sequence_fits(state, found, b, schedule, m, t, r)
                    assert positional.holds_all_layers_integer(p, t, r)
                    checked += 1
    return checked


def _assert_sequence_fits(state: SearchState, seq: list, b: int, schedule: str, m: int,
                          t: float, r: float) -> None:
    """`seq` keeps every node group's GPU budget and has room at its real positions for every
    layer with stage times <= t and tails <= r."""
    instance, cache = state.instance, state.cache
    p, L = len(seq), instance.model.num_layers
    for g in instance.cluster.node_groups:
        assert sum(c.gpus_in(g.name) for c in seq) <= g.num_gpus, (g.name, seq)
    low = high = 0
    for i, c in enumerate(seq):
        role = (i == 0, i == p - 1, p > 1)
        room = cache.max_layers(c, b, *role, cache.in_flight(schedule, p - 1 - i, p, m))
        co = cache.coefficients(c, b, *role)
        ok = [n for n in range(1, min(room, L) + 1)
              if co.tau(n) <= t * (1 + 1e-9) and co.tail(n) <= r * (1 + 1e-9)]
        assert ok, (i, c, room)
        low, high = low + min(ok), high + max(ok)
    assert low <= L <= high, (low, L, high)


@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(mixed_memory_bound_instances(), st.booleans())
def test_integer_sequence_admits_every_plan(instance: Instance, require_mixed: bool) -> None:
    """Sec. 4.4 with integer stage counts, mixed-type stages among the candidates, with and
    without row (M)."""
    state = SearchState(_with_p2p(instance, OVERLAPPED), mixed=True)
    state.require_mixed = require_mixed
    assume(_check_integer_sequences(state))


@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(memory_bound_instances())
def test_integer_sequence_admits_every_single_type_plan(instance: Instance) -> None:
    """The same on single-type stages, where in-flight memory decides what fits where."""
    assume(_check_integer_sequences(SearchState(_with_p2p(instance, OVERLAPPED))))


def test_integer_program_is_tighter_than_the_lp_at_1024_gpus() -> None:
    """Where the GPU budgets bind in whole stages the integer program of Sec. 4.4 rules out
    what its LP allows: on gpt3-175b-4types-x1024, (p, b) = (18, 12), at the positional floor
    the LP holds every layer with every tail from 0.605 s, the integer program only from
    1.095 s (cost model and space of 2026-12-02 with TP 3 and 6; before those TP degrees the
    test used (20, 12): 0.661 and 0.819 s; formulations Sec. 4.4 cites (26, 12), 0.39 and
    0.91 s of an older cost model). Guards the integer path against falling back to the LP."""
    inst = load_instance(INSTANCES / "gpt3-175b-4types-x1024.toml")
    state = SearchState(inst, mixed=False)
    p, b = 18, 12
    p_cap = min(inst.model.num_layers, inst.cluster.num_gpus)
    t = state.bottleneck_floor(SubProblem(p, b, "1f1b"), p_cap)
    positional = state.positional_bound(b, "1f1b")
    assert positional.holds_all_layers(p, t, 0.62)
    assert not positional.holds_all_layers_integer(p, t, 0.62)
    assert positional.integer_sequence(p, t, 0.62) is None
    assert positional.holds_all_layers_integer(p, t, 1.11)
    sequence = positional.integer_sequence(p, t, 1.11)
    assert sequence is not None and len(sequence) == p


def test_seed_of_the_integer_program_at_1024_gpus() -> None:
    """The seed of (p, b) = (27, 12) on gpt3-175b-4types-x1024 (solve.positional_seed_sequence
    with the exact layer split) is a valid plan, no faster than that sub-problem's strong
    bounds (LP and integer walks, computed independently of it).

    It used to beat the Metis-style search's 16.062 s (its plan after 300 s under the cost
    model of 2026-12-02, fp32 gradients with bf16). Since stages over more than a node without
    filling whole nodes joined the space (formulations Sec. 1.3, the same day), the positional
    floor this seed starts from takes those configurations too and the seed here is 17.29 s: a
    weaker warm start at this sub-problem (the search's plan at a 30 s limit is unchanged),
    left as a known regression of the heuristic, not asserted away.

    Since TP 3 and 6 joined the space (96 heads; formulations Sec. 1) the integer program's
    sequence there counts TP-3 stages by their GPUs (a relaxation: the bound stays valid), but
    their replicas leave 2-GPU holes on every 8-GPU node, and the sequence does not pack (seven
    TP-3 stages of 18 L40S GPUs need 21 of the 16 nodes): the seed builds no plan at (p, 12)
    for p = 16-27. Asserted as that, so that a seed failing for another reason still fails the
    test; where it builds a plan, the plan must be valid and above the bounds."""
    from haap_solver.search.heuristic import seed_from_sequence
    from haap_solver.search.space import canonical_placement
    from haap_solver.search.warm_start import positional_seed_sequence

    inst = load_instance(INSTANCES / "gpt3-175b-4types-x1024.toml")
    # (The Metis-style figure was measured with overlapped pipeline sends.)
    inst = replace(inst, training=replace(inst.training, pipeline_p2p="overlapped"))
    state = SearchState(inst, mixed=False)
    sub = SubProblem(27, 12, "1f1b")
    p_cap = min(inst.model.num_layers, inst.cluster.num_gpus)
    sequence = positional_seed_sequence(state, sub, p_cap)
    assert sequence is not None
    plan = seed_from_sequence(state.cache, sequence, sub, note="test")
    if plan is None:
        assert canonical_placement(inst, sequence) is None
        assert any(c.node_group and c.gpus_per_node % c.tp for c in sequence)
        return
    assert plan_violations(inst, plan, cost_model=state.cost_model) == []
    time_s = state.cost_model.evaluate(plan).iteration_time_s
    floors = _layer_rate_bounds(state, 12, state.configs(12))
    for integer in (False, True):  # (an incumbent above the plan: the walks run past it)
        bound = strong_lower_bound(state, sub, floors, p_cap, 1.05 * time_s, integer=integer)
        assert bound <= time_s * (1 + 1e-9), (integer, bound, time_s)


@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(mixed_memory_bound_instances())
def test_bounds_from_the_top_are_valid(instance: Instance) -> None:
    """The first process's bounds on plans with a mixed stage (_bound_mixed_from_the_top, with
    two processes) never exceed a sub-problem's best such plan, and leave the state as it was
    (no mixed stages required, its own mixed setting)."""
    from haap_solver.search.second_process import _bound_mixed_from_the_top

    state = SearchState(instance, mixed=False)
    p_max = min(instance.model.num_layers, instance.cluster.num_gpus)
    bounds = _bound_mixed_from_the_top(instance, state, math.inf, math.inf, p_max,
                                       stop=lambda: False)
    assert state.mixed is False and state.require_mixed is False and state.mixed_dominance
    truth_state = SearchState(instance, mixed=True)
    truth_state.require_mixed = True
    checked = 0
    for sub, bound in bounds.items():
        truth = _sub_problem_optima(instance, truth_state, sub)
        if truth is not None:
            assert bound <= truth[0] * (1 + 1e-9), (sub, bound, truth[0])
            checked += 1
    assume(checked)


def test_bounds_from_the_top_skip_what_the_second_process_bounded() -> None:
    """The first process skips the sub-problems the second has sent bounds for (here every
    other one), one micro-batch size at a time; what it bounds is what it would have bounded
    alone, and it sends each bound as it comes (on_bound)."""
    from haap_solver.search.second_process import _bound_mixed_from_the_top

    instance = load_instance(INSTANCES / "llama3.2-1b-h100x4-l40sx4.toml")
    p_max = min(instance.model.num_layers, instance.cluster.num_gpus)
    alone = _bound_mixed_from_the_top(instance, SearchState(instance, mixed=False), 3.6,
                                      math.inf, p_max, stop=lambda: False)
    assert len(alone) > 10
    elsewhere = {sub: 0.0 for sub in sorted(alone, key=lambda s: (s.micro_batch,
                                                                  s.num_stages))[::2]}
    sent: list[SubProblem] = []
    helped = _bound_mixed_from_the_top(
        instance, SearchState(instance, mixed=False), 3.6, math.inf, p_max, stop=lambda: False,
        on_bound=lambda sub, bound: sent.append(sub), bounded_elsewhere=elsewhere)
    assert set(helped) == set(alone) - set(elsewhere)
    assert all(helped[sub] == alone[sub] for sub in helped)
    assert all(bound <= 3.6 for bound in alone.values())
    sizes = [sub.micro_batch for sub in sent]
    assert sent and len(set(sizes)) == len([k for k, size in enumerate(sizes)
                                   if k == 0 or size != sizes[k - 1]])  # (each size in one run)


def test_mixed_bounds_are_the_same_without_the_dominance_filter() -> None:
    """The first process bounds the plans with a mixed stage without the dominance filter of
    mixed configurations (SearchState.mixed_dominance, a third of the set-up): every cheap
    bound equals the one with the filter, every strong bound without an incumbent agrees with
    it to the resolution of its walk over candidate bottlenecks (the candidates are the
    configurations' stage times, so the dropped configurations add candidates: on this
    instance one bound of 56 ends 0.02% higher without the filter, since the device matmul
    ceilings), and against an incumbent both prune the same sub-problems (above it the value
    returned is where the search stopped), here on the instance where a mixed stage wins."""
    instance = load_instance(INSTANCES / "llama3.2-1b-h100x4-l40sx4.toml")
    p_cap = min(instance.model.num_layers, instance.cluster.num_gpus)
    bounds: dict[bool, dict[SubProblem, tuple[float, float, bool]]] = {}
    sizes = {}
    for dominance in (True, False):
        state = SearchState(instance, mixed=True)
        state.mixed_dominance = dominance
        state.require_mixed = True
        out = bounds.setdefault(dominance, {})
        sizes[dominance] = sum(len(state.configs(b)) for b in state.micro_batches())
        for b in state.micro_batches():
            configs = state.configs(b)
            if not any(c.mixed for c in configs):
                continue
            floors = _layer_rate_bounds(state, b, configs)
            for p in range(1, p_cap + 1):
                sub = SubProblem(p, b, "1f1b")
                out[sub] = (lower_bound(state, sub, floors),
                            strong_lower_bound(state, sub, floors, p_cap),
                            strong_lower_bound(state, sub, floors, p_cap, 3.6) >= 3.6)
    assert sizes[False] > sizes[True]  # (the filter drops some here)
    assert bounds[True] and bounds[True].keys() == bounds[False].keys()
    for sub, (cheap, strong, prunes) in bounds[True].items():
        other_cheap, other_strong, other_prunes = bounds[False][sub]
        assert cheap == other_cheap, sub
        assert strong == pytest.approx(other_strong, rel=1e-3), sub
        assert prunes == other_prunes, sub
    assert any(pruned for _, _, pruned in bounds[True].values())


def test_raise_bound_takes_the_larger_bound_per_sub_problem() -> None:
    """_raise_bound: the least over sub-problems of the larger of two bounds, never above the
    plan, with gap and status following."""
    from haap_solver.result import SolveResult
    from haap_solver.search.second_process import _raise_bound

    a, b, c = SubProblem(2, 1, "1f1b"), SubProblem(3, 1, "1f1b"), SubProblem(4, 1, "1f1b")

    def result() -> SolveResult:
        return SolveResult(instance="x", method="haap", plan=object(),
                           evaluation=None, status="feasible", iteration_time_s=14.0,
                           best_bound_s=10.0, gap=4 / 14, wall_s=1.0)

    raised = result()
    _raise_bound(raised, {a: 10.0, b: 12.0, c: 15.0}, {a: 13.0, c: 11.0})
    assert raised.best_bound_s == 12.0 and raised.gap == pytest.approx(2 / 14)
    assert raised.status == "feasible"
    capped = result()
    _raise_bound(capped, {a: 10.0}, {a: 20.0})
    assert capped.best_bound_s == 14.0 and capped.gap == 0 and capped.status == "optimal"
    kept = result()
    _raise_bound(kept, {a: 9.0}, {})  # never lowered
    assert kept.best_bound_s == 10.0


@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(memory_bound_instances(), st.sampled_from([0.1, 0.3]), st.sampled_from(["highs", "cpsat"]))
def test_sub_problem_bounds_with_a_relative_gap_are_valid(instance: Instance, relative_gap: float,
                                                          backend: str) -> None:
    """With a relative gap the search closes a sub-problem once nothing in it lies below the
    threshold (the incumbent less that share): the bound it keeps for it (bounds_out, which a
    later search and the other process start from) is then the threshold, not the incumbent,
    since the sub-problem's own optimum may lie between the two. Every such bound is at most
    the sub-problem's optimum by enumeration."""
    import importlib

    from haap_solver.errors import InfeasibleError

    bnb = importlib.import_module("haap_solver.search.branch_and_bound")
    state = SearchState(instance)
    bounds: dict[SubProblem, tuple[float, float | None]] = {}
    try:
        bnb.search(instance, backend=backend, time_limit_s=30, threads=1, seed=0,
                   state=state, max_stages=None, progress=None, seed_with_baselines=False,
                   mixed=False, bounds_out=bounds, relative_gap=relative_gap)
    except InfeasibleError:
        assume(False)
    checked = 0
    for sub, (bound, _) in bounds.items():
        truth = _sub_problem_optima(instance, state, sub)
        if truth is not None:
            # (CP-SAT's models are exact up to their scaling bound: test_models.)
            assert bound <= truth[0] * (1 + 1e-6), (sub, bound, truth[0])
            checked += 1
    assume(checked)


def _near_tie_lp(base_s: float, rotate: int) -> tuple[list[np.ndarray], float]:
    """One stage of 1-4 layers, its cost base_s plus up to 5e-8 s (rotated over the columns),
    holding 2.5 layers: the LP takes two columns, and its minimum (enumerated over the pairs)
    is returned with the LP, column-wise."""
    layers = np.array([1.0, 2.0, 3.0, 4.0])
    costs = np.array([base_s + 5e-8 * ((j + rotate) % 4) / 3 for j in range(4)])
    target = 2.5
    best = min(costs[i] * (layers[k] - target) / (layers[k] - layers[i])
               + costs[k] * (target - layers[i]) / (layers[k] - layers[i])
               for i in range(4) for k in range(4) if layers[i] < target < layers[k])
    lp = [np.array([1.0, target]), np.array([1.0, target]), costs,
          np.arange(0, 8, 2), np.tile([0, 1], 4), np.ravel([[1.0, n] for n in layers])]
    return lp, float(best)


@pytest.mark.parametrize("base_s", [1e-6, 1e-4, 1e-3, 1.0, 1e4])
def test_lp_floor_is_below_the_lp_minimum_at_every_scale(base_s: float) -> None:
    """The LP floors of the bounds (stage_sum_floor) solve LPs whose costs are seconds: HiGHS's
    absolute dual tolerance (1e-7) let it call optimal a value 0.83 x 5e-8 s above the base
    where the minimum is 0.17 x (6% above the minimum at 1e-6 s), so a lower bound built on it
    was not one. lp_minimum_floor stays at most the minimum, within 1e-9 of it."""
    seen_above = False
    for rotate in range(4):
        lp, best = _near_tie_lp(base_s, rotate)
        status, value = lp_minimum_floor(*lp, new_bound_lp_solver(), weight=4.0)
        assert status == "optimal"
        assert value <= best, f"rotate {rotate}: floor {value!r} above the minimum {best!r}"
        assert value >= best * (1 - 1e-9), f"rotate {rotate}: floor {value!r} vs {best!r}"
        raw = _solve_lp(*lp, new_bound_lp_solver())[1]
        seen_above = seen_above or raw > best * (1 + 1e-12)
    if base_s <= 1e-4:  # (the hazard the floor guards against is real at these scales)
        assert seen_above
