"""Constructive warm starts for the exact search (they prove nothing; they give incumbents fast).

For a sub-problem (p, b, schedule): give every node group the configuration with which it hosts the
most layers near the load-balance bound, as many stages of it as its GPUs allow (scaled down to p
stages in total), order the groups roomiest first (early 1F1B stages hold the most micro-batches),
and split the layers by the smallest common bottleneck: the least T at which the stages' layer
limits N_i(T) (time and memory at their position) add up to L. The plan goes through the validator
and evaluate() like any other.
"""

from __future__ import annotations

import math

import numpy as np

from haap_solver.plan import Plan
from haap_solver.search.coefficients import CoefficientCache
from haap_solver.search.formulation import SubProblem
from haap_solver.search.space import StageConfig, build_plan


def layer_split(cache: CoefficientCache, configs: list[StageConfig], sub: SubProblem,
                total_layers: int) -> list[int] | None:
    """Layers per stage at the least common bottleneck (None if memory cannot hold them all)."""
    p, b = len(configs), sub.micro_batch
    m = cache.instance.training.global_batch_size // b
    limits, coeffs = [], []
    for i, c in enumerate(configs):
        first, last = i == 0, i == p - 1
        f = cache.in_flight(sub.schedule, p - 1 - i, p, m)
        limits.append(cache.max_layers(c, b, first, last, p > 1, f))
        coeffs.append(cache.coefficients(c, b, first, last, p > 1))
    if min(limits) < 1 or sum(limits) < total_layers:
        return None

    # Stage times at 1..limit layers (running max: a layer limit must grow with T); the least
    # common bottleneck is one of these values, found by bisection over them.
    taus = [np.maximum.accumulate(np.array([co.tau(n) for n in range(1, lim + 1)]))
            for co, lim in zip(coeffs, limits, strict=True)]

    def fit(t: float) -> list[int]:
        return [int(np.searchsorted(ts, t, side="right")) for ts in taus]

    candidates = np.unique(np.concatenate(taus))
    lo, hi = 0, len(candidates) - 1
    top = fit(candidates[hi])
    if sum(top) < total_layers or min(top) < 1:
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        got = fit(candidates[mid])
        if sum(got) >= total_layers and min(got) >= 1:
            hi = mid
        else:
            lo = mid + 1
    layers = fit(candidates[lo])
    excess = sum(layers) - total_layers
    # Take the surplus from the stages that are slowest per layer first.
    order = sorted(range(p), key=lambda i: -coeffs[i].tau(layers[i]))
    while excess > 0:
        moved = False
        for i in order:
            if excess and layers[i] > 1:
                layers[i] -= 1
                excess -= 1
                moved = True
        if not moved:
            return None
    return layers


def construct(cache: CoefficientCache, sub: SubProblem, per_group: dict[str, StageConfig],
              note: str) -> Plan | None:
    """The warm-start plan of one sub-problem from one configuration per node group."""
    inst = cache.instance
    budget = {g.name: g.num_gpus for g in inst.cluster.node_groups}
    counts = {g: budget[g] // c.gpus for g, c in per_group.items() if budget[g] >= c.gpus}
    total = sum(counts.values())
    if total == 0:
        return None
    p = min(sub.num_stages, total)
    if total > p:  # scale down, keeping the proportions
        scaled = {g: math.floor(k * p / total) for g, k in counts.items()}
        rest = p - sum(scaled.values())
        for g in sorted(counts, key=lambda g: -(counts[g] * p / total - scaled[g]))[:rest]:
            scaled[g] += 1
        counts = {g: k for g, k in scaled.items() if k > 0}
    m = inst.training.global_batch_size // sub.micro_batch
    room = {g: cache.max_layers(per_group[g], sub.micro_batch, False, False, True,
                                min(p, m)) for g in counts}
    sequence: list[StageConfig] = []
    for g in sorted(counts, key=lambda g: -room[g]):
        sequence.extend([per_group[g]] * counts[g])
    real = SubProblem(len(sequence), sub.micro_batch, sub.schedule)
    layers = layer_split(cache, sequence, real, inst.model.num_layers)
    if layers is None:
        return None
    return build_plan(inst, sequence, layers, micro_batch=sub.micro_batch,
                      schedule=sub.schedule, note=note)  # type: ignore[arg-type]


def seed_from_capacity(cache: CoefficientCache, sub: SubProblem,
                       selection: list[tuple[StageConfig, int, int]], note: str) -> Plan | None:
    """A plan from the stages of a capacity-bound solution (Sec. 4.3): the first-role stage
    first, middle stages roomiest first, the last-role stage last, layers split by
    `layer_split` at their real positions."""
    b = sub.micro_batch
    m = cache.instance.training.global_batch_size // b
    p = len(selection)
    first = [c for c, role, _ in selection if role == 1]
    last = [c for c, role, _ in selection if role == 2]
    middle = [c for c, role, _ in selection if role == 0]
    middle.sort(key=lambda c: -cache.max_layers(c, b, False, False, True, min(p, m)))
    sequence = first + middle + last
    real = SubProblem(len(sequence), b, sub.schedule)
    layers = layer_split(cache, sequence, real, cache.instance.model.num_layers)
    if layers is None:
        return None
    return build_plan(cache.instance, sequence, layers, micro_batch=b,
                      schedule=sub.schedule, note=note)  # type: ignore[arg-type]


def seed_from_sequence(cache: CoefficientCache, sequence: list[StageConfig], sub: SubProblem,
                       note: str) -> Plan | None:
    """A plan from a stage sequence (pipeline order) with the best layer split of all
    (`dp.best_layer_split`, exact for the sequence); None where no split fits memory."""
    from haap_solver.search.dp import best_layer_split

    split = best_layer_split(cache.instance, cache, sequence, sub.micro_batch, sub.schedule)
    if split is None:
        return None
    return build_plan(cache.instance, sequence, split[0], micro_batch=sub.micro_batch,
                      schedule=sub.schedule, note=note)  # type: ignore[arg-type]
