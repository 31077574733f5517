"""Training set-up: batch, precision, optimizer sharding, what the planner may choose."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from haap_solver._fields import require

Recompute = Literal["none", "selective", "full"]
Schedule = Literal["1f1b", "gpipe"]
Dtype = Literal["bf16", "fp16", "fp32", "fp8"]
Framework = Literal["megatron", "deepspeed"]
Fp32MatmulPrecision = Literal["highest", "high"]
RECOMPUTE_MODES: tuple[Recompute, ...] = ("none", "selective", "full")
SCHEDULES: tuple[Schedule, ...] = ("1f1b", "gpipe")


@dataclass(frozen=True, kw_only=True)
class TrainingSpec:
    """How the model is trained; the planner picks the parallel layout inside these rules."""

    global_batch_size: int
    """Sequences per optimizer step."""
    dtype: Dtype = "bf16"
    """Compute precision of the matmuls, which picks the device's peak (docs/cost-model.md
    Sec. 4.1). "fp8" is Transformer Engine style: fp8 GEMMs, 16-bit activations and weights
    otherwise (memory as bf16)."""
    fp32_matmul_precision: Fp32MatmulPrecision = "highest"
    """With dtype "fp32": "highest" runs matmuls in true fp32 (PyTorch's default since 1.12,
    ``torch.backends.cuda.matmul.allow_tf32 = False``; Megatron-LM does not change it), "high"
    on TF32 tensor cores (``torch.set_float32_matmul_precision("high")``). Ignored otherwise."""
    framework: Framework = "megatron"
    """Training engine, for its kernels (docs/cost-model.md Sec. 4.3): "megatron" (Megatron-LM
    core: fused bias-GeLU/SwiGLU, bias-dropout-add and scale-mask-softmax kernels) or
    "deepspeed" (DeepSpeed running a Hugging Face-style model: each elementwise op its own
    kernel, more bytes moved and more kernels launched per layer)."""
    optimizer: Literal["adam"] = "adam"
    """Mixed-precision Adam: 16 bytes/parameter (2 weight, 2 grad, 4+4+4 fp32 master, m, v)."""
    zero_stage: int = 0
    """ZeRO stage 0-3: shards optimizer state (1), gradients (2), parameters (3) over DP."""
    recompute: tuple[Recompute, ...] = RECOMPUTE_MODES
    """Activation recomputation modes the planner may use."""
    schedules: tuple[Schedule, ...] = ("1f1b",)
    """Pipeline schedules the planner may use."""
    sequence_parallel: bool = True
    """Megatron sequence parallelism with TP > 1 (shards norm/dropout activations by TP)."""
    flash_attention: bool = True
    """Fused attention that never stores the s x s score matrix."""
    overlap_grad_reduce: bool = True
    """Overlap the data-parallel gradient reduction with the last micro-batch's backward
    (Megatron-LM ``--overlap-grad-reduce``; its command-line default is off, NVIDIA's published
    runs turn it on)."""
    overlap_param_gather: bool = True
    """With ZeRO-1 (Megatron-LM's distributed optimizer): overlap the all-gather of the updated
    parameters with the next iteration (``--overlap-param-gather``; costed, like today's
    gradient reduction, inside the overlapped end-of-iteration collective). False: the
    all-gather follows the optimizer step, exposed (docs/cost-model.md Sec. 6.3). Megatron's
    command-line default is off; true here, like `overlap_grad_reduce`."""
    reserved_memory_gib: float = 2.0
    """Memory held back on every GPU for the CUDA context, NCCL buffers and fragmentation."""
    max_micro_batch_size: int = 16
    """Largest micro-batch (sequences) the planner considers."""
    max_tp: int = 8
    """Largest tensor-parallel degree the planner considers."""

    def __post_init__(self) -> None:
        require(self.global_batch_size >= 1, "global_batch_size",
                f"must be a positive integer, got {self.global_batch_size}")
        require(self.zero_stage in (0, 1, 2, 3), "zero_stage",
                f"must be 0, 1, 2 or 3, got {self.zero_stage}")
        require(len(self.recompute) >= 1, "recompute", "needs at least one mode")
        require(len(self.schedules) >= 1, "schedules", "needs at least one schedule")
        require(self.reserved_memory_gib >= 0, "reserved_memory_gib",
                f"must be >= 0, got {self.reserved_memory_gib}")
        require(self.max_micro_batch_size >= 1, "max_micro_batch_size",
                f"must be >= 1, got {self.max_micro_batch_size}")
        require(self.max_tp >= 1, "max_tp", f"must be >= 1, got {self.max_tp}")

    @property
    def bytes_per_value(self) -> int:
        return 4 if self.dtype == "fp32" else 2
