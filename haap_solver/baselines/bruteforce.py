"""Exhaustive enumeration of the solver's search space: the ground truth on small instances.

Every plan of the space the exact search optimises over (haap_solver/search/space.py): every
micro-batch size of ``micro_batch_candidates``, every allowed schedule, every stage count
1..min(L, GPUs), for each stage every ``StageConfig`` of ``stage_configs(instance, b)`` (single
node group, node-aligned shape, any allowed recomputation), every composition of the layers into
stages of at least one layer (with ``mixed=True`` also every mixed-type stage the search's
generator makes, ``SearchState.mixed_space``), the node groups' GPU budgets respected
(canonical placement), memory valid on every GPU. Each plan is costed by
``CostModel.evaluate``; the minimum is returned, with status "optimal" when the enumeration
finished.

Refuses (HaapError) instances whose space exceeds ``max_plans`` (an upper bound on the count,
before the GPU-budget pruning).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from haap_solver.baselines.common import Best
from haap_solver.cost.evaluate import CostModel
from haap_solver.errors import HaapError
from haap_solver.instance import Instance
from haap_solver.search.solve import SearchState, SolveResult
from haap_solver.search.space import (
    StageConfig,
    build_plan,
    micro_batch_candidates,
    stage_configs,
)
from haap_solver.validate import plan_violations

METHOD = "bruteforce"
MAX_PLANS = 2_000_000


def _configs(instance: Instance, b: int, state: SearchState | None) -> list[StageConfig]:
    """Single-type configurations, plus every generated mixed one when `state` is given."""
    single = stage_configs(instance, b)
    return single if state is None else single + state.mixed_space(b)


def space_size(instance: Instance, *, mixed: bool = False,
               cost_model: CostModel | None = None) -> int:
    """Plans enumerated (before memory): sum over b, schedule, p of sequences x C(L-1, p-1).

    Sequences are the stage-configuration sequences whose GPUs fit the node groups' budgets,
    counted exactly on clusters of up to 64 GPUs, bounded by |configs|^p above that.
    """
    return _space_size(instance, SearchState(instance, cost_model, mixed=True) if mixed else None)


def _space_size(instance: Instance, state: SearchState | None) -> int:
    """space_size over the single-type configurations, plus the mixed ones of `state`."""
    L = instance.model.num_layers
    p_max = min(L, instance.cluster.num_gpus)
    exact = instance.cluster.num_gpus <= 64
    names = [g.name for g in instance.cluster.node_groups]
    total = 0
    for b in micro_batch_candidates(instance):
        configs = _configs(instance, b, state)
        if exact:
            uses = [tuple((names.index(g), c.gpus_in(g)) for g in c.groups) for c in configs]
            count = _counter(uses)
        for p in range(1, p_max + 1):
            seqs = count(tuple(g.num_gpus for g in instance.cluster.node_groups), p) if exact \
                else len(configs) ** p
            total += seqs * math.comb(L - 1, p - 1)
            if total > 10 ** 15:
                return total
    return total * len(instance.training.schedules)


def _counter(uses: list[tuple[tuple[int, int], ...]]):  # type: ignore[no-untyped-def]
    """count(budget, p): config sequences of length p within `budget` GPUs per node group."""
    from functools import cache

    @cache
    def count(budget: tuple[int, ...], p: int) -> int:
        if p == 0:
            return 1
        n = 0
        for use in uses:
            if all(budget[g] >= k for g, k in use):
                rest = list(budget)
                for g, k in use:
                    rest[g] -= k
                n += count(tuple(rest), p - 1)
        return n

    return count


def compositions(total: int, parts: int) -> Iterator[list[int]]:
    """Every way to write `total` as an ordered sum of `parts` positive integers."""
    if parts == 1:
        yield [total]
        return
    for first in range(1, total - parts + 2):
        for rest in compositions(total - first, parts - 1):
            yield [first, *rest]


def _sequences(configs: list[StageConfig], p: int, budget: dict[str, int]) -> Iterator[
        list[StageConfig]]:
    """Config sequences of length p whose GPUs fit every node group's budget."""
    seq: list[StageConfig] = []

    def rec() -> Iterator[list[StageConfig]]:
        if len(seq) == p:
            yield list(seq)
            return
        for c in configs:
            if all(budget[g] >= c.gpus_in(g) for g in c.groups):
                for g in c.groups:
                    budget[g] -= c.gpus_in(g)
                seq.append(c)
                yield from rec()
                seq.pop()
                for g in c.groups:
                    budget[g] += c.gpus_in(g)

    yield from rec()


def bruteforce(instance: Instance, *, time_limit_s: float = 600.0, threads: int = 1,
               seed: int = 0, cost_model: CostModel | None = None,
               max_plans: int = MAX_PLANS, mixed: bool = False) -> SolveResult:
    """The minimum iteration time over the whole search space, by enumeration.

    `mixed`: the space includes mixed-type stages (every candidate the search's generator makes,
    with its batch split, before any memory or dominance pruning), as ``solve(mixed=True)``."""
    cm = cost_model or CostModel(instance)
    state = SearchState(instance, cm, mixed=True) if mixed else None
    size = _space_size(instance, state)
    if size > max_plans:
        raise HaapError(f"bruteforce refuses {instance.name}: its search space has up to "
                        f"{size:.3g} plans, more than the limit of {max_plans:,} "
                        "(use it on small instances only)")
    best = Best(cm, time_limit_s)
    L = instance.model.num_layers
    p_max = min(L, instance.cluster.num_gpus)
    budget0 = {g.name: g.num_gpus for g in instance.cluster.node_groups}
    for b in micro_batch_candidates(instance):
        configs = _configs(instance, b, state)
        for schedule in instance.training.schedules:
            for p in range(1, p_max + 1):
                for seq in _sequences(configs, p, dict(budget0)):
                    if best.out_of_time():
                        return best.result(instance, METHOD, exact=True)
                    for layers in compositions(L, p):
                        plan = build_plan(instance, seq, layers, micro_batch=b,
                                          schedule=schedule,  # type: ignore[arg-type]
                                          note="bruteforce")
                        if plan is None:
                            break  # placement depends on the configs only
                        ev = cm.evaluate(plan)
                        best.costed += 1
                        if not ev.memory_ok or ev.iteration_time_s >= best.time:
                            continue
                        if plan_violations(instance, plan, cost_model=cm):
                            continue
                        best.time, best.plan, best.evaluation = ev.iteration_time_s, plan, ev
                        best.info = {"micro_batch": b, "schedule": schedule, "stages": p,
                                     "configs": [c.label() for c in seq], "layers": layers}
    return best.result(instance, METHOD, exact=True, message=f"space <= {size:,} plans")
