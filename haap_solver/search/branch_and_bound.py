"""The branch-and-bound over sub-problems (formulations/stage-assignment.md Sec. 4.6): one search
of the single-type space, or of the whole space with mixed-type stages, as the steps of
`BranchAndBound`.

1. `build_queue`: memory-aware initialization; every sub-problem (stage count, micro-batch,
   schedule, empty ends) with its cheap load-balance bound, best first.
2. `warm_start`: heuristic plans (seeds, restricted models) for the most promising sub-problems,
   so that the incumbent makes the stage-time cap of Sec. 4.2 bite from the start; then the
   uniform-grid baseline as a seed (`run_seed`), and on clusters of 64 GPUs or more the
   balanced grids (tuning.BALANCED_SEED_EARLY_GPUS; the Metis-style one later, if the search
   lingers: tuning.SEED_AFTER_SHARE).
3. `first_pass`: best bound first with lazy strengthening: the sub-problem with the least bound is
   strengthened (`strengthen`, Sec. 4.3-4.6) and goes back in the queue; once the least bound in
   the queue is a strong one, its model is solved (`solve_one`, `attempt`, `settle`). Now and
   then a `dive` solves the sub-problem with the least strong bound early, for an incumbent.
4. `follow_up_passes`: what stayed open, with growing per-sub-problem time budgets.
5. `result`: the best plan, the least bound over what stayed open, gap and status.

`search(instance, **options)` runs all five; the parameters are `BranchAndBound`'s.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from haap_solver.cost.evaluate import Evaluation
from haap_solver.errors import HaapError, InfeasibleError
from haap_solver.instance import Instance
from haap_solver.plan import Plan
from haap_solver.result import SolveResult
from haap_solver.search import tuning
from haap_solver.search.backends import SolveOptions, auto_choice, get_backend
from haap_solver.search.bounds import staircase_cuts, tail_staircase
from haap_solver.search.coefficients import CoefficientCache
from haap_solver.search.deadline import DeadlineReached, check_deadline, until
from haap_solver.search.formulation import SubProblem, add_tail_cuts, build_model, build_slots
from haap_solver.search.heuristic import construct, seed_from_capacity, seed_from_sequence
from haap_solver.search.polish import Polish
from haap_solver.search.space import StageConfig, build_plan, stage_configs
from haap_solver.search.state import SearchState
from haap_solver.search.subproblem_bounds import (
    _stage_time_cap,
    any_plan_floor,
    compute_bound,
    granular_lower_bound,
    lower_bound,
    strong_lower_bound,
    tail_capacity_bound,
)
from haap_solver.search.subproblems import (
    EMPTY_ENDS,
    Strengthened,
    _Candidate,
    _stage_count_cap,
    _stage_count_floor,
    explain_infeasible,
    subproblems_of_size,
)
from haap_solver.search.warm_start import (
    _ranked_per_group,
    _warm_start_order,
    positional_seed_sequence,
)
from haap_solver.validate import check_plan, plan_violations

Progress = Callable[[int, int, str], None]

TOO_BIG = object()
"""`attempt`'s answer for a model above its size limit (not solved)."""

_OTHER_SOLVER = {"cpsat": "highs", "highs": "cpsat"}
"""`auto`'s two solvers, each to the other (`BranchAndBound.model_backend`)."""


def search(instance: Instance, **options: Any) -> SolveResult:
    """One branch-and-bound over the sub-problems of `instance` (`BranchAndBound`'s options)."""
    return BranchAndBound(instance, **options).run()


class BranchAndBound:
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
    `share_bound` is called with each sub-problem's bound when its first strengthening begins,
    once strengthened, and where the tail-capacity pass closes it, so that the other search,
    bounding this space from the other end, leaves it to this one. `strengthened_feed` returns
    the sub-problems the other search has strengthened and left open since, each with the
    threshold and the window of its walk (`Strengthened`), taken as this search's own
    strengthening.

    `relative_gap` (see `solve`): a sub-problem is closed once its bound reaches the incumbent
    less that share (`threshold`), and the models are solved to that gap."""

    def __init__(self, instance: Instance, *, backend: str, time_limit_s: float, threads: int,
                 seed: int, state: SearchState | None, max_stages: int | None,
                 progress: Progress | None, seed_with_baselines: bool, mixed: bool,
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
                 strengthened_feed: Callable[[], dict[SubProblem, Strengthened]] | None = None,
                 cutoff_s: float = math.inf, clock_start: float | None = None):
        self.start = time.perf_counter() if clock_start is None else clock_start
        """When the time limit began (`clock_start`, a time.perf_counter() value; default: now):
        a caller's own set-up before the search (`_solve_dispatch`: the search state, the
        mixed-space check, starting the second process, 0.1 s at 1,024 GPUs) counts against
        the limit, not on top of it."""
        self.deadline = self.start + time_limit_s
        """When the search stops; the follow-up passes may bring it forward."""
        self.instance = instance
        self.backend, self.time_limit_s, self.threads, self.seed = (backend, time_limit_s,
                                                                    threads, seed)
        self.max_stages, self.progress = max_stages, progress
        self.seed_with_baselines, self.mixed = seed_with_baselines, mixed
        self.incumbent, self.seed_time_base_s = incumbent, seed_time_base_s
        self.follow_up_s, self.yield_when_stuck = follow_up_s, yield_when_stuck
        self.known_bounds, self.bounds_out = known_bounds, bounds_out
        self.share_incumbent, self.incumbent_feed = share_incumbent, incumbent_feed
        self.use_warm_start, self.model_dives = warm_start, model_dives
        self.relative_gap = relative_gap
        self.bounds_feed, self.share_bound = bounds_feed, share_bound
        self.strengthened_feed = strengthened_feed
        self.cutoff_s = cutoff_s
        """Stands in for the incumbent's time until a plan beats it (see `solve`)."""

        state = state or SearchState(instance)
        if state.instance is not instance:
            raise HaapError("the search state belongs to another instance")
        state.mixed = mixed
        self.state = state
        self.backend_fn = get_backend(backend)
        # The warm start's restricted models (two configurations per node group, a few hundred
        # variables): HiGHS under `auto`, whatever their size. It solved them in a third of
        # CP-SAT's time on llama3-8b-h100-a100-l40s (17 models, 0.06 s against 0.19 s) and as
        # fast elsewhere, and spares loading OR-Tools (0.3 s) where no full model is small
        # enough for CP-SAT.
        self.restricted_fn = get_backend("highs") if backend == "auto" else self.backend_fn
        self.unproven_by: dict[SubProblem, str] = {}
        """Under `auto`: the backend whose last model of a sub-problem ended without a proof;
        its next model goes to the other one (`model_backend`)."""
        self.backend_s: dict[tuple[SubProblem, str], list[float]] = {}
        """Each backend's full models of a sub-problem: the seconds they took."""
        self.cm, self.cache = state.cost_model, state.cache
        self.hits0 = self.cache.hits + self.cm.cache_hits
        self.misses0 = self.cache.misses + self.cm.cache_misses
        self.steps0 = dict(self.state.closing_steps)
        self.levelled = 0
        """Strengthenings against a level below the threshold (`strengthening_level`)."""
        self.tail_capacity_raised = 0
        """Sub-problems whose bound the tail-capacity pass computed (`tail_capacity_pass`)."""
        self.total_gpus = instance.cluster.num_gpus
        self.p_cap = _stage_count_cap(instance, max_stages)

        self.candidates: list[_Candidate] = []
        self.floors_by_b: dict[int, tuple[float, float, float]] = {}
        self.pruned_memory = 0
        self.space: dict[str, Any] = {}
        self.unbuilt: list[int] = []
        """Micro-batch sizes whose configurations the deadline left unbuilt (`build_queue`)."""

        self.best_plan: Plan | None = None
        self.best_eval: Evaluation | None = None
        self.unpolished = False
        """Whether the incumbent improved since the last `polish_incumbent`."""
        self.polisher: Polish | None = None
        self.polish_s = 0.0
        self.polished = 0
        """Plans the local search made better (`polish_incumbent`)."""
        self.best_time = cutoff_s
        if incumbent is not None and incumbent.plan is not None \
                and incumbent.iteration_time_s < cutoff_s:
            self.best_plan, self.best_eval = incumbent.plan, incumbent.evaluation
            self.best_time = incumbent.iteration_time_s
        self.open_bounds: list[float] = []  # lower bounds of sub-problems not closed
        self.solved = 0
        self.mismatch = 0.0
        self.plans_costed = 0
        self.large = self.total_gpus > tuning.WARM_START_LARGE_GPUS
        self.seeded = ""
        self.seed_plans: list[Plan] = []
        self.seed_times: dict[str, float] = {}  # each baseline seed's best time (inf: none)
        self.pending_seeds: list[tuple[str, float]] = []
        self.early_seeded, self.early_cut, self.early_budget = False, False, 0.0
        self.early_s = 0.0  # (the early seed's time: the warm start's shares begin after it)
        self.early_seed()
        self.build_queue()
        self.opts_base = SolveOptions(time_limit_s=time_limit_s, threads=threads, seed=seed,
                                      relative_gap=max(relative_gap, SolveOptions.relative_gap))
        self.by_sub = {c.sub: c for c in self.candidates}
        self.fed_bounds = 0
        self.positional_seeded: set[SubProblem] = set()
        self.model_sizes: dict[SubProblem, bool] = {}
        self.open_models: dict[SubProblem, tuple[float, float]] = {}
        """Per sub-problem, the threshold and the time limit of its last full model that ended
        without closing it (`attempt`): a later pass with no larger a budget and the same
        threshold would solve the same model again for the same answer (`worth_a_model`)."""
        self.tail_cut_rows = 0
        """Tail staircase cuts added to full models (`tail_cuts`)."""
        self.integer_walks = 0
        self.integer_strengthened: dict[SubProblem, float] = {}
        self.done = 0

    def run(self) -> SolveResult:
        """The search: seeds, warm start, first pass, follow-up passes, result."""
        # Uniform now (cheap), balanced grids now on clusters of BALANCED_SEED_EARLY_GPUS or
        # more, else (and Metis-style) only if the search lingers. Before the warm start
        # (tuning.SEEDS_BEFORE_WARM_START): its models then aim at the seeds' plan.
        if self.seed_with_baselines:
            self.pending_seeds = [("uniform", 0.10), ("balanced", 0.20), ("metis", 0.25)]
            if self.early_seeded and not (
                    self.early_cut and 0.10 * (self.seed_time_base_s or self.time_limit_s)
                    > self.early_budget):
                # The uniform grids ran before the set-up (early_seed): again only where they
                # were cut short there and the later turn has more time (it starts over).
                self.pending_seeds.pop(0)
        if tuning.SEEDS_BEFORE_WARM_START:
            self.run_first_seeds()
            if self.unpolished:  # (the warm start's models then aim below the polished seed)
                self.polish_incumbent()
            self.warm_start()
        else:
            self.warm_start()
            self.run_first_seeds()
        if self.unpolished:  # (before the first pass's set-up: its tail-capacity pass)
            self.polish_incumbent()
        still_open = self.first_pass()
        open_list = self.follow_up_passes(still_open)
        return self.result(open_list)

    def run_first_seeds(self) -> None:
        """The seeds that do not wait for the search to linger: uniform grids, and balanced
        grids from BALANCED_SEED_EARLY_GPUS (on large clusters: SEED_AFTER_SHARE)."""
        if self.pending_seeds and not self.large:
            self.run_seed(*self.pending_seeds.pop(0))
            if self.total_gpus >= tuning.BALANCED_SEED_EARLY_GPUS:
                self.run_seed(*self.pending_seeds.pop(0))

    # -- 1. the queue ---------------------------------------------------------------------------
    def build_queue(self) -> None:
        """Memory-aware initialization and the sub-problem list, best cheap bound first."""
        state, mixed = self.state, self.mixed
        raw_configs = 0
        kept_configs = 0
        fitting_configs = 0
        candidates = self.candidates
        pruned_memory = 0
        sizes = state.micro_batches()
        for index, b in enumerate(sizes):
            try:
                with until(self.deadline):
                    check_deadline()  # (a size whose tables are all cached raises nothing)
                    raw, fitting, kept, pruned, built = self.set_up_size(b)
            except DeadlineReached:
                # The time limit came during the set-up (seconds at 1,024 GPUs and above; one
                # size takes 0.1-0.4 s, and stops inside): the sizes left unbuilt, that one
                # included, are bounded by `any_plan_floor` alone (`result`).
                self.unbuilt = list(sizes[index:])
                break
            raw_configs += raw
            fitting_configs += fitting
            kept_configs += kept
            pruned_memory += pruned
            candidates.extend(built)
        candidates.sort(key=_Candidate.rank)
        self.pruned_memory = pruned_memory
        self.space = {
            "micro_batch_sizes": len(state.micro_batches()),
            "stage_configs_before_pruning": raw_configs,
            "stage_configs_fitting_memory": fitting_configs,
            "stage_configs_after_pruning": kept_configs,
            "subproblems_before_pruning": len(candidates) + pruned_memory,
            "subproblems_after_memory_pruning": len(candidates),
        }
        if self.unbuilt:
            self.space["micro_batch_sizes_not_set_up"] = len(self.unbuilt)
        if mixed:
            self.space["mixed_stage_configs"] = {
                key: sum(v[i] for v in state.mixed_counts.values())
                for i, key in enumerate(("generated", "fitting_memory", "after_pruning"))}

    def set_up_size(self, b: int) -> tuple[int, int, int, int, list[_Candidate]]:
        """One micro-batch size of `build_queue`: its configurations (before pruning, fitting
        memory, kept), the sub-problems memory prunes, and its sub-problems with their cheap
        bounds; nothing of it in the queue until all of it is built (the deadline may stop it
        inside, `build_queue`)."""
        instance, state = self.instance, self.state
        raw = len(stage_configs(instance, b))
        configs = state.configs(b)
        kept = len(configs)
        fitting = state.fitting.get(b, 0)
        if self.mixed:  # (generated, fitting memory, kept) mixed configurations
            raw += state.mixed_counts.get(b, (0, 0, 0))[0]
            fitting += state.mixed_counts.get(b, (0, 0, 0))[1]
        kinds = 1 + len(EMPTY_ENDS) * instance.training.empty_end_stages
        if not configs:
            return raw, fitting, kept, self.p_cap * len(instance.training.schedules) * kinds, []
        p_min = _stage_count_floor(state, b, configs)
        floors = state.floors(b)
        assert floors is not None  # (configs is not empty)
        pruned = len(instance.training.schedules) * kinds * (p_min - 1)
        built: list[_Candidate] = []
        for sub in subproblems_of_size(instance, b, p_min, self.max_stages):
            check_deadline()  # (the cheap bounds of a size: 0.1 s at 1,024 GPUs)
            cand = _Candidate(sub, lower_bound(state, sub, floors))
            carried = state.known_bound(sub)  # (Sec. 8: proven on a larger cluster)
            if carried > cand.lower_bound:
                cand.lower_bound, cand.inherited = carried, True
            if self.known_bounds and sub in self.known_bounds:
                known, against = self.known_bounds[sub]
                if known > cand.lower_bound:
                    cand.lower_bound, cand.strengthened_with = known, against
            built.append(cand)
        self.floors_by_b[b] = floors
        return raw, fitting, kept, pruned, built

    # -- the incumbent --------------------------------------------------------------------------
    def threshold(self) -> float:
        """Sub-problems whose bound reaches this are closed (and every bound and model aims at
        it): the incumbent, less the share of it the caller accepts as a gap (`relative_gap`;
        0: a proof of the optimum). Plans between it and the incumbent are still taken when
        found: the gap bounds what is left out, not what is kept."""
        return self.best_time * (1.0 - self.relative_gap)

    def improved(self, plan: Plan, ev: Evaluation) -> None:
        """A better incumbent (found here): kept, and shared with a search running beside; the
        next `before_each` polishes it."""
        self.best_time, self.best_plan, self.best_eval = ev.iteration_time_s, plan, ev
        self.unpolished = True
        if self.share_incumbent is not None:
            self.share_incumbent(plan, ev)

    def polish_incumbent(self) -> None:
        """The incumbent improved by a local search (`polish.Polish`: a few moves of a stage's
        configuration, the stage count, the order or the micro-batch size, each with its exact
        layer split), for at most POLISH_SHARE of the time limit a call and POLISH_TOTAL_SHARE
        in all. It proves nothing; a better plan it finds prunes what comes after."""
        self.unpolished = False
        now = time.perf_counter()
        budget = min(max(tuning.POLISH_SHARE * self.time_limit_s, tuning.POLISH_MIN_S),
                     self.deadline - now,
                     max(tuning.POLISH_TOTAL_SHARE * self.time_limit_s, tuning.POLISH_MIN_S)
                     - self.polish_s)
        if self.best_plan is None or self.best_eval is None or budget <= 0:
            return
        if self.polisher is None:  # (one for the search: its screens' tables are kept)
            self.polisher = Polish(self.state, max_stages=self.p_cap, deadline=now + budget)
        polish, costed = self.polisher, self.polisher.costed
        polish.deadline = now + budget
        got = polish.run(self.best_plan, self.best_eval)
        self.plans_costed += polish.costed - costed
        self.polish_s += time.perf_counter() - now
        if got is not None and got[1].iteration_time_s < self.best_time:
            check_plan(self.instance, got[0], cost_model=self.cm)
            self.improved(*got)
            self.polished += 1
            # (it ended where no move improves the plan, or at its budget: not again before a
            # plan from elsewhere)
            self.unpolished = False

    def absorb(self) -> None:
        """The best plan a search running beside has shared, where it beats the incumbent, and
        the sub-problem bounds it has sent (queued sub-problems go back in order when popped)."""
        got = self.incumbent_feed() if self.incumbent_feed is not None else None
        if got is not None and got[1].iteration_time_s < self.best_time:
            self.best_plan, self.best_eval = got
            self.best_time = got[1].iteration_time_s
        for sub, bound in (self.bounds_feed() if self.bounds_feed is not None else {}).items():
            cand = self.by_sub.get(sub)
            if cand is not None and bound > cand.lower_bound:
                cand.lower_bound, cand.fed = bound, True
                self.fed_bounds += 1
        fed = self.strengthened_feed() if self.strengthened_feed is not None else {}
        for sub, done in fed.items():
            cand = self.by_sub.get(sub)
            if cand is None:
                continue
            if done.bound > cand.lower_bound:
                cand.fed = True
                self.fed_bounds += 1
            cand.raise_bound(done.bound, done.against)
            if cand.strengthened_with is None or done.against < cand.strengthened_with:
                # Its strengthening, with its window, stands for this search's own.
                cand.strengthened_with = done.against
                if done.window is not None:
                    self.state.record_window(sub, *done.window)

    def try_seed(self, plan: Plan | None) -> None:
        """Validate and cost a heuristic plan; keep it if it beats the incumbent."""
        if plan is None or plan_violations(self.instance, plan, cost_model=self.cm):
            return
        ev = self.cm.evaluate(plan)
        self.plans_costed += 1
        if ev.iteration_time_s < self.best_time:
            self.improved(plan, ev)

    def early_seed(self) -> None:
        """On clusters above WARM_START_LARGE_GPUS, before the set-up: the uniform grids (at most
        EARLY_SEED_SHARE of the seed time base, EARLY_SEED_MAX_S) and the proportional split on
        the best grid they found, as seeds. There the set-up alone (every micro-batch size's
        configurations, dominance-filtered) takes 2-5 s, and the warm start's plans come after
        it: gpt3-175b-4types-x1024 with a 3 s limit and two threads ended with no plan at all.
        The proportional split on the grid of uniform's best plan is one grid (a few plans
        costed) and often much better: 17.5 s against uniform's 26.3 s there. Valid plans,
        validated and costed by evaluate(); they prove nothing, the bound stays the search's."""
        if not (self.seed_with_baselines and self.large and self.incumbent is None
                and self.use_warm_start):
            return
        from haap_solver.baselines.proportional import on_grid
        from haap_solver.baselines.uniform import uniform

        budget = min(tuning.EARLY_SEED_SHARE * (self.seed_time_base_s or self.time_limit_s),
                     tuning.EARLY_SEED_MAX_S, self.deadline - time.perf_counter())
        if budget <= 0:
            return
        self.early_seeded, self.early_budget = True, budget
        started = time.perf_counter()
        base = uniform(self.instance, time_limit_s=budget, cost_model=self.cm,
                       largest_tp_first=True)
        # (Best.result says so where the time limit stopped the enumeration)
        self.early_cut = base.plan is None or "time limit reached" in base.message
        self.plans_costed += base.plans_costed
        self.seed_times["uniform"] = base.iteration_time_s if base.plan is not None else math.inf
        self.take_seed("uniform", base)
        if base.plan is not None and time.perf_counter() < self.deadline:
            split = on_grid(self.instance, base.options["choice"], cost_model=self.cm,
                            time_limit_s=max(0.05, self.deadline - time.perf_counter()))
            self.plans_costed += split.plans_costed
            self.take_seed("proportional", split)
        self.early_s = time.perf_counter() - started

    def take_seed(self, name: str, base: SolveResult) -> None:
        """A baseline's result as a seed, kept where its plan beats the incumbent."""
        if base.plan is not None and base.evaluation is not None \
                and base.iteration_time_s < self.best_time:
            check_plan(self.instance, base.plan, cost_model=self.cm)
            self.improved(base.plan, base.evaluation)
            self.seeded = name
            self.seed_plans.append(base.plan)

    # -- models ---------------------------------------------------------------------------------
    # Sub-problems are attacked in passes of growing per-sub-problem time budgets: easy ones close
    # at once and give incumbents whose bound (Sec. 4.2) then shrinks the hard ones.
    def attempt(self, sub: SubProblem, configs: list[StageConfig], budget: float,
                floor: float, restricted: bool = False, max_vars: int | None = None,
                backend: str | None = None, tail_cut_share: float | None = None) -> Any:
        """Build and solve one model; keep its plan if it beats the incumbent. A model of more
        than `max_vars` variables is not solved (TOO_BIG). `backend` overrides the choice of
        `model_backend` for a full model, `tail_cut_share` the tail cuts' `min_share`."""
        instance, state = self.instance, self.state
        floors = self.floors_by_b[sub.micro_batch]
        # Sec. 4.2: a plan better than the threshold has no stage slower than this.
        at = self.threshold()
        cap = _stage_time_cap(state, sub, floors, at)
        # Sec. 4.10: a plan better than the threshold has its bottleneck in the window its path
        # walk left open (a stage's time is at most the bottleneck).
        window_lo, window_hi = state.window(sub, at)
        cap = min(cap, window_hi)
        slots = build_slots(instance, self.cache, sub, configs, stage_time_cap_s=cap,
                            end_configs=state.end_configs(sub.micro_batch))
        if slots is None or (state.require_mixed and not any(
                c.mixed for slot in slots for c in slot.candidates)):
            return None
        if max_vars is not None and 2 * sum(len(s.candidates) for s in slots) > max_vars:
            return TOO_BIG  # (a binary and a layer count per candidate, before the rest)
        t_lb = state.bottleneck_floor(sub, self.p_cap)
        if not math.isfinite(t_lb):
            return None  # no plan of the sub-problem holds every layer (Sec. 4.3, 4.4)
        t_lb = max(t_lb, window_lo)
        sm = build_model(instance, self.cache, sub, slots,
                         time_upper_bound_s=_time_ub(slots, sub, instance, self.cache),
                         load_balance_floor_s=max(t_lb, floors[0]),
                         objective_cutoff_s=at if math.isfinite(at) else None,
                         require_mixed=state.require_mixed)

        # With a search beside this one, a plan the solver finds goes to it at once, not when
        # the model ends: on llama3-8b-h100-a100-l40s the dive's model finds the optimum 0.29 s
        # into its 0.84 s, and the search over plans with a mixed stage, which waits for it,
        # strengthens its bounds against a 6% worse plan meanwhile.
        on_solution = None if self.share_incumbent is None else (
            lambda values: self.take(sm, sub, values, sm.lp.value(values)))
        remaining = self.deadline - time.perf_counter()
        if remaining < budget:  # (the deadline, not the budget, ends it: MODEL_DEADLINE_MARGIN_S)
            remaining -= max(tuning.MODEL_DEADLINE_MARGIN_S,
                             tuning.MODEL_DEADLINE_MARGIN_SHARE * remaining)
        opts = replace(self.opts_base, time_limit_s=max(min(remaining, budget), 0.01),
                       on_solution=on_solution)
        # Every backend's full models take the tail staircase cuts (their slopes are rationals
        # with integer coefficients, `add_tail_cuts`), before the backend is chosen.
        cut = 0 if restricted else self.tail_cuts(
            sm, max(t_lb, floors[0]), cap, opts.time_limit_s,
            at if math.isfinite(at) else floor, min_share=tail_cut_share)
        name, fn = ("restricted", self.restricted_fn) if restricted else \
            (backend, get_backend(backend)) if backend is not None else \
            self.model_backend(sub, len(sm.lp.vars), tail_cuts=cut > 0)
        res = fn(sm.lp, opts, floor)
        self.solved += 1
        if not restricted:
            self.backend_s.setdefault((sub, name), []).append(res.wall_s)
        if not restricted and res.status in ("feasible", "unknown"):
            self.open_models[sub] = (at, opts.time_limit_s)
            self.unproven_by[sub] = name
        if res.values is not None:
            assert res.objective_s is not None
            self.take(sm, sub, res.values, res.objective_s)
        return res

    def tail_cuts(self, sm: Any, t_floor: float, t_cap: float, budget: float,
                  objective_s: float, *, min_share: float | None = None) -> int:
        """Add the tail staircase cuts (R') of Sec. 5 to a full model (`add_tail_cuts`), from
        the positional LP's R_min(T) between the model's bottleneck floor and its stage-time
        cap, where they can matter: the least tail at the floor is at least `min_share`
        (default TAIL_CUT_MIN_SHARE) of `objective_s` (the model's cutoff, or its floor). At most
        TAIL_CUT_SHARE of the model's budget; cut short, the model goes without (the cuts are
        redundant)."""
        sub = sm.sub
        if not tuning.TAIL_STAIRCASE_CUTS or sub.schedule == "gpipe" or sub.empty_ends \
                or sub.num_stages < 2:
            return 0
        state = self.state
        positional = state.positional_bound(sub.micro_batch, sub.schedule)
        t_values = state.capacity_bound(sub.micro_batch, self.p_cap, sub.schedule).t_values
        # (Without the LPs per set of link sides, as the walk's first pass: Sec. 4.4.)
        positional.link_sides_on = False
        try:
            with until(min(self.deadline, time.perf_counter()
                           + tuning.TAIL_CUT_SHARE * budget)):
                corners = tail_staircase(positional.holds_all_layers, sub.num_stages,
                                         t_values, positional.tail_values(), t_floor, t_cap)
        except DeadlineReached:
            return 0
        finally:
            positional.link_sides_on = True
        share = tuning.TAIL_CUT_MIN_SHARE if min_share is None else min_share
        if not corners or corners[0][1] < share * objective_s:
            return 0
        added = add_tail_cuts(sm, staircase_cuts(corners))
        self.tail_cut_rows += added
        return added

    def model_backend(self, sub: SubProblem, num_vars: int,
                      tail_cuts: bool = False) -> tuple[str, Any]:
        """The backend of a sub-problem's next full model, and its name. Under `auto`, where
        the last one ended without a proof, the other of CP-SAT and HiGHS (a portfolio over the
        passes of growing budgets), except that a model with the tail cuts gets a second
        CP-SAT model where the first had less than CPSAT_KEEPS_TAIL_CUT_MODELS_S; else `auto`'s
        choice by size (AUTO_CPSAT_MAX_VARS). The two prove different models: on
        gpt3-2.7b-a100x8-v100x8-4gpu four single-type sub-problems of 1,000-2,000 variables
        stayed open in HiGHS for 15 s each (its LP bound 11.1-12.4 s against a 13.35 s plan),
        and CP-SAT closed each in 1-4 s; HiGHS proves the 500-800-variable models of
        llama3-70b-h100x32-a100x32 2.5x faster than CP-SAT."""
        if self.backend != "auto":
            return self.backend, self.backend_fn
        last = self.unproven_by.get(sub)
        cpsat_s = self.backend_s.get((sub, "cpsat"), [])
        if last == "cpsat" and tail_cuts and len(cpsat_s) == 1 \
                and cpsat_s[0] < tuning.CPSAT_KEEPS_TAIL_CUT_MODELS_S:
            name = "cpsat"  # (its one model so far had too little time to judge it)
        elif last is not None:
            name = _OTHER_SOLVER[last]
        elif tail_cuts and tuning.CPSAT_FIRST_WITH_TAIL_CUTS:
            name = "cpsat"
        else:
            name = auto_choice(num_vars)
        return name, get_backend(name)

    def take(self, sm: Any, sub: SubProblem, values: list[float], objective_s: float) -> None:
        """The plan of model `sm` at `values`: validated, costed, kept if it beats the
        incumbent."""
        chosen, layers = sm.extract(values)
        plan = build_plan(self.instance, chosen, layers, micro_batch=sub.micro_batch,
                          schedule=sub.schedule,  # type: ignore[arg-type]
                          note=f"haap_solver {self.backend}")
        if plan is None:
            raise HaapError("internal error: the solver chose stages that do not fit nodes")
        check_plan(self.instance, plan, cost_model=self.cm)
        ev = self.cm.evaluate(plan)
        self.plans_costed += 1
        self.mismatch = max(self.mismatch, abs(ev.iteration_time_s - objective_s))
        if ev.iteration_time_s < self.best_time:
            self.improved(plan, ev)

    def too_big_to_dive(self, cand: _Candidate) -> bool:
        """Whether the sub-problem's full model (without the cap of Sec. 4.2, so the answer
        does not change with the incumbent) has more than DIVE_FULL_MAX_VARS variables."""
        hit = self.model_sizes.get(cand.sub)
        if hit is None:
            state = self.state
            slots = build_slots(self.instance, self.cache, cand.sub,
                                state.configs(cand.sub.micro_batch),
                                end_configs=state.end_configs(cand.sub.micro_batch))
            hit = slots is not None and 2 * sum(
                len(s.candidates) for s in slots) > tuning.DIVE_FULL_MAX_VARS
            self.model_sizes[cand.sub] = hit
        return hit

    # -- bounds ---------------------------------------------------------------------------------
    def strengthen(self, cand: _Candidate, level: float = math.inf) -> None:
        """The strong bound (Sec. 4.3-4.6) against the current threshold, or against `level`
        where that is lower (`strengthening_level`), until the search's deadline: one takes up
        to 3 s on gpt3-175b-4types-x1024, and one begun just before the deadline ran to its end
        (a 15 s limit returned after 18.9 s). Cut short by the deadline, the sub-problem keeps
        the bound it had (valid, weaker), is not marked strengthened (`stale`) and nothing is
        shared. Against a level, it is not marked strengthened either: its bound is raised to
        at most the level, and it is strengthened again when it is the least once more."""
        self.absorb()
        at = self.threshold()
        target = min(at, level)
        if self.share_bound is not None and cand.strengthened_with is None:
            # (first taken: the search beside, bounding this space from the other end, leaves it
            # to this one from now on)
            self.share_bound(cand.sub, cand.lower_bound)
        try:
            bound = strong_lower_bound(self.state, cand.sub,
                                       self.floors_by_b[cand.sub.micro_batch], self.p_cap,
                                       target, deadline=self.deadline, closing=target >= at)
        except DeadlineReached:
            return
        cand.raise_bound(bound, target)
        cand.below_level = target < at and bound < target
        if target >= at:
            cand.strengthened_with = at
        else:
            self.levelled += 1
        if self.share_bound is not None:
            self.share_bound(cand.sub, cand.lower_bound)

    def strengthening_level(self, cand: _Candidate, queue: list[tuple[float, int, int, int]]
                            ) -> float:
        """The level the first pass strengthens `cand` against (popped as the least bound of
        the queue): a step of LEVEL_STEP times the threshold above the larger of its bound and
        the next least in the queue; the threshold where that is no lower, where its last
        strengthening against a level ended below it, outside clusters of LEVEL_GPUS, and in
        searches shorter than LEVEL_MIN_TIME_LIMIT_S.

        Why: the search's bound is the least over its open sub-problems, and a strong bound
        costs most where its walk (Sec. 4.5) climbs near the incumbent. Strengthened against
        the threshold one by one, a few such walks took most of the time (on
        gpt3-2.7b-a100x32-v100x96-4gpu's plans with a mixed stage, 10 of 165 took 20 of 25 s of
        CPU) while dozens of cheap ones waited at their cheap bounds, and where the limit came
        first the search's bound was one of those: 2.7-3.0 s in some runs, 4.2 s in runs where
        the pass ended in time, against a plan of 4.66 s. In levels the bounds rise together
        (a walk against a level is stopped there, and its LP answers are kept for the next:
        PositionalBound._remembered)."""
        at = self.threshold()
        low, high = tuning.LEVEL_GPUS
        if tuning.LEVEL_STEP <= 0 or cand.below_level or not low <= self.total_gpus <= high \
                or self.time_limit_s < tuning.LEVEL_MIN_TIME_LIMIT_S:
            return at
        next_least = queue[0][0] if queue else math.inf
        level = max(cand.lower_bound, next_least) + tuning.LEVEL_STEP * at
        return at if level >= at else level

    def strengthen_integer(self, cand: _Candidate) -> None:
        """The strong bound with integer stage counts (strong_lower_bound(integer=True)),
        before the model of a sub-problem too large for a dive, once per incumbent: there the
        backend's own bound rarely passes it, and closing the sub-problem here saves its
        model. Until the search's deadline (as `strengthen`): cut short, the sub-problem keeps
        its bound and the walk is neither recorded nor counted."""
        at = self.threshold()
        if time.perf_counter() >= self.deadline or not self.too_big_to_dive(cand) \
                or self.integer_strengthened.get(cand.sub, math.inf) <= at:
            return
        try:
            bound = strong_lower_bound(self.state, cand.sub,
                                       self.floors_by_b[cand.sub.micro_batch], self.p_cap, at,
                                       integer=True, deadline=self.deadline)
        except DeadlineReached:
            return
        self.integer_strengthened[cand.sub] = at
        self.integer_walks += 1
        cand.raise_bound(bound, at)

    def closed_by_bound(self, cand: _Candidate) -> bool:
        return cand.lower_bound >= self.threshold() * (1 - 1e-12)

    def stale(self, cand: _Candidate) -> bool:
        """Not strengthened yet, or against a threshold the search has since lowered by 0.1%."""
        return cand.strengthened_with is None \
            or self.threshold() < 0.999 * cand.strengthened_with

    # -- 2. warm start and seeds ----------------------------------------------------------------
    def positional_seed(self, cand: _Candidate) -> None:
        """The seed of the integer capacity program (positional_seed_sequence), once per
        sub-problem (in the warm start, the dives and before its first model) where its full
        model is too large for a dive (DIVE_FULL_MAX_VARS): there the backend rarely finds a
        plan in time, and elsewhere the model finds what the seed would, for less than the
        seed's integer programs cost (gpt3-1.3b-a100x8: 0.2 s -> 0.8 s with a seed for every
        sub-problem). Its integer programs stop at the search's deadline: then no seed, and the
        sub-problem counts as not seeded."""
        if cand.sub in self.positional_seeded or time.perf_counter() >= self.deadline \
                or cand.sub.empty_ends:  # (its capacity program knows no empty stage)
            return
        self.positional_seeded.add(cand.sub)
        try:
            with until(self.deadline):  # (the full model's slots: 0.3 s at 16,384 GPUs)
                if not self.too_big_to_dive(cand):
                    return
                sequence = positional_seed_sequence(self.state, cand.sub, self.p_cap,
                                                    deadline=self.deadline)
        except DeadlineReached:
            self.positional_seeded.discard(cand.sub)
            return
        if sequence is not None:
            self.try_seed(seed_from_sequence(self.cache, sequence, cand.sub,
                                             note=f"haap_solver {self.backend}"))

    def warm(self, cand: _Candidate, restricted_model: bool = True) -> None:
        """Heuristic plans for one sub-problem (they prove nothing): capacity-bound seeds,
        constructed plans, the integer capacity program's seed (positional_seed) and
        (`restricted_model`) a model restricted to the two best configurations per node group,
        which solves in a fraction of the full model's time. None for a sub-problem with an
        empty end stage (Sec. 1.2): the seeds know no empty stage, and its full model is small
        where such plans matter."""
        if cand.sub.empty_ends:
            return
        cache, backend = self.cache, self.backend
        ranked = _ranked_per_group(self.state, cand.sub, self.p_cap)
        if not ranked:
            return
        bound = self.state.capacity_bound(cand.sub.micro_batch, self.p_cap,
                                          cand.sub.schedule)
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
            self.try_seed(plan)
        self.positional_seed(cand)
        # Not where the full model is too large for a dive: at 1,024 and 16,384 GPUs (30 s runs)
        # the restricted models gave no incumbent, the integer program's seeds all the late ones,
        # and leaving them out starts the first pass 1-2 s sooner.
        if restricted_model and time.perf_counter() < self.deadline \
                and not self.too_big_to_dive(cand):
            restricted = [c for cs in ranked.values() for c in cs[:tuning.WARM_CONFIGS_PER_GROUP]]
            self.attempt(cand.sub, restricted, 0.5, cand.lower_bound, restricted=True)

    def warm_start(self) -> None:
        """The most promising sub-problems by their cheap bound give a good incumbent quickly,
        which makes the cap of Sec. 4.2 bite in the exact passes."""
        start, candidates = self.start + self.early_s, self.candidates
        warm_until = start + (0.2 * self.time_limit_s
                              if self.incumbent is None and self.use_warm_start else 0.0)
        large = self.large
        warm_count = tuning.WARM_START_SUBPROBLEMS[large] * len(self.instance.training.schedules)
        warm_list = _warm_start_order(candidates, warm_count)
        if large and warm_until > start:  # (WARM_RANK_POOL)
            rank_until = start + 0.5 * (warm_until - start)
            pool = []
            for cand in candidates[:tuning.WARM_RANK_POOL]:
                if time.perf_counter() >= rank_until:
                    break
                cand.lower_bound = max(cand.lower_bound, granular_lower_bound(
                    self.state, cand.sub, self.floors_by_b[cand.sub.micro_batch], self.p_cap))
                pool.append(cand)
            candidates.sort(key=_Candidate.rank)  # (the raised bounds are valid: queue's order)
            warm_list = sorted(pool, key=_Candidate.rank)[:warm_count]
        for cand in warm_list:
            if time.perf_counter() >= warm_until:
                break
            if self.closed_by_bound(cand):
                # (by a cutoff or a carried bound, formulations Sec. 8: the Planner's re-solve
                # after a loss its plan does not feel closes every sub-problem so, and its warm
                # start then costs nothing)
                continue
            self.warm(cand)

    def run_seed(self, name: str, share: float) -> None:
        """A baseline's best plan as a seed (`share` of the seed time base), kept where it beats
        the incumbent."""
        from haap_solver.baselines.balanced import balanced
        from haap_solver.baselines.metis import metis
        from haap_solver.baselines.uniform import uniform

        method = {"uniform": uniform, "balanced": balanced, "metis": metis}[name]
        budget = min(share * (self.seed_time_base_s or self.time_limit_s),
                     self.deadline - time.perf_counter())
        if budget <= 0:
            return
        base = method(self.instance, time_limit_s=max(0.05, budget), threads=self.threads,
                      seed=self.seed, cost_model=self.cm)
        self.plans_costed += base.plans_costed
        self.seed_times[name] = base.iteration_time_s if base.plan is not None else math.inf
        self.take_seed(name, base)

    def before_each(self, cand: _Candidate, done: int) -> None:
        """Before each sub-problem: what the search beside sent, a baseline seed whose turn has
        come, the incumbent polished where it improved, progress."""
        self.absorb()
        if self.pending_seeds and time.perf_counter() - self.start \
                >= tuning.SEED_AFTER_SHARE * self.time_limit_s:
            name, share = self.pending_seeds.pop(0)
            beats_grid = self.best_time < self.seed_times.get("uniform", math.inf)
            small = self.total_gpus < tuning.BALANCED_SEED_EARLY_GPUS
            if not (beats_grid and (name == "metis" or (name == "balanced" and small))):
                self.run_seed(name, share)
            # else: the search's own plan already beats the best uniform grid, which the
            # Metis-style search refines (and, on small clusters, whose models reach what the
            # balanced grids do): its share of the time goes to the proof instead.
        if self.unpolished:
            self.polish_incumbent()
        if self.progress:
            self.progress(done, len(self.candidates),
                          f"p={cand.sub.num_stages} b={cand.sub.micro_batch} "
                          f"best={self.best_time:.4g}s")

    # -- 3. and 4. the passes -------------------------------------------------------------------
    def solve_one(self, cand: _Candidate, budget: float, still_open: list[_Candidate]) -> int:
        """Solve the model of one sub-problem; 1 if that closed it, else 0 (kept open)."""
        self.positional_seed(cand)
        self.strengthen_integer(cand)
        if self.closed_by_bound(cand):  # by the seed's plan or the integer bound
            return 1
        if time.perf_counter() >= self.deadline:  # (the seed or the integer walk reached it)
            still_open.append(cand)
            return 0
        if self.too_big_to_dive(cand):
            still_open.append(cand)  # its full model is never solved (DIVE_FULL_MAX_VARS)
            return 0
        res = self.attempt(cand.sub, self.state.configs(cand.sub.micro_batch), budget,
                           cand.lower_bound)
        return self.settle(cand, res, still_open)

    def settle(self, cand: _Candidate, res: Any, still_open: list[_Candidate]) -> int:
        """Book the answer of a sub-problem's model: 1 if it closed the sub-problem, else 0 (its
        bound raised to the model's, kept in `still_open`)."""
        # (The model covered the plans below the threshold then, at least today's.)
        cand.modelled = True
        if res is not None and res.status in ("feasible", "unknown"):
            cand.raise_bound(res.bound_s, self.threshold())
            still_open.append(cand)
            return 0
        # (res None: no plan of it fits memory, or beats the threshold, Sec. 4.2-4.4.)
        cand.closed_by_model = True
        # Closed: none of its plans lies below the threshold (the model's own optimum, within
        # the gap, is one now: the incumbent is at most that).
        cand.raise_bound(self.threshold(), self.threshold())
        return 1

    def tail_capacity_pass(self) -> None:
        """Before the first pass, every sub-problem's bound raised by the tail-threshold
        capacity (Sec. 4.9; no LP, tables shared by the sub-problems of a micro-batch size)
        against the threshold, best cheap bound first, for at most TAIL_CAPACITY_PASS_SHARE of
        the time limit, on clusters of TAIL_CAPACITY_PASS_GPUS. On clusters of small nodes
        behind slow NICs the cheap bounds lie far below the plan and the lazy strengthening, at
        up to seconds a sub-problem, reaches few of them, so the least of the untouched cheap
        bounds was the search's bound. A sub-problem it closes counts as closed by a
        strengthened bound; one it leaves open is strengthened as before (this bound does not
        mark it strengthened).

        Where mixed-type stages are candidates (the search over plans with a mixed stage) the
        pass takes the granular step instead
        (`granular_lower_bound`: the floor of the half-unit tables, Sec. 4.9 *Mixed stages*,
        and the tail staircase), a bisection over T at R = inf whose tables the sub-problems
        of a micro-batch size share: the walk there costs several times the single-type one
        (`tuning.TAIL_CAPACITY_MIXED_WALK`). On gpt3-2.7b-a100x32-v100x96-4gpu it raised the
        least of its 194 sub-problems' bounds from 1.31 s to 2.11 s and closed 37 against a
        plan of 4.659 s, for about 3 s of CPU on a loaded host (the walk, 72 s: least 3.23 s)."""
        share = (tuning.TAIL_CAPACITY_PASS_SHARE_MIXED if self.state.mixed
                 else tuning.TAIL_CAPACITY_PASS_SHARE)
        low, high = tuning.TAIL_CAPACITY_PASS_GPUS
        if share <= 0 or not low <= self.total_gpus <= high:
            return
        until_s = min(self.deadline, time.perf_counter() + share * self.time_limit_s)
        state = self.state
        try:
            with until(until_s):
                for cand in sorted(self.candidates, key=_Candidate.rank):
                    at = self.threshold()
                    if self.closed_by_bound(cand):
                        continue
                    if time.perf_counter() >= until_s:
                        break
                    floors = self.floors_by_b[cand.sub.micro_batch]
                    bound = (granular_lower_bound(state, cand.sub, floors, self.p_cap)
                             if state.mixed else
                             tail_capacity_bound(state, cand.sub, floors, self.p_cap, at))
                    cand.raise_bound(bound, at)
                    self.tail_capacity_raised += 1
                    if self.closed_by_bound(cand):
                        cand.strengthened_with = at
                        if self.share_bound is not None:  # (the search beside skips it)
                            self.share_bound(cand.sub, cand.lower_bound)
        except DeadlineReached:
            return  # (the bound cut short is not taken; those before it are valid)

    def first_pass(self) -> list[_Candidate]:
        """Best bound first with lazy strengthening: the sub-problem with the least bound is
        strengthened (Sec. 4.3-4.6) and goes back in the queue; once the least bound in the
        queue is a strong one, its model is solved (budget `first_pass_budget`; a dive's,
        DIVE_BUDGET_S). The optimum tends to sit in the sub-problem with the least strong
        bound, and once it is the incumbent the others are strengthened against it (cheaper,
        the walk stops there) or pruned on their cheap bound. Returns the sub-problems left
        open."""
        candidates, state = self.candidates, self.state
        self.tail_capacity_pass()
        queue = [(*c.rank(), k) for k, c in enumerate(candidates)]
        heapq.heapify(queue)
        still_open: list[_Candidate] = []
        since_model = 0
        dived = False
        left_open = False  # (whether a strengthening has left its sub-problem open since)
        full_dives = self.model_dives and self.backend != "cpsat"  # see DIVE_FULL_MAX_VARS
        dive_budget = self.first_pass_budget() if state.require_mixed else tuning.DIVE_BUDGET_S
        dives = not (state.require_mixed and self.total_gpus > tuning.MIXED_DIVES_MAX_GPUS)
        while queue:
            entry = heapq.heappop(queue)
            index = entry[3]
            cand = candidates[index]
            self.before_each(cand, self.done)
            if cand.lower_bound > entry[0]:  # raised by a bound the other search sent: re-queued
                heapq.heappush(queue, (*cand.rank(), index))
                continue
            if self.closed_by_bound(cand):  # so is every sub-problem still queued
                self.done += 1 + len(queue)
                break
            if time.perf_counter() >= self.deadline:
                still_open.append(cand)
                still_open.extend(candidates[entry[3]] for entry in queue)
                break
            if self.stale(cand):
                self.strengthen(cand, self.strengthening_level(cand, queue))
                if not self.closed_by_bound(cand) and not self.stale(cand):
                    self.positional_seed(cand)
                if self.closed_by_bound(cand):
                    self.done += 1
                else:
                    heapq.heappush(queue, (*cand.rank(), index))
                since_model += 1
                left_open = left_open or not self.closed_by_bound(cand)
                if dives and left_open and since_model >= (
                        tuning.DIVE_EVERY if dived else tuning.DIVE_FIRST) \
                        and time.perf_counter() < self.deadline:  # (not once it has passed)
                    # A dive: the least strong bound so far is where the optimum tends to sit;
                    # its warm-start plans as the incumbent early make the strengthening still
                    # to come cheaper. The sub-problem itself stays in the queue.
                    strong = [entry for entry in queue if not self.stale(candidates[entry[3]])
                              and not self.closed_by_bound(candidates[entry[3]])]
                    # Where none is left open, the dive waits for the next strengthening that
                    # leaves one, not for DIVE_EVERY more (gpt3-175b-a100x64: its first 54 all
                    # closed theirs, the 55th was the optimum's, dived into 13 later).
                    left_open = bool(strong)
                    if strong:
                        dived = True
                        since_model = 0
                        self.dive(queue, min(strong), full_dives, dive_budget, still_open)
                continue
            since_model = 0
            budget = tuning.INCUMBENT_FIRST_BUDGET_S if self.holds_incumbent(cand.sub) \
                else self.first_pass_budget()
            self.done += self.solve_one(cand, budget, still_open)
        return still_open

    def first_pass_budget(self) -> float:
        """A model's budget in the first pass: FIRST_PASS_BUDGET_S, at most FIRST_PASS_SHARE of
        the time limit (a short re-plan still reaches other sub-problems)."""
        return min(tuning.FIRST_PASS_BUDGET_S, tuning.FIRST_PASS_SHARE * self.time_limit_s)

    def holds_incumbent(self, sub: SubProblem) -> bool:
        """Whether the incumbent is a plan of `sub` (in the single-type search: a search over
        plans with a mixed stage excludes single-type ones). No bound closes such a
        sub-problem while the incumbent is its optimum: only its model can, by reaching that
        optimum, which takes longer than showing that nothing lies below a cutoff."""
        plan = self.best_plan
        if plan is None or self.state.require_mixed:
            return False
        return (len(plan.stages) == sub.num_stages and plan.micro_batch_size == sub.micro_batch
                and plan.schedule == sub.schedule
                and (plan.stages[0].num_layers == 0) == sub.empty_first
                and (plan.stages[-1].num_layers == 0) == sub.empty_last)

    def dive(self, queue: list[tuple[float, int, int, int]], target: tuple[float, int, int, int],
             full_dives: bool, dive_budget: float, still_open: list[_Candidate]) -> None:
        """The dive into the queue's entry `target`: its full model where small enough
        (`full_dives`, DIVE_FULL_MAX_VARS; then it leaves the queue, settled), its seeds, and the
        restricted model where the full one was not solved."""
        dive = self.candidates[target[3]]
        res = TOO_BIG
        if full_dives:
            res = self.attempt(dive.sub, self.state.configs(dive.sub.micro_batch),
                               dive_budget, dive.lower_bound,
                               max_vars=tuning.DIVE_FULL_MAX_VARS)
        # Its seeds, and the restricted model where the full one was not solved (not once the
        # deadline has passed: they then only delay the answer, by 0.02-0.045 s at 1,024 GPUs).
        if time.perf_counter() < self.deadline:
            self.warm(dive, restricted_model=res is TOO_BIG)
        if res is not TOO_BIG:  # its first-pass model, solved now: it leaves the queue
            self.done += self.settle(dive, res, still_open)
            queue.remove(target)
            heapq.heapify(queue)

    def follow_up_passes(self, still_open: list[_Candidate]) -> list[_Candidate]:
        """Further passes of growing per-sub-problem time budgets over what stayed open: easy
        sub-problems close at once and give incumbents whose cap (Sec. 4.2) shrinks the hard
        ones. Returns the sub-problems still open."""
        self.deadline = min(self.deadline, time.perf_counter() + self.follow_up_s)
        open_list = sorted((c for c in still_open if not self.closed_by_bound(c)),
                           key=_Candidate.rank)
        for budget in [2.0, 15.0, math.inf]:
            if not open_list or time.perf_counter() >= self.deadline:
                break
            still_open = []
            for cand in open_list:
                self.before_each(cand, self.done)
                if self.closed_by_bound(cand):
                    self.done += 1
                    continue
                if self.stale(cand) and time.perf_counter() < self.deadline:
                    self.strengthen(cand)
                    if self.closed_by_bound(cand):
                        self.done += 1
                        continue
                if self.deadline - time.perf_counter() <= 0 or not self.worth_a_model(cand, budget):
                    still_open.append(cand)
                    continue
                before = self.best_time
                closed = self.solve_one(cand, budget, still_open)
                self.done += closed
                if self.yield_when_stuck and not closed and self.best_time >= before:
                    # its models stopped paying: yield (Sec. 1.1)
                    self.deadline = time.perf_counter()
            open_list = [c for c in still_open if not self.closed_by_bound(c)]
        return self.last_resort(open_list)

    def last_resort(self, open_list: list[_Candidate]) -> list[_Candidate]:
        """The sub-problems left open only because their full model is too large for a dive
        (DIVE_FULL_MAX_VARS), least bound first, each given the time that is left, on
        clusters of at most LAST_RESORT_MAX_GPUS GPUs: there such models come from the rich
        space of a small cluster (uneven shares, the full mixed space), and HiGHS proves them.
        Returns the sub-problems still open."""
        if self.total_gpus > tuning.LAST_RESORT_MAX_GPUS:
            return open_list
        still_open: list[_Candidate] = []
        for cand in sorted(open_list, key=_Candidate.rank):
            if self.closed_by_bound(cand):
                self.done += 1
                continue
            left = self.deadline - time.perf_counter()
            if left < tuning.LAST_RESORT_MIN_S or not self.too_big_to_dive(cand) \
                    or not self.worth_a_model(cand, left):
                still_open.append(cand)
                continue
            # (with the tail cuts wherever they apply: LAST_RESORT_MAX_GPUS)
            res = self.attempt(cand.sub, self.state.configs(cand.sub.micro_batch), left,
                               cand.lower_bound, max_vars=tuning.LAST_RESORT_MAX_VARS,
                               backend="highs" if self.backend == "auto" else None,
                               tail_cut_share=0.0)
            if res is TOO_BIG:
                still_open.append(cand)
                continue
            self.done += self.settle(cand, res, still_open)
        return still_open

    def worth_a_model(self, cand: _Candidate, budget: float) -> bool:
        """Whether a pass with this per-model `budget` should solve the sub-problem's model:
        not where its last full model, against the same threshold, already had at least that
        long and ended open (the dive's 2 s model, then the first follow-up pass's 2 s again:
        the same model for the same answer, 6 of 31 s on a 24-GPU cluster); it waits for the
        next pass's larger budget. Where the incumbent has improved since, the model is
        smaller (Sec. 4.2) and is solved again."""
        last = self.open_models.get(cand.sub)
        if last is None:
            return True
        threshold, given_s = last
        return self.threshold() < threshold * (1 - 1e-12) or budget > given_s * (1 + 1e-9)

    # -- 5. the result --------------------------------------------------------------------------
    def result(self, open_list: list[_Candidate]) -> SolveResult:
        """The best plan with the least bound over what stayed open, its gap and status."""
        instance, state, candidates, space = self.instance, self.state, self.candidates, self.space
        open_bounds = self.open_bounds
        open_bounds.extend(c.lower_bound for c in open_list)
        # (their sub-problems are in no list: the cluster's compute bounds them; computed once,
        # 0.03 s at 1,024 GPUs, past the deadline)
        unbuilt_floor = any_plan_floor(state) if self.unbuilt else math.inf
        if self.unbuilt:
            # (and a floor proven on a larger cluster, where the Planner carried one: Sec. 8)
            open_bounds.append(max(unbuilt_floor, state.carried_floor()))
        elif self.max_stages is None:  # every sub-problem of the space set up: a space floor
            state.record_floor(min((c.lower_bound for c in candidates), default=math.inf))
        if self.relative_gap > 0:
            # A closed sub-problem's bound may lie between the threshold and the incumbent.
            open_bounds.extend(c.lower_bound for c in candidates)
        model_sizes = self.model_sizes
        if any(model_sizes.values()):
            # Sub-problems that came to need a model whose full model was too large to solve
            # (Sec. 4.6), and what stood in for it.
            space["too_large_for_a_model"] = {
                "subproblems": sum(model_sizes.values()),
                "integer_program_seeds": sum(model_sizes[sub] for sub in self.positional_seeded),
                "integer_walks": self.integer_walks}
        if self.bounds_feed is not None:
            space["bounds_from_the_other_search"] = self.fed_bounds
        if self.levelled:
            space["strengthenings_against_a_level"] = self.levelled
        if self.polisher is not None:
            space["local_search"] = {"plans_improved": self.polished,
                                     "seconds": round(self.polish_s, 3)}
        if self.bounds_out is not None:
            self.bounds_out.update((c.sub, (c.lower_bound, c.strengthened_with))
                                   for c in candidates)
        for c in candidates:  # (each a valid bound: Candidate.raise_bound)
            state.record_bound(c.sub, c.lower_bound)
        if self.progress:
            self.progress(len(candidates), len(candidates), "done")

        wall = time.perf_counter() - self.start
        cache, cm = self.cache, self.cm
        hits = cache.hits + cm.cache_hits - self.hits0
        misses = cache.misses + cm.cache_misses - self.misses0
        cache_stats = {"hits": hits, "misses": misses,
                       "hit_rate": hits / (hits + misses) if hits + misses else 0.0}
        options = {"backend": self.backend, "time_limit_s": self.time_limit_s,
                   "threads": self.threads, "seed": self.seed, "mixed": self.mixed}
        fates = subproblem_fates(candidates, open_list)
        space["subproblem_fates"] = fates
        # Which step of the strong bound reached the threshold, per strengthening (one
        # sub-problem may be strengthened again after the incumbent improved).
        space["tail_capacity_pass"] = self.tail_capacity_raised
        space["strong_bound_closed_by"] = {
            step: count - self.steps0.get(step, 0)
            for step, count in sorted(state.closing_steps.items())
            if count > self.steps0.get(step, 0)}
        common = dict(instance=instance.name, method=f"haap:{self.backend}", wall_s=wall,
                      subproblems=len(candidates), solved=self.solved,
                      pruned_by_bound=(fates["load_balance_bound"] + fates["carried_bound"]
                                       + fates["strengthened_bound"]),
                      closed_by_model=fates["model"], left_open=fates["open"],
                      pruned_by_memory=self.pruned_memory,
                      search_space=space, cache=cache_stats,
                      compute_bound_s=min(compute_bound(state, self.floors_by_b),
                                          unbuilt_floor),
                      options=options,
                      model_mismatch_s=self.mismatch, plans_costed=self.plans_costed)
        best_plan, best_time = self.best_plan, self.best_time
        if best_plan is None:
            if open_bounds:
                return SolveResult(plan=None, evaluation=None, status="unknown",
                                   iteration_time_s=math.inf, best_bound_s=min(open_bounds),
                                   gap=math.inf, message="time limit reached before any plan "
                                   "was found", **common)  # type: ignore[arg-type]
            if math.isfinite(self.cutoff_s) and candidates:  # all closed by the cutoff
                return SolveResult(plan=None, evaluation=None, status="cutoff",
                                   iteration_time_s=math.inf, best_bound_s=self.threshold(),
                                   gap=math.inf,
                                   message=f"no plan below the cutoff ({self.cutoff_s:.4g} s)",
                                   **common)  # type: ignore[arg-type]
            raise InfeasibleError(explain_infeasible(state))
        bound = min([best_time, *open_bounds])
        gap = max(0.0, (best_time - bound) / best_time)
        status = "optimal" if gap <= 1e-6 else "feasible"
        message = ""
        if self.seeded and any(best_plan is p for p in self.seed_plans):
            message = (f"the best plan is the {self.seeded} baseline's seed; the bound and gap "
                       "refer to the search space of formulations/stage-assignment.md")
        return SolveResult(plan=best_plan, evaluation=self.best_eval, status=status,
                           iteration_time_s=best_time, best_bound_s=bound, gap=gap,
                           message=message, **common)  # type: ignore[arg-type]


def subproblem_fates(candidates: list[_Candidate], open_list: list[_Candidate]) -> dict[str, int]:
    """How each sub-problem ended, each counted once: closed by its cheap load-balance bound
    (never strengthened nor modelled), by a strengthened bound (Sec. 4.3-4.6, or the bound its
    model proved, or one the search beside strengthened), by its model's answer, or left open
    (the time limit)."""
    still = {id(c) for c in open_list}
    fates = {"load_balance_bound": 0, "carried_bound": 0, "strengthened_bound": 0, "model": 0,
             "open": 0}
    for c in candidates:
        if id(c) in still:
            fates["open"] += 1
        elif c.closed_by_model:
            fates["model"] += 1
        elif c.strengthened_with is None and not c.modelled and not c.fed:
            fates["carried_bound" if c.inherited else "load_balance_bound"] += 1
        else:
            fates["strengthened_bound"] += 1
    return fates


def _time_ub(slots: list[Any], sub: SubProblem, instance: Instance,
             cache: CoefficientCache | None = None) -> float:
    """A safe upper bound on every time variable of the model (for finite CP-SAT domains).
    The bottleneck also holds link times, which the stage times do not bound: with blocking
    sends a stage's period is tau_i + w (c_{i-1} + c_i) (6b; w = training.link_waits, 2 under
    DeepSpeed's 1F1B), and under the interleaved schedule it holds up to 3 v link times
    (formulations (12)); so 3 v w times the slowest link side of any candidate is added. (Until
    2026-12-03 only under the interleaved schedule: with sends of 1.8 s beside stages of
    milliseconds, a 0.01 Gbit/s NIC, a bound of 1.006 s made the model of the optimum's
    sub-problem "infeasible", tests/data/slow-link-two-stages.toml.)"""
    worst = 0.0
    for s in slots:
        for co, n in zip(s.coeffs, s.max_layers, strict=True):
            worst = max(worst, co.tau(n), co.tail(n), co.fwd(n) + co.bwd(n))
    if cache is None:
        return 4.0 * worst + 1.0
    v = sub.chunks(instance)
    keys = {c.link_key for s in slots for c in s.candidates}
    link = max(cache.p2p_side(c, sub.micro_batch, key)
               for s in slots for c in s.candidates for key in keys)
    return 4.0 * worst + 1.0 + 3.0 * v * instance.training.link_waits(sub.schedule) * link
