"""`solve`: the entry point of the exact heterogeneity-aware search (formulations/
stage-assignment.md). It checks the options, pauses the garbage collector, picks which searches
run (`_solve_dispatch`) and puts the call's options on the result. Read top-down:

- ``branch_and_bound``: one branch-and-bound over the sub-problems of a space (`BranchAndBound`:
  queue, warm start, strengthening, dives, models, result);
- ``phases``: with mixed-type stages in one process, the single-type search, then the plans with
  a mixed stage, then what stayed open, merged into one result;
- ``second_process``: with threads >= 2, the plans with a mixed stage in a second process beside
  the single-type search (its message protocol is written down there);
- ``state`` (`SearchState`, the cached state a later solve of the same instance reuses),
  ``subproblems``, ``subproblem_bounds``, ``warm_start``, and ``tuning`` (every tuning constant
  with its measurement). The result type is ``haap_solver.result.SolveResult``.

The plan found is validated and costed by ``evaluate()``; that is the time reported.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from haap_solver.errors import InfeasibleError
from haap_solver.instance import Instance
from haap_solver.result import SolveResult
from haap_solver.search import branch_and_bound, tuning
from haap_solver.search.branch_and_bound import Progress
from haap_solver.search.deadline import DeadlineReached, until
from haap_solver.search.formulation import SubProblem
from haap_solver.search.outside import outside_space
from haap_solver.search.phases import _mixed_not_set_up, _then_mixed, _within, collector_paused
from haap_solver.search.second_process import Known, _MixedHelper, _solve_beside
from haap_solver.search.space import StageConfig, mixed_space_summary
from haap_solver.search.state import SearchState
from haap_solver.search.tuning import DEFAULT_BACKEND
from haap_solver.training import check_searchable


def solve(instance: Instance, *, backend: str = DEFAULT_BACKEND, time_limit_s: float = 60.0,
          threads: int = 1, seed: int = 0, state: SearchState | None = None,
          max_stages: int | None = None, progress: Progress | None = None,
          seed_with_baselines: bool = True, mixed: bool = True,
          relative_gap: float = 0.0,
          stage_filter: Callable[[StageConfig], bool] | None = None,
          cutoff_s: float = math.inf, warm_start: bool = True,
          mixed_search: bool = True) -> SolveResult:
    """Find the plan with the lowest iteration time the cost model gives, with a proof.

    The proof (status, bound, gap) covers the search space of formulations/stage-assignment.md.
    With `seed_with_baselines` the best uniform Megatron-LM grid (10% of the time limit) runs
    first as a seed (on clusters above tuning.WARM_START_LARGE_GPUS, once half the time limit has
    passed without a proof), and the Metis-style search (25%) once half the time limit has
    passed without a proof (where the search proves its optimum before that, or its own plan
    already beats the uniform grid's, Metis is skipped: SEED_AFTER_SHARE).
    Their plans (which may lie outside that space, e.g. with stages that span device types) are
    kept if nothing in the space beats them.

    `relative_gap` (like a MIP solver's relative gap; default 0, a proof of the optimum): the
    search stops once its plan is proven within that share of the optimum, i.e. once no plan
    left unexplored can beat it by more than `relative_gap` times its iteration time. Its status
    is then "feasible" (or "optimal" where the gap closed anyway), with `gap` <= `relative_gap`
    and a message that says so. Sub-problems are pruned against the incumbent less that share,
    which spares most of the bounding work on large clusters (formulations Sec. 4.8).

    `mixed` (default): the space also holds mixed-type stages (replica groups of several node
    groups in one data-parallel stage, each with its own TP degree and batch share; formulations
    Sec. 1.1); `mixed=False` searches single-type stages only. The single-type space is searched
    first (up to MIXED_SINGLE_SHARE of the time limit, less
    where it is proven sooner); its best plan is the incumbent of the search over the whole
    space, whose bound and gap are the ones reported. So a mixed search never returns a plan
    worse than a single-type search given that share of the time.

    With `threads` >= 2 (and mixed-type stages), the plans with a mixed stage are searched in
    a second process beside the single-type search, which then has the whole time limit and
    threads - 1 threads (`_solve_beside`); the two share every better plan. Proven results are
    the same; where the time limit ends the search, the bound depends on when plans were shared.

    `cutoff_s`: the search starts as if it had a plan of that time (a plan found elsewhere, e.g.
    in another restricted space of a target, targets.py), so a sub-problem whose bound reaches it
    is closed at once. Where no plan below it exists the result has no plan, status "cutoff" and
    a bound of at least the cutoff (less `relative_gap`); "unknown" where the time limit came
    first. With threads >= 2 the search beside takes it too (and a Planner's carried bounds of
    its space, `second_process.Known`). `warm_start=False` skips the warm
    start's heuristic plans (they prove nothing); with it on, the sub-problems the cutoff
    closes at once are not warmed (the Planner keeps it on: its repaired plan is often poor).

    `mixed_search=False` (with `mixed`, one process): the single-type search has the whole time
    limit and the plans with a mixed stage are bounded by the cluster's compute alone (as where
    the time limit stops their set-up), which the bound and gap then cover. For a caller that
    knows the set-up of those plans does not fit its limit (the Planner's short re-plans: at
    1,024 GPUs it took the last quarter of a 2 s limit and then bounded them by that floor
    anyway).
    """
    if not 0.0 <= relative_gap < 1.0:
        raise ValueError(f"relative_gap: must be in [0, 1), got {relative_gap}")
    if not cutoff_s > 0:
        raise ValueError(f"cutoff_s: must be > 0, got {cutoff_s}")
    # (NaN fails every comparison: `not x > 0` refuses it where `x <= 0` would let it through.)
    if not time_limit_s > 0:
        raise ValueError(f"time_limit_s: must be a positive number of seconds, got {time_limit_s}")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads: must be a whole number >= 1, got {threads!r}")
    check_searchable(instance.training)
    from haap_solver.search import objectives
    if objectives.applies(instance):  # cost, limits, caps, prices: over sub-clusters
        return objectives.solve_objective(
            instance, solve=solve, time_limit_s=time_limit_s, relative_gap=relative_gap,
            backend=backend, threads=threads, seed=seed, max_stages=max_stages,
            seed_with_baselines=seed_with_baselines, mixed=mixed, stage_filter=stage_filter)
    if stage_filter is not None:  # a restricted space (targets.py): one process, no seeds
        state, threads, seed_with_baselines = state or SearchState(instance), 1, False
        state.stage_filter = stage_filter
    # What the result says about the space (instance only) comes first and counts against the
    # limit: after the search it overran it by 0.2-0.4 s at 1,024 GPUs (2 shared cores).
    summary_start = time.perf_counter()
    mixed_summary = mixed_space_summary(instance) if mixed else None
    outside = outside_space(instance, mixed=mixed, summary=mixed_summary)
    summary_s = time.perf_counter() - summary_start
    with collector_paused():
        result = _solve_dispatch(instance, backend=backend,
                                 time_limit_s=max(0.5 * time_limit_s, time_limit_s - summary_s),
                                 threads=threads, seed=seed, state=state, max_stages=max_stages,
                                 progress=progress, seed_with_baselines=seed_with_baselines,
                                 mixed=mixed, relative_gap=relative_gap, cutoff_s=cutoff_s,
                                 warm_start=warm_start, mixed_search=mixed_search)
    result.wall_s += summary_s
    # The options of this call (a phase's result carries its own time limit and threads).
    result.options = {"backend": backend, "time_limit_s": time_limit_s, "threads": threads,
                      "seed": seed, "mixed": mixed, "relative_gap": relative_gap}
    if mixed_summary is not None:  # (which sizes the full mixed space covered: Sec. 1.1)
        result.search_space["mixed_space"] = mixed_summary
    # (valid plans the search does not search: "optimal" is over the space, Sec. 1)
    result.search_space["outside_space"] = outside
    if relative_gap > 0 and result.plan is not None and result.status == "feasible" \
            and _within(result, relative_gap):
        within = (f"proven within {result.gap:.2%} of the optimum, which meets the requested "
                  f"relative gap ({relative_gap:.2%}): the search stopped there")
        result.message = f"{result.message}; {within}" if result.message else within
    return result


MIXED_CHECK_SHARE = 0.5
"""The share of the time limit within which `_solve_dispatch` must learn whether any mixed
stage exists (`_mixed_stages_exist`); past it, it takes the path with mixed stages, whose
set-up runs under the search's own deadline."""


def _mixed_stages_exist(state: SearchState, deadline: float) -> bool:
    """Whether some micro-batch size has a mixed stage configuration; True where that is not
    known by `deadline` (building the candidates is not free: over 1,024 one-GPU node groups of
    two device types it took ten seconds, and a 2 s limit was overrun by that much)."""
    try:
        with until(deadline):
            return any(state.mixed_space(b) for b in state.micro_batches())
    except DeadlineReached:
        return True


def _solve_dispatch(instance: Instance, *, backend: str, time_limit_s: float, threads: int,
                    seed: int, state: SearchState | None, max_stages: int | None,
                    progress: Progress | None, seed_with_baselines: bool,
                    mixed: bool, relative_gap: float, cutoff_s: float = math.inf,
                    warm_start: bool = True, mixed_search: bool = True) -> SolveResult:
    """`solve` without the final options: the single-type search alone, or both searches one
    after the other or side by side."""
    common = dict(backend=backend, threads=threads, seed=seed, max_stages=max_stages,
                  progress=progress, relative_gap=relative_gap, cutoff_s=cutoff_s,
                  warm_start=warm_start)
    start = time.perf_counter()
    state = state or SearchState(instance)
    if not mixed or not _mixed_stages_exist(state, start + MIXED_CHECK_SHARE * time_limit_s):
        # Single-type only, or no mixed stage exists here (one device type, or no split fits):
        # the single-type space is the whole space.
        result = branch_and_bound.search(instance, time_limit_s=time_limit_s, state=state,
                                         seed_with_baselines=seed_with_baselines, mixed=False,
                                         clock_start=start, **common)
        if mixed:
            result.search_space["mixed_stage_configs"] = {
                "generated": 0, "fitting_memory": 0, "after_pruning": 0}
            result.wall_s = time.perf_counter() - start
        return result
    known = Known.of(state) if threads >= 2 and tuning.PARALLEL_MIXED and mixed_search \
        else None
    if known is not None and not known.closes(cutoff_s * (1.0 - relative_gap)):
        # (the time since `start`, 0.1 s at 1,024 GPUs, counts against the second's limit too)
        helper = _MixedHelper.start(instance, state.cost_model, backend=backend, seed=seed,
                                    max_stages=max_stages,
                                    time_limit_s=start + time_limit_s - time.perf_counter(),
                                    relative_gap=relative_gap, cutoff_s=cutoff_s,
                                    known=known)
        if helper is not None:
            return _solve_beside(helper, instance, state, start=start, time_limit_s=time_limit_s,
                                 seed_with_baselines=seed_with_baselines, common=common)
    if not mixed_search:  # (the plans with a mixed stage: the floors alone, `solve`)
        try:
            result = branch_and_bound.search(instance, time_limit_s=time_limit_s, state=state,
                                             seed_with_baselines=seed_with_baselines,
                                             mixed=False, clock_start=start, **common)
        except InfeasibleError:
            pass  # no single-type plan fits memory: the plans with a mixed stage are searched
        else:
            return _mixed_not_set_up(result, state, time_limit_s=time_limit_s, start=start,
                                     setup_s=0.0, built=0, skipped=True)
    single_bounds: dict[SubProblem, tuple[float, float | None]] = {}
    try:
        # The seeds get the budgets they would get in a single-type search of the whole limit.
        single: SolveResult | None = branch_and_bound.search(
            instance, time_limit_s=tuning.MIXED_SINGLE_SHARE * time_limit_s, state=state,
            seed_with_baselines=seed_with_baselines, mixed=False,
            seed_time_base_s=time_limit_s, follow_up_s=tuning.MIXED_FOLLOW_UP_SHARE * time_limit_s,
            yield_when_stuck=True, bounds_out=single_bounds, clock_start=start, **common)
    except InfeasibleError:
        single = None  # no single-type plan; a mixed one may still fit
    return _then_mixed(instance, single, single_bounds, state, start=start,
                       time_limit_s=time_limit_s, common=common)


