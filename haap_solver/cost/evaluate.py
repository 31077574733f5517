"""Cost of a plan: iteration time (with a breakdown), throughput, MFU and per-GPU memory.

`CostModel` composes the terms, each in the module of its kind: compute (``compute``: kernels,
precision, launch floor), collectives (``comm``) and their placement and overlap (``network``),
memory (``memory``), the pipeline schedule (``pipeline``) and measured profiles (``profile``).

`CostModel` caches every per-layer coefficient by the configuration it depends on, so the searches
that call it in their inner loop pay for each (device, TP, batch share, recomputation) once.
`evaluate()` also caches each stage's replica reports by the stage's configuration and position
(replica groups, recomputation, layer count, first/last, micro-batches in flight) and each
pipeline link by the two stages' replica groups, so re-costing a plan whose stages it has seen
costs little more than the pipeline formula. Cached reports are frozen and shared between
evaluations. The formulas are in docs/cost-model.md; the section numbers cited below refer to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from haap_solver.cluster import INTRA_NODE_LATENCY_US
from haap_solver.cost import comm, compute, flops, memory
from haap_solver.cost.efficiency import DEFAULT_CONSTANTS, CostConstants, check_families
from haap_solver.cost.network import (
    Links,
    dp_traffic,
    end_exposed_s,
    p2p_signature,
    zero_exposed_s,
)
from haap_solver.cost.pipeline import pipeline_makespan, pipeline_time
from haap_solver.cost.profile import Profile, load_profile
from haap_solver.instance import Instance
from haap_solver.plan import Plan, ReplicaGroup, Stage

__all__ = ["BREAKDOWN_KEYS", "CostModel", "EndCost", "Evaluation", "LayerCost", "MemoryReport",
           "ReplicaReport", "ReplicaTerms", "StageReport", "end_exposed_s",
           "pipeline_time", "zero_exposed_s"]

BREAKDOWN_KEYS = ("compute_s", "tp_comm_s", "bubble_s", "p2p_s", "dp_comm_s", "optimizer_s")


# evaluate()'s stage and link caches are cleared when they reach this many entries (a stage entry
# with one replica group takes about 1.3 kB, so the stage cache stays below about 25 MB).
_CACHE_LIMIT = 1 << 14


@dataclass(frozen=True, slots=True)
class LayerCost:
    """Per-micro-batch cost of one decoder layer on one replica (one TP group)."""

    fwd_s: float
    """Forward compute (no communication)."""
    bwd_s: float
    """Backward compute, recomputation included."""
    tp_fwd_s: float
    """Tensor-parallel communication in the forward pass."""
    tp_bwd_s: float
    """Tensor-parallel communication in the backward pass (recomputation's forward included)."""
    activation_bytes: float
    """Activations one layer keeps per micro-batch in flight."""
    working_bytes: float
    """Extra working memory while recomputing one layer (full recomputation only)."""
    optimizer_s: float
    """Optimizer step for this layer's local parameters before ZeRO sharding (0 if unknown)."""
    extrapolated: str | None = None
    """Set when a measured profile had to be extrapolated for this entry."""


@dataclass(frozen=True, slots=True)
class EndCost:
    """Embedding (first stage) or LM head + loss (last stage) cost per micro-batch."""

    fwd_s: float
    bwd_s: float
    tp_fwd_s: float
    tp_bwd_s: float


@dataclass(frozen=True, slots=True)
class ReplicaTerms:
    """The raw per-micro-batch and per-iteration quantities of one replica of a stage.

    Every field is affine in the stage's layer count for a fixed configuration; the exact search
    extracts those affine coefficients from this one function, so the solver's objective and
    `evaluate()` can never disagree about a formula (see formulations/stage-assignment.md).
    """

    fwd_s: float
    """Forward compute per micro-batch."""
    bwd_s: float
    """Backward compute per micro-batch, recomputation included."""
    tp_fwd_s: float
    tp_bwd_s: float
    zero_fwd_s: float
    """ZeRO-3 weight all-gather of the forward pass, per micro-batch, before overlap."""
    zero_bwd_s: float
    """ZeRO-2/3 traffic of the backward pass (ZeRO-3 weight all-gather, gradient reduce-scatter),
    per micro-batch, before overlap (0 for ZeRO 0/1 or DP 1)."""
    end_comm_s: float
    """End-of-iteration gradient (ZeRO 0/1) or weight (ZeRO-2) collective, before overlap."""
    last_bucket_s: float
    """The same collective for the last gradient bucket, which cannot overlap (Sec. 6.3)."""
    optimizer_s: float
    """Optimizer step, plus `param_gather_s` (exposed after the step, so part of the tail)."""
    params_local: float
    param_gather_s: float = 0.0
    """Distributed optimizer's parameter all-gather after the step when it is not overlapped
    (ZeRO-1, `overlap_param_gather` false; Sec. 6.3); included in `optimizer_s`."""

    @property
    def compute_mb_s(self) -> float:
        return self.fwd_s + self.bwd_s + self.tp_fwd_s + self.tp_bwd_s

    @property
    def zero_mb_s(self) -> float:
        return self.zero_fwd_s + self.zero_bwd_s


@dataclass(frozen=True, slots=True)
class MemoryReport:
    """Peak memory of one GPU of a replica group, bytes."""

    weights: float
    grads: float
    optimizer: float
    activations: float
    extras: float
    reserved: float
    capacity: float

    @property
    def total(self) -> float:
        return (self.weights + self.grads + self.optimizer + self.activations + self.extras
                + self.reserved)

    @property
    def fits(self) -> bool:
        return self.total <= self.capacity * (1 + 1e-12)

    def as_gib(self) -> dict[str, float]:
        g = memory.GIB
        return {"weights_gib": self.weights / g, "grads_gib": self.grads / g,
                "optimizer_gib": self.optimizer / g, "activations_gib": self.activations / g,
                "extras_gib": self.extras / g, "reserved_gib": self.reserved / g,
                "total_gib": self.total / g, "capacity_gib": self.capacity / g}


@dataclass(frozen=True, slots=True)
class ReplicaReport:
    """Time and memory of one replica group of a stage (frozen: evaluations share them)."""

    node_group: str
    device: str
    count: int
    tp: int
    micro_batch_share: int
    fwd_s: float
    """Forward per micro-batch, TP communication included."""
    bwd_s: float
    """Backward per micro-batch, TP communication and exposed ZeRO traffic included."""
    compute_s: float
    tp_comm_s: float
    zero_comm_s: float
    dp_comm_s: float
    """Exposed end-of-iteration gradient/parameter traffic."""
    optimizer_s: float
    memory: MemoryReport
    params_local: float


@dataclass(slots=True)
class StageReport:
    index: int
    first_layer: int
    num_layers: int
    recompute: str
    in_flight: float
    """Micro-batches of the stage's activations held at its peak (fractional under the
    interleaved schedule: chunks in flight / v)."""
    fwd_s: float
    bwd_s: float
    p2p_next_s: float
    """Point-to-point time per micro-batch and direction to the next stage (0 for the last;
    under the interleaved schedule the last stage's is its link back to the first)."""
    tail_s: float
    """Exposed data-parallel communication plus optimizer step after the pipeline drains."""
    replicas: list[ReplicaReport]

    @property
    def time_per_micro_batch_s(self) -> float:
        return self.fwd_s + self.bwd_s


@dataclass
class Evaluation:
    """What a plan costs. `iteration_time_s` is the number every search and report uses."""

    iteration_time_s: float
    tokens_per_s: float
    mfu: float
    """Model FLOPs (no recomputation) per second over the summed peak of the GPUs the plan uses."""
    hfu: float
    """Hardware FLOPs utilisation: as MFU but counting recomputation."""
    breakdown: dict[str, float]
    """Seconds of the iteration by kind; the values add up to `iteration_time_s`."""
    stages: list[StageReport]
    num_gpus_used: int
    memory_ok: bool
    peak_memory_fraction: float
    """Largest used/capacity ratio over all GPUs."""
    extrapolated: list[str] = field(default_factory=list)
    """Profile entries that were extrapolated rather than measured."""
    cost_per_iteration: float | None = None
    """Price of the iteration on the nodes the plan touches, rented whole (haap_solver.objective);
    None where a group it uses has no price_per_gpu_hour."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "iteration_time_s": self.iteration_time_s,
            "tokens_per_s": self.tokens_per_s,
            "mfu": self.mfu,
            "hfu": self.hfu,
            "num_gpus_used": self.num_gpus_used,
            "memory_ok": self.memory_ok,
            "peak_memory_fraction": self.peak_memory_fraction,
            "breakdown": dict(self.breakdown),
            "extrapolated": list(self.extrapolated),
            "cost_per_iteration": self.cost_per_iteration,
            "stages": [
                {
                    "index": s.index, "first_layer": s.first_layer, "num_layers": s.num_layers,
                    "recompute": s.recompute, "in_flight": s.in_flight, "fwd_s": s.fwd_s,
                    "bwd_s": s.bwd_s, "p2p_next_s": s.p2p_next_s, "tail_s": s.tail_s,
                    "replicas": [
                        {
                            "node_group": r.node_group, "device": r.device, "count": r.count,
                            "tp": r.tp, "micro_batch_share": r.micro_batch_share,
                            "fwd_s": r.fwd_s, "bwd_s": r.bwd_s, "compute_s": r.compute_s,
                            "tp_comm_s": r.tp_comm_s, "zero_comm_s": r.zero_comm_s,
                            "dp_comm_s": r.dp_comm_s, "optimizer_s": r.optimizer_s,
                            "params_local": r.params_local, "memory": r.memory.as_gib(),
                        }
                        for r in s.replicas
                    ],
                }
                for s in self.stages
            ],
        }


class CostModel:
    """The cost model bound to one instance, with caches of every per-configuration coefficient."""

    def __init__(self, instance: Instance, *, constants: CostConstants = DEFAULT_CONSTANTS,
                 profile: Profile | None = None, embedding_held: bool = True,
                 head_held: bool = True):
        self.instance = instance
        self.embedding_held = embedding_held
        """False: no stage holds the embedding (its time, parameters and activations are left
        out where a stage is first). A relaxation, never used to cost a plan: the exact search
        bounds the decoder stages of plans with an embedding-only first stage with it
        (formulations/stage-assignment.md Sec. 1.2)."""
        self.head_held = head_held
        """False: no stage holds the LM head and the loss (left out where a stage is last); the
        relaxation for plans with a head-only last stage, as `embedding_held`."""
        self.model = instance.model
        self.training = instance.training
        check_families(instance, constants)
        self.constants = constants
        if profile is None and instance.profile:
            profile = load_profile(instance.profile)
        self.profile = profile
        self._layer: dict[tuple[str, int, int, str], LayerCost] = {}
        self._first: dict[tuple[str, int, int], EndCost] = {}
        self._last: dict[tuple[str, int, int], EndCost] = {}
        self.cache_hits = 0
        self.cache_misses = 0
        m = self.model
        self.params_per_layer = float(m.params_per_layer)
        self.act_bytes = self.training.bytes_per_value
        self.state_per_param = memory.model_state_bytes_per_param  # shorthand
        self._state_bytes = memory.state_bytes(self.training)
        self._reserved_bytes = self.training.reserved_memory_gib * memory.GIB
        self._per_seq_bytes = m.seq_length * m.hidden_size * self.act_bytes
        self._states: dict[int, tuple[float, float, float]] = {}
        self._model_flops_cache: dict[int, float] = {}
        # evaluate()'s caches (see the module docstring); bounded by _CACHE_LIMIT entries.
        self._stages: dict[tuple[Any, ...], _StageEntry] = {}
        self._links: dict[tuple[int, int], tuple[_StageEntry, _StageEntry, float]] = {}
        self._p2p: dict[tuple[tuple[tuple[str, str, int, int, int], ...], ...], float] = {}
        self._p2p_sides: dict[tuple[tuple[tuple[str, str, int, int, int], ...], ...],
                              float] = {}
        self.links = Links(instance, constants, self._per_seq_bytes)

    # -- Per-layer coefficients (Sec. 2-4) ---------------------------------------------------
    def _constants_of(self, device: str) -> CostConstants:
        """The constants of `device`'s efficiency family (Sec. 4.2)."""
        return self.constants.for_family(self.instance.device(device).efficiency_family)

    def peak_flops(self, device: str) -> float:
        """Peak matmul FLOP/s of one GPU of `device` in the training precision (Sec. 4.1)."""
        return compute.matmul_flops_per_s(self.instance.device(device), self.training)

    def layer_cost(self, device: str, tp: int, batch: int, recompute: str) -> LayerCost:
        key = (device, tp, batch, recompute)
        hit = self._layer.get(key)
        if hit is not None:
            self.cache_hits += 1
            return hit
        self.cache_misses += 1
        cost = self._layer_cost(device, tp, batch, recompute)
        self._layer[key] = cost
        return cost

    def _tp_allreduce_s(self, device: str, tp: int, batch: int) -> float:
        dev = self.instance.device(device)
        nbytes = batch * self.model.seq_length * self.model.hidden_size * self.act_bytes
        return comm.ring_allreduce_s(nbytes, tp, dev.link_gb_s(tp)
                                     * self.constants.intra_node_efficiency,
                                     INTRA_NODE_LATENCY_US * 1e-6)

    def _layer_cost(self, device: str, tp: int, batch: int, recompute: str) -> LayerCost:
        m = self.model
        dev = self.instance.device(device)
        # Sec. 3: two all-reduces (or all-gather + reduce-scatter with SP) per layer and pass.
        ar = self._tp_allreduce_s(device, tp, batch)
        tp_fwd = 2 * ar
        tp_bwd = 2 * ar + (2 * ar if recompute == "full" else 0.0)
        act = memory.layer_activation_bytes(m, self.training, batch, tp, recompute)
        working = (memory.layer_activation_bytes(m, self.training, batch, tp, "none")
                   if recompute == "full" else 0.0)
        extrapolated = None
        if self.profile is not None and self.profile.has_device(device):
            entry = self.profile.lookup(device, tp, batch)
            fwd = entry.layer_fwd_s
            # Recomputation adds its share of the forward (measured without recomputation).
            share = (flops.recompute_forward_flops(m, batch, recompute)
                     / flops.layer_forward_flops(m, batch))
            bwd = entry.layer_bwd_s + share * fwd
            opt = entry.layer_optimizer_s or 0.0
            if entry.layer_activation_bytes is not None and recompute == "none":
                act = entry.layer_activation_bytes
            extrapolated = entry.extrapolated
            # Measured times include TP communication.
            tp_fwd = tp_bwd = 0.0
        else:
            if self.training.tp_comm_overlap and tp > 1:
                tp_fwd, tp_bwd = compute.tp_comm_beyond_gemms(
                    m, self.training, dev, self._constants_of(device), tp, batch, recompute,
                    tp_fwd, tp_bwd)
            times = compute.layer_compute(m, self.training, dev, self._constants_of(device),
                                          tp, batch, recompute, tp_fwd, tp_bwd)
            fwd, bwd = times.fwd_s, times.bwd_s
            opt = 0.0
        return LayerCost(fwd_s=fwd, bwd_s=bwd, tp_fwd_s=tp_fwd, tp_bwd_s=tp_bwd,
                         activation_bytes=act, working_bytes=working, optimizer_s=opt,
                         extrapolated=extrapolated)

    def first_cost(self, device: str, tp: int, batch: int) -> EndCost:
        """Embedding lookup: memory-bound, reads and writes b s h values (Sec. 2.3)."""
        key = (device, tp, batch)
        hit = self._first.get(key)
        if hit is not None:
            return hit
        m = self.model
        dev = self.instance.device(device)
        if self.profile is not None and self.profile.has_device(device):
            e = self.profile.lookup(device, tp, batch)
            cost = EndCost(e.embedding_fwd_s, e.embedding_bwd_s, 0.0, 0.0)
        else:
            times = compute.embedding_compute(m, self.training, dev, self._constants_of(device),
                                              batch)
            # Vocabulary-parallel embedding ends in one all-reduce per pass.
            ar = self._tp_allreduce_s(device, tp, batch)
            cost = EndCost(times.fwd_s, times.bwd_s, ar, ar)
        self._first[key] = cost
        return cost

    def last_cost(self, device: str, tp: int, batch: int) -> EndCost:
        """LM head GEMM (2 b s h V, backward twice) plus the fp32 softmax/cross-entropy passes."""
        key = (device, tp, batch)
        hit = self._last.get(key)
        if hit is not None:
            return hit
        m = self.model
        dev = self.instance.device(device)
        if self.profile is not None and self.profile.has_device(device):
            e = self.profile.lookup(device, tp, batch)
            cost = EndCost(e.head_fwd_s, e.head_bwd_s, 0.0, 0.0)
        else:
            times = compute.head_compute(m, self.training, dev, self._constants_of(device), tp,
                                         batch)
            ar = self._tp_allreduce_s(device, tp, batch)
            cost = EndCost(times.fwd_s, times.bwd_s, ar, ar)
        self._last[key] = cost
        return cost

    # -- Stage-level quantities ---------------------------------------------------------------
    def stage_params(self, stage: Stage, index: int, num_stages: int) -> float:
        """Parameters a stage holds: its layers, plus embedding (first) and head (last)."""
        return self.params_held(stage.num_layers, index == 0, index == num_stages - 1,
                                  num_stages > 1)

    def params_held(self, num_layers: int, is_first: bool, is_last: bool,
                    several_stages: bool) -> float:
        """Parameters of a stage of `num_layers` layers in its pipeline role."""
        m = self.model
        params = num_layers * self.params_per_layer
        is_first = is_first and self.embedding_held
        is_last = is_last and self.head_held
        if is_first:
            params += m.embedding_params
        if is_last:
            params += m.head_params
            if m.tied_embeddings and several_stages:
                # Megatron keeps a copy of the tied embedding on the last stage.
                params += m.vocab_size * m.hidden_size
        return params

    def embedding_params_local(self, tp: int) -> float:
        """Parameters of the input embedding on one GPU of a TP group: the word table split
        by TP (vocabulary-parallel), learned positions whole (Megatron-LM's layout)."""
        m = self.model
        table = m.vocab_size * m.hidden_size
        return table / tp + (m.embedding_params - table)

    def _state_bytes_per_param(self, dp: int) -> tuple[float, float, float]:
        hit = self._states.get(dp)
        if hit is None:
            hit = self._states[dp] = memory.model_state_bytes_per_param(self.training, dp)
        return hit

    def replica_memory(self, *, device: str, tp: int, share: int, dp: int, num_layers: int,
                       recompute: str, params: float, is_first: bool, is_last: bool,
                       in_flight: float, in_flight_first: float | None = None,
                       in_flight_last: float | None = None) -> MemoryReport:
        """Peak bytes on one GPU of a replica (Sec. 5).

        `in_flight` is the micro-batches of the whole stage's activations held at the peak;
        `in_flight_first` / `in_flight_last` (default `in_flight`) the micro-batches whose
        embedding / LM-head activations are held then: under the interleaved schedule those of
        the first / last model chunk (memory.interleaved_in_flight)."""
        m, t = self.model, self.training
        is_first = is_first and self.embedding_held
        is_last = is_last and self.head_held
        w, g, o = self._state_bytes_per_param(dp)
        local = params / tp
        layer = self.layer_cost(device, tp, share, recompute)
        acts = in_flight * num_layers * layer.activation_bytes
        if num_layers > 0:
            acts += layer.working_bytes
        extras = 0.0
        if is_first:
            extras += ((in_flight if in_flight_first is None else in_flight_first)
                       * memory.first_stage_extra_activation_bytes(m, t, share, tp))
        if is_last:
            # One micro-batch under 1F1B, plain or interleaved (the last stage runs each
            # backward of its last chunk right after its forward); all m under GPipe.
            extras += ((in_flight if in_flight_last is None else in_flight_last)
                       * memory.last_stage_extra_activation_bytes(m, t, share, tp))
        return MemoryReport(weights=local * w, grads=local * g, optimizer=local * o,
                            activations=acts, extras=extras, reserved=self._reserved_bytes,
                            capacity=self.instance.device(device).memory_gib * memory.GIB)

    def replica_terms(self, *, device: str, tp: int, share: int, dp: int, recompute: str,
                      num_layers: int, params: float, is_first: bool, is_last: bool,
                      dp_gb_s: float, dp_latency_s: float) -> ReplicaTerms:
        """Time quantities of one replica of a stage (Sec. 2-4, 6.3, 6.4, 8)."""
        t, c = self.training, self.constants
        is_first = is_first and self.embedding_held
        is_last = is_last and self.head_held
        layer = self.layer_cost(device, tp, share, recompute)
        fwd_c = num_layers * layer.fwd_s
        bwd_c = num_layers * layer.bwd_s
        tp_f = num_layers * layer.tp_fwd_s
        tp_b = num_layers * layer.tp_bwd_s
        if is_first:
            e = self.first_cost(device, tp, share)
            fwd_c += e.fwd_s
            bwd_c += e.bwd_s
            tp_f += e.tp_fwd_s
            tp_b += e.tp_bwd_s
        if is_last:
            e = self.last_cost(device, tp, share)
            fwd_c += e.fwd_s
            bwd_c += e.bwd_s
            tp_f += e.tp_fwd_s
            tp_b += e.tp_bwd_s
        local = params / tp
        zero_fwd = zero_bwd = end_comm = last_bucket = param_gather = 0.0
        if dp > 1:
            sb = self._state_bytes
            # The last bucket holds at most one bucket, and (approximately) at most one layer;
            # on the first stage at least the embedding table, whose gradient comes last.
            bucket = min(c.grad_bucket_params, self.params_per_layer / tp)
            if is_first:
                bucket = max(bucket, self.embedding_params_local(tp))
            zero_fwd, zero_bwd, end_comm, last_bucket, param_gather = dp_traffic(
                t, local * sb.grads, local * sb.weights, bucket * sb.grads, bucket * sb.weights,
                dp, dp_gb_s, dp_latency_s)
        opt_local = local / dp if t.zero_stage >= 1 else local
        if layer.optimizer_s and self.profile is not None:
            opt = layer.optimizer_s * (opt_local / max(self.params_per_layer / tp, 1.0))
        else:
            opt = compute.optimizer_step_s(opt_local, self.instance.device(device), c)
        return ReplicaTerms(fwd_s=fwd_c, bwd_s=bwd_c, tp_fwd_s=tp_f, tp_bwd_s=tp_b,
                            zero_fwd_s=zero_fwd, zero_bwd_s=zero_bwd, end_comm_s=end_comm,
                            last_bucket_s=last_bucket, optimizer_s=opt + param_gather,
                            params_local=local, param_gather_s=param_gather)

    def dp_link(self, replicas: tuple[ReplicaGroup, ...]) -> tuple[float, float]:
        """(GB/s per GPU, latency s) of the ring joining a stage's replicas (Sec. 6.3)."""
        return self.links.dp_ring(replicas)

    def p2p_time(self, sender: Stage, receiver: Stage, micro_batch: int) -> float:
        """Activations (forward) or their gradients (backward) of one micro-batch, per direction.

        Each replica sends its share, split over its TP ranks (scatter/gather optimisation,
        Narayanan et al. SC'21 Sec. 4.1); the slower of the two stages' sides counts. The link is
        NVLink/PCIe only when both stages live in one single-node node group; otherwise the
        network between the stages' node groups, each side at its own GPUs' share of its
        node's NICs. Two stages that happen to share a node of a multi-node group are still
        costed over the network (conservative, and it keeps the cost a function of the stage
        configurations, which the exact search relies on). See docs/cost-model.md Sec. 6.2.
        The shares are the replica groups' own, so `micro_batch` does not enter.
        """
        return self._p2p_pair(sender.replicas, receiver.replicas)

    def _p2p_pair(self, a: tuple[ReplicaGroup, ...], b: tuple[ReplicaGroup, ...]) -> float:
        key = (p2p_signature(a), p2p_signature(b))
        hit = self._p2p.get(key)
        if hit is None:
            if len(self._p2p) >= _CACHE_LIMIT:
                self._p2p.clear()
            hit = self._p2p[key] = max(self.links.p2p_side(a, b), self.links.p2p_side(b, a))
        return hit

    def p2p_side_s(self, replicas: tuple[ReplicaGroup, ...],
                   other: tuple[ReplicaGroup, ...]) -> float:
        """The slowest of a stage's replica groups `replicas` sending (or receiving) its share
        to/from a neighbouring stage with replica groups `other`.

        A function of `replicas` and the node groups of `other` only (the other side's own NIC
        sharing counts when that side is costed): the exact search asks it with a stand-in
        neighbour of one GPU per node group."""
        key = (p2p_signature(replicas), p2p_signature(other))
        hit = self._p2p_sides.get(key)
        if hit is None:
            if len(self._p2p_sides) >= _CACHE_LIMIT:
                self._p2p_sides.clear()
            hit = self._p2p_sides[key] = self.links.p2p_side(replicas, other)
        return hit

    # -- The plan ------------------------------------------------------------------------------
    def _stage_entry(self, stage: Stage, is_first: bool, is_last: bool,
                     in_flight: tuple[float, float, float],
                     schedule: str = "1f1b") -> _StageEntry:
        """Everything evaluate() needs of one stage that does not depend on its neighbours."""
        c, m = self.constants, self.model
        overlap = self.training.overlap_grad_reduce
        # The gradient reduction overlaps the last backward: 1/v of it when interleaved.
        window = (1.0 / self.training.virtual_stages if schedule == "interleaved-1f1b"
                  else 1.0)
        num_layers, recompute = stage.num_layers, stage.recompute
        # A stage that is both first and last is the only one: no tied-embedding copy.
        params = self.params_held(num_layers, is_first, is_last, not (is_first and is_last))
        dp = stage.dp
        dp_gb_s, dp_lat = self.dp_link(stage.replicas) if dp > 1 else (1.0, 0.0)
        reps: list[ReplicaReport] = []
        notes: list[tuple[str, str]] = []
        hw: list[float] = []
        peaks: list[float] = []
        memory_ok = True
        peak_fraction = 0.0
        for r in stage.replicas:
            device, tp, share = r.device, r.tp, r.micro_batch_share
            layer = self.layer_cost(device, tp, share, recompute)
            if layer.extrapolated:
                notes.append((device, layer.extrapolated))
            terms = self.replica_terms(
                device=device, tp=tp, share=share, dp=dp, recompute=recompute,
                num_layers=num_layers, params=params, is_first=is_first, is_last=is_last,
                dp_gb_s=dp_gb_s, dp_latency_s=dp_lat)
            fwd_c, bwd_c, tp_f, tp_b = terms.fwd_s, terms.bwd_s, terms.tp_fwd_s, terms.tp_bwd_s
            zero_f, zero_b = zero_exposed_s(terms, c)
            mem = self.replica_memory(device=device, tp=tp, share=share, dp=dp,
                                      num_layers=num_layers, recompute=recompute, params=params,
                                      is_first=is_first, is_last=is_last, in_flight=in_flight[0],
                                      in_flight_first=in_flight[1], in_flight_last=in_flight[2])
            memory_ok &= mem.fits
            peak_fraction = max(peak_fraction, mem.total / mem.capacity)
            reps.append(ReplicaReport(
                node_group=r.node_group, device=device, count=r.count, tp=tp,
                micro_batch_share=share, fwd_s=fwd_c + tp_f + zero_f,
                bwd_s=bwd_c + tp_b + zero_b, compute_s=fwd_c + bwd_c,
                tp_comm_s=tp_f + tp_b, zero_comm_s=zero_f + zero_b,
                dp_comm_s=end_exposed_s(terms, overlap, window) + terms.param_gather_s,
                optimizer_s=terms.optimizer_s - terms.param_gather_s,
                memory=mem, params_local=terms.params_local,
            ))
            # Hardware FLOPs: what this replica group computes per micro-batch (x m later).
            per_layer = (flops.layer_forward_flops(m, share) * (1 + flops.BACKWARD_TO_FORWARD)
                         + flops.recompute_forward_flops(m, share, recompute))
            work = num_layers * per_layer
            if is_last:
                work += 3 * flops.head_forward_flops(m, share)
            hw.append(work * r.count)
            peaks.append(self.peak_flops(device) * (r.count * tp))
        return _StageEntry(
            replicas=tuple(reps), notes=tuple(notes), hw_flops=tuple(hw),
            peak_flops=tuple(peaks), num_gpus=sum(r.count * r.tp for r in stage.replicas),
            fwd_s=max(r.fwd_s for r in reps), bwd_s=max(r.bwd_s for r in reps),
            tail_s=max(r.dp_comm_s + r.optimizer_s for r in reps), memory_ok=memory_ok,
            peak_memory_fraction=peak_fraction)

    def evaluate(self, plan: Plan) -> Evaluation:
        """Cost a plan; it should be valid (see ``haap_solver.validate``), which is not checked."""
        m, t = self.model, self.training
        plan_stages = plan.stages
        p = len(plan_stages)
        mb_count = plan.num_micro_batches
        schedule = plan.schedule
        cache = self._stages
        stages: list[StageReport] = []
        entries: list[_StageEntry] = []
        extrapolated: list[str] = []
        hw_flops = 0.0
        peak_fraction = 0.0
        memory_ok = True
        peak_flops: list[float] = []
        num_gpus = 0
        for i, stage in enumerate(plan_stages):
            is_first, is_last = i == 0, i == p - 1
            in_flight = self.in_flight(schedule, i, p, mb_count)
            key = (stage.replicas, stage.recompute, stage.num_layers, is_first, is_last,
                   in_flight, schedule == "interleaved-1f1b")
            entry = cache.get(key)
            if entry is None:
                if len(cache) >= _CACHE_LIMIT:
                    cache.clear()
                    self._links.clear()
                entry = cache[key] = self._stage_entry(stage, is_first, is_last, in_flight,
                                                       schedule)
            else:
                self.cache_hits += 1
            entries.append(entry)
            for device, note in entry.notes:
                extrapolated.append(f"stage {i} {device}: {note}")
            for work in entry.hw_flops:
                hw_flops += work * mb_count
            peak_flops.extend(entry.peak_flops)
            num_gpus += entry.num_gpus
            memory_ok &= entry.memory_ok
            peak_fraction = max(peak_fraction, entry.peak_memory_fraction)
            stages.append(StageReport(
                index=i, first_layer=stage.first_layer, num_layers=stage.num_layers,
                recompute=stage.recompute, in_flight=in_flight[0], fwd_s=entry.fwd_s,
                bwd_s=entry.bwd_s, p2p_next_s=0.0, tail_s=entry.tail_s,
                replicas=list(entry.replicas),
            ))
        # Links, by the identity of the two stage entries: the record holds both entries, so
        # neither id can be reused while it exists (cheaper than hashing the replica groups).
        links_cache = self._links
        links: list[float] = []
        for i in range(p - 1):
            a, b = entries[i], entries[i + 1]
            record = links_cache.get((id(a), id(b)))
            if record is None or record[0] is not a or record[1] is not b:
                if len(links_cache) >= _CACHE_LIMIT:
                    links_cache.clear()
                record = (a, b, self._p2p_pair(plan_stages[i].replicas,
                                               plan_stages[i + 1].replicas))
                links_cache[(id(a), id(b))] = record
            link = record[2]
            links.append(link)
            stages[i].p2p_next_s = link
        chunks, wrap = 1, 0.0
        if schedule == "interleaved-1f1b":
            # Chunk j of the last stage feeds chunk j + 1 of the first (Sec. 7.1).
            chunks = t.virtual_stages
            wrap = self._p2p_pair(plan_stages[-1].replicas, plan_stages[0].replicas)
            stages[-1].p2p_next_s = wrap
        pipe, breakdown = pipeline_makespan(schedule, [e.fwd_s for e in entries],
                                            [e.bwd_s for e in entries], links, entries, mb_count,
                                            blocking=t.blocks_p2p(schedule),
                                            virtual_stages=chunks, wrap_s=wrap,
                                            link_waits=t.link_waits(schedule))
        tails = [e.tail_s for e in entries]
        tail_stage = entries[tails.index(max(tails))]
        tail_rep = max(tail_stage.replicas, key=lambda r: r.dp_comm_s + r.optimizer_s)
        breakdown["dp_comm_s"] += tail_rep.dp_comm_s
        breakdown["optimizer_s"] = tail_rep.optimizer_s
        iteration = pipe + tail_stage.tail_s
        tokens = t.global_batch_size * m.seq_length
        peak = sum(peak_flops)
        model_flops = self._model_flops(plan.micro_batch_size * mb_count)
        return Evaluation(
            iteration_time_s=iteration,
            tokens_per_s=tokens / iteration,
            mfu=model_flops / (iteration * peak),
            hfu=hw_flops / (iteration * peak),
            breakdown=breakdown,
            stages=stages,
            num_gpus_used=num_gpus,
            memory_ok=memory_ok,
            peak_memory_fraction=peak_fraction,
            extrapolated=sorted(set(extrapolated)),
            cost_per_iteration=_cost_per_iteration(self.instance, plan, iteration),
        )

    def in_flight(self, schedule: str, index: int, num_stages: int,
                  num_micro_batches: int) -> tuple[float, float, float]:
        """Micro-batches in flight on stage `index` at its peak (Sec. 5.3): of the whole stage,
        of its embedding (first chunk) and of its LM head (last chunk)."""
        if schedule == "interleaved-1f1b":
            v = self.training.virtual_stages
            total, first, last = memory.interleaved_in_flight(index, num_stages,
                                                              num_micro_batches, v)
            return total / v, float(first), float(last)
        n = float(memory.in_flight_micro_batches(schedule, index, num_stages, num_micro_batches))
        return n, n, n

    def _model_flops(self, global_batch: int) -> float:
        hit = self._model_flops_cache.get(global_batch)
        if hit is None:
            hit = flops.model_flops_per_iteration(self.model, global_batch)
            self._model_flops_cache[global_batch] = hit
        return hit


class _StageEntry(NamedTuple):
    """evaluate()'s cached view of one stage at one position (see CostModel._stage_entry)."""

    replicas: tuple[ReplicaReport, ...]
    notes: tuple[tuple[str, str], ...]
    """(device, note) of every extrapolated profile entry."""
    hw_flops: tuple[float, ...]
    """Hardware FLOPs per micro-batch of each replica group (all its replicas)."""
    peak_flops: tuple[float, ...]
    """Peak FLOP/s of each replica group's GPUs."""
    num_gpus: int
    fwd_s: float
    bwd_s: float
    tail_s: float
    memory_ok: bool
    peak_memory_fraction: float


def _cost_per_iteration(instance: Instance, plan: Plan, iteration_s: float) -> float | None:
    """What the iteration costs where the node groups have prices (None otherwise)."""
    if not any(g.price_per_gpu_hour is not None for g in instance.cluster.node_groups):
        return None
    from haap_solver.objective import rental

    return rental(instance, plan).cost_of(iteration_s)
