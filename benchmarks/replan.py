"""Warm re-solve against cold solve over the shipped replan traces (issue 22): per event, warm
and cold wall and CPU seconds, their ratio, both results and whether they agree, the cache share
carried and the GPUs moved (haap_solver/report/replan_bench.py). JSON on stdout with --json.

    python benchmarks/replan.py [--time-limit S] [--gap F] [--trace NAME] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from haap_solver.report.replan_bench import TRACES, run_trace

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=60.0, metavar="S")
    parser.add_argument("--gap", type=float, default=0.0, metavar="F",
                        help="relative gap of every solve, warm and cold (default 0: proofs)")
    parser.add_argument("--trace", choices=TRACES, action="append")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out = [run_trace(ROOT / "instances/replan", name, args.time_limit, relative_gap=args.gap)
           for name in args.trace or TRACES]
    for t in out:
        print(f"{t['trace']}: median cold/warm CPU {t['median_cold_over_warm_cpu']:.2f}x, "
              f"slowest warm {t['max_warm_s']:.2f} s wall, all agree {t['all_agree']}",
              file=sys.stderr)
    if args.json:
        print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
