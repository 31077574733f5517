"""A clean-room Metis-style search (Um et al., USENIX ATC'24), costed with our cost model.

Written from the paper's description of the search, not from its code. The search:

1. Device-type orderings: the node groups are laid out in every order (fastest device first is
   tried first); the GPUs then form one line in that order.
2. Device groups: the line is cut into as many consecutive groups as there are pipeline stages;
   every group size is a power of two and the sizes add up to the cluster.
3. Variance filter: only group-size vectors whose sizes differ by at most a factor of two are kept
   (low variance); every distinct order of those sizes is tried when there are few, otherwise the
   large-first, large-last and interleaved orders.
4. Intra-stage strategy: every stage starts all data-parallel (TP 1); while a stage cannot take its
   share of the micro-batch or of the layers, the stage with the least memory headroom trades DP
   for TP (TP doubles, DP halves), and each memory-feasible state is costed. Trading continues past
   the first feasible state while the cost improves (it stops after two steps without gain).
5. Layer balancing: layers in proportion to each stage's speed (the inverse of its per-layer time,
   set by its slowest replica), repaired for memory by moving layers to the stages with room.
   Replicas of a mixed stage split the micro-batch so that the slowest per-layer time is least.

Every candidate is costed by ``CostModel.evaluate``; the fastest memory-feasible plan is returned.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

from haap_solver.baselines.common import (
    Best,
    gpu_line,
    layer_time,
    legal_tps,
    make_plan,
    memory_headroom,
    proportional_layers,
    proportional_split,
    recompute_order,
    stage_layer_time,
    tp_ok,
    with_shares,
)
from haap_solver.cost.evaluate import CostModel
from haap_solver.instance import Instance
from haap_solver.parallelism import divisors
from haap_solver.plan import ReplicaGroup
from haap_solver.result import SolveResult

METHOD = "metis"
_MAX_SIZE_ORDERS = 32


def group_orderings(instance: Instance) -> Iterator[tuple[str, ...]]:
    """Node-group orders, the one with the fastest devices first leading."""
    groups = sorted(instance.cluster.node_groups,
                    key=lambda g: -instance.device(g.device).peak_tflops)
    names = [g.name for g in groups]
    yield tuple(names)
    for perm in itertools.permutations(names):
        if list(perm) != names:
            yield perm


def group_sizes(num_gpus: int, num_stages: int) -> list[tuple[int, ...]]:
    """Power-of-two group sizes adding up to `num_gpus`, within a factor of two of each other.

    Sizes are 2^k and 2^(k+1): a groups of 2^(k+1) and num_stages - a of 2^k with
    2^k (a + num_stages) = num_gpus. Returns every distinct order when there are few.
    """
    out: list[tuple[int, ...]] = []
    k = 0
    while (1 << k) * num_stages <= num_gpus:
        unit = 1 << k
        if num_gpus % unit == 0:
            a = num_gpus // unit - num_stages
            if 0 <= a < num_stages:
                out.extend(_orders(num_stages, a, unit))
        k += 1
    return out


def _orders(p: int, a: int, unit: int) -> list[tuple[int, ...]]:
    if a == 0:
        return [(unit,) * p]
    big = 2 * unit
    if math.comb(p, a) <= _MAX_SIZE_ORDERS:
        combos: list[tuple[int, ...]] = list(itertools.combinations(range(p), a))
    else:
        step = p / a
        combos = [tuple(range(a)), tuple(range(p - a, p)),
                  tuple(sorted({min(p - 1, int(i * step)) for i in range(a)}))]
    out = []
    for pos in combos:
        if len(set(pos)) != a:
            continue
        sizes = [unit] * p
        for i in pos:
            sizes[i] = big
        out.append(tuple(sizes))
    return list(dict.fromkeys(out))


def split_batch(cm: CostModel, reps: tuple[ReplicaGroup, ...], b: int, rc: str,
                max_share: int) -> tuple[ReplicaGroup, ...] | None:
    """Shares of micro-batch `b` for each replica group, the slowest per-layer time least."""
    if len(reps) == 1:
        dp = reps[0].count
        if b % dp or b // dp > max_share:
            return None
        return with_shares(reps, [b // dp])
    if len(reps) > 3:  # many groups in one stage: equal shares only
        dp = sum(r.count for r in reps)
        if b % dp or b // dp > max_share:
            return None
        return with_shares(reps, [b // dp] * len(reps))
    best: tuple[float, tuple[ReplicaGroup, ...]] | None = None
    head, last = reps[:-1], reps[-1]
    for shares in itertools.product(range(1, max_share + 1), repeat=len(head)):
        rest = b - sum(s * r.count for s, r in zip(shares, head, strict=True))
        if rest < last.count or rest % last.count or rest // last.count > max_share:
            continue
        cand = with_shares(reps, [*shares, rest // last.count])
        t = max(layer_time(cm, r, rc) for r in cand)
        if best is None or t < best[0]:
            best = (t, cand)
    return best[1] if best else None


def metis(instance: Instance, *, time_limit_s: float = 60.0, threads: int = 1, seed: int = 0,
          cost_model: CostModel | None = None) -> SolveResult:
    """The Metis-style search (see the module docstring)."""
    cm = cost_model or CostModel(instance)
    best = Best(cm, time_limit_s)
    t = instance.training
    n = instance.cluster.num_gpus
    L = instance.model.num_layers
    tps = legal_tps(instance)
    modes = recompute_order(instance)
    batches = divisors(t.global_batch_size)
    max_tp = max(max(v) for v in tps.values())
    for order in group_orderings(instance):
        line = gpu_line(instance, order)
        for pp in range(1, min(L, n) + 1):
            for sizes in group_sizes(n, pp):
                starts = [sum(sizes[:k]) for k in range(pp)]
                for schedule in t.schedules:
                    for b in batches:
                        if best.out_of_time():
                            return best.result(instance, METHOD)
                        if b < max(sizes) // max_tp or b > t.max_micro_batch_share * min(sizes):
                            continue  # some stage has more replicas than sequences, or too few
                        _chain(instance, cm, best, line, tps, modes, starts, sizes, b,
                               schedule, order)
    return best.result(instance, METHOD)


def _chain(instance: Instance, cm: CostModel, best: Best, line, tps, modes,  # type: ignore[no-untyped-def]
           starts: list[int], sizes: tuple[int, ...], b: int, schedule: str,
           order: tuple[str, ...]) -> None:
    """Start all-DP, trade DP for TP on the stage with least headroom; cost feasible states."""
    t = instance.training
    L = instance.model.num_layers
    pp = len(sizes)
    m = t.global_batch_size // b
    tp = [1] * pp
    frozen = [False] * pp
    last_time = math.inf
    no_gain = 0
    while True:
        stages: list[tuple[ReplicaGroup, ...] | None] = []
        for k in range(pp):
            reps = line.slice(starts[k], sizes[k], tp[k])
            if reps is None or not tp_ok(reps, tps):
                return  # cannot happen: only legal trades are made
            stages.append(split_batch(cm, reps, b, modes[0], t.max_micro_batch_share))
        need = [k for k in range(pp) if stages[k] is None]
        if need:
            target_order = need
        else:
            ready = [s for s in stages if s is not None]
            fitted = False
            for rc in modes:
                layers = proportional_layers(cm, ready, rc, schedule, m)
                if layers is None:
                    continue
                plan = make_plan(instance, [(reps, rc) for reps in ready], layers,
                                 micro_batch=b, schedule=schedule,
                                 note=f"metis-style: order {'/'.join(order)}, groups "
                                      f"{list(sizes)}, tp {tp}, recompute={rc}")
                ev = best.offer(plan, order=order, sizes=list(sizes), tp=list(tp),
                                micro_batch=b, recompute=rc, schedule=schedule)
                if ev is not None:
                    fitted = True
                    if ev.iteration_time_s < last_time * (1 - 1e-12):
                        last_time, no_gain = ev.iteration_time_s, 0
                    else:
                        no_gain += 1
                    break
            if fitted and no_gain >= 2:
                return
            speeds = [1.0 / stage_layer_time(cm, reps, modes[0]) for reps in ready]
            target = proportional_split(L, speeds, [L] * pp) or [L // pp] * pp
            room = [memory_headroom(cm, reps, modes[0], k, pp, schedule, m, target[k])
                    for k, reps in enumerate(ready)]
            target_order = sorted(range(pp), key=lambda k: room[k])
        for k in target_order:
            if frozen[k]:
                continue
            new = tp[k] * 2
            reps = line.slice(starts[k], sizes[k], new)
            if reps is None or not tp_ok(reps, tps):
                frozen[k] = True
                continue
            tp[k] = new
            break
        else:
            return
        if best.out_of_time():
            return
