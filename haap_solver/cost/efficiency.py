"""The constants of the cost model: fitted ones, and assumed ones with where they come from.

A GEMM's efficiency rises with its rows (tokens of the micro-batch) and its narrowest per-GPU
dimension (``haap_solver.cost.compute.gemm_efficiency``), saturating at `max_efficiency`.
`max_efficiency` (Ampere, and the extrapolation for families without runs), the Hopper family's
own value, `network_efficiency` and `zero3_overlap` are fitted once, jointly, on the calibration
runs shipped in ``haap_solver/data/`` (copies of ``shared/reference/calibration_runs.csv`` and
``more_runs.csv``): least squares on log(predicted / measured) time, rounded to 3 significant
digits (``haap calibrate --fit``; docs/validation.md gives the method, every row's error, the
leave-one-source-out cross-validation and the known biases). One set of constants per device
family, never a per-row fit; a measured profile overrides the analytical times entirely.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True, kw_only=True)
class CostConstants:
    """Constants of the cost model. Fitted ones say so; the others say where they come from."""

    max_efficiency: float = 0.728
    """Fitted (``haap calibrate --fit`` on the calibration runs, see docs/validation.md): the
    fraction of the 16-bit peak reached by large GEMMs on Ampere (A100) GPUs, and the
    documented extrapolation for device families without runs of their own. Absorbs unmodelled
    end-to-end overheads and part of the interleaved-schedule bias of the SC'21 runs."""
    width_half: float = 64.0
    """Narrowest per-GPU GEMM dimension at which efficiency is half its maximum (assumed: half of
    a 128-wide tensor-core tile). Fitted freely it runs to its lower bound (1): the runs' weight
    GEMMs are all at least 768 wide, and the only narrow ones are the unfused attention's
    head-dimension (64-160) GEMMs, whose cost the fit then sets through `max_efficiency`."""
    tokens_half: float = 128.0
    """Tokens per micro-batch at which efficiency halves: one 128-row tensor-core tile (assumed)."""
    network_efficiency: float = 0.701
    """Fitted (as `max_efficiency`): fraction of NIC line rate that NCCL collectives reach across
    nodes. Set almost entirely by the DeepSpeed ZeRO-3 runs, so an effective value."""
    zero3_overlap: float = 0.687
    """Fitted (as `max_efficiency`): share of ZeRO-3 parameter traffic hidden behind compute by
    prefetching (a compromise over the ZeRO-3 runs, see docs/validation.md)."""
    intra_node_efficiency: float = 0.7
    """Fraction of NVLink/PCIe per-direction bandwidth a ring reaches (Calculon uses 0.65 for
    NVLink; nccl-tests bus bandwidth on DGX A100 is about 0.77 of 300 GB/s)."""
    hbm_efficiency: float = 0.8
    """Fraction of HBM bandwidth reached by memory-bound kernels (optimizer, embedding, loss)."""
    optimizer_bytes_per_param: float = 28.0
    """Memory traffic of one fused mixed-precision Adam step per local parameter: read fp32
    master, m, v, and the gradient, write master, m, v and the 16-bit weight."""
    grad_bucket_params: float = 40e6
    """Gradient bucket size of overlapped data-parallel reduction (Megatron-LM default 40M)."""
    kernel_launch_s: float = 40e-6
    """Host time to issue one kernel of a layer: PyTorch eager dispatch, autograd bookkeeping and
    the CUDA launch (assumed: eager PyTorch ops cost about 10-50 us of host time each; no
    calibration row is host-bound, so none constrains it). With about 20 (Megatron) to 30
    (DeepSpeed) kernels per layer forward and twice as many backward this floors a layer at
    2-3 ms forward + backward, whatever its width or TP degree (docs/cost-model.md Sec. 4.5)."""
    flash_efficiency: float = 0.75
    """Fraction of the matmul peak a flash-attention kernel reaches with wide heads, before the
    head-dimension factor (assumed from Dao 2023, FlashAttention-2, Fig. 4-5: 50-73% of A100
    peak forward at head dimension 64-128 for long sequences)."""
    flash_head_dim_half: float = 32.0
    """Head dimension at which flash attention reaches half of `flash_efficiency` (assumed: gives
    0.50 of peak at d = 64 and 0.60 at d = 128, the FlashAttention-2 figures)."""
    family_constants: tuple[tuple[str, str, float], ...] = (
        ("hopper", "max_efficiency", 0.671),
    )
    """Constants fitted on a device family's own runs, as (family, constant, value): they replace
    the constant for devices of that `DeviceType.efficiency_family`. A family not listed uses the
    values above (`max_efficiency` fitted on Ampere: for the others an extrapolation,
    docs/validation.md)."""

    def with_(self, **changes: float) -> CostConstants:
        return replace(self, **changes)  # type: ignore[arg-type]

    def for_family(self, family: str) -> CostConstants:
        """These constants with those fitted on `family`'s own runs in place."""
        changes = {name: value for f, name, value in self.family_constants if f == family}
        if not changes:
            return self
        return replace(self, family_constants=(), **changes)  # type: ignore[arg-type]


DEFAULT_CONSTANTS = CostConstants()


