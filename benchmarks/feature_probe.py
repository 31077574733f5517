"""Hunt for wrong "optimal" answers of the exact search on the instance features the other
probes never draw (tests/feature_instances.py says what it draws: dtypes, ZeRO 2/3, engine
defaults, overlaps, pipeline sends, interleaving, stragglers, objectives, measured profiles,
model variants), each backend against the documented brute force, mixed on and off.

    python benchmarks/feature_probe.py --seeds 100 [--start 0] [--backends highs,cpsat,cbc]
        [--mixed both|on|off] [--time-limit 60] [--multi-node] [--json out.json]

For each seed: ``feature_instance(seed)`` (a loader refusal is skipped and counted, with the
features drawn), the brute force's least value of the instance's objective
(``bruteforce_objective``: iteration time, or cost per iteration, within the limits and caps;
limits set from the brute force's least time and cost first, so that they bind), and each
backend's ``solve(threads=1, seed=0, seed_with_baselines=False)``, which must return a plan
the validator accepts, report evaluate()'s time and the brute force's pricing of it, and say
"optimal" at the brute force's value (1e-9 relative), or both find no plan; and its lower bound
(``best_bound_s`` for time, ``cost_bound`` for cost) must not exceed the brute force's optimum.
Two cases of the space's dependence on the cluster's size (formulations/objectives.md Sec. 2,
*Which space*; added 2026-12-03 after seed 303 below): a time search under a cap (no cost
limit) is judged against the brute force on the cluster cut down to the caps (``cut_to``, the
sub-cluster the search searches), which must in turn not exceed the whole instance's brute
force within the caps; and elsewhere a plan "optimal" below the brute force's value, within the
limits and caps, is a note, not a disagreement, where the brute force on the nodes it rents
finds a plan at least as fast (``rented_space_check``: a valid plan of that smaller cluster's
wider space, which the cost search's sub-cluster searches explore).
Prints each disagreement and note as found, then per feature: seeds checked with it and with a
disagreement. ``--multi-node`` gives every group of one node of at most 4 GPUs a second node
(sub-clusters, caps and slowed nodes then split groups). The draws changed on 2026-12-03 (fp8
and stragglers, tests/feature_instances.py): a seed recorded below before that date may now
give another instance.

Measured on 2026-12-03 (one process, nice 19, 2 shared cores; highs, cpsat and cbc, mixed on
and off, 60 s limit; a seed is 2 brute forces and 6 solves, median 1.6 s, at most 32 s):

* seeds 0-299 at main dae97f1: 294 checked (6 with no accepted draw of 6; draws refused and
  redrawn: 140 bf16 on V100/T4, 77 fp8 without fp8 tensor cores, 15 a profile beside a slowed
  device, 12 a straggler in a capped group, 9 too large), 1 disagreement: seed 58 (interleaved
  v = 3, a measured profile, ZeRO-1 with overlap_param_gather off): every backend "optimal"
  1.06% slower than the brute force, its bound above the optimum. Cause: the dominance filter
  compared tails at the plain schedules' overlap window only (tests/data/
  interleaved-selective-profile.toml, tests/test_interleaved.py). After the fix: 0 of 294.
* Per feature over those 294 (after): dtype fp16 154, bf16 45, fp32 94 (TF32 40), fp8 1;
  deepspeed 90; grad_dtype fp32 31, param 41; ZeRO 0/1/2/3 51/120/58/65; sequence parallelism
  off 76; flash attention off 82; DP overlap off 127; parameter-gather overlap off 120; TP
  comm overlap 86; p2p auto/blocking/overlapped 135/82/77; interleaved v2 57, v3 27; GPipe
  109; empty end stages 161; max_tp 1-2 77; reserved memory 61; gated MLP 73; tied
  embeddings 81; GQA 48; no learned positions 52; no dropout 62; stragglers: whole group 50,
  one node 2, NIC slowed 20; prices 227; cost 35, throughput_per_dollar 25, cost capped 34,
  time capped 29, time under a cost limit 35, cost under a rate limit 35, time under a rate
  limit 24; measured profile 73: 0 disagreements each.
* Not drawn by the random seeds above, found by reading objectives.py and confirmed by hand
  (tests/test_objectives.py): a cap or a sub-cluster cutting a group to one node of several
  made the sub-search cost a pipeline's sends on NVLink; "optimal" 24x slower than the best
  plan, with that time as its bound. ``--multi-node`` draws such clusters.
* ``--multi-node``, seeds 0-381 (after both fixes): 162 checked (220 with no accepted draw, 91
  of those draws too large), 2 with a disagreement:
  seed 25 (a slowed node's NIC at 10%: g0.node1 beside g0, time under a rate limit), CP-SAT
  alone: the plain time search (mixed on or off) proves a plan 38% slower than the brute
  force's optimal, the slowed node's TP-2 stage for the healthy node's (HiGHS and CBC agree with
  the brute force), so the rate limit is called unreachable. Fixed the same day by commit
  b28588f (CP-SAT's scaled expressions kept within 2^46; seed 25 agrees after it and still
  disagrees with the scaling before it);
  seed 303 (time capped to one node of a two-node group): every backend returns a valid plan
  24% FASTER than the documented brute force, a mixed stage of three parts, which the search's
  space holds on the capped sub-cluster (its full mixed space, fewer candidates) but the brute
  force's on the whole instance does not (the cut space): the two spaces differ under caps.
  Looked at again on 2026-12-03 (tests/data/capped-full-mixed-space.toml, tests/
  test_objectives.py): right, and not a wrong optimum. The capped search's 0.0106972 s is the
  brute force's on the cluster cut down to the cap (6 GPUs: the full mixed space at b = 9, a
  budget of 1,000 candidates); the whole cluster's (8 GPUs, 200) is cut at b = 9, and there
  the brute force, and the uncapped search on every backend (its search_space listing b = 9 as
  cut), say 0.0140980 s. What a user would call wrong: the cap made the answer 24% faster, so
  the uncapped "optimal" is beaten by a plan the planner finds on part of the same cluster
  (the cut mixed space's documented limit; formulations/objectives.md Sec. 2, *Which space*,
  now says so). The judge now takes the brute force on the cut-down cluster as a capped time
  search's truth, and notes (not counts) an "optimal" plan below the brute force that the
  brute force on the nodes it rents explains.
* 2026-12-03, the draws of wip-h29 a8cfc6a (fp8 on the device table's fp8 devices, one-node
  stragglers on clusters of one-node groups too; tests/feature_instances.py; seeds with fp8 or
  stragglers mean other instances than above), same set-up:
  seeds 1000-1399 (the judge before 1aa838a): 397 checked (3 with no accepted draw; refused
  and redrawn: 147 bf16 on V100/T4, 40 a straggler in a capped group, 37 a profile beside a
  slowed device, 17 too large; no fp8 refused), 0 disagreements; a seed median 1.5 s, at most
  64 s. Per feature: fp8 104 (was 1), stragglers one node 47 (was 2), whole group 60, NIC
  slowed 50; dtype fp16 170, bf16 46, fp32 77 (TF32 40); deepspeed 128; ZeRO 0/1/2/3
  77/157/79/84; interleaved v2 73, v3 27; GPipe 139; measured profile 73; cost 45,
  throughput_per_dollar 44, cost capped 38, time capped 27, time under a cost limit 41, cost
  under a rate limit 38, time under a rate limit 45: 0 disagreements each.
  ``--multi-node`` seeds 1000-1399 (at 1aa838a's judge): 189 checked (211 with no accepted
  draw: 113 draws too large), 1 with a disagreement, seed 1154 (fp32 with TF32, ZeRO 0,
  gradient reduction not overlapped, time under a rate limit 5% above the optimum), CP-SAT
  alone, mixed on and off: the plain time search proves 0.0392872 s against the brute force's
  0.0373266 s (5.3% slower), so the rate limit is called unreachable. Cause: OR-Tools 9.15's
  presolve (its inclusion step sums a row's Boolean coefficients in a 32-bit int, OR-Tools
  issue 5293) cut the optimum off a 23-variable sub-problem; fixed by wip-h29 135f7e2 (that
  step off; tests/data/cpsat-inclusion-presolve.*), seed 1154 agrees after it. Per feature:
  fp8 44, one-node stragglers 50, whole group 27, NIC slowed 35, time capped 25 (its brute
  force on the cut-down cluster equal to the whole instance's within the caps on all 25, mixed
  on and off), cost capped 20.
  ``--multi-node`` seeds 1400-1999 (after 135f7e2): 284 checked (316 with no accepted draw:
  167 draws too large), 0 disagreements, 0 plans below the brute force; a seed median 2.6 s,
  at most 36 s. Per feature: fp8 58, one-node stragglers 71, whole group 42, NIC slowed 56,
  time capped 33 (cut-down cluster's brute force equal to the whole's on all 33), cost capped
  32, measured profile 51: 0 disagreements each.
  seeds 1400-1599 (after 135f7e2, 1aa838a's judge): 197 checked (3 with no accepted draw), 0
  disagreements, 0 plans below the brute force; a seed median 2.2 s, at most 47 s. Per
  feature: fp8 52, one-node stragglers 27, whole group 33, NIC slowed 26, time capped 22
  (cut-down cluster's brute force equal to the whole's on all 22), cost capped 19, measured
  profile 33: 0 disagreements each.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from feature_instances import Draw, feature_instance, needs_references, with_limits
from random_instances import describe

from haap_solver.baselines.bruteforce import bruteforce_objective, objective_score
from haap_solver.cost.evaluate import CostModel
from haap_solver.errors import HaapError, InfeasibleError, InputError
from haap_solver.instance import Instance
from haap_solver.objective import Objective, rental
from haap_solver.plan import Plan
from haap_solver.validate import check_plan

REL_TOL = 1e-9
BACKENDS = ("highs", "cpsat", "cbc")


def references(draw: Draw) -> tuple[float, float]:
    """The brute force's least time and least cost (inf: none) on the draw's whole cluster,
    without limits or caps beyond the draw's (mixed stages on)."""

    inst = draw.instance
    _, t = bruteforce_objective(dataclasses.replace(inst, objective=Objective()), mixed=True)
    _, c = bruteforce_objective(dataclasses.replace(inst, objective=Objective(optimize="cost")),
                                mixed=True)
    return t, c


def cut_to(inst: Instance, nodes: tuple[int, ...]) -> Instance:
    """`inst` cut down to `nodes[i]` nodes of its i-th group (groups at 0 dropped, no caps or
    prices), with the time objective and `inst`'s rate limit: the sub-cluster a capped time
    search searches (formulations/objectives.md Sec. 2), written here apart from the search's
    ``sub_instance``. A group cut to one node of several keeps its pipeline sends on the
    network (``Cluster.cut_from_several_nodes``), as on `inst`."""
    cluster = inst.cluster
    groups = [dataclasses.replace(g, num_nodes=n, max_gpus=None, price_per_gpu_hour=None)
              for g, n in zip(cluster.node_groups, nodes, strict=True) if n]
    cut = set(cluster.cut_from_several_nodes) | {
        g.name for g, n in zip(cluster.node_groups, nodes, strict=True) if n == 1 < g.num_nodes}
    return dataclasses.replace(
        inst, cluster=dataclasses.replace(cluster, node_groups=tuple(groups),
                                          cut_from_several_nodes=frozenset(cut)),
        objective=Objective(min_tokens_per_s=inst.objective.min_tokens_per_s), expected=None)


def rented_space_check(inst: Instance, plan: Plan, mixed: bool) -> str | None:
    """For a plan better than the brute force's optimum on the whole instance: None where the
    brute force on the nodes the plan rents (`cut_to`) finds a plan at least as fast, i.e. the
    plan is explained by the documented space of that smaller cluster, which holds more than
    the whole instance's (formulations/stage-assignment.md Sec. 1.1: the full mixed space and
    two parts on one group only on small clusters), and which the objective search's
    sub-cluster searches explore; else why not."""
    rent = rental(inst, plan)
    sub = cut_to(inst, tuple(rent.nodes[g.name] for g in inst.cluster.node_groups))
    t_plan = CostModel(inst).evaluate(plan).iteration_time_s
    _, t_sub = bruteforce_objective(sub, mixed=mixed, cost_model=CostModel(sub))
    if t_sub <= t_plan * (1 + REL_TOL):
        return None
    return f"the brute force on its {rent.nodes} nodes finds {t_sub:.9g} s only, the plan " \
        f"takes {t_plan:.9g} s"


def judge(inst: Instance, truth: float, truth_plan: Any, *, backend: str, mixed: bool,
          time_limit_s: float, below_ok: bool = True) -> tuple[str | None, str | None]:
    """Why the search and the brute force's least value `truth` disagree, or None; and a note
    where the search's plan beats `truth` within the limits and caps and `rented_space_check`
    explains it (`below_ok`; not a wrong optimum: a valid plan, outside the whole instance's
    documented space, inside that of the nodes it rents)."""
    from haap_solver.search.solve import solve

    by_cost = inst.objective.optimize != "time"
    try:
        res = solve(inst, backend=backend, threads=1, seed=0, time_limit_s=time_limit_s,
                    seed_with_baselines=False, mixed=mixed)
    except InfeasibleError as exc:
        return None if math.isinf(truth) else \
            f"{backend}: infeasible ({str(exc)[:120]}), brute force {truth:.9g} " \
            f"[{describe(truth_plan) if truth_plan else ''}]", None
    if res.plan is None:
        return None if math.isinf(truth) else \
            f"{backend}: {res.status} without a plan, brute force {truth:.9g}", None
    try:
        check_plan(inst, res.plan)
    except HaapError as exc:
        return f"{backend}: invalid plan ({exc})", None
    ev = CostModel(inst).evaluate(res.plan)
    if not math.isclose(ev.iteration_time_s, res.iteration_time_s, rel_tol=REL_TOL):
        return f"{backend}: reports {res.iteration_time_s!r} s, evaluate() " \
            f"{ev.iteration_time_s!r}", None
    value = objective_score(inst)(res.plan, ev)
    if math.isinf(value):
        return f"{backend}: its plan breaks a limit or cap ({res.message[:160]})", None
    reported = getattr(res, "cost_per_iteration", None) if by_cost else res.iteration_time_s
    if reported is None or not math.isclose(reported, value, rel_tol=REL_TOL):
        return f"{backend}: reports {reported!r}, its plan is worth {value!r}", None
    bound = getattr(res, "cost_bound", None) if by_cost else res.best_bound_s
    found = f"{res.status} {value:.9g} [{describe(res.plan)}]"
    if below_ok and value < truth * (1 - REL_TOL) and res.status == "optimal" and \
            bound is not None and bound <= value * (1 + REL_TOL):
        why = rented_space_check(inst, res.plan, mixed)
        versus = f"brute force {truth:.9g} [{describe(truth_plan) if truth_plan else 'none'}]"
        if why is None:
            return None, f"{backend}: {found} below the {versus}"
        return f"{backend}: {found} below the {versus}, and {why}", None
    if math.isinf(truth):
        return f"{backend}: {found}, brute force: none", None
    why = None
    if res.status != "optimal" or not math.isclose(value, truth, rel_tol=REL_TOL):
        kind = "TIMEOUT " if res.status == "feasible" and res.wall_s >= 0.9 * time_limit_s \
            else ""
        why = f"{kind}{backend}: {found} vs brute force {truth:.9g} " \
            f"[{describe(truth_plan) if truth_plan else ''}]"
    if bound is not None and math.isfinite(bound) and bound > truth * (1 + REL_TOL):
        why = (why + "; " if why else "") + \
            f"{backend}: bound {bound!r} above the brute force's optimum {truth!r}"
    return why, None


def check(seed: int, *, backends: list[str], mixeds: list[bool], time_limit_s: float,
          profile_dir: Path, multi_node: bool = False) -> dict[str, Any]:
    row: dict[str, Any] = {"seed": seed, "disagreements": []}
    try:
        draw = feature_instance(seed, profile_dir, multi_node=multi_node)
    except InputError as exc:
        row["rejected"] = str(exc)[:200]
        return row
    row["features"] = draw.features
    row["refused"] = draw.refused
    inst = draw.instance
    t0 = time.perf_counter()
    if needs_references(draw):
        t_best, c_best = references(draw)
        inst = with_limits(draw, t_best, c_best)
    row["objective"] = {"optimize": inst.objective.optimize,
                        "max_cost": inst.objective.max_cost_per_iteration,
                        "min_tokens_per_s": inst.objective.min_tokens_per_s}
    row["notes"] = []
    # A time search under caps (no cost limit) searches the cluster cut down to the caps alone
    # (formulations/objectives.md Sec. 2): its truth is the brute force there, whose space holds
    # the whole instance's plans within the caps (checked) and may hold more.
    caps = tuple(g.max_nodes for g in inst.cluster.node_groups)
    capped_time = inst.objective.optimize == "time" and \
        not inst.objective.max_cost_per_iteration and \
        any(g.max_gpus is not None for g in inst.cluster.node_groups)
    for mixed in mixeds:
        t1 = time.perf_counter()
        truth_res, truth = bruteforce_objective(inst, mixed=mixed, cost_model=CostModel(inst))
        if capped_time:
            cut = cut_to(inst, caps)
            whole = truth
            truth_res, truth = bruteforce_objective(cut, mixed=mixed, cost_model=CostModel(cut))
            row[f"truth_whole_{mixed}"] = whole
            if truth > whole * (1 + REL_TOL):
                row["disagreements"].append(
                    f"mixed={mixed} brute force on the capped cluster {truth:.9g} above the "
                    f"whole instance's within the caps {whole:.9g}")
        row[f"bf_wall_{mixed}"] = time.perf_counter() - t1
        row[f"truth_{mixed}"] = truth
        if truth_res.plan is not None:
            row[f"plan_{mixed}"] = describe(truth_res.plan)
        for backend in backends:
            t2 = time.perf_counter()
            note = None
            try:
                why, note = judge(inst, truth, truth_res.plan, backend=backend, mixed=mixed,
                                  time_limit_s=time_limit_s, below_ok=not capped_time)
            except Exception as exc:  # (a crash is a finding too)
                why = f"{backend}: CRASH {type(exc).__name__}: {str(exc)[:200]}"
            row[f"wall_{backend}_{mixed}"] = time.perf_counter() - t2
            if why:
                row["disagreements"].append(f"mixed={mixed} {why}")
            if note:
                row["notes"].append(f"mixed={mixed} {note}")
    row["wall"] = time.perf_counter() - t0
    return row


def report(rows: list[dict[str, Any]]) -> str:
    checked: Counter[str] = Counter()
    bad: Counter[str] = Counter()
    rejected: Counter[str] = Counter()
    for r in rows:
        rejected.update(r.get("refused", []))
        if "rejected" in r:
            continue
        for f in r["features"]:
            checked[f] += 1
            bad[f] += bool(r["disagreements"])
    n_checked = sum(1 for r in rows if "rejected" not in r)
    n_bad = sum(1 for r in rows if r.get("disagreements"))
    below = [r["seed"] for r in rows if r.get("notes")]
    lines = [f"{len(rows)} seeds ({rows[0]['seed']}-{rows[-1]['seed']}): {n_checked} checked, "
             f"{len(rows) - n_checked} without an accepted draw; draws refused and redrawn: "
             f"{dict(rejected)}; {n_bad} with a disagreement; {len(below)} with a plan below "
             f"the brute force's that the nodes it rents explain: {below}",
             f"{'feature':32s} {'checked':>8s} {'disagree':>8s}"]
    for f in sorted(checked):
        lines.append(f"{f:32s} {checked[f]:8d} {bad[f]:8d}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--mixed", choices=("both", "on", "off"), default="both")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--multi-node", action="store_true",
                    help="two nodes in every small group (feature_instance(multi_node=True))")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    mixeds = {"both": [False, True], "on": [True], "off": [False]}[args.mixed]
    rows = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="feature-probe-") as tmp:
        for seed in range(args.start, args.start + args.seeds):
            row = check(seed, backends=args.backends.split(","), mixeds=mixeds,
                        time_limit_s=args.time_limit, profile_dir=Path(tmp),
                        multi_node=args.multi_node)
            rows.append(row)
            for d in row["disagreements"]:
                print(f"seed {seed} {row.get('features')}: {d}", file=sys.stderr, flush=True)
            for n in row.get("notes", []):
                print(f"seed {seed} note: {n}", file=sys.stderr, flush=True)
            if args.json:
                args.json.write_text(json.dumps(rows, indent=1, default=str) + "\n")
    print(report(rows) + f"\nwall {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
