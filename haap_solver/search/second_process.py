"""The second process (`solve` with threads >= 2, tuning.PARALLEL_MIXED): the search over plans
with a mixed stage runs in a child process beside the single-type search (formulations/
stage-assignment.md Sec. 1.1 and 4.6). `_solve_beside` is the first process's side,
`_MixedHelper` its handle on the child, `_mixed_worker` the child's entry point.

The child is started with the "spawn" method (a fresh interpreter: no fork of a process whose
solver threads may hold locks), as a daemon that dies with its parent (`_die_with_parent`),
and with the caller's ``__main__`` hidden while it starts (`_main_module_hidden`). It gets the
instance, the cost model's constants and profile, the backend, seed, stage cap, relative gap and
a deadline in wall-clock time (time.time(): the two processes share no perf_counter), the
cutoff (`solve(cutoff_s=)`) and the bounds already proven on its space (`Known`: a Planner's).

The protocol: tuples over one duplex Pipe.

first -> second
    ("incumbent", Plan, Evaluation)
        every plan that improves the first search's incumbent, as it is found
        (`_MixedHelper.share`). The second waits for the first of these before it strengthens
        any bound, and takes the best one it has received as its incumbent before each step.
    ("helping",)
        the first process, its single-type search over, now bounds the plans with a mixed stage
        too, from the other end (`_bound_mixed_from_the_top`; only where models are too large
        to solve, `_helps_from_the_top`). From then on the second sends its bounds.
    ("bounds", {SubProblem: float})
        a lower bound on the plans with a mixed stage of each sub-problem, computed by the first
        (`_MixedHelper.share_bound`); the second raises its own with them and skips what they
        close.

    ("single_bounds", {SubProblem: float})
        after "single_helping": the bound of each single-type sub-problem the first has
        strengthened (all so far, then each as it comes); the second skips those.

second -> first
    ("bounds", {SubProblem: float})
        after "helping": every bound it has strengthened so far, then each one as it comes; the
        first skips those sub-problems. Never before "helping", lest they fill the pipe while
        the first does not read.
    the answer, once:
        ("result", SolveResult, set-up seconds, {SubProblem: bound}, Known)
                                                                its search's result, and the
                                                                bounds its state recorded
        ("not_set_up", set-up seconds, micro-batch sizes built)     the deadline cut its set-up
        ("infeasible", why)                                         no plan with a mixed stage
        ("error", why)                                              any other failure
    after a "result" or "infeasible" answer, while the first still searches:
    ("single_helping",)
        the second, its own search over, now bounds the first's single-type sub-problems from
        the other end (`_bound_single_from_the_top`: largest cheap bound first, the first
        taking the least first), against the first's incumbent as shared.
    ("single_bounds", {SubProblem: float})
        then each single-type bound it has strengthened (at most the threshold it was
        strengthened against); the first raises its sub-problems' bounds with them (its search's
        `bounds_feed`) and skips what they close.
    ("single_strengthened", {SubProblem: Strengthened})
        instead, for a sub-problem its walk left open (tuning.HELPER_SHARES_WINDOWS): the
        bound, the threshold and the window of bottlenecks of the walk, which the first takes
        as its own strengthening (its search's `strengthened_feed`): the model gets the window
        without a walk of its own there.

The first process waits for the answer until HELPER_GRACE_S past the deadline (then
`_MixedHelper.answer` gives ("timeout",)); where the answer is an error or a timeout, or no
second process can start, it searches the plans with a mixed stage itself (`_then_mixed`).
Every message is a valid bound or a valid plan, so whichever arrives when changes only how soon
the search ends, never what it proves.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from haap_solver.cost.evaluate import CostModel, Evaluation
from haap_solver.errors import InfeasibleError
from haap_solver.instance import Instance
from haap_solver.plan import Plan
from haap_solver.result import SolveResult
from haap_solver.search import branch_and_bound, tuning
from haap_solver.search.deadline import DeadlineReached
from haap_solver.search.formulation import SubProblem
from haap_solver.search.phases import (
    _merge_phases,
    _mixed_not_set_up,
    _set_bound,
    _then_mixed,
    collector_paused,
)
from haap_solver.search.state import MIXED_SPACE, SearchState
from haap_solver.search.subproblem_bounds import (
    _layer_rate_bounds,
    lower_bound,
    strong_lower_bound,
)
from haap_solver.search.subproblems import (
    Strengthened,
    _stage_count_cap,
    _stage_count_floor,
    subproblems_of_size,
)


@dataclass(frozen=True)
class Known:
    """What a search state has proven on the plans with a mixed stage, as it crosses between
    the processes: a Planner's carried bounds go to the second process (its search raises its
    own with them, as the search in one process would, `SearchState.known_bound`), and what
    the second process proved comes back into the Planner's state, to be carried to the next
    change (formulations/stage-assignment.md Sec. 8)."""

    bounds: dict[SubProblem, float]
    """`SearchState.sub_bounds` of the space "mixed", by sub-problem."""
    floor: float
    """`SearchState.space_floors["mixed"]` (0 where none)."""

    @classmethod
    def of(cls, state: SearchState) -> Known:
        return cls({sub: bound for (space, sub), bound in state.sub_bounds.items()
                    if space == MIXED_SPACE}, state.space_floors.get(MIXED_SPACE, 0.0))

    def closes(self, threshold_s: float) -> bool:
        """Whether these bounds close the space at `threshold_s`: the floor alone, or every
        sub-problem bound kept (a Planner back on a cluster it proved before,
        `Planner._recall_proof`; the sub-problems without one are those the cheap bound
        closed then). Its search in this process then ends at once, or nearly, with the
        configurations the state has cached, where a second process would first start and
        build them (spot-a100-v100 19:00: 1.3 s in a second process)."""
        if self.floor > 0.0 and self.floor >= threshold_s * (1.0 - 1e-12):
            return True
        return bool(self.bounds) and min(self.bounds.values()) >= threshold_s * (1.0 - 1e-12)

    def put_into(self, state: SearchState) -> None:
        """Raise `state`'s mixed-space bounds and floor to these where larger (all are valid
        lower bounds on the same instance)."""
        state.raise_proven({(MIXED_SPACE, sub): bound for sub, bound in self.bounds.items()},
                           {MIXED_SPACE: self.floor})


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
        self._single_bounds: dict[SubProblem, float] = {}
        """Single-type bounds it has sent and the search here has not yet taken."""
        self._own_single: dict[SubProblem, float] = {}
        """The single-type bounds this process has strengthened (`share_single_bound`)."""
        self._single_helping = False
        self._single_strengthened: dict[SubProblem, Strengthened] = {}
        """Single-type sub-problems it strengthened and left open, not yet taken."""

    @classmethod
    def start(cls, instance: Instance, cost_model: CostModel, *, backend: str, seed: int,
              max_stages: int | None, time_limit_s: float, relative_gap: float,
              cutoff_s: float = math.inf,
              known: Known | None = None) -> _MixedHelper | None:
        """The helper, running, with a cost model of the same constants and profile as
        `cost_model`; None where no second process can be started. `cutoff_s` stands in for
        its incumbent's time until a plan beats it (`solve(cutoff_s=)`: a Planner's repaired
        plan); `known`, the bounds already proven on its space (`Known.of`: a Planner's, carried
        from earlier solves), which its search raises its own with."""
        import multiprocessing

        deadline_wall = time.time() + time_limit_s
        try:
            ctx = multiprocessing.get_context("spawn")
            conn, child = ctx.Pipe()
            process = ctx.Process(target=_mixed_worker, daemon=True, name="haap-mixed",
                                  args=(instance, cost_model.constants, cost_model.profile,
                                        backend, seed, max_stages, deadline_wall, relative_gap,
                                        child, cutoff_s, known or Known({}, 0.0)))
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

    def share_single_bound(self, sub: SubProblem, bound: float) -> None:
        """The strengthened bound of a single-type sub-problem of the search here (its
        `share_bound`): sent once the second helps with them, so that it skips the
        sub-problem."""
        self._own_single[sub] = max(bound, self._own_single.get(sub, -math.inf))
        if self._single_helping:
            with contextlib.suppress(OSError, ValueError):
                self.conn.send(("single_bounds", {sub: bound}))

    def single_bounds_feed(self) -> dict[SubProblem, float]:
        """The single-type bounds it has sent since the last call (the search here's
        `bounds_feed`)."""
        with contextlib.suppress(EOFError, OSError):
            self._receive()
        taken, self._single_bounds = self._single_bounds, {}
        return taken

    def single_strengthened_feed(self) -> dict[SubProblem, Strengthened]:
        """The single-type sub-problems it has strengthened and left open since the last call,
        each with the threshold and window of its walk (the search here's
        `strengthened_feed`)."""
        with contextlib.suppress(EOFError, OSError):
            self._receive()
        taken, self._single_strengthened = self._single_strengthened, {}
        return taken

    def _receive(self, timeout: float = 0.0) -> None:
        """What it has sent: bounds go to `bounds` and single-type ones to `_single_bounds`, the
        answer is kept (the first one)."""
        while self.conn.poll(timeout):
            message = tuple(self.conn.recv())
            if message[0] == "bounds":
                _merge_bounds(self.bounds, message[1])
            elif message[0] == "single_bounds":
                _merge_bounds(self._single_bounds, message[1])
            elif message[0] == "single_strengthened":
                self._single_strengthened.update(message[1])
            elif message[0] == "single_helping":
                self._single_helping = True
                if self._own_single:
                    with contextlib.suppress(OSError, ValueError):
                        self.conn.send(("single_bounds", dict(self._own_single)))
            elif self._answer is None:
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
        """Its answer: ("result", SolveResult, set-up s, {sub-problem: its bound}, Known),
        ("not_set_up", set-up s, micro-batch sizes built), ("infeasible", why) or ("error", why);
        ("timeout",) after `until_wall`."""
        while True:
            if self._answer is not None:  # (it may have come while the search here ran)
                return self._answer
            left = until_wall - time.time()
            try:
                self._receive(max(0.0, min(left, 0.05)))
            except (EOFError, OSError):  # (it ended; its answer, if any, was read before)
                return self._answer or ("error", "the second process ended without an answer")
            if self._answer is not None:
                return self._answer
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
                  conn: Any, cutoff_s: float, known: Known) -> None:
    """The second process of `_solve_beside`: set-up of the plans with a mixed stage, then their
    search (row (M)) against the best plan the first search has shared so far, one thread. It
    answers once (`_MixedHelper.answer`), then, while the first still searches, bounds the
    first's single-type sub-problems from the other end (`_bound_single_from_the_top`) until
    the first stops it; interrupted (Ctrl-C reaches both processes), it ends quietly and the
    first process decides."""
    answer: tuple[Any, ...]
    # The answer goes out before the search state is freed and before the collector is on
    # again: freeing the state's caches (millions of objects) and the collector's first pass
    # over them took 0.1-0.7 s at 1,024 and 16,384 GPUs, which the first process waited for
    # past the deadline. After the answer the first process stops this one (`close`).
    start = time.perf_counter()
    deadline = start + (deadline_wall - time.time())
    end = _SecondEnd(conn, cutoff_s, relative_gap)
    state: SearchState | None = None
    _die_with_parent()
    with collector_paused():
        try:
            state = SearchState(instance, CostModel(instance, constants=constants,
                                                    profile=profile))
            answer = _mixed_search(state, backend, seed, max_stages, deadline, start, end,
                                   known)
        except KeyboardInterrupt:
            return
        except InfeasibleError as exc:
            answer = ("infeasible", str(exc))
        except Exception as exc:  # reported to the first process, which goes on without it
            answer = ("error", f"{type(exc).__name__}: {exc}")
        end.send(answer)
        if state is not None and answer[0] in ("result", "infeasible") \
                and tuning.SINGLE_FROM_THE_TOP:
            try:
                _bound_single_from_the_top(state, end, deadline, max_stages)
            except (KeyboardInterrupt, DeadlineReached, EOFError, OSError):
                return


class _SecondEnd:
    """The second process's end of the pipe: the best plan the first has shared (its
    incumbent), and the bounds each side has sent the other."""

    def __init__(self, conn: Any, cutoff_s: float, relative_gap: float):
        self.conn = conn
        self.cutoff_s = cutoff_s
        """Stands in for the incumbent's time until a shared plan beats it (`solve(cutoff_s=)`)."""
        self.relative_gap = relative_gap
        self.best: list[tuple[Plan, Evaluation]] = []
        """The best plan shared and not yet taken by the search here."""
        self.best_time = math.inf
        """The best time shared so far."""
        self.sent_bounds: dict[SubProblem, float] = {}
        """Mixed-space bounds the first sent and the search here has not yet taken."""
        self.own_bounds: dict[SubProblem, float] = {}
        """Mixed-space bounds strengthened here."""
        self.helped = False
        """Whether the first bounds the mixed space too (and so reads the bounds sent here:
        not before, lest they fill the pipe while it searches)."""
        self.single_elsewhere: dict[SubProblem, float] = {}
        """Single-type sub-problems the first has strengthened (after "single_helping")."""

    def send(self, message: tuple[Any, ...]) -> None:
        with contextlib.suppress(OSError, ValueError):  # (the first has stopped listening)
            self.conn.send(message)

    def read(self, timeout: float = 0.0) -> None:
        """Whatever the first has sent."""
        while self.conn.poll(timeout):
            message = self.conn.recv()
            if message[0] == "incumbent":
                plan, evaluation = message[1], message[2]
                if evaluation.iteration_time_s < self.best_time:
                    self.best_time = evaluation.iteration_time_s
                    self.best[:] = [(plan, evaluation)]
            elif message[0] == "bounds":
                _merge_bounds(self.sent_bounds, message[1])
            elif message[0] == "single_bounds":
                _merge_bounds(self.single_elsewhere, message[1])
            elif message[0] == "helping" and not self.helped:
                self.helped = True
                self.send(("bounds", dict(self.own_bounds)))
            timeout = 0.0

    def threshold(self) -> float:
        """The first search's threshold as far as known here: its incumbent (or the cutoff),
        less the accepted gap."""
        return min(self.best_time, self.cutoff_s) * (1.0 - self.relative_gap)

    def share_bound(self, sub: SubProblem, bound: float) -> None:
        self.own_bounds[sub] = bound
        if self.helped:
            self.send(("bounds", {sub: bound}))

    def feed(self) -> tuple[Plan, Evaluation] | None:
        self.read()
        return self.best.pop() if self.best else None

    def bounds_feed(self) -> dict[SubProblem, float]:
        self.read()
        taken, self.sent_bounds = self.sent_bounds, {}
        return taken


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


def _mixed_search(state: SearchState, backend: str, seed: int, max_stages: int | None,
                  deadline: float, start: float, end: _SecondEnd,
                  known: Known) -> tuple[Any, ...]:
    """The second process's search over the plans with a mixed stage; its answer."""
    known.put_into(state)
    ready = state.prepare_mixed(deadline)
    setup_s = time.perf_counter() - start
    if not ready:
        return ("not_set_up", setup_s, len(state.mixed_counts))
    # The first shared plan (the first search's seeds come within a second or so): bounds
    # strengthened against no incumbent at all would cost much more. A cutoff is one already.
    while not math.isfinite(end.cutoff_s) and not end.conn.poll(0.02) \
            and time.perf_counter() < deadline:
        pass
    state.require_mixed = True
    bounds: dict[SubProblem, tuple[float, float | None]] = {}
    # No models in its dives: they come while the first search's plan is still a poor one, and
    # hold no better plan in their 0.5 s (llama3-70b-h100x32-a100x32: a 1,062-variable dive
    # ended unknown after the optimum had arrived; two threads 2.1-2.25 s -> 1.8 s,
    # llama3.2-1b-h100x4-l40sx4, where a mixed stage wins, 0.7 s -> 0.45-0.6 s). After the
    # single-type search, in one process, they still pay (the optimum known by then).
    try:
        result = branch_and_bound.search(
            state.instance, backend=backend,
            time_limit_s=max(0.01, deadline - time.perf_counter()), threads=1, seed=seed,
            state=state, max_stages=max_stages, progress=None, seed_with_baselines=False,
            mixed=True, incumbent_feed=end.feed, warm_start=False, model_dives=False,
            bounds_out=bounds, relative_gap=end.relative_gap, bounds_feed=end.bounds_feed,
            share_bound=end.share_bound, cutoff_s=end.cutoff_s)
    finally:
        state.require_mixed = False
    return ("result", result, setup_s, {sub: bound for sub, (bound, _) in bounds.items()},
            Known.of(state))


def _bound_single_from_the_top(state: SearchState, end: _SecondEnd, deadline: float,
                               max_stages: int | None) -> None:
    """With two processes, what the second does once its search over the plans with a mixed
    stage has answered and the first's single-type search goes on: strong bounds (Sec.
    4.3-4.10) on the single-type sub-problems from the other end, the largest cheap bound
    below the first's threshold first (the first takes the least bound first), each sent as
    it comes ("single_bounds"); a sub-problem the first has strengthened is skipped. Each
    bound is taken at most at the threshold it was strengthened against, the first's
    incumbent as shared (valid: no plan of the sub-problem lies below the lesser). The first
    stops this process when its search ends.

    Why: on clusters of small nodes the single-type search's strong bounds against the
    optimum take most of its time (gpt3-2.7b-a100x32-v100x96-4gpu: nine sub-problems of
    0.4-1.9 s each, one after the other), while the search over plans with a mixed stage ends
    seconds earlier and its process would sit idle."""
    state.mixed, state.require_mixed = False, False
    instance = state.instance
    p_max = _stage_count_cap(instance, max_stages)
    cheap: dict[SubProblem, float] = {}
    floors_of: dict[int, tuple[float, float, float]] = {}
    for b in state.micro_batches():
        configs = state.configs(b)
        floors = state.floors(b)
        if not configs or floors is None:
            continue
        floors_of[b] = floors
        for sub in subproblems_of_size(instance, b, _stage_count_floor(state, b, configs),
                                       max_stages):
            cheap[sub] = lower_bound(state, sub, floors)
    end.send(("single_helping",))
    while cheap and time.perf_counter() < deadline:
        end.read()
        threshold = end.threshold()
        if not math.isfinite(threshold):
            end.read(0.05)  # (no plan shared yet: no bound is worth its cost)
            continue
        # The largest cheap bound still open (the first takes the least first); what the
        # first has strengthened or closed is left to it.
        open_subs = [(bound, -sub.num_stages, sub) for sub, bound in cheap.items()
                     if bound < threshold and sub not in end.single_elsewhere]
        if not open_subs:
            break
        sub = max(open_subs, key=lambda entry: entry[:2])[2]
        del cheap[sub]
        bound = strong_lower_bound(state, sub, floors_of[sub.micro_batch], p_max, threshold,
                                   deadline=deadline)
        if bound < threshold and tuning.HELPER_SHARES_WINDOWS:
            # Still open: the first may take the strengthening as its own (its window too).
            end.send(("single_strengthened", {sub: Strengthened(bound, threshold,
                                                                state.recorded_window(sub))}))
        else:
            end.send(("single_bounds", {sub: min(bound, threshold)}))


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
            single: SolveResult | None = branch_and_bound.search(
                instance, time_limit_s=time_limit_s, state=state,
                seed_with_baselines=seed_with_baselines, mixed=False,
                share_incumbent=helper.share, bounds_feed=helper.single_bounds_feed,
                strengthened_feed=helper.single_strengthened_feed,
                share_bound=helper.share_single_bound, clock_start=start, **here)
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
        answer[4].put_into(state)  # (what it proved outlives it: a Planner carries it)
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
                    if not sub.schedulable(instance):
                        continue
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
            try:
                bound = strong_lower_bound(state, sub, floors, p_max, threshold_s,
                                           deadline=deadline)
            except DeadlineReached:
                break  # (cut short: no bound)
            bounds[sub] = min(threshold_s, bound)
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
