"""Same plans before and after a change that should not change the search (a check, not a test).

    python benchmarks/same_plans.py --out before.json [--time-limit 30] [INSTANCE ...]
    python benchmarks/same_plans.py --compare before.json after.json

The first form runs ``haap_solver.solve`` on every instance of the benchmark matrix
(instances/*.toml and instances/small/*.toml, as ``haap bench`` lists them) or on the ones named,
with pinned settings: one thread (so no second process: the plans with a mixed stage are searched
after the single-type ones in the same process, and no solver backend runs threads), seed 0,
the default backend, mixed-type stages on, the given time limit. It records per instance the
status, iteration time, lower bound, gap, the plan (JSON), the search's wall time and what it
did (sub-problems, models solved, pruned, plans costed).

The second form reports every difference between two such files. What is deterministic: an
instance the search proves optimal within the time limit gets the same iteration time (within
1e-9 relative) and status; its plan may differ only where several plans tie, so a different plan
is accepted when both runs prove it optimal with the same time. Where the time limit ends a
search, its plan, bound and counts depend on how far it got in the time, so those differences are
reported as timing-dependent rather than as failures. The wall-time ratio (B / A) is printed per
instance and as a geometric mean over the instances both runs proved optimal, and so is the ratio
of process (CPU) times, which depends less on what else runs on a shared host.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

REL_TOL = 1e-9
"""Relative tolerance on times and bounds: the same arithmetic gives the same floats, but a moved
sum may round differently in the last bit."""


def matrix_instances(root: Path) -> list[Path]:
    """The benchmark matrix, as ``haap bench`` lists it: instances/*.toml, then instances/small."""
    return sorted(root.glob("*.toml")) + sorted((root / "small").glob("*.toml"))


def run_one(path: Path, time_limit_s: float) -> dict[str, Any]:
    """One pinned search of one instance: the record `--compare` reads."""
    from haap_solver import load_instance, solve
    from haap_solver.errors import InfeasibleError

    instance = load_instance(path)
    start, cpu = time.perf_counter(), time.process_time()
    try:
        res = solve(instance, time_limit_s=time_limit_s, threads=1, seed=0)
    except InfeasibleError as exc:
        return {"instance": path.name, "status": "infeasible", "message": str(exc),
                "wall_s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu}
    return {
        "instance": path.name, "status": res.status, "iteration_time_s": res.iteration_time_s,
        "best_bound_s": res.best_bound_s, "gap": res.gap, "plan": res.plan.to_dict()
        if res.plan else None, "wall_s": res.wall_s, "call_s": time.perf_counter() - start,
        "cpu_s": time.process_time() - cpu,
        "subproblems": res.subproblems, "solved": res.solved,
        "pruned_by_bound": res.pruned_by_bound, "pruned_by_memory": res.pruned_by_memory,
        "plans_costed": res.plans_costed, "message": res.message,
    }


def _close(a: Any, b: Any) -> bool:
    if not isinstance(a, float) or not isinstance(b, float):
        return bool(a == b)
    if math.isinf(a) or math.isinf(b) or math.isnan(a) or math.isnan(b):
        return a == b or (math.isnan(a) and math.isnan(b))
    return abs(a - b) <= REL_TOL * max(abs(a), abs(b), 1e-300)


def compare(a: dict[str, Any], b: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(differences that must not happen, timing-dependent differences) between two records."""
    bad: list[str] = []
    timing: list[str] = []
    proven = a["status"] == "optimal" and b["status"] == "optimal"
    if a["status"] != b["status"]:
        (bad if "optimal" not in (a["status"], b["status"]) or proven else timing).append(
            f"status {a['status']} -> {b['status']}")
    for key in ("iteration_time_s", "best_bound_s"):
        if key in a and key in b and not _close(a[key], b[key]):
            msg = f"{key} {a[key]!r} -> {b[key]!r}"
            (bad if proven and key == "iteration_time_s" else timing).append(msg)
    if a.get("plan") != b.get("plan"):
        if proven and _close(a["iteration_time_s"], b["iteration_time_s"]):
            timing.append("a different plan of the same (optimal) time")
        elif proven:
            bad.append("a different plan")
        else:
            timing.append("a different plan (time limit reached)")
    for key in ("subproblems", "solved", "pruned_by_bound", "pruned_by_memory", "plans_costed"):
        if a.get(key) != b.get(key):
            timing.append(f"{key} {a.get(key)} -> {b.get(key)}")
    return bad, timing


def compare_files(path_a: Path, path_b: Path) -> int:
    """Print each instance's differences and wall-time ratio; 1 where a difference must not be."""
    runs_a = {r["instance"]: r for r in json.loads(path_a.read_text())["runs"]}
    runs_b = {r["instance"]: r for r in json.loads(path_b.read_text())["runs"]}
    failures = 0
    ratios = []
    cpu_ratios = []
    for name in sorted(runs_a.keys() | runs_b.keys()):
        if name not in runs_a or name not in runs_b:
            print(f"{name}: only in {path_a if name in runs_a else path_b}")
            continue
        a, b = runs_a[name], runs_b[name]
        bad, timing = compare(a, b)
        ratio = b["wall_s"] / a["wall_s"] if a["wall_s"] > 0 else math.nan
        cpu = ""
        if a.get("cpu_s") and b.get("cpu_s"):
            cpu_ratio = b["cpu_s"] / a["cpu_s"]
            cpu = f", process time {a['cpu_s']:.2f} s -> {b['cpu_s']:.2f} s (x{cpu_ratio:.2f})"
        if a["status"] == b["status"] == "optimal":
            ratios.append(ratio)
            if cpu:
                cpu_ratios.append(cpu_ratio)
        verdict = "DIFFERENT" if bad else ("same (proven)" if a["status"] == "optimal" == b[
            "status"] and not timing else "same where deterministic")
        print(f"{name}: {verdict}; {a['status']}/{b['status']}; wall {a['wall_s']:.2f} s -> "
              f"{b['wall_s']:.2f} s (x{ratio:.2f}){cpu}")
        for line in bad:
            print(f"    MUST NOT DIFFER: {line}")
        for line in timing:
            print(f"    timing-dependent: {line}")
        failures += bool(bad)
    if ratios:
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"wall-time ratio B/A over {len(ratios)} instances proven optimal in both: "
              f"geometric mean x{geo:.3f}, min x{min(ratios):.2f}, max x{max(ratios):.2f}")
    if cpu_ratios:
        geo = math.exp(sum(math.log(r) for r in cpu_ratios) / len(cpu_ratios))
        print(f"process-time ratio B/A over the same: geometric mean x{geo:.3f}, "
              f"min x{min(cpu_ratios):.2f}, max x{max(cpu_ratios):.2f}")
    print(f"{failures} instance(s) with a difference that must not happen")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("instances", nargs="*", help="instance files (default: the bench matrix)")
    ap.add_argument("--out", type=Path, help="where to write the runs (JSON)")
    ap.add_argument("--time-limit", type=float, default=30.0, help="seconds per instance")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"),
                    help="compare two files written by --out")
    args = ap.parse_args(argv)
    if args.compare:
        return compare_files(*args.compare)
    if args.out is None:
        ap.error("--out is required unless --compare is given")
    paths = [Path(p) for p in args.instances] or matrix_instances(Path("instances"))
    runs = []
    for path in paths:
        rec = run_one(path, args.time_limit)
        runs.append(rec)
        print(f"{rec['instance']}: {rec['status']} {rec.get('iteration_time_s', math.inf):.6g} s "
              f"(bound {rec.get('best_bound_s', math.nan):.6g}) in {rec['wall_s']:.1f} s",
              file=sys.stderr, flush=True)
        args.out.write_text(json.dumps({"time_limit_s": args.time_limit, "threads": 1, "seed": 0,
                                        "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
