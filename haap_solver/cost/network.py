"""Communication terms of a plan beyond the collectives' formulas (``comm``): what a stage's
point-to-point time depends on, and how much of its ZeRO and data-parallel traffic overlaps
compute. docs/cost-model.md Sec. 6.
"""

from __future__ import annotations

from typing import Protocol

from haap_solver.cost.efficiency import CostConstants
from haap_solver.plan import ReplicaGroup


class _Terms(Protocol):
    """What the overlap rules read of a replica's terms (an evaluate.ReplicaTerms)."""

    @property
    def fwd_s(self) -> float: ...
    @property
    def bwd_s(self) -> float: ...
    @property
    def tp_fwd_s(self) -> float: ...
    @property
    def tp_bwd_s(self) -> float: ...
    @property
    def zero_fwd_s(self) -> float: ...
    @property
    def zero_bwd_s(self) -> float: ...
    @property
    def end_comm_s(self) -> float: ...
    @property
    def last_bucket_s(self) -> float: ...


def gpus_per_node(r: ReplicaGroup, node_size: int) -> int:
    """GPUs of a replica group sharing one node's NICs, under the canonical placement
    (formulations Sec. 1: a sub-node group packed on one node, a whole-node group filling its
    nodes): min(count x TP, node size). A function of the configuration, never of where the
    replicas happen to sit: spreading a 2-GPU stage over two nodes would otherwise buy it a NIC
    per GPU that the search, which places stages canonically, cannot see (a plan outside the
    search's costs was 0.4% faster on a random instance, seed 2074). Spread placements are
    therefore costed as if packed, like the data-parallel ring (docs/cost-model.md Sec. 6.2)."""
    return min(r.count * r.tp, node_size)


def p2p_signature(replicas: tuple[ReplicaGroup, ...]) -> tuple[tuple[str, str, int, int, int],
                                                                 ...]:
    """What a stage's point-to-point times depend on: each replica group's node group, device,
    TP degree, share and replica count (not its recomputation, nor where it sits: Sec. 6.2).
    The p2p caches are keyed by it, so stages that differ in nothing else share one computation."""
    return tuple((r.node_group, r.device, r.tp, r.micro_batch_share, r.count)
                 for r in replicas)


def _exposed(z: float, compute: float, overlap: float) -> float:
    """z - o min(z, compute) = max((1 - o) z, z - o compute): convex in the layer count; and
    compute + exposed has slope 1 or 1 - o >= 0 in compute, so a faster pass is never slower."""
    return z - overlap * min(z, compute)


def zero_exposed_s(terms: _Terms, constants: CostConstants) -> tuple[float, float]:
    """ZeRO traffic not hidden by prefetching, (forward, backward) per micro-batch (Sec. 6.4).

    Each pass's traffic overlaps that pass's own compute, so a faster device never makes a pass
    (hence a plan) slower: fwd + exposed_fwd is non-decreasing in fwd.
    """
    o = constants.zero3_overlap
    return (_exposed(terms.zero_fwd_s, terms.fwd_s + terms.tp_fwd_s, o),
            _exposed(terms.zero_bwd_s, terms.bwd_s + terms.tp_bwd_s, o))


def end_exposed_s(terms: _Terms, overlap: bool, window_share: float = 1.0) -> float:
    """Exposed end-of-iteration collective.

    Overlapped with the last micro-batch's backward, except its last bucket (Sec. 6.3). Under
    the interleaved schedule (`window_share` 1/v) only with the last chunk's backward, 1/v of
    it: the last chunk's gradients are final only then (the other chunks' earlier, so this is
    conservative), and it keeps a faster stage from ever making the plan slower (the pipeline
    term falls by at least 1/v of a stage's backward, Sec. 7.1).
    """
    if not overlap or terms.end_comm_s <= 0:
        return terms.end_comm_s
    return max(terms.end_comm_s - window_share * (terms.bwd_s + terms.tp_bwd_s),
               terms.last_bucket_s)
