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

import bisect
import contextlib
import gc
import heapq
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from haap_solver.cost.evaluate import CostModel, Evaluation
from haap_solver.cost.memory import GIB
from haap_solver.errors import HaapError, InfeasibleError
from haap_solver.instance import Instance
from haap_solver.plan import Plan
from haap_solver.search.backends import SolveOptions, get_backend
from haap_solver.search.bounds import CapacityBound, PositionalBound, first_true
from haap_solver.search.coefficients import CoefficientCache, StageCoefficients, pieces_max_rows
from haap_solver.search.formulation import SubProblem, build_model, build_slots
from haap_solver.search.heuristic import construct, seed_from_capacity, seed_from_sequence
from haap_solver.search.space import (
    StageConfig,
    build_plan,
    micro_batch_candidates,
    stage_configs,
    tp_candidates,
)
from haap_solver.training import check_searchable
from haap_solver.validate import check_plan, plan_violations

Progress = Callable[[int, int, str], None]


@dataclass
class SolveResult:
    """A plan with its proof: status, bound, gap and what the search did."""

    instance: str
    method: str
    plan: Plan | None
    evaluation: Evaluation | None
    status: str
    """optimal (proven within `gap`), feasible (time limit; `gap` says how far), infeasible."""
    iteration_time_s: float
    """evaluate()'s iteration time of `plan` (inf when infeasible)."""
    best_bound_s: float
    """Proven lower bound on the optimal iteration time over the search space."""
    gap: float
    """(iteration_time - bound) / iteration_time."""
    wall_s: float
    subproblems: int = 0
    solved: int = 0
    """Models handed to a solver backend (warm-start restricted models included)."""
    pruned_by_bound: int = 0
    pruned_by_memory: int = 0
    search_space: dict[str, Any] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)
    compute_bound_s: float = 0.0
    """Total FLOPs over the aggregate effective FLOP/s of the cluster (no bubble, no comm)."""
    options: dict[str, Any] = field(default_factory=dict)
    plans_costed: int = 0
    """Plans (or stage candidates) the method costed with the cost model."""
    model_mismatch_s: float = 0.0
    """Largest |model objective - evaluate()| seen (the scaling bound for CP-SAT; 0 for MILP)."""
    message: str = ""

    @property
    def ratio_to_compute_bound(self) -> float:
        return self.iteration_time_s / self.compute_bound_s if self.compute_bound_s else math.inf

    def to_dict(self) -> dict[str, Any]:
        return {
            "instance": self.instance, "method": self.method, "status": self.status,
            "iteration_time_s": self.iteration_time_s, "best_bound_s": self.best_bound_s,
            "gap": self.gap, "wall_s": self.wall_s, "subproblems": self.subproblems,
            "solved": self.solved, "pruned_by_bound": self.pruned_by_bound,
            "pruned_by_memory": self.pruned_by_memory, "search_space": self.search_space,
            "cache": self.cache, "compute_bound_s": self.compute_bound_s,
            "ratio_to_compute_bound": self.ratio_to_compute_bound, "options": self.options,
            "model_mismatch_s": self.model_mismatch_s, "message": self.message,
            "plans_costed": self.plans_costed,
            "tokens_per_s": self.evaluation.tokens_per_s if self.evaluation else None,
            "mfu": self.evaluation.mfu if self.evaluation else None,
            "plan": self.plan.to_dict() if self.plan else None,
        }


@dataclass
class _Candidate:
    sub: SubProblem
    lower_bound: float
    strengthened_with: float | None = None
    """The threshold the strong bound was computed against (None: not yet): the incumbent, less
    the gap the caller accepts (`relative_gap`). The bound's incumbent-dependent parts (Sec. 4.2,
    4.5) are redone once a clearly better plan is found."""

    def raise_bound(self, bound: float, threshold: float) -> None:
        """The lower bound raised to `bound`, a bound computed against `threshold` (it says no
        plan of the sub-problem lies below `threshold`, or that none lies below `bound`): so
        the sub-problem's optimum is at least the lesser of the two."""
        self.lower_bound = max(self.lower_bound, min(bound, threshold))

    def rank(self) -> tuple[float, int, int]:
        """Best bound first; ties to fewer stages, then to the smaller micro-batch."""
        return self.lower_bound, self.sub.num_stages, self.sub.micro_batch


class SearchState:
    """Reusable state of the search on one instance: cost model and coefficient cache.

    Pass the same state to several solves (another backend, another time limit) and nothing that
    does not depend on what changed is recomputed.
    """

    def __init__(self, instance: Instance, cost_model: CostModel | None = None, *,
                 mixed: bool = False):
        self.instance = instance
        self.cost_model = cost_model or CostModel(instance)
        self.cache = CoefficientCache(self.cost_model)
        self.mixed = mixed
        """Whether mixed-type stages are candidates (set by solve(); caches are keyed by it)."""
        self.stage_filter: Callable[[StageConfig], bool] | None = None
        """Keeps only the stage configurations it accepts (solve(stage_filter=); targets)."""
        self._set_up_until: tuple[float, Callable[[], bool] | None] | None = None
        self.mixed_dominance = True
        """Whether the mixed-type configurations go through the dominance filter. Without it
        the set-up takes about a third of the time and the bounds stay valid (the filter drops
        only configurations another one dominates): equal without an incumbent, and pruning
        the same sub-problems against one (above it the value returned is where the search
        stopped). The first process's bounding from the top, which solves no model and reports
        no counts, goes without (`_bound_mixed_from_the_top`)."""
        self._configs: dict[tuple[int, bool], list[StageConfig]] = {}
        self._mixed_space: dict[int, list[StageConfig]] = {}
        self.fitting: dict[int, int] = {}
        self.mixed_counts: dict[int, tuple[int, int, int]] = {}
        """Per micro-batch: mixed candidates generated, fitting memory, kept after dominance."""
        self._capacity: dict[tuple[int, int, bool], CapacityBound] = {}
        self._positional: dict[tuple[int, str, bool, bool], PositionalBound] = {}
        self.require_mixed = False
        """Bound and model only plans with a mixed-type stage: set by solve() for the search
        that follows the single-type one (whose bound covers the single-type plans)."""
        self._tails: dict[tuple[int, int, bool, int, bool], list[tuple[float, float]]] = {}
        self._pairs: dict[tuple[int, int, bool, bool],
                          tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._suffix: dict[tuple[int, tuple[bool, bool, bool], bool],
                           tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._micro_batches: list[int] | None = None
        self._stage_rates: dict[tuple[int, bool], np.ndarray] = {}
        self._smallest: dict[tuple[int, bool], int] = {}
        self._without_ends: dict[tuple[bool, bool], SearchState] = {}
        self._floors: dict[tuple[int, bool], tuple[float, float, float] | None] = {}
        self._end_floors: dict[tuple[int, bool], tuple[float, float]] = {}
        """`_end_minima` per (micro-batch, empty end is the first)."""

    def without_ends(self, embedding: bool, head: bool) -> SearchState:
        """The search state of the same instance on a cost model where no stage holds the
        embedding (`embedding`) or the head (`head`; CostModel(embedding_held=False,
        head_held=False)), with this state's flags: its bounds over the decoder stages of a
        sub-problem whose first (last) stage is empty bound that sub-problem (formulations
        Sec. 1.2). Built once each, when first needed."""
        key = (embedding, head)
        bare = self._without_ends.get(key)
        if bare is None:
            cm = self.cost_model
            bare = self._without_ends[key] = SearchState(
                self.instance, CostModel(self.instance, constants=cm.constants,
                                         profile=cm.profile, embedding_held=not embedding,
                                         head_held=not head))
        bare.mixed, bare.require_mixed = self.mixed, self.require_mixed
        bare.mixed_dominance = self.mixed_dominance
        return bare

    def floors(self, micro_batch: int) -> tuple[float, float, float] | None:
        """The load-balance floors of Sec. 4.1 at `micro_batch` (`_layer_rate_bounds`), None
        where no configuration holds a layer."""
        key = (micro_batch, self.mixed)
        if key not in self._floors:
            configs = self.configs(micro_batch)
            self._floors[key] = _layer_rate_bounds(self, micro_batch, configs) if configs \
                else None
        return self._floors[key]

    def end_configs(self, micro_batch: int) -> list[StageConfig]:
        """The single-type configurations an empty end stage may take (Sec. 1.2), through the
        restricted space's `stage_filter` where one is set."""
        return [c for c in stage_configs(self.instance, micro_batch)
                if self.stage_filter is None or self.stage_filter(c)]

    def end_stage_layers(self, sub: SubProblem) -> float:
        """The least the empty end stages of `sub` weigh in layers (Sec. 1.2): per empty end,
        the least over the configurations h that fit it of tau_h(0) / s(h), its time per
        micro-batch over its compute time per layer (`_end_work_bound`)."""
        return sum(self._end_minima(sub.micro_batch, first)[1] for first in _empty_ends(sub))

    def end_stage_floor(self, sub: SubProblem) -> float:
        """The least that the empty end stages of `sub` (Sec. 1.2) add to its objective: each
        adds its own time per micro-batch to the fill and drain of the pipeline, at least the
        least over the single-type configurations that fit it (with one micro-batch in flight,
        the fewest there can be); inf where none fits."""
        return sum(self._end_minima(sub.micro_batch, first)[0] for first in _empty_ends(sub))

    def _end_minima(self, micro_batch: int, first: bool) -> tuple[float, float]:
        """(least time per micro-batch, least weight in layers) over the configurations that fit
        an empty first (`first`) or last stage at `micro_batch` with one micro-batch in flight;
        (inf, inf) where none fits. Cached."""
        key = (micro_batch, first)
        hit = self._end_floors.get(key)
        if hit is None:
            b, last = micro_batch, not first
            mode = self.instance.training.recompute[0]
            least_time = least_layers = math.inf
            for c in self.end_configs(b):
                if c.recompute != mode or not self.cache.holds_end_only(
                        c, b, first, last, True, 1):
                    continue
                co = self.cache.coefficients(c, b, first, last, True)
                own = min(co.tau(0), co.fwd(0) + co.bwd(0))
                (part,) = self.cache.part_coefficients(c, b, False, False, True)
                least_time = min(least_time, own)
                least_layers = min(least_layers, own / _layer_slope(part))
            hit = self._end_floors[key] = (least_time, least_layers)
        return hit

    def capacity_bound(self, micro_batch: int, p_max: int) -> CapacityBound:
        key = (micro_batch, p_max, self.mixed)
        if key not in self._capacity:
            self._capacity[key] = CapacityBound(self.instance, self.cache, micro_batch,
                                                self.configs(micro_batch), p_max)
        return self._capacity[key]

    def positional_bound(self, micro_batch: int, schedule: str) -> PositionalBound:
        key = (micro_batch, schedule, self.mixed, self.require_mixed)
        if key not in self._positional:
            self._positional[key] = PositionalBound(self.instance, self.cache, micro_batch,
                                                    self.configs(micro_batch), schedule,
                                                    require_mixed=self.require_mixed)
        return self._positional[key]

    def granular_floor(self, sub: SubProblem, p_max: int) -> float:
        """The GPU-granular bottleneck floor of Sec. 4.3 (inf: no plan holds every layer).

        With require_mixed, only the least stage time any configuration can take: there the
        relaxation of mixed stages (free items that fill the GPUs the stages leave) makes the
        floor weak, and its dynamic program over thousands of mixed items cost more than it saved
        (the mixed phase of llama3-8b-h100-a100-l40s 2.4 s -> 2.1 s, of
        llama3-70b-h100x32-a100x32 1.2 s -> 0.9 s); the positional LP, which charges mixed
        stages their GPUs exactly and has the row (M), does that work."""
        capacity = self.capacity_bound(sub.micro_batch, p_max)
        if self.require_mixed:
            return capacity.t_values[0] if capacity.t_values else math.inf
        return capacity.bottleneck_floor(sub.num_stages)

    def bottleneck_floor(self, sub: SubProblem, p_max: int, stop: float = math.inf) -> float:
        """The larger of the GPU-granular (Sec. 4.3, `granular_floor`) and the positional
        (Sec. 4.4) bottleneck floors of a sub-problem: no plan of it has a stage time per
        micro-batch below this.

        With a finite `stop` (the largest bottleneck still worth finding) the positional search
        may end as soon as it proves the floor exceeds `stop`. With empty end stages (Sec. 1.2)
        the floor of the decoder stages (`without_ends`): the bottleneck is at least that."""
        if sub.empty_ends:
            return self.without_ends(sub.empty_first, sub.empty_last).bottleneck_floor(
                sub.decoder(), p_max, stop)
        capacity = self.capacity_bound(sub.micro_batch, p_max)
        floor = self.granular_floor(sub, p_max)
        if not math.isfinite(floor):
            return floor
        positional = self.positional_bound(sub.micro_batch, sub.schedule)
        return max(floor, positional.bottleneck_floor(sub.num_stages, capacity.t_values,
                                                      start=floor, stop=stop))

    def tail_staircase(self, micro_batch: int, num_stages: int) -> list[tuple[float, float]]:
        """(T_c, running min of R_c) over the configurations and roles that can hold
        ceil(L / p) layers and leave a GPU for each other stage, sorted by T_c
        (strong_lower_bound, Sec. 4.5)."""
        L = self.instance.model.num_layers
        layers = math.ceil(L / num_stages)
        smallest = self._smallest.get((micro_batch, self.mixed))
        if smallest is None:  # (a scan of thousands of configurations: once)
            smallest = min(c.gpus for c in self.configs(micro_batch))
            self._smallest[(micro_batch, self.mixed)] = smallest
        room = self.instance.cluster.num_gpus - (num_stages - 1) * smallest
        key = (micro_batch, layers, num_stages == 1, room, self.mixed)
        hit = self._tails.get(key)
        if hit is not None:
            return hit
        gpus, t_all, r_all = self._tail_pairs(micro_batch, layers, num_stages == 1)
        keep = gpus <= room
        order = np.lexsort((r_all[keep], t_all[keep]))  # by T_c, then R_c
        t_c, r_c = t_all[keep][order], r_all[keep][order]
        # The entries that lower the running minimum of R_c.
        before = np.minimum.accumulate(np.concatenate([[np.inf], r_c[:-1]]))
        lower = r_c < before
        out = list(zip(t_c[lower].tolist(), r_c[lower].tolist(), strict=True))
        self._tails[key] = out
        return out

    def _tail_pairs(self, micro_batch: int, layers: int,
                    only: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(GPUs, T_c, R_c) of every configuration and role that can hold `layers` layers (one
        micro-batch in flight), as three arrays: what tail_staircase filters by the GPUs left
        (cached: it does not depend on the stage count beyond `layers`)."""
        key = (micro_batch, layers, only, self.mixed)
        hit = self._pairs.get(key)
        if hit is not None:
            return hit
        roles = ((True, True, False),) if only else (
            (False, False, True), (True, False, True), (False, True, True))
        columns: list[list[np.ndarray]] = [[], [], []]
        for role in roles:
            gpus, tau_min, tail_min = self._suffix_minima(micro_batch, role)
            ok = np.isfinite(tau_min[:, layers - 1])
            for column, values in zip(columns, (gpus[ok], tau_min[ok, layers - 1],
                                                tail_min[ok, layers - 1]), strict=True):
                column.append(values)
        out = (np.concatenate(columns[0]), np.concatenate(columns[1]),
               np.concatenate(columns[2]))
        self._pairs[key] = out
        return out

    def _suffix_minima(self, micro_batch: int, role: tuple[bool, bool, bool]) -> tuple[
            np.ndarray, np.ndarray, np.ndarray]:
        """(GPUs, T, R) of every configuration in `role`, with T[c, n - 1] = min over n' in
        [n, top_c] of its stage time and R likewise of its tail, top_c = min(L, the layers it
        holds with one micro-batch in flight); inf for n > top_c. Both are maxima of affine
        pieces, evaluated exactly at every integer layer count."""
        key = (micro_batch, role, self.mixed)
        hit = self._suffix.get(key)
        if hit is not None:
            return hit
        L = self.instance.model.num_layers
        configs = self.configs(micro_batch)
        tau = np.full((len(configs), L), np.inf)
        tail = np.full((len(configs), L), np.inf)
        tops = [max(0, min(L, self.cache.max_layers(c, micro_batch, *role, 1)))
                for c in configs]
        fit = [k for k, top in enumerate(tops) if top >= 1]
        coeffs = [self.cache.coefficients(configs[k], micro_batch, *role) for k in fit]
        fit_tops = [tops[k] for k in fit]
        for table, pieces in ((tau, [co.tau_pieces for co in coeffs]),
                              (tail, [co.tail_pieces for co in coeffs])):
            table[fit] = pieces_max_rows(pieces, fit_tops, width=L, beyond=np.inf)
        # Suffix minima: reverse, running minimum, reverse.
        tau = np.minimum.accumulate(tau[:, ::-1], axis=1)[:, ::-1]
        tail = np.minimum.accumulate(tail[:, ::-1], axis=1)[:, ::-1]
        hit = (np.array([c.gpus for c in configs], dtype=int).reshape(len(configs)), tau, tail)
        self._suffix[key] = hit
        return hit

    def micro_batches(self) -> list[int]:
        if self._micro_batches is None:
            self._micro_batches = micro_batch_candidates(self.instance)
        return self._micro_batches

    def rate_by_stage_count(self, micro_batch: int) -> np.ndarray:
        """R[p] (p = 0..L): the most layers per second p stages can advance together (Sec. 4.1).

        A stage of configuration c advances n / tau <= 1 / s(c) layers per second (a mixed one:
        sum_j w_j / s_j over its parts), and the stages on node group g together at most
        G_g rho_g (`group_layer_rates`). So p stages advance at most the p largest of the
        marginal gains min(r_g, what is left of G_g rho_g), r_g the fastest single stage of g;
        a mixed stage counts at the fastest mixed stage's rate with no group cap. Never more
        than the cluster rate C. So a p-stage plan has T >= L / R[p]: a few stages cannot use
        every GPU, whatever their size."""
        key = (micro_batch, self.mixed)
        hit = self._stage_rates.get(key)
        if hit is not None:
            return hit
        L = self.instance.model.num_layers
        configs = self.configs(micro_batch)
        rho, _ = group_layer_rates(self, micro_batch, configs)
        fastest: dict[str | None, float] = {}
        for c in configs:
            rate = 0.0
            for part, co in zip(c.replica_parts(micro_batch), self.cache.part_coefficients(
                    c, micro_batch, False, False, True), strict=True):
                rate += (part.count * part.share / micro_batch) / _layer_slope(co)
            group = None if c.mixed else c.node_group
            fastest[group] = max(fastest.get(group, 0.0), rate)
        steps = np.arange(L, dtype=float)
        gains = [np.full(L, fastest[None])] if None in fastest else []
        for g in self.instance.cluster.node_groups:
            if g.name in fastest:
                room = g.num_gpus * rho.get(g.name, 0.0)
                gains.append(np.clip(room - fastest[g.name] * steps, 0.0, fastest[g.name]))
        capacity = _cluster_rate(self.instance, rho)
        ranked = -np.sort(-np.concatenate(gains)) if gains else np.zeros(L)
        hit = np.minimum(np.concatenate([[0.0], np.cumsum(ranked[:L])]), capacity)
        self._stage_rates[key] = hit
        return hit

    def configs(self, micro_batch: int) -> list[StageConfig]:
        """Configurations that can hold at least one layer somewhere (memory-aware pruning) and
        that no other one dominates; mixed-type ones too when `self.mixed`."""
        key = (micro_batch, self.mixed)
        hit = self._configs.get(key)
        if hit is None:
            single = self._fitting_single(micro_batch)
            other: list[str | tuple[str, ...]] = [g.name
                                                  for g in self.instance.cluster.node_groups]
            if self.mixed:
                generated = self.mixed_space(micro_batch)
                mixed = [c for c in generated if self._fits(c, micro_batch)]
                # Neighbours may be mixed: dominance must hold towards them too.
                other += sorted({c.groups for c in mixed})
                kept = (self._undominated(mixed, micro_batch, other) if self.mixed_dominance
                        else sorted(mixed, key=_config_order))
                hit = self._undominated(single, micro_batch, other) + kept
                self.mixed_counts[micro_batch] = (len(generated), len(mixed), len(kept))
            else:
                hit = self._undominated(single, micro_batch, other)
            self._configs[key] = hit
        return hit

    def _fits(self, c: StageConfig, micro_batch: int) -> bool:
        return (self.cache.max_layers(c, micro_batch, False, False, True, 1) >= 1
                or self.cache.max_layers(c, micro_batch, True, True, False, 1) >= 1)

    def _fitting_single(self, micro_batch: int) -> list[StageConfig]:
        fits = [c for c in stage_configs(self.instance, micro_batch)
                if (self.stage_filter is None or self.stage_filter(c))
                and self._fits(c, micro_batch)]
        self.fitting[micro_batch] = len(fits)
        return fits

    def prepare_mixed(self, deadline: float, stop: Callable[[], bool] | None = None) -> bool:
        """Build the configurations of the whole space (mixed-type ones included: generation,
        memory, dominance) for every micro-batch size in turn until `deadline` or `stop()`
        (checked before each); True when all are built. The set-up of the search over plans
        with a mixed stage (4-5 s at 1,024 and 16,384 GPUs), done apart so that the time limit
        can stop it."""
        was = self.mixed
        self.mixed = True
        self._set_up_until = (deadline, stop)
        try:
            for b in self.micro_batches():
                if time.perf_counter() >= deadline or (stop is not None and stop()):
                    return False
                self.configs(b)
            return True
        except _SetUpStopped:
            return False  # (inside a micro-batch size: nothing of it kept)
        finally:
            self.mixed = was
            self._set_up_until = None

    def _check_set_up(self) -> None:
        """Inside prepare_mixed: stop where its deadline has passed or `stop()` says so (one
        micro-batch size's configurations take up to 0.5 s at 16,384 GPUs, which a 5 s limit
        overran by as much)."""
        if self._set_up_until is not None:
            deadline, stop = self._set_up_until
            if time.perf_counter() >= deadline or (stop is not None and stop()):
                raise _SetUpStopped

    def mixed_space(self, micro_batch: int) -> list[StageConfig]:
        """The mixed stage configurations of the search space at `micro_batch` (before memory
        and dominance pruning; ``CoefficientCache.mixed_candidates``). Brute force enumerates
        exactly these."""
        hit = self._mixed_space.get(micro_batch)
        if hit is None:
            hit = [c for c in self.cache.mixed_candidates(micro_batch)
                   if self.stage_filter is None or self.stage_filter(c)]
            self._mixed_space[micro_batch] = hit
        return hit

    def _undominated(self, configs: list[StageConfig], micro_batch: int,
                     other: list[str | tuple[str, ...]]) -> list[StageConfig]:
        """Drop configurations another one dominates (ties: keep the first in a fixed order).
        Only configurations on the same node group(s) can dominate each other."""
        order = sorted(configs, key=_config_order)
        by_groups: dict[tuple[str, ...], list[StageConfig]] = {}
        for c in order:
            by_groups.setdefault(c.groups, []).append(c)
        out: list[StageConfig] = []
        for same in by_groups.values():
            may = self._may_dominate(same, micro_batch)
            kept: list[int] = []
            for j, c in enumerate(same):
                if j % 64 == 0:
                    self._check_set_up()
                if any(may[k, j] and self.cache.dominates(same[k], c, micro_batch, other)
                       for k in kept):
                    continue
                kept = [k for k in kept if not (
                    may[j, k] and self.cache.dominates(c, same[k], micro_batch, other))]
                kept.append(j)
            out.extend(same[k] for k in kept)
        return out

    def _may_dominate(self, configs: list[StageConfig], micro_batch: int) -> np.ndarray:
        """may[a, b]: necessary conditions for CoefficientCache.dominates(a, b), vectorised (no
        more GPUs in any node group; stage time no larger at 1 and L layers as a middle stage and
        as the only stage, the only stage's tail and forward time too; room for no fewer layers
        as a middle and as the only stage), so that the exact test runs on few pairs. The only
        stage is where most candidate pairs fail (llama3-8b-h100-a100-l40s: 5,756 of the 7,261
        pairs the middle-stage conditions let through, 296 of them dominated; at 16,384 GPUs its
        memory and forward time turned 8,600 of 11,600 exact tests down)."""
        L = self.instance.model.num_layers
        groups = configs[0].groups if configs else ()
        use = np.array([[c.gpus_in(g) for g in groups] for c in configs], dtype=float)
        feats = []
        for k, c in enumerate(configs):
            if k % 64 == 0:
                self._check_set_up()
            co = self.cache.coefficients(c, micro_batch, False, False, True)
            only = self.cache.coefficients(c, micro_batch, True, True, False)
            feats.append((co.tau(1), co.tau(L), only.tau(1), only.tau(L), only.tail(1),
                          only.tail(L), only.fwd(1), only.fwd(L),
                          -self.cache.max_layers(c, micro_batch, False, False, True, 1),
                          -self.cache.max_layers(c, micro_batch, True, True, False, 1)))
        f = np.array(feats, dtype=float).reshape(len(configs), 10)
        tol = np.abs(f) * 1e-12 + 1e-15
        may: np.ndarray = np.asarray((use[:, None, :] <= use[None, :, :]).all(axis=2))
        for k in range(f.shape[1]):
            may &= f[:, None, k] <= f[None, :, k] + tol[None, :, k]
        np.fill_diagonal(may, False)
        return may


def _config_order(c: StageConfig) -> tuple[Any, ...]:
    """The order of a micro-batch size's configurations (by node groups, then GPUs, TP,
    recomputation): the one the dominance filter keeps, and the one without it."""
    return (c.groups, c.gpus, c.tp, c.recompute, c)


class _SetUpStopped(Exception):
    """prepare_mixed's deadline or stop came inside one micro-batch size's set-up."""


def _layer_rate_bounds(state: SearchState, b: int,
                      configs: list[StageConfig]) -> tuple[float, float, float]:
    """(T floor, per-layer time floor, cluster rate C) of micro-batch b: the
    heterogeneity-aware load balance.

    Every stage i satisfies tau_i >= n_i * s(c_i), with s(c) the compute time of one layer under
    configuration c. With rho(c) = 1 / (s(c) gpus(c)) the layers one GPU of c advances per second,
    n_i / tau_i <= rho(c_i) gpus(c_i), and summing over stages sum_i n_i / tau_i <= C =
    sum_g G_g rho_max(g); with tau_i <= T, T >= L / C. (formulations/stage-assignment.md, Sec. 4)
    """
    rho, per_layer_min = group_layer_rates(state, b, configs)
    capacity = _cluster_rate(state.instance, rho)
    return state.instance.model.num_layers / capacity, per_layer_min, capacity


def _cluster_rate(instance: Instance, rho: dict[str, float]) -> float:
    """C = sum_g G_g rho_g: the layers per second the whole cluster advances at best (Sec. 4.1)."""
    return sum(g.num_gpus * rho.get(g.name, 0.0) for g in instance.cluster.node_groups)


def group_layer_rates(state: SearchState, b: int,
                      configs: list[StageConfig]) -> tuple[dict[str, float], float]:
    """(rho per node group, per-layer time floor): every stage of n layers and time tau has
    n <= tau sum_parts rho(group of part) gpus(part) and tau >= n x the floor (Sec. 4.1).

    A mixed stage (Sec. 1.1): part j does the fraction w_j = count_j share_j / b of the work and
    n s_j <= tau, so n = sum_j w_j n <= tau sum_j rho_j gpus_j with rho_j = w_j / (s_j gpus_j):
    each part counts in its own group at that rate. Its stage time is at least n max_j s_j."""
    rho: dict[str, float] = {}
    per_layer_min = math.inf
    for c in configs:
        slowest = 0.0
        for part, co in zip(c.replica_parts(b),
                            state.cache.part_coefficients(c, b, False, False, True), strict=True):
            slope = _layer_slope(co)
            slowest = max(slowest, slope)
            work = part.count * part.share / b
            rho[part.node_group] = max(rho.get(part.node_group, 0.0),
                                       work / (slope * part.gpus))
        per_layer_min = min(per_layer_min, slowest)
    return rho, per_layer_min


def _layer_slope(co: StageCoefficients) -> float:
    """Compute time of one more layer (forward plus backward, least slopes) of a replica group,
    the s(c) of Sec. 4.1."""
    slope = min(p.slope for p in co.fwd_pieces) + min(p.slope for p in co.bwd_pieces)
    return max(slope, 1e-30)


def _cheap_bottleneck(state: SearchState, sub: SubProblem,
                      floors: tuple[float, float, float]) -> float:
    """Sec. 4.1: the load balance, the per-layer floor of the most loaded stage, and the rate
    p stages can reach (SearchState.rate_by_stage_count)."""
    t_floor, layer_floor, _ = floors
    L, p = state.instance.model.num_layers, sub.num_stages
    rate = state.rate_by_stage_count(sub.micro_batch)[min(p, L)]
    return max(t_floor, math.ceil(L / p) * layer_floor, L / rate if rate > 0 else math.inf)


def lower_bound(state: SearchState, sub: SubProblem, floors: tuple[float, float, float]) -> float:
    """A valid lower bound on any plan of the sub-problem (Sec. 4.1): the bottleneck floor of the
    load balance and the fill and drain of the pipeline (`bottleneck_costs`). With empty end
    stages (Sec. 1.2): that of its decoder stages alone, plus what the empty ones add."""
    if sub.empty_ends:
        return max(lower_bound(state, sub.decoder(), floors) + state.end_stage_floor(sub),
                   _end_work_bound(state, sub, floors))
    bottleneck = _cheap_bottleneck(state, sub, floors)
    if not math.isfinite(bottleneck):
        return math.inf
    return bottleneck_costs(state, sub, floors, bottleneck).least()


def _fill_floor(state: SearchState, sub: SubProblem, floors: tuple[float, float, float]) -> float:
    """Lower bound on the sum of stage times (the fill and drain of the pipeline), Sec. 4.1.

    The stages obey sum_i n_i / tau_i <= C (the cluster rate, _layer_rate_bounds), so by
    Cauchy-Schwarz (sum_i sqrt(n_i))^2 <= C sum_i tau_i, and over n_i >= 1 with sum n_i = L the
    least left side is at (sqrt(L - p + 1) + p - 1)^2."""
    _, layer_floor, rate = floors
    L, p = state.instance.model.num_layers, sub.num_stages
    return max(L * layer_floor, (math.sqrt(L - p + 1) + p - 1) ** 2 / rate)


FLUID_GRID = (1.02, 48)
"""Bottleneck grid of `bottleneck_costs`: ratio between neighbours and number of steps above the
floor (up to 2.6x the floor; above, only the fill without a bottleneck cap counts). With the 32
multipliers below, the cheap bounds of all 1,920 sub-problems of gpt3-175b-4types-x1024 take
0.18 s and the least is 10.70 s; (1.03, 32) with 16 multipliers: 0.15 s, 10.60 s."""

_FLUID_MULTIPLIERS = np.concatenate([[0.0], np.geomspace(1e-3, 1e3, 31)])
"""Lagrange multipliers tried by `fluid_fill`, in units of T^2 p / L (any one gives a valid
bound)."""


def fluid_fill(layers: int, stages: int, layer_floor: float, rate: float,
               caps: np.ndarray) -> np.ndarray:
    """Lower bounds on the sum of stage times of a `stages`-stage plan whose bottleneck is at
    most each of `caps` (same shape; inf where no such plan exists), Sec. 4.1.

    The fluid relaxation: stage i has n_i >= 1 layers and time tau_i with n_i s <= tau_i <= T
    (s = layer_floor) and sum_i n_i / tau_i <= C (= rate). For a multiplier mu >= 0,
    min sum_i [tau_i + mu n_i / tau_i] - mu C is a lower bound (weak duality); the inner
    minimum over tau_i is psi(n_i) = t + mu n_i / t at t = clip(sqrt(mu n_i), n_i s, T), concave
    in n_i, so over {1 <= n_i <= N = floor(T / s), sum n_i = L} it is least at a vertex. All
    vertices are one split up to order: k stages with N layers, one with the rest, the others
    with one, k = min(floor((L - p) / (N - 1)), p - 1). The best multiplier of a grid is taken.
    Unlike the Cauchy-Schwarz fill, it sees that no stage may exceed the bottleneck, which rules
    out the one-long-stage pipelines that bound assumes."""
    L, p, s = layers, stages, layer_floor
    t = np.asarray(caps, dtype=float).reshape(-1, 1)
    finite = np.where(np.isfinite(t), t, 0.0)
    mu = _FLUID_MULTIPLIERS[None, :] * finite * finite * p / L
    most = np.minimum(L - p + 1, np.floor(t / s * (1 + 1e-12)))
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.where(most > 1, np.minimum(np.floor((L - p) / np.maximum(most - 1, 1)), p - 1),
                     0.0)
    rest = L - k * most - (p - 1 - k)
    feasible = (most >= 1) & (k <= p - 1) & (rest >= 1) & (rest <= most)

    def psi(n: np.ndarray) -> np.ndarray:
        tau = np.clip(np.sqrt(mu * n), n * s, np.maximum(t, n * s))
        return tau + mu * n / tau

    with np.errstate(invalid="ignore"):
        total = (k * psi(most) + (p - 1 - k) * psi(np.ones_like(most))
                 + psi(np.clip(rest, 1, None)) - mu * rate)
    return np.where(feasible[:, 0], total.max(axis=1), np.inf).reshape(np.shape(caps))


class BottleneckCosts:
    """Lower bounds on max(sum_i tau_i, T) + (m - 1) T over the plans whose bottleneck T lies in
    [t_k, t_{k+1}) (the last interval unbounded): max(fill(t_{k+1}), t_k) + (m - 1) t_k, with
    fill(t) the better of the fluid and Cauchy-Schwarz fills (neither grows with t)."""

    def __init__(self, grid: np.ndarray, fills: np.ndarray, m: int):
        self.grid, self.fills, self.m = grid, fills, m

    def at_least(self, t: float) -> float:
        """The bound over the plans whose bottleneck is at least t (>= the grid's first point)."""
        ends = np.append(self.grid[1:], np.inf)
        keep = ends > t
        lo = np.maximum(self.grid[keep], t)
        return float((np.maximum(self.fills[keep], lo) + (self.m - 1) * lo).min())

    def least(self) -> float:
        return float(self._interval_bounds().min())

    def cap_below(self, stop: float) -> float:
        """A bottleneck no plan costing less than `stop` exceeds: the upper end of the last
        interval whose bound is below `stop` (inf if the unbounded one is)."""
        below = self._interval_bounds() < stop
        if below[-1]:
            return math.inf
        if not below.any():
            return float(self.grid[0])  # no plan costs less than stop at all
        return float(self.grid[1:][np.nonzero(below[:-1])[0].max()])

    def _interval_bounds(self) -> np.ndarray:
        return np.maximum(self.fills, self.grid) + (self.m - 1) * self.grid


def bottleneck_costs(state: SearchState, sub: SubProblem, floors: tuple[float, float, float],
                     t_low: float) -> BottleneckCosts:
    """Sec. 4.1 for a sub-problem whose bottleneck is at least t_low: the fill and drain of the
    pipeline (fluid_fill on a grid of bottlenecks, and the Cauchy-Schwarz fill) with the
    bottleneck's (m - 1) T."""
    _, layer_floor, rate = floors
    L, p = state.instance.model.num_layers, sub.num_stages
    ratio, steps = FLUID_GRID
    grid = t_low * ratio ** np.arange(steps + 1)
    plain = _fill_floor(state, sub, floors)
    ends = np.append(grid[1:], np.inf)
    fills = np.maximum(fluid_fill(L, p, layer_floor, rate, ends), plain)
    return BottleneckCosts(grid, fills, sub.num_micro_batches(state.instance))


def granular_lower_bound(state: SearchState, sub: SubProblem,
                         floors: tuple[float, float, float], p_max: int) -> float:
    """The first step of strong_lower_bound, no LP: `lower_bound` at the GPU-granular
    bottleneck floor (Sec. 4.3) with the tail staircase (Sec. 4.5); inf where no plan of the
    sub-problem holds every layer. It ranks the warm start on large clusters (WARM_RANK_POOL)."""
    if sub.empty_ends:
        return _empty_ends_bound(state, sub, p_max, math.inf, strong=False)
    return _granular_step(state, sub, floors, p_max)[1]


def _empty_ends_bound(state: SearchState, sub: SubProblem, p_max: int, incumbent_s: float, *,
                      strong: bool, integer: bool = False) -> float:
    """The bound of a sub-problem with empty end stages (formulations Sec. 1.2): the strong
    (or granular) bound of its decoder stages alone on the cost model without embedding and
    head, plus the least the empty stages add (`SearchState.end_stage_floor`). Valid: dropping
    the empty stages, the embedding and the head, and micro-batches in flight only lowers every
    stage time, fill, bottleneck, link and tail, and widens what fits."""
    extra = state.end_stage_floor(sub)
    real_floors = state.floors(sub.micro_batch)
    if not math.isfinite(extra) or real_floors is None:
        return math.inf
    work = _end_work_bound(state, sub, real_floors)
    bare = state.without_ends(sub.empty_first, sub.empty_last)
    floors = bare.floors(sub.micro_batch)
    if floors is None:
        return math.inf
    decoder = sub.decoder()
    if strong:
        return max(work, extra + strong_lower_bound(bare, decoder, floors, p_max,
                                                    incumbent_s - extra, integer=integer))
    return max(work, extra + granular_lower_bound(bare, decoder, floors, p_max))


def _end_work_bound(state: SearchState, sub: SubProblem,
                    floors: tuple[float, float, float]) -> float:
    """The load balance of Sec. 4.1 with the empty end stages' work (Sec. 1.2): an empty stage
    of configuration h takes tau_h(0) per micro-batch, which is r_h = tau_h(0) / s(h) layers'
    worth of its per-layer time s(h), so r_h <= T rho(h) gpus(h) like any stage's n_i, and
    summing over all stages L + sum of the r's <= T C: the bottleneck T is at least
    (L + r) / C with r the least r_h of each empty end. The objective is at least the fill and
    drain of the decoder stages plus the empty stages' own time, and (m - 1) T."""
    layers = state.instance.model.num_layers
    _, _, rate = floors
    r = state.end_stage_layers(sub)
    if not math.isfinite(r) or rate <= 0:
        return math.inf
    t_full = (layers + r) / rate
    m = sub.num_micro_batches(state.instance)
    fill = _fill_floor(state, sub.decoder(), floors) + state.end_stage_floor(sub)
    return max(fill, t_full) + (m - 1) * t_full


def _granular_step(state: SearchState, sub: SubProblem, floors: tuple[float, float, float],
                   p_max: int) -> tuple[float, float, float]:
    """(GPU-granular floor, the bound at it, its bottleneck floor) of granular_lower_bound;
    all inf where no plan of the sub-problem holds every layer."""
    granular = state.granular_floor(sub, p_max)
    if not math.isfinite(granular):
        return math.inf, math.inf, math.inf
    return (granular, *_floor_and_tail(state, sub, floors, max(floors[0], granular)))


def strong_lower_bound(state: SearchState, sub: SubProblem, floors: tuple[float, float, float],
                       p_max: int, incumbent_s: float = math.inf, *,
                       integer: bool = False) -> float:
    """`lower_bound` with the bottleneck floors of Sec. 4.3 and 4.4 and the tail of the most
    loaded stage (Sec. 4.5).

    Some stage holds at least nbar = ceil(L / p) layers. If it uses configuration c in role r, the
    bottleneck is at least T_c = min_{n >= nbar} tau_c(n) and the tail at least
    R_c = min_{n >= nbar} tail_c(n) (n up to what memory allows). So the objective is at least
    min over c of  max(fill, T) + (m - 1) T + R_c  with T = max(T_LB, T_c): with the pairs sorted
    by T_c, a running minimum of R_c gives it exactly.

    With an incumbent the bottleneck search stops once it proves that no plan of the
    sub-problem can beat it (Sec. 4.2); the value returned is then still a valid bound. With
    `integer` the walk of Sec. 4.5 asks the capacity question with integer stage counts
    (PositionalBound.holds_all_layers_integer), wherever it is within TAIL_LP_WITHIN.

    With empty end stages (Sec. 1.2): `_empty_ends_bound`.
    """
    if sub.empty_ends:
        return _empty_ends_bound(state, sub, p_max, incumbent_s, strong=True, integer=integer)
    t_floor = floors[0]
    # The GPU-granular floor and the tail alone, no LP: enough to prune about half the
    # sub-problems that reach this point in our measurements.
    granular, bound, bottleneck = _granular_step(state, sub, floors, p_max)
    if not math.isfinite(granular):
        return math.inf
    if bound >= incumbent_s:
        return bound
    stop = _stage_time_cap(state, sub, floors, incumbent_s)
    t_cap = state.bottleneck_floor(sub, p_max, stop=stop)  # >= granular (Sec. 4.3 and 4.4)
    if not math.isfinite(t_cap):
        return math.inf
    if t_cap > granular:  # the positional floor raised it: the same with that floor
        bound, bottleneck = _floor_and_tail(state, sub, floors, max(t_floor, t_cap))
    # The positional LP with a tail threshold (Sec. 4.5) raised bounds by up to ~10% in our
    # measurements and costs up to half a second on 16k GPUs: only where it may prune.
    if TAIL_LP_WITHIN * incumbent_s <= bound < incumbent_s:
        p = sub.num_stages
        m = sub.num_micro_batches(state.instance)
        fill = _fill_floor(state, sub, floors)
        positional = state.positional_bound(sub.micro_batch, sub.schedule)
        t_values = state.capacity_bound(sub.micro_batch, p_max).t_values

        def plain_cost(t_lo: float, t_hi: float) -> float:
            # Sec. 4.6: the stages' and links' sum with bottleneck <= t_hi is at least S(t_hi);
            # it is also at least the fill (stages alone) and t_lo (the bottleneck is a term).
            stages = positional.stage_sum_floor(p, t_values[-1] if math.isinf(t_hi) else t_hi)
            return max(fill, t_lo, stages) + (m - 1) * t_lo

        def cost_of_interval(t_lo: float, t_hi: float) -> float:
            return refined_interval_cost(plain_cost, t_values, t_lo, t_hi, REFINE_SPLITS,
                                         incumbent_s)

        bound = max(bound, positional.objective_floor(p, cost_of_interval, t_values, bottleneck,
                                                      stop=incumbent_s, integer=integer))
    return bound


def refined_interval_cost(cost: Callable[[float, float], float], t_values: list[float],
                          t_lo: float, t_hi: float, splits: int, limit: float) -> float:
    """A lower bound on the cost of every plan whose bottleneck lies in [t_lo, t_hi], at least
    `cost(t_lo, t_hi)` (Sec. 4.5): the interval of candidate bottlenecks (`t_values`) is split,
    the piece with the least bound first, `splits` times at most or until that least bound
    reaches `limit`, and the least piece bound is returned. `cost(a, b)` pairs the bottleneck's
    least value a with the stage sum S at its largest b; where S falls steeply with T (few
    micro-batches: llama3-405b-6types-x16384, m = 8) one wide interval loses most of the bound."""
    plain = cost(t_lo, t_hi)
    if math.isinf(t_hi) or splits <= 0:
        return plain
    lo = bisect.bisect_left(t_values, t_lo * (1 - 1e-12))
    hi = bisect.bisect_right(t_values, t_hi * (1 + 1e-12)) - 1
    if hi <= lo:
        return plain
    # Every plan's bottleneck is one of t_values, so pieces of consecutive indices cover them.
    pieces = [(cost(t_values[lo], t_values[hi]), lo, hi)]
    for _ in range(splits):
        value, a, b = pieces[0]
        if a == b or value >= limit:
            break
        heapq.heappop(pieces)
        mid = (a + b) // 2
        heapq.heappush(pieces, (cost(t_values[a], t_values[mid]), a, mid))
        heapq.heappush(pieces, (cost(t_values[mid + 1], t_values[b]), mid + 1, b))
    return max(plain, pieces[0][0])


def _floor_and_tail(state: SearchState, sub: SubProblem, floors: tuple[float, float, float],
                    t_low: float) -> tuple[float, float]:
    """(bound, bottleneck floor) of a sub-problem whose bottleneck is known to be >= t_low:
    `lower_bound` at that floor, and the tail staircase of strong_lower_bound (Sec. 4.5)."""
    p = sub.num_stages
    bottleneck = max(t_low, _cheap_bottleneck(state, sub, floors))
    if not math.isfinite(bottleneck):
        return math.inf, bottleneck
    costs = bottleneck_costs(state, sub, floors, bottleneck)
    best = math.inf
    for t_c, r_min in state.tail_staircase(sub.micro_batch, p):
        cost = costs.at_least(max(bottleneck, t_c))
        best = min(best, cost + r_min)
        if cost >= best:
            break  # later entries have larger T_c
    return max(costs.least(), best), bottleneck


def _stage_time_cap(state: SearchState, sub: SubProblem, floors: tuple[float, float, float],
                    incumbent_s: float) -> float:
    """Sec. 4.2: a plan better than the incumbent U has (m - 1) T + fill <= objective < U and
    m T <= objective < U, so no stage time per micro-batch above this; with the fluid fill of
    Sec. 4.1, bottleneck interval by interval (BottleneckCosts.cap_below), often less. With
    empty end stages (Sec. 1.2) the cap of the stages that hold layers: the same argument on
    the decoder stages alone, whose fill, bottleneck and links are part of the objective."""
    if not math.isfinite(incumbent_s):
        return math.inf
    if sub.empty_ends:
        return _stage_time_cap(state, sub.decoder(), floors, incumbent_s)
    m = sub.num_micro_batches(state.instance)
    cap = incumbent_s / m
    if m > 1:
        cap = min(cap, (incumbent_s - _fill_floor(state, sub, floors)) / (m - 1))
    bottleneck = _cheap_bottleneck(state, sub, floors)
    if math.isfinite(bottleneck):  # the same with the fluid fill (Sec. 4.1), interval by interval
        cap = min(cap, bottleneck_costs(state, sub, floors, bottleneck).cap_below(incumbent_s))
    return cap


def compute_bound(state: SearchState,
                  floors_by_b: dict[int, tuple[float, float, float]] | None = None) -> float:
    """Total FLOPs over the cluster's aggregate effective FLOP/s: perfect balance, no bubble.

    `floors_by_b` reuses the load-balance floors a search already computed per micro-batch."""
    if floors_by_b is None:
        floors_by_b = {b: floors for b in state.micro_batches()
                       if (floors := state.floors(b)) is not None}
    big = state.instance.training.global_batch_size
    return min((floors[0] * (big // b) for b, floors in floors_by_b.items()), default=math.inf)


def peak_layer_rates(state: SearchState) -> dict[str, float]:
    """rho*_g per node group: the most sequence-layers per second one of its GPUs can advance in
    any stage of the space, single-type or mixed (any_plan_floor). A replica of TP degree t with
    s sequences of the micro-batch takes at least its per-layer forward + backward time (TP
    communication included) per layer and micro-batch, and a stage's time is at least every one
    of its replicas' (a mixed stage's is its slowest part's), so rho*_g is the best
    s / (t x that time) over the group's TP degrees, shares s in [1, max_micro_batch_size] and
    recomputation modes."""
    inst, cm = state.instance, state.cost_model
    rates = {}
    for g in inst.cluster.node_groups:
        best = 0.0
        for tp in tp_candidates(inst, g):
            for share in range(1, inst.training.max_micro_batch_size + 1):
                for recompute in inst.training.recompute:
                    lc = cm.layer_cost(g.device, tp, share, recompute)
                    per_layer = lc.fwd_s + lc.bwd_s + lc.tp_fwd_s + lc.tp_bwd_s
                    best = max(best, share / (tp * per_layer))
        rates[g.name] = best
    return rates


def any_plan_floor(state: SearchState) -> float:
    """A lower bound on the iteration time of every plan of the space, mixed-type stages
    included, that needs no stage configuration built (Sec. 4.1 without the configurations):
    every plan pushes L x B sequence-layers through the cluster, whose GPUs advance at most
    rho*_g each (peak_layer_rates), so T >= L B / sum_g G_g rho*_g."""
    inst = state.instance
    rates = peak_layer_rates(state)
    rate = sum(g.num_gpus * rates[g.name] for g in inst.cluster.node_groups)
    if rate <= 0:
        return 0.0
    return inst.model.num_layers * inst.training.global_batch_size / rate


REFINE_SPLITS = 8
"""Splits of each bottleneck interval of the walk of Sec. 4.5 (refined_interval_cost). At
16,384 GPUs (8 micro-batches) the least strong bound went from 13.63 s to 14.24 s (a 30 s run's
gap from 5.7% to 1.5%); at 1,024 GPUs (128 micro-batches) it changed nothing and cost 9% more
strengthening time."""

TAIL_LP_WITHIN = 0.8
"""strong_lower_bound runs the tail-threshold LP walk only for sub-problems whose cheaper bound is
within this factor of the incumbent (a speed heuristic; every bound stays valid)."""

WARM_START_SUBPROBLEMS = (16, 48)
"""Sub-problems (per schedule) the warm start tries: on clusters of up to WARM_START_LARGE_GPUS
GPUs, and above. On the smaller ones, the best of each micro-batch size by the cheap bound first,
then the rest in its order: the cheap bound favours small micro-batches (their bubble is small)
and ranked the sub-problem of llama3-8b-h100-a100-l40s's optimum (4 stages, micro-batch 8) 22nd,
past the 16 taken, so that only a dive found the optimum (1.2-1.4 s into a one-thread
single-type search; 0.5 s with the sizes' leads first, WARM_CONFIGS_PER_GROUP = 3). Where a
strong bound costs milliseconds, the dives of the first pass find the incumbent sooner than
more warm-start models do (gpt3-2.7b-a100-40gx8-v100x8: 2.4 s -> 1.6 s in all); on large
clusters every bound costs 0.1-1 s, and the better incumbent of more sub-problems pays
(llama3-405b-6types-x16384 at 30 s: 15.65 s with 16, 14.83 s with 32, then with restricted
models). There the warm start now runs seeds only (about 0.1 s a sub-problem, no model: their
models are too large), so it affords 48."""

WARM_START_LARGE_GPUS = 256

WARM_CONFIGS_PER_GROUP = 3
"""Configurations per node group in the warm start's restricted models: the best by
`_ranked_per_group`. With two, the restricted models of llama3-70b-h100x32-a100x32 could not
hold its optimum (three H100 configurations), which only a dive's full model found, 1.0 s into a
one-thread single-type search; with three the warm start finds it at 0.4 s. Four cost more than
they found (llama3-8b-h100-a100-l40s: the optimum at 1.7-1.9 s against 0.5 s)."""

WARM_RANK_POOL = 200
"""On clusters above WARM_START_LARGE_GPUS the warm start takes its sub-problems by
`granular_lower_bound` (no LP, milliseconds) among this many best by the cheap bound, ranked
within half of its time: the cheap bound ranks the sub-problem of gpt3-175b-4types-x1024's best
plan, (27, 12), 156th of 1,920, the granular one 34th. Its seed then comes at 6 s instead of
12-22 s, and a 30 s two-thread run ends at a 0.99% gap instead of 5-13% (two runs each)."""

DIVE_FIRST = 4
DIVE_EVERY = 32
"""In the first pass, after DIVE_FIRST strengthenings without a model, then after every
DIVE_EVERY, the sub-problem with the least strong bound so far is dived into for an early
incumbent (`DIVE_FULL_MAX_VARS`). With two processes the sooner the first search's optimum, the
sooner the second can use it (formulations Sec. 4.6)."""

FIRST_PASS_BUDGET_S = 0.5
"""The time budget of a sub-problem's model in the first pass (Sec. 4.6 Passes)."""

MIXED_DIVES_MAX_GPUS = 256
"""The search over plans with a mixed stage makes no dives on clusters above this many GPUs (the
same line as WARM_START_LARGE_GPUS): there its full models are too large for a dive, so a dive
only runs the warm-start seeds of the least strong bound, which never gave the plan in our runs
(at 1,024 and 16,384 GPUs every plan found is single-type, found by the first search) and took
about 1 s of the second process's 16 s at 1,024 GPUs. Without them, two threads with --gap 0.01
went from 18.1-18.4 s to 17.4-17.5 s there, and without a gap target llama3-405b-6types-x16384
from 18.7 s to 13.7 s (the same plan and gap: the second process answers sooner)."""

DIVE_BUDGET_S = 2.0
"""The time budget of a dive's full model in the single-type search (Sec. 4.6 Passes): the dived
sub-problem is where the optimum tends to be, and a model cut off at FIRST_PASS_BUDGET_S is
solved again from scratch in the next pass (llama3-8b-h100-a100-l40s: 0.5 s, then 0.6 s more,
against one model of 0.74 s). The search over plans with a mixed stage keeps the first pass's
budget: its dived models rarely hold a better plan."""

DIVE_FULL_MAX_VARS = 2000
"""A dive solves the sub-problem's full model (its first-pass model, 0.5 s) where that model has
at most this many variables and goes to HiGHS or CP-SAT under `auto`; elsewhere it runs the
warm-start step (restricted model, the sub-problem stays queued). On the 500-variable models of
llama3-70b-h100x32-a100x32 the full model finds the optimum where the restricted one (two
configurations per node group) cannot: the optimum uses three H100 configurations. At 1,024
GPUs and above the full models have 3,600 variables or more and HiGHS finds no plan in 0.5 s;
with `cpsat` alone a full-model dive found poor plans (Sec. 4.6).

Nor is a model this large solved anywhere else: the seed and the strong bound of the integer
capacity program (Sec. 4.4-4.6) stand in for it, and the sub-problem stays open with its bound
where they do not close it. On gpt3-175b-4types-x1024 and llama3-405b-6types-x16384 these models
never found a plan (0.5 s each: 25 of them took 12 s of a 30 s run; 60 s on one found none
either), and HiGHS's root heuristics on them do not look at the clock: a 5,600-variable model
given 2 s returned after 6.3 s, an 18,002-variable one (plans with a mixed stage) given 38 s
after 147 s, so that a 120 s run with two threads lost its second process's answer. No model of
the instances up to 64 GPUs is that large."""

SEED_AFTER_SHARE = 0.5
"""The Metis-style seed costs seconds on 64 GPUs, more than the exact passes need where they close
quickly: it runs only once this share of the time limit has passed without a proof, and only if
the search's own incumbent does not already beat the uniform-grid seed (or that seed found no
plan). Where it does, Metis has not been seen to help: on gpt3-175b-4types-x1024 (30 s) the
search had 15.119 s when Metis ran and Metis returned 15.266 s after 7.5 s; on
llama3-405b-6types-x16384 the search ends at 14.7 s and Metis at 17.3 s.

On clusters above WARM_START_LARGE_GPUS the uniform-grid seed waits for this share too (elsewhere
it runs right after the warm start): there it enumerates grids of thousands of GPUs (1.8 s at
1,024 GPUs) and its plan was never the incumbent, the warm start's seeds being better by then
(gpt3-175b-4types-x1024: 14.537 s at 5.8 s)."""

MIXED_SINGLE_SHARE = 0.75
"""With mixed-type stages, the share of the time limit the single-type space may take first. It
only binds where that search is not proven sooner: on large clusters, where a mixed stage (one
node per part at most) is least likely to pay and the single-type plan improves until late
(llama3-405b-6types-x16384: 17.21 s at 15 s, 14.83 s at 22.5 s)."""

MIXED_FOLLOW_UP_SHARE = 0.25
"""With mixed-type stages, the share of the time limit the single-type search may spend after its
first pass (the passes that solve what stayed open with budgets of 2 s, 15 s, ...); it also
yields at the first of those models that neither closes its sub-problem nor improves the plan,
and resumes after the search over plans with a mixed stage. Where those models close, they do so
in a second or two (llama3-8b-h100-a100-l40s); where they do not (gpt3-175b-4types-x1024: 24
sub-problems HiGHS does not close in minutes; llama3-405b-6types-x16384, whose plans with a
mixed stage take 6.5-7 s of the 7.5 s left at a 30 s limit), the time goes to bounding the
plans with a mixed stage, without which the whole space has no useful bound."""

DEFAULT_BACKEND = "auto"
"""CP-SAT for small models, HiGHS for large ones (backends.AUTO_CPSAT_MAX_VARS): each closes its
kind faster in our measurements (docs/benchmarks.md)."""


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
    check_searchable(instance.training)
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


PAUSE_COLLECTOR = True
"""`solve` (and its second process) runs with Python's cyclic garbage collector off
(`collector_paused`)."""


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
    if not PAUSE_COLLECTOR or not gc.isenabled():
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
    if threads >= 2 and PARALLEL_MIXED:
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
            instance, time_limit_s=MIXED_SINGLE_SHARE * time_limit_s, state=state,
            seed_with_baselines=seed_with_baselines, mixed=False,
            seed_time_base_s=time_limit_s, follow_up_s=MIXED_FOLLOW_UP_SHARE * time_limit_s,
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


PARALLEL_MIXED = True
"""With threads >= 2, `solve` searches the plans with a mixed stage in a second process beside
the single-type search (`_solve_beside`), instead of after it."""

HELPER_GRACE_S = 5.0
"""How long past the time limit `_solve_beside` waits for the second process's answer before it
stops it and bounds the plans with a mixed stage in its own process."""


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
        answer = helper.answer(until_wall=helper.deadline_wall + HELPER_GRACE_S)
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


def _stage_count_cap(instance: Instance, max_stages: int | None) -> int:
    """The most pipeline stages a plan may have: one layer per stage, one GPU per stage, and
    the caller's `max_stages`."""
    layers = instance.model.num_layers
    return min(layers, instance.cluster.num_gpus, max_stages or layers)


def _empty_ends(sub: SubProblem) -> tuple[bool, ...]:
    """Which ends of `sub` are empty stages: True for the first, False for the last."""
    return tuple(first for empty, first in ((sub.empty_first, True), (sub.empty_last, False))
                 if empty)


EMPTY_ENDS = ((True, False), (False, True), (True, True))
"""The kinds of plans with empty end stages (formulations Sec. 1.2): (empty first, empty last)."""


def _subproblems(instance: Instance, micro_batch: int, schedule: str, p_min: int,
                 max_stages: int | None, *, empty_ends: bool) -> Iterator[SubProblem]:
    """Every sub-problem at (`micro_batch`, `schedule`) whose stages that hold layers are at
    least `p_min`: every stage count with no empty end stage, then (`empty_ends`) each kind of
    empty end stages (Sec. 1.2). At most one layer and one GPU per stage, `max_stages` stages in
    all."""
    layers, gpus = instance.model.num_layers, instance.cluster.num_gpus
    most = min(gpus, max_stages or gpus + 2)
    for p in range(p_min, min(layers, most) + 1):
        yield SubProblem(p, micro_batch, schedule)
    if not empty_ends:
        return
    for empty_first, empty_last in EMPTY_ENDS:
        empty = int(empty_first) + int(empty_last)
        for decoder in range(max(p_min, 1), min(layers, most - empty) + 1):
            yield SubProblem(decoder + empty, micro_batch, schedule, empty_first, empty_last)


def _stage_count_floor(state: SearchState, micro_batch: int, configs: list[StageConfig]) -> int:
    """The fewest pipeline stages that can hold every layer at `micro_batch` (Sec. 2.2): L over
    the most layers any of `configs` holds as a middle stage with one micro-batch in flight."""
    roomiest = max(state.cache.max_layers(c, micro_batch, False, False, True, 1)
                   for c in configs)
    return max(1, math.ceil(state.instance.model.num_layers / max(roomiest, 1)))


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
                len(s.candidates) for s in slots) > DIVE_FULL_MAX_VARS
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
            restricted = [c for cs in ranked.values() for c in cs[:WARM_CONFIGS_PER_GROUP]]
            attempt(cand.sub, restricted, 0.5, cand.lower_bound, restricted=True)

    # Warm start: the most promising sub-problems by their cheap bound give a good incumbent
    # quickly, which makes the cap of Sec. 4.2 bite in the exact passes.
    warm_until = start + (0.2 * time_limit_s if incumbent is None and warm_start else 0.0)
    large = total_gpus > WARM_START_LARGE_GPUS
    warm_count = WARM_START_SUBPROBLEMS[large] * len(instance.training.schedules)
    warm_list = _warm_start_order(candidates, warm_count)
    if large and warm_until > start:  # (WARM_RANK_POOL)
        rank_until = start + 0.5 * (warm_until - start)
        pool = []
        for cand in candidates[:WARM_RANK_POOL]:
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
        if pending_seeds and time.perf_counter() - start >= SEED_AFTER_SHARE * time_limit_s:
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
    dive_budget = FIRST_PASS_BUDGET_S if state.require_mixed else DIVE_BUDGET_S
    dives = not (state.require_mixed and total_gpus > MIXED_DIVES_MAX_GPUS)
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
            if dives and left_open and since_model >= (DIVE_EVERY if dived else DIVE_FIRST):
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
                                      max_vars=DIVE_FULL_MAX_VARS)
                    # Its seeds, and the restricted model where the full one was not solved.
                    warm(dive, restricted_model=res is TOO_BIG)
                    if res is not TOO_BIG:  # its first-pass model, solved now: it leaves the queue
                        done += settle(dive, res, still_open)
                        queue.remove(target)
                        heapq.heapify(queue)
            continue
        since_model = 0
        done += solve_one(cand, FIRST_PASS_BUDGET_S, still_open)
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


def positional_seed_sequence(state: SearchState, sub: SubProblem,
                             p_max: int) -> list[StageConfig] | None:
    """The stage sequence of a seed (it proves nothing): at the sub-problem's positional
    bottleneck floor T (Sec. 4.4), the least tail threshold R at which the capacity model with
    integer stage counts holds every layer (`PositionalBound.integer_sequence`), and its
    sequence holding the most layers there. The LP's least R at T is a floor for it (the LP
    relaxes it), so the bisection starts there. On gpt3-175b-4types-x1024, (p, b) = (27, 12),
    this gives a 14.537 s plan where the search had found 14.890 s: the full models are too
    large for HiGHS there, and the restricted ones miss the few slow, low-tail stages."""
    t = state.bottleneck_floor(sub, p_max)
    if not math.isfinite(t):
        return None
    positional = state.positional_bound(sub.micro_batch, sub.schedule)
    p = sub.num_stages
    r_values = positional.tail_values()
    if len(r_values) == 0 or positional.integer_sequence(
            p, t, math.inf, most_layers=False) is None:
        return None
    # The integer program holds at R = inf, so the LP holds at the largest tail of all.
    top = len(r_values) - 1
    lo = first_true(lambda i: positional.holds_all_layers(p, t, float(r_values[i])), 0, top)
    lo = first_true(lambda i: positional.integer_sequence(
        p, t, float(r_values[i]), most_layers=False) is not None, lo, top + 1)
    return positional.integer_sequence(p, t, float(r_values[lo]) if lo <= top else math.inf)


def _warm_start_order(candidates: list[_Candidate], count: int) -> list[_Candidate]:
    """The first `count` sub-problems the warm start tries (WARM_START_SUBPROBLEMS), from
    `candidates` in the queue's order: each micro-batch size's first, then the rest."""
    leads: list[_Candidate] = []
    rest: list[_Candidate] = []
    sizes: set[int] = set()
    for c in candidates:
        (rest if c.sub.micro_batch in sizes else leads).append(c)
        sizes.add(c.sub.micro_batch)
    return (leads + rest)[:count]


def _ranked_per_group(state: SearchState, sub: SubProblem,
                      p_cap: int) -> dict[str, list[StageConfig]]:
    """Warm-start candidates: per node group, its configurations ranked by how many layers the
    whole group hosts with them (min(floor(G_g / gpus), p) stages of N_c(T) layers each: a
    p-stage plan has no more stages) at a bottleneck just above the sub-problem's bound T_LB(p),
    as the capacity bound would use them.

    Memory is taken with the first stage's micro-batches in flight or the last stage's (one
    under 1F1B), whichever is fewer: a configuration without recomputation that holds few
    layers at the front of the pipeline holds many at the back. Ranked by the first stage
    alone, llama3-70b-h100x32-a100x32's optimum (three H100 configurations without
    recomputation) lay outside the two best per group, and only a dive's full model found it.
    (The layers hosted grow with the bottleneck and shrink with the micro-batches in flight, so
    the fewest in flight at the larger bottleneck give each configuration its best count.)"""
    b = sub.micro_batch
    t_lb = state.capacity_bound(b, p_cap).bottleneck_floor(sub.num_stages)
    if not math.isfinite(t_lb):
        return {}
    m = sub.num_micro_batches(state.instance)
    in_flight = min(min(sub.num_stages, m),  # the first stage's, the last stage's
                    state.cache.in_flight(sub.schedule, 0, sub.num_stages, m))
    t_try = 1.1 * t_lb
    budget = {g.name: g.num_gpus for g in state.instance.cluster.node_groups}
    scores: dict[StageConfig, float] = {}
    for c in state.configs(b):
        if c.mixed:  # warm start: single-type stages only
            continue
        co = state.cache.coefficients(c, b, False, False, True)
        n_mem = state.cache.max_layers(c, b, False, False, True, in_flight)
        n = 0
        while n < n_mem and co.tau(n + 1) <= t_try:
            n += 1
        hosted = min(budget[c.node_group] // c.gpus, sub.num_stages) * n
        if hosted > 0:
            scores[c] = hosted
    ranked: dict[str, list[StageConfig]] = {}
    for c in sorted(scores, key=lambda c: (-scores[c], c)):
        ranked.setdefault(c.node_group, []).append(c)
    return ranked


def _time_ub(slots: list[Any], sub: SubProblem, instance: Instance) -> float:
    """A safe upper bound on every time variable of the model (for finite CP-SAT domains)."""
    worst = 0.0
    for s in slots:
        for co, n in zip(s.coeffs, s.max_layers, strict=True):
            worst = max(worst, co.tau(n), co.tail(n), co.fwd(n) + co.bwd(n))
    return 4.0 * worst + 1.0


def explain_infeasible(state: SearchState) -> str:
    """Why no plan exists, with numbers: which resource is short and by how much."""
    inst = state.instance
    m, t = inst.model, inst.training
    L = m.num_layers
    lines = [f"no plan fits {inst.name}: {m.name} ({m.total_params / 1e9:.2f}B parameters, "
             f"{L} layers) on {inst.cluster.num_gpus} GPUs"]
    if not state.micro_batches():
        lines.append(f"  no micro-batch size works: global_batch_size {t.global_batch_size} with "
                     f"max_micro_batch_size {t.max_micro_batch_size}")
        return "\n".join(lines)
    best_layers = 0
    best_desc = ""
    for b in state.micro_batches():
        for c in stage_configs(inst, b):
            n = state.cache.max_layers(c, b, False, False, True, 1)
            if n > best_layers:
                best_layers, best_desc = n, f"{c.label()} at micro-batch {b}"
    per_layer_states = m.params_per_layer * 16 / GIB
    usable = sum(g.num_gpus * (inst.device(g.device).memory_gib - t.reserved_memory_gib)
                 for g in inst.cluster.node_groups)
    need = m.total_params * 16 / GIB
    short = f", short by {need - usable:,.1f} GiB" if need > usable else ""
    lines.append(f"  model states alone need {need:,.1f} GiB "
                 f"(16 B/parameter, {per_layer_states:.2f} GiB per layer before sharding); "
                 f"the cluster has {usable:,.1f} GiB usable{short}")
    if best_layers == 0:
        lines.append("  no stage configuration holds even one layer (largest per-GPU memory "
                     f"{max(d.memory_gib for d in inst.cluster.devices.values()):.0f} GiB)")
    else:
        lines.append(f"  the roomiest stage configuration ({best_desc}) holds {best_layers} "
                     f"layer(s); all GPUs together cannot hold the {L} layers with their "
                     "activations")
    lines.append("  try: more or larger GPUs, a smaller global batch or micro-batch, ZeRO "
                 "(training.zero_stage), or full recomputation")
    return "\n".join(lines)
