"""Stage coefficients for the exact search, extracted from the cost model and cached.

For a fixed configuration every time quantity of a stage is affine in its layer count n
(``CostModel.replica_terms``). Instead of re-deriving formulas, the coefficients are read off the
cost model at n = 1 and n = 2 and checked at n = 3, so the solver and ``evaluate()`` share one
source of truth. This module is the *state cache* of the search: every entry is keyed by exactly
what it depends on and reused across sub-problems (stage counts, schedules) and across solves that
share a CostModel.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, NamedTuple, TypeVar

import numpy as np

from haap_solver.cost.evaluate import CostModel, ReplicaTerms
from haap_solver.cost.memory import GIB, in_flight_micro_batches
from haap_solver.errors import HaapError
from haap_solver.parallelism import tp_candidates
from haap_solver.plan import Placement, ReplicaGroup
from haap_solver.search.deadline import check_deadline
from haap_solver.search.space import (
    ReplicaPart,
    StageConfig,
    budget_packs,
    mixed_config,
    mixed_shapes,
    mixed_space_full,
    part_packs,
    same_group_searched,
    same_group_split_ok,
    split_placement,
    stage_configs,
)

_T = TypeVar("_T")


class Affine(NamedTuple):
    """slope * n + intercept. (A named tuple, not a frozen dataclass: the search builds hundreds
    of thousands, and a tuple is cheaper to build than a frozen dataclass's __init__.)"""

    slope: float
    intercept: float

    def at(self, n: float) -> float:
        return self.slope * n + self.intercept


@dataclass(frozen=True)
class StageCoefficients:
    """Affine pieces of one configuration at one pipeline role (first/last/only/middle).

    The stage time per micro-batch is ``max(tau_pieces)(n)``; its forward part ``fwd`` and backward
    part ``max(bwd_pieces)`` serve GPipe. The tail (exposed data-parallel collective plus optimizer
    step) is ``max(tail_pieces)(n)``. All pieces are affine, so their maxima are convex in n and an
    epigraph formulation is exact (formulations/stage-assignment.md, Sec. 3).
    """

    fwd_pieces: tuple[Affine, ...]
    bwd_pieces: tuple[Affine, ...]
    tau_pieces: tuple[Affine, ...]
    tail_pieces: tuple[Affine, ...]

    def fwd(self, n: int) -> float:
        return max(p.at(n) for p in self.fwd_pieces)

    def tau(self, n: int) -> float:
        return max(p.at(n) for p in self.tau_pieces)

    def bwd(self, n: int) -> float:
        return max(p.at(n) for p in self.bwd_pieces)

    def tail(self, n: int) -> float:
        return max(p.at(n) for p in self.tail_pieces)


def pieces_max(pieces: tuple[Affine, ...], n: np.ndarray) -> np.ndarray:
    """max over the pieces of slope * n + intercept, at every layer count of `n` (an array) at
    once. (A running np.maximum: half the time of np.max over a stacked list for the one to four
    pieces a stage has, and the bound tables call it for every configuration.)"""
    first = pieces[0]
    out: np.ndarray = first.slope * n + first.intercept
    for q in pieces[1:]:
        np.maximum(out, q.slope * n + q.intercept, out=out)
    return out


def pieces_max_rows(pieces: list[tuple[Affine, ...]], widths: list[int], *,
                    width: int | None = None, beyond: float = -np.inf) -> np.ndarray:
    """Row k: ``pieces_max(pieces[k], n)`` at n = 1..widths[k], `beyond` after that (columns:
    `width`, by default the largest of `widths`; it may not be less). One evaluation of every
    piece at once, bit for bit the arithmetic of pieces_max: the bound tables need thousands of
    short rows, where a call each cost as much as the arithmetic (a tenth of the search over
    plans with a mixed stage)."""
    width = max(widths, default=0) if width is None else width
    counts = [len(ps) for ps in pieces]
    flat = [q for ps in pieces for q in ps]
    slopes = np.array([q.slope for q in flat], dtype=float)
    intercepts = np.array([q.intercept for q in flat], dtype=float)
    n = np.arange(1, width + 1, dtype=float)
    rows = np.full((len(pieces), width), beyond)
    if not flat or width == 0:
        return rows
    values = slopes[:, None] * n[None, :] + intercepts[:, None]
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.intp)
    has = np.array(counts) > 0
    rows[has] = np.maximum.reduceat(values, starts[has], axis=0)
    rows[n[None, :] > np.array(widths, dtype=float)[:, None]] = beyond
    return rows


def pieces_below(a: tuple[Affine, ...], b: tuple[Affine, ...], n_max: int) -> bool:
    """max(a) <= max(b) on [1, n_max]: every piece of `a` lies below one piece of `b` at both ends
    (then below it everywhere, affine functions). A sufficient test."""
    for pa in a:
        if not any(pa.at(1) <= pb.at(1) + 1e-15 and pa.at(n_max) <= pb.at(n_max) + 1e-15
                   for pb in b):
            return False
    return True


def hull_candidates(pieces: tuple[Affine, ...], count: int) -> np.ndarray:
    """Which n = 1..count (index n - 1) may be a vertex of the lower convex hull of the integer
    points (n, max(pieces)(n)): n = 1 and the integers either side of every crossing of two
    pieces. Between two such n the max is one affine piece, so the points in between are
    collinear and none is a vertex; n = count, the other end, is for the caller to add (it
    depends on how many layers fit)."""
    vertex = np.zeros(count, dtype=bool)
    if count:
        vertex[0] = True
    for i, pa in enumerate(pieces):
        for pb in pieces[i + 1:]:
            if pa.slope != pb.slope:
                x = (pb.intercept - pa.intercept) / (pa.slope - pb.slope)
                for at in (math.floor(x), math.ceil(x)):
                    if 1 <= at <= count:
                        vertex[at - 1] = True
    return vertex


def pieces_below_pairs(pieces: list[tuple[Affine, ...]], first: np.ndarray, second: np.ndarray,
                       n_max: int) -> np.ndarray:
    """``pieces_below(pieces[a], pieces[b], n_max)`` for every pair (a, b) of `first` x `second`
    (element-wise), vectorised: the same arithmetic on every piece at both ends."""
    width = max([len(ps) for ps in pieces] + [1])
    at_one = np.full((len(pieces), width), np.nan)
    at_max = np.full((len(pieces), width), np.nan)
    for k, ps in enumerate(pieces):
        at_one[k, : len(ps)] = [q.slope * 1 + q.intercept for q in ps]
        at_max[k, : len(ps)] = [q.slope * n_max + q.intercept for q in ps]
    out = np.zeros(len(first), dtype=bool)
    for lo in range(0, len(first), 65536):  # chunks bound the (pairs, pieces, pieces) arrays
        fa, sb = first[lo: lo + 65536], second[lo: lo + 65536]
        a1, am = at_one[fa][:, :, None], at_max[fa][:, :, None]  # (pairs, pieces of a, 1)
        b1, bm = at_one[sb][:, None, :], at_max[sb][:, None, :]  # (pairs, 1, pieces of b)
        # NaN (padding) compares false: a padded piece of b covers nothing ...
        covered = ((a1 <= b1 + 1e-15) & (am <= bm + 1e-15)).any(axis=2)
        # ... and a padded piece of a needs no cover.
        out[lo: lo + 65536] = (covered | np.isnan(at_one[fa])).all(axis=1)
    return out


MIXED_MIN_BUSY = 0.9
"""A mixed stage's batch split must keep every replica group busy for at least this share of the
stage's per-layer time (formulations Sec. 1.1): replicas matched to their speed, none waiting."""


def _bilinear_below(ma: tuple[float, ...], mb: tuple[float, ...]) -> bool:
    """A + B n + C f + D n f of `ma` <= that of `mb` for all n, f >= 1 (coefficient test)."""
    dA, dB, dC, dD = (y - x for x, y in zip(ma, mb, strict=True))
    tol = 1e-9 * abs(mb[0])
    return not (dA + dB + dC + dD < -tol or dB + dD < -tol or dC + dD < -tol or dD < -tol)


def _splits(counts: list[int], total: int, cap: int) -> list[tuple[int, ...]]:
    """Every tuple of integer shares in [1, cap] with sum(count * share) == total, in
    lexicographic order."""
    if len(counts) == 1:
        share, rest = divmod(total, counts[0])
        return [(share,)] if not rest and 1 <= share <= cap else []
    if len(counts) == 2:  # (the common case: no recursion)
        c0, c1 = counts
        return [(s, left // c1) for s in range(1, cap + 1)
                if (left := total - c0 * s) >= c1 and left % c1 == 0 and left // c1 <= cap]
    out: list[tuple[int, ...]] = []
    for s in range(1, cap + 1):
        left = total - counts[0] * s
        if left < sum(counts[1:]):
            break
        out.extend((s, *tail) for tail in _splits(counts[1:], left, cap))
    return out


def _dedup(pieces: tuple[Affine, ...]) -> tuple[Affine, ...]:
    return tuple(dict.fromkeys(pieces))


_AFFINE_TERMS = ("fwd_s", "tp_fwd_s", "bwd_s", "tp_bwd_s", "zero_fwd_s", "zero_bwd_s", "end_comm_s",
                 "optimizer_s")
"""The ReplicaTerms fields a stage's affine pieces are built from (each read at n = 1, 2, 3)."""

_terms_of = operator.attrgetter(*_AFFINE_TERMS)


def _group_key(c: StageConfig, r: ReplicaPart, first: bool, last: bool,
               multi_stage: bool) -> tuple[object, ...]:
    """What one replica group's pieces, memory and room depend on besides the stage's ring: its
    device, TP degree and share, and the stage's data-parallel degree, recomputation and role
    (not the stage's other groups). The per-group caches of CoefficientCache are keyed by it."""
    return (r.device, r.tp, r.share, c.dp, c.recompute, first, last, multi_stage)


class CoefficientCache:
    """Per-configuration coefficients, memory bounds and p2p times, computed once each.

    Inside a deadline (`deadline.until`: a bound strengthening, a seed's integer programs, a
    micro-batch size's set-up) a miss raises DeadlineReached once it has passed: the bound
    tables of one micro-batch size take 0.1-0.6 s at 1,024 GPUs (more with mixed stages), most
    of it here. Every entry is stored whole or not at all."""

    def __init__(self, cost_model: CostModel):
        self.cm = cost_model
        self.instance = cost_model.instance
        self._coeffs: dict[tuple[StageConfig, int, bool, bool, bool]
                           | tuple[StageConfig, int, bool, bool, bool, float],
                           StageCoefficients] = {}
        self._max_layers: dict[tuple[StageConfig, int, bool, bool, bool,
                                     int | tuple[float, float, float]], int] = {}
        self._p2p: dict[tuple[StageConfig, int, str | tuple[str, ...]], float] = {}
        self._misc: dict[tuple[object, ...], object] = {}
        self._bridged = frozenset(
            g.name for g in self.instance.cluster.node_groups
            if self.instance.device(g.device).nvlink_domain_gpus is not None)
        """Node groups whose nodes hold several NVLink domains (`dp_link`'s key)."""
        self.hits = 0
        self.misses = 0

    def memoized(self, key: tuple[object, ...], compute: Callable[[], _T]) -> _T:
        """The value kept under `key` (a tag string first), computed once: for what other
        modules derive from these coefficients (the formulation's undominated end
        configurations). Such entries are not carried across a change of the instance (only
        the tags `carry` names are)."""
        if key in self._misc:
            return self._misc[key]  # type: ignore[return-value]
        value = self._misc[key] = compute()
        return value

    def fits_in_footprint(self, a: StageConfig, b: StageConfig, group: str,
                           micro_batch: int) -> bool:
        """`a` fits wherever `b` sat in node group `group`, so that swapping them keeps every
        placement (formulations Sec. 2.3 with Sec. 1.3). Where every single-type size at
        `micro_batch` is one the budget alone packs, fewer GPUs is enough. Elsewhere `b` on
        one node (single-type, at most a node) leaves room for `a`'s fewer GPUs there; `b`
        spread in replicas of TP t (a larger stage, a mixed part) leaves t-GPU holes, which
        hold `a` when `a` is single-type of at most t GPUs, or spread in replicas of a TP degree
        dividing t (they tile the holes: a TP-2 replica does not tile a TP-3 hole). Sufficient,
        not necessary."""
        if self._budget_packs_at(group, micro_batch):
            return True
        q = self.instance.cluster.group(group).gpus_per_node

        def spread_tp(c: StageConfig) -> int | None:
            """TP of `c`'s replicas in `group` where they may spread, None where on one node;
            0 for replicas of two TP degrees there (Sec. 1.1: no footprint test is made)."""
            if not c.parts:
                return None if c.gpus <= q and not c.spread else c.tp
            if c.packed_whole:
                return None
            tps = {p.tp for p in c.parts if p.node_group == group}
            return tps.pop() if len(tps) == 1 else 0

        hole = spread_tp(b)
        if hole is None:
            return True
        own = spread_tp(a)
        if hole == 0 or own == 0:
            return False
        return a.gpus_in(group) <= hole if own is None else hole % own == 0

    def _budget_packs_at(self, group: str, micro_batch: int) -> bool:
        """No single-type configuration of `group` at `micro_batch` needs the packing rows of
        Sec. 1.3 (every size a power of two dividing the node size, or whole nodes)."""
        key = ("budget_packs", group, micro_batch)
        hit = self._misc.get(key)
        if hit is None:
            node_group = self.instance.cluster.group(group)
            # (A mixed part of a TP degree the budget does not pack, TP 2 on 3-GPU nodes or TP
            # 3, may be in the group at any micro-batch size: then never, conservatively.)
            # (Nor where a one-group stage on one node may take a size the budget does not
            # pack, 3 GPUs of a 4-GPU node, Sec. 1.1: then never either.)
            hit = self._misc[key] = all(
                budget_packs(node_group, c.gpus, c.tp, spread=c.spread)
                for c in stage_configs(self.instance, micro_batch) if c.node_group == group) \
                and all(part_packs(node_group, t)
                        for t in tp_candidates(self.instance, node_group)) \
                and not (same_group_searched(self.instance)
                         and node_group.gpus_per_node >= 3)
        return bool(hit)

    # -- helpers ---------------------------------------------------------------------------------
    def replicas(self, c: StageConfig, micro_batch: int) -> tuple[ReplicaGroup, ...]:
        """The replica groups of `c` (several for a mixed stage), placed the canonical way."""
        key = ("reps", c, micro_batch)
        hit = self._misc.get(key)
        if hit is not None:
            return hit  # type: ignore[return-value]
        if c.uneven:  # (placed as one group, then cut in two where it sits: build_plan)
            whole = self.replicas(replace(c, uneven=False), micro_batch)[0]
            parts = c.replica_parts(micro_batch)
            result = tuple(
                ReplicaGroup(node_group=r.node_group, device=r.device, count=r.count, tp=r.tp,
                             micro_batch_share=r.share, placement=pl)
                for r, pl in zip(parts, split_placement(whole.placement,
                                                        tuple(r.count for r in parts)),
                                 strict=True))
            self._misc[key] = result
            return result
        if c.one_group and not c.packed_whole:
            # (A one-group stage on several nodes: its ring over the network, whichever they
            # are, Sec. 1.1; the first replica on node 0, the others on node 1.)
            parts = c.replica_parts(micro_batch)
            result = tuple(
                ReplicaGroup(node_group=r.node_group, device=r.device, count=r.count, tp=r.tp,
                             micro_batch_share=r.share,
                             placement=((Placement(node=0, replicas=1),)
                                        + ((Placement(node=1, replicas=r.count - 1),)
                                           if r.count > 1 else ())) if k == 0
                             else (Placement(node=1, replicas=r.count),))
                for k, r in enumerate(parts))
            self._misc[key] = result
            return result
        out = []
        for r in c.replica_parts(micro_batch):
            if c.spread:  # (on two nodes: what it costs, wherever its replicas sit, Sec. 1.3)
                placement: tuple[Placement, ...] = (Placement(node=0, replicas=1),
                                                    Placement(node=1, replicas=r.count - 1))
            elif r.single_node:
                placement = (Placement(node=0, replicas=r.count),)
            else:  # full nodes, then the rest (6 GPUs over 4-GPU nodes: 4 + 2)
                per_node = r.gpus_per_node // r.tp
                placement = tuple(Placement(node=k, replicas=min(per_node,
                                                                 r.count - k * per_node))
                                  for k in range(-(-r.count // per_node)))
            out.append(ReplicaGroup(node_group=r.node_group, device=r.device, count=r.count,
                                    tp=r.tp, micro_batch_share=r.share, placement=placement))
        result = tuple(out)
        self._misc[key] = result
        return result

    def spread_allowed(self, c: StageConfig, micro_batch: int) -> bool:
        """A spread configuration (Sec. 1.3) is in the space only where its data-parallel ring
        over the network is no faster than on one node, in bandwidth and in latency (the usual
        case): then its costs, with its replicas on two nodes or more, are at least its twin's
        on one node, so wherever the packing leaves it on one node it costs no more than its
        coefficients say, and the search's optimum stays exact. Where the network ring is
        faster (a PCIe device beside fast NICs), a spread stage that cannot straddle would cost
        more than said; those placements stay outside the space. Other configurations: True."""
        if not c.spread or c.parts:  # (a one-group stage's twin: the ring rule, Sec. 1.1)
            return True
        key = ("spread_ok", c.node_group, c.tp, c.dp, micro_batch)
        hit = self._misc.get(key)
        if hit is None:
            twin = replace(c, spread=False)
            net_gb_s, net_lat = self.cm.dp_link(self.replicas(c, micro_batch))
            own_gb_s, own_lat = self.cm.dp_link(self.replicas(twin, micro_batch))
            hit = self._misc[key] = net_gb_s <= own_gb_s and net_lat >= own_lat
        return bool(hit)

    def stage_params(self, n: int, first: bool, last: bool, multi_stage: bool) -> float:
        return self.cm.params_held(n, first, last, multi_stage)

    def dp_link(self, c: StageConfig, micro_batch: int) -> tuple[float, float]:
        """(GB/s, latency s) of the stage's data-parallel ring (CostModel.dp_link; cached).

        Cached by what it depends on under the canonical placement: whether the stage fits one
        node (then the device's own links), else the node groups it spans. Placing the replicas
        of every configuration to ask the cost model took a tenth of the mixed set-up; the
        cost model still computes each distinct value."""
        if c.dp <= 1:
            return (1.0, 0.0)
        # (On one node: the device's links. On several: the network among its node groups,
        # but for a stage of at most a node on one group no faster than on one node, Sec. 1.3;
        # a spread twin and a larger stage of one group differ there, as do a one-group
        # stage on one node and its twin, Sec. 1.1.)
        groups = c.groups
        small = len(groups) == 1 and \
            c.gpus <= self.instance.cluster.group(groups[0]).gpus_per_node
        key: tuple[Any, ...] = ("link", groups, c.single_node or c.packed_whole, small)
        if not self._bridged.isdisjoint(groups):
            # (a node of several NVLink domains: its own links depend on how many of its GPUs
            # and replicas the ring has, DeviceType.link_gb_s)
            key += (c.gpus, c.dp)
        hit = self._misc.get(key)
        if hit is None:
            hit = self.cm.dp_link(self.replicas(c, micro_batch))
            self._misc[key] = hit
        return hit  # type: ignore[return-value]

    # -- coefficients ------------------------------------------------------------------------------
    def coefficients(self, c: StageConfig, micro_batch: int, first: bool, last: bool,
                     multi_stage: bool, window_share: float = 1.0) -> StageCoefficients:
        """The stage's affine pieces (Sec. 3). `window_share`: the share of the last
        micro-batch's backward the gradient reduction overlaps (1; 1/v under the interleaved
        schedule, cost model Sec. 6.3 and 7.1), which only the tail pieces read."""
        key: (tuple[StageConfig, int, bool, bool, bool]
              | tuple[StageConfig, int, bool, bool, bool, float]) = (
            (c, micro_batch, first, last, multi_stage) if window_share == 1.0
            else (c, micro_batch, first, last, multi_stage, window_share))
        hit = self._coeffs.get(key)
        if hit is not None:
            self.hits += 1
            return hit
        check_deadline()  # (a miss is tens of microseconds: a table of thousands stops here)
        self.misses += 1
        parts = self.part_coefficients(c, micro_batch, first, last, multi_stage, window_share)
        if len(parts) == 1:
            coeffs = parts[0]
        else:
            # evaluate(): a stage's forward is its slowest replica's forward, its backward its
            # slowest replica's backward, its tail the slowest replica's tail: maxima of all the
            # parts' pieces, and tau = max fwd + max bwd = max over pairs (still convex; Sec. 1.1).
            fwd_p = _dedup(tuple(a for co in parts for a in co.fwd_pieces))
            bwd_p = _dedup(tuple(a for co in parts for a in co.bwd_pieces))
            tau_p = _dedup(tuple(Affine(f.slope + b.slope, f.intercept + b.intercept)
                                 for f in fwd_p for b in bwd_p))
            tail_p = _dedup(tuple(a for co in parts for a in co.tail_pieces))
            coeffs = StageCoefficients(fwd_pieces=fwd_p, bwd_pieces=bwd_p, tau_pieces=tau_p,
                                       tail_pieces=tail_p)
        self._coeffs[key] = coeffs
        return coeffs

    def part_coefficients(self, c: StageConfig, micro_batch: int, first: bool, last: bool,
                          multi_stage: bool, window_share: float = 1.0) -> list[StageCoefficients]:
        """Affine pieces of each replica group of `c` on its own (one entry unless mixed).

        A replica group's terms (CostModel.replica_terms, as evaluate() computes them) depend on
        its device, TP degree and share, and on the stage's data-parallel degree, recomputation,
        role and ring, not on the other groups. Mixed stages share groups (at 1,024 GPUs the mixed
        candidates have 15,868 groups, 5,145 of them distinct), so pieces are cached per group."""
        key = ("parts", c, micro_batch, first, last, multi_stage, window_share)
        hit = self._misc.get(key)
        if hit is not None:
            return hit  # type: ignore[return-value]
        gb_s, lat = self.dp_link(c, micro_batch)
        out = []
        for r in c.replica_parts(micro_batch):
            part_key = ("part", *_group_key(c, r, first, last, multi_stage), gb_s, lat,
                        window_share)
            pieces = self._misc.get(part_key)
            if pieces is None:
                t1, t2, t3 = (self.cm.replica_terms(
                    device=r.device, tp=r.tp, share=r.share, dp=c.dp,
                    recompute=c.recompute, num_layers=n,
                    params=self.stage_params(n, first, last, multi_stage), is_first=first,
                    is_last=last, dp_gb_s=gb_s, dp_latency_s=lat) for n in (1, 2, 3))
                pieces = self._pieces_of(c, t1, t2, t3, window_share)
                self._misc[part_key] = pieces
            out.append(pieces)
        self._misc[key] = out
        return out  # type: ignore[return-value]

    def _pieces_of(self, c: StageConfig, t1: ReplicaTerms, t2: ReplicaTerms,
                   t3: ReplicaTerms, window_share: float = 1.0) -> StageCoefficients:
        """Affine pieces of one replica group from its terms at n = 1, 2 (checked at n = 3).

        Plain floats until the pieces are built: the mixed set-up reads thousands of replica
        groups (7,302 on llama3-8b-h100-a100-l40s), and a named tuple per term took 12 us a
        group, 7 us now."""
        slopes: list[float] = []
        intercepts: list[float] = []
        for name, f1, f2, f3 in zip(_AFFINE_TERMS, _terms_of(t1), _terms_of(t2), _terms_of(t3),
                                    strict=True):
            slope, intercept = f2 - f1, 2 * f1 - f2
            if abs(slope * 3 + intercept - f3) > 1e-9 * max(1.0, abs(f3)):
                raise HaapError(f"internal error: {name} of {c.label()} is not affine in the "
                                "layer count; the exact search relies on it")
            slopes.append(slope)
            intercepts.append(intercept)
        fs, tfs, bs, tbs, zfs, zbs, es, ops = slopes
        fi, tfi, bi, tbi, zfi, zbi, ei, opi = intercepts
        fwd = Affine(fs + tfs, fi + tfi)
        bwd_c = Affine(bs + tbs, bi + tbi)
        o = self.cm.constants.zero3_overlap

        def with_zero(base: Affine, z_slope: float, z_intercept: float) -> tuple[Affine, ...]:
            # base + z - o min(z, base) = max(base + (1-o) z, (1-o) base + z)   (Sec. 3, eq. 3.2)
            if z_slope == 0 and z_intercept == 0:
                return (base,)
            return (Affine(base.slope + (1 - o) * z_slope, base.intercept + (1 - o) * z_intercept),
                    Affine((1 - o) * base.slope + z_slope, (1 - o) * base.intercept + z_intercept))

        fwd_pieces = with_zero(fwd, zfs, zfi)
        bwd_pieces = with_zero(bwd_c, zbs, zbi)
        tau_pieces = tuple(Affine(f.slope + b.slope, f.intercept + b.intercept)
                           for f in fwd_pieces for b in bwd_pieces)
        if es == 0 and ei == 0:
            tail_pieces: tuple[Affine, ...] = (Affine(ops, opi),)
        elif self.instance.training.overlap_grad_reduce:
            # max(end - window, last bucket) + opt   (Sec. 3, eq. 3.4); the window is the last
            # micro-batch's backward, 1/v of it under the interleaved schedule.
            w = window_share
            tail_pieces = (Affine(es - w * bwd_c.slope + ops, ei - w * bwd_c.intercept + opi),
                           Affine(ops, t1.last_bucket_s + opi))
        else:
            tail_pieces = (Affine(es + ops, ei + opi),)
        return StageCoefficients(fwd_pieces=fwd_pieces, bwd_pieces=bwd_pieces,
                                 tau_pieces=tau_pieces, tail_pieces=tail_pieces)

    def stage_times(self, c: StageConfig, micro_batch: int, first: bool, last: bool,
                    multi_stage: bool) -> np.ndarray:
        """Stage time at n = 1..(the layers that fit with one micro-batch in flight), as a
        running maximum (the capacity bounds need it monotone in T); read-only, cached: the
        capacity bound and the positional bound both use it."""
        key = ("taus", c, micro_batch, first, last, multi_stage)
        hit = self._misc.get(key)
        if hit is not None:
            return hit  # type: ignore[return-value]
        n_max = self.max_layers(c, micro_batch, first, last, multi_stage, 1)
        if n_max < 1:
            out = np.zeros(0)
        else:
            co = self.coefficients(c, micro_batch, first, last, multi_stage)
            n = np.arange(1, n_max + 1, dtype=float)
            out = np.maximum.accumulate(pieces_max(co.tau_pieces, n))
        out.flags.writeable = False
        self._misc[key] = out
        return out

    def stage_times_many(self, configs: list[StageConfig], micro_batch: int, first: bool,
                         last: bool, multi_stage: bool) -> list[np.ndarray]:
        """``stage_times`` of every configuration, the ones not cached yet in one vectorised
        evaluation (pieces_max_rows): the same arrays, cached the same way."""
        keys = [("taus", c, micro_batch, first, last, multi_stage) for c in configs]
        out: list[np.ndarray | None] = [self._misc.get(key) for key in keys]  # type: ignore[misc]
        todo = [k for k, hit in enumerate(out) if hit is None]
        if todo:
            widths = [self.max_layers(configs[k], micro_batch, first, last, multi_stage, 1)
                      for k in todo]
            fit = [k for k, w in zip(todo, widths, strict=True) if w >= 1]
            fit_widths = [w for w in widths if w >= 1]
            pieces = [self.coefficients(configs[k], micro_batch, first, last,
                                        multi_stage).tau_pieces for k in fit]
            rows = np.maximum.accumulate(pieces_max_rows(pieces, fit_widths), axis=1)
            done = dict(zip(fit, range(len(fit)), strict=True))
            for k, w in zip(todo, widths, strict=True):
                row = rows[done[k], :w].copy() if w >= 1 else np.zeros(0)
                row.flags.writeable = False
                self._misc[keys[k]] = row
                out[k] = row
        return out  # type: ignore[return-value]

    # -- mixed stages (formulations Sec. 1.1) -----------------------------------------------------
    def mixed_candidates(self, micro_batch: int) -> list[StageConfig]:
        """Every mixed stage configuration at `micro_batch`: each replica skeleton of
        `space.mixed_shapes` and recomputation mode, with every batch split where each replica
        holds one layer (`mixed_splits`) in the full mixed space, or the one split `mixed_split`
        chooses in the cut space (`space.mixed_space_full`; skeletons without a balanced split
        that fits memory are dropped there). Cached."""
        key = ("mixed", micro_batch)
        hit = self._misc.get(key)
        if hit is not None:
            return hit  # type: ignore[return-value]
        out: list[StageConfig] = []
        full = mixed_space_full(self.instance, micro_batch)
        for shape in mixed_shapes(self.instance, micro_batch):
            check_deadline()  # (thousands of shapes at 1,024 GPUs: up to 0.5 s a size)
            for rc in self.instance.training.recompute:
                if full:
                    for parts in self.mixed_splits(shape, micro_batch, rc):
                        c = mixed_config(parts, rc)
                        out.append(c)
                        # A one-group stage of at most a node on one node, and its twin whose
                        # replicas may sit on several (Sec. 1.1, as the spread twins of 1.3).
                        if c.packed_whole and \
                                self.instance.cluster.group(parts[0].node_group).num_nodes >= 2:
                            out.append(mixed_config(parts, rc, spread=True))
                    continue
                one = self.mixed_split(shape, micro_batch, rc)
                if one is not None:
                    out.append(mixed_config(one, rc))
        self._misc[key] = out
        return out

    def mixed_splits(self, shape: tuple[tuple[str, int, int], ...], micro_batch: int,
                     recompute: str) -> list[tuple[ReplicaPart, ...]]:
        """Every batch split of one skeleton in the full mixed space (Sec. 1.1): integer shares
        in [1, max_micro_batch_share] adding up to the micro-batch where every replica holds one
        layer (middle stage, one micro-batch in flight: the least memory of any stage with a
        layer, so a split failing it is in no valid plan)."""
        t = self.instance.training
        groups = [self.instance.cluster.group(g) for g, _, _ in shape]
        counts = [c for _, _, c in shape]
        dp = sum(counts)
        out: list[tuple[ReplicaPart, ...]] = []
        repeats = len({g for g, _, _ in shape}) < len(shape)
        for shares in _splits(counts, micro_batch, t.max_micro_batch_share):
            if all(self._part_unit(g.device, tp, share, dp, recompute)[1] <= 1 + 1e-12
                   for g, (_, tp, _), share in zip(groups, shape, shares, strict=True)):
                parts = tuple(ReplicaPart(node_group=g.name, device=g.device, tp=tp, count=c,
                                          share=share, gpus_per_node=g.gpus_per_node)
                              for g, (_, tp, c), share in zip(groups, shape, shares, strict=True))
                if not repeats or same_group_split_ok(parts):
                    out.append(parts)
        return out

    def mixed_split(self, shape: tuple[tuple[str, int, int], ...], micro_batch: int,
                    recompute: str) -> tuple[ReplicaPart, ...] | None:
        """The heterogeneity-aware load balance of one mixed stage: the integer per-replica shares
        (adding up to the micro-batch, each at most training.max_micro_batch_share) that minimise
        the stage's per-layer time, its slowest replica's forward + backward per layer
        (``CostModel.layer_cost``), among the splits where every replica holds one layer in
        memory (middle stage, one micro-batch in flight); ties go to the lighter split (smallest
        largest memory fraction), then to the first in order. Exact: every split is enumerated.

        None when no split fits, or when the best one leaves a replica group idle for more than
        1 - MIXED_MIN_BUSY of the stage's time although one sequence more per replica would not
        make it the slowest (the shares cannot match the speeds: some replica would wait for
        another; formulations Sec. 1.1)."""
        key = ("split", shape, micro_batch, recompute)
        if key in self._misc:
            return self._misc[key]  # type: ignore[return-value]
        t = self.instance.training
        groups = [self.instance.cluster.group(g) for g, _, _ in shape]
        counts = [c for _, _, c in shape]
        dp = sum(counts)
        best: tuple[float, float, tuple[int, ...]] | None = None
        for shares in _splits(counts, micro_batch, t.max_micro_batch_share):
            worst_t = worst_m = 0.0
            for g, (_, tp, _), share in zip(groups, shape, shares, strict=True):
                per_layer, fraction = self._part_unit(g.device, tp, share, dp, recompute)
                if fraction > 1 + 1e-12:
                    break
                worst_t = max(worst_t, per_layer)
                worst_m = max(worst_m, fraction)
            else:
                if best is None or (worst_t, worst_m) < best[:2]:
                    best = (worst_t, worst_m, shares)
        if best is None:
            self._misc[key] = None
            return None
        # Balanced: every replica group is busy for MIXED_MIN_BUSY of the stage's time, or would
        # be the slowest with one sequence more (the rest is integrality).
        stage_t = best[0]
        for g, (_, tp, _), share in zip(groups, shape, best[2], strict=True):
            own = self._part_unit(g.device, tp, share, dp, recompute)[0]
            if own < MIXED_MIN_BUSY * stage_t and \
                    self._part_unit(g.device, tp, share + 1, dp, recompute)[0] < stage_t:
                self._misc[key] = None
                return None
        result = tuple(ReplicaPart(node_group=g.name, device=g.device, tp=tp, count=c,
                                   share=share, gpus_per_node=g.gpus_per_node)
                       for g, (_, tp, c), share in zip(groups, shape, best[2], strict=True))
        self._misc[key] = result
        return result

    def _part_unit(self, device: str, tp: int, share: int, dp: int,
                   recompute: str) -> tuple[float, float]:
        """(forward + backward time of one layer, memory fraction of a one-layer middle stage with
        one micro-batch in flight) of one replica: what mixed_split weighs."""
        key = ("unit", device, tp, share, dp, recompute)
        hit = self._misc.get(key)
        if hit is None:
            mem = self.cm.replica_memory(device=device, tp=tp, share=share, dp=dp, num_layers=1,
                                         recompute=recompute,
                                         params=self.stage_params(1, False, False, True),
                                         is_first=False, is_last=False, in_flight=1)
            lc = self.cm.layer_cost(device, tp, share, recompute)
            hit = (lc.fwd_s + lc.bwd_s + lc.tp_fwd_s + lc.tp_bwd_s, mem.total / mem.capacity)
            self._misc[key] = hit
        return hit  # type: ignore[return-value]

    # -- memory-aware initialization ---------------------------------------------------------------
    def max_layers(self, c: StageConfig, micro_batch: int, first: bool, last: bool,
                   multi_stage: bool, in_flight: int | tuple[float, float, float]) -> int:
        """Largest layer count whose memory fits every GPU of the stage (0: not even one layer).

        Memory is affine in n for n >= 1, so the bound is closed-form (formulations Sec. 2).
        A mixed stage fits where each of its replica groups fits. `in_flight`: micro-batches
        in flight, or (of the stage, of its embedding, of its LM head) as
        `CostModel.in_flight` gives them (the interleaved schedule's differ, Sec. 5.3).
        """
        key = (c, micro_batch, first, last, multi_stage, in_flight)
        hit = self._max_layers.get(key)
        if hit is not None:
            return hit
        check_deadline()
        result = min(self._part_max_layers(c, r, first, last, multi_stage, in_flight)
                     for r in c.replica_parts(micro_batch))
        self._max_layers[key] = result
        return result

    def _part_max_layers(self, c: StageConfig, r: ReplicaPart, first: bool, last: bool,
                         multi_stage: bool, in_flight: int | tuple[float, float, float]) -> int:
        # Cached per replica group: its memory does not depend on the stage's other groups.
        key = ("maxp", *_group_key(c, r, first, last, multi_stage), in_flight)
        hit = self._misc.get(key)
        if hit is None:
            hit = self._part_max_layers_uncached(c, r, first, last, multi_stage, in_flight)
            self._misc[key] = hit
        return hit  # type: ignore[return-value]

    def _part_max_layers_uncached(self, c: StageConfig, r: ReplicaPart, first: bool, last: bool,
                                  multi_stage: bool,
                                  in_flight: int | tuple[float, float, float]) -> int:
        total = self.instance.model.num_layers
        stage, emb, head = (in_flight if isinstance(in_flight, tuple)
                            else (in_flight, in_flight, in_flight))

        def used(n: int) -> tuple[float, float]:
            mem = self.cm.replica_memory(
                device=r.device, tp=r.tp, share=r.share, dp=c.dp, num_layers=n,
                recompute=c.recompute, params=self.stage_params(n, first, last, multi_stage),
                is_first=first, is_last=last, in_flight=stage, in_flight_first=emb,
                in_flight_last=head)
            return mem.total, mem.capacity

        m1, cap = used(1)
        if m1 > cap * (1 + 1e-12):
            return 0
        slope = used(2)[0] - m1
        result = total if slope <= 0 else min(total, 1 + math.floor((cap - m1) / slope))
        # Guard against floating-point edge effects: step down until it really fits.
        while result > 1 and used(result)[0] > cap * (1 + 1e-12):
            result -= 1
        return result

    def holds_end_only(self, c: StageConfig, micro_batch: int, first: bool, last: bool,
                       multi_stage: bool, in_flight: int) -> bool:
        """Whether every GPU of `c` fits an end stage of no decoder layer (the embedding alone,
        or the head alone; formulations Sec. 1.2), computed at n = 0 itself: memory is affine
        in n only from one layer on (a recomputed layer's working memory needs a layer)."""
        key = ("endonly", c, micro_batch, first, last, multi_stage, in_flight)
        hit = self._misc.get(key)
        if hit is None:
            hit = all(self.cm.replica_memory(
                device=r.device, tp=r.tp, share=r.share, dp=c.dp, num_layers=0,
                recompute=c.recompute, params=self.stage_params(0, first, last, multi_stage),
                is_first=first, is_last=last, in_flight=in_flight).fits
                for r in c.replica_parts(micro_batch))
            self._misc[key] = hit
        return hit  # type: ignore[return-value]

    def memory_bilinear(self, c: StageConfig, micro_batch: int, first: bool, last: bool,
                        multi_stage: bool) -> list[tuple[float, float, float, float]]:
        """Per replica group of `c`: (A, B, C, D) with memory(n, f) / capacity = A + B n + C f
        + D n f for n, f >= 1 layers and micro-batches in flight (exact: memory is bilinear in
        the two). The stage fits where every group's fraction is at most 1."""
        key = ("mem", c, micro_batch, first, last, multi_stage)
        hit = self._misc.get(key)
        if hit is not None:
            return hit  # type: ignore[return-value]
        check_deadline()
        out: list[tuple[float, float, float, float]] = []
        for r in c.replica_parts(micro_batch):
            part_key = ("memp", *_group_key(c, r, first, last, multi_stage))
            form = self._misc.get(part_key)
            if form is not None:  # the same replica group in another stage: cached per group
                out.append(form)  # type: ignore[arg-type]
                continue
            cap = self.instance.device(r.device).memory_gib * GIB

            def mem(n: int, f: int, r: ReplicaPart = r, cap: float = cap) -> float:
                return self.cm.replica_memory(
                    device=r.device, tp=r.tp, share=r.share, dp=c.dp, num_layers=n,
                    recompute=c.recompute, params=self.stage_params(n, first, last, multi_stage),
                    is_first=first, is_last=last, in_flight=f).total / cap

            m11, m21, m12, m22 = mem(1, 1), mem(2, 1), mem(1, 2), mem(2, 2)
            d = m22 - m21 - m12 + m11
            b = m21 - m11 - d
            cc = m12 - m11 - d
            form = (m11 - b - cc - d, b, cc, d)
            self._misc[part_key] = form
            out.append(form)
        self._misc[key] = out
        return out

    def window_shares(self) -> tuple[float, ...]:
        """The shares of the last micro-batch's backward the gradient reduction overlaps under
        the instance's schedules (`coefficients`' `window_share`): 1, and 1/v where the
        interleaved schedule is allowed. (1 always, so that what `may_dominate`
        reads at 1 stays a necessary condition of `dominates`.)"""
        training = self.instance.training
        if "interleaved-1f1b" in training.schedules:
            return (1.0, 1.0 / training.virtual_stages)
        return (1.0,)

    def may_dominate(self, configs: list[StageConfig], micro_batch: int, *, memory: bool,
                     check: Callable[[], None] = check_deadline) -> np.ndarray:
        """may[a, b]: necessary conditions for `dominates(a, b)` (`memory`) or for
        `dominates_but_memory(a, b)`, vectorised over configurations of one node-group set (no
        more GPUs in any node group; stage time no larger at 1 and L layers as a middle stage
        and as the only stage, the only stage's tail and forward time too; with `memory`, room
        for no fewer layers as a middle and as the only stage), so that the exact test runs on
        few pairs. The only stage is where most candidate pairs fail (llama3-8b-h100-a100-l40s:
        5,756 of the 7,261 pairs the middle-stage conditions let through, 296 of them dominated;
        at 16,384 GPUs its memory and forward time turned 8,600 of 11,600 exact tests down).
        `check` is called now and then (every 64 configurations, every n x n comparison: thousands
        of mixed ones), to stop where a deadline has passed."""
        L = self.instance.model.num_layers
        groups = configs[0].groups if configs else ()
        use = np.array([[c.gpus_in(g) for g in groups] for c in configs], dtype=float)
        feats = []
        for k, c in enumerate(configs):
            if k % 64 == 0:
                check()
            co = self.coefficients(c, micro_batch, False, False, True)
            only = self.coefficients(c, micro_batch, True, True, False)
            row = [co.tau(1), co.tau(L), only.tau(1), only.tau(L), only.tail(1), only.tail(L),
                   only.fwd(1), only.fwd(L)]
            if memory:
                row += [-self.max_layers(c, micro_batch, False, False, True, 1),
                        -self.max_layers(c, micro_batch, True, True, False, 1)]
            feats.append(row)
        f = np.array(feats, dtype=float).reshape(len(configs), 10 if memory else 8)
        tol = np.abs(f) * 1e-12 + 1e-15
        may: np.ndarray = np.asarray((use[:, None, :] <= use[None, :, :]).all(axis=2))
        for k in range(f.shape[1]):
            check()
            may &= f[:, None, k] <= f[None, :, k] + tol[None, :, k]
        np.fill_diagonal(may, False)
        return may

    def dominates(self, a: StageConfig, b: StageConfig, micro_batch: int,
                  other_groups: list[str | tuple[str, ...]]) -> bool:
        """True when `a` is never worse than `b`: the same node group(s), no more GPUs in any of
        them, no slower in any time piece, no heavier in memory at any layer
        count and micro-batches in flight (every replica group of `a` no fuller than some replica
        group of `b`), no slower point-to-point towards any neighbour (`other_groups`: the node
        groups, or node-group sets of mixed stages, a neighbour may use), in every pipeline role
        (formulations Sec. 2.3). Sufficient, not necessary.

        The tail at every overlap window the schedules use (`window_shares`): a slower backward
        hides more of the gradient reduction, so a tail no longer than `b`'s under 1F1B (both
        down to their last bucket) may be longer under the interleaved schedule, which overlaps
        1/v of the backward (a mixed stage with selective recomputation, the same memory as
        without it under a measured profile, was pruned by the one without and the search said
        "optimal" 1.06% slower than the best plan)."""
        if not self.dominates_but_memory(a, b, micro_batch, other_groups):
            return False
        key = ("dom", a, b, micro_batch)
        below = self._misc.get(key)
        if below is None:
            below = self._misc[key] = self._memory_below(a, b, micro_batch)
        return bool(below)

    def dominates_but_memory(self, a: StageConfig, b: StageConfig, micro_batch: int,
                             other_groups: list[str | tuple[str, ...]]) -> bool:
        """`dominates` without the memory test: `a` in place of `b`, with a layer count that
        fits `a` where the stage sits, keeps a plan valid and makes it no slower (the slot
        dominance of formulations Sec. 5, `formulation.slot_layer_floors`)."""
        if a.groups != b.groups or any(a.gpus_in(g) > b.gpus_in(g) for g in a.groups):
            return False
        if not all(self.fits_in_footprint(a, b, g, micro_batch) for g in a.groups):
            return False
        key = ("domt", a, b, micro_batch)
        below = self._misc.get(key)
        if below is None:
            below = self._misc[key] = self._times_below(a, b, micro_batch)
        if not below:
            return False
        return all(self.p2p_side(a, micro_batch, g) <= self.p2p_side(b, micro_batch, g) + 1e-15
                   for g in other_groups)

    _ROLES = ((True, True, False), (True, False, True), (False, True, True), (False, False, True))
    """(first, last, multi-stage) of the only, first, last and a middle stage."""

    def _times_below(self, a: StageConfig, b: StageConfig, micro_batch: int) -> bool:
        """The part of `dominates_but_memory` that reads only the two configurations' own
        coefficients: every time piece of `a` no larger than `b`'s, in every pipeline role and
        at every overlap window. Cached as ("domt", a, b, micro_batch) and carried across a
        change with the coefficients it reads (`search.carry`: by the configurations' node
        groups, which `a` and `b` share), whereas the footprint test (it reads the whole set of
        configurations of a node group, hence its node count) and the point-to-point test (the
        neighbours) are made each time. The exact tests are most of the mixed configurations'
        set-up: 7,706 of them, 1.2 s of its 2.4 s CPU, at the 09:30 event of
        instances/replan/spot-a100-v100 (2026-12-03)."""
        L = self.instance.model.num_layers
        for first, last, multi in self._ROLES:
            ca = self.coefficients(a, micro_batch, first, last, multi)
            cb = self.coefficients(b, micro_batch, first, last, multi)
            for attr in ("tau_pieces", "bwd_pieces", "tail_pieces", "fwd_pieces"):
                if not pieces_below(getattr(ca, attr), getattr(cb, attr), L):
                    return False
            for w in self.window_shares()[1:]:
                if not pieces_below(
                        self.coefficients(a, micro_batch, first, last, multi, w).tail_pieces,
                        self.coefficients(b, micro_batch, first, last, multi, w).tail_pieces, L):
                    return False
        return True

    def _memory_below(self, a: StageConfig, b: StageConfig, micro_batch: int) -> bool:
        """The memory part of `dominates`: every replica group of `a` no fuller than some
        replica group of `b` at every layer count and micro-batches in flight, in every role.
        Cached as ("dom", a, b, micro_batch), carried like ("domt", ...)."""
        for first, last, multi in self._ROLES:
            mas = self.memory_bilinear(a, micro_batch, first, last, multi)
            mbs = self.memory_bilinear(b, micro_batch, first, last, multi)
            if not all(any(_bilinear_below(ma, mb) for mb in mbs) for ma in mas):
                return False
        return True

    def in_flight(self, schedule: str, slot_from_end: int, num_stages: int,
                  num_micro_batches: int) -> int:
        """Micro-batches in flight at a position (Sec. 2), as the bound tables count them.

        Under the interleaved schedule: plain 1F1B's min(p - i, m), which is at most every
        count of the interleaved stage's peak (cost model Sec. 5.3: C_i / v >= p - i for v >= 2,
        its embedding's and its LM head's no fewer; with m a multiple of p, as the schedule
        needs), so the tables over-estimate room and every bound built on them stays valid.
        The model itself takes the exact counts (`formulation.build_slots`)."""
        if schedule == "interleaved-1f1b":
            schedule = "1f1b"
        return in_flight_micro_batches(schedule, num_stages - 1 - slot_from_end, num_stages,
                                       num_micro_batches)

    # -- pipeline point-to-point -------------------------------------------------------------------
    def p2p_side(self, c: StageConfig, micro_batch: int,
                 other_group: str | tuple[str, ...]) -> float:
        """p2p time of `c`'s replicas for one micro-batch towards a stage on `other_group` (a
        node group, or the node-group set of a mixed stage: the link depends on the node groups
        on each side only, cost model Sec. 6.2)."""
        key = (c, micro_batch, other_group)
        hit = self._p2p.get(key)
        if hit is not None:
            return hit
        check_deadline()
        value = self.cm.p2p_side_s(self.replicas(c, micro_batch), self._neighbour(other_group))
        self._p2p[key] = value
        return value

    def _neighbour(self, other_group: str | tuple[str, ...]) -> tuple[ReplicaGroup, ...]:
        """Replica groups standing for a neighbour on `other_group` (one GPU per node group:
        only the node groups matter to the link)."""
        key = ("neighbour", other_group)
        hit = self._misc.get(key)
        if hit is None:
            names = (other_group,) if isinstance(other_group, str) else other_group
            hit = tuple(ReplicaGroup(node_group=group.name, device=group.device, count=1, tp=1,
                                     micro_batch_share=1,
                                     placement=(Placement(node=0, replicas=1),))
                        for group in map(self.instance.cluster.group, names))
            self._misc[key] = hit
        return hit  # type: ignore[return-value]
