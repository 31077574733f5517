"""Warm re-solve against cold solve over the shipped replan traces (issue 22).

For each trace (instances/replan/*.events.toml) a Planner plans the starting instance, then
applies each event and re-solves warm; the same changed instance is solved cold beside it
(`solve(..., seed_with_baselines=False)`, as the Planner searches), alternately in one process so
that both see the same machine load. Printed per event: warm and cold wall and CPU seconds,
their ratio, both results (status, time, bound) and whether they agree (same optimum within
1e-9 where both are proven, else overlapping proven intervals), the cache share carried and the
GPUs moved. JSON on stdout with --json.

    python benchmarks/replan.py [--time-limit S] [--trace NAME] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import haap_solver as haap
from haap_solver.changes import changes_from_toml
from haap_solver.result import SolveResult

ROOT = Path(__file__).resolve().parent.parent
TRACES = ("spot-a100-v100", "fleet-1024")


def agree(warm: SolveResult, cold: SolveResult) -> bool:
    if warm.status == "optimal" and cold.status == "optimal":
        return abs(warm.iteration_time_s - cold.iteration_time_s) <= 1e-9 * cold.iteration_time_s
    return (warm.best_bound_s <= cold.iteration_time_s * (1 + 1e-9)
            and cold.best_bound_s <= warm.iteration_time_s * (1 + 1e-9))


def timed(fn: Any) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def run_trace(name: str, time_limit_s: float) -> dict[str, Any]:
    instance = haap.load_instance(ROOT / "instances/replan" / f"{name}.toml")
    events = changes_from_toml(ROOT / "instances/replan" / f"{name}.events.toml")
    planner = haap.Planner(instance, time_limit_s=time_limit_s)
    first, wall, _ = timed(planner.solve)
    print(f"{name}: initial plan {first.result.iteration_time_s:.6g} s "
          f"({first.result.status}) in {wall:.2f} s", file=sys.stderr, flush=True)
    rows = []
    for change, label in events:
        planner.apply(change)
        warm, warm_wall, warm_cpu = timed(planner.solve)
        cold, cold_wall, cold_cpu = timed(lambda: haap.solve(
            planner.instance, time_limit_s=time_limit_s, threads=1, seed=0,
            seed_with_baselines=False))
        row = {"label": label, "change": change.describe(),
               "warm_s": warm_wall, "warm_cpu_s": warm_cpu, "cold_s": cold_wall,
               "cold_cpu_s": cold_cpu, "cold_over_warm_cpu": cold_cpu / max(warm_cpu, 1e-9),
               "warm_status": warm.result.status, "warm_time_s": warm.result.iteration_time_s,
               "warm_bound_s": warm.result.best_bound_s, "cold_status": cold.status,
               "cold_time_s": cold.iteration_time_s, "cold_bound_s": cold.best_bound_s,
               "agree": agree(warm.result, cold), "incumbent_s": warm.incumbent_s,
               "cache_share": warm.cache_reuse.share, "moved_gpus": warm.migration.moved_gpus}
        rows.append(row)
        print(f"  {label}: warm {warm_wall:.2f} s ({warm_cpu:.2f} CPU, {row['warm_status']}, "
              f"{row['warm_time_s']:.6g}) cold {cold_wall:.2f} s ({cold_cpu:.2f} CPU, "
              f"{row['cold_status']}, {row['cold_time_s']:.6g}); cold/warm CPU "
              f"{row['cold_over_warm_cpu']:.2f}x; agree {row['agree']}; cache "
              f"{row['cache_share']:.0%}; incumbent {row['incumbent_s']}; moved "
              f"{row['moved_gpus']} GPUs", file=sys.stderr, flush=True)
    ratios = [r["cold_over_warm_cpu"] for r in rows]
    return {"trace": name, "events": rows, "median_cold_over_warm_cpu": statistics.median(ratios),
            "max_warm_s": max(r["warm_s"] for r in rows),
            "all_agree": all(r["agree"] for r in rows)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=60.0, metavar="S")
    parser.add_argument("--trace", choices=TRACES, action="append")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out = [run_trace(name, args.time_limit) for name in args.trace or TRACES]
    for t in out:
        print(f"{t['trace']}: median cold/warm CPU {t['median_cold_over_warm_cpu']:.2f}x, "
              f"slowest warm {t['max_warm_s']:.2f} s, all agree {t['all_agree']}",
              file=sys.stderr)
    if args.json:
        print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
