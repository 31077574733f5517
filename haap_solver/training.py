"""Training set-up: batch, precision, optimizer sharding, what the planner may choose."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from haap_solver import limits
from haap_solver._fields import Length, Range, Unique, check_ranges, require

Recompute = Literal["none", "selective", "full"]
Schedule = Literal["1f1b", "gpipe", "interleaved-1f1b"]
PipelineP2P = Literal["auto", "blocking", "overlapped"]
PipelineExchange = Literal["auto", "batched", "sequential"]
Dtype = Literal["bf16", "fp16", "fp32", "fp8"]
Framework = Literal["megatron", "deepspeed"]
Fp32MatmulPrecision = Literal["highest", "high"]
GradDtype = Literal["auto", "fp32", "param"]
Target = Literal["any", "megatron", "deepspeed", "torchtitan", "flagscale"]
TARGETS: tuple[Target, ...] = ("any", "megatron", "deepspeed", "torchtitan", "flagscale")
RECOMPUTE_MODES: tuple[Recompute, ...] = ("none", "selective", "full")
SCHEDULES: tuple[Schedule, ...] = ("1f1b", "gpipe", "interleaved-1f1b")
SEARCHED_SCHEDULES: tuple[Schedule, ...] = ("1f1b", "gpipe", "interleaved-1f1b")
"""The schedules the exact search (and the brute force that checks it) can plan: all of them
since the interleaved schedule joined the search (with `virtual_stages` fixed by the user,
formulations/stage-assignment.md Sec. 1.4)."""


@dataclass(frozen=True, kw_only=True)
class TrainingSpec:
    """How the model is trained; the planner picks the parallel layout inside these rules."""

    global_batch_size: Annotated[int, Range(1, limits.MAX_BATCH)]
    """Sequences per optimizer step."""
    dtype: Dtype = "bf16"
    """Compute precision of the matmuls, which picks the device's peak (docs/cost-model.md
    Sec. 4.1). "fp8" is Transformer Engine style: fp8 GEMMs, 16-bit activations and weights
    otherwise (memory as bf16)."""
    fp32_matmul_precision: Fp32MatmulPrecision = "highest"
    """With dtype "fp32": "highest" runs matmuls in true fp32 (PyTorch's default since 1.12,
    ``torch.backends.cuda.matmul.allow_tf32 = False``; Megatron-LM does not change it), "high"
    on TF32 tensor cores (``torch.set_float32_matmul_precision("high")``). Ignored otherwise."""
    grad_dtype: GradDtype = "auto"
    """Precision of the gradient buffer and of its data-parallel reduction (memory, Sec. 5.1;
    DP traffic, Sec. 6.3-6.4 of docs/cost-model.md). "fp32": 4 bytes per gradient
    (Megatron-LM's ``--accumulate-allreduce-grads-in-fp32``); "param": the parameters' dtype
    (``--grad-reduce-in-bf16``; the ZeRO paper's 2 bytes). "auto", the engine's default:
    Megatron-LM forces fp32 gradients with bf16 (and fp8, whose parameters are bf16) training
    ("bfloat16 requires gradient accumulation and all-reduce to be done in fp32",
    ``megatron/training/arguments.py``) and keeps fp16 gradients with fp16; "deepspeed" keeps
    the parameters' dtype."""
    framework: Framework = "megatron"
    """Training engine, for its kernels (docs/cost-model.md Sec. 4.3): "megatron" (Megatron-LM
    core: fused bias-GeLU/SwiGLU, bias-dropout-add and scale-mask-softmax kernels) or
    "deepspeed" (DeepSpeed running a Hugging Face-style model: each elementwise op its own
    kernel, more bytes moved and more kernels launched per layer)."""
    optimizer: Literal["adam"] = "adam"
    """Mixed-precision Adam: 16 bytes/parameter (2 weight, 2 grad, 4+4+4 fp32 master, m, v)."""
    zero_stage: Annotated[int, Range(0, 3)] = 0
    """ZeRO stage 0-3: shards optimizer state (1), gradients (2), parameters (3) over DP."""
    recompute: Annotated[tuple[Recompute, ...], Length(max=len(RECOMPUTE_MODES), what="modes"),
                         Unique()] = RECOMPUTE_MODES
    """Activation recomputation modes the planner may use."""
    schedules: Annotated[tuple[Schedule, ...],
                         Length(max=len(SCHEDULES), what="schedules"), Unique()] = ("1f1b",)
    """Pipeline schedules the planner may use: "1f1b" (PipeDream-flush), "gpipe", and
    "interleaved-1f1b" (Megatron-LM's virtual pipeline stages, `virtual_stages` model chunks per
    stage; searched with that v, formulations/stage-assignment.md Sec. 1.4)."""
    virtual_stages: Annotated[int, Range(2, limits.MAX_LAYERS)] = 2
    """Model chunks per pipeline stage (v) under the "interleaved-1f1b" schedule, fixed by the
    user as in Megatron-LM (``--num-layers-per-virtual-pipeline-stage`` = layers per stage / v).
    Every stage's layer count must be a multiple of v and the micro-batch count a multiple of
    the stage count, as Megatron-LM requires (the validator checks both). Ignored by the other
    schedules."""
    tp_comm_overlap: bool = False
    """Overlap tensor-parallel communication with the GEMMs (Megatron-LM core with Transformer
    Engine, ``--tp-comm-overlap``; needs sequence parallelism, which the validator does not
    require of the field: without it the flag is costed the same way). Each pass's TP
    all-gathers and reduce-scatters are pipelined with the layer's weight GEMMs, so only
    max(TP communication - weight GEMMs, 0) is exposed (docs/cost-model.md Sec. 3). Off by
    default, as in Megatron-LM."""
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
    reserved_memory_gib: Annotated[float, Range(0, limits.MAX_MEMORY_GIB)] = 2.0
    """Memory held back on every GPU for the CUDA context, NCCL buffers and fragmentation."""
    max_micro_batch_share: Annotated[int, Range(1, limits.MAX_MICRO_BATCH)] = 16
    """Most sequences one replica takes of each micro-batch (its ``micro_batch_share`` in a
    plan; Megatron-LM's ``--micro-batch-size``, per data-parallel rank). The pipeline
    micro-batch is the sum over a stage's replicas, so it may be larger: up to this times the
    stage's data-parallel degree (any divisor of the global batch). Named
    ``max_micro_batch_size`` before, which read as a cap on the micro-batch itself."""
    max_tp: Annotated[int, Range(1, limits.MAX_TP)] = 8
    """Largest tensor-parallel degree the planner considers."""
    pipeline_p2p: PipelineP2P = "auto"
    """How a stage's pipeline sends and receives meet its compute (docs/cost-model.md Sec. 7).
    "blocking": each batched send/receive is waited for before the next forward or backward,
    so a stage's steady-state period is its forward + backward plus the exchanges with both
    neighbours. "overlapped": asynchronous sends that compute hides; a link delays only where
    it is slower than compute (an optimistic period, Sec. 7). "auto", the engine's default
    (`framework`): Megatron-LM blocks in 1F1B without interleaving (its non-interleaved
    schedule raises on ``overlap_p2p_comm``; ``p2p_communication.py`` waits on every request)
    and overlaps in the interleaved schedule (``--overlap-p2p-communication``, on by default
    since Megatron-LM commit 4eeff55d1f, 2023-10); DeepSpeed's pipeline engine blocks.
    `blocks_p2p` resolves it per schedule."""
    pipeline_exchange: PipelineExchange = "auto"
    """How a 1F1B stage's blocking exchange with a neighbour runs (docs/cost-model.md Sec. 7):
    "batched", the activation one way and the gradient the other in one exchange (Megatron-LM's
    ``send_forward_recv_backward``), each link costing its time once a micro-batch;
    "sequential", a receive and a send each waited for in turn (DeepSpeed's pipeline engine,
    ``TrainSchedule``), twice. "auto" follows `framework`; set it apart from `framework` for a
    run whose model code and pipeline engine differ (Megatron-DeepSpeed: Megatron's fused
    kernels, DeepSpeed's pipeline engine). `link_waits` resolves it."""
    empty_end_stages: bool = False
    """Whether the planner may also use a first stage that holds only the embedding and a last
    stage that holds only the LM head (formulations/stage-assignment.md Sec. 1.2; Megatron-LM's
    pipeline layout can express them). Off by default: the exact search proves them with
    weaker bounds, several times slower where they cannot win."""
    target: Target = "any"
    """Training engine the plan must run on (docs/targets.md): "any" is haap's general plan;
    "megatron", "deepspeed", "torchtitan", "flagscale" restrict the search and the validator to
    what that engine can execute (haap_solver/targets.py)."""

    def __post_init__(self) -> None:
        check_ranges(self)
        require(len(self.recompute) >= 1, "recompute", "needs at least one mode")
        require(len(self.schedules) >= 1, "schedules", "needs at least one schedule")

    @property
    def bytes_per_value(self) -> int:
        return 4 if self.dtype == "fp32" else 2

    def blocks_p2p(self, schedule: str) -> bool:
        """Whether a stage waits for its pipeline sends under `schedule` (`pipeline_p2p`
        resolved: "auto" is the engine's default). Plain 1F1B and GPipe block under "auto"
        with every framework; the interleaved schedule overlaps under "auto" with Megatron-LM,
        so the search keeps its capacity tables per sends mode (`SearchState.capacity_bound`)."""
        if self.pipeline_p2p != "auto":
            return self.pipeline_p2p == "blocking"
        return not (self.framework == "megatron" and schedule == "interleaved-1f1b")

    def link_waits(self, schedule: str) -> int:
        """How many times a stage waits for each of its pipeline links per micro-batch in the
        steady state of `schedule` with blocking sends (`blocks_p2p`): Megatron-LM's 1F1B
        sends the activation to the next stage and receives the gradient from it in one
        batched exchange (``send_forward_recv_backward``), so each link costs its time once;
        DeepSpeed's pipeline engine (``TrainSchedule``) receives the activation, then sends
        the gradient, each a blocking operation of its own (``RecvActivation``, ``SendGrad``;
        ``SendActivation``, ``RecvGrad``), so twice (`pipeline_exchange`, "auto": by
        `framework`). GPipe's passes and the interleaved schedule (Megatron-LM's only) carry one
        message per link and direction: once (docs/cost-model.md Sec. 7)."""
        sequential = (self.pipeline_exchange == "sequential"
                      or (self.pipeline_exchange == "auto" and self.framework == "deepspeed"))
        return 2 if sequential and schedule == "1f1b" and self.blocks_p2p(schedule) else 1

    @property
    def grad_bytes(self) -> int:
        """Bytes per gradient value (`grad_dtype`)."""
        if self.grad_dtype == "fp32":
            return 4
        if self.grad_dtype == "auto" and self.framework == "megatron" and self.dtype in (
                "bf16", "fp8"):
            return 4
        return self.bytes_per_value


def check_searchable(training: TrainingSpec) -> None:
    """Refuse to plan with a schedule the exact search does not model (a plan it called optimal
    would not be). Every schedule of SCHEDULES is searched today; kept so that a schedule added
    to the cost model is refused until the search models it."""
    unsearched = [s for s in training.schedules if s not in SEARCHED_SCHEDULES]
    require(not unsearched, "training.schedules",
            f"{unsearched[0] if unsearched else ''!r} is costed by `haap evaluate` but the "
            f"planners cannot search it yet; plan with {list(SEARCHED_SCHEDULES)} (docs/"
            "cost-model.md Sec. 7.1)")
