"""Compute time of a decoder layer, the LM head and the embedding on one GPU of a TP group.

A layer is costed by what its kernels do (docs/cost-model.md Sec. 4):

- the weight GEMMs (QKV, attention output, MLP), each at an efficiency that depends on its
  shape: the rows (tokens of the micro-batch) and its narrowest per-GPU dimension;
- the attention core (scores, softmax, context): batched GEMMs whose inner or outer dimension is
  the head dimension plus the memory-bound softmax and dropout over the score matrix, or one
  fused flash-attention kernel whose efficiency depends on the head dimension;
- the memory-bound work (norms, residual adds, bias, dropout, activation, rotary embedding):
  bytes moved over the device's memory bandwidth;
- a floor: the host launches every kernel of the layer (PyTorch eager dispatch, autograd), so a
  layer never takes less than its kernel count times the per-kernel launch cost, whatever the
  GPU time; narrow layers (small h, large TP) run at that floor.

Matmuls run at the device's peak for the training precision (`DeviceType.matmul_peak_tflops`).
Everything here is a pure function of (model, training, device, constants, TP, batch share,
recomputation): the exact search reads the per-layer costs through `CostModel.layer_cost`.
"""

from __future__ import annotations

from dataclasses import dataclass

from haap_solver.cost import flops
from haap_solver.cost.efficiency import CostConstants
from haap_solver.devices import DeviceType
from haap_solver.model import ModelSpec
from haap_solver.training import TrainingSpec

FLASH_BACKWARD_TO_FORWARD = 2.5
"""FLOPs of the flash-attention backward over its forward: five matmuls (the scores and the
probabilities recomputed, dV, dP, dQ and dK) against two (Dao, FlashAttention-2, 2023, Sec. 4.1
counts the backward as 2.5x the forward)."""
FLASH_CAUSAL_WORK = 0.5
"""Share of the score blocks a causal flash-attention kernel computes: the blocks above the
diagonal are skipped (Dao 2023, Sec. 3.1.1). Unfused attention computes every score and masks."""
TENSOR_CORE_ALIGNMENT_BYTES = 16
"""cuBLAS runs a GEMM on the tensor cores only when its matrices' leading dimensions are
multiples of 16 bytes (8 values in 16-bit, 4 in TF32): NVIDIA, *Matrix Multiplication
Background User's Guide* (DU-09799-001), Sec. 2.2 "Tensor Core Requirements", and the cuBLAS
documentation's tensor-op restrictions (cuBLAS 11 relaxes this to "always, but most efficient"
at those multiples). Otherwise it falls back to CUDA-core (SIMT) kernels. Unfused attention's
batched GEMMs have the head dimension as a leading dimension, so a head dimension that is not
a multiple of 8 (BLOOM's 13824 / 128 = 108) runs them at the CUDA-core fp32 peak, 16x below
A100's 16-bit tensor peak (docs/cost-model.md Sec. 4.3)."""
ELEMENTWISE_BACKWARD_TO_FORWARD = 2.0
"""Bytes of an elementwise kernel's backward over its forward: it reads the output gradient and
the saved input and writes the input gradient, where the forward reads one input and writes one
output (norms read one more vector, negligible)."""


@dataclass(frozen=True, slots=True)
class PassTimes:
    """Forward and backward seconds of one piece of work per micro-batch on one GPU."""

    fwd_s: float
    bwd_s: float


def matmul_flops_per_s(device: DeviceType, training: TrainingSpec) -> float:
    """Peak matmul FLOP/s of `device` in the training precision (Sec. 4.1)."""
    return device.matmul_peak_tflops(training.dtype, training.fp32_matmul_precision) * 1e12


def achievable_matmul_flops_per_s(device: DeviceType, training: TrainingSpec) -> float:
    """The matmul FLOP/s `device` can reach in the training precision: its peak times its
    measured matmul ceiling (`DeviceType.matmul_ceiling`, Sec. 4.2). Every compute efficiency
    of this module is a fraction of this rate, so one fitted `max_efficiency` serves devices
    whose best matmuls reach different shares of their spec peaks."""
    return matmul_flops_per_s(device, training) * device.matmul_ceiling(training.dtype)


def gemm_efficiency(c: CostConstants, rows: float, width: float) -> float:
    """Fraction of the achievable matmul rate of a GEMM with `rows` rows (tokens) whose
    narrowest other dimension is `width` (Sec. 4.2): both saturate, at `width_half` and
    `tokens_half`."""
    return c.max_efficiency * width / (width + c.width_half) * rows / (rows + c.tokens_half)


def head_dim_tensor_core_aligned(model: ModelSpec, training: TrainingSpec) -> bool:
    """Whether a row of one head (`head_dim` values) is a whole number of 16-byte units, as
    cuBLAS needs to run unfused attention's batched GEMMs on the tensor cores
    (`TENSOR_CORE_ALIGNMENT_BYTES`)."""
    return (model.head_dim * training.bytes_per_value) % TENSOR_CORE_ALIGNMENT_BYTES == 0


def attention_bmm_s(model: ModelSpec, training: TrainingSpec, device: DeviceType,
                    c: CostConstants, tp: int, batch: int) -> float:
    """Forward seconds of unfused attention's two batched GEMMs (scores Q K^T and context
    P V) on one TP rank (Sec. 4.3): rows s, narrowest dimension the head dimension d.

    With a head dimension the tensor cores cannot take (`head_dim_tensor_core_aligned`) they
    run on the CUDA cores: at the device's fp32 non-tensor peak, with the GEMM's rows
    efficiency and `max_efficiency` but without the tensor-core tile-width factor (a SIMT
    tile is narrow). Never faster than the tensor-core estimate.
    """
    s, d = model.seq_length, model.head_dim
    work = flops.attention_core_forward_flops(model, batch) / tp
    peak = achievable_matmul_flops_per_s(device, training)
    tensor = work / (peak * gemm_efficiency(c, s, d))
    simt_peak = (device.matmul_peak_tflops("fp32", "highest") * 1e12
                 * device.matmul_ceiling("fp32"))
    if head_dim_tensor_core_aligned(model, training) or simt_peak >= peak:
        return tensor
    simt = work / (simt_peak * c.max_efficiency * s / (s + c.tokens_half))
    return max(tensor, simt)


def _hbm_bytes_per_s(device: DeviceType, c: CostConstants) -> float:
    return device.hbm_gb_s * 1e9 * c.hbm_efficiency


def weight_gemms_s(model: ModelSpec, training: TrainingSpec, device: DeviceType,
                   c: CostConstants, tp: int, batch: int) -> PassTimes:
    """QKV, attention output and MLP GEMMs of one layer on one TP rank (Sec. 4.2).

    Megatron's column-parallel GEMMs split their output dimension by TP, the row-parallel ones
    their inner dimension; the rows are the micro-batch's tokens (all-gathered first under
    sequence parallelism). The backward runs two GEMMs of the same shape per forward GEMM
    (input and weight gradients).
    """
    h, f, kv = model.hidden_size, model.ffn_hidden_size, model.kv_size
    n = batch * model.seq_length
    peak = achievable_matmul_flops_per_s(device, training)
    mlp_matrices = 3 if model.gated_mlp else 2
    shapes = (
        (2.0 * n * h * (h + 2 * kv) / tp, min(h, (h + 2 * kv) / tp)),    # QKV (column-parallel)
        (2.0 * n * h * h / tp, h / tp),                                  # output (row-parallel)
        (mlp_matrices * 2.0 * n * h * f / tp, min(h, f / tp)),           # MLP matrices
    )
    fwd = sum(work / (peak * gemm_efficiency(c, n, width)) for work, width in shapes)
    return PassTimes(fwd, flops.BACKWARD_TO_FORWARD * fwd)


def tp_comm_beyond_gemms(model: ModelSpec, training: TrainingSpec, device: DeviceType,
                         c: CostConstants, tp: int, batch: int, recompute: str,
                         tp_fwd_s: float, tp_bwd_s: float) -> tuple[float, float]:
    """TP communication left exposed per pass (forward, backward) when it is overlapped with
    the GEMMs (`training.tp_comm_overlap`, Sec. 3): the all-gathers and reduce-scatters are
    pipelined with the weight GEMMs that consume or produce them, so only what exceeds those
    GEMMs (with full recomputation, the backward's and the recomputed forward's) is exposed."""
    gemm = weight_gemms_s(model, training, device, c, tp, batch)
    return (max(tp_fwd_s - gemm.fwd_s, 0.0),
            max(tp_bwd_s - gemm.bwd_s - (gemm.fwd_s if recompute == "full" else 0.0), 0.0))


def attention_core_s(model: ModelSpec, training: TrainingSpec, device: DeviceType,
                     c: CostConstants, tp: int, batch: int) -> PassTimes:
    """Scores, softmax (and dropout) and context of one layer on one TP rank (Sec. 4.3).

    Flash attention: one fused kernel over the causal half of the score blocks, at
    `flash_efficiency` scaled by d / (d + `flash_head_dim_half`) (d the head dimension: a narrow
    head gives each tile little work per byte). Unfused: two batched GEMMs of rows s and
    narrowest dimension d (on the CUDA cores when d is not tensor-core aligned,
    `attention_bmm_s`), and the score matrix (a/t heads x s x s per sequence) written,
    softmaxed and dropped out in HBM.
    """
    s, d = model.seq_length, model.head_dim
    if training.flash_attention:
        work = flops.attention_core_forward_flops(model, batch) / tp
        peak = achievable_matmul_flops_per_s(device, training)
        eff = c.flash_efficiency * d / (d + c.flash_head_dim_half)
        fwd = FLASH_CAUSAL_WORK * work / (peak * eff)
        return PassTimes(fwd, FLASH_BACKWARD_TO_FORWARD * fwd)
    gemm = attention_bmm_s(model, training, device, c, tp, batch)
    scores = batch * model.num_attention_heads / tp * s * s
    beta = training.bytes_per_value
    dropout = 1.0 if model.uses_dropout else 0.0
    # Megatron fuses scale, mask and softmax into one kernel; DeepSpeed with a Hugging Face
    # model scales, masks and softmaxes separately (three reads and writes of the scores).
    passes = 1 if training.framework == "megatron" else 3
    fwd_bytes = scores * (2 * beta * passes + dropout * (2 * beta + 1))
    bwd_bytes = scores * (3 * beta * passes + dropout * (2 * beta + 1))
    bw = _hbm_bytes_per_s(device, c)
    return PassTimes(gemm + fwd_bytes / bw, flops.BACKWARD_TO_FORWARD * gemm + bwd_bytes / bw)


def elementwise_bytes(model: ModelSpec, training: TrainingSpec, tp: int, batch: int) -> float:
    """Forward bytes of one layer's memory-bound kernels on one TP rank (Sec. 4.4).

    Per token (beta bytes per value, delta = 1 with dropout): two norms (read and write h); two
    residual blocks (bias, dropout with its 1-byte mask, add: fused by Megatron into one
    bias-dropout-add reading two h-vectors and writing one, (3 beta + delta) h; three kernels
    under DeepSpeed); the activation on f / t (bias-GeLU, or SwiGLU reading 2 f / t); the rotary
    embedding of Q and K when the model has no learned positions. Norms and residual blocks work
    on s / t tokens under sequence parallelism, on all s otherwise (every TP rank repeats them).
    """
    h, f, kv = model.hidden_size, model.ffn_hidden_size, model.kv_size
    beta = training.bytes_per_value
    delta = 1.0 if model.uses_dropout else 0.0
    biased = not model.gated_mlp  # GPT-style layers have biases, Llama-style ones none
    fused = training.framework == "megatron"
    n = batch * model.seq_length
    replicated = tp if (training.sequence_parallel and tp > 1) else 1
    norms = 2 * 2 * beta * h
    if fused:
        residual = 2 * (3 * beta + delta) * h
    else:
        residual = 2 * ((2 * beta if biased else 0.0) + (2 * beta + delta if delta else 0.0)
                        + 3 * beta) * h
    if model.gated_mlp:
        act = (3 * beta if fused else 5 * beta) * f / tp  # SwiGLU; unfused: silu, then multiply
    else:
        act = (2 * beta if fused else 4 * beta) * f / tp  # bias-GeLU; unfused: bias, then GeLU
    rope = 0.0 if model.learned_position_embeddings else 2 * beta * (h + kv) / tp
    return n / replicated * (norms + residual) + n * (act + rope)


def kernels_per_layer(model: ModelSpec, training: TrainingSpec, tp: int) -> int:
    """Kernels one layer's forward launches (Sec. 4.5; the backward launches twice as many).

    Megatron: 2 norms, the weight GEMMs (4, 5 gated), 2 fused bias-dropout-adds, 1 fused
    activation, rotary embedding (1) without learned positions, the attention core (flash: 1;
    unfused: 2 batched GEMMs, the fused softmax, dropout and 2 layout copies), and the TP
    collectives (2 all-reduces, or 2 all-gathers and 2 reduce-scatters with sequence
    parallelism). DeepSpeed (Hugging Face model): bias, dropout and add separately, the
    activation's bias separately, scale and mask separately from the softmax.
    """
    fused = training.framework == "megatron"
    gemms = 5 if model.gated_mlp else 4
    rope = 0 if model.learned_position_embeddings else 1
    dropout = 1 if model.uses_dropout else 0
    biased = 0 if model.gated_mlp else 1
    if fused:
        residual, act = 2, 1
    else:
        residual, act = 2 * (biased + dropout + 1), 1 + biased
    attention = 1 if training.flash_attention else 2 + (1 if fused else 3) + dropout + 2
    comm = 0 if tp == 1 else (4 if training.sequence_parallel else 2)
    return 2 + gemms + residual + act + rope + attention + comm


def layer_compute(model: ModelSpec, training: TrainingSpec, device: DeviceType,
                  c: CostConstants, tp: int, batch: int, recompute: str,
                  tp_fwd_s: float = 0.0, tp_bwd_s: float = 0.0) -> PassTimes:
    """Compute of one layer per micro-batch on one TP rank, recomputation in the backward.

    GPU time = weight GEMMs + attention core + elementwise bytes over HBM bandwidth. The host
    launches the layer's kernels asynchronously; the GPU waits for it only when the kernels
    are shorter than their launches, so a pass takes max(GPU time + TP communication, kernels
    x `kernel_launch_s`) and the compute part returned is that less the TP communication
    (`tp_fwd_s`, `tp_bwd_s`, costed on their own in Sec. 3).
    """
    gemm = weight_gemms_s(model, training, device, c, tp, batch)
    core = attention_core_s(model, training, device, c, tp, batch)
    elem = elementwise_bytes(model, training, tp, batch) / _hbm_bytes_per_s(device, c)
    gpu_fwd = gemm.fwd_s + core.fwd_s + elem
    gpu_bwd = gemm.bwd_s + core.bwd_s + ELEMENTWISE_BACKWARD_TO_FORWARD * elem
    host_fwd = kernels_per_layer(model, training, tp) * c.kernel_launch_s
    host_bwd = 2 * host_fwd
    if recompute == "full":
        gpu_bwd += gpu_fwd
        host_bwd += host_fwd
    elif recompute == "selective":
        gpu_bwd += core.fwd_s
    fwd = max(gpu_fwd, host_fwd - tp_fwd_s)
    bwd = max(gpu_bwd, host_bwd - tp_bwd_s)
    return PassTimes(fwd, bwd)


def cross_entropy_bytes_per_logit(training: TrainingSpec) -> tuple[float, float]:
    """HBM bytes per logit of Megatron's vocab-parallel cross-entropy, (forward, backward).

    Counted from ``megatron/core/tensor_parallel/cross_entropy.py``: the forward casts the
    logits to fp32 (read beta, write 4; nothing in fp32 training), takes the row maximum (read
    4), subtracts it in place (read and write 4), exponentiates in place (8), sums the rows
    (read 4) and divides by the sums in place (8), keeping the softmax for the backward: 32
    bytes plus the cast. The backward multiplies the saved softmax by the output gradient in
    place (8) and autograd casts the gradient back to the logits' precision (read 4, write
    beta). 16-bit training: 38 and 14 bytes. (Hugging Face models under DeepSpeed use
    PyTorch's log-softmax and NLL loss, about as many bytes: it is not counted apart.)"""
    beta = training.bytes_per_value
    cast = beta + 4.0 if beta != 4 else 0.0
    return 32.0 + cast, 8.0 + cast


def head_compute(model: ModelSpec, training: TrainingSpec, device: DeviceType,
                 c: CostConstants, tp: int, batch: int) -> PassTimes:
    """LM head GEMM (2 b s h V / t; rows b s, narrowest dimension min(h, V / t)) plus the
    softmax cross-entropy's passes over the logits shard, b s V / t values
    (`cross_entropy_bytes_per_logit`; Sec. 4.6)."""
    n = batch * model.seq_length
    h, v = model.hidden_size, model.vocab_size
    peak = achievable_matmul_flops_per_s(device, training)
    gemm = flops.head_forward_flops(model, batch) / tp / (
        peak * gemm_efficiency(c, n, min(h, v / tp)))
    fwd_bytes, bwd_bytes = cross_entropy_bytes_per_logit(training)
    bw = _hbm_bytes_per_s(device, c)
    logits = n * v / tp
    return PassTimes(gemm + logits * fwd_bytes / bw,
                     flops.BACKWARD_TO_FORWARD * gemm + logits * bwd_bytes / bw)


def embedding_compute(model: ModelSpec, training: TrainingSpec, device: DeviceType,
                      c: CostConstants, batch: int) -> PassTimes:
    """Embedding lookup: reads and writes b s h values (Sec. 2.3); backward twice that."""
    nbytes = 2 * batch * model.seq_length * model.hidden_size * training.bytes_per_value
    t = nbytes / _hbm_bytes_per_s(device, c)
    return PassTimes(t, 2 * t)


def optimizer_step_s(local_params: float, device: DeviceType, c: CostConstants) -> float:
    """Fused Adam over `local_params` parameters: memory-bound (Sec. 4.7)."""
    return local_params * c.optimizer_bytes_per_param / _hbm_bytes_per_s(device, c)
