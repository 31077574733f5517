"""Growth repair: a repaired plan put to work on the GPUs it leaves idle.

`repair.repaired_plan` only keeps or shrinks the running plan, so GPUs the cluster gained (a
node group grew, a node group arrived, a slowed node recovered, or GPUs a shrunk stage gave up)
stay idle in the Planner's incumbent, and its cutoff prunes little: on the 1,024-GPU trace,
when 16 H100 nodes arrived, the 2 s re-plan kept the old plan, 1.24x the cold plan's time.
`grown_plan` improves the plan's stage sequence by a local search over moves that take idle
GPUs:

- *widen* a stage on its own node group (more replicas or a larger TP degree);
- *move* a stage to a node group with idle GPUs (freeing its GPUs for the next round);
- *insert* a stage on a node group with idle GPUs, anywhere in the pipeline.

Every move of a round is screened by a cheap estimate, the pipeline's time at its least
common bottleneck split (`Screen`), and the best few are costed with their exact optimal
layer split (`dp.best_layer_split`); the best move that lowers the time is kept, round after
round, until none does or the deadline passes. The micro-batch size and the schedule stay the
plan's. Only configurations of the search space are used (single-type, on one node or on whole
nodes, neither spread nor uneven: `space.stage_configs`), and every stage keeps a layer, so the
grown plan lies in the space and its time bounds the space's optimum from above, like the
repair's (1F1B and GPipe plans: `repair.EXACT_SPLIT_SCHEDULES`). The plan returned is placed
the canonical way and costed by evaluate(), which validates it.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from itertools import pairwise

import numpy as np

from haap_solver.cost.evaluate import Evaluation
from haap_solver.costing import evaluate
from haap_solver.errors import HaapError
from haap_solver.plan import Plan
from haap_solver.search.coefficients import pieces_max
from haap_solver.search.dp import best_layer_split
from haap_solver.search.repair import EXACT_SPLIT_SCHEDULES, plan_configs
from haap_solver.search.space import StageConfig, build_plan, canonical_placement, stage_configs
from haap_solver.search.state import SearchState

EXACT_PER_ROUND = 3
"""How many of a round's best-screened moves get the exact layer split."""

MAX_ROUNDS = 32
"""Rounds of the local search at most (each keeps one move)."""


def idle_gpus(state: SearchState, configs: list[StageConfig]) -> dict[str, int]:
    """GPUs per node group that the stage sequence `configs` leaves idle."""
    used: Counter[str] = Counter()
    for c in configs:
        for g in c.groups:
            used[g] += c.gpus_in(g)
    return {g.name: g.num_gpus - used[g.name] for g in state.instance.cluster.node_groups}


def grown_plan(state: SearchState, plan: Plan, ev: Evaluation, *,
               deadline: float = math.inf) -> tuple[Plan, Evaluation] | None:
    """`plan` (a plan of `state`'s instance in the search space) with idle GPUs put to use
    (module docstring), and its evaluation; None where no move makes it faster, or it leaves
    no GPU idle. `deadline`: a time.perf_counter() value after which no round starts."""
    instance = state.instance
    b, schedule = plan.micro_batch_size, plan.schedule
    if schedule not in EXACT_SPLIT_SCHEDULES:
        return None
    configs = plan_configs(instance, plan)
    if configs is None:
        return None
    if not any(n > 0 for n in idle_gpus(state, configs).values()):
        return None
    # Per node group, its configurations of the space; per (group, TP, recompute) the widest
    # first, so that a move takes the most replicas that fit (more GPUs of one kind on one
    # stage only run it faster).
    space: dict[str, list[StageConfig]] = {}
    for c in stage_configs(instance, b):
        if not (c.spread or c.uneven or c.mixed):
            space.setdefault(c.node_group, []).append(c)
    for cs in space.values():
        cs.sort(key=lambda c: (c.tp, c.recompute, -c.dp))
    screen = Screen(state, b, schedule)
    best_t = ev.iteration_time_s
    best_layers: list[int] | None = None
    for _ in range(MAX_ROUNDS):
        if time.perf_counter() >= deadline:
            break
        idle = idle_gpus(state, configs)
        screened: list[tuple[float, int, list[StageConfig]]] = []
        seen: set[tuple[StageConfig, ...]] = set()
        for k, candidate in enumerate(_moves(configs, idle, space)):
            if k % 64 == 63 and screened and time.perf_counter() >= deadline:
                break  # (the moves screened so far: a round at 1,024 GPUs screens some 400)
            if len(candidate) > instance.model.num_layers or tuple(candidate) in seen:
                continue
            seen.add(tuple(candidate))
            est = screen.estimate(candidate)
            if math.isfinite(est):
                screened.append((est, k, candidate))
        screened.sort(key=lambda x: (x[0], x[1]))
        round_best: tuple[float, list[StageConfig], list[int]] | None = None
        exact = 0
        for _est, _k, candidate in screened:
            # (the best-screened move is costed even past the deadline: one split)
            if exact >= EXACT_PER_ROUND or (exact and time.perf_counter() >= deadline):
                break
            if canonical_placement(instance, candidate) is None:
                continue  # (fits by count, not by nodes)
            exact += 1
            split = best_layer_split(instance, state.cache, candidate, b, schedule)
            if split is not None and (round_best is None or split[1] < round_best[0]):
                round_best = (split[1], candidate, split[0])
        if round_best is None or round_best[0] >= best_t * (1 - 1e-12):
            break
        best_t, configs, best_layers = round_best[0], round_best[1], round_best[2]
    if best_layers is None:
        return None
    grown = build_plan(instance, configs, best_layers, micro_batch=b, schedule=schedule,
                       note=f"{plan.note} (grown)" if plan.note else "grown")
    if grown is None:
        return None
    try:
        got = evaluate(instance, grown)
    except HaapError:
        return None
    return (grown, got) if got.iteration_time_s < ev.iteration_time_s * (1 - 1e-12) else None


def _moves(configs: list[StageConfig], idle: dict[str, int],
           space: dict[str, list[StageConfig]]) -> list[list[StageConfig]]:
    """The stage sequences one move away from `configs` that fit the idle GPUs by count: a
    stage widened on its group or moved to a group with idle GPUs (for each TP degree and
    recomputation, the most replicas that fit), or a stage inserted on such a group."""
    out: list[list[StageConfig]] = []
    roomy = [g for g, n in idle.items() if n > 0]
    for i, c in enumerate(configs):
        if c.mixed:
            continue
        for g in roomy:
            room = idle[g] + (c.gpus if g == c.node_group else 0)
            for c2 in widest(space.get(g, []), room):
                if c2 == c or (g == c.node_group and c2.gpus <= c.gpus):
                    continue
                out.append([*configs[:i], c2, *configs[i + 1:]])
    for g in roomy:
        for c2 in widest(space.get(g, []), idle[g]):
            for j in range(len(configs) + 1):
                out.append([*configs[:j], c2, *configs[j:]])
    return out


def widest(configs: list[StageConfig], room: int) -> list[StageConfig]:
    """Of `configs` (sorted by TP, recomputation, then replicas widest first), per TP degree
    and recomputation the one with the most replicas within `room` GPUs."""
    out: list[StageConfig] = []
    seen: set[tuple[int, str]] = set()
    for c in configs:
        key = (c.tp, c.recompute)
        if key in seen or c.gpus > room:
            continue
        seen.add(key)
        out.append(c)
    return out


class Screen:
    """A cheap estimate of a stage sequence's time, to rank moves: at the least common
    bottleneck T at which the stages' layer limits (time and memory at their position, as
    `heuristic.layer_split` takes them) hold every layer, with each stage holding the layers
    it can at T, the 1F1B time: the sum of the stage times and of the links both ways, m - 1
    times the larger of T and twice the slowest link, and the largest data-parallel tail (which
    decides between few wide stages and more narrow ones on small clusters). Without the links
    it ranked a re-shape that halves a stage's send (TP 2 x 8 replicas for TP 4 x 4 on 4-GPU
    nodes) behind moves that do not help (polish.py). The per-stage tables and the links are
    kept, keyed by what they depend on; a few tens of microseconds of numpy a sequence (a move
    round at 1,024 GPUs screens some 400)."""

    def __init__(self, state: SearchState, micro_batch: int, schedule: str):
        self.cache, self.b, self.schedule = state.cache, micro_batch, schedule
        self.layers = state.instance.model.num_layers
        self.m = state.instance.training.global_batch_size // micro_batch
        self.tables: dict[tuple[StageConfig, bool, bool, bool, int],
                          tuple[np.ndarray, np.ndarray]] = {}
        self.in_flight: dict[tuple[int, int], int] = {}
        self.links: dict[tuple[StageConfig, StageConfig], float] = {}

    def link(self, a: StageConfig, c: StageConfig) -> float:
        """The send time between neighbouring stages a and c per micro-batch and direction
        (the slower side, as `dp.best_layer_split` takes it)."""
        got = self.links.get((a, c))
        if got is None:
            got = self.links[(a, c)] = max(self.cache.p2p_side(a, self.b, c.link_key),
                                           self.cache.p2p_side(c, self.b, a.link_key))
        return got

    def table(self, c: StageConfig, i: int, p: int) -> tuple[np.ndarray, np.ndarray]:
        """Stage times (running maximum) and tails at 1..L layers, inf beyond what memory
        holds, of `c` as stage i of p."""
        first, last = i == 0, i == p - 1
        in_flight = self.in_flight.get((i, p))
        if in_flight is None:
            in_flight = self.in_flight[(i, p)] = self.cache.in_flight(self.schedule, p - 1 - i,
                                                                      p, self.m)
        key = (c, first, last, p > 1, in_flight)  # (what the time and memory depend on)
        got = self.tables.get(key)
        if got is None:
            limit = min(self.cache.max_layers(c, self.b, first, last, p > 1, in_flight),
                        self.layers)
            co = self.cache.coefficients(c, self.b, first, last, p > 1)
            taus, tails = np.full(self.layers, math.inf), np.full(self.layers, math.inf)
            if limit >= 1:
                n = np.arange(1, limit + 1, dtype=float)
                taus[:limit] = np.maximum.accumulate(pieces_max(co.tau_pieces, n))
                tails[:limit] = pieces_max(co.tail_pieces, n)
            got = self.tables[key] = (taus, tails)
        return got

    def estimate(self, configs: list[StageConfig]) -> float:
        """The estimate (inf where memory cannot hold the layers)."""
        p = len(configs)
        rows = [self.table(c, i, p) for i, c in enumerate(configs)]
        taus = np.stack([r[0] for r in rows])
        # The least T at which the stages hold L layers in all is the L-th smallest entry (each
        # row is non-decreasing), and at least the largest one-layer time (each holds one).
        t = max(float(taus[:, 0].max()),
                float(np.partition(taus.ravel(), self.layers - 1)[self.layers - 1]))
        if not math.isfinite(t):
            return math.inf
        held = (taus <= t).sum(axis=1) - 1  # (index of the layers each stage holds at T)
        at = np.arange(p)
        tails = np.stack([r[1] for r in rows])
        links = [self.link(a, c) for a, c in pairwise(configs)]
        return self.pipeline(taus[at, held].sum(), t, links, tails[at, held].max())

    def pipeline(self, stage_sum: float, t: float, links: list[float], tail: float) -> float:
        """The estimate from its parts: the stages' times at their layers (summed), the
        bottleneck T, the links, and the largest tail."""
        return float(stage_sum + 2 * sum(links) + (self.m - 1) * max(t, 2 * max(links, default=0.0))
                     + tail)

    def estimate_reshapes(self, configs: list[StageConfig], i: int,
                          candidates: list[StageConfig]) -> list[float]:
        """`estimate` of `configs` with stage i on each of `candidates` in turn (the same
        numbers, 1e-12 apart at most), with what the other stages give computed once: a round
        of polish.py at 16,384 GPUs re-shapes each of 14 stages some 260 ways, and the
        estimate's per-stage look-ups were most of its second."""
        p, big_l = len(configs), self.layers
        fixed = [self.table(c, j, p) for j, c in enumerate(configs) if j != i]
        f_taus = np.stack([f[0] for f in fixed]) if fixed else np.empty((0, big_l))
        f_tails = np.stack([f[1] for f in fixed]) if fixed else np.empty((0, big_l))
        f_flat = f_taus.ravel()
        f_one = float(f_taus[:, 0].max()) if fixed else -math.inf
        at = np.arange(len(fixed))
        left = configs[i - 1] if i > 0 else None
        right = configs[i + 1] if i < p - 1 else None
        kept = [self.link(a, c) for j, (a, c) in enumerate(pairwise(configs))
                if j not in (i - 1, i)]
        out: list[float] = []
        for c in candidates:
            taus, tails = self.table(c, i, p)
            t = max(f_one, float(taus[0]), float(np.partition(
                np.concatenate((f_flat, taus)), big_l - 1)[big_l - 1]))
            if not math.isfinite(t):
                out.append(math.inf)
                continue
            held = (f_taus <= t).sum(axis=1) - 1
            own = int((taus <= t).sum()) - 1
            links = kept + ([self.link(left, c)] if left is not None else []) \
                + ([self.link(c, right)] if right is not None else [])
            tail = max(float(f_tails[at, held].max()) if fixed else -math.inf,
                       float(tails[own]))
            out.append(self.pipeline(float(f_taus[at, held].sum() + taus[own]), t, links, tail))
        return out
