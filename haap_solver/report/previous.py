"""The exact search of an earlier release on the same instances, in the same benchmark run
(issue 23: "the search-time ratio to the exact search of the previous release").

An earlier release is a git revision of this repository: its ``haap_solver`` package is exported
with ``git archive`` into a temporary directory (`export_release`) and imported from there in a
child process (`run_release`), so the two releases never share a module, a cache or a cost model.
The child runs that release's ``solve`` with the bench's time limit, threads and seed and prints
one JSON line; its plan is then checked and costed by *this* release as well (`compare_row`), so
that the plans are compared in one cost model (the releases' cost models may differ).

Only the instances of small nodes (`small_node`: at most 4 GPUs per node, the cloud VMs of issue
23) are run: the section is about their time to proof.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from haap_solver.errors import HaapError
from haap_solver.instance import Instance

SMALL_NODE_GPUS = 4
"""Nodes of at most this many GPUs make a small-node cluster (the usual cloud VM)."""

CHILD_GRACE_S = 120.0
"""What the child may take beyond its time limit (imports, the set-up phases a time limit does
not stop, writing its answer) before it is killed and recorded as timed out."""

_CHILD = r"""
import json, sys, time
tree, path, limit, threads, seed = sys.argv[1], sys.argv[2], float(sys.argv[3]), \
    int(sys.argv[4]), int(sys.argv[5])
import haap_solver
if not haap_solver.__file__.startswith(tree):
    raise SystemExit(f"imported {haap_solver.__file__}, not the release in {tree}")
from haap_solver import load_instance, solve
instance = load_instance(path)
start, cpu = time.perf_counter(), time.process_time()
try:
    res = solve(instance, time_limit_s=limit, threads=threads, seed=seed)
except Exception as exc:  # (an infeasible instance, or that release's own error)
    print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
    raise SystemExit(0)
print(json.dumps({
    "status": res.status, "iteration_time_s": res.iteration_time_s,
    "best_bound_s": res.best_bound_s, "gap": res.gap,
    "search_s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu,
    "plan": res.plan.to_dict() if res.plan is not None else None,
    "version": getattr(haap_solver, "__version__", "?")}))
"""


def small_node(instance: Instance) -> bool:
    """Whether every node of the cluster has at most SMALL_NODE_GPUS GPUs."""
    return all(g.gpus_per_node <= SMALL_NODE_GPUS for g in instance.cluster.node_groups)


def export_release(ref: str, repo: Path, into: Path) -> tuple[Path, str]:
    """The ``haap_solver`` package of git revision `ref` of `repo`, exported under `into`;
    returns the directory to import it from and the revision's short hash. A clear error where
    git or the revision is missing."""
    def git(*args: str) -> subprocess.CompletedProcess[bytes]:
        try:
            return subprocess.run(["git", "-C", str(repo), *args], capture_output=True,
                                  check=False)
        except OSError as exc:
            raise HaapError(f"--previous {ref}: git is needed to export that release ({exc})"
                            ) from exc

    rev = git("rev-parse", "--short", "--verify", f"{ref}^{{commit}}")
    if rev.returncode != 0:
        raise HaapError(f"--previous {ref}: not a revision of the repository at {repo} "
                        f"({rev.stderr.decode(errors='replace').strip()})")
    short = rev.stdout.decode().strip()
    archive = git("archive", "--format=tar", short, "haap_solver")
    if archive.returncode != 0:
        raise HaapError(f"--previous {ref}: git archive failed "
                        f"({archive.stderr.decode(errors='replace').strip()})")
    tree = into / f"haap_solver-{short}"
    tree.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree, short


def run_release(tree: Path, instance_path: Path, *, time_limit_s: float, threads: int,
                seed: int) -> dict[str, Any]:
    """That release's exact search on one instance file, in a child process that imports only
    it: its answer (status, times, plan) or {"error": ...}."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    with tempfile.TemporaryDirectory() as cwd:  # (not this checkout's package by accident)
        try:
            out = subprocess.run(
                [sys.executable, "-c", _CHILD, str(tree), str(instance_path.resolve()),
                 repr(time_limit_s), str(threads), str(seed)],
                capture_output=True, text=True, env=env, cwd=cwd,
                timeout=time_limit_s + CHILD_GRACE_S, check=False)
        except subprocess.TimeoutExpired:
            return {"error": f"no answer within {time_limit_s + CHILD_GRACE_S:g} s"}
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        tail = (out.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {out.returncode}: {tail}"}
    answer: dict[str, Any] = json.loads(lines[-1])
    return answer


def compare_row(instance: Instance, current: dict[str, Any], earlier: dict[str, Any],
                ref: str) -> dict[str, Any]:
    """One row of the section: this release's bench row (`current`, method haap) beside the
    earlier release's answer, its plan costed here too."""
    from haap_solver.cost.evaluate import CostModel
    from haap_solver.plan import plan_from_dict
    from haap_solver.validate import plan_violations

    row: dict[str, Any] = {
        "instance": instance.name, "gpus": instance.cluster.num_gpus, "previous": ref,
        "status": current["status"], "iteration_time_s": current["iteration_time_s"],
        "gap": current["gap"], "search_s": current["search_s"],
        "previous_status": earlier.get("status", "error"),
        "previous_iteration_time_s": earlier.get("iteration_time_s", math.inf),
        "previous_gap": earlier.get("gap", math.nan),
        "previous_search_s": earlier.get("search_s", math.nan),
        "previous_error": earlier.get("error", ""),
        "previous_plan_here_s": math.nan, "previous_plan_note": ""}
    plan = earlier.get("plan")
    if plan is not None:
        try:
            p = plan_from_dict(plan)
            bad = plan_violations(instance, p)
        except (HaapError, ValueError, KeyError, TypeError) as exc:
            row["previous_plan_note"] = f"its plan does not load here: {exc}"
        else:
            if bad:
                row["previous_plan_note"] = f"its plan is not valid here: {bad[0]}"
            else:
                row["previous_plan_here_s"] = CostModel(instance).evaluate(p).iteration_time_s
    both = row["search_s"], row["previous_search_s"]
    row["search_ratio"] = (both[1] / both[0] if all(math.isfinite(x) and x > 0 for x in both)
                           else math.nan)
    return row


def previous_section(rows: list[dict[str, Any]]) -> list[str]:
    """The Markdown section of `haap bench --previous` (empty without it)."""
    if not rows:
        return []
    ref = rows[0]["previous"]
    lines = ["", f"## Small-node clusters: this release against {ref}", "",
             f"The exact search (`haap`, same time limit, threads and seed) of this release and "
             f"of revision {ref}, on the instances whose nodes have at most {SMALL_NODE_GPUS} "
             "GPUs, in the same run (`haap bench --previous REF`: that release's package is "
             "exported with git archive and run in a child process). Search s: wall time of the "
             "search; where it equals the time limit, the search stopped there and its gap says "
             "how far the proof got. Ratio: that release's search time over this one's. Its "
             "plan is also costed in this release's cost model (the cost models of the two "
             "releases may differ, so its own figure is not comparable).", "",
             "| instance | GPUs | status | search s | gap | iteration s | status then | search s "
             "then | gap then | its plan, costed here | search time ratio |",
             "|---|---:|---|---:|---:|---:|---|---:|---:|---:|---:|"]

    def num(x: float, fmt: str) -> str:
        return format(x, fmt) if isinstance(x, (int, float)) and math.isfinite(x) else "-"

    for r in rows:
        then = (r["previous_error"] or r["previous_status"])[:100]
        here = num(r["previous_plan_here_s"], ".3f") if not r["previous_plan_note"] \
            else r["previous_plan_note"][:60]
        lines.append(
            f"| {r['instance']} | {r['gpus']} | {r['status']} | {num(r['search_s'], '.1f')} | "
            f"{num(100 * r['gap'], '.2f')}% | {num(r['iteration_time_s'], '.3f')} | "
            f"{then.replace('|', '/')} | {num(r['previous_search_s'], '.1f')} | "
            f"{num(100 * r['previous_gap'], '.2f')}% | {here} | "
            f"{num(r['search_ratio'], '.2f')}x |")
    return lines
