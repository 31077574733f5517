"""The phases of a search with mixed-type stages in one process, and how their results become one
(formulations/stage-assignment.md Sec. 1.1): the single-type search first, then the search over
plans with a mixed stage (`_then_mixed`), then the single-type sub-problems still open; the best
plan of all, the whole space's bound the lesser of the two kinds' (`_merge_phases`). Also the
bound and gap bookkeeping of a result (`_within`, `_lower_bound`, `_set_bound`), the answer
where the set-up of the mixed-type configurations ran out of time (`_mixed_not_set_up`), and
the garbage collector paused while a search runs (`collector_paused`).
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Iterator
from typing import Any

from haap_solver.errors import HaapError, InfeasibleError
from haap_solver.instance import Instance
from haap_solver.result import SolveResult
from haap_solver.search import branch_and_bound, tuning
from haap_solver.search.formulation import SubProblem
from haap_solver.search.state import SearchState
from haap_solver.search.subproblem_bounds import any_plan_floor


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while the search runs, on again after (where it was
    on). The search builds millions of small objects (coefficients, affine pieces, cache keys)
    and keeps most of them in its caches, so each full collection walks an ever larger heap, and
    it makes almost no reference cycles for the collector to find: 669 objects in cycles after
    the search over plans with a mixed stage of llama3-8b-h100-a100-l40s, none in its 13 full
    collections during the set-up. Reference counting still frees everything else at once.
    That search: set-up 0.61 s -> 0.49 s, bound tables 0.30 s -> 0.21 s (process time, best of
    four). Where another thread already turned the collector off, this leaves it alone."""
    if not tuning.PAUSE_COLLECTOR or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _then_mixed(instance: Instance, single: SolveResult | None,
                single_bounds: dict[SubProblem, tuple[float, float | None]], state: SearchState, *,
                start: float, time_limit_s: float, common: dict[str, Any]) -> SolveResult:
    """After the single-type search (`single`; None where it found no single-type plan): the
    search over plans with a mixed stage in this process, then the single-type sub-problems
    still open if time is left, and the result of both (formulations Sec. 1.1)."""
    # The set-up of the second search, stopped at the time limit: where it does not finish, the
    # plans with a mixed stage are bounded by the cluster's compute alone rather than the limit
    # overrun.
    setup_start = time.perf_counter()
    ready = state.prepare_mixed(start + time_limit_s)
    setup_s = time.perf_counter() - setup_start
    if not ready:
        return _mixed_not_set_up(single, state, time_limit_s=time_limit_s, start=start,
                                 setup_s=setup_s)
    remaining = max(0.01, time_limit_s - (time.perf_counter() - start))
    # The first search bounds every single-type plan (single.best_bound_s; there is none where
    # it found the space infeasible), so the second one bounds only the plans with a mixed stage
    # (M): the whole space's bound is the lesser of the two (formulations Sec. 1.1).
    state.require_mixed = True
    try:
        both = branch_and_bound.search(instance, time_limit_s=remaining, state=state,
                                       seed_with_baselines=False, mixed=True, incumbent=single,
                                       **common)
    except InfeasibleError:
        if single is None:
            raise  # neither kind of plan exists
        # No plan with a mixed stage exists, and the first search found no plan in time either.
        single.wall_s = time.perf_counter() - start
        return single
    finally:
        state.require_mixed = False
    if single is None:
        both.wall_s = time.perf_counter() - start
        return both
    resumed = None
    remaining = time_limit_s - (time.perf_counter() - start)
    gap = common["relative_gap"]
    if not _within(single, gap) and remaining > 0.05 \
            and (_within(both, gap) or single.best_bound_s < both.best_bound_s):
        # Plans with a mixed stage are ruled out, or bounded above the single-type plans (the
        # second search ended with time left: its open sub-problems too large for a model; at
        # spot-a100-v100 14:00 it returned 1.5-7.6 s before a 30 s limit with the single-type
        # bound holding the gap at 1.45%), and time is left: back to the single-type
        # sub-problems the first search left open, now against the best plan of both.
        resumed = branch_and_bound.search(instance, time_limit_s=remaining, state=state,
                                          seed_with_baselines=False, mixed=False, incumbent=both,
                                          known_bounds=single_bounds, **common)
    return _merge_phases(single, both, resumed, setup_s=setup_s, start=start)


def _merge_phases(single: SolveResult, both: SolveResult, resumed: SolveResult | None, *,
                  setup_s: float, start: float) -> SolveResult:
    """One result from the single-type search, the search over plans with a mixed stage (whose
    result is returned, updated) and the resumed single-type search if any: the best plan of
    all, the whole space's bound the lesser of the two kinds' (formulations Sec. 1.1)."""
    phases = [single, both]
    single_bound = single.best_bound_s
    if resumed is not None:
        phases.append(resumed)
        single_bound = max(single_bound, resumed.best_bound_s)  # both bound single-type plans
        both.search_space["resumed_single_type_phase"] = _phase_summary(resumed)
        if resumed.iteration_time_s < both.iteration_time_s:
            both.plan, both.evaluation = resumed.plan, resumed.evaluation
            both.iteration_time_s, both.message = resumed.iteration_time_s, resumed.message
    if single.iteration_time_s < both.iteration_time_s:  # (beside: found after the last share)
        both.plan, both.evaluation = single.plan, single.evaluation
        both.iteration_time_s, both.message = single.iteration_time_s, single.message
    # What bounds the plans with a mixed stage, before it merges with the single-type bound.
    both.search_space["mixed_phase"] = {"best_bound_s": both.best_bound_s,
                                        "wall_s": setup_s + both.wall_s, "setup_s": setup_s}
    _lower_bound(both, single_bound)
    both.search_space["single_type_phase"] = _phase_summary(single)
    for other in phases:
        if other is both:
            continue
        both.solved += other.solved
        both.plans_costed += other.plans_costed
        both.model_mismatch_s = max(both.model_mismatch_s, other.model_mismatch_s)
        for key in ("hits", "misses"):
            both.cache[key] = both.cache.get(key, 0) + other.cache.get(key, 0)
    total = both.cache["hits"] + both.cache["misses"]
    both.cache["hit_rate"] = both.cache["hits"] / total if total else 0.0
    if both.plan is single.plan and single.message:
        both.message = single.message
    both.wall_s = time.perf_counter() - start
    return both


def _within(result: SolveResult, relative_gap: float) -> bool:
    """Whether `result` is proven: optimal, or within the gap the caller accepts (up to the
    rounding of threshold and gap, GAP_ROUNDING)."""
    return result.status == "optimal" or result.gap <= relative_gap + GAP_ROUNDING


GAP_ROUNDING = 1e-9
"""A bound that closes every sub-problem at the threshold (the incumbent times 1 - gap, less
closed_by_bound's 1e-12) gives back a gap that floating point puts a hair above the requested
one: this much is still within it."""


def _lower_bound(result: SolveResult, bound: float) -> None:
    """`result`'s bound lowered to `bound` where that is less (it now covers more plans), and
    its gap and status with it."""
    _set_bound(result, min(result.best_bound_s, bound))


def _set_bound(result: SolveResult, bound: float) -> None:
    """`result`'s bound set to `bound`, and its gap and status with it (a result with no plan
    below the cutoff whose bound drops below it now covers plans that may beat it: unknown)."""
    if result.plan is None and result.status == "cutoff" and bound < result.best_bound_s:
        result.status = "unknown"
    result.best_bound_s = bound
    if result.plan is not None:
        result.gap = max(0.0, (result.iteration_time_s - result.best_bound_s)
                         / result.iteration_time_s)
        result.status = "optimal" if result.gap <= 1e-6 else "feasible"


def _mixed_not_set_up(single: SolveResult | None, state: SearchState, *, time_limit_s: float,
                      start: float, setup_s: float, built: int | None = None,
                      skipped: bool = False) -> SolveResult:
    """The single-type search's result where the time limit stopped the set-up of the plans with
    a mixed stage (or, `skipped`, the caller left their search out: `solve(mixed_search=False)`):
    those plans are bounded only by `any_plan_floor`, which the whole space's bound then is at
    most, and the message says why (the single-type bound stays in `search_space`)."""
    if built is None:  # micro-batch sizes whose configurations were built
        built = len(state.mixed_counts)
    why = (f"plans with a mixed-type stage are bounded only by the cluster's compute: their "
           f"search was left out within this time limit ({time_limit_s:g} s), where an earlier "
           "solve as short could not set it up (the single-type search had the whole limit); "
           "a longer limit bounds them" if skipped else
           f"plans with a mixed-type stage are bounded only by the cluster's compute: the time "
           f"limit ({time_limit_s:g} s) stopped building their configurations after "
           f"{setup_s:.2f} s ({built} of {len(state.micro_batches())} micro-batch sizes); a "
           f"longer limit bounds them, or mixed=False (--no-mixed) leaves them out")
    if single is None:
        raise HaapError(f"no plan with single-type stages fits memory, and {why}")
    single.search_space["single_type_phase"] = _phase_summary(single)
    # (the plans with a mixed stage: also at least a floor carried from a larger cluster, Sec. 8)
    state.require_mixed = True
    try:
        floor = max(any_plan_floor(state), state.carried_floor())
    finally:
        state.require_mixed = False
    single.search_space["mixed_phase"] = {"best_bound_s": floor, "wall_s": setup_s,
                                          "setup_s": setup_s, "set_up": False,
                                          **({"skipped": True} if skipped else {})}
    _lower_bound(single, floor)
    single.message = f"{single.message}; {why}" if single.message else why
    single.wall_s = time.perf_counter() - start
    return single


def _phase_summary(result: SolveResult) -> dict[str, Any]:
    return {"status": result.status, "iteration_time_s": result.iteration_time_s,
            "best_bound_s": result.best_bound_s, "gap": result.gap, "wall_s": result.wall_s,
            "subproblems": result.subproblems, "models_solved": result.solved,
            "excluded_by_memory": result.pruned_by_memory,
            "subproblem_fates": result.search_space.get("subproblem_fates", {}),
            **{key: result.search_space[key] for key in _OPTIONAL_PHASE_KEYS
               if key in result.search_space}}


_OPTIONAL_PHASE_KEYS = ("bounds_from_the_other_search", "local_search")
"""Entries of a phase's search_space that its summary carries where the phase has them."""
