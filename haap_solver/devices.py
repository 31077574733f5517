"""Accelerator types and their presets, with the source of every number.

Values come from ``shared/reference/gpu_specs.csv`` (the project's reference sheet). Link speeds
here are *per direction*: the sheet's NVLink figures are aggregate bidirectional and are halved.
A device's ``memory_gib`` is its nominal capacity (NVIDIA's "80GB" A100 reports 81920 MiB).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from haap_solver import limits
from haap_solver._fields import Range, check_ranges
from haap_solver.errors import InputError, did_you_mean


@dataclass(frozen=True, kw_only=True)
class DeviceType:
    """One accelerator model."""

    name: str
    """Identifier used in instance and plan files (e.g. ``A100-80G``)."""
    peak_tflops: Annotated[float, Range(0, limits.MAX_TFLOPS, min_exclusive=True)]
    """Peak dense 16-bit tensor throughput (bf16, or fp16 where there is no bf16), TFLOP/s."""
    memory_gib: Annotated[float, Range(0, limits.MAX_MEMORY_GIB, min_exclusive=True)]
    """Device memory, GiB."""
    hbm_gb_s: Annotated[float, Range(0, limits.MAX_GB_S, min_exclusive=True)]
    """Device memory bandwidth, GB/s."""
    intra_node_gb_s: Annotated[float, Range(0, limits.MAX_GB_S, min_exclusive=True)]
    """Per-GPU, per-direction bandwidth to other GPUs of the same node (NVLink, or PCIe), GB/s."""
    supports_bf16: bool = True
    """Whether bf16 is supported in hardware (V100 and T4 are fp16 only)."""
    efficiency_family: str = "default"
    """Which calibrated compute-efficiency constants apply (see docs/cost-model.md)."""
    source: str = "user-defined"
    """Where the numbers come from."""

    def __post_init__(self) -> None:
        check_ranges(self)


_SHEET = "shared/reference/gpu_specs.csv"


def _dev(name: str, tflops: float, mem: float, hbm: float, link: float, *, bf16: bool = True,
         source: str) -> DeviceType:
    return DeviceType(name=name, peak_tflops=tflops, memory_gib=mem, hbm_gb_s=hbm,
                      intra_node_gb_s=link, supports_bf16=bf16, source=f"{_SHEET}: {source}")


DEVICE_PRESETS: dict[str, DeviceType] = {
    d.name: d
    for d in (
        _dev("V100-32G", 125, 32, 900, 150, bf16=False,
             source="V100-SXM2-32GB; 125 TF fp16 tensor, 900 GB/s; NVLink2 300 GB/s aggregate"),
        _dev("A100-40G", 312, 40, 1555, 300,
             source="A100-SXM4-40GB; whitepaper Table 4; NVLink3 600 GB/s aggregate"),
        _dev("A100-80G", 312, 80, 2039, 300,
             source="A100-SXM4-80GB; Narayanan SC'21 312 TF; NVLink3 600 GB/s aggregate"),
        _dev("H100", 989, 80, 3350, 450,
             source="H100-SXM5-80GB; llm-analysis config; NVLink4 900 GB/s aggregate"),
        _dev("H200", 989, 141, 4800, 450,
             source="H200-SXM-141GB; third-party pages; NVLink4 900 GB/s aggregate"),
        _dev("L40S", 362.05, 48, 864, 32,
             source="L40S datasheet copy; no NVLink, PCIe Gen4 x16 64 GB/s bidirectional"),
        _dev("A10", 125, 24, 600, 32,
             source="A10 (24GB) datasheet 125 TF bf16; PCIe Gen4 x16"),
        _dev("T4", 65, 16, 320, 16, bf16=False,
             source="T4 65 TF fp16 mixed precision; PCIe Gen3 x16"),
        _dev("RTX3090", 71, 24, 936, 32,
             source="RTX 3090; 71 TF fp16/bf16 with fp32 accumulate (UNVERIFIED in sheet); "
                    "PCIe Gen4"),
        _dev("RTX4090", 165.2, 24, 1008, 32,
             source="RTX 4090; Ada whitepaper 165.2 TF bf16 fp32-accumulate; PCIe Gen4, no NVLink"),
        _dev("MI250X", 191.5, 64, 1600, 200,
             source="MI250X per GCD (framework device): half of the OAM's 383 TF, 128 GB, "
                    "3200 GB/s; Infinity Fabric 400 GB/s halved"),
        _dev("MI300X", 1307.4, 192, 5300, 448,
             source="MI300X 1307.4 TF (UNVERIFIED exact), 192 GB, 5.3 TB/s; xGMI 896 GB/s "
                    "aggregate"),
    )
}

_ALIASES = {
    "v100": "V100-32G", "v100-sxm2-32gb": "V100-32G", "a100": "A100-80G",
    "a100-sxm4-40gb": "A100-40G", "a100-sxm4-80gb": "A100-80G", "h100-sxm5-80gb": "H100",
    "h100-80g": "H100", "h200-141g": "H200", "rtx-3090": "RTX3090", "rtx-4090": "RTX4090",
}


def device_preset(name: str, *, field: str = "device") -> DeviceType:
    """Look up a device preset by name or alias (case-insensitive)."""
    by_lower = {k.lower(): v for k, v in DEVICE_PRESETS.items()}
    key = name.lower()
    key = _ALIASES.get(key, key).lower()
    if key not in by_lower:
        raise InputError(
            f"unknown device {name!r}{did_you_mean(name, DEVICE_PRESETS)}; known devices: "
            + ", ".join(DEVICE_PRESETS) + " (or define it in a [devices.NAME] table)",
            field=field,
        )
    return by_lower[key]
