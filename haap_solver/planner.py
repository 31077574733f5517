"""`Planner`: incremental re-solve. It owns the search state of an instance and keeps it across
changes to the cluster and the job, so that re-planning after a node fails, a node group
arrives, a GPU runs slow or the batch grows does not recompute what did not change::

    planner = haap.Planner(instance, time_limit_s=30)
    first = planner.solve()
    planner.apply(haap.changes.Resize(node_group="a100", num_nodes=3))
    second = planner.solve()       # warm: cached coefficients, the old plan as incumbent

Each `apply` runs three named steps: the change makes the new instance (`changes`), the search
state carries over the cache entries that still hold (`search.carry`: what survives which change,
formulations/stage-assignment.md Sec. 8), and the previous plan is repaired to the new cluster
(`search.repair`). `solve` then searches with the repaired plan's time as its cutoff: a
sub-problem that cannot beat the plan running now is closed at once. Where nothing beats it,
the repaired plan is the proven optimum (it lies in the search space, so the cutoff's bound
proves it). The proven optimum is the same as a cold solve's of the changed instance: the
incumbent only prunes, it never changes what is optimal.

The plans of earlier solves are kept too (the last `EARLIER_PLANS`), renamed with every change
and repaired like the running plan; the fastest repair is the cutoff. Capacity comes back:
spot nodes return, a failed node is replaced, a throttled GPU recovers, and the plan that ran
on that cluster before is then the natural first incumbent (spot trace, 19:00, two V100 nodes
back on the cluster of 15:30: a 2 s re-plan from the running A100-only plan ended at 9.058 s,
1.21x the cold plan, 2026-12-03).

The warm start's heuristic plans still run, for the sub-problems the cutoff and the carried
bounds leave open: a repaired plan is often well above the new optimum (a shrunk stage gives up
replicas), and strengthening every bound against its time took longer than a cold solve whose
warm start found a better plan first (spot trace, 09:30 event, 2026-12-03, 30 s, one thread,
a loaded 2-core host: warm CPU 8.62 s without the warm start, 3.70 s with it; cold 5.70 s).

Repairs only keep or shrink a plan, so GPUs the cluster gained stay idle in them; the fastest
repair is then grown onto the idle GPUs (`search.growth`: stages widened, moved or inserted on
them, layers re-split exactly; within GROWTH_SHARE of the time limit). On the 1,024-GPU trace
(2026-12-03, 2 s re-plans on a loaded 2-core host, against cold 30 s plans), from a two-stage
b=128 plan (1.690 s): the first H100 node lost halved the 512-GPU H100 stage (the space has no
replica count between 64 and 128 there) and left 248 H100 GPUs idle, a cutoff 1.275x the cold
plan's time that the 2 s search did not improve; grown, 1.088x. When 16 H100 nodes arrived, the
cutoff went from 1.247x to 1.131x the cold plan (from a 15-stage b=16 plan: 1.284x to 1.144x);
the cold plan is faster still with another micro-batch size, which the growth does not change.

The Planner searches without the baseline seeds (`solve(seed_with_baselines=False)`): their
plans may lie outside the search space, and the optimum it proves is the space's, the one a cold
`solve(..., seed_with_baselines=False)` proves. Where no earlier plan can be repaired (the first
solve), the best uniform grid and its proportional split are the cutoff instead, where they lie
in the space (`Planner._baseline_seed`): a 2 s first solve of fleet-1024, whose set-up alone
outlasts the limit, found no plan without them.

A solve's time limit bounds the whole re-plan, not the search alone: one deadline is set at
entry, and the repairs (`REPAIR_SHARE` for the earlier plans), the baseline seed
(`SEED_SHARE`), the growth (`GROWTH_SHARE`) and then the search (its set-up, passes and result)
each get what the steps before them left, less `REPLAN_RESERVE_S` kept for what runs past the
search's deadline (`Replanned.search_limit_s` says what the search got). Before, the steps ran
on top of the search's full limit: 2 s re-plans of fleet-1024 took 2.10-2.74 s wall, of
spot-a100-v100 2.04-2.24 s (a 2-core host at load 2-3, 2026-12-03); with one deadline
1.94-1.99 s and 1.94-2.03 s. The search then has 0.1-0.7 s less at 1,024 GPUs, which the mixed
search left out where it does not fit (`SKIP_UNFIT_MIXED`) gives back: per event, forked from
one Planner state, old and new side by side (60 pairs over both traces), the 2 s re-plan's plan
was the same in 51, better in 8 (spot 12:45 1.030x -> 1.000x a cold 30 s plan, 14:00 1.068x ->
1.041x; fleet-1024 H100 throttle 1.164x and 1.059x -> 1.042x) and worse in one, where the new
run had half the CPU the old one had (1.15 s against 2.07 s). What still ran past 2 s (2.02-2.24 s
in the bench) was the cyclic collector, whose collection of the search's objects fell at the
end of the search's pause of it (now made first, inside the limit: `_collect_what_is_due`), and
the last model outlasting the deadline (now given less than the time left:
`tuning.MODEL_DEADLINE_MARGIN_S`): then 0 of 30 re-plans of both traces above 1.98 s, and in two
bench runs of both traces 1 of 30 at 2.003 s (whence REPLAN_RESERVE_S 0.1 s, was 0.08).

`relative_gap` (as `solve`'s): each re-solve stops once its plan is proven within that share of
the optimum; the bounds carried from a previous solve then close at once what they prove within
it.

`migration_slack` (a fraction, e.g. 0.02): among the plans found within that fraction of the
best plan's time, the Planner returns the one that moves the fewest GPUs (`migration`); the
candidates are the search's plan and the repaired previous plan. So with it the plan running now
is kept wherever it is within the slack, and the result says what it costs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import math
import time
from dataclasses import dataclass
from typing import Any

from haap_solver.changes import Change, Slowdown
from haap_solver.cost.evaluate import Evaluation
from haap_solver.errors import HaapError, InputError
from haap_solver.instance import Instance
from haap_solver.migration import Migration, migration
from haap_solver.plan import Plan
from haap_solver.result import SolveResult
from haap_solver.search import objectives, tuning
from haap_solver.search.carry import CacheReuse, carry_state
from haap_solver.search.growth import grown_plan
from haap_solver.search.phases import collector_paused
from haap_solver.search.repair import rebalanced, renamed_plan, repaired_plan
from haap_solver.search.solve import solve
from haap_solver.search.state import SearchState
from haap_solver.search.tuning import DEFAULT_BACKEND
from haap_solver.stragglers import Straggler, apply_stragglers, node_renames

EARLIER_PLANS = 8
"""How many plans of earlier solves (besides the running one) the Planner repairs as incumbents."""

PROOFS_KEPT = 8
"""The sub-problem bounds and space floors of the last this many distinct clusters the Planner
solved, kept by instance (`_proof_key`): a change that brings back a cluster solved before (a
spot node reclaimed, then granted again) starts the search from what was proven on it, which
is valid as it stands on the same instance (formulations Sec. 8, *A cluster seen before*)."""


SEED_SHARE = 0.25
"""Share of a solve's time limit the baseline seeds may take where no earlier plan could be
repaired (`Planner._baseline_seed`: the first solve), at most tuning.EARLY_SEED_MAX_S as the
search's own early seed (a 30 s first solve of fleet-1024 that gave them 7.5 s ended at a
plan 1% slower)."""

GROWTH_SHARE = 0.25
"""Share of a solve's time limit the growth repair of the incumbent (`search.growth`) may take
(no round starts after it): at 1,024 GPUs a round takes 0.05-0.2 s on a loaded 2-core host, and
the 2 s re-plan needs most of its limit for the search."""

REPAIR_SHARE = 0.15
"""Share of a solve's time limit after which no earlier plan's repair starts (the running plan's
is always made): each takes 0.01-0.08 s at 1,024 GPUs on a loaded 2-core host, and up to
EARLIER_PLANS of them ran on top of a 2 s re-plan's search before."""

REPLAN_RESERVE_S = 0.1
REPLAN_RESERVE_SHARE = 0.05
"""Kept back from a solve's time limit for what runs past the search's own deadline (the
result's bookkeeping, the bound of plans with a mixed stage where their set-up did not finish,
the migration count, the search's last step), at most this share of the limit: the wall of
`solve(time_limit_s=T)` is then T within a small overshoot. With 0.05 s, 2 of 21 2 s re-plans
of fleet-1024 that had their core ended 0.02-0.04 s past 2 s (2026-12-03); the search itself
ends 0.02-0.05 s past its deadline there. With 0.08 s (and the collector's work and the last
model's margin of planner.py's docstring), 1 of 30 2 s re-plans in two bench runs of both traces
ended at 2.003 s (fleet-1024, 2026-12-03, the host otherwise idle); 0.1 s since."""

SKIP_UNFIT_MIXED = True
"""With mixed-type stages, the search over plans with a mixed stage runs after the single-type
search's share of the limit (`tuning.MIXED_SINGLE_SHARE`), and where its set-up does not finish
those plans are bounded by the cluster's compute alone (the floors). In the Planner's 2 s
re-plans it never finished (fleet-1024 and spot-a100-v100, 2026-12-03: the set-up of the mixed
configurations took the last 0.35-0.47 s, its queue was not built): the floors were the bound
and the single-type search had a quarter less time. So where a solve of this Planner with a
limit as long or longer could not set that search up, the next one leaves it out
(`solve(mixed_search=False)`): the single-type search has the whole limit, and the plans with a
mixed stage keep the same bound, the floors; a longer limit tries again."""

MIN_SEARCH_S = 0.01
"""The least time limit the search gets where the steps before it used the solve's: it then
stops at once, and its bounds (the floors) still make the status and gap honest."""

_SAME = 1e-12
"""Relative tolerance under which the search's bound counts as reaching the incumbent's time."""


@dataclass(frozen=True, kw_only=True)
class Replanned:
    """One solve of the Planner: the result and what the re-solve reused and moved."""

    result: SolveResult
    """The search's result (plan validated, time `evaluate()`'s)."""
    migration: Migration
    """What the plan moves relative to the previous solve's plan (everything on the first)."""
    cache_reuse: CacheReuse
    """Coefficient-cache entries carried over by the changes since the previous solve."""
    incumbent_s: float | None
    """evaluate()'s time of the previous plan repaired to the changed cluster (its layers
    re-balanced), or of an earlier solve's plan where its repair is faster, or of a baseline
    seed where none could be repaired, with idle GPUs put to work where that is faster: the
    search's cutoff (None: no such plan in the search space)."""
    incumbent_from: str = ""
    """Which plan the cutoff is: "running" (the previous solve's), "k solves back" (an earlier
    solve's), "baseline: uniform grid" or "baseline: proportional split" (where none could be
    repaired, as on the first solve: `Planner._baseline_seed`), each followed by ", grown onto
    idle GPUs" where the growth repair improved it (`search.growth`); "" where there was none."""
    solve_s: float
    """Wall time of this solve, seconds (repair included)."""
    search_limit_s: float = math.inf
    """The time limit the search got: what the repairs, the seed and the growth left of the
    solve's (less REPLAN_RESERVE_S)."""
    changes: tuple[str, ...]
    """What changed since the previous solve, a line each."""

    def to_dict(self) -> dict[str, Any]:
        r = self.result
        return {"iteration_time_s": r.iteration_time_s, "best_bound_s": r.best_bound_s,
                "gap": r.gap, "status": r.status, "solve_s": self.solve_s,
                "search_limit_s": self.search_limit_s,
                "incumbent_s": self.incumbent_s, "incumbent_from": self.incumbent_from,
                "changes": list(self.changes),
                "cache_reuse": self.cache_reuse.to_dict(), **self.migration.to_dict(),
                "num_stages": r.plan.num_stages if r.plan else None,
                "message": r.message}


class Planner:
    """Plans an instance, then re-plans it after each change, reusing what did not change."""

    def __init__(self, instance: Instance, *, backend: str = DEFAULT_BACKEND,
                 time_limit_s: float = 60.0, threads: int = 1, seed: int = 0,
                 mixed: bool = True, migration_slack: float | None = None,
                 relative_gap: float = 0.0):
        if objectives.applies(instance):
            raise InputError("the Planner searches for the least iteration time; this instance "
                             "asks for another objective, a GPU cap or prices (use haap solve)",
                             field="objective", source=instance.source)
        _refuse_target(instance, field="training.target", source=instance.source)
        if migration_slack is not None and not 0.0 <= migration_slack < 1.0:
            raise ValueError(f"migration_slack: must be in [0, 1), got {migration_slack}")
        if not 0.0 <= relative_gap < 1.0:
            raise ValueError(f"relative_gap: must be in [0, 1), got {relative_gap}")
        self.instance = instance
        """The instance planned now: `_base` with the slowdowns of the events folded in."""
        self._base = instance
        """The instance as given, with every change but the slowdowns applied: the names and
        node numbers events refer to (a slowed node stays node k of its group, though the
        search sees it as a node group of its own)."""
        self._slow: dict[tuple[str, int | None], Straggler] = {}
        """The slowdowns in force, by (node group, node) of `_base` (None: the whole group);
        one back at full speed is dropped."""
        self.state = SearchState(instance)
        if backend in ("auto", "cpsat"):
            _load_cpsat()
        self.options = {"backend": backend, "time_limit_s": time_limit_s, "threads": threads,
                        "seed": seed, "mixed": mixed, "relative_gap": relative_gap}
        self.migration_slack = migration_slack
        self.plan: Plan | None = None
        """The plan of the last solve (the one running)."""
        self._earlier: list[Plan] = []
        """Plans of earlier solves, most recent first (at most EARLIER_PLANS), in the node
        names of the current instance."""
        self._reuse = CacheReuse(kept=0, total=0)
        self._changes: list[str] = []
        self._proofs: list[tuple[Instance, Any, dict[Any, float], dict[str, float]]] = []
        """Per instance solved (`_proof_key`, most recent first, at most PROOFS_KEPT): its cost
        model's key (`_cost_key`), sub-problem bounds and space floors."""
        self._mixed_setup: tuple[float, bool] | None = None
        """The time limit of the last solve that searched the plans with a mixed stage, and
        whether that search got set up in it (every micro-batch size: SKIP_UNFIT_MIXED)."""

    # -- changes -----------------------------------------------------------------------------
    def apply(self, change: Change) -> CacheReuse:
        """Apply `change`: the new instance, and the search state carried over to it. Returns
        how much of the coefficient cache was carried."""
        base, slow = self._base, dict(self._slow)
        if isinstance(change, Slowdown):
            change.apply_to(base)  # its checks: the group, the node, a profile
            s = change.straggler
            slow.pop((s.node_group, s.node), None)
            if (s.compute_speed, s.network_speed) != (1.0, 1.0):
                slow[(s.node_group, s.node)] = s
        else:
            base = change.apply_to(base)
            slow = {key: s for key, s in slow.items() if _still_there(base, s)}
        instance = dataclasses.replace(base, cluster=apply_stragglers(
            base.cluster, list(slow.values()), prefix="slowdown"))
        if objectives.applies(instance):
            raise InputError("after this change the instance asks for another objective, a "
                             "GPU cap or prices, which the Planner does not search",
                             field="objective")
        _refuse_target(instance, field="target")
        self.state, reuse = carry_state(self.state, instance)
        reuse = self._recall_proof(reuse)  # (on the new state's instance)
        moves = _node_moves(self._base, self._slow, base, slow)
        if self.plan is not None:
            self.plan = renamed_plan(self.plan, moves, instance)
        self._earlier = [renamed_plan(plan, moves, instance) for plan in self._earlier]
        self.instance, self._base, self._slow = instance, base, slow
        self._reuse = reuse  # (after several changes: the last one's)
        self._changes.append(change.describe())
        return reuse

    # -- solving -----------------------------------------------------------------------------
    def solve(self, *, time_limit_s: float | None = None,
              relative_gap: float | None = None) -> Replanned:
        """The best plan of the current instance, warm: cached coefficients, the previous plan
        repaired as incumbent, the migration preference where set. `time_limit_s` overrides
        the Planner's limit for this solve only: an operator re-plans within seconds of a node
        failing, and may refine with a longer solve later (the bounds the short one proved are
        kept for it). The limit bounds the whole re-plan, repairs and growth included (module
        docstring): the search gets what they leave. `relative_gap` likewise overrides the
        Planner's for this solve only (refine to a given gap, then on to a proof)."""
        if time_limit_s is not None and not (time_limit_s > 0 and math.isfinite(time_limit_s)):
            raise ValueError(f"time_limit_s: must be a positive number of seconds, got "
                             f"{time_limit_s!r}")
        if relative_gap is not None and not 0.0 <= relative_gap < 1.0:
            raise ValueError(f"relative_gap: must be in [0, 1), got {relative_gap!r}")
        options = dict(self.options)
        if time_limit_s is not None:
            options["time_limit_s"] = time_limit_s
        if relative_gap is not None:
            options["relative_gap"] = relative_gap
        start = time.perf_counter()
        # The cyclic collector's pending work is done first, inside the limit, and the
        # collector then waits until the re-plan has answered. Left to itself, a collection of
        # the last search's objects (a search pauses the collector, so they are all young:
        # 0.13-0.16 s over a Planner's caches) or a full one (0.15-0.24 s) fell right after the
        # search, when its pause ended, and put 2 s re-plans at 2.06-2.24 s wall; what is left
        # at the end is a young collection of this re-plan's own objects (0.01-0.02 s). Not
        # before a first solve (no plan yet, nothing to repair): its objects are not the
        # Planner's, and in a process with a large heap a full collection took the time a 1 s
        # first solve of 512 GPUs needed for its baseline seed (no plan came out).
        if self.plan is not None:
            _collect_what_is_due()
        with collector_paused():
            return self._solve(options, start)

    def _solve(self, options: dict[str, Any], start: float) -> Replanned:
        """`solve` with its options checked and merged, from `start` (time.perf_counter)."""
        # One deadline for the whole re-plan: each step below gets what the steps before it
        # left (each also within its own share), the search the rest less REPLAN_RESERVE_S
        # (what it and this method take past the search's own deadline).
        limit = float(options["time_limit_s"])  # type: ignore[arg-type]
        search_until = start + limit - min(REPLAN_RESERVE_S, REPLAN_RESERVE_SHARE * limit)
        in_place = self._incumbent()
        incumbent, source = self._fastest_repair(
            in_place, until=min(start + REPAIR_SHARE * limit, search_until))
        if incumbent is None:  # (the first solve, or no plan could be repaired)
            incumbent, source = self._baseline_seed(deadline=min(
                start + min(SEED_SHARE * limit, tuning.EARLY_SEED_MAX_S), search_until))
        if incumbent is not None:
            grown = grown_plan(self.state, *incumbent, deadline=min(
                time.perf_counter() + GROWTH_SHARE * limit, search_until))
            if grown is not None:
                incumbent, source = grown, f"{source}, grown onto idle GPUs"
        cutoff = incumbent[1].iteration_time_s if incumbent is not None else math.inf
        search_limit = max(search_until - time.perf_counter(), MIN_SEARCH_S)
        options["time_limit_s"] = search_limit
        # (Where an earlier solve as short could not set up the search over plans with a mixed
        # stage, it is left out and bounded as it was then: SKIP_UNFIT_MIXED)
        skip_mixed = SKIP_UNFIT_MIXED and self._mixed_setup is not None \
            and not self._mixed_setup[1] \
            and limit <= self._mixed_setup[0]
        result = solve(self.instance, state=self.state, seed_with_baselines=False,
                       cutoff_s=cutoff, warm_start=True, mixed_search=not skip_mixed,
                       **options)  # type: ignore[arg-type]
        result.options["time_limit_s"] = limit  # (the re-plan's limit; the search had the rest)
        phase = result.search_space.get("mixed_phase")
        if isinstance(phase, dict) and not phase.get("skipped"):
            self._mixed_setup = (limit, bool(phase.get("set_up", True)) and not
                                 result.search_space.get("micro_batch_sizes_not_set_up"))
        result = self._with_incumbent(result, incumbent, source,
                                      gap=float(options["relative_gap"]))  # type: ignore[arg-type]
        if self.migration_slack is not None:
            result = self._prefer_in_place(result, in_place)
        if result.plan is None:  # (no incumbent, and the time limit came before any plan)
            raise HaapError(f"{self.instance.name}: no plan found within the time limit "
                            f"({result.status}: {result.message})")
        moved = migration(self.plan, result.plan)
        out = Replanned(result=result, migration=moved, cache_reuse=self._reuse,
                        incumbent_s=None if incumbent is None else cutoff,
                        incumbent_from=source, solve_s=time.perf_counter() - start,
                        search_limit_s=search_limit, changes=tuple(self._changes))
        if self.plan is not None and self.plan != result.plan:
            self._earlier = [self.plan, *(q for q in self._earlier if q != self.plan)]
            del self._earlier[EARLIER_PLANS:]
        self.plan = result.plan
        self._changes = []
        self._reuse = CacheReuse(kept=0, total=0)
        self._remember_proof()
        return out

    def _remember_proof(self) -> None:
        """Keep what the searches on this instance proved (its state's sub-problem bounds and
        space floors) for a change that brings the same cluster back (PROOFS_KEPT)."""
        key, cost = _proof_key(self.state.instance), _cost_key(self.state)
        kept = [entry for entry in self._proofs if not (entry[0] == key and entry[1] == cost)]
        self._proofs = [(key, cost, dict(self.state.sub_bounds),
                         dict(self.state.space_floors)), *kept][:PROOFS_KEPT]

    def _recall_proof(self, reuse: CacheReuse) -> CacheReuse:
        """Where the new instance is one solved before (the same model, training set-up,
        cluster, devices, profile and cost constants; node groups in any order), raise the
        carried sub-problem bounds and space floors to what was proven on it then: bounds
        proven on an instance hold on that instance (formulations Sec. 8, *A cluster seen
        before*). `reuse` counted with them."""
        key, cost = _proof_key(self.state.instance), _cost_key(self.state)
        for seen, seen_cost, bounds, floors in self._proofs:
            if seen != key or seen_cost != cost:
                continue
            state = self.state
            state.raise_proven(bounds, floors)
            return dataclasses.replace(
                reuse, bounds_kept=len(state.sub_bounds),
                bounds_total=max(reuse.bounds_total, len(bounds)),
                bounds_note="" if bounds else reuse.bounds_note,
                floors_kept=len(state.space_floors))
        return reuse

    def _incumbent(self) -> tuple[Plan, Evaluation] | None:
        """The previous plan repaired to the current instance, with its evaluation."""
        if self.plan is None:
            return None
        return repaired_plan(self.state, self.plan, mixed=bool(self.options["mixed"]))

    def _fastest_repair(self, in_place: tuple[Plan, Evaluation] | None, *,
                        until: float = math.inf
                        ) -> tuple[tuple[Plan, Evaluation] | None, str]:
        """The fastest of the running plan's repair and the earlier plans' repairs, each with
        its layers re-balanced, and which it is. Ties go to the running plan (it moves no
        GPUs), then to the more recent plan. No earlier plan's repair starts after `until` (a
        time.perf_counter() value): the running plan's, always made, is the one most likely
        the cutoff, and the re-plan's time limit is the search's too."""
        best: tuple[Plan, Evaluation] | None = None
        source = ""
        mixed = bool(self.options["mixed"])
        for k, plan in enumerate([None, *self._earlier], start=1):
            if plan is None:
                name, got = "running", in_place
            elif time.perf_counter() >= until:
                break
            else:
                name, got = f"{k} solves back", repaired_plan(self.state, plan, mixed=mixed)
            if got is None:
                continue
            fixed = rebalanced(self.instance, *got, state=self.state)
            if best is None or fixed[1].iteration_time_s < best[1].iteration_time_s * (1 - _SAME):
                best, source = fixed, name
        return best, source

    def _baseline_seed(self, deadline: float) -> tuple[tuple[Plan, Evaluation] | None, str]:
        """Where no earlier plan could be repaired (the first solve): the best uniform
        Megatron-LM grid found by `deadline` (largest TP degree first, as the search's early
        seed) and the proportional layer split on its grid, where they lie in the search space
        (`repaired_plan` on the instance itself: it keeps a plan whose stages are
        configurations of the space and rejects one whose stages straddle node groups outside
        it), layers re-balanced; the faster, and which it is. The Planner's search runs
        without the baseline seeds (module docstring), and at 1,024 GPUs its set-up alone
        takes seconds: a 2 s first solve of fleet-1024 found no plan at all (2026-12-03).
        In the space, the seed only prunes, as a repaired plan does."""
        from haap_solver.baselines.proportional import on_grid
        from haap_solver.baselines.uniform import uniform

        budget = deadline - time.perf_counter()
        if budget <= 0:
            return None, ""
        cm = self.state.cost_model
        grid = uniform(self.instance, time_limit_s=budget, cost_model=cm,
                       largest_tp_first=True)
        plans = [("uniform grid", grid.plan)]
        if grid.plan is not None:
            split = on_grid(self.instance, grid.options["choice"], cost_model=cm,
                            time_limit_s=max(0.05, deadline - time.perf_counter()))
            plans.append(("proportional split", split.plan))
        best: tuple[Plan, Evaluation] | None = None
        source = ""
        for name, plan in plans:
            if plan is None:
                continue
            got = repaired_plan(self.state, plan, mixed=bool(self.options["mixed"]))
            if got is None:
                continue
            got = (dataclasses.replace(got[0], note=plan.note), got[1])  # (not repaired)
            fixed = rebalanced(self.instance, *got, state=self.state)
            if best is None or fixed[1].iteration_time_s < best[1].iteration_time_s * (1 - _SAME):
                best, source = fixed, f"baseline: {name}"
        return best, source

    def _with_incumbent(self, result: SolveResult, incumbent: tuple[Plan, Evaluation] | None,
                        source: str = "running", *, gap: float) -> SolveResult:
        """The search's result, or the incumbent where the search found nothing below it: then
        the search's bound (at least the cutoff where it closed every sub-problem) proves it."""
        if result.plan is not None or incumbent is None:
            return result
        plan, ev = incumbent
        t = ev.iteration_time_s
        bound = min(result.best_bound_s, t)
        proven = bound >= t * (1 - _SAME)
        base, _, grown = source.partition(", grown")
        which = ("the previous plan, repaired to the changed cluster" if base == "running" else
                 f"the {base.removeprefix('baseline: ')} baseline's plan"
                 if base.startswith("baseline: ") else
                 f"the plan from {base}, repaired to the changed cluster")
        if grown:
            which += ", its idle GPUs put to work"
        message = (f"{which}: no plan of the search space is faster" if proven else
                   f"{which}: no plan of the search space is faster by more than the relative "
                   f"gap ({gap:.2%})"
                   if bound >= t * (1 - gap) * (1 - _SAME) else
                   f"{which}: the time limit ended the search before it found a faster plan or "
                   "proved none exists")
        return dataclasses.replace(result, plan=plan, evaluation=ev,
                                   status="optimal" if proven else "feasible",
                                   iteration_time_s=t, best_bound_s=t if proven else bound,
                                   gap=0.0 if proven else (t - bound) / t, message=message)

    def _prefer_in_place(self, result: SolveResult,
                         incumbent: tuple[Plan, Evaluation] | None) -> SolveResult:
        """With migration_slack: the repaired previous plan instead of the search's where it is
        within the slack of the search's plan and moves fewer GPUs."""
        if incumbent is None or result.plan is None or self.plan is None:
            return result
        plan, ev = incumbent
        best = result.iteration_time_s
        slack = self.migration_slack or 0.0
        if ev.iteration_time_s > best * (1 + slack):
            return result
        if migration(self.plan, plan).moved_gpus >= migration(self.plan, result.plan).moved_gpus:
            return result
        t = ev.iteration_time_s
        bound = min(result.best_bound_s, t)
        note = (f"migration-aware: kept the running plan ({t:.6g} s), within "
                f"{slack:.2%} of the best plan found ({best:.6g} s), which "
                "moves more GPUs")
        return dataclasses.replace(result, plan=plan, evaluation=ev,
                                   status="optimal" if bound >= t * (1 - _SAME) else "feasible",
                                   iteration_time_s=t, best_bound_s=bound,
                                   gap=(t - bound) / t, message=note)


def _refuse_target(instance: Instance, *, field: str, source: str | None = None) -> None:
    """The Planner searches haap's general plan (target 'any'): an instance asking for an
    engine's plan (`training.target`) is refused on `field`, as its plans would fail that
    target's rules."""
    if instance.training.target != "any":
        raise InputError(f"the Planner searches haap's general plan (target 'any'), not what "
                         f"target {instance.training.target!r} runs; its plans would fail "
                         "that target's rules (use haap solve --target)", field=field,
                         source=source)


def _collect_what_is_due() -> None:
    """The collections the cyclic collector would soon make by itself (where it is on): the
    young generations always, the full one once its count is due (CPython makes it at the first
    collection past that count where the objects promoted to the oldest generation since the
    last full collection reach a quarter of those it kept; a full collection every
    `threshold[2]` re-plans is the price of knowing when it comes)."""
    if not gc.isenabled():
        return
    gc.collect(2 if gc.get_count()[2] >= gc.get_threshold()[2] else 1)


def _proof_key(instance: Instance) -> Instance:
    """The instance as far as the search's space and costs read it: no name, description,
    source or expected result, the node groups in name order (a group removed and added back
    comes last)."""
    cluster = instance.cluster
    groups = tuple(sorted(cluster.node_groups, key=lambda g: g.name))
    return dataclasses.replace(instance, name="", description="", source=None, expected=None,
                               cluster=dataclasses.replace(cluster, node_groups=groups))


def _cost_key(state: SearchState) -> tuple[Any, ...]:
    """What a state's cost model reads beyond its instance (as `carry._same_job`)."""
    cm = state.cost_model
    return (cm.constants, cm.profile, cm.embedding_held, cm.head_held)


def _load_cpsat() -> None:
    """OR-Tools loaded now, not inside a re-plan: the search loads it at its first CP-SAT model
    (0.3-0.5 s, more on a busy host), which no deadline can cut short; in a 2 s re-plan whose
    dive was the process's first CP-SAT model that came on top (spot-a100-v100, 09:30 event,
    2026-12-03: 2.44 s wall at a third of a core)."""
    with contextlib.suppress(ImportError):  # (the backend says so where it needs it)
        import ortools.sat.python.cp_model  # noqa: F401


def _still_there(base: Instance, s: Straggler) -> bool:
    """Whether the node (or group) a slowdown names is still in `base` after a change."""
    names = {g.name: g.num_nodes for g in base.cluster.node_groups}
    return s.node_group in names and (s.node is None or s.node < names[s.node_group])


def _node_moves(old_base: Instance, old_slow: dict[tuple[str, int | None], Straggler],
                new_base: Instance, new_slow: dict[tuple[str, int | None], Straggler]
                ) -> dict[tuple[str, int], tuple[str, int]]:
    """Where the nodes the planned instance had are in the new one: each node of `_base` keeps
    its identity, and the slowdowns before and after say which node group the search sees it
    in (a slowed node is a group of its own; back at full speed it rejoins its group)."""
    before = node_renames(old_base.cluster, list(old_slow.values()))
    after = node_renames(new_base.cluster, list(new_slow.values()))
    sizes = {g.name: g.num_nodes for g in new_base.cluster.node_groups}
    moves = {}
    for group, node in before.keys() | after.keys():
        if node >= sizes.get(group, 0):
            continue  # (a node the change took away: the repair drops what stood on it)
        was, now = before.get((group, node), (group, node)), after.get((group, node),
                                                                        (group, node))
        if was != now:
            moves[was] = now
    return moves
