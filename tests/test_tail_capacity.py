"""The GPU-granular capacity with a tail threshold (formulations Sec. 4.9) is
valid: every plan of a sub-problem is a selection it admits at the plan's own bottleneck and
largest tail, and the bound it gives never exceeds the sub-problem's least iteration time, by
enumeration of every plan of small instances (as tests/test_bounds.py does for the other
bounds). Its dynamic program matches the one of the capacity bound it extends."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from bound_sweep import sizes_and_schedules, valid_plans
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from test_bounds import (
    P2P_MODES,
    SETTINGS,
    _with_p2p,
    memory_bound_instances,
    mixed_memory_bound_instances,
)
from tiny_instances import tiny_instance

from haap_solver.instance import Instance, load_instance
from haap_solver.search.bounds import NEG, _group_history, half_unit_tables, role_tables
from haap_solver.search.formulation import SubProblem
from haap_solver.search.solve import SearchState
from haap_solver.search.space import StageConfig
from haap_solver.search.subproblem_bounds import (
    _layer_rate_bounds,
    granular_lower_bound,
    tail_capacity_bound,
)

INSTANCES = Path(__file__).resolve().parent.parent / "instances"


@settings(max_examples=80, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(1, 4),
                          st.lists(st.sampled_from([0, 0, 1, 2, 5]), min_size=3, max_size=3)),
                max_size=5),
       st.integers(0, 10), st.integers(1, 6))
def test_role_tables_match_the_group_dynamic_program(gains: list[tuple[int, list[int]]],
                                                     width: int, p_max: int) -> None:
    """role_tables (middle stages by stage count, then one first and one last stage) against
    `_group_history`, the capacity bound's program (itself checked against enumeration in
    tests/test_bounds.py)."""
    gains = [(w, n) for w, n in gains if w <= width]
    sizes = np.array([w for w, _ in gains], dtype=int)
    values = np.array([n for _, n in gains], dtype=int).reshape(len(gains), 3)
    got = role_tables(sizes, values, width, p_max)
    hist, _ = _group_history(gains, width, p_max, 1)  # type: ignore[arg-type]
    want = hist[:, :, -1]
    _assert_same_tables(got, want, tol=0.0)


def _assert_same_tables(got: np.ndarray, want: np.ndarray, tol: float) -> None:
    """Two (count, role set) tables of layers agree: both infeasible (below NEG / 2), or equal
    (tol 0) or less than `tol` apart."""
    assert got.shape == want.shape
    for k in range(want.shape[0]):
        for roles in range(want.shape[1]):
            if want[k, roles] < NEG / 2:
                assert got[k, roles] < NEG / 2, (k, roles, got[k, roles])
            else:
                apart = abs(got[k, roles] - want[k, roles])
                assert apart == 0 if tol == 0 else apart < tol, (
                    k, roles, got[k, roles], want[k, roles])


def _plans(state: SearchState, sub: SubProblem,
           limit: int = 4000) -> Iterator[tuple[float, float, float]] | None:
    """(bottleneck period, largest tail, iteration time) of every valid plan of `sub`, as the
    capacity tables charge them (the period with the stage's sends: blocking, tau + c_{i-1} +
    c_i; overlapped, max(tau, 2 c_j)); None where there are more than `limit` candidates."""
    plans = valid_plans(state, sub, limit=limit)
    if plans is None:
        return None
    return iter([(plan.bottleneck, plan.tail, plan.iteration_s) for plan in plans])


def _check(state: SearchState) -> int:
    """Every enumerable sub-problem: the predicate admits each plan at its own (T, R), and the
    bound (walk and prune test, against several incumbents) stays at or below the least
    iteration time. Returns how many sub-problems were checked."""
    instance = state.instance
    p_cap = min(instance.model.num_layers, instance.cluster.num_gpus)
    checked = 0
    for b, floors, schedule in sizes_and_schedules(state):
        capacity = state.tail_capacity(b, p_cap, schedule)
        for p in range(1, p_cap + 1):
            sub = SubProblem(p, b, schedule)
            plans = _plans(state, sub)
            if plans is None:
                continue
            best = math.inf
            for period, tail, iteration in plans:
                assert capacity.holds_all_layers(p, period, tail), (sub, period, tail)
                best = min(best, iteration)
            if not math.isfinite(best):
                continue
            checked += 1
            for incumbent in (math.inf, 1.2 * best, 1.05 * best, best, 0.7 * best):
                for prune_only in (False, True):
                    bound = tail_capacity_bound(state, sub, floors, p_cap, incumbent,
                                                prune_only=prune_only)
                    assert bound <= best * (1 + 1e-9), (sub, incumbent, prune_only, bound,
                                                        best)
    return checked


@settings(max_examples=8, **SETTINGS)  # type: ignore[arg-type]
@given(memory_bound_instances(), st.sampled_from(P2P_MODES))
def test_tail_capacity_never_exceeds_the_sub_problem_optimum(instance: Instance,
                                                             p2p: str) -> None:
    _check(SearchState(_with_p2p(instance, p2p)))


@settings(max_examples=4, **SETTINGS)  # type: ignore[arg-type]
@given(mixed_memory_bound_instances(), st.sampled_from(P2P_MODES))
def test_tail_capacity_on_two_device_types(instance: Instance, p2p: str) -> None:
    """Two node groups of different devices, single-type stages."""
    _check(SearchState(_with_p2p(instance, p2p)))


@settings(max_examples=2, **SETTINGS)  # type: ignore[arg-type]
@given(mixed_memory_bound_instances(), st.sampled_from(P2P_MODES), st.booleans())
def test_tail_capacity_with_mixed_stages(instance: Instance, p2p: str,
                                         require_mixed: bool) -> None:
    """Mixed-type stages among the candidates (Sec. 4.9, *Mixed stages*: half-units): every
    plan, mixed stages included, is a selection the tables admit at its own (T, R), and the
    bound stays below the least plan; in the search over plans with a mixed stage
    (require_mixed) too, where the bottleneck floor it starts from is the tables' own."""
    state = SearchState(_with_p2p(instance, p2p), mixed=True)
    assume(any(c.mixed for b in state.micro_batches() for c in state.configs(b)))
    state.require_mixed = require_mixed
    assume(_check(state))
    # Mixed-type stages alone (a restricted space, as a target's stage filter makes it): the
    # single-type items, which mostly decide the bound above, cannot stand in for them.
    only_mixed = SearchState(_with_p2p(instance, p2p), mixed=True)
    only_mixed.stage_filter = _mixed_only
    only_mixed.require_mixed = require_mixed
    _check(only_mixed)


def _mixed_only(c: StageConfig) -> bool:
    return c.mixed


def test_tail_capacity_with_mixed_stages_over_three_groups() -> None:
    """Three node groups of three device types: a mixed stage over all three is an item in its
    two largest parts' groups and a free item in the third (half_unit_tables' free items)."""
    inst = tiny_instance(devices=[("A100-80G", 3.0), ("V100-32G", 3.0), ("T4", 3.0)],
                         groups=[(0, 1, 2), (1, 1, 1), (2, 1, 1)], layers=3, hidden=512,
                         heads=4, seq=512, batch=4, recompute=("none",), zero=0,
                         nic_gbit_s=1.0)
    for p2p, require_mixed in zip(P2P_MODES, (True, False), strict=True):
        state = SearchState(_with_p2p(inst, p2p), mixed=True)
        assert any(len(c.groups) == 3 for b in state.micro_batches()
                   for c in state.configs(b)), "no mixed stage over three groups"
        state.require_mixed = require_mixed
        assert _check(state) > 0
        only_mixed = SearchState(_with_p2p(inst, p2p), mixed=True)
        only_mixed.stage_filter = _mixed_only
        only_mixed.require_mixed = require_mixed
        assert _check(only_mixed) > 0


def test_tail_capacity_on_slow_nics_where_the_tail_decides() -> None:
    """Data-parallel stages over slow NICs, where the all-reduce tail is a large part of the
    iteration: the bound must be valid there too and, on some sub-problem, above the
    GPU-granular step alone."""
    inst = tiny_instance(devices=[("A100-80G", 6.0), ("V100-32G", 6.0)],
                         groups=[(0, 2, 2), (1, 2, 2)], layers=4, hidden=1024, heads=4,
                         seq=256, batch=8, recompute=("none",), zero=0, overlap=False,
                         nic_gbit_s=1.0)
    lifted = 0
    for p2p in P2P_MODES:
        state = SearchState(_with_p2p(inst, p2p))
        assert _check(state) > 0
        p_cap = min(inst.model.num_layers, inst.cluster.num_gpus)
        for b in state.micro_batches():
            floors = _layer_rate_bounds(state, b, state.configs(b))
            for p in range(1, p_cap + 1):
                sub = SubProblem(p, b, "1f1b")
                granular = granular_lower_bound(state, sub, floors, p_cap)
                if math.isfinite(granular):
                    lifted += tail_capacity_bound(state, sub, floors, p_cap) > granular * (
                        1 + 1e-6)
    assert lifted, "the tail threshold never lifted the granular step's bound"


def test_tail_capacity_closes_what_the_lp_free_bounds_left_open() -> None:
    """On 32 cloud VMs of 4 GPUs behind one slow NIC each, where the data-parallel tail is a
    large part of the iteration: against a plan of 4.659 s (the best a 30 s search found),
    sub-problem (p, b) = (4, 256) has a GPU-granular bound with the tail staircase (Sec.
    4.3, 4.5; the LP-free bound before this one) below the plan, and the tail threshold's
    prune test, still without an LP, closes it."""
    inst = load_instance(INSTANCES / "gpt3-2.7b-a100x32-v100x96-4gpu.toml")
    state = SearchState(inst)
    p_cap = min(inst.model.num_layers, inst.cluster.num_gpus)
    sub = SubProblem(4, 256, "1f1b")
    floors = state.floors(sub.micro_batch)
    assert floors is not None
    plan_s = 4.659
    before = granular_lower_bound(state, sub, floors, p_cap)
    assert before < 0.75 * plan_s, before
    after = tail_capacity_bound(state, sub, floors, p_cap, plan_s, prune_only=True)
    assert after >= plan_s, after


def _half_unit_enumeration(items: list[tuple[int, int, list[float]]], width: int,
                           u_max: int) -> np.ndarray:
    """best[u, f] of half_unit_tables by enumerating every multiset of items with a role each
    (middle, or the one first, or the one last; a free item, 0 half-units, middle only)."""
    best = np.full((u_max + 1, 4), NEG)

    def rec(start: int, w: int, u: int, f: int, value: float) -> None:
        best[u:, f] = np.maximum(best[u:, f], value)
        for i in range(start, len(items)):
            size, halves, held = items[i]
            if size > w or u + halves > u_max:
                continue
            for role, bit in ((0, 0), (1, 1), (2, 2)):
                if held[role] <= 0 or (bit and f & bit) or (role and not halves):
                    continue
                rec(i, w - size, u + halves, f | bit, value + held[role])

    rec(0, width, 0, 0, 0.0)
    return best


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(1, 3), st.sampled_from([0, 1, 1, 2, 2]),
                          st.lists(st.sampled_from([0.0, 0.0, 0.5, 1.0, 2.5]), min_size=3,
                                   max_size=3)),
                max_size=4),
       st.integers(0, 6), st.integers(0, 5))
def test_half_unit_tables_match_enumeration(items: list[tuple[int, int, list[float]]],
                                            width: int, u_max: int) -> None:
    """half_unit_tables (the node-group tables of Sec. 4.9 with mixed-type parts) against
    enumeration: items of 2 half-units (stages), 1 (counted parts of a mixed stage) and 0 (free
    parts, middle only, any number)."""
    sizes = np.array([s for s, _, _ in items], dtype=int)
    halves = np.array([h for _, h, _ in items], dtype=int)
    values = np.array([v for _, _, v in items], dtype=float).reshape(len(items), 3)
    got = half_unit_tables(sizes, halves, values, width, u_max)
    want = _half_unit_enumeration(items, width, u_max)
    _assert_same_tables(got, want, tol=1e-9)


def test_tail_capacity_where_the_stage_count_binds() -> None:
    """Three node groups of two 1-GPU nodes, memory for about half the model a GPU, mixed-type
    stages alone: a plan has two stages, each over the three groups, and at its own (T, R) one
    stage fewer holds too few layers, so the count of half-units decides. Each part of a mixed
    stage counted as a whole stage (two half-units, as a single-type stage) would leave the two
    stages' parts in the counted groups too few layers: planted (`2 if rank < 2`
    in TailCapacity), it fails here, not in the tests above."""
    inst = tiny_instance(devices=[("A100-80G", 2.5), ("V100-32G", 2.5), ("T4", 2.5)],
                         groups=[(0, 2, 1), (1, 2, 1), (2, 2, 1)], layers=4, hidden=512,
                         heads=4, seq=1024, batch=6, recompute=("none",), zero=0,
                         nic_gbit_s=400.0)
    state = SearchState(inst, mixed=True)
    state.stage_filter = _mixed_only
    state.require_mixed = True
    assert _check(state) > 0
    binds = 0
    for b, _, schedule in sizes_and_schedules(state):
        capacity = state.tail_capacity(b, 4, schedule)
        plans = _plans(state, SubProblem(2, b, schedule))
        assert plans is not None
        binds += sum(capacity.capacity(t, r)[1] < inst.model.num_layers - 1e-9
                     for t, r, _ in plans)
    assert binds, "no two-stage plan needs both its stages at its own (T, R)"
