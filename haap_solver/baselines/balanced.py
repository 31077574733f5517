"""Balanced grids: every Megatron-style grid with a compute-proportional layer split, the best
few then balanced on the cost model's own stage times. A heuristic, used as a seed of the exact
search on large clusters and available as a method for comparison.

Why: on clusters of many small nodes of several device types the exact search's own incumbent
within a short time limit can be the uniform grid's plan, far from the optimum, and the
`proportional` baseline keeps the uniform grid's shape. A pipeline of equal stages whose layer
counts follow each stage's real time is often close to the best plan there. Measured
(2026-12-02, one thread): gpt3-2.7b on 32 A100 + 96 V100 in 4-GPU nodes, the best plan known
(4.663 s: four 8-node TP-4 stages with 19/5/5/3 layers) is the 16th best proportional grid
(5.677 s with 14/6/6/6 layers) once balanced, where the uniform grid gives 5.128 s and the exact
search returned that plan after 30 s; gpt3-6.7b on 128 A100 + 256 V100 + 128 A10, 4.046 s where
the Metis-style search gives 4.255 s and the exact search returned 4.719 s after 30 s.

1. Grids: every TP degree legal on every node group, every pipeline depth up to the layer count
   (not only divisors: the split is uneven anyway), every DP degree and per-replica share that
   divide the global batch; those using the most GPUs first (they tend to be the fastest), so a
   time limit cuts the least promising. The GPUs are laid out as in ``uniform`` (node group after
   node group); each grid gets the proportional split with memory repair of ``proportional``
   and the cheapest recomputation mode that fits.
2. Balance: the best `REFINED_GRIDS` plans are improved by moving one layer at a time from one
   of the two slowest stages (forward + backward per micro-batch) to the stage that is fastest,
   keeping a move only where the plan's iteration time (``CostModel.evaluate``) falls and memory
   fits, until no such move is left or `MAX_MOVES_TRIED` moves have been costed.
"""

from __future__ import annotations

import time
from dataclasses import replace

from haap_solver.baselines.common import Best, recompute_order
from haap_solver.baselines.proportional import _try_grid
from haap_solver.baselines.uniform import uniform_grids
from haap_solver.cost.evaluate import CostModel, Evaluation
from haap_solver.instance import Instance
from haap_solver.plan import Plan
from haap_solver.result import SolveResult

METHOD = "balanced"

REFINED_GRIDS = 20
"""How many of the best proportional plans are balanced (step 2). On the two clusters of the
module docstring the best balanced plan came from the 16th and the 1st."""

GRID_SHARE = 0.6
"""The share of the time limit step 1 may take: the rest is left for balancing (on 128 GPUs in
4-GPU nodes step 1 takes 5 s, and the best plan comes from balancing)."""

MAX_MOVES_TRIED = 200
"""The most one-layer moves costed while balancing one plan (each costs one evaluate: 1-5 ms)."""


def balanced_grids(instance: Instance) -> list[tuple[str, int, int, int, int]]:
    """(schedule, tp, pp, dp, share) of every grid of step 1, most GPUs first."""
    grids = [(schedule, *grid) for schedule in instance.training.schedules
             if schedule in ("1f1b", "gpipe")
             for grid in uniform_grids(instance, every_depth=True)]
    return sorted(grids, key=lambda g: (-g[1] * g[2] * g[3], g[4], g[2]))


def with_layers(plan: Plan, layers: list[int]) -> Plan:
    """`plan` with stage i holding layers[i] (contiguous, in order)."""
    stages, first = [], 0
    for stage, n in zip(plan.stages, layers, strict=True):
        stages.append(replace(stage, first_layer=first, num_layers=n))
        first += n
    return replace(plan, stages=tuple(stages))


def balance_layers(cm: CostModel, plan: Plan, evaluation: Evaluation,
                   max_moves: int = MAX_MOVES_TRIED) -> tuple[Plan, Evaluation, int]:
    """Step 2 on one plan: (the balanced plan, its evaluation, moves costed). Never slower than
    the plan it starts from, and every plan it keeps fits memory."""
    layers = [s.num_layers for s in plan.stages]
    tried = 0
    while tried < max_moves:
        taus = [s.fwd_s + s.bwd_s for s in evaluation.stages]
        order = sorted(range(len(layers)), key=lambda i: taus[i])
        moved = False
        for give in order[::-1][:2]:
            if layers[give] <= 1:
                continue
            for take in order:
                if take == give or tried >= max_moves:
                    continue
                trial = list(layers)
                trial[give] -= 1
                trial[take] += 1
                candidate = with_layers(plan, trial)
                ev = cm.evaluate(candidate)
                tried += 1
                if ev.memory_ok and ev.iteration_time_s < evaluation.iteration_time_s * (1 - 1e-12):
                    plan, evaluation, layers, moved = candidate, ev, trial, True
                    break
            if moved:
                break
        if not moved:
            break
    return plan, evaluation, tried


def balanced(instance: Instance, *, time_limit_s: float = 60.0, threads: int = 1, seed: int = 0,
             cost_model: CostModel | None = None) -> SolveResult:
    """Steps 1 and 2 of the module docstring within `time_limit_s` (the grids it reached)."""
    cm = cost_model or CostModel(instance)
    best = Best(cm, time_limit_s)
    modes = recompute_order(instance)
    found: list[tuple[float, Plan, Evaluation, dict[str, object]]] = []
    grids = balanced_grids(instance)
    reached = 0
    grids_until = best.start + GRID_SHARE * time_limit_s
    for schedule, tp, pp, dp, share in grids:
        if best.out_of_time() or time.perf_counter() > grids_until:
            break
        reached += 1
        one = Best(cm, time_limit_s)  # (this grid's plan alone, to rank it)
        if _try_grid(instance, cm, one, tp, pp, dp, share, schedule, modes):
            assert one.plan is not None and one.evaluation is not None
            grid = {"tp": tp, "pp": pp, "dp": dp, "micro_batch_per_replica": share,
                    "schedule": schedule}
            info: dict[str, object] = {"grid": grid}
            found.append((one.time, one.plan, one.evaluation, info))
            best.keep(one.plan, one.evaluation, **info)
        best.costed += one.costed
    found.sort(key=lambda f: f[0])
    balanced_count = 0
    for _, plan, evaluation, info in found[:REFINED_GRIDS]:
        if best.out_of_time():
            break
        plan, evaluation, tried = balance_layers(cm, plan, evaluation)
        best.costed += tried
        balanced_count += 1
        layers = [s.num_layers for s in plan.stages]
        plan = replace(plan, note=f"{plan.note}; balanced to layers {layers}")
        best.keep(plan, evaluation, **info, layers=layers)
    return best.result(instance, METHOD,
                       message=f"{reached} of {len(grids)} grids, {balanced_count} balanced")
