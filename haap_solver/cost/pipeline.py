"""The pipeline schedules: makespan of one iteration's micro-batches and its breakdown.

docs/cost-model.md Sec. 7 (formulas) and Sec. 8 (breakdown). 1F1B and GPipe; the exact search
encodes the same formulas (formulations/stage-assignment.md), so a change here needs one there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class _Replica(Protocol):
    """What the breakdown reads of a replica group (an evaluate.ReplicaReport)."""

    @property
    def fwd_s(self) -> float: ...
    @property
    def bwd_s(self) -> float: ...
    @property
    def compute_s(self) -> float: ...
    @property
    def tp_comm_s(self) -> float: ...
    @property
    def zero_comm_s(self) -> float: ...


class _HasReplicas(Protocol):
    """What pipeline_makespan reads of a stage (a StageReport or evaluate()'s stage entry)."""

    @property
    def replicas(self) -> Sequence[_Replica]: ...


class _HasTimes(_HasReplicas, Protocol):
    """A stage with its forward, backward and link times (an evaluate.StageReport)."""

    @property
    def fwd_s(self) -> float: ...
    @property
    def bwd_s(self) -> float: ...
    @property
    def p2p_next_s(self) -> float: ...


def pipeline_time(schedule: str, stages: Sequence[_HasTimes], num_micro_batches: int, *,
                  blocking: bool = True) -> tuple[float, dict[str, float]]:
    """Pipeline makespan and its breakdown (Sec. 7).

    1F1B: sum_i tau_i + 2 sum_j c_j + (m - 1) T, with tau_i the stage's forward + backward per
    micro-batch and c_j the point-to-point time of link j. With blocking sends (`blocking`,
    training.pipeline_p2p: Megatron-LM's 1F1B without interleaving, DeepSpeed) each stage waits
    for its exchanges with both neighbours every micro-batch, T = max_i (tau_i + c_{i-1} + c_i);
    overlapped, a link is a pipeline stage of its own, T = max(max_i tau_i, max_j 2 c_j).
    GPipe: all forwards, then all backwards, each with its own bottleneck, the same way.
    """
    return pipeline_makespan(schedule, [s.fwd_s for s in stages], [s.bwd_s for s in stages],
                             [s.p2p_next_s for s in stages[:-1]], stages, num_micro_batches,
                             blocking=blocking)


def links_around(links: list[float], i: int) -> float:
    """The link times stage i exchanges over each micro-batch with blocking sends: with its
    previous and its next stage (0 at the ends). The exact layer split (search/dp.py) charges
    its stages the same."""
    return (links[i - 1] if i > 0 else 0.0) + (links[i] if i < len(links) else 0.0)


def pipeline_makespan(schedule: str, fwds: list[float], bwds: list[float], links: list[float],
                      stages: Sequence[_HasReplicas], m: int, *,
                      blocking: bool) -> tuple[float, dict[str, float]]:
    """pipeline_time() on the stages' forward and backward times and the links between them."""
    link_sum = 2 * sum(links)
    link_max = max(links, default=0.0)
    taus = [f + b for f, b in zip(fwds, bwds, strict=True)]
    max_tau = max(taus)
    around = [links_around(links, i) for i in range(len(taus))]
    if schedule == "gpipe":
        max_f, max_b = max(fwds), max(bwds)
        if blocking:
            fmax = max(f + a for f, a in zip(fwds, around, strict=True))
            bmax = max(b + a for b, a in zip(bwds, around, strict=True))
        else:
            fmax = max(max_f, link_max)
            bmax = max(max_b, link_max)
        total = sum(fwds) + sum(bwds) + link_sum + (m - 1) * (fmax + bmax)
        # Only the part of each bottleneck that a link (not a stage) sets is p2p time; the
        # forward and backward maxima falling on different stages is imbalance (bubble).
        stall = (m - 1) * (fmax - max_f + bmax - max_b)
    else:
        bottleneck = (max(t + a for t, a in zip(taus, around, strict=True)) if blocking
                      else max(max_tau, 2 * link_max))
        total = sum(taus) + link_sum + (m - 1) * bottleneck
        stall = (m - 1) * (bottleneck - max_tau)
    # The bottleneck stage: the first with the largest forward + backward.
    k = stages[taus.index(max_tau)]
    rep = max(k.replicas, key=lambda r: r.fwd_s + r.bwd_s)
    compute = m * rep.compute_s
    tp = m * rep.tp_comm_s
    zero = m * rep.zero_comm_s
    p2p = link_sum + stall
    # Clamped: on a single stage the difference is a rounding residue (-1e-16), not a bubble.
    bubble = max(total - compute - tp - zero - p2p, 0.0)
    return total, {"compute_s": compute, "tp_comm_s": tp, "bubble_s": bubble, "p2p_s": p2p,
                   "dp_comm_s": zero, "optimizer_s": 0.0}
