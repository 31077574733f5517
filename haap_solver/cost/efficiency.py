"""How much of a device's peak the transformer kernels reach, and other calibrated constants.

Compute efficiency rises with the width of the per-GPU matrix multiplies (h / TP) and with the rows
(tokens) of a micro-batch, saturating at `max_efficiency`:

    eff(h/t, tokens) = max_efficiency * w / (w + width_half) * n / (n + tokens_half)

with w = h / t and n = micro-batch tokens. `max_efficiency`, `width_half`, `network_efficiency` and
`zero3_overlap` are fitted once, jointly, on the 22 measured Megatron-LM / DeepSpeed runs of
Narayanan et al. (SC'21) shipped in ``haap_solver/data/calibration_runs.csv`` (a copy of
``shared/reference/calibration_runs.csv``): least squares on log(predicted / measured) iteration
time, rounded to 3 significant digits (``haap calibrate --fit``; ``haap_solver.calibration`` and
docs/validation.md give the method, every row's error and the known biases). One set of constants
for every row, never a per-row fit. Device types without measurements of their own use the same
constants (their ``efficiency_family`` is "default"); a measured profile overrides the analytical
times entirely.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True, kw_only=True)
class CostConstants:
    """Constants of the cost model. Fitted ones say so; the others say where they come from."""

    max_efficiency: float = 0.723
    """Fitted (``haap calibrate --fit`` on haap_solver/data/calibration_runs.csv, see
    docs/validation.md): fraction of peak reached by large, wide GEMM-dominated layers. Absorbs
    unmodelled end-to-end overheads and part of the interleaved-schedule bias of the runs."""
    width_half: float = 232.0
    """Fitted (as `max_efficiency`): per-GPU GEMM width h/t at which efficiency is half its
    maximum. Loosely determined (the runs have h/t >= 768) and correlated with
    `max_efficiency`."""
    tokens_half: float = 128.0
    """Tokens per micro-batch at which efficiency halves: one 128-row tensor-core tile (assumed)."""
    network_efficiency: float = 0.747
    """Fitted (as `max_efficiency`): fraction of NIC line rate that NCCL collectives reach across
    nodes. Set almost entirely by the DeepSpeed ZeRO-3 runs, so an effective value."""
    zero3_overlap: float = 0.58
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

    def with_(self, **changes: float) -> CostConstants:
        return replace(self, **changes)


DEFAULT_CONSTANTS = CostConstants()


def compute_efficiency(constants: CostConstants, hidden_size: int, tp: int, tokens: int) -> float:
    width = hidden_size / tp
    return (constants.max_efficiency * width / (width + constants.width_half)
            * tokens / (tokens + constants.tokens_half))
