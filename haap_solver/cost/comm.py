"""Alpha-beta communication costs (Hockney model) of the collectives a plan uses.

Ring algorithms (Thakur et al. 2005; Patarasuk & Yuan 2009): an all-reduce of `n` bytes over `p`
ranks moves 2 (p-1)/p n bytes per rank in 2 (p-1) steps; all-gather and reduce-scatter move half of
that in p-1 steps. Bandwidths are per GPU and per direction, in GB/s (1e9 bytes/s).
docs/cost-model.md, Sec. 6.1.
"""

from __future__ import annotations


def ring_allreduce_s(nbytes: float, ranks: int, gb_s: float, latency_s: float) -> float:
    if ranks <= 1 or nbytes <= 0:
        return 0.0
    return 2 * (ranks - 1) / ranks * nbytes / (gb_s * 1e9) + 2 * (ranks - 1) * latency_s


def ring_allgather_s(nbytes: float, ranks: int, gb_s: float, latency_s: float) -> float:
    """All-gather (or reduce-scatter) whose full result has `nbytes`."""
    if ranks <= 1 or nbytes <= 0:
        return 0.0
    return (ranks - 1) / ranks * nbytes / (gb_s * 1e9) + (ranks - 1) * latency_s


def p2p_s(nbytes: float, gb_s: float, latency_s: float) -> float:
    if nbytes <= 0:
        return 0.0
    return nbytes / (gb_s * 1e9) + latency_s
