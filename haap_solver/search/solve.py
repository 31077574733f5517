"""The exact heterogeneity-aware search: sub-problems, load-balance bound, state cache, result.

1. Memory-aware initialization: every stage configuration gets, per pipeline position, the largest
   layer count that fits (``CoefficientCache.max_layers``); configurations that cannot hold a layer
   are dropped and the stage count is bounded from below by memory.
2. Sub-problems (stage count p, micro-batch b, schedule) are ordered by a heterogeneity-aware
   load-balance lower bound and skipped once the bound reaches the best plan found.
3. Each surviving sub-problem is the MILP / CP-SAT model of formulations/stage-assignment.md.
4. The plan found is validated and costed by ``evaluate()``; that is the time reported.
"""

from __future__ import annotations

import contextlib
import gc
import heapq
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from haap_solver.cost.evaluate import CostModel, Evaluation
from haap_solver.errors import HaapError, InfeasibleError
from haap_solver.instance import Instance
from haap_solver.plan import Plan
from haap_solver.result import SolveResult
from haap_solver.search import tuning
from haap_solver.search.backends import SolveOptions, get_backend
from haap_solver.search.formulation import SubProblem, build_model, build_slots
from haap_solver.search.heuristic import construct, seed_from_capacity, seed_from_sequence
from haap_solver.search.space import (
    StageConfig,
    build_plan,
    stage_configs,
)
from haap_solver.search.state import (
    SearchState,
)
from haap_solver.search.subproblem_bounds import (
    _layer_rate_bounds,
    _stage_time_cap,
    any_plan_floor,
    compute_bound,
    granular_lower_bound,
    lower_bound,
    strong_lower_bound,
)
from haap_solver.search.subproblems import (
    EMPTY_ENDS,
    _Candidate,
    _stage_count_cap,
    _stage_count_floor,
    _subproblems,
    explain_infeasible,
)
from haap_solver.search.tuning import DEFAULT_BACKEND
from haap_solver.search.warm_start import (
    _ranked_per_group,
    _warm_start_order,
    positional_seed_sequence,
)
from haap_solver.validate import check_plan, plan_violations

Progress = Callable[[int, int, str], None]


def solve(instance: Instance, *, backend: str = DEFAULT_BACKEND, time_limit_s: float = 60.0,
          threads: int = 1, seed: int = 0, state: SearchState | None = None,
          max_stages: int | None = None, progress: Progress | None = None,
          seed_with_baselines: bool = True, mixed: bool = True,
          relative_gap: float = 0.0,
          stage_filter: Callable[[StageConfig], bool] | None = None) -> SolveResult:
    """Find the plan with the lowest iteration time the cost model gives, with a proof.

    The proof (status, bound, gap) covers the search space of formulations/stage-assignment.md.
    With `seed_with_baselines` the best uniform Megatron-LM grid (10% of the time limit) runs
    first as a seed (on clusters above WARM_START_LARGE_GPUS, once half the time limit has
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

    `mixed` (default): the space also holds mixed-type stages (replica groups of two device types
    in one data-parallel stage, each with its own TP degree and batch share; formulations
    Sec. 1.1); `mixed=False` searches single-type stages only. The single-type space is searched
    first (up to MIXED_SINGLE_SHARE of the time limit, less
    where it is proven sooner); its best plan is the incumbent of the search over the whole
    space, whose bound and gap are the ones reported. So a mixed search never returns a plan
    worse than a single-type search given that share of the time.

    With `threads` >= 2 (and mixed-type stages), the plans with a mixed stage are searched in
    a second process beside the single-type search, which then has the whole time limit and
    threads - 1 threads (`_solve_beside`); the two share every better plan. Proven results are
    the same; where the time limit ends the search, the bound depends on when plans were shared.
    """
    if not 0.0 <= relative_gap < 1.0:
        raise ValueError(f"relative_gap: must be in [0, 1), got {relative_gap}")
    if stage_filter is not None:  # a restricted space (targets.py): one process, no seeds
        state, threads, seed_with_baselines = state or SearchState(instance), 1, False
        state.stage_filter = stage_filter
    with collector_paused():
        result = _solve_dispatch(instance, backend=backend, time_limit_s=time_limit_s,
                                 threads=threads, seed=seed, state=state, max_stages=max_stages,
                                 progress=progress, seed_with_baselines=seed_with_baselines,
                                 mixed=mixed, relative_gap=relative_gap)
    # The options of this call (a phase's result carries its own time limit and threads).
    result.options = {"backend": backend, "time_limit_s": time_limit_s, "threads": threads,
                      "seed": seed, "mixed": mixed, "relative_gap": relative_gap}
    if relative_gap > 0 and result.plan is not None and result.status == "feasible" \
            and _within(result, relative_gap):
        within = (f"proven within {result.gap:.2%} of the optimum, which meets the requested "
                  f"relative gap ({relative_gap:.2%}): the search stopped there")
        result.message = f"{result.message}; {within}" if result.message else within
    return result


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


def _solve_dispatch(instance: Instance, *, backend: str, time_limit_s: float, threads: int,
                    seed: int, state: SearchState | None, max_stages: int | None,
                    progress: Progress | None, seed_with_baselines: bool,
                    mixed: bool, relative_gap: float) -> SolveResult:
    """`solve` without the final options: the single-type search alone, or both searches one
    after the other or side by side."""
    common = dict(backend=backend, threads=threads, seed=seed, max_stages=max_stages,
                  progress=progress, relative_gap=relative_gap)
    start = time.perf_counter()
    state = state or SearchState(instance)
    if not mixed or not any(state.mixed_space(b) for b in state.micro_batches()):
        # Single-type only, or no mixed stage exists here (one device type, or no split fits):
        # the single-type space is the whole space.
        result = _solve(instance, time_limit_s=time_limit_s, state=state,
                        seed_with_baselines=seed_with_baselines, mixed=False,
                        **common)  # type: ignore[arg-type]
        if mixed:
            result.search_space["mixed_stage_configs"] = {
                "generated": 0, "fitting_memory": 0, "after_pruning": 0}
            result.wall_s = time.perf_counter() - start
        return result
    if threads >= 2 and tuning.PARALLEL_MIXED:
        helper = _MixedHelper.start(instance, state.cost_model, backend=backend, seed=seed,
                                    max_stages=max_stages, time_limit_s=time_limit_s,
                                    relative_gap=relative_gap)
        if helper is not None:
            return _solve_beside(helper, instance, state, start=start, time_limit_s=time_limit_s,
                                 seed_with_baselines=seed_with_baselines, common=common)
    single_bounds: dict[SubProblem, tuple[float, float | None]] = {}
    try:
        # The seeds get the budgets they would get in a single-type search of the whole limit.
        single: SolveResult | None = _solve(
            instance, time_limit_s=tuning.MIXED_SINGLE_SHARE * time_limit_s, state=state,
            seed_with_baselines=seed_with_baselines, mixed=False,
            seed_time_base_s=time_limit_s, follow_up_s=tuning.MIXED_FOLLOW_UP_SHARE * time_limit_s,
            yield_when_stuck=True, bounds_out=single_bounds, **common)  # type: ignore[arg-type]
    except InfeasibleError:
        single = None  # no single-type plan; a mixed one may still fit
    return _then_mixed(instance, single, single_bounds, state, start=start,
                       time_limit_s=time_limit_s, common=common)


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
        both = _solve(instance, time_limit_s=remaining, state=state, seed_with_baselines=False,
                      mixed=True, incumbent=single, **common)  # type: ignore[arg-type]
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
    if not _within(single, common["relative_gap"]) and _within(both, common["relative_gap"]) \
            and remaining > 0.05:
        # Plans with a mixed stage are ruled out and time is left: back to the single-type
        # sub-problems the first search left open, now against the best plan of both.
        resumed = _solve(instance, time_limit_s=remaining, state=state,
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
    """`result`'s bound set to `bound`, and its gap and status with it."""
    result.best_bound_s = bound
    if result.plan is not None:
        result.gap = max(0.0, (result.iteration_time_s - result.best_bound_s)
                         / result.iteration_time_s)
        result.status = "optimal" if result.gap <= 1e-6 else "feasible"


def _mixed_not_set_up(single: SolveResult | None, state: SearchState, *, time_limit_s: float,
                      start: float, setup_s: float, built: int | None = None) -> SolveResult:
    """The single-type search's result where the time limit stopped the set-up of the plans with
    a mixed stage: those plans are bounded only by `any_plan_floor`, which the whole space's
    bound then is at most, and the message says why (the single-type bound stays in
    `search_space`)."""
    if built is None:  # micro-batch sizes whose configurations were built
        built = len(state.mixed_counts)
    why = (f"plans with a mixed-type stage are bounded only by the cluster's compute: the time "
           f"limit ({time_limit_s:g} s) stopped building their configurations after "
           f"{setup_s:.2f} s ({built} of {len(state.micro_batches())} micro-batch sizes); a "
           f"longer limit bounds them, or mixed=False (--no-mixed) leaves them out")
    if single is None:
        raise HaapError(f"no plan with single-type stages fits memory, and {why}")
    single.search_space["single_type_phase"] = _phase_summary(single)
    floor = any_plan_floor(state)
    single.search_space["mixed_phase"] = {"best_bound_s": floor, "wall_s": setup_s,
                                          "setup_s": setup_s, "set_up": False}
    _lower_bound(single, floor)
    single.message = f"{single.message}; {why}" if single.message else why
    single.wall_s = time.perf_counter() - start
    return single


class _MixedHelper:
    """The search over plans with a mixed stage in a second process (`_mixed_worker`), started
    with the "spawn" method (a fresh interpreter: no fork of a process with solver threads). It
    is sent every plan that improves the first search's incumbent and answers once, with its
    result."""

    def __init__(self, process: Any, conn: Any, deadline_wall: float):
        self.process, self.conn, self.deadline_wall = process, conn, deadline_wall
        self._answer: tuple[Any, ...] | None = None
        self.bounds: dict[SubProblem, float] = {}
        """Its strengthened sub-problem bounds, sent once this process helps (`help`)."""

    @classmethod
    def start(cls, instance: Instance, cost_model: CostModel, *, backend: str, seed: int,
              max_stages: int | None, time_limit_s: float,
              relative_gap: float) -> _MixedHelper | None:
        """The helper, running, with a cost model of the same constants and profile as
        `cost_model`; None where no second process can be started."""
        import multiprocessing

        deadline_wall = time.time() + time_limit_s
        try:
            ctx = multiprocessing.get_context("spawn")
            conn, child = ctx.Pipe()
            process = ctx.Process(target=_mixed_worker, daemon=True, name="haap-mixed",
                                  args=(instance, cost_model.constants, cost_model.profile,
                                        backend, seed, max_stages, deadline_wall, relative_gap,
                                        child))
            with _main_module_hidden():
                process.start()
            child.close()
        except Exception:  # e.g. inside a daemonic process, which may not have children
            return None
        return cls(process, conn, deadline_wall)

    def share(self, plan: Plan, evaluation: Evaluation) -> None:
        # Where it has ended, its answer (or its absence) tells the rest.
        with contextlib.suppress(OSError, ValueError):
            self.conn.send(("incumbent", plan, evaluation))

    def share_bound(self, sub: SubProblem, bound: float) -> None:
        """A lower bound on the plans with a mixed stage of `sub`, which this process computed:
        the second search takes it and skips what it closes."""
        with contextlib.suppress(OSError, ValueError):
            self.conn.send(("bounds", {sub: bound}))

    def help(self) -> None:
        """Tell it that this process now bounds its sub-problems too (from the top): from then
        on it sends the bounds it has strengthened (`bounds`), which this process skips."""
        with contextlib.suppress(OSError, ValueError):
            self.conn.send(("helping",))

    def _receive(self, timeout: float = 0.0) -> None:
        """What it has sent, until its answer: bounds go to `bounds`, the answer is kept."""
        while self._answer is None and self.conn.poll(timeout):
            message = tuple(self.conn.recv())
            if message[0] == "bounds":
                _merge_bounds(self.bounds, message[1])
            else:
                self._answer = message
            timeout = 0.0

    def answered(self) -> bool:
        """Whether its answer is waiting (or it has ended)."""
        try:
            self._receive()
            return self._answer is not None or not self.process.is_alive()
        except (EOFError, OSError):
            return True

    def answer(self, until_wall: float) -> tuple[Any, ...]:
        """Its answer: ("result", SolveResult, set-up s, {sub-problem: its bound}),
        ("not_set_up", set-up s, micro-batch sizes built), ("infeasible", why) or ("error", why);
        ("timeout",) after `until_wall`."""
        while True:
            left = until_wall - time.time()
            try:
                self._receive(max(0.0, min(left, 0.05)))
                if self._answer is not None:
                    return self._answer
            except (EOFError, OSError):
                return ("error", "the second process ended without an answer")
            if not self.process.is_alive() and not self.conn.poll():
                return ("error", f"the second process exited with code {self.process.exitcode}")
            if left <= 0:
                return ("timeout",)

    def close(self) -> None:
        if self.process.is_alive():
            self.process.terminate()
        self.process.join(timeout=2.0)
        self.conn.close()


def _merge_bounds(into: dict[SubProblem, float], bounds: dict[SubProblem, float]) -> None:
    """Sub-problem bounds the other process sent ("bounds" messages, both ways), each kept at
    the larger of it and what `into` has: all are valid lower bounds."""
    for sub, bound in bounds.items():
        into[sub] = max(bound, into.get(sub, -math.inf))


def _mixed_worker(instance: Instance, constants: Any, profile: Any, backend: str, seed: int,
                  max_stages: int | None, deadline_wall: float, relative_gap: float,
                  conn: Any) -> None:
    """The second process of `_solve_beside`: set-up of the plans with a mixed stage, then their
    search (row (M)) against the best plan the first search has shared so far, one thread. It
    answers once (`_MixedHelper.answer`); interrupted (Ctrl-C reaches both processes), it ends
    quietly and the first process decides."""
    answer: tuple[Any, ...]
    _die_with_parent()
    try:
        with collector_paused():
            answer = _mixed_search(instance, constants, profile, backend, seed, max_stages,
                                   deadline_wall, relative_gap, conn)
    except KeyboardInterrupt:
        return
    except InfeasibleError as exc:
        answer = ("infeasible", str(exc))
    except Exception as exc:  # reported to the first process, which goes on without it
        answer = ("error", f"{type(exc).__name__}: {exc}")
    with contextlib.suppress(OSError):  # the first process has stopped listening
        conn.send(answer)


@contextlib.contextmanager
def _main_module_hidden() -> Iterator[None]:
    """While a "spawn" child starts: no __file__ or __spec__ on the caller's __main__, so that
    the child does not import it. It needs nothing from there, and a script that calls solve at
    top level, without `if __name__ == "__main__"`, would otherwise run again in the child (the
    whole solve, before the child's own work)."""
    main = sys.modules.get("__main__")
    missing = object()
    saved = {name: getattr(main, name, missing) for name in ("__file__", "__spec__")}
    try:
        if main is not None:
            main.__spec__ = None
            if saved["__file__"] is not missing:
                del main.__file__
        yield
    finally:
        if main is not None:
            for name, value in saved.items():
                if value is not missing:
                    setattr(main, name, value)


def _die_with_parent() -> None:
    """The second process must not run on to its deadline (minutes, with a long time limit)
    where the first one is killed without stopping it: on Linux the kernel kills it with its
    parent (PR_SET_PDEATHSIG); elsewhere a thread looks every half second (it needs the GIL,
    which a long solver call may hold)."""
    import multiprocessing
    import signal
    import threading

    parent = multiprocessing.parent_process()
    if parent is None:
        return
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            pr_set_pdeathsig = 1
            if ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGKILL) == 0:
                if not parent.is_alive():  # it died before the request
                    os._exit(0)
                return
        except (OSError, AttributeError):
            pass

    def watch() -> None:
        while parent.is_alive():
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, daemon=True, name="haap-parent-watch").start()


def _mixed_search(instance: Instance, constants: Any, profile: Any, backend: str, seed: int,
                  max_stages: int | None, deadline_wall: float, relative_gap: float,
                  conn: Any) -> tuple[Any, ...]:
    start = time.perf_counter()
    deadline = start + (deadline_wall - time.time())
    state = SearchState(instance, CostModel(instance, constants=constants, profile=profile))
    ready = state.prepare_mixed(deadline)
    setup_s = time.perf_counter() - start
    if not ready:
        return ("not_set_up", setup_s, len(state.mixed_counts))

    best: list[tuple[Plan, Evaluation]] = []  # the best plan sent and not yet taken
    sent_bounds: dict[SubProblem, float] = {}  # bounds sent and not yet taken
    # Its own strengthened bounds, and whether the first process helps (and so reads them: not
    # before, lest they fill the pipe while it searches).
    own_bounds: dict[SubProblem, float] = {}
    helped = [False]

    def send(message: tuple[Any, ...]) -> None:
        with contextlib.suppress(OSError, ValueError):
            conn.send(message)

    def read() -> None:
        while conn.poll():
            message = conn.recv()
            if message[0] == "incumbent":
                plan, evaluation = message[1], message[2]
                if not best or evaluation.iteration_time_s < best[0][1].iteration_time_s:
                    best[:] = [(plan, evaluation)]
            elif message[0] == "bounds":
                _merge_bounds(sent_bounds, message[1])
            elif message[0] == "helping" and not helped[0]:
                helped[0] = True
                send(("bounds", dict(own_bounds)))

    def share_bound(sub: SubProblem, bound: float) -> None:
        own_bounds[sub] = bound
        if helped[0]:
            send(("bounds", {sub: bound}))

    def feed() -> tuple[Plan, Evaluation] | None:
        read()
        return best.pop() if best else None

    def bounds_feed() -> dict[SubProblem, float]:
        read()
        taken = dict(sent_bounds)
        sent_bounds.clear()
        return taken

    # The first shared plan (the first search's seeds come within a second or so): bounds
    # strengthened against no incumbent at all would cost much more.
    while not conn.poll(0.02) and time.perf_counter() < deadline:
        pass
    state.require_mixed = True
    bounds: dict[SubProblem, tuple[float, float | None]] = {}
    # No models in its dives: they come while the first search's plan is still a poor one, and
    # hold no better plan in their 0.5 s (llama3-70b-h100x32-a100x32: a 1,062-variable dive
    # ended unknown after the optimum had arrived; two threads 2.1-2.25 s -> 1.8 s,
    # llama3.2-1b-h100x4-l40sx4, where a mixed stage wins, 0.7 s -> 0.45-0.6 s). After the
    # single-type search, in one process, they still pay (the optimum known by then).
    result = _solve(instance, backend=backend,
                    time_limit_s=max(0.01, deadline - time.perf_counter()), threads=1,
                    seed=seed, state=state, max_stages=max_stages, progress=None,
                    seed_with_baselines=False, mixed=True, incumbent_feed=feed,
                    warm_start=False, model_dives=False, bounds_out=bounds,
                    relative_gap=relative_gap, bounds_feed=bounds_feed,
                    share_bound=share_bound)
    return ("result", result, setup_s, {sub: bound for sub, (bound, _) in bounds.items()})


def _solve_beside(helper: _MixedHelper, instance: Instance, state: SearchState, *, start: float,
                  time_limit_s: float, seed_with_baselines: bool,
                  common: dict[str, Any]) -> SolveResult:
    """`solve` with threads >= 2: the single-type search here, with the whole time limit and
    threads - 1 threads, sharing every better plan with the search over plans with a mixed stage
    in the second process; then both results as one. Where the second process fails, this one
    searches the plans with a mixed stage itself in the time left."""
    here = {**common, "threads": max(1, common["threads"] - 1)}
    try:
        try:
            single: SolveResult | None = _solve(
                instance, time_limit_s=time_limit_s, state=state,
                seed_with_baselines=seed_with_baselines, mixed=False,
                share_incumbent=helper.share, **here)
        except InfeasibleError:
            single = None
        from_the_top: dict[SubProblem, float] = {}
        if single is not None and _helps_from_the_top(single) and not helper.answered():
            from_the_top = _bound_mixed_from_the_top(
                instance, state, single.iteration_time_s * (1.0 - common["relative_gap"]),
                start + time_limit_s,
                _stage_count_cap(instance, common.get("max_stages")), stop=helper.answered,
                on_bound=helper.share_bound, bounded_elsewhere=helper.bounds,
                on_start=helper.help)
        answer = helper.answer(until_wall=helper.deadline_wall + tuning.HELPER_GRACE_S)
    finally:
        helper.close()
    kind = answer[0]
    if kind == "result":
        both, setup_s = answer[1], answer[2]
        if from_the_top:
            _raise_bound(both, answer[3], from_the_top)
        if single is None:
            both.wall_s = time.perf_counter() - start
            return both  # type: ignore[no-any-return]
        merged = _merge_phases(single, both, None, setup_s=setup_s, start=start)
        merged.search_space["mixed_phase"]["second_process"] = True
        return merged
    if kind == "not_set_up":
        return _mixed_not_set_up(single, state, time_limit_s=time_limit_s, start=start,
                                 setup_s=answer[1], built=answer[2])
    if kind == "infeasible":  # no plan with a mixed stage exists
        if single is None:
            raise InfeasibleError(answer[1])
        single.wall_s = time.perf_counter() - start
        return single
    # It failed or did not answer in time: the plans with a mixed stage are searched here.
    return _then_mixed(instance, single, {}, state, start=start, time_limit_s=time_limit_s,
                       common=common)


def _helps_from_the_top(single: SolveResult) -> bool:
    """Whether the first process, its single-type search over, helps bound the plans with a
    mixed stage (_bound_mixed_from_the_top): only where models are too large to solve (at 1,024
    GPUs and above), where the second search takes long; on llama3-8b-h100-a100-l40s it answers
    within 0.5 s of the first and this set-up only delayed the answer (by 0.05-0.15 s over
    three runs)."""
    return "too_large_for_a_model" in single.search_space


def _bound_mixed_from_the_top(instance: Instance, state: SearchState, threshold_s: float,
                              deadline: float, p_max: int, stop: Callable[[], bool],
                              on_bound: Callable[[SubProblem, float], None] | None = None,
                              bounded_elsewhere: Mapping[SubProblem, float] | None = None,
                              on_start: Callable[[], None] | None = None,
                              ) -> dict[SubProblem, float]:
    """With two processes, what the first does once its single-type search is over and the
    second still bounds the plans with a mixed stage (best bound first): the same strong bounds
    (row (M)) from the other end, until `deadline` or `stop()` (the second has answered). Its
    bounds, per sub-problem, raise the second's where larger (_raise_bound): a sub-problem
    either process has closed is closed. `threshold_s` is the first search's incumbent less the
    accepted gap; a bound is kept no higher than it (above it, it says only that no plan lies
    below it). Each bound also goes to `on_bound` as it comes (to the second process, which
    then skips what it closes: without that, the help counted only where the time limit ends
    the search), and a sub-problem in `bounded_elsewhere` (the second's strengthened ones, as
    they arrive: `stop()` reads them) is skipped. `on_start` is called once the set-up is done
    (the second then sends its bounds; not before, lest they fill the pipe while this one, in
    its set-up, reads only between micro-batch sizes).

    Order: one micro-batch size at a time, the one with the most sub-problems left first, the
    largest cheap bound first within it. Each size costs this process its bound tables (0.1-0.6
    s at 1,024 GPUs, built in the second already); taken in the order of the cheap bound alone,
    its first 100 sub-problems touched all 16 sizes and took 5.5 s, 3.5 s of it tables."""
    bounds: dict[SubProblem, float] = {}
    mixed_before = state.mixed
    # No dominance filter here (SearchState.mixed_dominance): a set-up of 1.1 s instead of
    # 3.0 s at 1,024 GPUs, and this starts helping only after it.
    state.mixed_dominance = False
    try:
        if not state.prepare_mixed(deadline, stop) or stop():
            return bounds
        state.mixed, state.require_mixed = True, True
        elsewhere = bounded_elsewhere if bounded_elsewhere is not None else {}
        queues: dict[int, list[tuple[float, SubProblem, tuple[float, float, float]]]] = {}
        for b in state.micro_batches():
            configs = state.configs(b)
            if not any(c.mixed for c in configs):
                continue
            floors = _layer_rate_bounds(state, b, configs)
            queue = queues.setdefault(b, [])
            for schedule in instance.training.schedules:
                for p in range(_stage_count_floor(state, b, configs), p_max + 1):
                    sub = SubProblem(p, b, schedule)
                    cheap = lower_bound(state, sub, floors)
                    if cheap < threshold_s:
                        queue.append((cheap, sub, floors))
            queue.sort(key=lambda entry: (entry[0], -entry[1].num_stages))  # (popped from the end)
        if on_start is not None:
            on_start()
        current: list[tuple[float, SubProblem, tuple[float, float, float]]] = []
        while True:
            if time.perf_counter() >= deadline or stop():
                break
            if not current:
                left = {b: [entry for entry in queue if entry[1] not in elsewhere]
                        for b, queue in queues.items()}
                queues = {b: queue for b, queue in left.items() if queue}
                if not queues:
                    break
                current = queues.pop(max(queues, key=lambda b: (len(queues[b]), -b)))
            _, sub, floors = current.pop()
            if sub in elsewhere:
                continue
            bounds[sub] = min(threshold_s,
                              strong_lower_bound(state, sub, floors, p_max, threshold_s))
            if on_bound is not None:
                on_bound(sub, bounds[sub])
    finally:
        state.mixed, state.require_mixed = mixed_before, False
        state.mixed_dominance = True  # (configurations built meanwhile stay as they are)
    return bounds


def _raise_bound(result: SolveResult, bounds: dict[SubProblem, float],
                 more: dict[SubProblem, float]) -> None:
    """`result` (the search over plans with a mixed stage) with its per-sub-problem `bounds`
    raised by `more` where larger: its bound becomes the least over its sub-problems (and its
    plan), and its gap and status follow."""
    least = min((max(bound, more.get(sub, -math.inf)) for sub, bound in bounds.items()),
                default=math.inf)
    raised = min(result.iteration_time_s, least)
    if raised > result.best_bound_s:
        _set_bound(result, raised)


def _phase_summary(result: SolveResult) -> dict[str, Any]:
    return {"status": result.status, "iteration_time_s": result.iteration_time_s,
            "best_bound_s": result.best_bound_s, "gap": result.gap, "wall_s": result.wall_s}


def _solve(instance: Instance, *, backend: str, time_limit_s: float, threads: int, seed: int,
           state: SearchState | None, max_stages: int | None, progress: Progress | None,
           seed_with_baselines: bool, mixed: bool,
           incumbent: SolveResult | None = None,
           seed_time_base_s: float | None = None,
           follow_up_s: float = math.inf,
           yield_when_stuck: bool = False,
           known_bounds: dict[SubProblem, tuple[float, float | None]] | None = None,
           bounds_out: dict[SubProblem, tuple[float, float | None]] | None = None,
           share_incumbent: Callable[[Plan, Evaluation], None] | None = None,
           incumbent_feed: Callable[[], tuple[Plan, Evaluation] | None] | None = None,
           warm_start: bool = True,
           model_dives: bool = True,
           relative_gap: float = 0.0,
           bounds_feed: Callable[[], dict[SubProblem, float]] | None = None,
           share_bound: Callable[[SubProblem, float], None] | None = None,
           ) -> SolveResult:
    """One search over the single-type (or, with `mixed`, the whole) space; `incumbent` is a
    plan already found (its warm start is then skipped: it covered the single-type stages).
    The baseline seeds' budgets are shares of `seed_time_base_s` (default: the time limit);
    the passes after the first may take `follow_up_s` at most, and with `yield_when_stuck` they
    end at the first model that neither closes its sub-problem nor improves the plan.

    `bounds_out` receives every sub-problem's bound at the end, with the incumbent it was
    strengthened against (a sub-problem closed by its model: the incumbent then), and
    `known_bounds` gives a later search of the same space those bounds to start from.

    With a search running beside this one (`solve` with threads >= 2): `share_incumbent` is
    called with every plan that improves the incumbent, and `incumbent_feed` returns the best
    plan the other search has shared since (or None), taken as the incumbent where it is
    better; `warm_start=False` skips the warm start, and `model_dives=False` the models of the
    first pass's dives (their seeds stay). `bounds_feed` returns the sub-problem bounds the
    other search has computed since (valid lower bounds), which raise this one's;
    `share_bound` is called with each sub-problem's bound once strengthened, so that the other
    search need not compute it again.

    `relative_gap` (see `solve`): a sub-problem is closed once its bound reaches the incumbent
    less that share (`threshold`), and the models are solved to that gap."""
    start = time.perf_counter()
    deadline = start + time_limit_s
    state = state or SearchState(instance)
    if state.instance is not instance:
        raise HaapError("the search state belongs to another instance")
    state.mixed = mixed
    backend_fn = get_backend(backend)
    # The warm start's restricted models (two configurations per node group, a few hundred
    # variables): HiGHS under `auto`, whatever their size. It solved them in a third of CP-SAT's
    # time on llama3-8b-h100-a100-l40s (17 models, 0.06 s against 0.19 s) and as fast elsewhere,
    # and spares loading OR-Tools (0.3 s) where no full model is small enough for CP-SAT.
    restricted_fn = get_backend("highs") if backend == "auto" else backend_fn
    cm, cache = state.cost_model, state.cache
    hits0, misses0 = cache.hits + cm.cache_hits, cache.misses + cm.cache_misses
    total_gpus = instance.cluster.num_gpus
    p_cap = _stage_count_cap(instance, max_stages)

    # Memory-aware initialization and the sub-problem list.
    raw_configs = 0
    kept_configs = 0
    fitting_configs = 0
    candidates: list[_Candidate] = []
    floors_by_b: dict[int, tuple[float, float, float]] = {}
    pruned_memory = 0
    for b in state.micro_batches():
        raw = stage_configs(instance, b)
        configs = state.configs(b)
        raw_configs += len(raw)
        kept_configs += len(configs)
        fitting_configs += state.fitting.get(b, 0)
        if mixed:  # (generated, fitting memory, kept) mixed configurations
            raw_configs += state.mixed_counts.get(b, (0, 0, 0))[0]
            fitting_configs += state.mixed_counts.get(b, (0, 0, 0))[1]
        if not configs:
            pruned_memory += p_cap * len(instance.training.schedules)
            continue
        p_min = _stage_count_floor(state, b, configs)
        floors = state.floors(b)
        assert floors is not None  # (configs is not empty)
        floors_by_b[b] = floors
        for schedule in instance.training.schedules:
            kinds = 1 + len(EMPTY_ENDS) * instance.training.empty_end_stages
            pruned_memory += kinds * (p_min - 1)
            for sub in _subproblems(instance, b, schedule, p_min, max_stages,
                                    empty_ends=instance.training.empty_end_stages):
                cand = _Candidate(sub, lower_bound(state, sub, floors))
                if known_bounds and sub in known_bounds:
                    known, against = known_bounds[sub]
                    if known > cand.lower_bound:
                        cand.lower_bound, cand.strengthened_with = known, against
                candidates.append(cand)
    candidates.sort(key=_Candidate.rank)
    space: dict[str, Any] = {
        "micro_batch_sizes": len(state.micro_batches()),
        "stage_configs_before_pruning": raw_configs,
        "stage_configs_fitting_memory": fitting_configs,
        "stage_configs_after_pruning": kept_configs,
        "subproblems_before_pruning": len(candidates) + pruned_memory,
        "subproblems_after_memory_pruning": len(candidates),
    }
    if mixed:
        space["mixed_stage_configs"] = {
            key: sum(v[i] for v in state.mixed_counts.values())
            for i, key in enumerate(("generated", "fitting_memory", "after_pruning"))}

    best_plan: Plan | None = None
    best_eval: Evaluation | None = None
    best_time = math.inf
    if incumbent is not None and incumbent.plan is not None:
        best_plan, best_eval = incumbent.plan, incumbent.evaluation
        best_time = incumbent.iteration_time_s
    open_bounds: list[float] = []  # lower bounds of sub-problems not closed
    solved = pruned_bound = infeasible_memory = 0
    mismatch = 0.0
    plans_costed = 0
    opts_base = SolveOptions(time_limit_s=time_limit_s, threads=threads, seed=seed,
                             relative_gap=max(relative_gap, SolveOptions.relative_gap))

    def threshold() -> float:
        """Sub-problems whose bound reaches this are closed (and every bound and model aims at
        it): the incumbent, less the share of it the caller accepts as a gap (`relative_gap`;
        0: a proof of the optimum). Plans between it and the incumbent are still taken when
        found: the gap bounds what is left out, not what is kept."""
        return best_time * (1.0 - relative_gap)

    def improved(plan: Plan, ev: Evaluation) -> None:
        """A better incumbent (found here): kept, and shared with a search running beside."""
        nonlocal best_time, best_plan, best_eval
        best_time, best_plan, best_eval = ev.iteration_time_s, plan, ev
        if share_incumbent is not None:
            share_incumbent(plan, ev)

    by_sub = {c.sub: c for c in candidates}
    fed_bounds = 0

    def absorb() -> None:
        """The best plan a search running beside has shared, where it beats the incumbent, and
        the sub-problem bounds it has sent (queued sub-problems go back in order when popped)."""
        nonlocal best_time, best_plan, best_eval, fed_bounds
        got = incumbent_feed() if incumbent_feed is not None else None
        if got is not None and got[1].iteration_time_s < best_time:
            best_plan, best_eval = got
            best_time = got[1].iteration_time_s
        for sub, bound in (bounds_feed() if bounds_feed is not None else {}).items():
            cand = by_sub.get(sub)
            if cand is not None and bound > cand.lower_bound:
                cand.lower_bound = bound
                fed_bounds += 1
    # Sub-problems are attacked in passes of growing per-sub-problem time budgets: easy ones close
    # at once and give incumbents whose bound (Sec. 4.2) then shrinks the hard ones.
    def attempt(sub: SubProblem, configs: list[StageConfig], budget: float,
                floor: float, restricted: bool = False, max_vars: int | None = None) -> Any:
        """Build and solve one model; keep its plan if it beats the incumbent. A model of more
        than `max_vars` variables is not solved (TOO_BIG)."""
        nonlocal solved
        floors = floors_by_b[sub.micro_batch]
        # Sec. 4.2: a plan better than the threshold has no stage slower than this.
        at = threshold()
        cap = _stage_time_cap(state, sub, floors, at)
        slots = build_slots(instance, cache, sub, configs, stage_time_cap_s=cap,
                            end_configs=state.end_configs(sub.micro_batch))
        if slots is None or (state.require_mixed and not any(
                c.mixed for slot in slots for c in slot.candidates)):
            return None
        if max_vars is not None and 2 * sum(len(s.candidates) for s in slots) > max_vars:
            return TOO_BIG  # (a binary and a layer count per candidate, before the rest)
        t_lb = state.bottleneck_floor(sub, p_cap)
        if not math.isfinite(t_lb):
            return None  # no plan of the sub-problem holds every layer (Sec. 4.3, 4.4)
        sm = build_model(instance, cache, sub, slots,
                         time_upper_bound_s=_time_ub(slots, sub, instance),
                         load_balance_floor_s=max(t_lb, floors[0]),
                         objective_cutoff_s=at if math.isfinite(at) else None,
                         require_mixed=state.require_mixed)
        def take(values: list[float], objective_s: float) -> None:
            """The model's plan at `values`: validated, costed, kept if it beats the incumbent."""
            nonlocal mismatch, plans_costed
            chosen, layers = sm.extract(values)
            plan = build_plan(instance, chosen, layers, micro_batch=sub.micro_batch,
                              schedule=sub.schedule,  # type: ignore[arg-type]
                              note=f"haap_solver {backend}")
            if plan is None:
                raise HaapError("internal error: the solver chose stages that do not fit nodes")
            check_plan(instance, plan, cost_model=cm)
            ev = cm.evaluate(plan)
            plans_costed += 1
            mismatch = max(mismatch, abs(ev.iteration_time_s - objective_s))
            if ev.iteration_time_s < best_time:
                improved(plan, ev)

        # With a search beside this one, a plan the solver finds goes to it at once, not when
        # the model ends: on llama3-8b-h100-a100-l40s the dive's model finds the optimum 0.29 s
        # into its 0.84 s, and the search over plans with a mixed stage, which waits for it,
        # strengthens its bounds against a 6% worse plan meanwhile.
        on_solution = None if share_incumbent is None else (
            lambda values: take(values, sm.lp.value(values)))
        remaining = deadline - time.perf_counter()
        opts = replace(opts_base, time_limit_s=max(min(remaining, budget), 0.01),
                       on_solution=on_solution)
        res = (restricted_fn if restricted else backend_fn)(sm.lp, opts, floor)
        solved += 1
        if res.values is not None:
            assert res.objective_s is not None
            take(res.values, res.objective_s)
        return res

    def try_seed(plan: Plan | None) -> None:
        """Validate and cost a heuristic plan; keep it if it beats the incumbent."""
        nonlocal plans_costed
        if plan is None or plan_violations(instance, plan, cost_model=cm):
            return
        ev = cm.evaluate(plan)
        plans_costed += 1
        if ev.iteration_time_s < best_time:
            improved(plan, ev)

    positional_seeded: set[SubProblem] = set()
    model_sizes: dict[SubProblem, bool] = {}
    integer_walks = 0

    def too_big_to_dive(cand: _Candidate) -> bool:
        """Whether the sub-problem's full model (without the cap of Sec. 4.2, so the answer
        does not change with the incumbent) has more than DIVE_FULL_MAX_VARS variables."""
        hit = model_sizes.get(cand.sub)
        if hit is None:
            slots = build_slots(instance, cache, cand.sub, state.configs(cand.sub.micro_batch),
                                end_configs=state.end_configs(cand.sub.micro_batch))
            hit = slots is not None and 2 * sum(
                len(s.candidates) for s in slots) > tuning.DIVE_FULL_MAX_VARS
            model_sizes[cand.sub] = hit
        return hit

    integer_strengthened: dict[SubProblem, float] = {}

    def strengthen_integer(cand: _Candidate) -> None:
        """The strong bound with integer stage counts (strong_lower_bound(integer=True)),
        before the model of a sub-problem too large for a dive, once per incumbent: there the
        backend's own bound rarely passes it, and closing the sub-problem here saves its
        model."""
        at = threshold()
        if not too_big_to_dive(cand) or time.perf_counter() >= deadline \
                or integer_strengthened.get(cand.sub, math.inf) <= at:
            return
        nonlocal integer_walks
        integer_strengthened[cand.sub] = at
        integer_walks += 1
        cand.raise_bound(strong_lower_bound(
            state, cand.sub, floors_by_b[cand.sub.micro_batch], p_cap, at, integer=True), at)

    def positional_seed(cand: _Candidate) -> None:
        """The seed of the integer capacity program (positional_seed_sequence), once per
        sub-problem (in the warm start, the dives and before its first model) where its full
        model is too large for a dive (DIVE_FULL_MAX_VARS): there the backend rarely finds a
        plan in time, and elsewhere the model finds what the seed would, for less than the
        seed's integer programs cost (gpt3-1.3b-a100x8: 0.2 s -> 0.8 s with a seed for every
        sub-problem)."""
        if cand.sub in positional_seeded or time.perf_counter() >= deadline \
                or cand.sub.empty_ends:  # (its capacity program knows no empty stage)
            return
        positional_seeded.add(cand.sub)
        if not too_big_to_dive(cand):
            return
        sequence = positional_seed_sequence(state, cand.sub, p_cap)
        if sequence is not None:
            try_seed(seed_from_sequence(cache, sequence, cand.sub,
                                        note=f"haap_solver {backend}"))

    def warm(cand: _Candidate, restricted_model: bool = True) -> None:
        """Heuristic plans for one sub-problem (they prove nothing): capacity-bound seeds,
        constructed plans, the integer capacity program's seed (positional_seed) and
        (`restricted_model`) a model restricted to the two best configurations per node group,
        which solves in a fraction of the full model's time. None for a sub-problem with an
        empty end stage (Sec. 1.2): the seeds know no empty stage, and its full model is small
        where such plans matter."""
        if cand.sub.empty_ends:
            return
        ranked = _ranked_per_group(state, cand.sub, p_cap)
        if not ranked:
            return
        bound = state.capacity_bound(cand.sub.micro_batch, p_cap)
        t_lb = bound.bottleneck_floor(cand.sub.num_stages)  # (cheap; seeds prove nothing)
        seeds = []
        for factor in (1.0, 1.02, 1.05, 1.1, 1.2):
            selection = bound.selection(t_lb * factor, cand.sub.num_stages)
            if selection:
                seeds.append(seed_from_capacity(cache, cand.sub, selection,
                                                note=f"haap_solver {backend}"))
        best_each = {g: cs[0] for g, cs in ranked.items()}
        for chosen in [best_each] + [{g: c for g, c in best_each.items() if g != drop}
                                     for drop in best_each if len(best_each) > 1]:
            seeds.append(construct(cache, cand.sub, chosen, note=f"haap_solver {backend}"))
        for plan in seeds:
            try_seed(plan)
        positional_seed(cand)
        # Not where the full model is too large for a dive: at 1,024 and 16,384 GPUs (30 s runs)
        # the restricted models gave no incumbent, the integer program's seeds all the late ones,
        # and leaving them out starts the first pass 1-2 s sooner.
        if restricted_model and time.perf_counter() < deadline and not too_big_to_dive(cand):
            restricted = [c for cs in ranked.values() for c in cs[:tuning.WARM_CONFIGS_PER_GROUP]]
            attempt(cand.sub, restricted, 0.5, cand.lower_bound, restricted=True)

    # Warm start: the most promising sub-problems by their cheap bound give a good incumbent
    # quickly, which makes the cap of Sec. 4.2 bite in the exact passes.
    warm_until = start + (0.2 * time_limit_s if incumbent is None and warm_start else 0.0)
    large = total_gpus > tuning.WARM_START_LARGE_GPUS
    warm_count = tuning.WARM_START_SUBPROBLEMS[large] * len(instance.training.schedules)
    warm_list = _warm_start_order(candidates, warm_count)
    if large and warm_until > start:  # (WARM_RANK_POOL)
        rank_until = start + 0.5 * (warm_until - start)
        pool = []
        for cand in candidates[:tuning.WARM_RANK_POOL]:
            if time.perf_counter() >= rank_until:
                break
            cand.lower_bound = max(cand.lower_bound, granular_lower_bound(
                state, cand.sub, floors_by_b[cand.sub.micro_batch], p_cap))
            pool.append(cand)
        candidates.sort(key=_Candidate.rank)  # (the raised bounds are valid: the queue's order)
        warm_list = sorted(pool, key=_Candidate.rank)[:warm_count]
    for cand in warm_list:
        if time.perf_counter() >= warm_until:
            break
        warm(cand)

    seeded = ""
    seed_plans: list[Plan] = []
    seed_times: dict[str, float] = {}  # each baseline seed's best iteration time (inf: none)
    pending_seeds: list[tuple[str, float]] = []
    if seed_with_baselines:  # uniform now (cheap); Metis-style only if the search lingers
        pending_seeds = [("uniform", 0.10), ("metis", 0.25)]

    def run_seed(name: str, share: float) -> None:
        nonlocal seeded, plans_costed
        from haap_solver.baselines.metis import metis
        from haap_solver.baselines.uniform import uniform

        method = {"uniform": uniform, "metis": metis}[name]
        budget = min(share * (seed_time_base_s or time_limit_s), deadline - time.perf_counter())
        if budget <= 0:
            return
        base = method(instance, time_limit_s=max(0.05, budget), threads=threads, seed=seed,
                      cost_model=cm)
        plans_costed += base.plans_costed
        seed_times[name] = base.iteration_time_s if base.plan is not None else math.inf
        if base.plan is not None and base.evaluation is not None \
                and base.iteration_time_s < best_time:
            check_plan(instance, base.plan, cost_model=cm)
            improved(base.plan, base.evaluation)
            seeded = name
            seed_plans.append(base.plan)

    if pending_seeds and not large:  # (on large clusters: SEED_AFTER_SHARE, like Metis)
        run_seed(*pending_seeds.pop(0))

    def strengthen(cand: _Candidate) -> None:
        """The strong bound (Sec. 4.3-4.6) against the current threshold."""
        absorb()
        at = threshold()
        cand.strengthened_with = at
        cand.raise_bound(strong_lower_bound(
            state, cand.sub, floors_by_b[cand.sub.micro_batch], p_cap, at), at)
        if share_bound is not None:
            share_bound(cand.sub, cand.lower_bound)

    def closed_by_bound(cand: _Candidate) -> bool:
        return cand.lower_bound >= threshold() * (1 - 1e-12)

    def stale(cand: _Candidate) -> bool:
        """Not strengthened yet, or against a threshold the search has since lowered by 0.1%."""
        return cand.strengthened_with is None or threshold() < 0.999 * cand.strengthened_with

    def before_each(cand: _Candidate, done: int) -> None:
        absorb()
        if pending_seeds and time.perf_counter() - start >= tuning.SEED_AFTER_SHARE * time_limit_s:
            name, share = pending_seeds.pop(0)
            if not (name == "metis" and best_time < seed_times.get("uniform", math.inf)):
                run_seed(name, share)
            # else: the search's own plan already beats the best uniform grid, which the
            # Metis-style search refines: its share of the time goes to the proof instead.
        if progress:
            progress(done, len(candidates),
                     f"p={cand.sub.num_stages} b={cand.sub.micro_batch} best={best_time:.4g}s")

    def solve_one(cand: _Candidate, budget: float, still_open: list[_Candidate]) -> int:
        """Solve the model of one sub-problem; 1 if that closed it, else 0 (kept open)."""
        positional_seed(cand)
        strengthen_integer(cand)
        if closed_by_bound(cand):  # by the seed's plan or the integer bound
            return 1
        if too_big_to_dive(cand):
            still_open.append(cand)  # its full model is never solved (DIVE_FULL_MAX_VARS)
            return 0
        res = attempt(cand.sub, state.configs(cand.sub.micro_batch), budget, cand.lower_bound)
        return settle(cand, res, still_open)

    def settle(cand: _Candidate, res: Any, still_open: list[_Candidate]) -> int:
        """Book the answer of a sub-problem's model: 1 if it closed the sub-problem, else 0 (its
        bound raised to the model's, kept in `still_open`)."""
        nonlocal infeasible_memory
        # (The model covered the plans below the threshold then, at least today's.)
        if res is not None and res.status in ("feasible", "unknown"):
            cand.raise_bound(res.bound_s, threshold())
            still_open.append(cand)
            return 0
        if res is None:  # no plan of it fits memory, or beats the threshold (Sec. 4.2-4.4)
            infeasible_memory += 1
        # Closed: none of its plans lies below the threshold (the model's own optimum, within
        # the gap, is one now: the incumbent is at most that).
        cand.raise_bound(threshold(), threshold())
        return 1

    # First pass, best bound first with lazy strengthening: the sub-problem with the least bound
    # is strengthened (Sec. 4.3-4.6) and goes back in the queue; once the least bound in the
    # queue is a strong one, its model is solved (0.5 s budget; a dive's, DIVE_BUDGET_S). The
    # optimum tends to sit in the sub-problem with the least strong bound, and once it is the
    # incumbent the others are strengthened against it (cheaper, the walk stops there) or
    # pruned on their cheap bound.
    queue = [(*c.rank(), k) for k, c in enumerate(candidates)]
    heapq.heapify(queue)
    still_open: list[_Candidate] = []
    done = 0
    since_model = 0
    dived = False
    left_open = False  # (whether a strengthening has left its sub-problem open since)
    full_dives = model_dives and backend != "cpsat"  # see DIVE_FULL_MAX_VARS
    dive_budget = tuning.FIRST_PASS_BUDGET_S if state.require_mixed else tuning.DIVE_BUDGET_S
    dives = not (state.require_mixed and total_gpus > tuning.MIXED_DIVES_MAX_GPUS)
    while queue:
        entry = heapq.heappop(queue)
        index = entry[3]
        cand = candidates[index]
        before_each(cand, done)
        if cand.lower_bound > entry[0]:  # raised by a bound the other search sent: re-queued
            heapq.heappush(queue, (*cand.rank(), index))
            continue
        if closed_by_bound(cand):  # so is every sub-problem still queued
            pruned_bound += 1 + len(queue)
            done += 1 + len(queue)
            break
        if time.perf_counter() >= deadline:
            still_open.append(cand)
            still_open.extend(candidates[entry[3]] for entry in queue)
            break
        if stale(cand):
            strengthen(cand)
            if not closed_by_bound(cand):
                positional_seed(cand)
            if closed_by_bound(cand):
                pruned_bound += 1
                done += 1
            else:
                heapq.heappush(queue, (*cand.rank(), index))
            since_model += 1
            left_open = left_open or not closed_by_bound(cand)
            if dives and left_open and since_model >= (
                    tuning.DIVE_EVERY if dived else tuning.DIVE_FIRST):
                # A dive: the least strong bound so far is where the optimum tends to sit;
                # its warm-start plans as the incumbent early make the strengthening still to
                # come cheaper. The sub-problem itself stays in the queue.
                strong = [entry for entry in queue if not stale(candidates[entry[3]])
                          and not closed_by_bound(candidates[entry[3]])]
                # Where none is left open, the dive waits for the next strengthening that
                # leaves one, not for DIVE_EVERY more (gpt3-175b-a100x64: its first 54 all
                # closed theirs, the 55th was the optimum's, dived into 13 later).
                left_open = bool(strong)
                if strong:
                    dived = True
                    since_model = 0
                    target = min(strong)
                    dive = candidates[target[3]]
                    res = TOO_BIG
                    if full_dives:
                        res = attempt(dive.sub, state.configs(dive.sub.micro_batch),
                                      dive_budget, dive.lower_bound,
                                      max_vars=tuning.DIVE_FULL_MAX_VARS)
                    # Its seeds, and the restricted model where the full one was not solved.
                    warm(dive, restricted_model=res is TOO_BIG)
                    if res is not TOO_BIG:  # its first-pass model, solved now: it leaves the queue
                        done += settle(dive, res, still_open)
                        queue.remove(target)
                        heapq.heapify(queue)
            continue
        since_model = 0
        done += solve_one(cand, tuning.FIRST_PASS_BUDGET_S, still_open)
    # Further passes of growing per-sub-problem time budgets over what stayed open: easy
    # sub-problems close at once and give incumbents whose cap (Sec. 4.2) shrinks the hard ones.
    deadline = min(deadline, time.perf_counter() + follow_up_s)
    open_list = sorted((c for c in still_open if not closed_by_bound(c)), key=_Candidate.rank)
    pruned_bound += len(still_open) - len(open_list)
    for budget in [2.0, 15.0, math.inf]:
        if not open_list or time.perf_counter() >= deadline:
            break
        still_open = []
        for cand in open_list:
            before_each(cand, done)
            if closed_by_bound(cand):
                pruned_bound += 1
                done += 1
                continue
            if stale(cand) and time.perf_counter() < deadline:
                strengthen(cand)
                if closed_by_bound(cand):
                    pruned_bound += 1
                    done += 1
                    continue
            if deadline - time.perf_counter() <= 0:
                still_open.append(cand)
                continue
            before = best_time
            closed = solve_one(cand, budget, still_open)
            done += closed
            if yield_when_stuck and not closed and best_time >= before:
                deadline = time.perf_counter()  # its models stopped paying: yield (Sec. 1.1)
        open_list = [c for c in still_open if not closed_by_bound(c)]
        pruned_bound += len(still_open) - len(open_list)
    open_bounds.extend(c.lower_bound for c in open_list)
    if relative_gap > 0:
        # A closed sub-problem's bound may lie between the threshold and the incumbent.
        open_bounds.extend(c.lower_bound for c in candidates)
    if any(model_sizes.values()):
        # Sub-problems that came to need a model whose full model was too large to solve
        # (Sec. 4.6), and what stood in for it.
        space["too_large_for_a_model"] = {
            "subproblems": sum(model_sizes.values()),
            "integer_program_seeds": sum(model_sizes[sub] for sub in positional_seeded),
            "integer_walks": integer_walks}
    if bounds_feed is not None:
        space["bounds_from_the_other_search"] = fed_bounds
    if bounds_out is not None:
        bounds_out.update((c.sub, (c.lower_bound, c.strengthened_with)) for c in candidates)
    if progress:
        progress(len(candidates), len(candidates), "done")

    wall = time.perf_counter() - start
    hits = cache.hits + cm.cache_hits - hits0
    misses = cache.misses + cm.cache_misses - misses0
    cache_stats = {"hits": hits, "misses": misses,
                   "hit_rate": hits / (hits + misses) if hits + misses else 0.0}
    options = {"backend": backend, "time_limit_s": time_limit_s, "threads": threads,
               "seed": seed, "mixed": mixed}
    common = dict(instance=instance.name, method=f"haap:{backend}", wall_s=wall,
                  subproblems=len(candidates), solved=solved, pruned_by_bound=pruned_bound,
                  pruned_by_memory=pruned_memory + infeasible_memory, search_space=space,
                  cache=cache_stats, compute_bound_s=compute_bound(state, floors_by_b),
                  options=options, model_mismatch_s=mismatch, plans_costed=plans_costed)
    if best_plan is None:
        if open_bounds:
            return SolveResult(plan=None, evaluation=None, status="unknown",
                               iteration_time_s=math.inf, best_bound_s=min(open_bounds),
                               gap=math.inf, message="time limit reached before any plan was "
                               "found", **common)  # type: ignore[arg-type]
        raise InfeasibleError(explain_infeasible(state))
    bound = min([best_time, *open_bounds])
    gap = max(0.0, (best_time - bound) / best_time)
    status = "optimal" if gap <= 1e-6 else "feasible"
    message = ""
    if seeded and any(best_plan is p for p in seed_plans):
        message = (f"the best plan is the {seeded} baseline's seed; the bound and gap refer to "
                   "the search space of formulations/stage-assignment.md")
    return SolveResult(plan=best_plan, evaluation=best_eval, status=status,
                       iteration_time_s=best_time, best_bound_s=bound, gap=gap, message=message,
                       **common)  # type: ignore[arg-type]


TOO_BIG = object()
"""`attempt`'s answer for a model above its size limit (not solved)."""


def _time_ub(slots: list[Any], sub: SubProblem, instance: Instance) -> float:
    """A safe upper bound on every time variable of the model (for finite CP-SAT domains)."""
    worst = 0.0
    for s in slots:
        for co, n in zip(s.coeffs, s.max_layers, strict=True):
            worst = max(worst, co.tau(n), co.tail(n), co.fwd(n) + co.bwd(n))
    return 4.0 * worst + 1.0


