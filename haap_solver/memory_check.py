"""A second, deliberately plain per-GPU memory calculation, for the validator.

The search, the baselines and `evaluate()` all take memory from `CostModel.replica_memory`. Had the
validator asked the same function, a wrong memory formula would be invisible to every cross-check:
the search would trust it and the validator would agree. So the validator asks this module, which
writes the formulas of the papers out again, term by term, from the model's raw sizes:

* parameters of a stage (decoder layers, embedding, final norm and LM head, the tied-embedding
  copy Megatron-LM keeps on the last stage), counted from the model's widths, not from
  `ModelSpec.params_per_layer`;
* model states and their ZeRO sharding (Rajbhandari et al. 2020, Sec. 3.1 and Fig. 1);
* activations of one layer (Korthikanti et al. 2022, Sec. 4.1-4.2 and Table 2, generalised as
  docs/cost-model.md Sec. 5.2 says), the recomputation modes, and a measured profile's
  `layer_activation_bytes` where the profile gives one (interpolated by the rules of Sec. 9);
* micro-batches in flight (Narayanan et al. SC'21, Sec. 2.2.1: 1F1B and GPipe);
* the first and last stage's extras (Korthikanti Sec. 4.3) and the reserved memory (Sec. 5.5).

It imports nothing from `haap_solver.cost`: the instance and plan dataclasses are the only things
it shares with the cost model (they are the question, not the answer). A measured profile reaches
it as the raw measured points (`MeasuredActivations`), and it interpolates them itself.
`tests/test_memory_check.py` checks it against `CostModel.replica_memory` on many random plans.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from haap_solver.instance import Instance
from haap_solver.model import ModelSpec
from haap_solver.plan import Plan
from haap_solver.training import TrainingSpec

BYTES_PER_GIB = 2**30
FITS_TOLERANCE = 1e-12
"""Relative slack of the capacity test, so that a plan filled to the byte is not rejected for a
rounding difference between two ways of adding the same terms (the cost model uses the same)."""


@dataclass(frozen=True, kw_only=True)
class GpuMemory:
    """Peak memory of one GPU of a replica group, in bytes, by kind."""

    weights_bytes: float
    """16-bit (or fp32) weights this GPU holds."""
    grads_bytes: float
    """Gradients this GPU holds."""
    optimizer_bytes: float
    """Optimizer state (fp32 master weights, momentum, variance) this GPU holds."""
    activations_bytes: float
    """Activations kept for the backward pass, plus the recomputation working set."""
    extras_bytes: float
    """First-stage embedding dropout masks and last-stage norm, head inputs and logits."""
    reserved_bytes: float
    """Memory held back for the CUDA context, NCCL buffers and fragmentation."""
    capacity_bytes: float
    """The device's memory."""

    @property
    def states_bytes(self) -> float:
        return self.weights_bytes + self.grads_bytes + self.optimizer_bytes

    @property
    def total_bytes(self) -> float:
        return self.states_bytes + self.activations_bytes + self.extras_bytes + self.reserved_bytes

    @property
    def fits(self) -> bool:
        return self.total_bytes <= self.capacity_bytes * (1 + FITS_TOLERANCE)


# -- Parameters -----------------------------------------------------------------------------------
def decoder_layer_params(model: ModelSpec) -> int:
    """One decoder layer: Q, K, V and output projections, the MLP, two norms, biases (GPT only)."""
    h, f = model.hidden_size, model.ffn_hidden_size
    kv_heads = model.num_kv_heads or model.num_attention_heads
    k = kv_heads * (h // model.num_attention_heads)  # width of K (and of V)
    q_proj, k_proj, v_proj, out_proj = h * h, h * k, h * k, h * h
    mlp_matrices = 3 if model.gated_mlp else 2
    mlp = mlp_matrices * h * f
    if model.gated_mlp:  # Llama: two RMSNorm weights, no biases
        norms, biases = 2 * h, 0
    else:  # GPT: two LayerNorms (weight and bias), a bias on every projection
        norms = 2 * 2 * h
        biases = (h + k + k) + h + f + h  # QKV, attention output, fc1, fc2
    return q_proj + k_proj + v_proj + out_proj + mlp + norms + biases


def stage_params(model: ModelSpec, *, num_layers: int, is_first: bool, is_last: bool,
                 num_stages: int) -> int:
    """Parameters a stage holds in its pipeline role (docs/cost-model.md Sec. 5.1)."""
    h, vocab = model.hidden_size, model.vocab_size
    params = num_layers * decoder_layer_params(model)
    if is_first:
        params += vocab * h  # input embedding
        if model.learned_position_embeddings:
            params += model.seq_length * h
    if is_last:
        params += h if model.gated_mlp else 2 * h  # final RMSNorm / LayerNorm
        if not model.tied_embeddings:
            params += vocab * h  # the LM head's own matrix
        elif num_stages > 1:
            params += vocab * h  # Megatron-LM's copy of the tied embedding on the last stage
    return params


# -- Model states (ZeRO) --------------------------------------------------------------------------
def state_bytes_per_param(training: TrainingSpec, dp: int) -> tuple[float, float, float]:
    """(weights, gradients, optimizer) bytes per local parameter after ZeRO over `dp` replicas.

    Mixed-precision Adam: 2 + 2 + 12 (fp32 master, m, v); fp32 training: 4 + 4 + 8. Megatron-LM
    keeps bf16 (and fp8) training's gradients in fp32 unless told otherwise: 2 + 4 + 12
    (`training.grad_dtype`). ZeRO-1 shards the optimizer state, ZeRO-2 also the gradients,
    ZeRO-3 also the weights.
    """
    weights, grads, optimizer = (4.0, 4.0, 8.0) if training.dtype == "fp32" else (2.0, 2.0, 12.0)
    fp32_grads = training.grad_dtype == "fp32" or (
        training.grad_dtype == "auto" and training.framework == "megatron"
        and training.dtype in ("bf16", "fp8"))
    if fp32_grads:
        grads = 4.0
    stage = training.zero_stage
    if stage >= 1:
        optimizer /= dp
    if stage >= 2:
        grads /= dp
    if stage >= 3:
        weights /= dp
    return weights, grads, optimizer


# -- Activations ----------------------------------------------------------------------------------
def layer_activations(model: ModelSpec, training: TrainingSpec, *, batch: int, tp: int,
                      recompute: str) -> float:
    """Bytes one decoder layer keeps for `batch` sequences (Korthikanti et al. 2022, Sec. 4).

    Counted in elements of 16-bit values times `value_bytes / 2`; dropout masks are 1 byte each.
    """
    s, h, f, a = model.seq_length, model.hidden_size, model.ffn_hidden_size, \
        model.num_attention_heads
    kv_heads = model.num_kv_heads or a
    k = kv_heads * (h // a)
    b = batch
    value = 4.0 if training.dtype == "fp32" else 2.0  # bytes of one activation value
    sp = training.sequence_parallel and tp > 1
    seq_shard = tp if sp else 1  # sequence parallelism shards what TP alone replicates
    dropout = 1.0 if model.uses_dropout else 0.0

    if recompute == "full":  # only the layer's input is checkpointed
        return value * s * b * h / seq_shard

    # Replicated over the TP ranks unless sequence parallelism shards them.
    attention_norm_input = value * s * b * h
    qkv_input = value * s * b * h
    mlp_norm_input = value * s * b * h
    fc1_input = value * s * b * h
    attention_dropout_mask = dropout * s * b * h
    mlp_dropout_mask = dropout * s * b * h
    replicated = (attention_norm_input + qkv_input + mlp_norm_input + fc1_input
                  + attention_dropout_mask + mlp_dropout_mask)

    # Sharded by TP: Q, K, V, the attention output (input of the output projection), the MLP.
    q, k_, v = value * s * b * h, value * s * b * k, value * s * b * k
    attention_output = value * s * b * h
    # Gated: gate and up pre-activations and their product (input of fc2); plain: the
    # activation's input and fc2's input.
    mlp_tensors = 3 if model.gated_mlp else 2
    mlp_inner = mlp_tensors * value * s * b * f
    sharded = q + k_ + v + attention_output + mlp_inner

    # The attention core.
    if training.flash_attention:
        core = 4.0 * a * s * b  # fp32 log-sum-exp per query row and head (FlashAttention)
    elif recompute == "selective":
        core = 0.0  # selective recomputation rebuilds the core in the backward pass
    else:
        softmax_output = value * a * s * s * b
        softmax_dropout_mask = dropout * a * s * s * b
        softmax_dropout_output = dropout * value * a * s * s * b
        core = softmax_output + softmax_dropout_mask + softmax_dropout_output
    return replicated / seq_shard + (sharded + core) / tp


def micro_batches_in_flight(schedule: str, *, stage_index: int, num_stages: int,
                            num_micro_batches: int, chunks: int = 1) -> float:
    """Micro-batches whose activations stage `stage_index` holds at its peak (Narayanan SC'21).

    1F1B: stage i (of p, 0-based) runs p - i forward passes before its first backward pass.
    GPipe: every forward pass runs before the first backward pass. Interleaved 1F1B: the most
    model chunks alive at once in Megatron-LM's order (`interleaved_order`), over `chunks`.
    """
    if schedule == "gpipe":
        return num_micro_batches
    if schedule == "interleaved-1f1b":
        alive: set[tuple[int, int]] = set()
        most = 0
        for kind, chunk, micro_batch in interleaved_order(stage_index, num_stages,
                                                          num_micro_batches, chunks):
            if kind == "F":
                alive.add((chunk, micro_batch))
            else:
                alive.remove((chunk, micro_batch))
            most = max(most, len(alive))
        return most / chunks
    return min(num_stages - stage_index, num_micro_batches)


@functools.lru_cache(maxsize=1024)  # (read-only: every caller only walks it)
def interleaved_order(stage_index: int, num_stages: int, num_micro_batches: int,
                      chunks: int) -> tuple[tuple[str, int, int], ...]:
    """The passes ("F" or "B", model chunk, micro-batch) rank `stage_index` runs, in order, under
    Megatron-LM core's interleaved 1F1B (`forward_backward_pipelining_with_interleaving`).

    Micro-batches go in groups of p: a group's forwards run chunk 0 for its p micro-batches,
    then chunk 1, ...; backwards run the chunks in reverse. With m = p all forwards come first;
    otherwise 2 (p - i - 1) + (v - 1) p warm-up forwards (at most m v), then one forward and one
    backward in turn, then the remaining backwards.
    """
    p, m, v = num_stages, num_micro_batches, chunks
    forwards: list[tuple[str, int, int]] = []
    backwards: list[tuple[str, int, int]] = []
    for group in range(0, m, p):
        for chunk in range(v):
            forwards.extend(("F", chunk, group + j) for j in range(min(p, m - group)))
        for chunk in reversed(range(v)):
            backwards.extend(("B", chunk, group + j) for j in range(min(p, m - group)))
    n = len(forwards)
    warmup = n if m == p else min(2 * (p - stage_index - 1) + (v - 1) * p, n)
    order = forwards[:warmup]
    for j in range(n - warmup):
        order.append(forwards[warmup + j])
        order.append(backwards[j])
    order.extend(backwards[n - warmup:])
    return tuple(order)


def embedding_dropout_mask(model: ModelSpec, training: TrainingSpec, *, batch: int,
                           tp: int) -> float:
    """First stage, one micro-batch: the 1-byte dropout mask of the embedding output."""
    if not model.uses_dropout:
        return 0.0
    seq_shard = tp if (training.sequence_parallel and tp > 1) else 1
    return model.seq_length * batch * model.hidden_size / seq_shard


def head_activations(model: ModelSpec, training: TrainingSpec, *, batch: int, tp: int) -> float:
    """Last stage, one micro-batch: final-norm input, LM-head input, fp32 vocab-parallel logits."""
    s, h = model.seq_length, model.hidden_size
    value = 4.0 if training.dtype == "fp32" else 2.0
    seq_shard = tp if (training.sequence_parallel and tp > 1) else 1
    norm_input = value * s * batch * h / seq_shard
    head_input = value * s * batch * h / seq_shard
    logits = 4.0 * s * batch * model.vocab_size / tp
    return norm_input + head_input + logits


# -- Measured activations of a profile ------------------------------------------------------------
class MeasuredActivations:
    """`layer_activation_bytes` of a measured profile, by device, TP and micro-batch.

    Looked up by the rules of docs/cost-model.md Sec. 9, written out again: the measured point; a
    micro-batch between two measured ones, linearly; outside them, linearly through the two
    nearest (at least 0), or proportionally from a single one; a TP not measured, from the nearest
    measured TP in log scale (ties: the smaller) scaled by t_measured / t. A value is None where
    the points needed do not all carry one (the analytical formula then stands).
    """

    def __init__(self, points: Iterable[tuple[str, int, int, float | None]]):
        self._points: dict[str, dict[int, dict[int, float | None]]] = {}
        for device, tp, micro_batch, value in points:
            self._points.setdefault(device, {}).setdefault(tp, {})[micro_batch] = value

    def covers(self, device: str) -> bool:
        return device in self._points

    def at(self, device: str, tp: int, micro_batch: int) -> float | None:
        by_tp = self._points[device]
        if tp in by_tp:
            return self._along_batch(by_tp[tp], micro_batch)
        # Nearest in log scale = smallest ratio larger/smaller (exact, so ties are ties).
        nearest = min(by_tp, key=lambda t: (Fraction(max(t, tp), min(t, tp)), t))
        value = self._along_batch(by_tp[nearest], micro_batch)
        return None if value is None else value * nearest / tp

    @staticmethod
    def _along_batch(points: dict[int, float | None], mb: int) -> float | None:
        if mb in points:
            return points[mb]
        sizes = sorted(points)
        if len(sizes) == 1:
            only = points[sizes[0]]
            return None if only is None else only * mb / sizes[0]
        below = [x for x in sizes if x < mb]
        above = [x for x in sizes if x > mb]
        if below and above:
            lo, hi = below[-1], above[0]
        elif above:  # below the measured range
            lo, hi = sizes[0], sizes[1]
        else:  # above it
            lo, hi = sizes[-2], sizes[-1]
        v_lo, v_hi = points[lo], points[hi]
        if v_lo is None or v_hi is None:
            return None
        slope = (v_hi - v_lo) / (hi - lo)
        return max(0.0, v_lo + slope * (mb - lo))


def measured_activations(profile: object | None) -> MeasuredActivations | None:
    """The measured activation points of a profile object that lists its `entries` (or None)."""
    if profile is None:
        return None
    entries = getattr(profile, "entries", ())
    return MeasuredActivations((e.device, e.tp, e.micro_batch, e.layer_activation_bytes)
                               for e in entries)


# -- One GPU of a plan ----------------------------------------------------------------------------
def gpu_memory(instance: Instance, plan: Plan, stage_index: int, replica_index: int, *,
               measured: MeasuredActivations | None = None) -> GpuMemory:
    """Peak memory of one GPU of replica group `replica_index` of stage `stage_index`."""
    model, training = instance.model, instance.training
    stage = plan.stages[stage_index]
    replica = stage.replicas[replica_index]
    p = len(plan.stages)
    is_first, is_last = stage_index == 0, stage_index == p - 1
    tp, b = replica.tp, replica.micro_batch_share
    dp = sum(r.count for r in stage.replicas)  # ZeRO shards over every replica of the stage

    params_per_gpu = stage_params(model, num_layers=stage.num_layers, is_first=is_first,
                                  is_last=is_last, num_stages=p) / tp
    w, g, o = state_bytes_per_param(training, dp)

    in_flight = micro_batches_in_flight(plan.schedule, stage_index=stage_index, num_stages=p,
                                        num_micro_batches=plan.num_micro_batches,
                                        chunks=training.virtual_stages)
    per_layer = layer_activations(model, training, batch=b, tp=tp, recompute=stage.recompute)
    if (stage.recompute == "none" and measured is not None
            and measured.covers(replica.device)):
        value = measured.at(replica.device, tp, b)
        if value is not None:
            per_layer = value
    activations = in_flight * stage.num_layers * per_layer
    if stage.recompute == "full" and stage.num_layers > 0:
        # While one layer is recomputed its full activations exist once (the analytical ones:
        # the cost model does not take the working set from a profile).
        activations += layer_activations(model, training, batch=b, tp=tp, recompute="none")

    first_extra = embedding_dropout_mask(model, training, batch=b, tp=tp) if is_first else 0.0
    last_extra = head_activations(model, training, batch=b, tp=tp) if is_last else 0.0
    if plan.schedule == "interleaved-1f1b":
        # Walk Megatron's order; each chunk holds num_layers / v layers, chunk 0 of the first
        # stage the embedding's mask, chunk v-1 of the last the head's logits. The chunks alive
        # at the peak of the whole (not of each term) give the activations and the extras.
        v = training.virtual_stages
        weight = [stage.num_layers / v * per_layer for _ in range(v)]
        weight[0] += first_extra
        weight[-1] += last_extra
        alive = [0] * v
        at_peak = list(alive)
        held = most = 0.0
        for kind, chunk, _ in interleaved_order(stage_index, p, plan.num_micro_batches, v):
            alive[chunk] += 1 if kind == "F" else -1
            held += weight[chunk] if kind == "F" else -weight[chunk]
            if held > most:
                most, at_peak = held, list(alive)
        activations = sum(at_peak) * stage.num_layers / v * per_layer
        if stage.recompute == "full" and stage.num_layers > 0:
            activations += layer_activations(model, training, batch=b, tp=tp, recompute="none")
        extras = at_peak[0] * first_extra + at_peak[-1] * last_extra
    else:
        extras = in_flight * first_extra + in_flight * last_extra

    return GpuMemory(
        weights_bytes=params_per_gpu * w, grads_bytes=params_per_gpu * g,
        optimizer_bytes=params_per_gpu * o, activations_bytes=activations, extras_bytes=extras,
        reserved_bytes=training.reserved_memory_gib * BYTES_PER_GIB,
        capacity_bytes=instance.device(replica.device).memory_gib * BYTES_PER_GIB)
