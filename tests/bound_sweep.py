"""The sweep the exhaustive bound checks share (test_bounds, test_empty_end_stages,
test_tail_capacity): every micro-batch size with configurations, its layer-rate floors, and
every schedule of the instance."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from haap_solver.search.state import SearchState
from haap_solver.search.subproblem_bounds import _layer_rate_bounds


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
