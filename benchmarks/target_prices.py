"""Every shipped instance, unrestricted and per engine target: the plans run, and their price.

    python benchmarks/target_prices.py [INSTANCE.toml ...] [--targets megatron,deepspeed]
        [--time-limit 60] [--json out.json]

For each instance (default: instances/*.toml and instances/small/*.toml) the exact search runs
unrestricted (method ``haap``, one thread) and once per target (``haap-megatron``, ...), each with
the time limit, as ``haap bench --targets`` does. Checked (issue 24, "Must show"): every target
plan is one the target runs (`target_violations`, on the plan as the row carries it) and passed
the validator (the search returns nothing else), and no target plan is faster than a proven
unrestricted optimum. Prints the price table (haap_solver.target_prices) in Markdown on stdout;
exits 1 on a failed check. tests/test_target_prices.py runs the same checks on the small
instances in CI.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from haap_solver.cli import json_safe
from haap_solver.compare import matrix_instances, run_method
from haap_solver.cost.evaluate import CostModel
from haap_solver.instance import load_instance
from haap_solver.target_prices import (
    PRICE_TARGETS,
    method_of,
    price_section,
    prices,
    row_violations,
)

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("instances", nargs="*", help="instance files (default: every shipped one)")
    p.add_argument("--targets", default=",".join(PRICE_TARGETS),
                   help="comma-separated targets (default: megatron,deepspeed)")
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds per search (60)")
    p.add_argument("--json", help="also write the rows (with plans) to this file")
    args = p.parse_args(argv)
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    paths = [Path(x) for x in args.instances] or matrix_instances(ROOT / "instances")
    rows = []
    failures: list[str] = []
    for path in paths:
        inst = load_instance(path)
        for method in ["haap", *(method_of(t) for t in targets)]:
            row = run_method(method, inst, cost_model=CostModel(inst),
                             time_limit_s=args.time_limit, threads=1, seed=0)
            rows.append(row)
            print(f"{inst.name} {method}: {row['status']} {row['iteration_time_s']:.4f} s "
                  f"gap {row['gap']:.2%} in {row['search_s']:.1f} s", file=sys.stderr,
                  flush=True)
            if method != "haap":
                target = method.removeprefix("haap-")
                failures += [f"{inst.name} {target}: {v}"
                             for v in row_violations(inst, row, target)]
        if args.json:
            Path(args.json).write_text(json.dumps(json_safe(
                {"generated_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                 "time_limit_s": args.time_limit, "threads": 1, "rows": rows}), indent=1))
    failures += [f"{p.instance} {p.target}: {p.target_s:.6g} s is faster than the proven "
                 f"unrestricted optimum {p.any_s:.6g} s" for p in prices(rows, targets)
                 if p.faster_than_optimum()]
    print("\n".join(price_section(rows, targets)))
    for f in failures:
        print(f"FAILED: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
