"""The constants of the cost model: fitted ones, and assumed ones with where they come from.

A GEMM's efficiency rises with its rows (tokens of the micro-batch) and its narrowest per-GPU
dimension (``haap_solver.cost.compute.gemm_efficiency``), saturating at `max_efficiency` of the
device's achievable matmul rate: its peak times its measured matmul ceiling
(`DeviceType.matmul_efficiency`, a published measurement per device, not a fit).
`max_efficiency`, `network_efficiency` and `zero3_overlap` are fitted once, jointly, on the
calibration runs shipped in ``haap_solver/data/`` (copies of
``shared/reference/calibration_runs.csv`` and ``more_runs.csv``): least squares on
log(predicted / measured) time, rounded to 3 significant digits (``haap calibrate --fit``;
docs/validation.md gives the method, every row's error, the leave-one-source-out
cross-validation and the known biases). One set of constants for every device, never a per-row
fit; a measured profile overrides the analytical times entirely.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from haap_solver.instance import Instance


@dataclass(frozen=True, kw_only=True)
class CostConstants:
    """Constants of the cost model. Fitted ones say so; the others say where they come from."""

    max_efficiency: float = 0.834
    """Fitted (``haap calibrate --fit`` on the calibration runs, see docs/validation.md): the
    fraction of the device's achievable matmul rate (peak x `DeviceType.matmul_ceiling`) that
    large GEMMs reach in training. Absorbs unmodelled end-to-end overheads (data loading,
    logging, the loss scaler, framework gaps between kernels)."""
    width_half: float = 64.0
    """Narrowest per-GPU GEMM dimension at which efficiency is half its maximum (assumed: half of
    a 128-wide tensor-core tile). Fitted freely it runs to its lower bound (1): the runs' weight
    GEMMs are all at least 768 wide, and the only narrow ones are the unfused attention's
    head-dimension (64-160) GEMMs, whose cost the fit then sets through `max_efficiency`."""
    tokens_half: float = 128.0
    """Tokens per micro-batch at which efficiency halves: one 128-row tensor-core tile (assumed)."""
    network_efficiency: float = 0.723
    """Fitted (as `max_efficiency`): fraction of NIC line rate that NCCL collectives reach across
    nodes. Set almost entirely by the DeepSpeed ZeRO-3 runs, so an effective value."""
    zero3_overlap: float = 0.654
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
    flash_efficiency: float = 0.863
    """Fraction of the achievable matmul rate a flash-attention kernel reaches with wide heads,
    before the head-dimension factor (assumed from Dao 2023, FlashAttention-2, Fig. 4-5: 50-73%
    of A100 peak forward at head dimension 64-128 for long sequences; 0.75 of peak over the
    A100's measured matmul ceiling 0.869)."""
    flash_head_dim_half: float = 32.0
    """Head dimension at which flash attention reaches half of `flash_efficiency` (assumed: gives
    0.50 of A100 peak at d = 64 and 0.60 at d = 128, the FlashAttention-2 figures)."""
    family_constants: tuple[tuple[str, str, float], ...] = ()
    """Constants for one device family, as (family, constant, value): they replace the constant
    for devices of that `DeviceType.efficiency_family` (for a user with measured runs of their
    own). None ship: the devices' measured matmul ceilings carry what separated the Ampere and
    Hopper runs (a separately fitted Hopper `max_efficiency` was 0.922 of the Ampere one; the
    measured ceilings' ratio, H100 SXM over A100 SXM, is 0.924)."""

    def with_(self, **changes: float) -> CostConstants:
        return replace(self, **changes)  # type: ignore[arg-type]

    def for_family(self, family: str) -> CostConstants:
        """These constants with those fitted on `family`'s own runs in place."""
        changes = {name: value for f, name, value in self.family_constants if f == family}
        if not changes:
            return self
        return replace(self, family_constants=(), **changes)  # type: ignore[arg-type]


DEFAULT_CONSTANTS = CostConstants()


def check_families(instance: Instance, constants: CostConstants) -> None:
    """An InputError where a device names an efficiency family that nothing knows: not
    "default", not a preset device's (those take the defaults: none ship, `family_constants`)
    and not one `constants` has values for. Such a family took the default constants silently,
    so a misspelt family (``"hoper"``) or one whose constants were not passed went unnoticed.
    Checked where the constants meet the instance (the cost model): a library user may name a
    family of their own in a file and pass its constants in code."""
    from haap_solver.errors import InputError
    from haap_solver.stragglers import is_slowed

    for name, device in sorted(instance.cluster.devices.items()):
        message = family_error(device.efficiency_family, constants)
        if message is None:
            continue
        if is_slowed(device):  # a slowed device: DEVICE@P%
            name = name.rsplit("@", 1)[0]
        raise InputError(message, field=f"devices.{name}.efficiency_family",
                         source=instance.source)


def family_error(family: str, constants: CostConstants = DEFAULT_CONSTANTS) -> str | None:
    """Why `family` is unknown to `constants` (`check_families`), or None."""
    from haap_solver.devices import DEVICE_PRESETS
    from haap_solver.errors import did_you_mean

    known = {"default"} | {d.efficiency_family for d in DEVICE_PRESETS.values()}
    known |= {f for f, _, _ in constants.family_constants}
    if family in known:
        return None
    return (f"unknown efficiency family {family!r}{did_you_mean(family, known)}; known: "
            + ", ".join(sorted(known)) + " (a family other than these needs its constants "
            "passed to the cost model, CostConstants.family_constants)")


