"""The exact search against the independent brute force on many random tiny instances.

    python benchmarks/bruteforce_agreement.py --seeds 200 [--start 0] [--backends highs,cpsat,cbc]
        [--mixed both|on|off] [--no-solve] [--old-space] [--time-limit 60] [--json out.json]

For each seed, ``tests/random_instances.random_instance(seed)``: the brute force's optimum
(``haap_solver.baselines.bruteforce``, single-type and, with mixed stages, both) and each
backend's ``solve(..., threads=1, seed=0, seed_with_baselines=False)``, which must say "optimal"
at the same iteration time (1e-9 relative), or both infeasible. Prints the reach: examples
checked, infeasible, and the share of optima with >= 2 stages, >= 2 device types, an empty end
stage, a whole-node stage on a node whose size is not a power of two; then every disagreement.

``--old-space`` validates the brute force against the search's space before issue 19: only
power-of-two node sizes are kept (other seeds skipped) and the brute force runs with
``empty_end_stages=False``; the two must then agree exactly. ``--no-solve``: the brute force only
(the reach of the generator).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from random_instances import random_instance

from haap_solver.baselines.bruteforce import bruteforce
from haap_solver.cost.evaluate import CostModel
from haap_solver.errors import InfeasibleError
from haap_solver.instance import Instance
from haap_solver.plan import Plan

REL_TOL = 1e-9


def features(instance: Instance, plan: Plan) -> dict[str, bool]:
    """What the optimum uses that a narrower space would miss."""
    groups = {g.name: g for g in instance.cluster.node_groups}
    whole_odd = False
    for stage in plan.stages:
        for r in stage.replicas:
            q = groups[r.node_group].gpus_per_node
            if q & (q - 1) and r.num_gpus % q == 0:
                whole_odd = True
    return {
        "multi_stage": plan.num_stages >= 2,
        "multi_type": len({r.device for s in plan.stages for r in s.replicas}) >= 2,
        "empty_end": plan.num_stages >= 2 and (plan.stages[0].num_layers == 0
                                               or plan.stages[-1].num_layers == 0),
        "whole_odd_node": whole_odd,
        "mixed_stage": any(len(s.replicas) >= 2 for s in plan.stages),
    }


def describe(plan: Plan) -> str:
    return f"b={plan.micro_batch_size} {plan.schedule} " + " | ".join(
        f"{s.num_layers}L {s.recompute} " + "+".join(
            f"{r.node_group}:tp{r.tp}x{r.count}@{r.micro_batch_share}" for r in s.replicas)
        for s in plan.stages)


def check(instance: Instance, *, mixed: bool, backends: list[str], time_limit_s: float,
          solve_it: bool, old_space: bool) -> dict[str, Any]:
    """One instance and one setting of `mixed`: the brute force's optimum and every backend's."""
    from haap_solver.search.solve import solve

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
    if not solve_it:
        return row
    for backend in backends:
        try:
            res = solve(instance, backend=backend, threads=1, seed=0, time_limit_s=time_limit_s,
                        seed_with_baselines=False, mixed=mixed)
        except InfeasibleError:
            if truth.plan is not None:
                row["disagreements"].append(f"{backend}: infeasible, brute force "
                                            f"{truth.iteration_time_s:.6g} s")
            continue
        if truth.plan is None:
            row["disagreements"].append(f"{backend}: {res.iteration_time_s:.6g} s "
                                        f"({res.status}), brute force infeasible")
            continue
        same = math.isclose(res.iteration_time_s, truth.iteration_time_s, rel_tol=REL_TOL)
        if res.status != "optimal" or not same:
            got = describe(res.plan) if res.plan is not None else "-"
            row["disagreements"].append(
                f"{backend}: {res.status} {res.iteration_time_s:.6g} s [{got}] vs brute force "
                f"{truth.iteration_time_s:.6g} s [{row['plan']}]")
    return row


def pow2_nodes(instance: Instance) -> bool:
    return all(g.gpus_per_node & (g.gpus_per_node - 1) == 0 for g in instance.cluster.node_groups)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--backends", default="highs,cpsat,cbc")
    ap.add_argument("--mixed", choices=("both", "on", "off"), default="both")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--no-solve", action="store_true")
    ap.add_argument("--old-space", action="store_true")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    modes = {"both": (False, True), "on": (True,), "off": (False,)}[args.mixed]
    backends = [b for b in args.backends.split(",") if b]
    rows = []
    start = time.perf_counter()
    for seed in range(args.start, args.start + args.seeds):
        instance = random_instance(seed)
        if args.old_space and not pow2_nodes(instance):
            continue
        for mixed in modes:
            row = check(instance, mixed=mixed, backends=backends, time_limit_s=args.time_limit,
                        solve_it=not args.no_solve, old_space=args.old_space)
            row["seed"] = seed
            rows.append(row)
            for d in row["disagreements"]:
                print(f"seed {seed} mixed={mixed}: {d}", file=sys.stderr, flush=True)
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
            counts.update(k for k in ("multi_stage", "multi_type", "empty_end", "whole_odd_node",
                                      "mixed_stage") if r.get(k))
        n = max(1, len(feasible))
        lines.append(
            f"mixed={'on' if mixed else 'off'}: {len(sel)} examples, "
            f"{len(sel) - len(feasible)} infeasible; of {len(feasible)} optima: "
            + ", ".join(f"{k} {counts[k]} ({counts[k] / n:.0%})"
                        for k in ("multi_stage", "multi_type", "empty_end", "whole_odd_node",
                                  "mixed_stage"))
            + f"; brute force {sum(r['bruteforce_s'] for r in sel):.1f} s in all, "
            f"max {max(r['bruteforce_s'] for r in sel):.2f} s")
        if solved:
            bad = [r for r in sel if r["disagreements"]]
            lines.append(f"  disagreements: {len(bad)} of {len(sel)} examples")
    lines.append(f"wall {wall_s:.1f} s")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
