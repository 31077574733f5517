"""Accelerator types and their presets, with the source of every number.

Values come from ``shared/reference/gpu_specs.csv`` (the project's reference sheet). Link speeds
here are *per direction*: the sheet's NVLink figures are aggregate bidirectional and are halved.
A device's ``memory_gib`` is its nominal capacity (NVIDIA's "80GB" A100 reports 81920 MiB).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

from haap_solver import limits
from haap_solver._fields import Range, check_ranges, require, require_name, show
from haap_solver.errors import InputError, did_you_mean


@dataclass(frozen=True, kw_only=True)
class DeviceType:
    """One accelerator model."""

    name: str
    """Identifier used in instance and plan files (e.g. ``A100-80G``)."""
    peak_tflops: Annotated[float, Range(limits.MIN_TFLOPS, limits.MAX_TFLOPS)]
    """Peak dense 16-bit tensor throughput (bf16, or fp16 where there is no bf16), TFLOP/s."""
    peak_fp32_tflops: float | None = None
    """Peak dense fp32 matrix throughput without TF32 (CUDA cores; AMD fp32 matrix cores),
    TFLOP/s. None: unknown, costed at 1/8 of `peak_tflops` (the A100 and H100 ratio of 16-bit
    tensor to fp32 non-tensor peak, 312/19.5 = 16 and 989/67 = 15, rounded towards slower GPUs),
    and said so in docs/cost-model.md Sec. 4.1."""
    peak_tf32_tflops: float | None = None
    """Peak dense TF32 tensor throughput, TFLOP/s; None where the device has no TF32 (Volta,
    Turing, AMD): fp32 matmuls then run at `peak_fp32_tflops` whatever the matmul precision."""
    peak_fp8_tflops: float | None = None
    """Peak dense fp8 tensor throughput (fp32 accumulate), TFLOP/s; None where the device has
    no fp8 tensor cores: fp8 training is then an error."""
    memory_gib: Annotated[float, Range(0, limits.MAX_MEMORY_GIB, min_exclusive=True)]
    """Device memory, GiB."""
    hbm_gb_s: Annotated[float, Range(limits.MIN_GB_S, limits.MAX_GB_S)]
    """Device memory bandwidth, GB/s."""
    intra_node_gb_s: Annotated[float, Range(limits.MIN_GB_S, limits.MAX_GB_S)]
    """Per-GPU, per-direction bandwidth to other GPUs of the same node (NVLink, or PCIe), GB/s;
    with `nvlink_domain_gpus`, to the GPUs of its own NVLink domain."""
    nvlink_domain_gpus: Annotated[int | None, Range(1, limits.MAX_TP)] = None
    """GPUs of a node that `intra_node_gb_s` joins, where a node holds several such domains
    joined only through PCIe and the host: 2 for GPUs paired by NVLink bridges (H100 NVL,
    A100 PCIe with bridges), 4 for two 4-GPU HGX boards in one server. None: one domain, the
    whole node (NVSwitch, or PCIe alone). Collectives and sends among more GPUs of a node than
    one domain go at `cross_domain_gb_s` (`link_gb_s`, docs/cost-model.md Sec. 6.1)."""
    cross_domain_gb_s: Annotated[float | None, Range(limits.MIN_GB_S, limits.MAX_GB_S)] = None
    """With `nvlink_domain_gpus`: per-GPU, per-direction bandwidth to a GPU of the same node in
    another NVLink domain (its PCIe link through the host: PCIe 4.0 x16 32 GB/s, 5.0 x16 64),
    GB/s. Required with `nvlink_domain_gpus`, not allowed without."""
    supports_bf16: bool = True
    """Whether bf16 is supported in hardware (V100 and T4 are fp16 only)."""
    matmul_efficiency: Annotated[float | None, Range(0, 1, min_exclusive=True)] = None
    """Measured fraction of `peak_tflops` that the device's best large, aligned 16-bit matmul
    reaches: its maximum achievable matmul FLOP/s (MAMF) over the spec peak. Power and clock
    limits, the memory hierarchy and the vendor's BLAS keep every device below its spec, by
    different amounts (an H100 SXM reaches less of its peak than an A100 SXM). The cost model's
    fitted efficiencies are fractions of this ceiling (docs/cost-model.md Sec. 4.2). None: not
    measured, assumed `UNMEASURED_MATMUL_EFFICIENCY`."""
    matmul_efficiency_fp8: Annotated[float | None, Range(0, 1, min_exclusive=True)] = None
    """As `matmul_efficiency`, for fp8 matmuls over `peak_fp8_tflops`; None: the 16-bit value."""
    efficiency_family: str = "default"
    """Which calibrated compute-efficiency constants apply (see docs/cost-model.md)."""
    source: str = "user-defined"
    """Where the numbers come from."""

    def __post_init__(self) -> None:
        require_name(self.name, "name")
        check_ranges(self)
        require((self.nvlink_domain_gpus is None) == (self.cross_domain_gb_s is None),
                "cross_domain_gb_s" if self.nvlink_domain_gpus is not None
                else "nvlink_domain_gpus",
                "nvlink_domain_gpus and cross_domain_gb_s go together: the GPUs of one NVLink "
                "domain and the bandwidth to the GPUs of the node's other domains")
        for name in ("peak_fp32_tflops", "peak_tf32_tflops", "peak_fp8_tflops"):
            value = getattr(self, name)
            if value is not None:
                require(math.isfinite(value)
                        and limits.MIN_TFLOPS <= value <= limits.MAX_TFLOPS, name,
                        f"must be a number in [{limits.MIN_TFLOPS:g}, {limits.MAX_TFLOPS:g}], "
                        f"got {value}")

    def link_gb_s(self, gpus: int, ring: int | None = None) -> float:
        """Per-GPU, per-direction bandwidth of a ring among GPUs of one node, before efficiency
        (docs/cost-model.md Sec. 6.1): `gpus`, the GPUs the group occupies on the node; `ring`,
        the ranks of one ring among them (default all: a TP group; a stage's data-parallel
        rings have one rank per replica, one ring per TP rank). Within one NVLink domain
        `intra_node_gb_s`. Across domains the ring crosses between them through PCIe, and each
        domain sends over the PCIe links of its ranks of the ring (NCCL spreads its channels
        over them): at most `cross_domain_gb_s` times the ring's ranks per domain (the packing
        puts the group in as few domains as it fills, evenly)."""
        if self.cross_domain_gb_s is None or self._one_domain(gpus):
            return self.intra_node_gb_s
        domain = self.nvlink_domain_gpus or gpus
        domains = -(-gpus // domain)
        per_domain = max(1, (gpus if ring is None else ring) // domains)
        return min(self.intra_node_gb_s, self.cross_domain_gb_s * per_domain)

    def send_gb_s(self, node_gpus: int) -> float:
        """Per-GPU, per-direction bandwidth of a pipeline send between two stages on one node
        of `node_gpus` GPUs, before efficiency: `intra_node_gb_s` where the node is one NVLink
        domain; else, conservatively, one GPU's `cross_domain_gb_s` (the two stages may sit in
        different domains, and the cost of a send must not depend on where its stages sit:
        docs/cost-model.md Sec. 6.2)."""
        if self.cross_domain_gb_s is None or self._one_domain(node_gpus):
            return self.intra_node_gb_s
        return min(self.intra_node_gb_s, self.cross_domain_gb_s)

    def _one_domain(self, gpus: int) -> bool:
        """Whether `gpus` GPUs of a node fit one NVLink domain (all do where the node is one)."""
        return self.nvlink_domain_gpus is None or gpus <= self.nvlink_domain_gpus

    def matmul_ceiling(self, dtype: str) -> float:
        """Fraction of the `dtype` matmul peak that the device's best matmul reaches (measured,
        `matmul_efficiency`; the fp8 figure for fp8 where there is one, the 16-bit figure for
        every other precision: no fp32 or TF32 measurements exist for the presets)."""
        if dtype == "fp8" and self.matmul_efficiency_fp8 is not None:
            return self.matmul_efficiency_fp8
        if self.matmul_efficiency is not None:
            return self.matmul_efficiency
        return UNMEASURED_MATMUL_EFFICIENCY

    def matmul_peak_tflops(self, dtype: str, fp32_matmul_precision: str = "highest") -> float:
        """Peak dense matmul TFLOP/s for the training precision (docs/cost-model.md Sec. 4.1).

        16-bit training runs its matmuls on the 16-bit tensor cores; fp8 on the fp8 ones; fp32
        on TF32 tensor cores when `fp32_matmul_precision` is "high" (and the device has them),
        else on fp32 units (PyTorch's default since 1.12: ``allow_tf32`` off for matmuls).
        """
        if dtype in ("bf16", "fp16"):
            return self.peak_tflops
        if dtype == "fp8":
            if self.peak_fp8_tflops is None:
                raise ValueError(f"{self.name} has no fp8 tensor cores")
            return self.peak_fp8_tflops
        if fp32_matmul_precision == "high" and self.peak_tf32_tflops is not None:
            return self.peak_tf32_tflops
        if self.peak_fp32_tflops is not None:
            return self.peak_fp32_tflops
        return self.peak_tflops / 8.0


_SHEET = "shared/reference/gpu_specs.csv"

MAMF_SOURCE = ("S. Bekman, ml-engineering, compute/accelerator/README.md, 'Maximum Achievable "
               "Matmul FLOPS comparison table' (commit 744d01e, 2026-08): mamf-finder.py, the "
               "mean of 100 timed matmuls after 50 warm-up ones, best shape of a brute-force "
               "scan, BF16 and FP8 inputs")
"""Where the presets' `matmul_efficiency` figures come from."""
UNMEASURED_MATMUL_EFFICIENCY = 0.869
"""`DeviceType.matmul_efficiency` of a device without a measurement (assumed): the A100 SXM's
measured 271.2 of 312 TFLOP/s (`MAMF_SOURCE`), the device of most calibration runs, so an
unmeasured device keeps the constants fitted there unchanged. Measured NVIDIA data-centre GPUs
span 0.73-0.87 in the same table; older and consumer GPUs are not in it, and power-capped cards
reach far less (the 70 W T4 about 0.37)."""


def _dev(name: str, tflops: float, mem: float, hbm: float, link: float, *, bf16: bool = True,
         source: str, fp32: float, tf32: float | None = None, fp8: float | None = None,
         precision_source: str, family: str = "default",
         mamf: tuple[float | None, float | None, str] | None = None) -> DeviceType:
    """A preset; `mamf` = (16-bit, fp8 `matmul_efficiency`, where measured)."""
    measured = f"; matmul ceiling: {mamf[2]}" if mamf else ""
    return DeviceType(name=name, peak_tflops=tflops, memory_gib=mem, hbm_gb_s=hbm,
                      intra_node_gb_s=link, supports_bf16=bf16, peak_fp32_tflops=fp32,
                      peak_tf32_tflops=tf32, peak_fp8_tflops=fp8, efficiency_family=family,
                      matmul_efficiency=mamf[0] if mamf else None,
                      matmul_efficiency_fp8=mamf[1] if mamf else None,
                      source=f"{_SHEET}: {source}; other precisions: {precision_source}"
                             f"{measured}")


# Sources of the fp32 / TF32 / fp8 peaks (gpu_specs.csv has the 16-bit and some fp8 figures only).
_A100_DS = ("NVIDIA A100 datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf) as "
            "tabulated at glennklockwood.com/garden/processors/A100: FP32 19.5, TF32 156 dense")
_A100_MAMF = (0.869, None, "A100 SXM 271.2 of 312 BF16 (the 40 and 80 GB parts share the GA100 "
                         "die and clocks): " + MAMF_SOURCE)
_H100_WP = ("NVIDIA H100 whitepaper as tabulated at glennklockwood.com/garden/processors/h100: "
            "FP32 66.9, TF32 494.7 dense, FP8 1978.9 dense")


DEVICE_PRESETS: dict[str, DeviceType] = {
    d.name: d
    for d in (
        _dev("V100-32G", 125, 32, 900, 150, bf16=False, fp32=15.7,
             precision_source="V100 datasheet, SXM2 FP32 15.7 (UNVERIFIED, from memory); "
                              "no TF32, no fp8",
             source="V100-SXM2-32GB; 125 TF fp16 tensor, 900 GB/s; NVLink2 300 GB/s aggregate"),
        _dev("A100-40G", 312, 40, 1555, 300, fp32=19.5, tf32=156, precision_source=_A100_DS,
             family="ampere", mamf=_A100_MAMF,
             source="A100-SXM4-40GB; whitepaper Table 4; NVLink3 600 GB/s aggregate"),
        _dev("A100-80G", 312, 80, 2039, 300, fp32=19.5, tf32=156, precision_source=_A100_DS,
             family="ampere", mamf=_A100_MAMF,
             source="A100-SXM4-80GB; Narayanan SC'21 312 TF; NVLink3 600 GB/s aggregate"),
        _dev("H100", 989, 80, 3350, 450, fp32=66.9, tf32=494.7, fp8=1978.9,
             precision_source=_H100_WP, family="hopper",
             mamf=(0.803, 0.709, "H100 SXM 794.5 of 989 BF16, 1402.6 of 1979 FP8: "
                                 + MAMF_SOURCE),
             source="H100-SXM5-80GB; llm-analysis config; NVLink4 900 GB/s aggregate"),
        _dev("H200", 989, 141, 4800, 450, fp32=66.9, tf32=494.7, fp8=1978.9,
             precision_source="same GH100 compute as H100: " + _H100_WP, family="hopper",
             mamf=(0.803, 0.734, "BF16 as the H100 SXM's (the table: 'H200 is the same'), "
                                 "H200 SXM 1453.4 of 1979 FP8: " + MAMF_SOURCE),
             source="H200-SXM-141GB; third-party pages; NVLink4 900 GB/s aggregate"),
        _dev("L40S", 362.05, 48, 864, 32, fp32=91.6, tf32=183, fp8=733,
             precision_source="fp8 733 dense: gpu_specs.csv; FP32 91.6, TF32 183 dense: L40S "
                              "datasheet (UNVERIFIED, from memory)",
             source="L40S datasheet copy; no NVLink, PCIe Gen4 x16 64 GB/s bidirectional"),
        _dev("A10", 125, 24, 600, 32, fp32=31.2, tf32=62.5,
             precision_source="A10 datasheet FP32 31.2, TF32 62.5 dense (UNVERIFIED, from "
                              "memory)",
             source="A10 (24GB) datasheet 125 TF bf16; PCIe Gen4 x16"),
        _dev("T4", 65, 16, 320, 16, bf16=False, fp32=8.1,
             precision_source="T4 datasheet FP32 8.1 (UNVERIFIED, from memory); no TF32, no fp8",
             mamf=(0.369, None, "about 24 of 65 TFLOP/s fp16: cuBLAS 4096^3, mean of 100 "
                                "iterations, NVIDIA developer forum thread 264462 'About GPU "
                                "peak performance' (2023), where NVIDIA's moderator attributes "
                                "it to the 70 W power cap lowering the clock: expected for "
                                "continuous matrix multiplies"),
             source="T4 65 TF fp16 mixed precision; PCIe Gen3 x16"),
        _dev("RTX3090", 71, 24, 936, 32, fp32=35.6, tf32=35.6,
             precision_source="GA102 whitepaper FP32 35.6, TF32 tensor 35.6 dense (UNVERIFIED, "
                              "from memory)",
             source="RTX 3090; 71 TF fp16/bf16 with fp32 accumulate (UNVERIFIED in sheet); "
                    "PCIe Gen4"),
        _dev("RTX4090", 165.2, 24, 1008, 32, fp32=82.6, tf32=82.6, fp8=330.3,
             precision_source="fp8 330.3 (fp32 accumulate): gpu_specs.csv; FP32 82.6, TF32 82.6 "
                              "dense: Ada whitepaper App. A (UNVERIFIED, from memory)",
             source="RTX 4090; Ada whitepaper 165.2 TF bf16 fp32-accumulate; PCIe Gen4, no NVLink"),
        _dev("MI250X", 191.5, 64, 1600, 200, fp32=47.9,
             precision_source="MI250X FP32 matrix 95.7 per OAM, halved per GCD (UNVERIFIED, from "
                              "memory); no TF32, no fp8",
             mamf=(0.768, None, "MI250X 147.0 of 191.5 BF16 per GCD, ROCm 6.2: the same table "
                                "at commit 7376725 (2025-01; no longer listed at 744d01e)"),
             source="MI250X per GCD (framework device): half of the OAM's 383 TF, 128 GB, "
                    "3200 GB/s; Infinity Fabric 400 GB/s halved"),
        _dev("MI300X", 1307.4, 192, 5300, 448, fp32=163.4, tf32=653.7, fp8=2614.9,
             precision_source="fp8 2614.9: gpu_specs.csv (UNVERIFIED); FP32 163.4, TF32 653.7: "
                              "MI300X datasheet (UNVERIFIED, from memory)",
             mamf=(0.514, None, "MI300X 668.4 of 1300 BF16, ROCm 6.3, TunableOp on: "
                                + MAMF_SOURCE),
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
    """Look up a device preset by name or alias (case-insensitive). `name` comes from user
    files (an instance's device, a device's `base`, a re-plan event's), so its type is checked
    here, once for every caller."""
    if not isinstance(name, str):
        raise InputError(f"expected a device preset name, got {show(name)}", field=field)
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
