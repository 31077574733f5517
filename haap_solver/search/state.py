"""The search's cached state on one instance (`SearchState`): cost model, coefficient cache, the
stage configurations of each micro-batch size (memory-aware and dominance pruning, mixed-type
ones built apart by `prepare_mixed`) and the tables the sub-problem bounds read (load-balance
floors, capacity and positional bounds, tail staircases). What a later planner keeps across
solves: pass one state to several solves and nothing that does not depend on what changed is
recomputed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from haap_solver.cost.evaluate import CostModel
from haap_solver.instance import Instance
from haap_solver.search import tuning
from haap_solver.search.bounds import CapacityBound, PositionalBound, TailCapacity
from haap_solver.search.coefficients import CoefficientCache, pieces_max_rows
from haap_solver.search.deadline import DeadlineReached, check_deadline, until
from haap_solver.search.formulation import SubProblem
from haap_solver.search.path_capacity import PathCapacity
from haap_solver.search.space import StageConfig, micro_batch_candidates, stage_configs
from haap_solver.search.subproblem_bounds import (
    _cluster_rate,
    _layer_rate_bounds,
    _layer_slope,
    group_layer_rates,
)
from haap_solver.search.subproblems import _empty_ends

MIXED_SPACE = "mixed"
"""The key of the plans with a mixed-type stage in `SearchState.sub_bounds` and
`space_floors` (`SearchState.bound_space` with require_mixed)."""


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
        self._capacity: dict[tuple[int, int, bool, bool], CapacityBound] = {}
        self._positional: dict[tuple[int, str, bool, bool], PositionalBound] = {}
        self._tail_capacity: dict[tuple[int, int, bool, bool], TailCapacity] = {}
        self._path: dict[tuple[int, str, bool, bool, int], PathCapacity | None] = {}
        self.windows: dict[tuple[SubProblem, bool, bool], tuple[float, float, float]] = {}
        """Per sub-problem (and space: mixed, require_mixed), the window of bottlenecks
        (stop, t_lo, t_hi) of its last path walk (Sec. 4.10): every plan of it cheaper than
        `stop` has its bottleneck in [t_lo, t_hi). Its model is confined to that window while
        the threshold is at most `stop` (`window`)."""
        self.closing_steps: dict[str, int] = {}
        """How many strong bounds reached their incumbent, by the step that did
        (subproblem_bounds._strong_steps: granular, tail_capacity, positional_floor,
        tail_lp_walk, link_sides_walk, path_walk, path_exact_walk); a search reports its own
        share."""
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
        self._end_floors: dict[tuple[int, bool, bool],
                               tuple[float, float, float, float]] = {}
        """`_end_minima` per (micro-batch, empty end is the first, mixed)."""
        self._end_configs: dict[tuple[int, bool], list[StageConfig]] = {}
        self.any_plan_floor_s: float | None = None
        """`any_plan_floor`, once computed (it reads only the instance and cost model; 0.03 s at
        1,024 GPUs, asked past the deadline by each search whose set-up it cut)."""
        self.sub_bounds: dict[tuple[str, SubProblem], float] = {}
        """A lower bound on each sub-problem's least time that a search has proven, by (space,
        sub-problem): "single" bounds its single-type plans, "mixed" its plans with a mixed-type
        stage (the two searches of formulations Sec. 1.1). Recorded by every search of the full
        space (`record_bound`), raised at the start of the next one (`known_bound`), and carried
        by the Planner to a cluster whose plans are a subset of this one's (Sec. 8,
        `search.carry`)."""
        self.space_floors: dict[str, float] = {}
        """A lower bound on every plan of a space ("single", "mixed", as `sub_bounds` keys
        them): the least sub-problem bound of a search of that space that set up every
        micro-batch size (`record_floor`), or one carried by the Planner from a cluster whose
        plans of that space include this one's (Sec. 8). Where a later search's deadline cuts
        its set-up, the sizes left unbuilt are bounded by it (`carried_floor`)."""

    def carried_floor(self) -> float:
        """A lower bound on every plan of the space searched now, proven on a cluster whose plans
        of that space include this one's (`space_floors`, carried by the Planner; 0 where none):
        what bounds the micro-batch sizes a search's deadline left unbuilt, beside
        `any_plan_floor`."""
        space = self.bound_space()
        return 0.0 if space is None else self.space_floors.get(space, 0.0)

    def record_floor(self, floor: float) -> None:
        """Keep `floor`, a lower bound on every plan of the space searched now (the least bound
        over every sub-problem of a search that built them all), where it beats the one known."""
        space = self.bound_space()
        if space is not None and floor > self.space_floors.get(space, 0.0):
            self.space_floors[space] = floor

    def bound_space(self) -> str | None:
        """Which space a search on this state bounds, as `sub_bounds` keys it: "single",
        "mixed" (require_mixed), or None for a restricted space (a target's `stage_filter`) or
        the whole space in one search, whose bounds are kept nowhere."""
        if self.stage_filter is not None:
            return None
        if self.require_mixed:
            return MIXED_SPACE
        return None if self.mixed else "single"

    def known_bound(self, sub: SubProblem) -> float:
        """The best bound proven so far on `sub` in the space searched now (0 where none)."""
        space = self.bound_space()
        return 0.0 if space is None else self.sub_bounds.get((space, sub), 0.0)

    def raise_proven(self, bounds: Mapping[tuple[str, SubProblem], float],
                     floors: Mapping[str, float]) -> None:
        """Raise `sub_bounds` and `space_floors` to `bounds` and `floors` where larger: lower
        bounds proven on this state's instance elsewhere (an earlier solve of the same
        cluster, `Planner._recall_proof`; the second process, `second_process.Known`)."""
        for key, bound in bounds.items():
            if bound > self.sub_bounds.get(key, 0.0):
                self.sub_bounds[key] = bound
        for space, floor in floors.items():
            if floor > self.space_floors.get(space, 0.0):
                self.space_floors[space] = floor

    def record_bound(self, sub: SubProblem, bound: float) -> None:
        """Keep `bound`, a valid lower bound on `sub` in the space searched now, where it beats
        the one known."""
        space = self.bound_space()
        if space is not None and bound > self.sub_bounds.get((space, sub), 0.0):
            self.sub_bounds[(space, sub)] = bound

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
        """The configurations an empty end stage may take (Sec. 1.2), each in the first allowed
        recomputation mode (without a layer every mode costs and weighs the same): the
        single-type ones and, when `self.mixed`, the mixed-type ones of the space
        (`mixed_space`, one per replica split whatever the mode it came with), through the
        restricted space's `stage_filter` where one is set. Cached."""
        key = (micro_batch, self.mixed)
        hit = self._end_configs.get(key)
        if hit is None:
            mode = self.instance.training.recompute[0]
            hit = [c for c in stage_configs(self.instance, micro_batch)
                   if c.recompute == mode and (self.stage_filter is None or self.stage_filter(c))
                   and self.cache.spread_allowed(c, micro_batch)]
            if self.mixed:
                seen: set[tuple[Any, ...]] = set()
                for c in self.mixed_space(micro_batch):
                    if (c.parts, c.spread) not in seen:
                        seen.add((c.parts, c.spread))
                        hit.append(c if c.recompute == mode else replace(c, recompute=mode))
            self._end_configs[key] = hit
        return hit

    def decoder_cases(self, sub: SubProblem) -> list[tuple[bool, float, float]]:
        """The relaxations whose least bounds a sub-problem with empty end stages (Sec. 1.2),
        as (`single`: its decoder stages single-type, what its empty ends add at least): one,
        every plan of `sub` (its decoder stages as searched now, `end_stage_floor`), except in
        the search over plans with a mixed stage (require_mixed) where an empty end may take a
        mixed configuration. There a plan's mixed stage is a decoder stage (the decoder bound
        with row (M), every end configuration) or it is not, and then its decoder stages are
        single-type and some empty end is mixed (the single-type decoder bound, the least the
        ends add with one of them mixed, `_mixed_end_floor`). Each case also gives the least
        weight in layers of its empty ends (`end_stage_layers`, `_end_work_bound`).

        What it cost (2026-12-02, `haap solve --threads 1 --empty-end-stages`, 60 s, loaded
        2-core host, CPU s before -> after mixed empty ends): gpt3-2.7b-a100-40gx8-v100x8
        28.6 -> 36.9, the same plan 8.8231 s, proven -> 2% gap (bound 8.6508 s: 11 sub-problems
        of the single-type-decoder case stay open; dropping (M) instead left 58);
        llama3.2-1b-h100x4-l40sx4 32.7 -> 28.0, the same plan 3.9690 s, at the time limit both,
        bound 3.4619 -> 3.9339 s."""
        every = (False, self.end_stage_floor(sub), self.end_stage_layers(sub))
        if not self.require_mixed:
            return [every]
        floor, layers = self._mixed_end_floor(sub)
        return [every] + ([(True, floor, layers)] if math.isfinite(floor) else [])

    def decoder_state(self, sub: SubProblem, single: bool = False) -> SearchState:
        """`without_ends` for the decoder stages of `sub` (a sub-problem with empty end stages,
        Sec. 1.2), whose bounds plus what the empty ends add bound `sub`'s; with `single`, that
        state over single-type stages only (no row (M)): one case of `decoder_cases`. (One
        state object per kind of empty ends, its flags set at each call: use it before the
        next.)"""
        bare = self.without_ends(sub.empty_first, sub.empty_last)
        if single:
            bare.mixed = bare.require_mixed = False
        return bare

    def _mixed_end_floor(self, sub: SubProblem) -> tuple[float, float]:
        """(least time per micro-batch, least weight in layers) the empty end stages of `sub`
        add where one of them at least takes a mixed-type configuration (`_end_minima`, each
        least taken apart: a bound); inf where none can."""
        ends = _empty_ends(sub)
        minima = {first: self._end_minima(sub.micro_batch, first) for first in ends}
        floor = layers = math.inf
        for first in ends:
            mine = minima[first]
            if not math.isfinite(mine[2]):
                continue
            others = [minima[o] for o in ends if o != first]
            floor = min(floor, mine[2] + sum(o[0] for o in others))
            layers = min(layers, mine[3] + sum(o[1] for o in others))
        return floor, layers

    def end_stage_layers(self, sub: SubProblem) -> float:
        """The least the empty end stages of `sub` weigh in layers (Sec. 1.2): per empty end,
        the least over the configurations h that fit it of tau_h(0) sum_g rho_g gpus_g(h), the
        layers its GPUs could have advanced at the rates of Sec. 4.1 while busy with its own
        time per micro-batch (`_end_work_bound`)."""
        return sum(self._end_minima(sub.micro_batch, first)[1] for first in _empty_ends(sub))

    def end_stage_floor(self, sub: SubProblem) -> float:
        """The least that the empty end stages of `sub` (Sec. 1.2) add to its objective: each
        adds its own time per micro-batch to the fill and drain of the pipeline, at least the
        least over the configurations that fit it (`end_configs`; with one micro-batch in
        flight, the fewest there can be); inf where none fits."""
        return sum(self._end_minima(sub.micro_batch, first)[0] for first in _empty_ends(sub))

    def _end_minima(self, micro_batch: int, first: bool) -> tuple[float, float, float, float]:
        """(least time per micro-batch, least weight in layers, the same two over the mixed-type
        ones) over the configurations that fit an empty first (`first`) or last
        stage at `micro_batch` with one micro-batch in flight; inf where none fits. Cached.

        The weight of configuration h: its GPUs are busy tau_h(0) of every bottleneck period
        T, and a GPU of node group g advances at most rho_g layers per second (Sec. 4.1, over
        the configurations the decoder stages take), so the layers the other stages advance
        are at most T C - tau_h(0) sum_g rho_g gpus_g(h): r_h = tau_h(0) sum_g rho_g gpus_g(h),
        valid for a configuration of any kind whatever its own per-layer rate."""
        key = (micro_batch, first, self.mixed)
        hit = self._end_floors.get(key)
        if hit is None:
            b, last = micro_batch, not first
            configs = self.configs(b)
            rho = group_layer_rates(self, b, configs)[0] if configs else {}
            least_time = least_layers = least_mixed = mixed_layers = math.inf
            for c in self.end_configs(b):
                if not self.cache.holds_end_only(c, b, first, last, True, 1):
                    continue
                co = self.cache.coefficients(c, b, first, last, True)
                own = min(co.tau(0), co.fwd(0) + co.bwd(0))
                least_time = min(least_time, own)
                weight = own * sum(rho.get(g, 0.0) * c.gpus_in(g) for g in c.groups)
                least_layers = min(least_layers, weight)
                if c.mixed:
                    least_mixed = min(least_mixed, own)
                    mixed_layers = min(mixed_layers, weight)
            hit = self._end_floors[key] = (least_time, least_layers, least_mixed, mixed_layers)
        return hit

    def capacity_bound(self, micro_batch: int, p_max: int,
                       schedule: str = "1f1b") -> CapacityBound:
        """The capacity tables of Sec. 4.3 for the sub-problems of `schedule`: their stage
        periods follow its sends (training.blocks_p2p; 1F1B and GPipe resolve it alike, the
        interleaved schedule under "auto" with Megatron-LM overlaps where they block)."""
        blocking = self.instance.training.blocks_p2p(schedule)
        key = (micro_batch, p_max, self.mixed, blocking)
        if key not in self._capacity:
            self._capacity[key] = CapacityBound(self.instance, self.cache, micro_batch,
                                                self.configs(micro_batch), p_max,
                                                blocking=blocking)
        return self._capacity[key]

    def tail_capacity(self, micro_batch: int, p_max: int,
                      schedule: str = "1f1b") -> TailCapacity:
        """The GPU-granular capacity with a tail threshold (Sec. 4.9) over the
        tables of `capacity_bound`, mixed-type configurations counted in half-units where they
        are candidates (Sec. 4.9, *Mixed stages*). It bounds every plan of those
        configurations, so the search over plans with a mixed stage (require_mixed) may use it
        too (it has no row (M): a relaxation of it)."""
        blocking = self.instance.training.blocks_p2p(schedule)
        key = (micro_batch, p_max, self.mixed, blocking)
        if key not in self._tail_capacity:
            self._tail_capacity[key] = TailCapacity(
                self.capacity_bound(micro_batch, p_max, schedule), self.cache, micro_batch)
        return self._tail_capacity[key]

    def positional_bound(self, micro_batch: int, schedule: str) -> PositionalBound:
        key = (micro_batch, schedule, self.mixed, self.require_mixed)
        if key not in self._positional:
            self._positional[key] = PositionalBound(self.instance, self.cache, micro_batch,
                                                    self.configs(micro_batch), schedule,
                                                    require_mixed=self.require_mixed)
        return self._positional[key]

    def path_capacity(self, micro_batch: int, schedule: str, p_max: int) -> PathCapacity | None:
        """The path capacity of Sec. 4.10 for the sub-problems of a micro-batch size and
        schedule, None where it does not apply (`PathCapacity.applies`)."""
        key = (micro_batch, schedule, self.mixed, self.require_mixed, p_max)
        if key not in self._path:
            positional = self.positional_bound(micro_batch, schedule)
            self._path[key] = PathCapacity(
                self.instance, self.cache, positional,
                self.capacity_bound(micro_batch, p_max, schedule).t_values) \
                if PathCapacity.applies(self.instance, positional) else None
        return self._path[key]

    def record_window(self, sub: SubProblem, stop: float, t_lo: float, t_hi: float) -> None:
        """Keep the window of bottlenecks of a path walk against `stop` (Sec. 4.10)."""
        self.windows[(sub, self.mixed, self.require_mixed)] = (stop, t_lo, t_hi)

    def recorded_window(self, sub: SubProblem) -> tuple[float, float, float] | None:
        """(stop, t_lo, t_hi) of the last path walk of `sub` in the current space
        (`record_window`), None where there was none."""
        return self.windows.get((sub, self.mixed, self.require_mixed))

    def window(self, sub: SubProblem, threshold: float) -> tuple[float, float]:
        """(t_lo, t_hi): every plan of `sub` cheaper than `threshold` has its bottleneck in
        [t_lo, t_hi), from its last path walk against a stop at least `threshold` (Sec. 4.10);
        (0, inf) where none is known."""
        hit = self.recorded_window(sub)
        if hit is None or hit[0] < threshold:
            return 0.0, math.inf
        return hit[1], hit[2]

    def granular_floor(self, sub: SubProblem, p_max: int) -> float:
        """The GPU-granular bottleneck floor of Sec. 4.3 (inf: no plan holds every layer).

        With require_mixed, the floor of the tail-threshold tables at R = inf, in half-units
        (Sec. 4.9 *Mixed stages*; `TailCapacity.bottleneck_floor`), on clusters of up to
        MIXED_HALF_UNIT_FLOOR_MAX_GPUS; above, only the least stage time any configuration can
        take. Not CapacityBound's floor: there the relaxation of mixed stages (free items that
        fill the GPUs the stages leave) makes the floor weak, and its dynamic program over
        thousands of mixed items cost more than it saved (the mixed phase of
        llama3-8b-h100-a100-l40s 2.4 s -> 2.1 s, of llama3-70b-h100x32-a100x32 1.2 s -> 0.9 s);
        the positional LP, which charges mixed stages their GPUs exactly and has the row (M),
        starts from this floor."""
        capacity = self.capacity_bound(sub.micro_batch, p_max, sub.schedule)
        if self.require_mixed:
            if self.instance.cluster.num_gpus <= tuning.MIXED_HALF_UNIT_FLOOR_MAX_GPUS:
                return self.tail_capacity(sub.micro_batch, p_max,
                                          sub.schedule).bottleneck_floor(sub.num_stages)
            return capacity.t_values[0] if capacity.t_values else math.inf
        return capacity.bottleneck_floor(sub.num_stages)

    def bottleneck_floor(self, sub: SubProblem, p_max: int, stop: float = math.inf) -> float:
        """The larger of the GPU-granular (Sec. 4.3, `granular_floor`) and the positional
        (Sec. 4.4) bottleneck floors of a sub-problem: no plan of it has a stage time per
        micro-batch below this.

        With a finite `stop` (the largest bottleneck still worth finding) the positional search
        may end as soon as it proves the floor exceeds `stop`. With empty end stages (Sec. 1.2)
        the floor of the decoder stages (`without_ends`): the bottleneck is at least that."""
        if sub.empty_ends:  # (the least over the cases of `decoder_cases`)
            return min(self.decoder_state(sub, single).bottleneck_floor(sub.decoder(), p_max,
                                                                        stop)
                       for single, _, _ in self.decoder_cases(sub))
        capacity = self.capacity_bound(sub.micro_batch, p_max, sub.schedule)
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
                and self.cache.spread_allowed(c, micro_batch) and self._fits(c, micro_batch)]
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
            with until(deadline):  # (the coefficient cache's misses stop there too)
                for b in self.micro_batches():
                    if time.perf_counter() >= deadline or (stop is not None and stop()):
                        return False
                    self.configs(b)
            return True
        except DeadlineReached:
            return False  # (inside a micro-batch size: nothing of it kept)
        finally:
            self.mixed = was
            self._set_up_until = None

    def _check_set_up(self) -> None:
        """Inside prepare_mixed: stop where its deadline has passed or `stop()` says so (one
        micro-batch size's configurations take up to 0.5 s at 16,384 GPUs, which a 5 s limit
        overran by as much); inside a deadline (`deadline.until`: the search's own set-up of a
        size), raise DeadlineReached once it has passed."""
        check_deadline()  # (the search's set-up of one size, `BranchAndBound.build_queue`)
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
        """`CoefficientCache.may_dominate` with memory, stopping where the set-up must."""
        return self.cache.may_dominate(configs, micro_batch, memory=True,
                                       check=self._check_set_up)


def _config_order(c: StageConfig) -> tuple[Any, ...]:
    """The order of a micro-batch size's configurations (by node groups, then GPUs, TP,
    recomputation): the one the dominance filter keeps, and the one without it."""
    return (c.groups, c.gpus, c.tp, c.recompute, c)


class _SetUpStopped(DeadlineReached):
    """prepare_mixed's deadline or stop came inside one micro-batch size's set-up."""
