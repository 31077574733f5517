"""The sub-problems of a search space (formulations/stage-assignment.md Sec. 2): one per stage
count p, micro-batch size b, schedule and kind of empty end stages (Sec. 1.2), with the fewest
stages memory allows (`_stage_count_floor`) and the most a plan may have (`_stage_count_cap`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

from haap_solver.instance import Instance
from haap_solver.search.formulation import SubProblem
from haap_solver.search.space import StageConfig

if TYPE_CHECKING:
    from haap_solver.search.state import SearchState


def _stage_count_cap(instance: Instance, max_stages: int | None) -> int:
    """The most pipeline stages a plan may have: one layer per stage, one GPU per stage, and
    the caller's `max_stages`."""
    layers = instance.model.num_layers
    return min(layers, instance.cluster.num_gpus, max_stages or layers)


def _empty_ends(sub: SubProblem) -> tuple[bool, ...]:
    """Which ends of `sub` are empty stages: True for the first, False for the last."""
    return tuple(first for empty, first in ((sub.empty_first, True), (sub.empty_last, False))
                 if empty)


EMPTY_ENDS = ((True, False), (False, True), (True, True))
"""The kinds of plans with empty end stages (formulations Sec. 1.2): (empty first, empty last)."""


def _subproblems(instance: Instance, micro_batch: int, schedule: str, p_min: int,
                 max_stages: int | None, *, empty_ends: bool) -> Iterator[SubProblem]:
    """Every sub-problem at (`micro_batch`, `schedule`) whose stages that hold layers are at
    least `p_min`: every stage count with no empty end stage, then (`empty_ends`) each kind of
    empty end stages (Sec. 1.2). At most one layer and one GPU per stage, `max_stages` stages in
    all."""
    layers, gpus = instance.model.num_layers, instance.cluster.num_gpus
    most = min(gpus, max_stages or gpus + 2)
    for p in range(p_min, min(layers, most) + 1):
        yield SubProblem(p, micro_batch, schedule)
    if not empty_ends:
        return
    for empty_first, empty_last in EMPTY_ENDS:
        empty = int(empty_first) + int(empty_last)
        for decoder in range(max(p_min, 1), min(layers, most - empty) + 1):
            yield SubProblem(decoder + empty, micro_batch, schedule, empty_first, empty_last)


def _stage_count_floor(state: SearchState, micro_batch: int, configs: list[StageConfig]) -> int:
    """The fewest pipeline stages that can hold every layer at `micro_batch` (Sec. 2.2): L over
    the most layers any of `configs` holds as a middle stage with one micro-batch in flight."""
    roomiest = max(state.cache.max_layers(c, micro_batch, False, False, True, 1)
                   for c in configs)
    return max(1, math.ceil(state.instance.model.num_layers / max(roomiest, 1)))
