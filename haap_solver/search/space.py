"""The search space: stage configurations, micro-batch sizes, canonical placement, plan assembly.

A *stage configuration* is (node group, TP, DP, recomputation). The search only uses
node-aligned shapes (formulations/stage-assignment.md, Sec. 1): TP is a power of two dividing the
node size, and a stage's GPU count tp x dp is either below the node size (a *sub-node* stage,
placed on one node) or a multiple of the node size (a *whole-node* stage, one node of any size
included).
Where every sub-node size is a power of two dividing the node size, first-fit decreasing packs any
selection whose GPU count fits a node group's budget, so the budget is the only placement
constraint the solver needs; other sub-node sizes (3 GPUs of 4) get the exact packing rows of
Sec. 1.3, and `canonical_placement` then packs exactly. Either way every cost term that depends
on placement (is the data-parallel ring inside one node?) is a function of the configuration
alone.

A *mixed* stage configuration (formulations Sec. 1.1) combines replica groups (`ReplicaPart`), one
on each of two or more node groups, or on small clusters two on one node group
(`SAME_GROUP_MAX_GPUS`); its parts' replicas are chain items of their TP degree (Sec. 1.3), so
they pack wherever the budget holds, but for a stage of one node group on one node
(`StageConfig.packed_whole`), one item of its GPUs.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

import numpy as np

from haap_solver.cluster import NodeGroup
from haap_solver.instance import Instance
from haap_solver.parallelism import divisors, tp_candidates
from haap_solver.plan import Placement, Plan, ReplicaGroup, Stage
from haap_solver.training import Recompute, Schedule

_T = TypeVar("_T")


class _Cached:
    """Frozen-dataclass helpers for the configurations: their hash computed once (they key every
    cache of the search; at 1,024 GPUs hashing their fields anew took 5% of the search over plans
    with a mixed stage) and left out of pickles (string hashes differ between processes); their
    derived counts are `_once` attributes."""

    def _cached_hash(self) -> int:
        value = self.__dict__.get("_hash")
        if value is None:
            fields = self.__dataclass_fields__  # type: ignore[attr-defined]
            value = hash(tuple(getattr(self, name) for name in fields))
            self.__dict__["_hash"] = value
        return value  # type: ignore[no-any-return]

    def __getstate__(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}


class _once(Generic[_T]):
    """functools.cached_property without its lock (Python < 3.12 takes one on every first
    access): computed at the first access and kept in the instance's __dict__, where later
    lookups find it before this descriptor."""

    def __init__(self, fn: Callable[[Any], _T]):
        self.fn, self.name = fn, fn.__name__
        self.__doc__ = fn.__doc__

    def __get__(self, instance: Any, owner: type | None = None) -> _T:
        if instance is None:
            return self  # type: ignore[return-value]
        value = self.fn(instance)
        instance.__dict__[self.name] = value
        return value


@dataclass(frozen=True, order=True)
class ReplicaPart(_Cached):
    """One replica group of a mixed stage: `count` replicas of TP `tp` on one node group, each
    taking `share` sequences of the micro-batch. Its GPU count is node-aligned in its group."""

    node_group: str
    device: str
    tp: int
    count: int
    share: int
    gpus_per_node: int

    __hash__ = _Cached._cached_hash  # (in the class body, or dataclass writes its own)

    @_once
    def gpus(self) -> int:
        return self.tp * self.count

    @property
    def single_node(self) -> bool:
        return self.gpus <= self.gpus_per_node

    def label(self) -> str:
        return f"{self.node_group}:tp{self.tp}x{self.count}@{self.share}"


@dataclass(frozen=True, order=True)
class StageConfig(_Cached):
    """How one stage is run: on which node group, with which TP and DP, and what it recomputes.

    A *mixed* stage (``parts`` not empty) combines replica groups of several node groups, each
    with its own TP degree and per-replica share of the micro-batch, or of two TP degrees on one
    node group (formulations Sec. 1.1); then
    `node_group` and `device` are '+'-joined labels, `dp` is the total replica count and `tp`,
    `gpus_per_node` are 0: use `parts`, `groups` and `gpus_in`.
    """

    node_group: str
    device: str
    tp: int
    dp: int
    recompute: Recompute
    gpus_per_node: int
    parts: tuple[ReplicaPart, ...] = ()
    spread: bool = False
    """A single-type stage of at most a node whose replicas sit on two nodes or more (its
    data-parallel ring over the network), filling holes the stages on one node leave
    (formulations Sec. 1.3, `spread_allowed`). False: on one node, or larger than a node. The
    same for a mixed stage of one node group (`packed_whole`, Sec. 1.1)."""
    uneven: bool = False
    """A single-type stage whose `dp` replicas do not divide the micro-batch evenly: b mod dp
    of them take ceil(b / dp) sequences and the others floor(b / dp), written as two replica
    groups of the node group (formulations Sec. 1, *Uneven shares*). The fastest split of
    b over dp replicas of one TP degree on one node group, so no other split of it is needed."""

    __hash__ = _Cached._cached_hash  # (in the class body, or dataclass writes its own)

    @property
    def mixed(self) -> bool:
        return bool(self.parts)

    @_once
    def gpus(self) -> int:
        if self.parts:
            return sum(p.gpus for p in self.parts)
        return self.tp * self.dp

    @_once
    def groups(self) -> tuple[str, ...]:
        """The node groups the stage uses (sorted for a mixed stage)."""
        if self.parts:
            return tuple(sorted({p.node_group for p in self.parts}))
        return (self.node_group,)

    @property
    def link_key(self) -> str | tuple[str, ...]:
        """What a neighbour's point-to-point time towards this stage depends on: its node group,
        or the node-group set of a mixed stage (cost model Sec. 6.2)."""
        return self.groups if self.parts else self.node_group

    def gpus_in(self, group: str) -> int:
        """GPUs the stage uses in node group `group`."""
        if self.parts:
            return sum(p.gpus for p in self.parts if p.node_group == group)
        return self.gpus if group == self.node_group else 0

    @property
    def single_node(self) -> bool:
        return not self.parts and not self.spread and self.gpus <= self.gpus_per_node

    @_once
    def one_group(self) -> bool:
        """A stage of several replica groups all on one node group (two TP degrees there,
        Sec. 1.1, `SAME_GROUP_MAX_GPUS`)."""
        return bool(self.parts) and len({p.node_group for p in self.parts}) == 1

    @_once
    def packed_whole(self) -> bool:
        """A one-group stage (`one_group`) of at most a node that sits on one node, its ring
        inside it: one packing item of its GPU count, like a single-type stage of that size
        (its `spread` twin's replicas go anywhere, Sec. 1.1)."""
        return self.one_group and not self.spread and \
            self.gpus <= self.parts[0].gpus_per_node

    def replica_parts(self, micro_batch: int) -> tuple[ReplicaPart, ...]:
        """The stage's replica groups (one for a single-type stage)."""
        if self.parts:
            return self.parts
        low, more = divmod(micro_batch, self.dp)
        if self.uneven and more:
            return (ReplicaPart(node_group=self.node_group, device=self.device, tp=self.tp,
                                count=more, share=low + 1, gpus_per_node=self.gpus_per_node),
                    ReplicaPart(node_group=self.node_group, device=self.device, tp=self.tp,
                                count=self.dp - more, share=low,
                                gpus_per_node=self.gpus_per_node))
        return (ReplicaPart(node_group=self.node_group, device=self.device, tp=self.tp,
                            count=self.dp, share=low, gpus_per_node=self.gpus_per_node),)

    def label(self) -> str:
        if self.parts:
            spread = ":spread" if self.spread else ""
            return "+".join(p.label() for p in self.parts) + f"{spread}:{self.recompute}"
        spread = ":spread" if self.spread else ""
        uneven = ":uneven" if self.uneven else ""
        return f"{self.node_group}:tp{self.tp}xdp{self.dp}{spread}{uneven}:{self.recompute}"


def split_placement(placement: tuple[Placement, ...],
                    counts: tuple[int, ...]) -> tuple[tuple[Placement, ...], ...]:
    """One replica group's placement cut into consecutive replica groups of `counts` replicas
    (an uneven stage's two groups, `StageConfig.uneven`): replicas taken node by node in order,
    so together they sit exactly where the whole group sat."""
    out: list[tuple[Placement, ...]] = []
    slots = [(pl.node, pl.replicas) for pl in placement]
    k = 0
    for want in counts:
        mine: list[Placement] = []
        while want:
            node, left = slots[k]
            take = min(left, want)
            mine.append(Placement(node=node, replicas=take))
            want -= take
            if take == left:
                k += 1
            else:
                slots[k] = (node, left - take)
        out.append(tuple(mine))
    return tuple(out)


def mixed_config(parts: tuple[ReplicaPart, ...], recompute: Recompute, *,
                 spread: bool = False) -> StageConfig:
    """The StageConfig of a mixed stage made of `parts` (`spread`: a one-group stage of at most
    a node whose replicas may sit on several nodes, `StageConfig.packed_whole`)."""
    return StageConfig(node_group="+".join(p.node_group for p in parts),
                       device="+".join(p.device for p in parts), tp=0,
                       dp=sum(p.count for p in parts), recompute=recompute, gpus_per_node=0,
                       parts=parts, spread=spread)


MIXED_MAX_PART_NODES = 2
"""Most whole nodes one part of a mixed stage takes in the *cut* mixed space (formulations Sec.
1.1), the one used at a micro-batch size whose full mixed space has more than
MIXED_FULL_SKELETONS skeletons. The space is cut here for cluster scale: parts of up to every
node of their group would multiply the mixed skeletons 79-fold on gpt3-175b-4types-x1024
(787,002 instead of 9,972 with one node; 18,276 with two) and 2,700-fold on
llama3-405b-6types-x16384 (38.4 M; 14,190; 26,130)."""

MIXED_FULL_CANDIDATES = 200
"""Largest number of *full* mixed candidates (`full_mixed_count`: skeleton and batch split, before
memory and recomputation) at one micro-batch size for which the search takes the full mixed
space there (formulations Sec. 1.1: one part on each of two or more node groups of any device
types, any part size, every batch split); above it that size gets the cut space (two node
groups of different device types, power-of-two or whole-node parts of at most
MIXED_MAX_PART_NODES nodes, the one balanced fastest split). Every random small instance of
the agreement tests stays under it; the 8-64 GPU instances take it at their small micro-batch
sizes only (their mixed set-up costs about 1-2 ms a candidate, plus dominance)."""


MIXED_FULL_SMALL_GPUS = 6
"""Clusters of at most this many GPUs take the full mixed space at a micro-batch size of up to
MIXED_FULL_CANDIDATES_SMALL candidates instead of MIXED_FULL_CANDIDATES (`mixed_full_budget`).
Over random_instance seeds 7000-7399 (the agreement tests' generator, 2-10 GPUs), 12 of 400
have a size above 200 candidates: 11 of them on 5 or 6 GPUs (at most 347), one on 8 (643,
whose optimum the cut space held). At 8 GPUs the wider space costs more than it paid here:
llama3.2-1b-h100x4-l40sx4 (sizes 16 and 32, 320 and 278 candidates) 4.0 -> 7.3 s CPU to the
same proven optimum."""

MIXED_FULL_CANDIDATES_SMALL = 1000
"""The full mixed space's budget on clusters of at most MIXED_FULL_SMALL_GPUS GPUs. With 200 there,
a valid plan beat the search's "optimum" on 2 of 80 random instances (gap_probe --gap random,
seeds 7100-7179, 2026-12-02): seed 7138 by 1.29x (5 GPUs, b = 10, 298 candidates: a stage of
three replica groups with shares 3, 3 and 1), seed 7170 by 1.10x (5 GPUs, b = 12, 208
candidates), both at a size the cut space took; with 1,000 the search finds both plans (seed
7138: 0.6 -> 2.0 s CPU)."""


def mixed_full_budget(instance: Instance) -> int:
    """The most full mixed candidates at one micro-batch size for which the search takes the full
    mixed space there (Sec. 1.1): MIXED_FULL_CANDIDATES_SMALL on small clusters, else
    MIXED_FULL_CANDIDATES."""
    if instance.cluster.num_gpus <= MIXED_FULL_SMALL_GPUS:
        return MIXED_FULL_CANDIDATES_SMALL
    return MIXED_FULL_CANDIDATES


def full_mixed_count(instance: Instance, micro_batch: int, *,
                     stop_above: float = math.inf) -> int:
    """Candidates of the full mixed space at `micro_batch` before memory and recomputation
    (`_full_mixed_shapes` with every split of each), counted without building them: one part on
    each of two or more distinct node groups, part j `count_j` replicas of a TP degree t_j of
    its group (`t_j count_j` at most the group's GPUs) taking `share_j` sequences each
    (1 <= share_j <= max_micro_batch_share), `sum_j count_j share_j` = the micro-batch. The
    count only grows with each node group taken in, so once it passes `stop_above` that partial
    count is returned (all a budget test needs: at 16,384 GPUs the full count took 0.14 s over
    the micro-batch sizes)."""
    b = micro_batch
    cap = instance.training.max_micro_batch_share
    # Above FFT_COUNT_ABOVE sequences (a large share cap lets b reach the global batch) the
    # O(b^2) convolutions are done by FFT on counts saturated just above `stop_above`: with
    # non-negative terms, a result computed from saturated inputs lies between min(true count,
    # limit) and the true count, so it passes `stop_above` exactly when the true count does,
    # and with entries that small the FFT's rounding error stays far below 1/2 (rounded off).
    limit = stop_above + 1.0 if b > FFT_COUNT_ABOVE and math.isfinite(stop_above) else None
    # ways[k][n]: part choices over the groups seen so far, k = min(parts, 2), n sequences in
    # all (floats: exact below 2**53, and far above the budget they only need to stay above it).
    ways = np.zeros((3, b + 1))
    ways[0, 0] = 1.0
    for g in instance.cluster.node_groups:
        opts = np.zeros(b + 1)
        for tp in tp_candidates(instance, g):
            for count in range(1, min(b, part_replicas_max(g, tp)) + 1):
                opts[count: min(b, count * cap) + 1: count] += 1.0
        new = ways.copy()
        new[1] += opts  # (ways[0] is one way to take nothing: its convolution is `opts`)
        for k in (1, 2):
            new[2] += (np.convolve(ways[k], opts)[: b + 1] if limit is None
                       else _fft_convolve(ways[k], opts, b + 1))
        ways = new if limit is None else np.minimum(new, limit)
        if ways[2, b] > stop_above:
            break
    return round(float(ways[2, b]))


FFT_COUNT_ABOVE = 4096
"""Micro-batch size above which `full_mixed_count` convolves by FFT (saturated counts): below,
np.convolve's O(b^2) is milliseconds; at a global batch of 2^20 with a share cap of 65,536 on
two 8-GPU nodes it did not end in a minute of `haap solve --time-limit 2`."""


def _fft_convolve(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """The first `n` terms of the convolution of two non-negative integer-valued vectors, by
    FFT, rounded to integers (the callers keep the entries small enough for that to be
    exact: `full_mixed_count`)."""
    size = 1 << (len(a) + len(b) - 1).bit_length()
    out = np.fft.irfft(np.fft.rfft(a, size) * np.fft.rfft(b, size), size)[:n]
    return np.rint(np.maximum(out, 0.0))


def mixed_space_full(instance: Instance, micro_batch: int) -> bool:
    """Whether the search takes the full mixed space at `micro_batch` (Sec. 1.1): its candidates
    are at most `mixed_full_budget`. Memoized per instance object (`_FULL_SPACE`): the set-up,
    the coefficient cache and the result's summary all ask it, and at a micro-batch of 2^20 one
    count takes a second."""
    known = _FULL_SPACE.get(id(instance))
    if known is None or known[0] is not instance:
        if len(_FULL_SPACE) >= 64:
            _FULL_SPACE.clear()
        known = _FULL_SPACE[id(instance)] = (instance, {})
    answers = known[1]
    if micro_batch not in answers:
        budget = mixed_full_budget(instance)
        answers[micro_batch] = full_mixed_count(instance, micro_batch,
                                                stop_above=budget) <= budget
    return answers[micro_batch]


_FULL_SPACE: dict[int, tuple[Instance, dict[int, bool]]] = {}
"""`mixed_space_full`'s answers by instance identity (the instance is kept with them, so an id
is never reused while its entry lives)."""


def mixed_space_summary(instance: Instance) -> dict[str, object]:
    """Which micro-batch sizes got the full mixed space and which the cut one (Sec. 1.1), for a
    result's search_space: a proof covers the cut space only at the sizes listed as cut."""
    sizes = micro_batch_candidates(instance)
    cut = [b for b in sizes if not mixed_space_full(instance, b)]
    return {"full_micro_batches": [b for b in sizes if b not in cut],
            "cut_micro_batches": cut, "full_candidates_budget": mixed_full_budget(instance)}


def mixed_shapes(instance: Instance, micro_batch: int) -> list[tuple[tuple[str, int, int], ...]]:
    """Replica-group skeletons ((node group, tp, count) per part) of mixed stages at micro-batch
    `micro_batch` (formulations Sec. 1.1): the full space's where it is small enough
    (`mixed_space_full`), else the cut space's."""
    groups = instance.cluster.node_groups
    fewest = -(-micro_batch // instance.training.max_micro_batch_share)
    if (len(groups) < 2 and not same_group_searched(instance)) \
            or fewest > instance.cluster.num_gpus:
        # (No mixed stage: one node group, where two replica groups on one node group are not
        # searched (SAME_GROUP_MAX_GPUS); or more replicas than GPUs. Decided before the budget
        # test, whose count takes O(b^2) at micro-batch b: a global batch of 16,384 on one
        # node kept `haap solve --time-limit 2` busy for a minute before the search.)
        return []
    if mixed_space_full(instance, micro_batch):
        return _full_mixed_shapes(instance, micro_batch)
    return _cut_mixed_shapes(instance, micro_batch)


def _full_mixed_shapes(instance: Instance,
                       micro_batch: int) -> list[tuple[tuple[str, int, int], ...]]:
    """The full space's skeletons (Sec. 1.1): one part on each of two or more distinct node
    groups (of any device types), any replica count whose GPUs the group has, at least one and
    at most max_micro_batch_share sequences per replica possible."""
    b = micro_batch
    lo = -(-b // instance.training.max_micro_batch_share)
    groups = instance.cluster.node_groups
    # (A part's TP degree is any of its group's: its replicas are chain items, or pattern items
    # for TP 3, and a degree not dividing the node leaves holes; the packing rows of Sec. 1.3
    # see them.)
    per_group = [[(g.name, tp, count) for tp in tp_candidates(instance, g)
                  for count in range(1, min(b, part_replicas_max(g, tp)) + 1)] for g in groups]
    out: list[tuple[tuple[str, int, int], ...]] = []
    # (At most b parts, each of at least one replica; the product is walked with its running
    # replica count, so that no branch past b is entered: in the order of itertools.product,
    # without its cost. Over every subset of 24 one-GPU node groups it took a minute.)
    for k in range(2, min(len(groups), b) + 1):
        for chosen in itertools.combinations(range(len(groups)), k):
            out.extend(_parts_within(tuple(per_group[i] for i in chosen), lo, b))
    if same_group_space(instance, micro_batch):
        out.extend(_same_group_shapes(instance, micro_batch, per_group))
    return out


def _parts_within(options: tuple[list[tuple[str, int, int]], ...], lo: int, hi: int
                  ) -> list[tuple[tuple[str, int, int], ...]]:
    """The elements of itertools.product(*options), in its order, whose replica counts (the
    third field) add up to between `lo` and `hi`; branches past `hi` are not entered."""
    out: list[tuple[tuple[str, int, int], ...]] = []
    chosen: list[tuple[str, int, int]] = []

    def walk(i: int, total: int) -> None:
        if i == len(options):
            if total >= lo:
                out.append(tuple(chosen))
            return
        rest = len(options) - i - 1  # (each later part takes at least one replica)
        for part in options[i]:
            if total + part[2] + rest <= hi:
                chosen.append(part)
                walk(i + 1, total + part[2])
                chosen.pop()

    walk(0, 0)
    return out


SAME_GROUP_MAX_GPUS = 10
"""Largest cluster (GPUs) on which the full mixed space (Sec. 1.1) also holds stages with two
replica groups on one node group (`_same_group_shapes`): two TP degrees there (a stage of that
group alone, e.g. one TP-2 and two TP-1 replicas on a 4-GPU node), or two TP degrees or two
shares there beside one replica group on another node group (at most SAME_GROUP_MAX_PARTS replica
groups); at each micro-batch size also capped by SAME_GROUP_CANDIDATES. Above it such stages stay
outside the space (`search/outside.py` lists them). The size of the random instances of the
agreement tests and of benchmarks/gap_probe.py (at most 10 GPUs). They pay there: on 120 of
gap_probe --gap same_group a valid plan with one beat the search's optimum on 9 (by up to
1.71x), on none with them; --gap fast_nic 5 -> 4 of 100 (the 4 left: empty end stages of
several replica groups, Sec. 1.2, in the space since). Larger clusters lose proofs to them:
their candidates make sub-problem models larger than a dive solves (tuning.DIVE_FULL_MAX_VARS),
which then stay
open (`haap solve --threads 1 --time-limit 60`, before -> after, idle host): at 12 GPUs
llama3.2-1b-rtx4090-a10 proven in 11.1 s -> unproven at 15.0 s (bound 13.504 s against
13.621 s; 1,105 -> 1,420 mixed candidates); at 16 GPUs tests/data/multi-node-mixed-part.toml
proven in 8.8 s -> unproven at 7.8 s (1,707 -> 2,331). At 10 GPUs and below: llama3.2-1b-
h100x4-l40sx4 4.4 -> 4.1 s CPU (1,004 -> 1,154), small/toy-gpt-6l-a100x2-t4x2 1.2 -> 1.6 s
(192 -> 330), the same proven optima."""

SAME_GROUP_MAX_PARTS = 3
"""The most replica groups of a stage with two on one node group (`_same_group_shapes`): the
validator's space of the brute force (`VALIDATOR_MAX_PARTS`) has the same limit."""


SAME_GROUP_CANDIDATES = 200
"""Largest number of candidates with two replica groups on one node group (`same_group_count`:
skeleton and split, before memory and recomputation) at one micro-batch size for which the full
mixed space there holds them (Sec. 1.1). The micro-batch sizes of every plan that beat the
search before (gap_probe same_group 9 seeds, tp 1, fast_nic 1) have at most 176, so none is
beaten under this cap either; larger sizes (up to 1,065 on the gap_probe instances, thousands on
the 16-GPU ones) cost more than they pay. Measured with other caps (and SAME_GROUP_MAX_GPUS at
32): without one, the micro-batch
128 of gpt3-2.7b-a100-40gx8-v100x8 alone had 12,778 (40,291 mixed candidates in all, 1,399
before) and the 60 s search no longer proved its optimum (67 s CPU, bound 7.70 s against
8.8231 s; proven in 4.7 s before); at 1,200, tests/data/multi-node-mixed-part.toml went from
1,707 to 4,593 mixed candidates and its 60 s search from proven (7.0 s CPU) to unproven (bound
0.339 s against 0.5073 s, on a loaded host)."""


def same_group_searched(instance: Instance) -> bool:
    """Whether the full mixed space may hold two replica groups on one node group
    (SAME_GROUP_MAX_GPUS; at each micro-batch size `same_group_space` decides)."""
    return instance.cluster.num_gpus <= SAME_GROUP_MAX_GPUS


def same_group_space(instance: Instance, micro_batch: int) -> bool:
    """Whether the mixed space at `micro_batch` holds stages with two replica groups on one node
    group (Sec. 1.1): a cluster of at most SAME_GROUP_MAX_GPUS GPUs, the full mixed space there
    (`mixed_space_full`), and at most SAME_GROUP_CANDIDATES such candidates."""
    return same_group_searched(instance) and mixed_space_full(instance, micro_batch) and \
        same_group_count(instance, micro_batch,
                         stop_above=SAME_GROUP_CANDIDATES) <= SAME_GROUP_CANDIDATES


def same_group_count(instance: Instance, micro_batch: int, *,
                     stop_above: float = math.inf) -> int:
    """Candidates with two replica groups on one node group at `micro_batch`: every skeleton of
    `_same_group_shapes` with every split (shares in [1, max_micro_batch_share] adding up to
    the micro-batch) that `same_group_split_ok` keeps, before memory and recomputation; once
    past `stop_above`, that partial count."""
    b = micro_batch
    cap = instance.training.max_micro_batch_share
    groups = instance.cluster.node_groups
    per_group = [[(g.name, tp, count) for tp in tp_candidates(instance, g)
                  for count in range(1, min(b, part_replicas_max(g, tp)) + 1)] for g in groups]
    seen = 0
    for shape in _same_group_shapes(instance, b, per_group):
        counts = [c for _, _, c in shape]
        for shares in share_splits(counts, b, cap):
            if _split_distinct(shape, shares):
                seen += 1
        if seen > stop_above:
            break
    return seen


def share_splits(counts: list[int], total: int, cap: int) -> list[tuple[int, ...]]:
    """Every tuple of integer shares in [1, cap] with sum(count * share) == total, in
    lexicographic order."""
    if len(counts) == 1:
        share, rest = divmod(total, counts[0])
        return [(share,)] if not rest and 1 <= share <= cap else []
    out: list[tuple[int, ...]] = []
    rest = sum(counts[1:])
    # (The other parts take at most cap * rest sequences: a smaller first share leaves them
    # more, and with a share cap near the micro-batch those branches held no split but cost
    # cap^2 steps: 65,536 shares of a 262,144-sequence micro-batch over three parts kept
    # `haap solve --time-limit 3` on four GPUs busy for minutes.)
    for s in range(max(1, -(-(total - cap * rest) // counts[0])), cap + 1):
        left = total - counts[0] * s
        if left < rest:
            break
        out.extend((s, *tail) for tail in share_splits(counts[1:], left, cap))
    return out


def _split_distinct(shape: tuple[tuple[str, int, int], ...], shares: tuple[int, ...]) -> bool:
    """`same_group_split_ok` on a skeleton and its shares."""
    for i in range(len(shape)):
        for j in range(i + 1, len(shape)):
            a, c = shape[i], shape[j]
            if a[0] != c[0]:
                continue
            if a[1] == c[1] and shares[i] == shares[j]:
                return False
            if a[1:] == c[1:] and shares[i] > shares[j]:
                return False
    return True


def _same_group_shapes(instance: Instance, micro_batch: int,
                       per_group: list[list[tuple[str, int, int]]]
                       ) -> list[tuple[tuple[str, int, int], ...]]:
    """Skeletons with two parts on one node group (Sec. 1.1, SAME_GROUP_MAX_GPUS): the pair
    alone when its TP degrees differ (with one degree it is a single-type stage, even or uneven,
    whose floor/ceiling split is the fastest, Sec. 1), or the pair beside one part of another
    group (SAME_GROUP_MAX_PARTS = 3). The pair's GPUs at most the group's; its two parts
    ordered, and `same_group_split_ok` drops the splits that are another writing of a stage."""
    b = micro_batch
    lo = -(-b // instance.training.max_micro_batch_share)
    groups = instance.cluster.node_groups
    out: list[tuple[tuple[str, int, int], ...]] = []
    for i, g in enumerate(groups):
        pairs = [(x, y) for x, y in itertools.combinations_with_replacement(per_group[i], 2)
                 if x[1] * x[2] + y[1] * y[2] <= g.num_gpus and x[2] + y[2] <= b]
        for x, y in pairs:
            if x[1] != y[1] and lo <= x[2] + y[2]:
                out.append((x, y))
            for j in range(len(groups)):
                if j == i:
                    continue
                for z in per_group[j]:
                    if lo <= x[2] + y[2] + z[2] <= b:
                        out.append((x, y, z) if i < j else (z, x, y))
    return out


def same_group_split_ok(parts: tuple[ReplicaPart, ...]) -> bool:
    """A split of a skeleton with two parts on one node group that is not another writing of a
    stage of the space: the two parts differ in TP degree or share (else they are one replica
    group of their summed count), and two parts of one TP degree and replica count come with
    the smaller share first (else the same stage in the other order)."""
    return _split_distinct(tuple((p.node_group, p.tp, p.count) for p in parts),
                           tuple(p.share for p in parts))


def _cut_mixed_shapes(instance: Instance,
                      micro_batch: int) -> list[tuple[tuple[str, int, int], ...]]:
    """The cut space's skeletons (Sec. 1.1): two node groups of different device types, each
    part's GPUs node-aligned (a power of two dividing its node size, or whole nodes, at most
    MIXED_MAX_PART_NODES), fewer replicas in all than sequences in the micro-batch (at least one
    sequence per replica, and neither part holds the whole micro-batch)."""
    groups = instance.cluster.node_groups
    per_group: list[list[tuple[str, int, int]]] = []
    for g in groups:
        opts = []
        for tp in tp_candidates(instance, g):
            most = min(g.num_gpus, MIXED_MAX_PART_NODES * g.gpus_per_node)
            for count in range(1, min(micro_batch - 1, most // tp,
                                      part_replicas_max(g, tp)) + 1):
                if mixed_part_allowed(g, tp * count):
                    opts.append((g.name, tp, count))
        per_group.append(opts)
    out: list[tuple[tuple[str, int, int], ...]] = []
    for i in range(len(groups)):
        for j in range(i + 1, len(groups)):
            if groups[i].device == groups[j].device:
                continue
            for a in per_group[i]:
                for b in per_group[j]:
                    if a[2] + b[2] <= micro_batch:
                        out.append((a, b))
    return out


def _is_pow2(n: int) -> bool:
    return n >= 1 and (n & (n - 1)) == 0


def part_replicas_max(group: NodeGroup, tp: int) -> int:
    """The most replicas of TP `tp` node group `group` holds, each TP group on one node (TP 2
    on 3-GPU nodes: one a node)."""
    return group.num_nodes * (group.gpus_per_node // tp)


def part_packs(group: NodeGroup, tp: int) -> bool:
    """A mixed stage's part of TP `tp` is chain items that the GPU budget alone packs (Sec.
    1.3's lemma): a power of two dividing the node size. Other degrees (TP 2 on 3-GPU nodes,
    TP 3) need the group's packing rows."""
    return _is_pow2(tp) and group.gpus_per_node % tp == 0


def shape_allowed(group: NodeGroup, gpus: int) -> bool:
    """Single-type stage sizes (formulations Sec. 1): any GPU count of the group. Part of one
    node (any count below the node size, 3 of a 4-GPU node included, Sec. 1.3), one whole node of
    any size (3, 6, 10 GPUs...), or more than a node, whole nodes or not (6 GPUs over 4-GPU
    nodes: its replicas spread over nodes, Sec. 1.3)."""
    return 1 <= gpus <= group.num_gpus


def mixed_part_allowed(group: NodeGroup, gpus: int) -> bool:
    """A mixed stage's part (Sec. 1.1): a power of two dividing the node size, or whole nodes
    (one or several)."""
    gpn = group.gpus_per_node
    if gpus < 1 or gpus > group.num_gpus:
        return False
    return gpus % gpn == 0 or (gpus < gpn and _is_pow2(gpus) and gpn % gpus == 0)


def budget_packs(group: NodeGroup, gpus: int, tp: int, *, spread: bool = False) -> bool:
    """A single-type stage shape (`gpus` GPUs in replicas of TP `tp`) under which the GPU budget
    alone decides placement (Sec. 1): a power of two dividing the node size, or more than a
    node in replicas whose TP degree divides the node size (chain items of a power of two
    dividing the node size: the lemma of Sec. 1.3 packs them whenever the budget holds). A
    group whose candidates have another shape (part of a node: 3 of 4 GPUs, 2 of 3; one whole
    node of a size not a power of two; replicas of TP 2 on 3-GPU nodes, which leave a GPU of
    each node to others) needs the packing rows (4a)-(4c) of Sec. 1.3. A `spread` stage of at
    most a node is chain items of its TP degree, as a larger stage is."""
    gpn = group.gpus_per_node
    if gpn % tp:
        return False
    if not _is_pow2(tp):  # (TP 3 replicas are pattern items: only whole nodes of them tile)
        return gpus % gpn == 0 and not spread
    return spread or gpus % gpn == 0 or gpus > gpn or (_is_pow2(gpus) and gpn % gpus == 0)


def config_budget_packs(c: StageConfig, group: NodeGroup) -> bool:
    """Whether `c`'s items in `group` are ones the GPU budget alone packs (Sec. 1.3): a
    single-type stage's shape (`budget_packs`), a mixed stage's parts of TP degrees
    `part_packs` takes, a one-group stage on one node (`StageConfig.packed_whole`) of a power
    of two dividing the node size."""
    if not c.mixed:
        return budget_packs(group, c.gpus, c.tp, spread=c.spread)
    if c.packed_whole:
        return _is_pow2(c.gpus) and group.gpus_per_node % c.gpus == 0
    return all(part_packs(group, p.tp) for p in c.parts if p.node_group == group.name)


def first_fit_packs(group: NodeGroup, gpus: int, tp: int) -> bool:
    """A shape that `_first_fit` places whenever the budget holds (Sec. 1): whole nodes in
    replicas whose TP degree divides the node size, or a power of two dividing the node size.
    Other shapes go to the exact packer."""
    gpn = group.gpus_per_node
    return (gpus % gpn == 0 and gpn % tp == 0) or (_is_pow2(gpus) and gpn % gpus == 0)


def packing_items(c: StageConfig, group: NodeGroup) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """How `c` occupies node group `group` in the packing rows of Sec. 1.3: (pattern item sizes,
    chain item sizes). A single-type stage of at most a node sits on one node: one *pattern*
    item of its size when that is not a power of two, else one *chain* item of its size; a
    larger stage, a spread one (`StageConfig.spread`), or a mixed stage's part, may spread its
    replicas over any nodes (its ring crosses the network): one item of its TP degree per
    replica, a chain item for a power of two, a pattern item otherwise (TP 3; a mixed part's
    too since 2026-12-02)."""
    gpn = group.gpus_per_node
    if not c.parts:
        if c.node_group != group.name:
            return (), ()
        if c.gpus <= gpn and not c.spread:
            return ((), (c.gpus,)) if _is_pow2(c.gpus) else ((c.gpus,), ())
        return ((), (c.tp,) * c.dp) if _is_pow2(c.tp) else ((c.tp,) * c.dp, ())
    mine = [p for p in c.parts if p.node_group == group.name]
    if mine and c.packed_whole:  # (on one node, as a single-type stage of its size)
        return ((), (c.gpus,)) if _is_pow2(c.gpus) else ((c.gpus,), ())
    return (tuple(p.tp for p in mine if not _is_pow2(p.tp) for _ in range(p.count)),
            tuple(p.tp for p in mine if _is_pow2(p.tp) for _ in range(p.count)))


def node_patterns(sizes: list[int], gpus_per_node: int) -> list[tuple[int, ...]]:
    """Every non-empty multiset (sorted decreasing) of the pattern sizes `sizes` whose sum fits one
    node: the node patterns of Sec. 1.3."""
    sizes = sorted(set(sizes), reverse=True)
    out: list[tuple[int, ...]] = []

    def rec(start: int, room: int, chosen: tuple[int, ...]) -> None:
        if chosen:
            out.append(chosen)
        for k in range(start, len(sizes)):
            if sizes[k] <= room:
                rec(k, room - sizes[k], (*chosen, sizes[k]))

    rec(0, gpus_per_node, ())
    return out


def chain_levels(gpus_per_node: int) -> list[int]:
    """The powers of two up to the node size: the levels t of row (4c)."""
    return [1 << k for k in range(gpus_per_node.bit_length()) if 1 << k <= gpus_per_node]


def chain_capacity(free: int, level: int) -> int:
    """GPUs of a node with `free` GPUs left that chain items of size >= `level` can use."""
    return level * (free // level)


UNEVEN_MAX_GPUS = 32
"""Largest cluster (GPUs) on which the search takes uneven shares (a single-type stage whose DP
degree does not divide the micro-batch, Sec. 1). Above it the space is *cut* there: every DP
degree divides the micro-batch. Uneven shares multiply the configurations by every DP degree in
range: on gpt3-175b-4types-x1024 19,377 -> 49,169 after pruning, and the 30 s search found no
plan at all (it had one at 16.05 s); on the 64-GPU instances the proofs took about 1.6x the
CPU for the same optima. They pay on odd micro-batch sizes of small clusters (gpt3-1.3b-t4x4-
a100x12 single-type: 4.4204 -> 4.0495 s), and no engine target runs them (every rank of an
engine takes the same micro-batch). The cut is listed in a result's outside_space."""


def uneven_searched(instance: Instance) -> bool:
    """Whether the search takes uneven shares on `instance` (UNEVEN_MAX_GPUS)."""
    return instance.cluster.num_gpus <= UNEVEN_MAX_GPUS


def stage_configs(instance: Instance, micro_batch: int) -> list[StageConfig]:
    """Every configuration a stage may take when the pipeline micro-batch is `micro_batch`."""
    t = instance.training
    out: list[StageConfig] = []
    kinds = (False, True) if uneven_searched(instance) else (False,)
    for group in instance.cluster.node_groups:
        own: list[StageConfig] = []
        for uneven in kinds:  # (the even ones first, in the order they always had)
            for tp in tp_candidates(instance, group):
                # (DP from the fewest replicas that keep each share within the limit to the
                # most the group holds, TP 2 on 3-GPU nodes one a node; at most one per
                # sequence. The divisors alone where even: the global batch may be 2^20.)
                lo = -(-micro_batch // t.max_micro_batch_share)
                hi = min(micro_batch, group.num_nodes * (group.gpus_per_node // tp))
                dps = [d for d in divisors(micro_batch) if lo <= d <= hi] if not uneven \
                    else [d for d in range(lo, hi + 1) if micro_batch % d]
                for dp in dps:
                    if not shape_allowed(group, tp * dp):
                        continue
                    for rc in t.recompute:
                        own.append(StageConfig(node_group=group.name, device=group.device,
                                               tp=tp, dp=dp, recompute=rc,
                                               gpus_per_node=group.gpus_per_node,
                                               uneven=uneven))
        out.extend(own)
        if spread_useful(group, own):
            out.extend(replace(c, spread=True)
                       for c in own if c.dp >= 2 and c.gpus <= group.gpus_per_node)
    return out


def spread_useful(group: NodeGroup, configs: list[StageConfig]) -> bool:
    """Whether `group`'s single-type configurations `configs` (of one micro-batch) get spread
    twins (Sec. 1.3): only where the group has two nodes or more and some size needs the
    packing rows. Elsewhere every selection within the budget packs with each stage of at most
    a node on one node, and there its ring is no slower than over the network (the search
    keeps a spread twin only where it is, `CoefficientCache.spread_allowed`), so the twin on
    one node is as fast and as easy to place."""
    # (Also where a mixed part of the group may take a TP degree the budget does not pack,
    # which brings the packing rows too, Sec. 1.1.)
    return group.num_nodes >= 2 and any(not budget_packs(group, c.gpus, c.tp)
                                        or not part_packs(group, c.tp) for c in configs)


def micro_batch_candidates(instance: Instance) -> list[int]:
    """Pipeline micro-batch sizes b: divisors of the global batch for which some stage fits b,
    single-type or mixed (a mixed stage may take a micro-batch no single-type stage can: 6 + 2
    sequences where no node group has four replicas of two)."""
    big = instance.training.global_batch_size
    return [b for b in divisors(big)
            if (stage_configs(instance, b) or mixed_shapes(instance, b))]


def canonical_placement(instance: Instance, configs: list[StageConfig]
                        ) -> list[tuple[tuple[Placement, ...], ...]] | None:
    """Place stages on nodes: whole-node replica groups on fresh nodes, then sub-node ones
    first-fit decreasing, per node group. Returns per stage the placement of each of its replica
    groups (one for a single-type stage), or None if a node group's budget is exceeded."""
    pieces: list[ReplicaPart] = []
    owner: list[tuple[int, int]] = []
    may_spread: list[bool] = []  # (mixed parts and spread stages: their replicas, anywhere)
    spread: list[bool] = []
    for i, c in enumerate(configs):
        if c.packed_whole:  # (one piece of its GPUs on one node, cut into its parts below)
            pieces.append(ReplicaPart(node_group=c.parts[0].node_group, device=c.parts[0].device,
                                      tp=1, count=c.gpus,
                                      gpus_per_node=c.parts[0].gpus_per_node, share=1))
            owner.append((i, -1))
            may_spread.append(False)
            spread.append(False)
            continue
        # (Placement ignores the shares; an uneven stage is placed as one replica group and
        # cut into its two by `build_plan`.)
        for j, part in enumerate(replace(c, uneven=False).replica_parts(1)):
            pieces.append(part)
            owner.append((i, j))
            may_spread.append(c.mixed or c.spread)
            spread.append(c.spread)
    placed = _place(instance, pieces, may_spread, spread)
    if placed is None:
        return None
    out: list[list[tuple[Placement, ...]]] = [[] for _ in configs]
    for (i, j), pl in zip(owner, placed, strict=True):
        if j < 0:
            out[i].extend((Placement(node=pl[0].node, replicas=p.count),)
                          for p in configs[i].parts)
        else:
            out[i].append(pl)
    return [tuple(x) for x in out]


def _place(instance: Instance, configs: list[ReplicaPart], may_spread: list[bool],
           spread: list[bool]) -> list[tuple[Placement, ...]] | None:
    result: list[tuple[Placement, ...] | None] = [None] * len(configs)
    by_group: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(configs):
        by_group[c.node_group].append(i)
    for gname, idxs in by_group.items():
        group = instance.cluster.group(gname)
        spreads = any(spread[i] for i in idxs)
        if not spreads and _first_fit(group, configs, idxs, result):
            continue
        # First-fit fails on a selection that fits the budget only where a piece has a shape it
        # does not place (Sec. 1.3: part of a node other than a power of two dividing it, more
        # than a node but not whole nodes, a TP degree that does not divide the node; mixed
        # parts of the full space of Sec. 1.1 included, e.g. 3 GPUs of a 4-GPU node, whose
        # replicas are chain items), and with a spread stage (first-fit would put it on one
        # node): pack exactly there.
        if (not spreads and all(first_fit_packs(group, configs[i].gpus, configs[i].tp)
                                for i in idxs)) or \
                sum(configs[i].gpus for i in idxs) > group.num_gpus:
            return None
        if not _pack_exactly(group, configs, idxs, may_spread, result,
                             spread if spreads else None):
            return None
    return [r for r in result if r is not None] if all(r is not None for r in result) else None


def _first_fit(group: NodeGroup, configs: list[ReplicaPart], idxs: list[int],
               result: list[tuple[Placement, ...] | None]) -> bool:
    """Whole-node replica groups on fresh nodes, then the others first-fit decreasing (Sec. 1);
    False where a piece finds no room."""
    gpn = group.gpus_per_node
    free = [gpn] * group.num_nodes
    next_node = 0
    for i in sorted(idxs, key=lambda k: (-configs[k].gpus, k)):
        c = configs[i]
        if not c.single_node:
            if c.gpus % gpn or gpn % c.tp:  # (not whole nodes: the exact packer spreads it)
                return False
            nodes = c.gpus // gpn
            if next_node + nodes > group.num_nodes:
                return False
            per_node = gpn // c.tp
            result[i] = tuple(Placement(node=next_node + k, replicas=per_node)
                              for k in range(nodes))
            for k in range(nodes):
                free[next_node + k] = 0
            next_node += nodes
        else:
            for node in range(next_node, group.num_nodes):
                if free[node] >= c.gpus:
                    free[node] -= c.gpus
                    result[i] = (Placement(node=node, replicas=c.count),)
                    break
            else:
                return False
    return True


def _pack_exactly(group: NodeGroup, configs: list[ReplicaPart], idxs: list[int],
                  may_spread: list[bool], result: list[tuple[Placement, ...] | None],
                  spread: list[bool] | None = None) -> bool:
    """The packing that rows (4a)-(4c) of Sec. 1.3 promise, found for real: the *pattern*
    items (a single-type piece of at most a node with a size not a power of two, whole; a
    larger single-type piece of a TP degree not a power of two, one item a replica) each on
    one node, by a search over their node assignments (nodes interchangeable: one try per
    distinct load, and failed (item, load multiset) states remembered); for the first
    assignment where the *chain* units (a power-of-two single-type piece of at most a node as
    one unit of its size, every other piece as one unit of its TP degree per replica) pass the
    level test of (4c), the units first-fit decreasing, which the divisibility of their sizes
    makes succeed. False where no packing exists. `may_spread`: pieces that may spread (mixed
    parts, spread stages); `spread`: the spread stages, whose units go to two nodes or more
    wherever the packing allows it (`_straddle`), so that their ring crosses the network as
    their costs say (where it does not, they sit on one node and cost no more than said,
    Sec. 1.3)."""
    gpn, num_nodes = group.gpus_per_node, group.num_nodes
    pattern: list[tuple[int, int, int]] = []  # (size, piece, replicas)
    units: list[tuple[int, int, int]] = []  # (size, piece, replicas)
    for i in idxs:
        c = configs[i]
        if not may_spread[i] and c.gpus <= gpn:
            (units if _is_pow2(c.gpus) else pattern).append((c.gpus, i, c.count))
        else:
            each = units if _is_pow2(c.tp) else pattern
            each.extend((c.tp, i, 1) for _ in range(c.count))
    pattern.sort(key=lambda u: (-u[0], u[1]))
    units.sort(key=lambda u: (-u[0], u[1]))
    levels = sorted({u[0] for u in units})
    demand = {t: sum(u[0] for u in units if u[0] >= t) for t in levels}

    def chain_fits(loads: list[int]) -> bool:
        empty = num_nodes - len(loads)
        return all(demand[t] <= sum(chain_capacity(gpn - load, t) for load in loads)
                   + empty * chain_capacity(gpn, t) for t in levels)

    where: list[int] = [0] * len(pattern)
    failed: set[tuple[int, tuple[int, ...]]] = set()

    def assign(k: int, loads: list[int]) -> bool:
        if k == len(pattern):
            return chain_fits(loads)
        key = (k, tuple(sorted(loads)))
        if key in failed:
            return False
        size = pattern[k][0]
        seen: set[int] = set()
        for node, load in enumerate(loads):
            if load + size <= gpn and load not in seen:
                seen.add(load)
                loads[node] += size
                where[k] = node
                if assign(k + 1, loads):
                    return True
                loads[node] -= size
        if len(loads) < num_nodes:
            loads.append(size)
            where[k] = len(loads) - 1
            if assign(k + 1, loads):
                return True
            loads.pop()
        failed.add(key)
        return False

    if not assign(0, []):
        return False
    free = [gpn] * num_nodes
    # Every piece's units: (size, piece, replicas); a pattern item is one unit on its node.
    units_placed: list[tuple[int, int, int]] = []
    nodes_of: list[int] = []
    spread_nodes: dict[int, set[int]] = defaultdict(set)  # (a spread stage's nodes so far)
    for k, (size, i, replicas) in enumerate(pattern):
        free[where[k]] -= size
        units_placed.append((size, i, replicas))
        nodes_of.append(where[k])
    for size, i, replicas in units:
        # Any node with room keeps the lemma's condition for the smaller sizes (its proof).
        roomy = [n for n in range(num_nodes) if free[n] >= size]
        if not roomy:  # (the level test of (4c) rules this out)
            return False
        node = roomy[0]
        if spread is not None:
            # With spread stages, the roomiest node (leaving holes on several nodes for their
            # later units), and a spread stage's unit away from the one node its units so far
            # sit on.
            mine = spread_nodes[i] if spread[i] else set()
            alone = mine if len(mine) == 1 else set()
            node = max(roomy, key=lambda n: (n not in alone, free[n], -n))
            if spread[i]:
                mine.add(node)
        free[node] -= size
        units_placed.append((size, i, replicas))
        nodes_of.append(node)
    if spread is not None:
        _straddle(units_placed, nodes_of, free, spread)
        if len(units_placed) <= STRADDLE_SEARCH_UNITS and any(
                spread[i] and len({n for (_, j, _), n in zip(units_placed, nodes_of, strict=True)
                                   if j == i}) < 2 for i in idxs):
            _straddle_search(units_placed, nodes_of, gpn, num_nodes, spread)
    per_piece: dict[int, dict[int, int]] = defaultdict(dict)
    for (_, i, replicas), node in zip(units_placed, nodes_of, strict=True):
        per_piece[i][node] = per_piece[i].get(node, 0) + replicas
    for i, per_node in per_piece.items():
        result[i] = tuple(Placement(node=n, replicas=r) for n, r in sorted(per_node.items()))
    return True


def _straddle(units: list[tuple[int, int, int]], nodes_of: list[int], free: list[int],
              spread: list[bool]) -> None:
    """Put every spread stage that the packing left on one node on two (in place): move some of
    its units (`t` GPUs) from its node A to another node B, and units of other stages (a stage on
    one node is one unit, so it stays on one node) from B to A, `M` GPUs in all with
    t - free[B] <= M <= free[A] + t, so that both nodes keep their room; a move that would leave
    a spread stage that straddled on one node is not made. Largest units first, every stage in
    turn, as many rounds as there are spread stages; a stage this
    cannot spread stays on its node, which costs no more than its coefficients say
    (Sec. 1.3)."""
    def straddling(where: list[int]) -> set[int]:
        return {piece for piece in {u[1] for u in units if spread[u[1]]}
                if len({n for (_, j, _), n in zip(units, where, strict=True) if j == piece}) > 1}

    pieces = sorted({u[1] for u in units if spread[u[1]]})
    for _ in pieces:  # rounds: a later move may make room for an earlier stage
        moved_any = False
        for i in pieces:
            moved_any |= _straddle_one(i, units, nodes_of, free, spread, straddling)
        if not moved_any:
            return


def _straddle_one(i: int, units: list[tuple[int, int, int]], nodes_of: list[int],
                  free: list[int], spread: list[bool],
                  straddling: Callable[[list[int]], set[int]]) -> bool:
    """One move of `_straddle` for spread stage `i`; True where it made one."""
    before = straddling(nodes_of)
    if i in before:
        return False
    mine = [k for k, u in enumerate(units) if u[1] == i]
    a = nodes_of[mine[0]]
    for m, b in itertools.product(range(1, len(mine)), range(len(free))):
        if b == a:
            continue
        t = sum(units[k][0] for k in mine[-m:])
        trial = list(nodes_of)
        for k in mine[-m:]:
            trial[k] = b
        total = 0
        for j in sorted((j for j, u in enumerate(units) if nodes_of[j] == b and u[1] != i),
                        key=lambda j: (-units[j][0], j)):
            if total >= t - free[b]:
                break
            if total + units[j][0] <= free[a] + t:
                trial[j] = a
                total += units[j][0]
        if total < t - free[b] or not before | {i} <= straddling(trial):
            continue
        nodes_of[:] = trial
        free[a] += t - total
        free[b] -= t - total
        return True
    return False


STRADDLE_SEARCH_STEPS = 20_000
"""Most nodes of the search `_straddle_search` visits (a deterministic limit)."""
STRADDLE_SEARCH_UNITS = 64
"""Most units (replica groups and pattern pieces of one node group) `_straddle_search` takes on:
its depth is one level a unit."""


def _straddle_search(units: list[tuple[int, int, int]], nodes_of: list[int], gpn: int,
                     num_nodes: int, spread: list[bool]) -> None:
    """Where `_straddle` left a spread stage on one node: a depth-first search over every
    assignment of the units to nodes (largest first; the nodes interchangeable, so a unit goes
    to a node in use or to the first empty one) for one that gives no node more than `gpn` GPUs
    and puts every spread stage on two nodes or more. Replaces `nodes_of` with the first found;
    keeps it where there is none or the search passes STRADDLE_SEARCH_STEPS (then a spread
    stage stays on one node, which costs no more than its coefficients say, Sec. 1.3)."""
    order = sorted(range(len(units)), key=lambda k: (-units[k][0], units[k][1], k))
    left = {i: sum(1 for u in units if u[1] == i) for i in {u[1] for u in units if spread[u[1]]}}
    seen: dict[int, set[int]] = {i: set() for i in left}
    load = [0] * num_nodes
    trial = [0] * len(units)
    steps = 0

    def rec(pos: int, used: int) -> bool:
        nonlocal steps
        steps += 1
        if steps > STRADDLE_SEARCH_STEPS:
            return False
        if pos == len(order):
            return True
        k = order[pos]
        size, piece, _ = units[k]
        for n in range(min(used + 1, num_nodes)):
            if load[n] + size > gpn:
                continue
            if piece in left:
                # The stage's last unit must not leave it on one node.
                if left[piece] == 1 and seen[piece] <= {n}:
                    continue
                left[piece] -= 1
                added = n not in seen[piece]
                seen[piece].add(n)
            load[n] += size
            trial[k] = n
            if rec(pos + 1, max(used, n + 1)):
                return True
            load[n] -= size
            if piece in left:
                left[piece] += 1
                if added:
                    seen[piece].discard(n)
        return False

    if rec(0, 0):
        nodes_of[:] = trial


def build_plan(instance: Instance, configs: list[StageConfig], layers: list[int], *,
               micro_batch: int, schedule: Schedule, note: str = "") -> Plan | None:
    """Assemble the plan of a stage sequence with canonical placement (None if it does not fit)."""
    placements = canonical_placement(instance, configs)
    if placements is None:
        return None
    stages = []
    first = 0
    for c, n, pls in zip(configs, layers, placements, strict=True):
        if c.uneven:
            pls = split_placement(pls[0], tuple(r.count for r in c.replica_parts(micro_batch)))
        stages.append(Stage(
            first_layer=first, num_layers=n, recompute=c.recompute,
            replicas=tuple(ReplicaGroup(node_group=r.node_group, device=r.device, count=r.count,
                                        tp=r.tp, micro_batch_share=r.share, placement=pl)
                           for r, pl in zip(c.replica_parts(micro_batch), pls, strict=True)),
        ))
        first += n
    return Plan(instance=instance.name, schedule=schedule, micro_batch_size=micro_batch,
                num_micro_batches=instance.training.global_batch_size // micro_batch,
                stages=tuple(stages), note=note)
