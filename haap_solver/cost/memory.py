"""Per-GPU memory: model states (ZeRO-aware), activations (Korthikanti et al. 2022), extras.

All results in bytes. Activation formulas generalise Korthikanti et al., "Reducing Activation
Recomputation in Large Transformer Models" (2022), Sec. 4, to grouped-query attention, gated MLPs,
fused (flash) attention and dropout-free models; for a GPT layer with dropout and no fused attention
they reduce exactly to the paper's s b h (34 + 5 a s / h) and its TP / SP variants. Formulas and
departures from the paper: docs/cost-model.md, Sec. 5.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from haap_solver.model import ModelSpec
from haap_solver.training import TrainingSpec

GIB = 1024**3


@dataclass(frozen=True)
class StateBytes:
    """Bytes per parameter of each model state, before ZeRO sharding."""

    weights: float
    grads: float
    optimizer: float


def state_bytes(training: TrainingSpec) -> StateBytes:
    """Mixed-precision Adam: 2 + 2 + 12 (fp32 master, m, v) = 16 bytes/param (ZeRO paper, Sec. 3.1),
    2 + 4 + 12 = 18 with fp32 gradients (`TrainingSpec.grad_bytes`: Megatron-LM's default with
    bf16). fp32 training keeps no master copy: 4 + 4 + 8 = 16.
    """
    if training.dtype == "fp32":
        return StateBytes(weights=4, grads=4, optimizer=8)
    # Gradients in fp32 where the engine keeps them so (Megatron-LM with bf16: 18 bytes).
    return StateBytes(weights=2, grads=training.grad_bytes, optimizer=12)


def model_state_bytes_per_param(training: TrainingSpec, dp: int) -> tuple[float, float, float]:
    """(weights, grads, optimizer) bytes per local parameter after ZeRO sharding over `dp` replicas.

    ZeRO (Rajbhandari et al. 2020), Fig. 1: stage 1 shards the optimizer state, 2 also the
    gradients, 3 also the weights.
    """
    sb = state_bytes(training)
    z = training.zero_stage
    w = sb.weights / dp if z >= 3 else sb.weights
    g = sb.grads / dp if z >= 2 else sb.grads
    o = sb.optimizer / dp if z >= 1 else sb.optimizer
    return w, g, o


def layer_activation_bytes(model: ModelSpec, training: TrainingSpec, batch: int, tp: int,
                           recompute: str) -> float:
    """Activation bytes one decoder layer keeps for the backward pass, for `batch` sequences.

    With full recomputation only the layer input is kept (the working set needed while one layer
    is recomputed is `layer_activation_bytes(..., "none")`, counted once per stage).
    """
    s, h, f, kv, a = (model.seq_length, model.hidden_size, model.ffn_hidden_size, model.kv_size,
                      model.num_attention_heads)
    sbh = s * batch * h
    sp = training.sequence_parallel and tp > 1
    rep = tp if sp else 1  # divisor of the parts that only sequence parallelism shards
    half = training.bytes_per_value  # 2 for 16-bit activations
    scale = half / 2.0
    if recompute == "full":
        return 2.0 * sbh / rep * scale
    mask = 1.0 if model.uses_dropout else 0.0
    # Parts TP never shards without SP: two norm inputs, QKV input, fc1 input, two dropout masks.
    unsharded = (2 + 2 + 2 + 2) * sbh * scale + 2 * mask * sbh
    # Parts TP shards: Q, K, V, attention output, MLP activation inputs and fc2 input.
    # Plain MLP: activation input and fc2 input (2 x 2 s b f); gated: gate and up pre-activations
    # and their product (3 x 2 s b f).
    mlp_inner = (3 if model.gated_mlp else 2) * 2 * s * batch * f
    sharded = (2 * s * batch * (h + kv) + 2 * s * batch * kv + 2 * sbh + mlp_inner) * scale
    # Attention core: softmax output (2 a s^2 b), dropout mask (a s^2 b, one byte per element
    # whatever the dtype), dropout output (2 a s^2 b).
    core = 0.0
    if not training.flash_attention and recompute != "selective":
        core = ((2 + 2 * mask) * scale + mask) * a * s * s * batch
    elif training.flash_attention:
        core = 4.0 * a * s * batch  # fp32 log-sum-exp per query row
    return unsharded / rep + (sharded + core) / tp


def first_stage_extra_activation_bytes(model: ModelSpec, training: TrainingSpec, batch: int,
                                       tp: int) -> float:
    """Embedding dropout mask per micro-batch in flight (Korthikanti Sec. 4.3).

    One byte per element, s b h / t with sequence parallelism; zero for dropout-free models.
    """
    if not model.uses_dropout:
        return 0.0
    rep = tp if (training.sequence_parallel and tp > 1) else 1
    return model.seq_length * batch * model.hidden_size / rep


def last_stage_extra_activation_bytes(model: ModelSpec, training: TrainingSpec, batch: int,
                                      tp: int) -> float:
    """Final norm input, LM-head input and the fp32 logits of the loss, one micro-batch.

    Korthikanti et al. Sec. 4.3: 2 s b h / t (norm input) + 2 s b h / t (output projection input)
    + 4 s b V / t (fp32 logits) = 4 s b h / t (1 + V / h) with sequence parallelism. Without it the
    two s b h tensors are replicated over the TP ranks; the logits are always vocabulary-parallel.
    """
    s = model.seq_length
    rep = tp if (training.sequence_parallel and tp > 1) else 1
    scale = training.bytes_per_value / 2.0
    return (2 * 2.0 * s * batch * model.hidden_size * scale / rep
            + 4.0 * s * batch * model.vocab_size / tp)


def in_flight_micro_batches(schedule: str, stage_index: int, num_stages: int,
                            num_micro_batches: int) -> int:
    """Micro-batches whose activations a stage holds at its peak (1F1B and GPipe).

    1F1B: stage i (0-based) of p runs p - i warm-up forwards before its first backward, so it holds
    min(p - i, m) (Narayanan et al. SC'21, Sec. 2.2.1). GPipe holds all m. The interleaved
    schedule's count depends on v and is not an integer: `interleaved_in_flight`
    (`CostModel.in_flight` gives either).
    """
    if schedule == "gpipe":
        return num_micro_batches
    if schedule != "1f1b":
        raise ValueError(f"in_flight_micro_batches: schedule {schedule!r} is not 1f1b or gpipe")
    return min(num_stages - stage_index, num_micro_batches)


@functools.lru_cache(maxsize=4096)  # (a walk of m v passes; the search asks it per slot and plan)
def interleaved_in_flight(stage_index: int, num_stages: int, num_micro_batches: int,
                          chunks: int) -> tuple[int, int, int]:
    """Peak chunk activations a stage holds under Megatron-LM's interleaved 1F1B: (all chunks,
    chunk 0's micro-batches, chunk v-1's micro-batches). The stage holds total / v micro-batches
    of its activations (each chunk has 1/v of its layers): p + (p - 1) / v on the first stage,
    a factor 1 + (p - 1) / (p v) over plain 1F1B (Korthikanti et al. 2022, Sec. 4.2.3).

    Megatron-LM core (`forward_backward_pipelining_with_interleaving`): with m = p every forward
    runs first; otherwise rank i runs min(2 (p - i - 1) + (v - 1) p, m v) warm-up forwards, then
    one forward and one backward in turn. Forward k runs chunk (k mod p v) // p, backward k chunk
    v - 1 - (k mod p v) // p (m a multiple of p). Warm-up only adds, the steady state keeps the
    total constant, so the total's peak is warm-up + 1, and the peaks of chunk 0 and chunk v-1
    fall where the total is at its peak: with p >= 2 (the validator's rule) the three together
    are the stage's peak (the first chunk holds the embedding's dropout mask, the last stage's
    last chunk the LM head's logits; on a single stage both, each charged at its own peak).
    """
    p, m, v = num_stages, num_micro_batches, chunks
    # Chunk of each forward and each backward in Megatron's order: groups of p micro-batches
    # (a last, smaller group where m is not a multiple of p, which Megatron refuses and the
    # validator rejects; costed the same way so that evaluate() never fails on a plan).
    fwd_chunks: list[int] = []
    bwd_chunks: list[int] = []
    for start in range(0, m, p):
        size = min(p, m - start)
        for c in range(v):
            fwd_chunks += [c] * size
            bwd_chunks += [v - 1 - c] * size
    total = m * v
    warmup = total if m == p else min(2 * (p - stage_index - 1) + (v - 1) * p, total)
    counts = [0] * v
    for k in range(warmup):
        counts[fwd_chunks[k]] += 1
    peak_total = warmup
    peak_first, peak_last = counts[0], counts[-1]
    for j in range(total - warmup):
        counts[fwd_chunks[warmup + j]] += 1
        peak_total = max(peak_total, sum(counts))
        peak_first, peak_last = max(peak_first, counts[0]), max(peak_last, counts[-1])
        counts[bwd_chunks[j]] -= 1
    return peak_total, peak_first, peak_last
