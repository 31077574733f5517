"""Polish: a local search around the incumbent, between the search's sub-problems.

The models prove, but at the first passes' budgets (0.5-2 s) they find few plans on clusters of
many small nodes: on gpt3-2.7b-a100x32-v100x96-4gpu the search held a 4.655 s plan for its
30 s (gap 10.7%), while two moves away (one stage's 16 A100 re-shaped from 4 replicas at TP 4
to 8 at TP 2, then the micro-batch halved) lay a 4.411 s plan its models reached only after
75 s. A plan found early shrinks every model still to come (Sec. 4.2) and closes sub-problems
on their bounds, so the incumbent is worth a fraction of a second whenever it improves.

Moves, each round from the current stage sequence (micro-batch size and schedule the plan's):

- *reshape*: stage i takes another configuration of the micro-batch size's searched space
  (`SearchState.configs`: memory-fitting, undominated, the target's filter, mixed ones where
  the space has them) whose GPUs fit, by count, in what the other stages leave: another TP and
  data-parallel shape on the same GPUs, a wider or narrower one, another node group;
- *split*: a single-type stage's GPUs (and its node group's idle ones) into two stages there
  (the widest per TP degree and recomputation on at most half of them, then the widest so in
  what it leaves, in either order);
- *merge*: two neighbouring stages of one node group into one (the widest per TP degree and
  recomputation in their GPUs and the idle ones);
- *insert*: a stage on GPUs the sequence leaves idle (per node group, TP degree and
  recomputation, the widest that fits), anywhere, up to the stage-count cap;
- *drop*: stage i leaves, its layers going to the others;
- *reorder*: the same stages in another order: every distinct order of the sequence's
  configurations where there are at most REORDER_ALL_MAX of them, else one stage moved to
  another position (two neighbours trading places among them). The order decides each stage's
  micro-batches in flight (memory), which stage holds the embedding and the LM head, the links
  between node groups and the tail's overlap window, and the models' first plans on many small
  nodes often hold the optimum's stages in another order: on
  gpt3-6.7b-a100x128-v100x256-a10x128-4gpu the first plan of the sub-problem of the optimum (8
  stages: two A100, two A10 and four V100 ones) was 1.0% slower than the optimum, one of its 420
  orders, which the screen ranks first; neighbour swaps, each having to improve, did not reach
  it;
- *micro-batch*: the same sequence at another micro-batch size, where every configuration is
  one of the space there.

Every move is screened by `growth.Screen` (the pipeline's time at its least common bottleneck
split; tens of microseconds), the best few are costed with their exact optimal layer split
(`dp.best_layer_split`), and the best that lowers the time is kept, round after round, until
none does or the deadline passes. Moves only bring in configurations of the searched space
(a stage no move touches keeps its own: a baseline seed's may lie outside the space), so from
a plan of the space it returns one of the space, whose time bounds the space's optimum from
above like any incumbent. The plan is placed the canonical way and costed by evaluate(), which
validates it. It proves nothing: the bound stays the search's.
1F1B and GPipe plans whose stages all hold layers only (`repair.EXACT_SPLIT_SCHEDULES`; the
interleaved schedule's split follows its chunks, and an empty end stage has no split).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

from haap_solver.cost.evaluate import Evaluation
from haap_solver.errors import HaapError
from haap_solver.plan import Plan
from haap_solver.search.dp import best_layer_split
from haap_solver.search.growth import Screen, idle_gpus, widest
from haap_solver.search.repair import EXACT_SPLIT_SCHEDULES, plan_configs
from haap_solver.search.space import StageConfig, build_plan, canonical_placement
from haap_solver.search.state import SearchState

EXACT_PER_ROUND = 8
"""How many of a round's best-screened moves get the exact split."""

REORDER_ALL_MAX = 2000
"""The reorder move tries every distinct order of the sequence's configurations where there are
at most this many (8 stages of three kinds, 2 + 2 + 4: 420; screening takes about 25 us an
order), else each stage moved to each other position (p (p - 1) orders at most)."""

MAX_ROUNDS = 32
"""Rounds at most (each keeps one move)."""

Sequence = tuple[StageConfig, ...]


class Polish:
    """The local search of the module docstring for one search state; `max_stages` caps the
    stage count (the search's cap), `deadline` (a time.perf_counter() value) ends it between
    exact costings."""

    def __init__(self, state: SearchState, *, max_stages: int, deadline: float):
        self.state, self.instance = state, state.instance
        self.max_stages, self.deadline = max_stages, deadline
        self.screens: dict[tuple[int, str], Screen] = {}
        self.space_sets: dict[int, frozenset[StageConfig]] = {}
        self.costed = 0
        """Exact layer splits computed."""

    def run(self, plan: Plan, ev: Evaluation) -> tuple[Plan, Evaluation] | None:
        """A faster plan than `plan` (whose evaluation is `ev`) a few moves away, with its
        evaluation; None where no move found one (or the plan is not one it can move)."""
        instance = self.instance
        if plan.schedule not in EXACT_SPLIT_SCHEDULES \
                or any(s.num_layers == 0 for s in plan.stages):
            return None
        configs = plan_configs(instance, plan)
        if configs is None:
            return None
        best_t, b = ev.iteration_time_s, plan.micro_batch_size
        seq: Sequence = tuple(configs)
        layers: list[int] | None = None
        for _ in range(MAX_ROUNDS):
            if time.perf_counter() >= self.deadline:
                break
            found = self.best_move(seq, b, plan.schedule, best_t)
            if found is None:
                break
            best_t, seq, b, layers = found
        if layers is None:
            return None
        better = build_plan(instance, list(seq), layers, micro_batch=b, schedule=plan.schedule,
                            note=f"{plan.note} (polished)" if plan.note else "polished")
        if better is None:
            return None
        try:
            got = self.state.cost_model.evaluate(better)
        except HaapError:
            return None
        return (better, got) if got.iteration_time_s < ev.iteration_time_s * (1 - 1e-12) \
            else None

    def best_move(self, seq: Sequence, b: int, schedule: str,
                  best_t: float) -> tuple[float, Sequence, int, list[int]] | None:
        """The round's best move below `best_t`: (time, sequence, micro-batch, layers). The
        moves at `b` and the sequence at the other micro-batch sizes are screened together,
        and the best EXACT_PER_ROUND of them get the exact split."""
        screened: list[tuple[float, int, Sequence, int]] = []
        for size in self.sizes(seq, b):
            screened.extend((est, k, cand, size) for est, k, cand
                            in self.screened(seq, size, schedule, moves=size == b))
        screened.sort(key=lambda x: (x[0], x[3] != b, x[1]))
        found: tuple[float, Sequence, int, list[int]] | None = None
        exact = 0
        for _est, _k, cand, size in screened:
            if exact >= EXACT_PER_ROUND or time.perf_counter() >= self.deadline:
                break
            if canonical_placement(self.instance, list(cand)) is None:
                continue  # (fits by count, not by nodes)
            exact += 1
            self.costed += 1
            split = best_layer_split(self.instance, self.state.cache, list(cand), size, schedule)
            if split is not None and split[1] < best_t * (1 - 1e-12) \
                    and (found is None or split[1] < found[0]):
                found = (split[1], cand, size, split[0])
        return found

    def screened(self, seq: Sequence, size: int, schedule: str, *,
                 moves: bool) -> list[tuple[float, int, Sequence]]:
        """The moves from `seq` (with `moves`; else `seq` itself) at micro-batch `size` with a
        finite estimate: (estimate, order generated, sequence)."""
        screen = self.screen(size, schedule)
        if not moves:
            est = screen.estimate(list(seq))
            return [(est, 0, seq)] if math.isfinite(est) else []
        out: list[tuple[float, int, Sequence]] = []
        for i, candidates in enumerate(self.reshapes(seq, size)):
            ests = screen.estimate_reshapes(list(seq), i, candidates)
            out.extend((est, len(out) + k, (*seq[:i], c, *seq[i + 1:]))
                       for k, (est, c) in enumerate(zip(ests, candidates, strict=True))
                       if math.isfinite(est))
        seen: set[Sequence] = set()
        for k, cand in enumerate(self.other_moves(seq, size)):
            if k % 64 == 63 and time.perf_counter() >= self.deadline:
                break
            if cand in seen:
                continue
            seen.add(cand)
            est = screen.estimate(list(cand))
            if math.isfinite(est):
                out.append((est, len(out), cand))
        return out

    def sizes(self, seq: Sequence, b: int) -> list[int]:
        """`b` first, then the other micro-batch sizes whose space holds every stage of `seq`."""
        out = [b]
        for size in self.state.micro_batches():
            if size != b and all(c in self.space_set(size) for c in seq):
                out.append(size)
        return out

    def space_set(self, size: int) -> frozenset[StageConfig]:
        got = self.space_sets.get(size)
        if got is None:
            got = self.space_sets[size] = frozenset(self.state.configs(size))
        return got

    def screen(self, size: int, schedule: str) -> Screen:
        got = self.screens.get((size, schedule))
        if got is None:
            got = self.screens[(size, schedule)] = Screen(self.state, size, schedule)
        return got

    def reshapes(self, seq: Sequence, b: int) -> list[list[StageConfig]]:
        """Per stage, the other configurations of the space it may take: within its GPUs and
        the idle ones, by count."""
        idle, space = idle_gpus(self.state, list(seq)), self.state.configs(b)
        out = []
        for c in seq:
            room = {name: n + c.gpus_in(name) for name, n in idle.items()}
            out.append([c2 for c2 in space if c2 != c
                        and all(c2.gpus_in(name) <= room[name] for name in c2.groups)])
        return out

    def other_moves(self, seq: Sequence, b: int) -> Iterator[Sequence]:
        """The sequences one split, merge, insert, drop or reorder away from `seq` that fit
        the node groups' GPUs by count (module docstring)."""
        idle, space = idle_gpus(self.state, list(seq)), self.state.configs(b)
        # Per node group its single-type configurations, per TP degree and recomputation the
        # widest first (`widest`).
        own = {g.name: sorted((c for c in space if c.groups == (g.name,)),
                              key=lambda c: (c.tp, c.recompute, -c.dp))
               for g in self.instance.cluster.node_groups}
        more = len(seq) < min(self.max_stages, self.instance.model.num_layers)
        if more:
            yield from _splits(seq, idle, own)
        yield from _merges(seq, idle, own)
        if more:
            yield from _inserts(seq, idle, own)
        yield from _drops(seq)
        yield from _reorders(seq)


def _splits(seq: Sequence, idle: dict[str, int],
            own: dict[str, list[StageConfig]]) -> Iterator[Sequence]:
    """A single-type stage's GPUs (and its group's idle ones) as two stages there: one the
    widest per TP degree and recomputation on at most half of them, the other the widest so
    in what it leaves, in either order."""
    for i, c in enumerate(seq):
        if c.mixed:
            continue
        room = idle[c.node_group] + c.gpus
        for c1 in widest(own[c.node_group], room // 2):
            for c2 in widest(own[c.node_group], room - c1.gpus):
                yield (*seq[:i], c1, c2, *seq[i + 1:])
                yield (*seq[:i], c2, c1, *seq[i + 1:])


def _merges(seq: Sequence, idle: dict[str, int],
            own: dict[str, list[StageConfig]]) -> Iterator[Sequence]:
    """Two neighbouring single-type stages of one node group as one (the widest per TP degree
    and recomputation in their GPUs and the idle ones)."""
    for i in range(len(seq) - 1):
        c, d = seq[i], seq[i + 1]
        if c.mixed or d.mixed or c.node_group != d.node_group:
            continue
        for c2 in widest(own[c.node_group], idle[c.node_group] + c.gpus + d.gpus):
            yield (*seq[:i], c2, *seq[i + 2:])


def _inserts(seq: Sequence, idle: dict[str, int],
             own: dict[str, list[StageConfig]]) -> Iterator[Sequence]:
    """A stage on a node group's idle GPUs (the widest per TP degree and recomputation),
    anywhere in the pipeline."""
    for name, cs in own.items():
        for c2 in widest(cs, idle[name]):
            for j in range(len(seq) + 1):
                yield (*seq[:j], c2, *seq[j:])


def _drops(seq: Sequence) -> Iterator[Sequence]:
    """A stage left out (its layers to the others)."""
    if len(seq) > 1:
        for i in range(len(seq)):
            yield (*seq[:i], *seq[i + 1:])


def _reorders(seq: Sequence) -> Iterator[Sequence]:
    """The same stages in another order: every distinct order where there are at most
    REORDER_ALL_MAX, else each stage moved to each other position."""
    kinds = sorted(set(seq), key=seq.index)
    code = [kinds.index(c) for c in seq]
    if _distinct_orders(code) <= REORDER_ALL_MAX:
        for order in _multiset_orders(code):
            if order != code:
                yield tuple(kinds[k] for k in order)
        return
    p = len(seq)
    for i in range(p):
        rest = (*seq[:i], *seq[i + 1:])
        for j in range(p):  # (a repeat is screened once: Polish.screened)
            if j != i:
                yield (*rest[:j], seq[i], *rest[j:])


def _distinct_orders(code: list[int]) -> int:
    """How many distinct orders the multiset `code` has: p! / prod(multiplicity!)."""
    count = math.factorial(len(code))
    for k in set(code):
        count //= math.factorial(code.count(k))
    return count


def _multiset_orders(code: list[int]) -> Iterator[list[int]]:
    """Every distinct order of the multiset `code`, each once (lexicographic: the next
    permutation of the sorted list, Knuth's Algorithm L)."""
    a = sorted(code)
    n = len(a)
    while True:
        yield list(a)
        i = n - 2
        while i >= 0 and a[i] >= a[i + 1]:
            i -= 1
        if i < 0:
            return
        j = n - 1
        while a[j] <= a[i]:
            j -= 1
        a[i], a[j] = a[j], a[i]
        a[i + 1:] = reversed(a[i + 1:])
