"""What the exhaustive bound checks share (test_bounds, test_empty_end_stages,
test_tail_capacity, test_path_capacity): the sweep over every micro-batch size with
configurations, its layer-rate floors and every schedule of the instance; and the enumeration of
every valid plan of a sub-problem with the bottleneck and tail the bounds charge it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from haap_solver.cost.pipeline import links_around
from haap_solver.search.formulation import SubProblem
from haap_solver.search.space import StageConfig, build_plan
from haap_solver.search.state import SearchState
from haap_solver.search.subproblem_bounds import _layer_rate_bounds
from haap_solver.validate import plan_violations


def sizes_and_schedules(state: SearchState) -> Iterator[tuple[int, Any, str]]:
    """(micro-batch size, its configurations' layer-rate floors, schedule) for every size that
    has configurations and every schedule the instance searches."""
    for b in state.micro_batches():
        configs = state.configs(b)
        if not configs:
            continue
        floors = _layer_rate_bounds(state, b, configs)
        for schedule in state.instance.training.schedules:
            yield b, floors, schedule


def compositions(total: int, parts: int) -> Iterator[list[int]]:
    """Every way to write `total` as an ordered sum of `parts` positive integers."""
    if parts == 1:
        yield [total]
        return
    for first in range(1, total - parts + 2):
        for rest in compositions(total - first, parts - 1):
            yield [first, *rest]


def _sequences(configs: list[StageConfig], p: int,
               budget: dict[str, int]) -> Iterator[list[StageConfig]]:
    """The search's configuration sequences of length p whose GPUs fit every node group's budget
    (the bounds bound the search's own sub-problems, so they enumerate its space)."""
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


class PlanPoint(NamedTuple):
    """One valid plan of a sub-problem as the bounds see it."""

    configs: list[StageConfig]
    iteration_s: float
    bottleneck: float
    """The period of formulations Sec. 5: the stage time with both links under blocking sends
    ((6b)), else the larger of the stage times and twice the links ((9))."""
    tail: float
    """The largest stage tail (data-parallel collective and optimizer step)."""


def valid_plans(state: SearchState, sub: SubProblem, *, limit: int,
                only_mixed: bool = False) -> list[PlanPoint] | None:
    """Every valid plan of `sub` (with `only_mixed`, those with a mixed-type stage), by
    enumeration and evaluate(); None past `limit` candidates (sequences times layer splits)."""
    instance, cm = state.instance, state.cost_model
    L, p, b = instance.model.num_layers, sub.num_stages, sub.micro_batch
    budget = {g.name: g.num_gpus for g in instance.cluster.node_groups}
    out = []
    seen = 0
    for seq in _sequences(state.configs(b), p, dict(budget)):
        if only_mixed and not any(c.mixed for c in seq):
            continue
        for layers in compositions(L, p):
            seen += 1
            if seen > limit:
                return None
            plan = build_plan(instance, seq, layers, micro_batch=b, schedule=sub.schedule,
                              note="test")
            if plan is None or plan_violations(instance, plan, cost_model=cm):
                continue
            taus = [state.cache.coefficients(c, b, i == 0, i == p - 1, p > 1).tau(n)
                    for i, (c, n) in enumerate(zip(seq, layers, strict=True))]
            evaluation = cm.evaluate(plan)
            links = [s.p2p_next_s for s in evaluation.stages[:-1]]
            if instance.training.blocks_p2p(sub.schedule):
                periods = [tau + links_around(links, i) for i, tau in enumerate(taus)]
            else:
                periods = [*taus, *(2 * c for c in links)]
            out.append(PlanPoint(seq, evaluation.iteration_time_s, max(periods),
                                 max(s.tail_s for s in evaluation.stages)))
    return out
