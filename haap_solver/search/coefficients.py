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
from dataclasses import dataclass

from haap_solver.cost.evaluate import CostModel, ReplicaTerms
from haap_solver.cost.memory import in_flight_micro_batches
from haap_solver.errors import HaapError
from haap_solver.plan import Placement, ReplicaGroup, Stage
from haap_solver.search.space import StageConfig


@dataclass(frozen=True)
class Affine:
    """slope * n + intercept."""

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


def pieces_below(a: tuple[Affine, ...], b: tuple[Affine, ...], n_max: int) -> bool:
    """max(a) <= max(b) on [1, n_max]: every piece of `a` lies below one piece of `b` at both ends
    (then below it everywhere, affine functions). A sufficient test."""
    for pa in a:
        if not any(pa.at(1) <= pb.at(1) + 1e-15 and pa.at(n_max) <= pb.at(n_max) + 1e-15
                   for pb in b):
            return False
    return True


def _affine(f1: float, f2: float) -> Affine:
    return Affine(f2 - f1, 2 * f1 - f2)


class CoefficientCache:
    """Per-configuration coefficients, memory bounds and p2p times, computed once each."""

    def __init__(self, cost_model: CostModel):
        self.cm = cost_model
        self.instance = cost_model.instance
        self._coeffs: dict[tuple[StageConfig, int, bool, bool, bool], StageCoefficients] = {}
        self._max_layers: dict[tuple[StageConfig, int, bool, bool, bool, int], int] = {}
        self._p2p: dict[tuple[StageConfig, int, str], float] = {}
        self._misc: dict[tuple[object, ...], object] = {}
        self.hits = 0
        self.misses = 0

    # -- helpers ---------------------------------------------------------------------------------
    def replica(self, c: StageConfig, micro_batch: int) -> ReplicaGroup:
        """A replica group of `c` placed the canonical way (for the placement-aware cost terms)."""
        if c.single_node:
            placement: tuple[Placement, ...] = (Placement(node=0, replicas=c.dp),)
        else:
            per_node = c.gpus_per_node // c.tp
            placement = tuple(Placement(node=k, replicas=per_node)
                              for k in range(c.gpus // c.gpus_per_node))
        return ReplicaGroup(node_group=c.node_group, device=c.device, count=c.dp, tp=c.tp,
                            micro_batch_share=micro_batch // c.dp, placement=placement)

    def stage_params(self, n: int, first: bool, last: bool, multi_stage: bool) -> float:
        return self.cm.params_held(n, first, last, multi_stage)

    def terms(self, c: StageConfig, micro_batch: int, n: int, first: bool, last: bool,
              multi_stage: bool) -> ReplicaTerms:
        rep = self.replica(c, micro_batch)
        gb_s, lat = self.cm.dp_link((rep,)) if c.dp > 1 else (1.0, 0.0)
        return self.cm.replica_terms(
            device=c.device, tp=c.tp, share=micro_batch // c.dp, dp=c.dp, recompute=c.recompute,
            num_layers=n, params=self.stage_params(n, first, last, multi_stage), is_first=first,
            is_last=last, dp_gb_s=gb_s, dp_latency_s=lat)

    # -- coefficients ------------------------------------------------------------------------------
    def coefficients(self, c: StageConfig, micro_batch: int, first: bool, last: bool,
                     multi_stage: bool) -> StageCoefficients:
        key = (c, micro_batch, first, last, multi_stage)
        hit = self._coeffs.get(key)
        if hit is not None:
            self.hits += 1
            return hit
        self.misses += 1
        t1, t2, t3 = (self.terms(c, micro_batch, n, first, last, multi_stage) for n in (1, 2, 3))

        def aff(name: str) -> Affine:
            a = _affine(getattr(t1, name), getattr(t2, name))
            v3 = getattr(t3, name)
            if abs(a.at(3) - v3) > 1e-9 * max(1.0, abs(v3)):
                raise HaapError(f"internal error: {name} of {c.label()} is not affine in the "
                                "layer count; the exact search relies on it")
            return a

        fwd = Affine(aff("fwd_s").slope + aff("tp_fwd_s").slope,
                     aff("fwd_s").intercept + aff("tp_fwd_s").intercept)
        bwd_c = Affine(aff("bwd_s").slope + aff("tp_bwd_s").slope,
                       aff("bwd_s").intercept + aff("tp_bwd_s").intercept)
        o = self.cm.constants.zero3_overlap

        def with_zero(base: Affine, z: Affine) -> tuple[Affine, ...]:
            # base + z - o min(z, base) = max(base + (1-o) z, (1-o) base + z)   (Sec. 3, eq. 3.2)
            if z.slope == 0 and z.intercept == 0:
                return (base,)
            return (Affine(base.slope + (1 - o) * z.slope, base.intercept + (1 - o) * z.intercept),
                    Affine((1 - o) * base.slope + z.slope,
                           (1 - o) * base.intercept + z.intercept))

        fwd_pieces = with_zero(fwd, aff("zero_fwd_s"))
        bwd_pieces = with_zero(bwd_c, aff("zero_bwd_s"))
        tau_pieces = tuple(Affine(f.slope + b.slope, f.intercept + b.intercept)
                           for f in fwd_pieces for b in bwd_pieces)
        end, opt = aff("end_comm_s"), aff("optimizer_s")
        if end.slope == 0 and end.intercept == 0:
            tail_pieces: tuple[Affine, ...] = (opt,)
        elif self.instance.training.overlap_grad_reduce:
            # max(end - window, last bucket) + opt   (Sec. 3, eq. 3.4)
            bucket = t1.last_bucket_s
            tail_pieces = (
                Affine(end.slope - bwd_c.slope + opt.slope,
                       end.intercept - bwd_c.intercept + opt.intercept),
                Affine(opt.slope, bucket + opt.intercept),
            )
        else:
            tail_pieces = (Affine(end.slope + opt.slope, end.intercept + opt.intercept),)
        coeffs = StageCoefficients(fwd_pieces=fwd_pieces, bwd_pieces=bwd_pieces,
                                   tau_pieces=tau_pieces,
                                   tail_pieces=tail_pieces)
        self._coeffs[key] = coeffs
        return coeffs

    # -- memory-aware initialization ---------------------------------------------------------------
    def max_layers(self, c: StageConfig, micro_batch: int, first: bool, last: bool,
                   multi_stage: bool, in_flight: int) -> int:
        """Largest layer count whose memory fits every GPU of the stage (0: not even one layer).

        Memory is affine in n for n >= 1, so the bound is closed-form (formulations Sec. 2).
        """
        key = (c, micro_batch, first, last, multi_stage, in_flight)
        hit = self._max_layers.get(key)
        if hit is not None:
            return hit
        total = self.instance.model.num_layers

        def used(n: int) -> tuple[float, float]:
            mem = self.cm.replica_memory(
                device=c.device, tp=c.tp, share=micro_batch // c.dp, dp=c.dp, num_layers=n,
                recompute=c.recompute, params=self.stage_params(n, first, last, multi_stage),
                is_first=first, is_last=last, in_flight=in_flight)
            return mem.total, mem.capacity

        m1, cap = used(1)
        if m1 > cap * (1 + 1e-12):
            result = 0
        else:
            slope = used(2)[0] - m1
            result = total if slope <= 0 else min(total, 1 + math.floor((cap - m1) / slope))
            # Guard against floating-point edge effects: step down until it really fits.
            while result > 1 and used(result)[0] > cap * (1 + 1e-12):
                result -= 1
        self._max_layers[key] = result
        return result

    def memory_bilinear(self, c: StageConfig, micro_batch: int, first: bool, last: bool,
                        multi_stage: bool) -> tuple[float, float, float, float]:
        """(A, B, C, D) with memory(n, f) = A + B n + C f + D n f bytes for n, f >= 1 layers and
        micro-batches in flight (exact: memory is bilinear in the two)."""
        key = ("mem", c, micro_batch, first, last, multi_stage)
        hit = self._misc.get(key)
        if hit is not None:
            return hit  # type: ignore[no-any-return]

        def mem(n: int, f: int) -> float:
            return self.cm.replica_memory(
                device=c.device, tp=c.tp, share=micro_batch // c.dp, dp=c.dp, num_layers=n,
                recompute=c.recompute, params=self.stage_params(n, first, last, multi_stage),
                is_first=first, is_last=last, in_flight=f).total

        m11, m21, m12, m22 = mem(1, 1), mem(2, 1), mem(1, 2), mem(2, 2)
        d = m22 - m21 - m12 + m11
        b = m21 - m11 - d
        cc = m12 - m11 - d
        result = (m11 - b - cc - d, b, cc, d)
        self._misc[key] = result
        return result

    def dominates(self, a: StageConfig, b: StageConfig, micro_batch: int,
                  other_groups: list[str]) -> bool:
        """True when `a` is never worse than `b`: same node group, no more GPUs, no slower in any
        time piece, no heavier in memory at any layer count and micro-batches in flight, no slower
        point-to-point, in every pipeline role (formulations Sec. 2.3). Sufficient, not
        necessary."""
        if a.node_group != b.node_group or a.gpus > b.gpus:
            return False
        L = self.instance.model.num_layers
        for first, last, multi in ((True, True, False), (True, False, True), (False, True, True),
                                   (False, False, True)):
            ca = self.coefficients(a, micro_batch, first, last, multi)
            cb = self.coefficients(b, micro_batch, first, last, multi)
            for attr in ("tau_pieces", "bwd_pieces", "tail_pieces"):
                if not pieces_below(getattr(ca, attr), getattr(cb, attr), L):
                    return False
            if not pieces_below(ca.fwd_pieces, cb.fwd_pieces, L):
                return False
            ma = self.memory_bilinear(a, micro_batch, first, last, multi)
            mb = self.memory_bilinear(b, micro_batch, first, last, multi)
            dA, dB, dC, dD = (y - x for x, y in zip(ma, mb, strict=True))
            tol = 1e-9 * abs(mb[0])
            if (dA + dB + dC + dD < -tol or dB + dD < -tol or dC + dD < -tol or dD < -tol):
                return False
        return all(self.p2p_side(a, micro_batch, g) <= self.p2p_side(b, micro_batch, g) + 1e-15
                   for g in other_groups)

    def in_flight(self, schedule: str, slot_from_end: int, num_stages: int,
                  num_micro_batches: int) -> int:
        return in_flight_micro_batches(schedule, num_stages - 1 - slot_from_end, num_stages,
                                       num_micro_batches)

    # -- pipeline point-to-point -------------------------------------------------------------------
    def p2p_side(self, c: StageConfig, micro_batch: int, other_group: str) -> float:
        """p2p time of `c`'s replicas for one micro-batch towards a stage on `other_group`."""
        key = (c, micro_batch, other_group)
        hit = self._p2p.get(key)
        if hit is not None:
            return hit
        mine = self._stage(c, micro_batch)
        other_cfg = next(g for g in self.instance.cluster.node_groups if g.name == other_group)
        other = Stage(first_layer=0, num_layers=1, recompute="none", replicas=(ReplicaGroup(
            node_group=other_cfg.name, device=other_cfg.device, count=1, tp=1,
            micro_batch_share=micro_batch, placement=(Placement(node=0, replicas=1),)),))
        value = self.cm.p2p_side_s(mine, other, micro_batch)
        self._p2p[key] = value
        return value

    def _stage(self, c: StageConfig, micro_batch: int) -> Stage:
        return Stage(first_layer=0, num_layers=1, recompute=c.recompute,
                     replicas=(self.replica(c, micro_batch),))
