"""The hand-tuned heterogeneous heuristic: a fixed grid, layers in proportion to stage speed.

What practitioners do on a mixed cluster without a planner: keep a Megatron grid and give each
pipeline stage a number of layers proportional to its compute speed, so that fast GPUs carry more
layers; then move layers off any stage that runs out of memory (onto the stage with the most room
relative to its speed). A stage's speed is the inverse of its per-layer forward + backward time
under the cost model, set by its slowest replica group (replicas take equal micro-batch shares).

The fixed grid: the best uniform Megatron grid (see ``uniform``) when there is one — its TP, PP,
DP, micro-batch and recomputation are kept and only the layer split changes. When no uniform grid
fits memory, the grid is the textbook default: TP as large as every node allows, the largest DP
that divides the batch, one sequence per replica, and the shallowest pipeline (then the cheapest
recomputation) whose proportional split can be repaired to fit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from haap_solver.baselines.common import (
    Best,
    gpu_line,
    legal_tps,
    make_plan,
    proportional_layers,
    recompute_order,
    tp_ok,
    with_shares,
)
from haap_solver.baselines.uniform import uniform
from haap_solver.cost.evaluate import CostModel
from haap_solver.instance import Instance
from haap_solver.parallelism import divisors
from haap_solver.result import SolveResult

METHOD = "proportional"


def _try_grid(instance: Instance, cm: CostModel, best: Best, tp: int, pp: int, dp: int,
              share: int, schedule: str, modes: list[str]) -> bool:
    """Proportional split + memory repair on one grid; offers the plan. True if one fitted."""
    line = gpu_line(instance)
    tps = legal_tps(instance)
    stages = []
    for k in range(pp):
        reps = line.slice(k * tp * dp, tp * dp, tp)
        if reps is None or not tp_ok(reps, tps):
            return False
        stages.append(with_shares(reps, [share] * len(reps)))
    b = dp * share
    m = instance.training.global_batch_size // b
    for rc in modes:
        layers = proportional_layers(cm, stages, rc, schedule, m)
        if layers is None:
            continue
        plan = make_plan(instance, [(reps, rc) for reps in stages], layers, micro_batch=b,
                         schedule=schedule,
                         note=f"proportional: grid tp={tp} pp={pp} dp={dp} mbs={share}, "
                              f"recompute={rc}, layers {layers}")
        ev = best.offer(plan, tp=tp, pp=pp, dp=dp, micro_batch_per_replica=share, recompute=rc,
                        schedule=schedule, layers=layers)
        if ev is not None:
            return True
    return False


def proportional(instance: Instance, *, time_limit_s: float = 60.0, threads: int = 1,
                 seed: int = 0, cost_model: CostModel | None = None) -> SolveResult:
    """Fixed grid, compute-proportional layer split, memory repair (see the module docstring)."""
    cm = cost_model or CostModel(instance)
    base = uniform(instance, time_limit_s=time_limit_s, cost_model=cm)
    best = Best(cm, max(0.0, time_limit_s - base.wall_s))
    best.start -= base.wall_s
    best.costed = base.plans_costed
    modes = recompute_order(instance)
    choice = base.options.get("choice") if base.plan is not None else None
    if choice:
        _try_choice(instance, cm, best, choice)
        return best.result(instance, METHOD, message=GRID_OF_UNIFORM)
    # No uniform grid fits: the textbook grid, shallowest pipeline that can be repaired to fit.
    t = instance.training
    n = instance.cluster.num_gpus
    tp = max(set.intersection(*(set(v) for v in legal_tps(instance).values())))
    for schedule in t.schedules:
        for pp in range(1, min(instance.model.num_layers, n // tp) + 1):
            if best.out_of_time():
                break
            dp = max(d for d in divisors(t.global_batch_size) if d * tp * pp <= n)
            if _try_grid(instance, cm, best, tp, pp, dp, 1, schedule, modes):
                break
    return best.result(instance, METHOD, message="textbook grid (no uniform grid fits)")


def on_grid(instance: Instance, choice: Mapping[str, Any], *, cost_model: CostModel,
            time_limit_s: float = 60.0) -> SolveResult:
    """The proportional split (with memory repair) on one grid, a uniform result's
    `options["choice"]`: one grid costs a few plans, so the exact search can take it as a seed
    the moment a (possibly time-limited) uniform enumeration has a grid (its early seed,
    branch_and_bound.BranchAndBound.early_seed). `proportional` does the same on the best grid
    of the full enumeration."""
    best = Best(cost_model, time_limit_s)
    _try_choice(instance, cost_model, best, choice)
    return best.result(instance, METHOD, message=GRID_OF_UNIFORM)


GRID_OF_UNIFORM = "grid of the best uniform plan"


def _try_choice(instance: Instance, cm: CostModel, best: Best,
                choice: Mapping[str, Any]) -> bool:
    """`_try_grid` on a uniform result's grid (its `options["choice"]`)."""
    return _try_grid(instance, cm, best, choice["tp"], choice["pp"], choice["dp"],
                     choice["micro_batch_per_replica"], choice["schedule"],
                     recompute_order(instance))

