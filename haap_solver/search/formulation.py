"""The stage-assignment model of one sub-problem, as a backend-independent LinearProgram.

Mathematics and constraint numbers: formulations/stage-assignment.md. A sub-problem fixes the number
of stages p, the pipeline micro-batch b (so m = B / b micro-batches) and the schedule; the model
chooses one configuration and a layer count per stage.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from haap_solver.cluster import NodeGroup
from haap_solver.instance import Instance
from haap_solver.search.bounds import StaircaseEdge
from haap_solver.search.coefficients import Affine, CoefficientCache, StageCoefficients
from haap_solver.search.lp import LinearProgram
from haap_solver.search.space import (
    StageConfig,
    chain_capacity,
    chain_levels,
    config_budget_packs,
    node_patterns,
    packing_items,
    stage_configs,
)

INTERLEAVED = "interleaved-1f1b"


@dataclass(frozen=True)
class SubProblem:
    """The plans of `num_stages` stages at pipeline micro-batch `micro_batch` under `schedule`;
    with `empty_first` (`empty_last`) the first (last) stage holds no decoder layer, only the
    embedding (the LM head): formulations Sec. 1.2. Every other stage holds one layer or more."""

    num_stages: int
    micro_batch: int
    schedule: str
    empty_first: bool = False
    empty_last: bool = False

    def num_micro_batches(self, instance: Instance) -> int:
        return instance.training.global_batch_size // self.micro_batch

    def chunks(self, instance: Instance) -> int:
        """Model chunks per stage, v: `training.virtual_stages` under the interleaved schedule
        (every stage's layer count a multiple of it, Sec. 1.4), 1 otherwise."""
        return (instance.training.virtual_stages if self.schedule == INTERLEAVED else 1)

    def fill_weight(self, instance: Instance) -> float:
        """What the objective charges the fill and drain, sum_i tau_i, per second: 1, and 1/v
        under the interleaved schedule (cost model Sec. 7.1). Every bound of Sec. 4 takes the
        objective as fill_weight x max(fill, T) + steady_weight x T + tail (Sec. 1.4)."""
        return 1.0 / self.chunks(instance)

    def steady_weight(self, instance: Instance) -> float:
        """What the objective charges the bottleneck T: m - 1, and m - 1/v interleaved."""
        return self.num_micro_batches(instance) - self.fill_weight(instance)

    def schedulable(self, instance: Instance) -> bool:
        """Whether the schedule admits plans of this shape: the interleaved schedule needs at
        least 2 stages, m a multiple of p, L a multiple of v (every stage's layers are), and no
        empty end stage (Sec. 1.4; the validator's rules, cost model Sec. 7.1)."""
        if self.schedule != INTERLEAVED:
            return True
        p = self.num_stages
        return (p >= 2 and self.num_micro_batches(instance) % p == 0 and not self.empty_ends
                and instance.model.num_layers % self.chunks(instance) == 0)

    @property
    def empty_ends(self) -> int:
        """How many end stages hold no decoder layer (0, 1 or 2)."""
        return int(self.empty_first) + int(self.empty_last)

    def is_empty(self, index: int) -> bool:
        """Whether the stage at position `index` holds no decoder layer."""
        return ((index == 0 and self.empty_first)
                or (index == self.num_stages - 1 and self.empty_last))

    def decoder(self) -> SubProblem:
        """The sub-problem of the stages that hold decoder layers, on their own (Sec. 1.2:
        its bounds, on a cost model without the embedding and the head, bound this one's)."""
        return SubProblem(self.num_stages - self.empty_ends, self.micro_batch, self.schedule)


SLOT_DOMINANCE = True
"""Whether `build_slots` applies the slot dominance of (2') (`slot_layer_floors`): off only to
check that it changes no model's optimum (tests/test_model_agreement.py)."""


@dataclass
class Slot:
    """One pipeline position: its candidate configurations with their coefficients and bounds."""

    index: int
    first: bool
    last: bool
    in_flight: int | tuple[float, float, float]
    """Micro-batches in flight at the stage's peak; under the interleaved schedule (of the stage,
    of its embedding, of its LM head), CostModel.in_flight's exact counts (Sec. 1.4)."""
    candidates: list[StageConfig]
    coeffs: list[StageCoefficients]
    max_layers: list[int]
    min_layers: list[int] | None = None
    """Per candidate, the fewest layers worth giving it here (None: one unit each): fewer fit
    a candidate of the slot that is no worse in anything but memory (`slot_layer_floors`)."""


@dataclass
class StageModel:
    """The built model and the variable indices needed to read a solution back."""

    sub: SubProblem
    slots: list[Slot]
    lp: LinearProgram
    x: list[list[int]] = field(default_factory=list)
    y: list[list[int]] = field(default_factory=list)
    """Layer counts, in units of `chunks` layers (v under the interleaved schedule)."""
    chunks: int = 1

    def extract(self, values: list[float]) -> tuple[list[StageConfig], list[int]]:
        """Map a solution back to the domain: the configuration and layer count of every stage."""
        configs, layers = [], []
        unit = self.chunks
        for slot, xs, ys in zip(self.slots, self.x, self.y, strict=True):
            k = max(range(len(xs)), key=lambda j: values[xs[j]])
            configs.append(slot.candidates[k])
            layers.append(unit * round(values[ys[k]]))
        return configs, layers


def build_slots(instance: Instance, cache: CoefficientCache, sub: SubProblem,
                configs: list[StageConfig], *,
                stage_time_cap_s: float = float("inf"),
                end_configs: list[StageConfig] | None = None) -> list[Slot] | None:
    """Memory-aware initialization for one sub-problem (Sec. 2): per position, the configurations
    that hold at least one layer, with their layer bounds. None when some position has none, or the
    positions together cannot hold every layer. An empty end stage (Sec. 1.2) takes the
    configurations of `end_configs` that fit it without a layer (one recomputation mode:
    without a layer they all cost the same), with layer bound 0.

    `stage_time_cap_s` is an upper bound on every stage's time per micro-batch in any plan still
    worth finding (from the best plan so far, Sec. 4.2): layer counts whose stage time exceeds it
    are cut as well, which tightens y <= bound * x where it matters most. (It caps the stages
    that hold layers; an empty stage has no layer count to cut.) `end_configs`: the
    configurations an empty end stage may take (default: every single-type one of Sec. 1;
    SearchState.end_configs adds the mixed-type ones in a search with mixed stages and applies a
    restricted space's filter)."""
    p, b = sub.num_stages, sub.micro_batch
    m = sub.num_micro_batches(instance)
    if not sub.schedulable(instance):
        return None
    # Interleaved (Sec. 1.4): layer counts are multiples of v, memory at the exact interleaved
    # counts in flight, and the tail's overlap window is 1/v of the last backward.
    unit = sub.chunks(instance)
    window = 1.0 / unit
    slots = []
    total = 0
    # Overlapped sends (Sec. 4.2): a stage beside a link has T >= 2 c_j >= 2 pi(c), so a
    # configuration whose least link side exceeds half the cap is in no plan still worth finding.
    too_slow_to_send: set[StageConfig] = set()
    if stage_time_cap_s < float("inf") and p > 1 \
            and not instance.training.blocks_p2p(sub.schedule):
        too_slow_to_send = _too_slow_to_send(instance, cache, configs, b, stage_time_cap_s)
    dominators = (_time_dominators(instance, cache, b, configs, end_configs) if SLOT_DOMINANCE
                  else {})
    for i in range(p):
        first, last = i == 0, i == p - 1
        in_flight: int | tuple[float, float, float] = (
            cache.cm.in_flight(sub.schedule, i, p, m) if unit > 1
            else cache.in_flight(sub.schedule, p - 1 - i, p, m))
        if sub.is_empty(i):
            assert isinstance(in_flight, int)  # (no empty end stage under interleaving)
            slot = _empty_slot(instance, cache, sub, i, in_flight, end_configs, configs)
            if slot is None:
                return None
            slots.append(slot)
            continue
        cands, coeffs, bounds = [], [], []
        for c in configs:
            if c in too_slow_to_send:
                continue
            n_max = cache.max_layers(c, b, first, last, p > 1, in_flight)
            if n_max < unit:
                continue
            co = cache.coefficients(c, b, first, last, p > 1, window)
            if stage_time_cap_s < float("inf"):
                n_max = min(n_max, _layers_within(co, stage_time_cap_s, n_max))
            n_max -= n_max % unit
            if n_max >= 1:
                cands.append(c)
                coeffs.append(co)
                bounds.append(n_max)
        if not cands:
            return None
        total += max(bounds)
        keep, floors = (slot_layer_floors(cands, bounds, dominators, unit) if SLOT_DOMINANCE
                        else (list(range(len(cands))), [unit] * len(cands)))
        slots.append(Slot(i, first, last, in_flight, [cands[k] for k in keep],
                          [coeffs[k] for k in keep], [bounds[k] for k in keep], floors))
    if total < instance.model.num_layers:
        return None
    return slots


def _time_dominators(instance: Instance, cache: CoefficientCache, micro_batch: int,
                     configs: list[StageConfig], end_configs: list[StageConfig] | None
                     ) -> dict[StageConfig, list[StageConfig]]:
    """Per configuration of `configs`, the others that are no worse in anything but memory
    (`CoefficientCache.dominates_but_memory`, towards every side a neighbour may use: the node
    groups and the link keys of `configs` and `end_configs`). Once per micro-batch size and
    configuration list (the cache's memo): the exact test runs on the pairs that pass the
    vectorised necessary conditions (`CoefficientCache.may_dominate` without memory)."""
    sides = tuple(sorted({*(g.name for g in instance.cluster.node_groups),
                          *(c.link_key for c in configs),
                          *(c.link_key for c in end_configs or ())}, key=str))

    def compute() -> dict[StageConfig, list[StageConfig]]:
        by_groups: dict[tuple[str, ...], list[StageConfig]] = {}
        for c in configs:
            by_groups.setdefault(c.groups, []).append(c)
        out: dict[StageConfig, list[StageConfig]] = {}
        for same in by_groups.values():
            # (no deadline check: the relation is computed whole, once, where a model is
            # built, as the slots themselves are)
            may = cache.may_dominate(same, micro_batch, memory=False, check=_no_check)
            for j, b in enumerate(same):
                found = [same[k] for k in np.flatnonzero(may[:, j])
                         if cache.dominates_but_memory(same[k], b, micro_batch, list(sides))]
                if found:
                    out[b] = found
        return out

    # Keyed by the list's identity (the state hands out one list per micro-batch size; hashing
    # thousands of configurations at every model would cost more than the models' set-up), the
    # list kept beside the answer so that its id cannot be reused while the entry lives.
    kept, answer = cache.memoized(("slotdom", micro_batch, id(configs), sides),
                                  lambda: (configs, compute()))
    return answer if kept is configs else compute()


def _no_check() -> None:
    """A `check` for `CoefficientCache.may_dominate` that never stops it."""


def slot_layer_floors(cands: list[StageConfig], bounds: list[int],
                      dominators: dict[StageConfig, list[StageConfig]], unit: int
                      ) -> tuple[list[int], list[int]]:
    """Slot dominance (formulations Sec. 5, (2')): the candidates of one slot worth keeping, and
    the fewest layers worth giving each.

    `a` covers `b` here when both are candidates and `a` is no worse than `b` in anything but
    memory (`_time_dominators`), and not the other way round unless `a` comes first (so that
    covering has no cycle). A stage of `b` with n <= bound(a) layers can take `a` instead: it
    fits (n is within `a`'s bound at this position, memory and stage-time cap included), no
    stage, link or tail gets slower, no group gives more GPUs, and `a` fits wherever `b` sat.
    With F(b) the largest bound of the candidates covering `b`, every count n <= F(b) of `b` is
    served by such an `a` (by `a` itself where n > F(a), else, covering being transitive, by
    what covers `a`, and so on up the order), so some optimal plan gives `b` more than F(b)
    layers or none: `b` is dropped where F(b) >= bound(b), else keeps the counts above F(b)."""
    index = {c: k for k, c in enumerate(cands)}
    keep: list[int] = []
    floors: list[int] = []
    for j, c in enumerate(cands):
        floor = 0
        for a in dominators.get(c, ()):
            k = index.get(a)
            if k is None or (k > j and c in dominators.get(a, ())):
                continue  # (not here; or a tie that `c`, first, covers)
            floor = max(floor, bounds[k])
        if floor >= bounds[j]:
            continue
        keep.append(j)
        floors.append(floor + unit)
    return keep, floors


def _too_slow_to_send(instance: Instance, cache: CoefficientCache, configs: list[StageConfig],
                      micro_batch: int, cap_s: float) -> set[StageConfig]:
    """The configurations whose least link side pi(c) (bounds.link_floors: towards any node
    group or mixed group set) exceeds half the cap: 2 pi(c) > cap. Per configuration the sides
    are tried until one is within half the cap, which on most is the first (link_floors takes
    the minimum over all of them: thousands of configurations times every side with mixed
    stages, at every model)."""
    sides = sorted({*(g.name for g in instance.cluster.node_groups),
                    *(c.link_key for c in configs)}, key=str)
    limit = cap_s * (1 + 1e-12)
    return {c for c in configs
            if all(2.0 * cache.p2p_side(c, micro_batch, h) > limit for h in sides)}


def _empty_slot(instance: Instance, cache: CoefficientCache, sub: SubProblem, index: int,
                in_flight: int, end_configs: list[StageConfig] | None,
                neighbours: list[StageConfig]) -> Slot | None:
    """The slot of an end stage that holds no decoder layer (Sec. 1.2): every configuration of
    `end_configs` (default: the single-type ones) of the first allowed recomputation mode that
    fits it and that no other one dominates there (`_undominated_ends`); None if none fits. In
    the search over plans with a mixed stage, a mixed-type one here satisfies row (M) like any
    other stage's."""
    p, b = sub.num_stages, sub.micro_batch
    first, last = index == 0, index == p - 1
    mode = instance.training.recompute[0]
    pool = [c for c in stage_configs(instance, b) if cache.spread_allowed(c, b)] \
        if end_configs is None else end_configs
    fit = tuple(c for c in pool if c.recompute == mode
                and cache.holds_end_only(c, b, first, last, p > 1, in_flight))
    if not fit:
        return None
    sides = tuple(sorted({*(g.name for g in instance.cluster.node_groups),
                          *(c.link_key for c in neighbours)}, key=_key_order))
    cands = _undominated_ends(cache, fit, b, first, last, p > 1, sides)
    return Slot(index, first, last, in_flight, cands,
                [cache.coefficients(c, b, first, last, p > 1) for c in cands], [0] * len(cands))


def _undominated_ends(cache: CoefficientCache, fit: tuple[StageConfig, ...], micro_batch: int,
                      first: bool, last: bool, multi_stage: bool,
                      sides: tuple[str | tuple[str, ...], ...]) -> list[StageConfig]:
    """The configurations of an empty end slot (all fitting it) that no other one dominates there
    (ties: the first kept): `a` dominates `c` when it has the same link key (so a neighbour's link
    towards either costs the same, and row (M) counts both alike), no more GPUs in any node group
    and fits where `c` sat (`CoefficientCache.fits_in_footprint`), no larger time at n = 0 (stage,
    forward, backward, tail), and no slower point-to-point side towards any of `sides`: swapping
    `c` for `a` in a plan keeps it valid and no slower. With mixed stages a head-only slot of
    gpt3-2.7b-a100-40gx8-v100x8 at b = 128 has 187 fitting candidates, 58 undominated (Sec. 1.2).
    Cached."""
    key = ("enddom", fit, micro_batch, first, last, multi_stage, sides)
    return cache.memoized(key, lambda: _undominated(cache, fit, micro_batch, first, last,
                                                    multi_stage, sides))


def _undominated(cache: CoefficientCache, fit: tuple[StageConfig, ...], micro_batch: int,
                 first: bool, last: bool, multi_stage: bool,
                 sides: tuple[str | tuple[str, ...], ...]) -> list[StageConfig]:
    """`_undominated_ends`, uncached."""

    def feats(c: StageConfig) -> tuple[float, ...]:
        co = cache.coefficients(c, micro_batch, first, last, multi_stage)
        return (co.tau(0), co.fwd(0), co.bwd(0), co.tail(0),
                *(cache.p2p_side(c, micro_batch, h) for h in sides))

    values = {c: feats(c) for c in fit}

    def dominates(a: StageConfig, c: StageConfig) -> bool:
        return (a.link_key == c.link_key
                and all(a.gpus_in(g) <= c.gpus_in(g)
                        and cache.fits_in_footprint(a, c, g, micro_batch) for g in c.groups)
                and all(x <= y * (1 + 1e-12) + 1e-15
                        for x, y in zip(values[a], values[c], strict=True)))

    kept: list[StageConfig] = []
    for c in fit:
        if any(dominates(a, c) for a in kept):
            continue
        kept = [a for a in kept if not dominates(c, a)]
        kept.append(c)
    return kept


def _layers_within(co: StageCoefficients, cap_s: float, n_max: int) -> int:
    """Largest n <= n_max with stage time tau(n) <= cap (tau is non-decreasing in n); 0 if none."""
    if co.tau(1) > cap_s * (1 + 1e-12):
        return 0
    lo, hi = 1, n_max
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if co.tau(mid) <= cap_s * (1 + 1e-12):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _key_order(key: str | tuple[str, ...]) -> tuple[str, ...]:
    return (key,) if isinstance(key, str) else key


def _active_pieces(pieces: tuple[Affine, ...], n_max: int) -> list[Affine]:
    """The pieces whose maximum on [1, n_max] is the max of all: a piece lying below another one
    at both ends lies below it on the whole range (both affine) and is dropped, as are repeats.
    With n_max = 0 (an empty end stage, Sec. 1.2) the one value at n = 0."""
    if n_max == 0:
        return [Affine(slope=0.0, intercept=max(a.at(0) for a in pieces))]
    out: list[Affine] = []
    for k, a in enumerate(pieces):
        if any((b.at(1) >= a.at(1) and b.at(n_max) >= a.at(n_max))
               and (j < k or b.at(1) > a.at(1) or b.at(n_max) > a.at(n_max))
               for j, b in enumerate(pieces) if j != k):
            continue
        out.append(a)
    return out


def _add_packing_rows(lp: LinearProgram, group: NodeGroup, slots: list[Slot],
                      xs: list[list[int]]) -> None:
    """Rows (4a)-(4c) of formulations Sec. 1.3 for node group `group`, only where a candidate
    sits on part of a node with a size the budget (4) alone does not pack (3 GPUs of a 4-GPU
    node): y_P integer nodes of each node pattern P (multiset of pattern sizes, sum <= q_g),
    (4a) every pattern item on a pattern slot of its size, (4b) patterns on at most N_g nodes,
    (4c) for every level t the chain items of size >= t within what the pattern nodes leave
    (t floor(free_P / t) each) and the empty nodes (t floor(q_g / t) each)."""
    uses = [(x, c) for s, row in zip(slots, xs, strict=True)
            for x, c in zip(row, s.candidates, strict=True) if c.gpus_in(group.name)]
    if all(config_budget_packs(c, group) for _, c in uses):
        return
    items = [(x, packing_items(c, group)) for x, c in uses]
    sizes = sorted({size for _, (pattern, _) in items for size in pattern})
    q, nodes = group.gpus_per_node, group.num_nodes
    patterns = node_patterns(sizes, q)
    ys = [lp.var(f"nodes[{group.name},{'+'.join(map(str, pat))}]", 0, nodes, integer=True)
          for pat in patterns]
    for size in sizes:  # (4a)
        row = {x: float(pattern.count(size)) for x, (pattern, _) in items if size in pattern}
        for y, pat in zip(ys, patterns, strict=True):
            row[y] = -float(pat.count(size))
        lp.add(row, "<=", 0, f"pattern[{group.name},{size}]")
    lp.add({y: 1.0 for y in ys}, "<=", nodes, f"pattern_nodes[{group.name}]")  # (4b)
    for t in chain_levels(q):  # (4c)
        row = {x: float(sum(u for u in chain if u >= t)) for x, (_, chain) in items}
        for y, pat in zip(ys, patterns, strict=True):
            row[y] = float(chain_capacity(q, t) - chain_capacity(q - sum(pat), t))
        lp.add(row, "<=", nodes * chain_capacity(q, t), f"chain[{group.name},{t}]")


def add_tail_cuts(sm: StageModel, edges: list[StaircaseEdge]) -> int:
    """(R') redundant: `D tail + K T >= D (r + (K / D) t)` for each edge (t, r, slope) of
    `bounds.staircase_cuts`, the lower convex hull of the least tail R_min(T) that the
    positional LP allows at bottleneck T (Sec. 4.5 and 5). Every integer point of the model is
    a plan whose stages take at most T and whose tails at most `tail`, which the positional LP
    relaxes, so `tail >= R_min(T)` holds there and so does every cut (under a cutoff, for the
    plans costing at most the cutoff: their bottleneck is within the stage-time cap of Sec.
    4.2 that the staircase was walked to). The relaxation, which mixes configurations,
    otherwise takes a tail far below what any plan at that bottleneck needs.

    The slope K / D is the edge's rounded up to a multiple of 1/TAIL_CUT_DENOMINATOR (the
    least such, with the smallest power-of-two D), pivoted on the edge's left corner: valid
    while it is no steeper than the edge before (StaircaseEdge; else the edge is left out),
    and integer coefficients on time variables, as CP-SAT needs. The row defines `tail`, so
    CP-SAT's rounding bound (scaling.py) counts it. Edges steeper than TAIL_CUT_STEEPEST times
    the objective's total weight on time variables are left out: such a row would reach far
    beyond the objective itself, coarsening CP-SAT's unit (MAX_EXPRESSION), and the
    relaxation takes the far end of so steep an edge anyway. Returns the rows added."""
    lp = sm.lp
    names = {v.name: i for i, v in enumerate(lp.vars) if v.name in ("T", "tail")}
    if not edges or "T" not in names or "tail" not in names:
        return 0
    tail, bottleneck = names["tail"], names["T"]
    weight = sum(abs(w) for i, w in lp.objective.items() if lp.vars[i].time)
    added = 0
    denominators = [2 ** j for j in range(TAIL_CUT_DENOMINATOR.bit_length())]
    for edge in edges:
        # The least slope >= the edge's with denominator D (the smallest D giving it: they
        # nest, 1/2 being 2/4): the rounding can only weaken the row.
        k, d = min(((math.ceil(edge.slope * d * (1 - 1e-12)), d) for d in denominators),
                   key=lambda kd: (kd[0] / kd[1], kd[1]))
        if k / d > edge.steeper or k / d > TAIL_CUT_STEEPEST * weight:
            continue
        rhs = d * (edge.r + k / d * edge.t)
        # (A hair below the hull, so that a plan on a corner is never cut by rounding.)
        lp.add({tail: float(d), bottleneck: float(k)} if k else {tail: float(d)}, ">=",
               rhs - TAIL_CUT_MARGIN * abs(rhs), f"tail_staircase[{added}]", time=True,
               active_weight=0.0, defines=tail)
        added += 1
    return added


TAIL_CUT_STEEPEST = 8.0
"""Steepest cut slope of `add_tail_cuts`, in units of the objective's total weight on time
variables. At 1 it left out the first edge (slope 54 against a weight of 51) of the (7, 32)
sub-problem of gpt3-6.7b-a100x128-v100x256-a10x128-4gpu, and its model went unproven for 15 s
in each backend (0.7 s in HiGHS with it)."""

TAIL_CUT_DENOMINATOR = 16
"""Largest denominator of a cut's slope (`add_tail_cuts`)."""

TAIL_CUT_MARGIN = 1e-12
"""Share of its right-hand side by which each cut of `add_tail_cuts` is relaxed: its corners
are floating-point sums (a few ulps), far above HiGHS's tolerances in its units, far below
anything the search compares."""


def build_model(instance: Instance, cache: CoefficientCache, sub: SubProblem, slots: list[Slot], *,
                time_upper_bound_s: float, load_balance_floor_s: float = 0.0,
                objective_cutoff_s: float | None = None,
                require_mixed: bool = False) -> StageModel:
    """Constraints (1)-(10) of formulations/stage-assignment.md for one sub-problem; with
    `require_mixed` also (M): some stage is a mixed-type one (Sec. 1.1). Under the interleaved
    schedule, (11)-(13) of Sec. 1.4 replace (3), (6)/(6b), (9) and (10)."""
    # Data.
    L = instance.model.num_layers
    p = sub.num_stages
    m = sub.num_micro_batches(instance)
    v = sub.chunks(instance)  # y counts layers in units of v (11): n_i = v y_i
    groups = {g.name: g for g in instance.cluster.node_groups}
    ub = time_upper_bound_s
    lp = LinearProgram()
    sm = StageModel(sub=sub, slots=slots, lp=lp, chunks=v)
    max_y = max(max(s.max_layers) for s in slots) // v
    weight = max_y + 1.0  # one config active per stage: its layer count and its binary

    # Model: choice variables.
    for s in slots:
        sm.x.append([lp.binary(f"x[{s.index},{c.label()}]") for c in s.candidates])
        sm.y.append([lp.var(f"y[{s.index},{c.label()}]", 0, n // v, integer=True)
                     for c, n in zip(s.candidates, s.max_layers, strict=True)])
    # (1) one configuration per stage.
    for s, xs in zip(slots, sm.x, strict=True):
        lp.add({x: 1 for x in xs}, "==", 1, f"one_config[{s.index}]")
    # (2) memory-aware layer bounds: y <= maxL(c, i) x, and every stage holds >= 1 layer but
    # an empty end stage (Sec. 1.2), whose layer count is 0 (its bound maxL is 0).
    # (2') slot dominance: fewer layers than min_layers fit a candidate no worse but in memory.
    for s, xs, ys in zip(slots, sm.x, sm.y, strict=True):
        lows = s.min_layers or [v] * len(xs)
        for x, y, n, low in zip(xs, ys, s.max_layers, lows, strict=True):
            lp.add({y: 1, x: -(n // v)}, "<=", 0, f"mem[{s.index}]")
            if not sub.is_empty(s.index):
                lp.add({y: 1, x: -(low // v)}, ">=", 0, f"min_layer[{s.index}]")
    # (3) every layer exactly once ((11): v layers a unit).
    lp.add({y: float(v) for ys in sm.y for y in ys}, "==", L, "layers")
    # (4) GPU budget of every node group.
    for gname, g in groups.items():
        # A mixed stage counts each replica group's GPUs in its own node group's row.
        row = {x: float(c.gpus_in(gname)) for s, xs in zip(slots, sm.x, strict=True)
               for x, c in zip(xs, s.candidates, strict=True) if c.gpus_in(gname)}
        if row:
            lp.add(row, "<=", g.num_gpus, f"budget[{gname}]")
        _add_packing_rows(lp, g, slots, sm.x)

    def epigraph(var: int, s: Slot, xs: list[int], ys: list[int], attr: str, name: str) -> None:
        """var >= max of the chosen configuration's pieces `attr`, at its layer count."""
        # (5) per configuration: the convex hull of its epigraph over x in {0, 1} (perspective
        # of the max of its pieces, y in [x, U x]); a configuration with one piece that matters on
        # [1, U] goes straight into the slot's row.
        total: dict[int, float] = {var: 1.0}
        for j, (x, y, co, n_all) in enumerate(zip(xs, ys, s.coeffs, s.max_layers, strict=True)):
            n_max = n_all // v  # in units of v layers (11): a piece's slope per unit is v x it
            pieces = _active_pieces(tuple(Affine(a.slope * v, a.intercept)
                                          for a in getattr(co, attr)), n_max) if v > 1 \
                else _active_pieces(getattr(co, attr), n_max)
            if len(pieces) == 1:
                total[x] = -pieces[0].intercept
                total[y] = -pieces[0].slope
                continue
            own = lp.var(f"{name}[{s.index},{j}]", 0, ub, time=True)
            total[own] = -1.0
            for k, a in enumerate(pieces):
                lp.add({own: 1.0, x: -a.intercept, y: -a.slope}, ">=", 0.0,
                       f"{name}[{s.index},{j},{k}]", time=True, active_weight=n_max + 1.0,
                       defines=own)
        lp.add(total, ">=", 0.0, f"{name}[{s.index}]", time=True, active_weight=weight,
               defines=var, exclusive=True)

    one_f_one_b = sub.schedule != "gpipe"
    # Blocking sends (training.pipeline_p2p): a stage's period holds its exchanges with both
    # neighbours, (6b) below, instead of (6) and (9).
    blocking = instance.training.blocks_p2p(sub.schedule)
    tail = lp.var("tail", 0, ub, time=True)
    if one_f_one_b:
        T = lp.var("T", 0, ub, time=True)
        taus = []
        for s, xs, ys in zip(slots, sm.x, sm.y, strict=True):
            tau = lp.var(f"tau[{s.index}]", 0, ub, time=True)
            taus.append(tau)
            # (5) stage time per micro-batch: epigraph of its convex pieces.
            epigraph(tau, s, xs, ys, "tau_pieces", "tau")
            # (6) bottleneck.
            if not blocking:
                lp.add({T: 1, tau: -1}, ">=", 0, f"T>=tau[{s.index}]", time=True, defines=T)
    else:
        F = lp.var("F", 0, ub, time=True)
        B = lp.var("B", 0, ub, time=True)
        fs, bs = [], []
        for s, xs, ys in zip(slots, sm.x, sm.y, strict=True):
            f = lp.var(f"f[{s.index}]", 0, ub, time=True)
            bk = lp.var(f"b[{s.index}]", 0, ub, time=True)
            fs.append(f)
            bs.append(bk)
            epigraph(f, s, xs, ys, "fwd_pieces", "f")
            epigraph(bk, s, xs, ys, "bwd_pieces", "b")
            if not blocking:
                lp.add({F: 1, f: -1}, ">=", 0, f"F>=f[{s.index}]", time=True, defines=F)
                lp.add({B: 1, bk: -1}, ">=", 0, f"B>=b[{s.index}]", time=True, defines=B)
    # (7) tail: exposed data-parallel collective plus optimizer step, slowest stage.
    for s, xs, ys in zip(slots, sm.x, sm.y, strict=True):
        epigraph(tail, s, xs, ys, "tail_pieces", "tail")
    # (8) point-to-point time of each link, both sides, for the node group on the other side.
    def link(name: str, a: Slot, a_x: list[int], b: Slot, b_x: list[int]) -> int:
        """A link variable between the stages of slots a and b, with rows (8) and (8')."""
        cj = lp.var(f"c[{name}]", 0, ub, time=True)
        for mine, my_x, other, other_x in ((a, a_x, b, b_x), (b, b_x, a, a_x)):
            # Keyed by the node group(s) of the other side: the link depends on them only.
            keys = sorted({c.link_key for c in other.candidates}, key=_key_order)
            side = {key: [cache.p2p_side(c, sub.micro_batch, key) for c in mine.candidates]
                    for key in keys}
            # pi_j(c): the least side time of c towards any candidate of the other slot.
            least = [min(vals) for vals in zip(*side.values(), strict=True)]
            for key, vals in side.items():
                # Where the other side is not on `key`, the row must allow c_j = pi_j(c) only:
                # the big-M is the largest excess of this side's time over that floor.
                big = max(val - f for val, f in zip(vals, least, strict=True))
                coeffs = {cj: 1.0}
                for x, val in zip(my_x, vals, strict=True):
                    coeffs[x] = -val
                for x, c in zip(other_x, other.candidates, strict=True):
                    if c.link_key == key:
                        coeffs[x] = coeffs.get(x, 0.0) - big
                label = key if isinstance(key, str) else "+".join(key)
                lp.add(coeffs, ">=", -big, f"p2p[{name},{label}]", time=True,
                       active_weight=2.0, defines=cj)
            # Redundant: a link takes at least this side's least time, whatever the other side
            # (no big-M, so it holds in the relaxation too).
            if len(keys) > 1:
                lp.add({cj: 1.0, **{x: -f for x, f in zip(my_x, least, strict=True)}}, ">=", 0.0,
                       f"p2p_floor[{name},{mine.index}]", time=True, active_weight=1.0,
                       defines=cj)
        return cj

    links = []
    for j in range(p - 1):
        cj = link(str(j), slots[j], sm.x[j], slots[j + 1], sm.x[j + 1])
        links.append(cj)
        # (9) overlapped sends: a link is a pipeline stage of its own in the steady state; (12)
        # interleaved, it carries v messages per micro-batch and direction.
        if blocking:
            pass
        elif one_f_one_b:
            lp.add({T: 1, cj: -2.0 * v}, ">=", 0, f"T>=2c[{j}]", time=True, defines=T)
        else:
            lp.add({F: 1, cj: -1}, ">=", 0, f"F>=c[{j}]", time=True, defines=F)
            lp.add({B: 1, cj: -1}, ">=", 0, f"B>=c[{j}]", time=True, defines=B)
    # (12) interleaved: the wrap-around link from the last stage back to the first, which
    # chunks 0..v-2 cross (v - 1 messages per micro-batch and direction); not in the fill.
    wrap = None
    if v > 1:
        wrap = link("wrap", slots[p - 1], sm.x[p - 1], slots[0], sm.x[0])
        if not blocking:
            lp.add({T: 1, wrap: -2.0 * (v - 1)}, ">=", 0, "T>=2(v-1)c_wrap", time=True,
                   defines=T)
    # (6b) blocking sends: each stage's period is its own time plus its links on both sides;
    # (12) interleaved, v times each, and the ends also the wrap-around link v - 1 times.
    if blocking:
        # (w: the waits per link and micro-batch, 2 under DeepSpeed's 1F1B: training.link_waits)
        waits = float(v * instance.training.link_waits(sub.schedule))
        for i in range(p):
            near = {links[k]: -waits for k in (i - 1, i) if 0 <= k < p - 1}
            if wrap is not None and i in (0, p - 1):
                near[wrap] = near.get(wrap, 0.0) - (v - 1)
            if one_f_one_b:
                lp.add({T: 1, taus[i]: -1, **near}, ">=", 0, f"T>=tau+c[{i}]", time=True,
                       defines=T)
            else:
                lp.add({F: 1, fs[i]: -1, **near}, ">=", 0, f"F>=f+c[{i}]", time=True, defines=F)
                lp.add({B: 1, bs[i]: -1, **near}, ">=", 0, f"B>=b+c[{i}]", time=True,
                       defines=B)
    # (10) objective: pipeline makespan plus the tail.
    if v > 1:
        # (13) (1/v) sum_i tau_i + (m - 1/v) T = fill + (m - 1) T with v fill >= sum_i tau_i +
        # (v - 1) T: integer weights on time variables, as CP-SAT needs.
        fill = lp.var("fill", 0, (p + v) * ub, time=True)
        lp.add({fill: float(v), **{tau: -1.0 for tau in taus}, T: -(v - 1.0)}, ">=", 0.0,
               "fill", time=True, active_weight=0.0, defines=fill)
        lp.objective = {fill: 1.0, T: float(m - 1)}
    elif one_f_one_b:
        lp.objective = {tau: 1.0 for tau in taus}
        lp.objective[T] = float(m - 1)
    else:
        lp.objective = {var: 1.0 for var in (*fs, *bs)}
        lp.objective[F] = float(m - 1)
        lp.objective[B] = float(m - 1)
    for cj in links:
        lp.objective[cj] = 2.0
    lp.objective[tail] = 1.0
    # Redundant: the load-balance lower bound on the bottleneck (Sec. 4), to tighten relaxations.
    if load_balance_floor_s > 0:
        if one_f_one_b:
            lp.add({T: 1}, ">=", load_balance_floor_s, "redundant_load_balance", time=True,
                   active_weight=0.0, defines=T)
        else:  # max_i (f_i + b_i) <= F + B
            lp.add({F: 1, B: 1}, ">=", load_balance_floor_s, "redundant_load_balance",
                   time=True)
    # (M) once the single-type space is proven, only plans with a mixed-type stage are left.
    if require_mixed:
        lp.add({x: 1 for s, xs in zip(slots, sm.x, strict=True)
                for x, c in zip(xs, s.candidates, strict=True) if c.mixed},
               ">=", 1, "some_mixed_stage")
    lp.objective_cutoff = objective_cutoff_s
    return sm
