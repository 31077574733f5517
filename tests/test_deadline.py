"""The search keeps its time limit inside its long steps (haap_solver/search/deadline.py).

One bound strengthening (the walk of Sec. 4.5: hundreds of capacity LPs), one integer capacity
program of a seed, or one micro-batch size's set-up takes seconds on large clusters; begun just
before the deadline, each used to run to its end (gpt3-175b-4types-x1024, 15 s limit, two
threads: 18.9 s). They now stop at the deadline, and a bound cut short is no bound: the
sub-problem keeps the weaker bound it had and is not marked strengthened. Where the deadline
does not come, every answer is the one given without a deadline.

The checks here do not time the machine (shared and noisy): slow LPs or a strengthening that
ends only at its deadline stand in for a large cluster, and what is asserted is that the step
got the search's deadline and stopped there, and what the search kept of it.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pytest

from haap_solver.instance import Instance, load_instance
from haap_solver.search import bounds, branch_and_bound
from haap_solver.search.deadline import DeadlineReached, check_deadline, time_left, until
from haap_solver.search.formulation import SubProblem
from haap_solver.search.state import SearchState
from haap_solver.search.subproblem_bounds import (
    granular_lower_bound,
    lower_bound,
    strong_lower_bound,
)
from haap_solver.search.subproblems import _stage_count_cap
from haap_solver.search.warm_start import positional_seed_sequence
from haap_solver.validate import check_plan

INSTANCES = Path(__file__).resolve().parents[1] / "instances"


def _instance(name: str = "gpt3-2.7b-a100x8-v100x8-4gpu") -> Instance:
    return load_instance(INSTANCES / f"{name}.toml")


def _walking_sub(instance: Instance) -> tuple[SubProblem, float]:
    """A sub-problem and incumbent whose strong bound walks (Sec. 4.5) with tens of LPs: on
    gpt3-2.7b-a100x8-v100x8-4gpu, (p, b) = (4, 1) against 10% above its granular bound."""
    state = SearchState(instance)
    sub = SubProblem(4, 1, instance.training.schedules[0])
    floors = state.floors(1)
    assert floors is not None
    granular = granular_lower_bound(state, sub, floors, _stage_count_cap(instance, None))
    assert math.isfinite(granular)
    return sub, 1.1 * granular


class _CountedLPs:
    """bounds._solve_lp, counted; at call `stall_at` it first waits until the innermost deadline
    has passed (a slow LP), so the deadline comes inside the walk at a known point."""

    def __init__(self, stall_at: int | None = None) -> None:
        self.calls = 0
        self.stall_at = stall_at
        self.original = bounds._solve_lp

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.calls == self.stall_at:
            while time_left() > 0:
                time.sleep(0.01)
        return self.original(*args, **kwargs)


def test_deadline_scopes_nest_and_vanish() -> None:
    """No deadline outside `until`; a nested one keeps the earlier; gone when the block ends."""
    assert time_left() == math.inf
    check_deadline()  # (no deadline: nothing raised)
    far = time.perf_counter() + 1000.0
    with until(far):
        assert 999.0 < time_left() <= 1000.0
        with until(math.inf):
            assert time_left() <= 1000.0
        with until(time.perf_counter() - 1.0), pytest.raises(DeadlineReached):
            check_deadline()
        check_deadline()
    assert time_left() == math.inf


def test_the_strong_bound_stops_inside_its_walk_and_leaves_the_tables_sound(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The deadline comes at the walk's n-th LP: the bound raises DeadlineReached there (no LP
    after it), and the same state, asked again without a deadline or with a far one, gives the
    very bound a fresh state gives (nothing half-built was kept)."""
    instance = _instance()
    sub, incumbent = _walking_sub(instance)
    p_cap = _stage_count_cap(instance, None)

    counted = _CountedLPs()
    monkeypatch.setattr(bounds, "_solve_lp", counted)
    fresh = SearchState(instance)
    floors = fresh.floors(1)
    assert floors is not None
    expected = strong_lower_bound(fresh, sub, floors, p_cap, incumbent)
    assert counted.calls >= 20, counted.calls  # (the walk this test is about)

    stall_at = counted.calls // 2
    stalled = _CountedLPs(stall_at=stall_at)
    monkeypatch.setattr(bounds, "_solve_lp", stalled)
    state = SearchState(instance)
    floors = state.floors(1)
    assert floors is not None
    with pytest.raises(DeadlineReached):
        strong_lower_bound(state, sub, floors, p_cap, incumbent,
                           deadline=time.perf_counter() + 0.5)
    assert stalled.calls <= stall_at  # stopped at (or, on a slow machine, before) that LP
    # No stall in the calls below: on a loaded machine the deadline can come before call
    # `stall_at`, which the next call would then reach and wait out its far deadline there.
    stalled.stall_at = None

    assert strong_lower_bound(state, sub, floors, p_cap, incumbent,
                              deadline=time.perf_counter() + 1000.0) == expected
    assert strong_lower_bound(state, sub, floors, p_cap, incumbent) == expected
    assert strong_lower_bound(state, sub, floors, p_cap, incumbent,
                              integer=True) >= expected  # (its integer walk still runs)


def test_the_integer_program_seed_stops_at_the_deadline() -> None:
    """positional_seed_sequence (the seeds' integer capacity programs): no seed once the deadline
    has passed, the same sequence as without one where it does not come."""
    instance = _instance()
    p_cap = _stage_count_cap(instance, None)
    sub = SubProblem(4, 1, instance.training.schedules[0])
    with pytest.raises(DeadlineReached):
        positional_seed_sequence(SearchState(instance), sub, p_cap,
                                 deadline=time.perf_counter())
    state = SearchState(instance)
    plain = positional_seed_sequence(state, sub, p_cap)
    assert plain is not None
    assert positional_seed_sequence(SearchState(instance), sub, p_cap,
                                    deadline=time.perf_counter() + 1000.0) == plain


def test_a_strengthening_cut_short_keeps_the_weaker_bound_and_stays_unstrengthened(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The branch-and-bound hands its deadline to every strengthening; one that only the deadline
    ends (a stand-in for a walk of seconds on a large cluster) leaves its sub-problem at the
    cheap bound it had, not marked strengthened, open; the result's bound is no higher (and a
    plan found, valid)."""
    instance = _instance()
    calls: list[tuple[SubProblem, float]] = []

    def endless(state: SearchState, sub: SubProblem, floors: tuple[float, float, float],
                p_max: int, incumbent_s: float = math.inf, *, integer: bool = False,
                deadline: float = math.inf, closing: bool = True) -> float:
        assert math.isfinite(deadline), "the strengthening got no deadline"
        calls.append((sub, deadline))
        with until(deadline):
            while True:  # (each pass stands for one LP of the walk)
                check_deadline()
                time.sleep(0.005)

    monkeypatch.setattr(branch_and_bound, "strong_lower_bound", endless)
    out: dict[SubProblem, tuple[float, float | None]] = {}
    limit = 3.0  # (at 1 s a loaded machine spent it all on the set-up and the warm start)
    started = time.perf_counter()
    result = branch_and_bound.search(
        instance, backend="highs", time_limit_s=limit, threads=1, seed=0, state=None,
        max_stages=None, progress=None, seed_with_baselines=False, mixed=False, bounds_out=out)
    assert calls, "no strengthening ran"
    deadlines = {deadline for _, deadline in calls}
    assert len(deadlines) == 1 and deadlines.pop() == pytest.approx(started + limit, abs=0.5)
    assert result.search_space["subproblem_fates"]["strengthened_bound"] == 0
    state = SearchState(instance)
    for sub, _ in calls:
        floors = state.floors(sub.micro_batch)
        assert floors is not None
        bound, against = out[sub]
        assert against is None  # not marked strengthened
        assert bound == lower_bound(state, sub, floors)  # the cheap bound it had
        assert result.best_bound_s <= bound
    if result.plan is not None:  # (the warm start's, where its share of the limit sufficed)
        check_plan(instance, result.plan)


def test_no_bound_lp_runs_past_the_deadline_of_a_search_with_slow_lps(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every bound LP 30 ms slower (a strengthening then takes seconds, as on a large cluster):
    before, the one running at the deadline went on for seconds past it. Now no LP asked after
    the search's deadline answers, and the search returns within a generous margin of its
    limit."""
    instance = _instance()
    limit = 1.5
    deadlines: list[float] = []
    original_init = branch_and_bound.BranchAndBound.__init__

    def init(self: branch_and_bound.BranchAndBound, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        deadlines.append(self.deadline)

    late: list[float] = []  # how long after the deadline each late LP was asked
    original_lp = bounds._solve_lp

    def slow_lp(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.03)
        asked = time.perf_counter()
        answer = original_lp(*args, **kwargs)  # (raises past the deadline, inside one)
        if deadlines and asked > deadlines[0] + 1e-3:
            late.append(asked - deadlines[0])
        return answer

    monkeypatch.setattr(branch_and_bound.BranchAndBound, "__init__", init)
    monkeypatch.setattr(bounds, "_solve_lp", slow_lp)
    result = branch_and_bound.search(
        instance, backend="highs", time_limit_s=limit, threads=1, seed=0, state=None,
        max_stages=None, progress=None, seed_with_baselines=False, mixed=False)
    assert len(deadlines) == 1
    assert not late, f"{len(late)} LPs answered after the deadline, the last {max(late):.2f} s"
    assert result.wall_s < limit + 2.0
    if result.plan is not None:
        check_plan(instance, result.plan)
