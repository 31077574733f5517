"""Warm re-solve against cold solve over the shipped replan traces (issue 22): the measurement
(`run_trace`, also `benchmarks/replan.py`) and the section of `haap bench` (`replan_section`).

For each trace (instances/replan/NAME.toml and NAME.events.toml) a Planner plans the starting
instance, then applies each event and re-solves warm; the same changed instance is solved cold
right after (`solve(..., seed_with_baselines=False)`, as the Planner searches), so that both see
the same machine load. Ratios are of CPU time (the machine may be shared)."""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from haap_solver.changes import changes_from_toml
from haap_solver.instance import load_instance
from haap_solver.planner import Planner
from haap_solver.result import SolveResult
from haap_solver.search.solve import solve

TRACES = ("spot-a100-v100", "fleet-1024")
"""The shipped traces, in instances/replan/."""

_T = TypeVar("_T")


def agree(warm: SolveResult, cold: SolveResult) -> bool:
    """Same optimum within 1e-9 where both are proven, else overlapping proven intervals."""
    if warm.status == "optimal" and cold.status == "optimal":
        return abs(warm.iteration_time_s - cold.iteration_time_s) <= 1e-9 * cold.iteration_time_s
    return (warm.best_bound_s <= cold.iteration_time_s * (1 + 1e-9)
            and cold.best_bound_s <= warm.iteration_time_s * (1 + 1e-9))


def _timed(fn: Callable[[], _T]) -> tuple[_T, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def run_trace(folder: Path, name: str, time_limit_s: float, *, relative_gap: float = 0.0,
              log: bool = True) -> dict[str, Any]:
    """Warm and cold solves of every event of trace `name` in `folder`, a row each, both
    stopped at `relative_gap` (solve's)."""
    planner = Planner(load_instance(folder / f"{name}.toml"), time_limit_s=time_limit_s,
                      relative_gap=relative_gap)
    first, wall, _ = _timed(planner.solve)
    if log:
        print(f"{name}: initial plan {first.result.iteration_time_s:.6g} s "
              f"({first.result.status}) in {wall:.2f} s", file=sys.stderr, flush=True)
    rows: list[dict[str, Any]] = []
    for change, label in changes_from_toml(folder / f"{name}.events.toml"):
        planner.apply(change)
        warm, warm_wall, warm_cpu = _timed(planner.solve)
        cold, cold_wall, cold_cpu = _timed(partial(
            solve, planner.instance, time_limit_s=time_limit_s, threads=1, seed=0,
            seed_with_baselines=False, relative_gap=relative_gap))
        row = {"label": label, "change": change.describe(),
               "warm_s": warm_wall, "warm_cpu_s": warm_cpu, "cold_s": cold_wall,
               "cold_cpu_s": cold_cpu, "cold_over_warm_cpu": cold_cpu / max(warm_cpu, 1e-9),
               "warm_status": warm.result.status, "warm_time_s": warm.result.iteration_time_s,
               "warm_bound_s": warm.result.best_bound_s, "cold_status": cold.status,
               "cold_time_s": cold.iteration_time_s, "cold_bound_s": cold.best_bound_s,
               "agree": agree(warm.result, cold), "incumbent_s": warm.incumbent_s,
               "cache_share": warm.cache_reuse.share,
               "bounds_share": warm.cache_reuse.bounds_share,
               "bounds_kept": warm.cache_reuse.bounds_kept,
               "moved_gpus": warm.migration.moved_gpus}
        rows.append(row)
        if log:
            print(f"  {label}: warm {warm_wall:.2f} s ({warm_cpu:.2f} CPU, "
                  f"{row['warm_status']}, {row['warm_time_s']:.6g}) cold {cold_wall:.2f} s "
                  f"({cold_cpu:.2f} CPU, {row['cold_status']}, {row['cold_time_s']:.6g}); "
                  f"cold/warm CPU {row['cold_over_warm_cpu']:.2f}x; agree {row['agree']}; "
                  f"cache {row['cache_share']:.0%}, bounds {row['bounds_kept']}; incumbent "
                  f"{row['incumbent_s']}; moved {row['moved_gpus']} GPUs", file=sys.stderr,
                  flush=True)
    return {"trace": name, "relative_gap": relative_gap, "events": rows,
            "median_cold_over_warm_cpu": statistics.median(
                r["cold_over_warm_cpu"] for r in rows),
            "max_warm_s": max(r["warm_s"] for r in rows),
            "all_agree": all(r["agree"] for r in rows)}


def replan_section(traces: list[dict[str, Any]]) -> list[str]:
    """The `haap bench` section: per event of each trace, warm and cold solve times, their
    ratio, whether they agree, the cache share carried and the GPUs moved."""
    if not traces:
        return []
    lines = ["", "## Re-planning after a change (warm against cold)", "",
             "`haap replan` on the traces in instances/replan/: after each event a Planner "
             "re-solves warm (coefficients of unchanged node groups kept, sub-problem bounds "
             "kept where the event only took nodes away, the running plan repaired as "
             "cutoff), and the changed instance is solved cold right after "
             "(formulations/stage-assignment.md Sec. 8). CPU seconds; agree: the same proven "
             "optimum within 1e-9, or overlapping proven intervals.", "",
             "| trace | event | warm s | cold s | cold / warm | warm status | agree | cache "
             "kept | bounds kept | GPUs moved |",
             "|---|---|---:|---:|---:|---|---|---:|---:|---:|"]
    for t in traces:
        for r in t["events"]:
            lines.append(
                f"| {t['trace']} | {r['label']} | {r['warm_cpu_s']:.2f} | {r['cold_cpu_s']:.2f} "
                f"| {r['cold_over_warm_cpu']:.2f}x | {r['warm_status']} | {r['agree']} "
                f"| {r['cache_share']:.0%} | {r.get('bounds_share', 0.0):.0%} "
                f"| {r['moved_gpus']} |")
        lines.append(f"| {t['trace']} | **median** | | | "
                     f"**{t['median_cold_over_warm_cpu']:.2f}x** | | {t['all_agree']} | | | |")
    return lines
