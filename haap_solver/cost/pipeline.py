"""The pipeline schedules: makespan of one iteration's micro-batches and its breakdown.

docs/cost-model.md Sec. 7 (formulas) and Sec. 8 (breakdown). 1F1B, interleaved 1F1B and GPipe;
the exact search encodes the same formulas (formulations/stage-assignment.md Sec. 5, and Sec. 1.4
for the interleaved schedule), so a change here needs one there.
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
                  blocking: bool = True, virtual_stages: int = 1,
                  wrap_s: float = 0.0, link_waits: int = 1) -> tuple[float, dict[str, float]]:
    """Pipeline makespan and its breakdown (Sec. 7).

    1F1B: sum_i tau_i + 2 sum_j c_j + (m - 1) T, with tau_i the stage's forward + backward per
    micro-batch and c_j the point-to-point time of link j. With blocking sends (`blocking`,
    training.pipeline_p2p: Megatron-LM's 1F1B without interleaving, DeepSpeed) each stage waits
    for its exchanges with both neighbours every micro-batch, T = max_i (tau_i + w (c_{i-1} +
    c_i)), w = `link_waits` (training.link_waits: 2 under DeepSpeed's pipeline engine, whose
    send and receive on a link are two blocking operations; the fill term is the same);
    overlapped, a link is a pipeline stage of its own, T = max(max_i tau_i, max_j 2 c_j).
    GPipe: all forwards, then all backwards, each with its own bottleneck, the same way.
    Interleaved 1F1B (`virtual_stages` v model chunks per stage, `wrap_s` the last stage's link
    back to the first): see `pipeline_makespan`.
    """
    return pipeline_makespan(schedule, [s.fwd_s for s in stages], [s.bwd_s for s in stages],
                             [s.p2p_next_s for s in stages[:-1]], stages, num_micro_batches,
                             blocking=blocking, virtual_stages=virtual_stages, wrap_s=wrap_s,
                             link_waits=link_waits)


def links_around(links: list[float], i: int) -> float:
    """The link times stage i exchanges over each micro-batch with blocking sends: with its
    previous and its next stage (0 at the ends). The exact layer split (search/dp.py) charges
    its stages the same."""
    return (links[i - 1] if i > 0 else 0.0) + (links[i] if i < len(links) else 0.0)


def interleaved_exchanges(links: list[float], wrap_s: float, chunks: int, i: int) -> float:
    """The link time stage i waits for per micro-batch under the interleaved schedule with
    blocking sends: each of its `chunks` model chunks exchanges with both neighbours (v times
    the plain schedule's), and the first and last stages also exchange over the wrap-around
    link between the last stage and the first, which chunks 0..v-2 cross (v - 1 times)."""
    ends = (i == 0) + (i == len(links))
    return chunks * links_around(links, i) + (chunks - 1) * wrap_s * ends


def pipeline_makespan(schedule: str, fwds: list[float], bwds: list[float], links: list[float],
                      stages: Sequence[_HasReplicas], m: int, *, blocking: bool,
                      virtual_stages: int = 1, wrap_s: float = 0.0,
                      link_waits: int = 1) -> tuple[float, dict[str, float]]:
    """pipeline_time() on the stages' forward and backward times and the links between them.

    Interleaved 1F1B (Sec. 7.1; Narayanan et al. SC'21 Sec. 2.2.2) with v = `virtual_stages`:
    every stage runs v chunks of tau_i / v each, so the fill and drain shrink v-fold while the
    bottleneck still does m tau_k of work: T = sum_i tau_i / v + 2 sum_j c_j + (m - 1/v) T_b.
    T_b = max(max_i tau_i, 2 v max_j c_j, 2 (v - 1) c_wrap) overlapped (every link carries v
    messages per micro-batch and direction, the wrap-around v - 1), max_i (tau_i +
    interleaved_exchanges) blocking. On p equal stages without links, m tau + (p - 1) tau / v.
    """
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
    elif schedule == "interleaved-1f1b":
        v = virtual_stages
        if blocking:
            bottleneck = max(t + interleaved_exchanges(links, wrap_s, v, i)
                             for i, t in enumerate(taus))
        else:
            bottleneck = max(max_tau, 2 * v * link_max, 2 * (v - 1) * wrap_s)
        total = sum(taus) / v + link_sum + (m - 1 / v) * bottleneck
        stall = (m - 1 / v) * (bottleneck - max_tau)
    else:
        bottleneck = (max(t + link_waits * a for t, a in zip(taus, around, strict=True))
                      if blocking else max(max_tau, 2 * link_max))
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
