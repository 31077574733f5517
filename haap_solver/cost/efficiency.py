"""How much of a device's peak the transformer kernels reach, and other calibrated constants.

Compute efficiency rises with the width of the per-GPU matrix multiplies (h / TP) and with the rows
(tokens) of a micro-batch, saturating at `max_efficiency`:

    eff(h/t, tokens) = max_efficiency * w / (w + width_half) * n / (n + tokens_half)

with w = h / t and n = micro-batch tokens. `max_efficiency`, `width_half` and the network constants
are fitted once on the measured Megatron-LM runs in ``shared/reference/calibration_runs.csv`` (see
``haap_solver.calibration`` and docs/validation.md): one set of constants for every row, never a
per-row fit. Device types without measurements of their own use the same constants (their
``efficiency_family`` is "default"); a measured profile overrides the analytical times entirely.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True, kw_only=True)
class CostConstants:
    """Constants of the cost model. Fitted ones say so; the others say where they come from."""

    max_efficiency: float = 0.602
    """Fitted: fraction of peak reached by large, wide GEMM-dominated layers."""
    width_half: float = 152.0
    """Fitted: per-GPU GEMM width h/t at which efficiency is half its maximum."""
    tokens_half: float = 128.0
    """Tokens per micro-batch at which efficiency halves: one 128-row tensor-core tile (assumed)."""
    network_efficiency: float = 0.672
    """Fitted: fraction of NIC line rate that NCCL collectives reach across nodes."""
    zero3_overlap: float = 0.802
    """Fitted: share of ZeRO-3 parameter traffic hidden behind compute by prefetching."""
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

    def with_(self, **changes: float) -> CostConstants:
        return replace(self, **changes)


DEFAULT_CONSTANTS = CostConstants()


def compute_efficiency(constants: CostConstants, hidden_size: int, tp: int, tokens: int) -> float:
    width = hidden_size / tp
    return (constants.max_efficiency * width / (width + constants.width_half)
            * tokens / (tokens + constants.tokens_half))
