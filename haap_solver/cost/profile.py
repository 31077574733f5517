"""Measured profiles: per device type and (TP degree, micro-batch size), measured seconds.

A profile is a TOML file of ``[[entry]]`` tables (see docs/cost-model.md, Sec. 9). Where a profile
covers a device type its numbers replace the analytical compute times of that type. Missing
(TP, micro-batch) points are filled by interpolation:

1. same TP, micro-batch inside the measured range: linear interpolation between the two nearest
   measured micro-batch sizes (kernel time is close to affine in the batch);
2. same TP, micro-batch outside the range: linear extrapolation through the two nearest points
   (proportional scaling from the single point when there is only one), clamped at zero;
3. TP not measured: the nearest measured TP (in log scale), scaled by t_measured / t (work splits
   evenly over TP ranks; this ignores communication, so it is flagged).

Every value obtained by rule 2 or 3 is reported as extrapolated in the evaluation. The optimizer
step (``layer_optimizer_s``) does not depend on the micro-batch: rules 1 and 2 take it from the
nearest measured micro-batch; rule 3 scales it by t_measured / t like the other fields.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any

if sys.version_info >= (3, 11):
    pass
else:  # pragma: no cover
    pass

from haap_solver import limits
from haap_solver._fields import Range, build, check_ranges, show
from haap_solver._parse import loads_toml
from haap_solver.errors import InputError, did_you_mean, read_text

# Measured seconds: at least zero (more than zero for a layer's forward and backward).
_SECONDS = Range(0, limits.MAX_SECONDS)
_POSITIVE_S = Range(0, limits.MAX_SECONDS, min_exclusive=True)
_TIME_FIELDS = ("layer_fwd_s", "layer_bwd_s", "embedding_fwd_s", "embedding_bwd_s", "head_fwd_s",
                "head_bwd_s", "layer_optimizer_s")


@dataclass(frozen=True, kw_only=True)
class ProfileEntry:
    """Measured costs of one device type at one (TP, micro-batch) point."""

    device: str
    """Device type name."""
    tp: Annotated[int, Range(1, limits.MAX_TP)]
    """Tensor-parallel degree of the measurement."""
    micro_batch: Annotated[int, Range(1, limits.MAX_MICRO_BATCH)]
    """Micro-batch size (sequences) of the measurement."""
    layer_fwd_s: Annotated[float, _POSITIVE_S]
    """Forward seconds of one decoder layer, TP communication included."""
    layer_bwd_s: Annotated[float, _POSITIVE_S]
    """Backward seconds of one decoder layer without recomputation, TP communication included."""
    embedding_fwd_s: Annotated[float, _SECONDS] = 0.0
    """Forward seconds of the input embedding."""
    embedding_bwd_s: Annotated[float, _SECONDS] = 0.0
    """Backward seconds of the input embedding."""
    head_fwd_s: Annotated[float, _SECONDS] = 0.0
    """Forward seconds of the final norm, LM head and loss."""
    head_bwd_s: Annotated[float, _SECONDS] = 0.0
    """Backward seconds of the final norm, LM head and loss."""
    layer_optimizer_s: Annotated[float | None, _SECONDS] = None
    """Optimizer-step seconds for one layer's parameters on one TP rank (no ZeRO sharding)."""
    layer_activation_bytes: Annotated[float | None, Range(0, limits.MAX_BYTES)] = None
    """Measured activation bytes of one layer per micro-batch (no recomputation)."""
    extrapolated: str | None = None
    """Set on looked-up entries that were extrapolated (never in files)."""

    def __post_init__(self) -> None:
        # Lookups derive entries by extrapolation, beyond the upper limits a file may hold (the
        # loader checks those): here only the lower ones.
        check_ranges(self, upper=False)


class Profile:
    """Measured entries with interpolation; lookups are cached."""

    def __init__(self, entries: list[ProfileEntry], *, source: str | None = None):
        self.source = source
        self._points: dict[str, dict[int, dict[int, ProfileEntry]]] = {}
        for e in entries:
            by_tp = self._points.setdefault(e.device, {})
            by_mb = by_tp.setdefault(e.tp, {})
            if e.micro_batch in by_mb:
                raise InputError(f"duplicate entry for device {e.device!r}, tp {e.tp}, "
                                 f"micro_batch {e.micro_batch}", source=source)
            by_mb[e.micro_batch] = e
        self._cache: dict[tuple[str, int, int], ProfileEntry] = {}

    def has_device(self, device: str) -> bool:
        return device in self._points

    @property
    def devices(self) -> list[str]:
        return sorted(self._points)

    @property
    def entries(self) -> tuple[ProfileEntry, ...]:
        """The measured entries as read (the validator's memory check interpolates them itself)."""
        return tuple(e for by_tp in self._points.values() for by_mb in by_tp.values()
                     for e in by_mb.values())

    def lookup(self, device: str, tp: int, micro_batch: int) -> ProfileEntry:
        key = (device, tp, micro_batch)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._lookup(device, tp, micro_batch)
            self._cache[key] = hit
        return hit

    def _lookup(self, device: str, tp: int, mb: int) -> ProfileEntry:
        by_tp = self._points[device]
        if tp in by_tp:
            return _along_batch(by_tp[tp], mb)
        ref_tp = min(by_tp, key=lambda t: (abs(math.log(t / tp)), t))
        base = _along_batch(by_tp[ref_tp], mb)
        scaled = _scale(base, ref_tp / tp)
        note = f"tp {tp} scaled from measured tp {ref_tp} (micro-batch {mb})"
        if base.extrapolated:
            note += f"; {base.extrapolated}"
        return replace(scaled, tp=tp, micro_batch=mb, extrapolated=note)


def _numeric_fields() -> tuple[str, ...]:
    return (*_TIME_FIELDS, "layer_activation_bytes")


def _scale(e: ProfileEntry, k: float) -> ProfileEntry:
    changes: dict[str, Any] = {}
    for name in _numeric_fields():
        v = getattr(e, name)
        if v is not None:
            changes[name] = v * k
    return replace(e, **changes)


def _combine(a: ProfileEntry, b: ProfileEntry, wa: float, wb: float) -> ProfileEntry:
    changes: dict[str, Any] = {}
    for name in _numeric_fields():
        va, vb = getattr(a, name), getattr(b, name)
        if va is None or vb is None:
            changes[name] = None
        else:
            changes[name] = max(0.0, wa * va + wb * vb)
    # Never let extrapolation drive the main times to zero.
    for name in ("layer_fwd_s", "layer_bwd_s"):
        if changes[name] <= 0:
            changes[name] = min(getattr(a, name), getattr(b, name)) * 1e-3
    return replace(a, **changes)


def _along_batch(points: dict[int, ProfileEntry], mb: int) -> ProfileEntry:
    if mb in points:
        return points[mb]
    sizes = sorted(points)
    # The optimizer step does not depend on the micro-batch: take it from the nearest measured
    # micro-batch rather than scaling, interpolating or extrapolating it.
    nearest = min(sizes, key=lambda size: (abs(size - mb), size))
    optimizer_s = points[nearest].layer_optimizer_s
    if len(sizes) == 1:
        ref = sizes[0]
        return replace(_scale(points[ref], mb / ref), micro_batch=mb,
                       layer_optimizer_s=optimizer_s,
                       extrapolated=f"micro-batch {mb} scaled from measured {ref}")
    lower = [s for s in sizes if s < mb]
    upper = [s for s in sizes if s > mb]
    if lower and upper:
        lo, hi = lower[-1], upper[0]
        w = (mb - lo) / (hi - lo)
        return replace(_combine(points[lo], points[hi], 1 - w, w), micro_batch=mb,
                       layer_optimizer_s=optimizer_s)
    lo, hi = (sizes[-2], sizes[-1]) if not upper else (sizes[0], sizes[1])
    w = (mb - lo) / (hi - lo)
    return replace(_combine(points[lo], points[hi], 1 - w, w), micro_batch=mb,
                   layer_optimizer_s=optimizer_s,
                   extrapolated=f"micro-batch {mb} extrapolated from measured {lo} and {hi}")


def profile_from_dict(data: Any, *, source: str | None = None) -> Profile:
    try:
        if not isinstance(data, dict):
            raise InputError(f"expected a table at the top level, got {show(data)}")
        for key in data:
            if key not in ("entry", "description"):
                raise InputError(f"unknown key{did_you_mean(key, ['entry', 'description'])}; "
                                 "allowed keys: entry, description", field=key)
        raw = data.get("entry")
        if raw is None or (isinstance(raw, list) and not raw):
            raise InputError("needs at least one [[entry]] table", field="entry")
        if not isinstance(raw, list):
            raise InputError(f"expected a list of tables, got {show(raw)} (write one [[entry]] "
                             "table per measurement, not [entry])", field="entry")
        if len(raw) > limits.MAX_PROFILE_ENTRIES:
            raise InputError(f"holds at most {limits.MAX_PROFILE_ENTRIES:,} entries, got "
                             f"{len(raw):,}", field="entry")
        if "description" in data and not isinstance(data["description"], str):
            raise InputError(f"expected a string, got {show(data['description'])}",
                             field="description")
        entries = [build(ProfileEntry, e, prefix=f"entry[{i}]") for i, e in enumerate(raw)]
        seen: dict[tuple[str, int, int], int] = {}
        for i, e in enumerate(entries):
            if e.extrapolated is not None:
                raise InputError("is set by lookups, not in files",
                                 field=f"entry[{i}].extrapolated")
            key = (e.device, e.tp, e.micro_batch)
            if key in seen:
                raise InputError(f"duplicate of entry[{seen[key]}] (same device, tp and "
                                 "micro_batch)", field=f"entry[{i}]")
            seen[key] = i
        return Profile(entries, source=source)
    except InputError as exc:
        raise exc.within(source=source) from None


def load_profile(path: str | Path) -> Profile:
    """Read a profile TOML file of ``[[entry]]`` tables."""
    path = Path(path)
    source = str(path)
    data = loads_toml(read_text(path, "a profile .toml file", not_found="profile file not found"),
                      source)
    if not data:
        raise InputError("file is empty; a profile needs at least one [[entry]] table",
                         source=source)
    return profile_from_dict(data, source=source)
