"""The Megatron-LM baseline: the best uniform DP x TP x PP grid, costed on the real devices.

What a Megatron-LM user does on any cluster: one TP degree, one DP degree and one pipeline depth
for every stage, an even layer split (Megatron requires the pipeline depth to divide the layer
count), one micro-batch size per replica and one recomputation setting for the whole model. The
GPUs are handed to the stages in node-group order (rank order), so a stage may straddle two node
groups; its replicas then run on different devices with equal shares of the micro-batch, and the
slowest device sets the pace, as in Megatron. Grids may leave GPUs idle (world size <= GPUs).

Searched: every schedule allowed, every TP legal on all node groups, every pipeline depth dividing
the layer count, every DP degree and per-replica micro-batch size that divide the global batch;
for each grid the cheapest recomputation mode that fits memory (recomputation only adds time).
"""

from __future__ import annotations

from haap_solver.baselines.common import (
    Best,
    gpu_line,
    legal_tps,
    make_plan,
    max_layers_fit,
    recompute_order,
    tp_ok,
    with_shares,
)
from haap_solver.cost.evaluate import CostModel
from haap_solver.instance import Instance
from haap_solver.parallelism import divisors
from haap_solver.result import SolveResult

METHOD = "uniform"


def uniform_grids(instance: Instance, *,
                  every_depth: bool = False) -> list[tuple[int, int, int, int]]:
    """Every (tp, pp, dp, share) grid that fits the GPU count and divides the batch, cheap first.
    The pipeline depth divides the layer count (an even split), or with `every_depth` is any
    depth up to it (for uneven splits: the balanced grids)."""
    t, L = instance.training, instance.model.num_layers
    n = instance.cluster.num_gpus
    tps = sorted(set.intersection(*(set(v) for v in legal_tps(instance).values())))
    grids = []
    for tp in tps:
        for pp in (range(1, L + 1) if every_depth else divisors(L)):
            if tp * pp > n:
                break
            for dp in divisors(t.global_batch_size):
                if tp * pp * dp > n:
                    break
                for share in range(1, t.max_micro_batch_share + 1):
                    if t.global_batch_size % (dp * share) == 0:
                        grids.append((tp, pp, dp, share))
    return grids


def even_layers(num_layers: int, pp: int) -> list[int]:
    return [num_layers // pp] * pp


def uniform(instance: Instance, *, time_limit_s: float = 60.0, threads: int = 1, seed: int = 0,
            cost_model: CostModel | None = None,
            largest_tp_first: bool = False) -> SolveResult:
    """Best uniform Megatron-LM grid under the cost model (see the module docstring).

    `largest_tp_first`: the grids of the largest TP degree first (otherwise the smallest), for a
    caller that stops it early and wants a good plan soon (the exact search's early seed on
    large clusters). Whole enumerations find the same time either way. The best grids of the
    two largest shipped instances have TP 4 and 8 (gpt3-175b-4types-x1024: 26.3 s at TP 4, its
    first TP 1 grid 36.5 s; llama3-405b-6types-x16384: 16.7 s at TP 8, its first TP 1 grid
    63.8 s), which the default order reaches after seconds there."""
    cm = cost_model or CostModel(instance)
    best = Best(cm, time_limit_s)
    line = gpu_line(instance)
    tps = legal_tps(instance)
    L = instance.model.num_layers
    modes = recompute_order(instance)
    grids = uniform_grids(instance)
    if largest_tp_first:
        grids.sort(key=lambda grid: -grid[0])  # (stable: the rest of the order is kept)
    for schedule in instance.training.schedules:
        for tp, pp, dp, share in grids:
            if best.out_of_time():
                break
            stages = []
            for k in range(pp):
                reps = line.slice(k * tp * dp, tp * dp, tp)
                if reps is None or not tp_ok(reps, tps):
                    break
                stages.append(with_shares(reps, [share] * len(reps)))
            if len(stages) < pp:
                continue
            b = dp * share
            m = instance.training.global_batch_size // b
            layers = even_layers(L, pp)
            for rc in modes:
                if all(max_layers_fit(cm, reps, rc, k, pp, schedule, m, layers[k]) == layers[k]
                       for k, reps in enumerate(stages)):
                    plan = make_plan(instance, [(reps, rc) for reps in stages], layers,
                                     micro_batch=b, schedule=schedule,
                                     note=f"uniform grid tp={tp} pp={pp} dp={dp} mbs={share} "
                                          f"recompute={rc}")
                    best.offer(plan, tp=tp, pp=pp, dp=dp, micro_batch_per_replica=share,
                               recompute=rc, schedule=schedule)
                    break
    return best.result(instance, METHOD, message=f"{len(grids)} grids")
