"""Benchmark figures in the docs, generated from the benchmark run so they cannot drift.

`haap bench` writes every row it measured to a machine-readable file (docs/benchmarks.json, beside
docs/benchmarks.md) and rewrites the blocks of README.md and formulations/stage-assignment.md that
sit between marker comments:

    <!-- haap bench: NAME -->
    ... generated text, replaced on every run ...
    <!-- /haap bench: NAME -->

Prose outside the blocks carries no figure a run produces; tests/test_docs_figures.py checks that
each block is what this module renders from docs/benchmarks.json, and that no timing figure has
crept back into the prose around them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from haap_solver.errors import InputError, read_text

SCHEMA_VERSION = 1
BLOCKS = {"README.md": ("status", "mixed-example"),
          "formulations/stage-assignment.md": ("large-clusters",),
          "docs/targets.md": ("target-prices",)}
"""Which generated blocks each document holds (paths relative to the repository root)."""
LARGE_GPUS = 256
"""Instances above this many GPUs are the 'large clusters' of formulations Sec. 4.7."""
MIXED_EXAMPLE = "llama3.2-1b-h100x4-l40sx4"
"""The instance the README's mixed-stage paragraph quotes."""
BASELINE_NAMES = {"uniform": "the uniform grid", "proportional": "the proportional split",
                  "metis": "the Metis-style search"}
_ROW_KEYS = ("instance", "gpus", "method", "status", "iteration_time_s", "gap", "search_s")


def begin_marker(name: str) -> str:
    return f"<!-- haap bench: {name} -->"


def end_marker(name: str) -> str:
    return f"<!-- /haap bench: {name} -->"


# -- the JSON file ---------------------------------------------------------------------------------
def bench_record(rows: Sequence[Mapping[str, Any]], *, generated_utc: str, time_limit_s: float,
                 threads: int, methods: Sequence[str], total_s: float,
                 machine: Mapping[str, str]) -> dict[str, Any]:
    """What docs/benchmarks.json holds: the run's settings and every row, with its plan up to
    LARGE_GPUS GPUs (the plans of the largest clusters would make the file megabytes)."""
    return {"schema_version": SCHEMA_VERSION, "generated_utc": generated_utc,
            "time_limit_s": time_limit_s, "threads": threads, "methods": list(methods),
            "total_s": total_s, "machine": dict(machine),
            "rows": [{k: (None if k == "plan" and r.get("gpus", 0) > LARGE_GPUS
                          else json_number(v)) for k, v in r.items()} for r in rows]}


def json_number(v: Any) -> Any:
    """JSON has no inf or nan: write them as strings, read back by _number."""
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def _number(v: Any) -> float:
    return float(v) if isinstance(v, (int, float, str)) else math.nan


def load_record(path: str | Path) -> dict[str, Any]:
    """Read docs/benchmarks.json; errors name the file and the field."""
    source = str(path)
    text = read_text(Path(path), "a benchmark JSON file (written by haap bench)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg} at line {exc.lineno}", source=source) from None
    if not isinstance(data, dict):
        raise InputError("expected a JSON object at the top level", source=source)
    if data.get("schema_version") != SCHEMA_VERSION:
        raise InputError(f"expected {SCHEMA_VERSION}, got {data.get('schema_version')!r}",
                         field="schema_version", source=source)
    rows = data.get("rows")
    if not isinstance(rows, list):
        raise InputError("expected a list of rows", field="rows", source=source)
    for i, row in enumerate(rows):
        missing = [k for k in _ROW_KEYS if not isinstance(row, dict) or k not in row]
        if missing:
            raise InputError(f"missing {', '.join(missing)}", field=f"rows[{i}]", source=source)
    for key in ("generated_utc", "time_limit_s", "threads"):
        if key not in data:
            raise InputError("required key is missing", field=key, source=source)
    return data


# -- rendering -------------------------------------------------------------------------------------
def _rows(data: Mapping[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["instance"], r["method"]): r for r in data["rows"]}


def _instances(data: Mapping[str, Any]) -> list[tuple[str, int]]:
    seen: dict[str, int] = {}
    for r in data["rows"]:
        seen.setdefault(r["instance"], int(r["gpus"]))
    return sorted(seen.items(), key=lambda kv: (kv[1], kv[0]))


def _gap(v: Any) -> str:
    g = _number(v)
    return f"{100 * g:.2f}%" if math.isfinite(g) else "no proven gap"


def _seconds(v: Any) -> str:
    return f"{_number(v):.1f} s"


def _outcome(row: Mapping[str, Any]) -> str:
    """'proven optimal in 1.2 s' / 'ends at a 1.47% gap after 28.1 s' / 'infeasible'."""
    if row["status"] == "optimal":
        return f"proven optimal in {_seconds(row['search_s'])}"
    if row["status"] == "feasible":
        return f"ends at a {_gap(row['gap'])} gap after {_seconds(row['search_s'])}"
    return f"{row['status']} after {_seconds(row['search_s'])}"


def _run_line(data: Mapping[str, Any]) -> str:
    return (f"`haap bench --threads {data['threads']} --time-limit {data['time_limit_s']:g}`, "
            f"run of {data['generated_utc']}")


def render_status(data: Mapping[str, Any]) -> str:
    """The README's status paragraph: proofs, the large instances, the speed-ups."""
    by = _rows(data)
    lines = [f"Status (generated from {_run_line(data)}; every figure in docs/benchmarks.md):"]
    insts = [(name, gpus) for name, gpus in _instances(data) if (name, "haap") in by]
    proven = [(name, gpus) for name, gpus in insts if by[(name, "haap")]["status"] == "optimal"]
    if proven:
        times = [_number(by[(name, "haap")]["search_s"]) for name, _ in proven]
        open_ = [(name, gpus) for name, gpus in insts if (name, gpus) not in proven]
        upto = (f" (all those up to {max(g for _, g in proven):,} GPUs)"
                if not open_ or max(g for _, g in proven) < min(g for _, g in open_) else "")
        lines.append(f"`haap` proves the optimum on {len(proven)} of {len(insts)} benchmark "
                     f"instances{upto}, in {min(times):.1f}-{max(times):.1f} s of search.")
    for name, gpus in insts:
        h = by[(name, "haap")]
        if h["status"] == "optimal":
            continue
        text = f"{name} ({gpus:,} GPUs): `haap` {_outcome(h)}"
        g = by.get((name, "haap-1pct"))
        if g is not None:
            text += f", `haap-1pct` {_outcome(g)}"
        lines.append(text + ".")
    for base, label in BASELINE_NAMES.items():
        ratios = [_number(by[(n, base)]["iteration_time_s"]) / _number(by[(n, "haap")]
                                                                        ["iteration_time_s"])
                  for n, _ in insts if (n, base) in by]
        ratios = [x for x in ratios if math.isfinite(x) and x > 0]
        if ratios:
            geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
            lines.append(f"Plans against {label}: geometric-mean speed-up {geo:.2f}x over "
                         f"{len(ratios)} instances (least {min(ratios):.2f}x).")
    beaten = sorted({n for n, _ in insts for b in BASELINE_NAMES if (n, b) in by
                     and _number(by[(n, b)]["iteration_time_s"])
                     < _number(by[(n, "haap")]["iteration_time_s"]) * (1 - 1e-9)})
    lines.append("A baseline's plan beat `haap`'s on: " + ", ".join(beaten) + "." if beaten else
                 "No baseline's plan is faster than `haap`'s on any of them.")
    return "\n".join(lines)


def render_mixed_example(data: Mapping[str, Any]) -> str:
    """The README's mixed-stage example: the plan with a mixed stage against the best without."""
    by = _rows(data)
    h, s = by.get((MIXED_EXAMPLE, "haap")), by.get((MIXED_EXAMPLE, "haap-single"))
    if h is None or s is None:
        return f"(`haap bench` did not run `haap` and `haap-single` on {MIXED_EXAMPLE}.)"
    t_mixed, t_single = _number(h["iteration_time_s"]), _number(s["iteration_time_s"])
    stages = (h.get("plan") or {}).get("stages", [])
    mixed = [st for st in stages if len({r["device"] for r in st["replicas"]}) > 1]
    if mixed:
        parts = " and ".join(f"{r['count']} {r['device']} taking {r['micro_batch_share']} "
                             f"sequence{'s' if r['micro_batch_share'] > 1 else ''} each"
                             for r in mixed[0]["replicas"])
        what = f"a data-parallel stage of {parts}"
    else:
        what = "no mixed stage"
    return (f"`haap`'s plan ({h['status']}, {t_mixed:.3f} s per iteration) has {what}; the best "
            f"single-type plan ({s['status']}) takes {t_single:.3f} s, "
            f"{100 * (t_single / t_mixed - 1):.1f}% longer ({_run_line(data)}).")


def render_large_clusters(data: Mapping[str, Any]) -> str:
    """formulations Sec. 4.7: where the search ends on the instances above LARGE_GPUS GPUs."""
    by = _rows(data)
    lines = [f"Measured in {_run_line(data)} (docs/benchmarks.md):", ""]
    for name, gpus in _instances(data):
        if gpus <= LARGE_GPUS or (name, "haap") not in by:
            continue
        parts = [f"`{m}` {_outcome(by[(name, m)])} "
                 f"(plan {_number(by[(name, m)]['iteration_time_s']):.3f} s)"
                 for m in ("haap", "haap-1pct", "haap-single") if (name, m) in by]
        metis = by.get((name, "metis"))
        if metis is not None and math.isfinite(_number(metis["iteration_time_s"])):
            ratio = (_number(metis["iteration_time_s"])
                     / _number(by[(name, "haap")]["iteration_time_s"]))
            parts.append(f"the Metis-style search's plan {ratio:.3f}x `haap`'s")
        lines.append(f"- {name} ({gpus:,} GPUs): " + "; ".join(parts) + ".")
    if len(lines) == 2:
        lines.append(f"- (no instance above {LARGE_GPUS} GPUs in this run)")
    return "\n".join(lines)


def render_target_prices(data: Mapping[str, Any]) -> str:
    """docs/targets.md: the price of each target the run searched (`haap bench --targets`)."""
    from haap_solver.target_prices import price_table, targets_in

    table = price_table(data["rows"], targets_in(data["methods"]))
    if not table:
        return f"(No target search in the {_run_line(data)}: `haap bench --targets`.)"
    return "\n".join([f"Measured in {_run_line(data)} (docs/benchmarks.md):", "", *table])


RENDERERS = {"status": render_status, "mixed-example": render_mixed_example,
             "large-clusters": render_large_clusters, "target-prices": render_target_prices}


# -- the marked blocks -----------------------------------------------------------------------------
def marked_block(text: str, name: str) -> str | None:
    """The text between the markers of block `name` (None when the markers are missing)."""
    m = re.search(re.escape(begin_marker(name)) + r"\n(.*?)\n?" + re.escape(end_marker(name)),
                  text, re.DOTALL)
    return m.group(1) if m else None


def replace_block(text: str, name: str, body: str) -> str:
    """`text` with block `name` replaced by `body` (ValueError when the markers are missing)."""
    begin, end = begin_marker(name), end_marker(name)
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise ValueError(f"expected one {begin} ... {end} pair")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}\n{end}{tail}"


def update_docs(data: Mapping[str, Any], root: Path) -> list[Path]:
    """Rewrite every generated block of the documents under `root` that have their markers."""
    written = []
    for rel, names in BLOCKS.items():
        path = root / rel
        if not path.exists():
            continue
        text = original = path.read_text()
        for name in names:
            if marked_block(text, name) is not None:
                text = replace_block(text, name, RENDERERS[name](data))
        if text != original:
            path.write_text(text)
            written.append(path)
    return written
