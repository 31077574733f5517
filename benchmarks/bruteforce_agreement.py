"""The exact search against the independent brute force on many random tiny instances.

    python benchmarks/bruteforce_agreement.py --seeds 200 [--start 0] [--backends highs,cpsat,cbc]
        [--mixed both|on|off] [--no-solve] [--old-space] [--validator-space] [--time-limit 60]
        [--json out.json]

For each seed, ``tests/random_instances.random_instance(seed)``: the brute force's optimum
(``haap_solver.baselines.bruteforce``, single-type and, with mixed stages, both) and each
backend's ``solve(..., threads=1, seed=0, seed_with_baselines=False)``, which must say "optimal"
at the same iteration time (1e-9 relative), or both infeasible. Prints the reach: examples
checked, infeasible, and the share of optima with >= 2 stages, >= 2 device types, an empty end
stage, a whole-node stage on a node whose size is not a power of two; then every disagreement.

``--validator-space`` also runs the brute force over ``space="validator"`` (TP degrees and GPU
counts the validator accepts beyond the documented space) and reports how often, and by how
much, it beats the documented space.

``--old-space`` validates the brute force against the search's space before issue 19: only
power-of-two node sizes are kept (other seeds skipped) and the brute force runs with
``empty_end_stages=False``; the two must then agree exactly. ``--no-solve``: the brute force only
(the reach of the generator).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from random_instances import FEATURES, describe, disagreement, features, random_instance

from haap_solver.baselines.bruteforce import bruteforce
from haap_solver.cost.evaluate import CostModel
from haap_solver.instance import Instance
from haap_solver.plan import Plan


def cause(instance: Instance, truth_plan: Plan | None) -> str:
    """What the brute force's optimum uses that the search may lack (a diagnosis for the
    report; the test itself only compares)."""
    if truth_plan is None:
        return "brute force: no plan"
    from haap_solver.search.space import micro_batch_candidates

    why = [k for k, on in features(instance, truth_plan).items()
           if on and k in ("empty_end", "whole_odd_node")]
    if truth_plan.micro_batch_size not in micro_batch_candidates(instance):
        why.append("micro_batch_without_single_type_stage")
    return ",".join(why) or "other"


def check(instance: Instance, *, mixed: bool, backends: list[str], time_limit_s: float,
          solve_it: bool, old_space: bool, validator_space: bool = False,
          threads: int = 1) -> dict[str, Any]:
    """One instance and one setting of `mixed`: the brute force's optimum and every backend's."""
    cm = CostModel(instance)
    t0 = time.perf_counter()
    truth = bruteforce(instance, cost_model=cm, mixed=mixed, empty_end_stages=not old_space)
    row: dict[str, Any] = {"instance": instance.name, "mixed": mixed,
                           "bruteforce_s": time.perf_counter() - t0,
                           "status": truth.status, "time_s": truth.iteration_time_s,
                           "plans_costed": truth.plans_costed, "disagreements": []}
    if truth.plan is not None:
        row.update(features(instance, truth.plan))
        row["plan"] = describe(truth.plan)
    if validator_space:
        wider = bruteforce(instance, cost_model=cm, mixed=mixed, space="validator",
                           empty_end_stages=not old_space)
        row["validator_time_s"] = wider.iteration_time_s
        if wider.plan is not None:
            row["validator_plan"] = describe(wider.plan)
    if not solve_it:
        return row
    t0 = time.perf_counter()
    for backend in backends:
        d = disagreement(instance, truth, backend=backend, mixed=mixed,
                         time_limit_s=time_limit_s, threads=threads)
        if d is not None:
            row["disagreements"].append(d)
    row["solve_s"] = time.perf_counter() - t0
    if row["disagreements"]:
        row["cause"] = cause(instance, truth.plan)
    return row


def pow2_nodes(instance: Instance) -> bool:
    return all(g.gpus_per_node & (g.gpus_per_node - 1) == 0 for g in instance.cluster.node_groups)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--seed-list", default="",
                    help="comma-separated seeds (instead of --start/--seeds), e.g. the CI ones")
    ap.add_argument("--backends", default="highs,cpsat,cbc")
    ap.add_argument("--mixed", choices=("both", "on", "off"), default="both")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--threads", type=int, default=1,
                    help="solver threads; 2 or more runs the search over plans with a mixed "
                         "stage in a second process")
    ap.add_argument("--no-solve", action="store_true")
    ap.add_argument("--old-space", action="store_true")
    ap.add_argument("--validator-space", action="store_true",
                    help="also the brute force over space='validator': how much faster the "
                         "plans the validator accepts beyond the documented space are")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    modes = {"both": (False, True), "on": (True,), "off": (False,)}[args.mixed]
    backends = [b for b in args.backends.split(",") if b]
    rows = []
    start = time.perf_counter()
    seeds = [int(x) for x in args.seed_list.split(",") if x] or \
        list(range(args.start, args.start + args.seeds))
    for seed in seeds:
        instance = random_instance(seed)
        if args.old_space and not pow2_nodes(instance):
            continue
        for mixed in modes:
            row = check(instance, mixed=mixed, backends=backends, time_limit_s=args.time_limit,
                        solve_it=not args.no_solve, old_space=args.old_space,
                        validator_space=args.validator_space, threads=args.threads)
            row["seed"] = seed
            rows.append(row)
            for d in row["disagreements"]:
                print(f"seed {seed} mixed={mixed} ({row['cause']}): {d}", file=sys.stderr,
                      flush=True)
    print(summary(rows, time.perf_counter() - start, solved=not args.no_solve), file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, default=str) + "\n")
    return 1 if any(r["disagreements"] for r in rows) else 0


def summary(rows: list[dict[str, Any]], wall_s: float, *, solved: bool) -> str:
    lines = []
    for mixed in (False, True):
        sel = [r for r in rows if r["mixed"] is mixed]
        if not sel:
            continue
        feasible = [r for r in sel if r["status"] == "optimal"]
        counts: Counter[str] = Counter()
        for r in feasible:
            counts.update(k for k in FEATURES if r.get(k))
        n = max(1, len(feasible))
        lines.append(
            f"mixed={'on' if mixed else 'off'}: {len(sel)} examples, "
            f"{len(sel) - len(feasible)} infeasible; of {len(feasible)} optima: "
            + ", ".join(f"{k} {counts[k]} ({counts[k] / n:.0%})" for k in FEATURES)
            + f"; brute force {sum(r['bruteforce_s'] for r in sel):.1f} s in all, "
            f"max {max(r['bruteforce_s'] for r in sel):.2f} s")
        wider = [r for r in sel if "validator_time_s" in r]
        if wider:
            gains = sorted(r["time_s"] / r["validator_time_s"] for r in wider
                           if r["status"] == "optimal" and r["validator_time_s"] < r["time_s"])
            rescued = sum(1 for r in wider if r["status"] != "optimal"
                          and r["validator_time_s"] < float("inf"))
            lines.append(f"  validator space: faster on {len(gains)} of {len(wider)} examples"
                         + (f" (documented / validator time: median {gains[len(gains) // 2]:.3f},"
                            f" max {gains[-1]:.3f})" if gains else "")
                         + f"; feasible only there: {rescued}")
        if solved:
            bad = [r for r in sel if r["disagreements"]]
            causes = Counter(r["cause"] for r in bad)
            lines.append(f"  disagreements: {len(bad)} of {len(sel)} examples ("
                         + ", ".join(f"{k}: {v}" for k, v in causes.most_common()) + "); "
                         f"searches {sum(r.get('solve_s', 0.0) for r in sel):.1f} s in all")
    lines.append(f"wall {wall_s:.1f} s")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
