"""Lower bounds on the iteration time of a sub-problem's plans (formulations/stage-assignment.md
Sec. 4): the load balance of Sec. 4.1 (`lower_bound`, the cheap bound every sub-problem gets),
and the strong bound (`strong_lower_bound`: the GPU-granular and positional bottleneck floors of
Sec. 4.3-4.4 and the tail of the most loaded stage, Sec. 4.5) the branch-and-bound strengthens
sub-problems with; the floors of the whole space (`compute_bound`, `any_plan_floor`). Each takes
the search's cached state (`SearchState`), whose tables (capacity, positional, staircases) it
reads; the tables themselves are in ``bounds``.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from haap_solver.instance import Instance
from haap_solver.search import tuning
from haap_solver.search.bounds import TailCapacity, cannot_beat, tail_walk
from haap_solver.search.coefficients import StageCoefficients
from haap_solver.search.deadline import until
from haap_solver.search.formulation import SubProblem
from haap_solver.search.path_capacity import window_walk
from haap_solver.search.space import StageConfig, tp_candidates

if TYPE_CHECKING:
    from haap_solver.search.state import SearchState


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
    fill(t) the better of the fluid and Cauchy-Schwarz fills (neither grows with t). Under the
    interleaved schedule (`fill_weight` 1/v) w max(fill, T) + (m - w) T (Sec. 1.4)."""

    def __init__(self, grid: np.ndarray, fills: np.ndarray, m: int, fill_weight: float = 1.0):
        self.grid, self.fills, self.m = grid, fills, m
        self.w, self.k = fill_weight, m - fill_weight

    def at_least(self, t: float) -> float:
        """The bound over the plans whose bottleneck is at least t (>= the grid's first point)."""
        ends = np.append(self.grid[1:], np.inf)
        keep = ends > t
        lo = np.maximum(self.grid[keep], t)
        return float((self.w * np.maximum(self.fills[keep], lo) + self.k * lo).min())

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
        return self.w * np.maximum(self.fills, self.grid) + self.k * self.grid


def bottleneck_costs(state: SearchState, sub: SubProblem, floors: tuple[float, float, float],
                     t_low: float, links: float = 0.0) -> BottleneckCosts:
    """Sec. 4.1 for a sub-problem whose bottleneck is at least t_low: the fill and drain of the
    pipeline (fluid_fill on a grid of bottlenecks, and the Cauchy-Schwarz fill) with the
    bottleneck's (m - 1) T. `links`, a lower bound on the pipeline links' 2 sum_j c_j, is added
    to the fill (the objective's fill term is the stages' and links' sum, Sec. 4.6)."""
    _, layer_floor, rate = floors
    L, p = state.instance.model.num_layers, sub.num_stages
    ratio, steps = tuning.FLUID_GRID
    grid = t_low * ratio ** np.arange(steps + 1)
    plain = _fill_floor(state, sub, floors)
    ends = np.append(grid[1:], np.inf)
    fills = np.maximum(fluid_fill(L, p, layer_floor, rate, ends), plain) + links
    return BottleneckCosts(grid, fills, sub.num_micro_batches(state.instance),
                           sub.fill_weight(state.instance))


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
    real_floors = state.floors(sub.micro_batch)
    if not math.isfinite(state.end_stage_floor(sub)) or real_floors is None:
        return math.inf
    work = _end_work_bound(state, sub, real_floors)
    decoder = sub.decoder()
    best = math.inf
    # (In the search over plans with a mixed stage, where an empty end may be the mixed one,
    # the lesser of two cases: SearchState.decoder_cases.)
    for single, extra, weight in state.decoder_cases(sub):
        bare = state.decoder_state(sub, single)
        floors = bare.floors(sub.micro_batch)
        if floors is None:
            continue
        if strong:
            value = extra + strong_lower_bound(bare, decoder, floors, p_max,
                                               incumbent_s - extra, integer=integer)
        else:
            value = extra + granular_lower_bound(bare, decoder, floors, p_max)
        if single:  # (the work bound of this case: its ends' own floor and weight)
            value = max(value, _end_work_bound(state, sub, real_floors, extra, weight))
        best = min(best, value)
    return max(work, best)


def _end_work_bound(state: SearchState, sub: SubProblem, floors: tuple[float, float, float],
                    extra: float | None = None, weight: float | None = None) -> float:
    """The load balance of Sec. 4.1 with the empty end stages' work (Sec. 1.2): an empty stage
    of configuration h keeps its GPUs busy tau_h(0) <= T per micro-batch, in which they could
    have advanced r_h = tau_h(0) sum_g rho_g gpus_g(h) layers at the rates of Sec. 4.1 (a
    mixed-type h counts each replica group's GPUs in its own node group), so the decoder
    stages, on the other GPUs, advance L <= T C - r_h: the bottleneck T is at least
    (L + r) / C with r the least r_h of each empty end (`SearchState.end_stage_layers`). The
    objective is at least the fill and drain of the decoder stages plus the empty stages' own
    time (`extra`, default `SearchState.end_stage_floor`), and (m - 1) T. `extra` and `weight`
    (r) of a case of `SearchState.decoder_cases` bound the plans of that case."""
    layers = state.instance.model.num_layers
    _, _, rate = floors
    r = state.end_stage_layers(sub) if weight is None else weight
    if not math.isfinite(r) or rate <= 0:
        return math.inf
    t_full = (layers + r) / rate
    m = sub.num_micro_batches(state.instance)
    fill = _fill_floor(state, sub.decoder(), floors) + (
        state.end_stage_floor(sub) if extra is None else extra)
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
                       integer: bool = False, deadline: float = math.inf,
                       closing: bool = True) -> float:
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
    (PositionalBound.holds_all_layers_integer), wherever it is within TAIL_LP_WITHIN (on
    clusters of TAIL_LP_ALL_GPUS GPUs wherever it is below).

    With empty end stages (Sec. 1.2): `_empty_ends_bound`.

    With a finite `deadline` (time.perf_counter() seconds) it raises DeadlineReached once that
    has passed, from inside its LPs and integer programs: one call takes up to 3 s on
    gpt3-175b-4types-x1024 (with the integer walk, more), and a search whose deadline came
    during one returned that much late. A bound cut short is no bound: the caller keeps the one
    it had. Where the deadline does not come, the value is the same as without one.

    `incumbent_s` may also be a level below the incumbent (`BranchAndBound.strengthening_level`):
    the bound is then valid as ever (the sub-problem's optimum is at least the lesser of it and
    the level), the walk stops at the level, and with `closing` False a bound reaching it is not
    counted as closing the sub-problem.
    """
    with until(deadline):
        return _strong_lower_bound(state, sub, floors, p_max, incumbent_s, integer, closing)


def _strong_lower_bound(state: SearchState, sub: SubProblem, floors: tuple[float, float, float],
                        p_max: int, incumbent_s: float, integer: bool,
                        closing: bool = True) -> float:
    """strong_lower_bound, inside its deadline; counts which step reached the incumbent
    (`SearchState.closing_steps`)."""
    if sub.empty_ends:
        return _empty_ends_bound(state, sub, p_max, incumbent_s, strong=True, integer=integer)
    bound, step = _strong_steps(state, sub, floors, p_max, incumbent_s, integer)
    if closing and bound >= incumbent_s:
        state.closing_steps[step] = state.closing_steps.get(step, 0) + 1
    return bound


def _strong_steps(state: SearchState, sub: SubProblem, floors: tuple[float, float, float],
                  p_max: int, incumbent_s: float, integer: bool) -> tuple[float, str]:
    """(_strong_lower_bound's bound, the name of its last step)."""
    t_floor = floors[0]
    # The GPU-granular floor and the tail alone, no LP: enough to prune about half the
    # sub-problems that reach this point in our measurements.
    granular, bound, bottleneck = _granular_step(state, sub, floors, p_max)
    if not math.isfinite(granular):
        return math.inf, "granular"
    if bound >= incumbent_s:
        return bound, "granular"
    tables = state.tail_capacity(sub.micro_batch, p_max, sub.schedule)
    # (With mixed-type candidates, off by default; with require_mixed its floor is the
    # granular one above: Sec. 4.9, *Mixed stages*.)
    walk_low, walk_high = tuning.TAIL_CAPACITY_MIXED_WALK_GPUS
    mixed_walk = (tuning.TAIL_CAPACITY_MIXED_WALK
                  or walk_low <= state.instance.cluster.num_gpus <= walk_high)
    tail_capacity = tables if not tables.halves or mixed_walk else None
    if tail_capacity is not None and tuning.TAIL_CAPACITY_PRUNE:
        # Every stage's tail with GPUs in node blocks, no LP (Sec. 4.9): the prune test
        # (`cannot_beat`) and, where TAIL_CAPACITY_WALK says so, the walk for a bound; the
        # sub-problems of a micro-batch size share most of its tables.
        bound = max(bound, _tail_capacity_walk(state, sub, floors, tail_capacity, bottleneck,
                                               incumbent_s,
                                               prune_only=not tuning.TAIL_CAPACITY_WALK))
        if bound >= incumbent_s:
            return bound, "tail_capacity"
    if not tuning.TAIL_CAPACITY_IN_LP_WALK:
        tail_capacity = None
    stop = _stage_time_cap(state, sub, floors, incumbent_s)
    t_cap = state.bottleneck_floor(sub, p_max, stop=stop)  # >= granular (Sec. 4.3 and 4.4)
    if not math.isfinite(t_cap):
        return math.inf, "positional_floor"
    step = "positional_floor"
    if t_cap > granular:  # the positional floor raised it: the same with that floor
        raised, bottleneck = _floor_and_tail(state, sub, floors, max(t_floor, t_cap))
        bound = max(bound, raised)  # (not below the tail capacity's walk)
    # The positional LP with a tail threshold (Sec. 4.5) raised bounds by up to ~10% in our
    # measurements and costs up to half a second on 16k GPUs: only where it may prune.
    low, high = tuning.TAIL_LP_ALL_GPUS
    within = (0.0 if low <= state.instance.cluster.num_gpus <= high
              else tuning.TAIL_LP_WITHIN)
    if within * incumbent_s <= bound < incumbent_s:
        step = "tail_lp_walk"
        p = sub.num_stages
        w, k = sub.fill_weight(state.instance), sub.steady_weight(state.instance)
        fill = _fill_floor(state, sub, floors)
        positional = state.positional_bound(sub.micro_batch, sub.schedule)
        t_values = state.capacity_bound(sub.micro_batch, p_max, sub.schedule).t_values

        def plain_cost(t_lo: float, t_hi: float) -> float:
            # Sec. 4.6: the stages' and links' sum with bottleneck <= t_hi is at least S(t_hi);
            # it is also at least the fill (stages alone) and t_lo (the bottleneck is a term).
            stages = positional.stage_sum_floor(p, t_values[-1] if math.isinf(t_hi) else t_hi)
            return w * max(fill, t_lo, stages) + k * t_lo

        def cost_of_interval(t_lo: float, t_hi: float) -> float:
            return refined_interval_cost(plain_cost, t_values, t_lo, t_hi, tuning.REFINE_SPLITS,
                                         incumbent_s)

        # The walk without the LPs per set of link sides (Sec. 4.4 *Link sides*) first: they
        # cost up to 2^sides LPs a question, and pay only where the walk ends near the
        # incumbent (gpt3-2.7b-a100x32-v100x96-4gpu, every single-type sub-problem against a
        # plan 12% above the best: 2.6 times the CPU time for 2 more closed of 241).
        # The tail-threshold capacity (where it applies) is asked before each LP: a necessary
        # condition too, so the walk's R_min can only rise, and where it fails no LP is solved.
        also = tail_capacity.holds_all_layers if tail_capacity is not None else None
        positional.link_sides_on = False
        try:
            bound = max(bound, positional.objective_floor(p, cost_of_interval, t_values,
                                                          bottleneck, stop=incumbent_s,
                                                          integer=integer, also=also))
        finally:
            positional.link_sides_on = True
        path = state.path_capacity(sub.micro_batch, sub.schedule, p_max) \
            if bound < incumbent_s and not sub.empty_ends and math.isfinite(incumbent_s) \
            else None
        # The LPs per set of link sides charge one stage per side; the path walk below charges
        # every stage its neighbours' node groups with exact budgets: where it follows, it is
        # asked instead (tuning.PATH_SKIPS_LINK_SIDES).
        if (path is None or not tuning.PATH_SKIPS_LINK_SIDES) \
                and tuning.LINK_SIDES_WITHIN * incumbent_s <= bound < incumbent_s:
            step = "link_sides_walk"
            bound = max(bound, positional.objective_floor(p, cost_of_interval, t_values,
                                                          bottleneck, stop=incumbent_s,
                                                          integer=integer, also=also))
        if path is not None and bound < incumbent_s:
            # Sec. 4.10: the same walk with the path capacity (exact budgets, links by the
            # neighbours' node groups); it also leaves the window of bottlenecks the
            # sub-problem's model is confined to.
            step = "path_walk"
            walked, t_lo, t_hi = window_walk(path.holds, p, cost_of_interval, t_values,
                                             positional.tail_values(), bottleneck, incumbent_s)
            bound = max(bound, walked)
            if bound < incumbent_s and state.instance.cluster.num_gpus \
                    >= tuning.PATH_EXACT_LINKS_MIN_GPUS:
                # Still open: the walk again inside the window with the links between node
                # groups charged exactly (PathCapacity.holds_exact, several times the cost of a
                # question, so only there); above the window the first question stands (no plan
                # there beats the stop), which keeps the predicate monotone in T.
                step = "path_exact_walk"
                top = t_hi

                def exact(q: int, t: float, r: float) -> bool:
                    return path.holds(q, t, r) and (t >= top or path.holds_exact(q, t, r))

                walked, lo, hi = window_walk(exact, p, cost_of_interval, t_values,
                                             positional.tail_values(), max(bottleneck, t_lo),
                                             incumbent_s)
                bound = max(bound, walked)
                t_lo, t_hi = max(t_lo, lo), min(t_hi, hi)
            state.record_window(sub, incumbent_s, t_lo, t_hi)
        elif bound < incumbent_s and math.isfinite(incumbent_s) and tuning.LP_WINDOWS \
                and sub.schedule == "1f1b" and not sub.empty_ends:
            # Where the path capacity does not apply, the window of the LP walk's own question
            # (Sec. 4.10), asked again (its LP answers are remembered, so mostly for free).
            sides_on = step == "link_sides_walk"

            def holds(q: int, t: float, r: float) -> bool:
                return (also is None or also(q, t, r)) and positional.holds_all_layers(q, t, r)

            positional.link_sides_on = sides_on
            try:
                walked, t_lo, t_hi = window_walk(holds, p, cost_of_interval, t_values,
                                                 positional.tail_values(), bottleneck,
                                                 incumbent_s)
            finally:
                positional.link_sides_on = True
            bound = max(bound, walked)
            state.record_window(sub, incumbent_s, t_lo, t_hi)
    return bound, step


def tail_capacity_bound(state: SearchState, sub: SubProblem,
                        floors: tuple[float, float, float], p_max: int,
                        incumbent_s: float = math.inf, prune_only: bool = False,
                        max_steps: int = 24) -> float:
    """A lower bound on every plan of the sub-problem from the GPU-granular capacity with a tail
    threshold (Sec. 4.9), no LP: min over bottlenecks T of the pipeline's cost
    at T (the fill and drain of Sec. 4.1 with the links' least sides, and (m - 1) T) plus
    R_min(T), the least largest tail at which some p stages with bottleneck <= T hold every
    layer (`TailCapacity`), walked as in Sec. 4.5 (`bounds.tail_walk`); at least the granular
    step's bound. 0 (no claim) with empty end stages; with mixed-type stages among the
    candidates, in half-units (`SearchState.tail_capacity`, Sec. 4.9 *Mixed stages*). With an
    incumbent the walk stops once it reaches it."""
    if sub.empty_ends:
        return 0.0
    tail_capacity = state.tail_capacity(sub.micro_batch, p_max, sub.schedule)
    granular, bound, bottleneck = _granular_step(state, sub, floors, p_max)
    if not math.isfinite(granular):
        return math.inf
    return max(bound, _tail_capacity_walk(state, sub, floors, tail_capacity, bottleneck,
                                          incumbent_s, prune_only, max_steps))


def _tail_capacity_walk(state: SearchState, sub: SubProblem, floors: tuple[float, float, float],
                        tail_capacity: TailCapacity, bottleneck: float,
                        incumbent_s: float, prune_only: bool = False,
                        max_steps: int = 24) -> float:
    """The walk of `tail_capacity_bound` from a known bottleneck floor: every plan costs at
    least BottleneckCosts.at_least(T) at bottleneck T, plus its largest tail. The fill counts
    the links too: 2 sum_j c_j >= sum_i deg_i pi(c_i) >= 2 (p - 1) min_c pi(c) (Sec. 4.6)."""
    p = sub.num_stages
    links = 0.0
    if p > 1:
        floor = state.positional_bound(sub.micro_batch, sub.schedule).link_floor()
        links = 2.0 * (p - 1) * float(floor.min()) if len(floor) else 0.0
    costs = bottleneck_costs(state, sub, floors, bottleneck, links)

    def cost_of_interval(t_lo: float, _t_hi: float) -> float:
        return costs.at_least(max(t_lo, bottleneck))

    t_values = tail_capacity.t_values
    if prune_only:
        if not math.isfinite(incumbent_s) or not t_values:
            return 0.0
        t_idx = int(np.searchsorted(t_values, bottleneck * (1 - 1e-12), side="left"))
        if t_idx >= len(t_values):
            return cost_of_interval(bottleneck, math.inf)
        return incumbent_s if cannot_beat(tail_capacity.holds_all_layers, p, cost_of_interval,
                                          t_values, t_idx, incumbent_s) else 0.0
    return tail_walk(tail_capacity.holds_all_layers, p, cost_of_interval, t_values,
                     tail_capacity.r_values, bottleneck, stop=incumbent_s, max_steps=max_steps)


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
    w, k = sub.fill_weight(state.instance), sub.steady_weight(state.instance)
    cap = incumbent_s / m  # (interleaved: w T + k T = m T, Sec. 1.4)
    if k > 0:
        cap = min(cap, (incumbent_s - w * _fill_floor(state, sub, floors)) / k)
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


EXACT_RATE_SHARES = 2048
"""`peak_layer_rates` costs every share up to this one; above it, a geometric grid."""
RATE_SHARE_GRID = 1.01
"""Ratio of consecutive grid shares above EXACT_RATE_SHARES (the rate bound loosens by at
most this factor there)."""


def rate_shares(cap: int, monotone: bool) -> list[int]:
    """The shares `peak_layer_rates` costs for a share range [1, cap]: every one up to
    EXACT_RATE_SHARES, and above it (where the per-layer time is non-decreasing in the share,
    `monotone`) a geometric grid ending at `cap`, so a share cap of 65,536 costs hundreds of
    layers, not tens of thousands."""
    if not monotone or cap <= EXACT_RATE_SHARES:
        return list(range(1, cap + 1))
    shares = list(range(1, EXACT_RATE_SHARES + 1))
    while shares[-1] < cap:
        shares.append(min(cap, max(shares[-1] + 1, math.floor(shares[-1] * RATE_SHARE_GRID))))
    return shares


def peak_layer_rates(state: SearchState) -> dict[str, float]:
    """rho*_g per node group: the most sequence-layers per second one of its GPUs can advance in
    any stage of the space, single-type or mixed (any_plan_floor). A replica of TP degree t with
    s sequences of the micro-batch takes at least its per-layer forward + backward time (TP
    communication included) per layer and micro-batch, and a stage's time is at least every one
    of its replicas' (a mixed stage's is its slowest part's), so rho*_g is the best
    s / (t x that time) over the group's TP degrees, shares s in [1, min(max_micro_batch_share,
    global batch)] and recomputation modes.

    Above EXACT_RATE_SHARES the shares are a grid s_0 < s_1 < ... (`rate_shares`): the
    analytical per-layer time f(s) is non-decreasing in s (each of its terms is: GEMMs at an
    efficiency rising with the rows, the attention core, bytes over HBM bandwidth, TP
    collectives, the kernel launches, and the max of them; tests/test_set_up_bounds.py checks it),
    so a share s in (s_k, s_k+1] advances at most s_k+1 / (t f(s_k)), which is what is taken.
    A device covered by a measured profile (interpolated, extrapolated, clamped: no such
    guarantee) keeps every share."""
    inst, cm = state.instance, state.cost_model
    cap = min(inst.training.max_micro_batch_share, inst.training.global_batch_size)
    rates = {}
    for g in inst.cluster.node_groups:
        profiled = cm.profile is not None and cm.profile.has_device(g.device)
        shares = rate_shares(cap, monotone=not profiled)
        best = 0.0
        for tp in tp_candidates(inst, g):
            for recompute in inst.training.recompute:
                for k, share in enumerate(shares):
                    if best == math.inf:
                        break
                    lc = cm.layer_cost(g.device, tp, share, recompute)
                    per_layer = lc.fwd_s + lc.bwd_s + lc.tp_fwd_s + lc.tp_bwd_s
                    # Up to the next costed share (every share between is no faster per layer).
                    reach = shares[k + 1] - 1 if k + 1 < len(shares) and share >= \
                        EXACT_RATE_SHARES else share
                    if per_layer <= 0.0:  # a profile extrapolated to nothing: no bound
                        best = math.inf
                        break
                    best = max(best, reach / (tp * per_layer))
        rates[g.name] = best
    return rates


def any_plan_floor(state: SearchState) -> float:
    """A lower bound on the iteration time of every plan of the space, mixed-type stages
    included, that needs no stage configuration built (Sec. 4.1 without the configurations):
    every plan pushes L x B sequence-layers through the cluster, whose GPUs advance at most
    rho*_g each (peak_layer_rates), so T >= L B / sum_g G_g rho*_g. Cached on the state."""
    if state.any_plan_floor_s is None:
        inst = state.instance
        rates = peak_layer_rates(state)
        rate = sum(g.num_gpus * rates[g.name] for g in inst.cluster.node_groups)
        state.any_plan_floor_s = (inst.model.num_layers * inst.training.global_batch_size / rate
                                  if rate > 0 else 0.0)
    return state.any_plan_floor_s
