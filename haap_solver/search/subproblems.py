"""The sub-problems of a search space (formulations/stage-assignment.md Sec. 2): one per stage
count p, micro-batch size b, schedule and kind of empty end stages (Sec. 1.2), with the fewest
stages memory allows (`_stage_count_floor`) and the most a plan may have (`_stage_count_cap`);
a sub-problem with its lower bound as the branch-and-bound queues it (`_Candidate`); and, where
no sub-problem has a plan, why (`explain_infeasible`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from haap_solver.cost.memory import GIB
from haap_solver.instance import Instance
from haap_solver.search.formulation import SubProblem
from haap_solver.search.space import StageConfig, stage_configs

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
        sub = SubProblem(p, micro_batch, schedule)
        if sub.schedulable(instance):  # (the interleaved schedule's rules, Sec. 1.4)
            yield sub
    if not empty_ends or schedule == "interleaved-1f1b":  # (no empty end stage there)
        return
    for empty_first, empty_last in EMPTY_ENDS:
        empty = int(empty_first) + int(empty_last)
        for decoder in range(max(p_min, 1), min(layers, most - empty) + 1):
            yield SubProblem(decoder + empty, micro_batch, schedule, empty_first, empty_last)


def subproblems_of_size(instance: Instance, micro_batch: int, p_min: int,
                        max_stages: int | None) -> Iterator[SubProblem]:
    """Every sub-problem at `micro_batch`: `_subproblems` over the training set-up's schedules,
    with its empty end stages where it allows them (the search's list, and the second
    process's when it bounds that list from the other end)."""
    for schedule in instance.training.schedules:
        yield from _subproblems(instance, micro_batch, schedule, p_min, max_stages,
                                empty_ends=instance.training.empty_end_stages)


def _stage_count_floor(state: SearchState, micro_batch: int, configs: list[StageConfig]) -> int:
    """The fewest pipeline stages that can hold every layer at `micro_batch` (Sec. 2.2): L over
    the most layers any of `configs` holds as a middle stage with one micro-batch in flight."""
    roomiest = max(state.cache.max_layers(c, micro_batch, False, False, True, 1)
                   for c in configs)
    return max(1, math.ceil(state.instance.model.num_layers / max(roomiest, 1)))


class Strengthened(NamedTuple):
    """A strong bound (Sec. 4.3-4.10) computed by the search beside (`solve` with two
    processes) on a sub-problem it left open: enough for the search here to take it as its own
    strengthening and go to the model with the same window."""

    bound: float
    """The strong bound (below `against`)."""
    against: float
    """The threshold it was computed against."""
    window: tuple[float, float, float] | None
    """(stop, t_lo, t_hi) of its path walk (`SearchState.record_window`), None where there was
    none."""


@dataclass
class _Candidate:
    sub: SubProblem
    lower_bound: float
    strengthened_with: float | None = None
    """The threshold the strong bound was computed against (None: not yet): the incumbent, less
    the gap the caller accepts (`relative_gap`). The bound's incumbent-dependent parts (Sec. 4.2,
    4.5) are redone once a clearly better plan is found."""
    modelled: bool = False
    """Whether a model of it was solved (its bound may then come from the model)."""
    inherited: bool = False
    """Whether its bound at the start is one a search of a larger cluster proved
    (`SearchState.sub_bounds`, carried by the Planner: formulations Sec. 8)."""
    below_level: bool = False
    """Whether its last strengthening against a level below the threshold ended below that
    level (`BranchAndBound.strengthening_level`): its walk then found its bound there, and the
    next strengthening is against the threshold itself."""
    fed: bool = False
    """Whether the search beside raised its bound (`BranchAndBound.absorb`): a strong bound
    computed there."""
    closed_by_model: bool = False
    """Whether its model's answer closed it (optimal within the gap, or no plan below the
    threshold); otherwise a closed sub-problem was closed by its lower bound."""

    def raise_bound(self, bound: float, threshold: float) -> None:
        """The lower bound raised to `bound`, a bound computed against `threshold` (it says no
        plan of the sub-problem lies below `threshold`, or that none lies below `bound`): so
        the sub-problem's optimum is at least the lesser of the two."""
        self.lower_bound = max(self.lower_bound, min(bound, threshold))

    def rank(self) -> tuple[float, int, int]:
        """Best bound first; ties to fewer stages, then to the smaller micro-batch."""
        return self.lower_bound, self.sub.num_stages, self.sub.micro_batch


def explain_infeasible(state: SearchState) -> str:
    """Why no plan exists, with numbers: which resource is short and by how much."""
    inst = state.instance
    m, t = inst.model, inst.training
    L = m.num_layers
    lines = [f"no plan fits {inst.name}: {m.name} ({m.total_params / 1e9:.2f}B parameters, "
             f"{L} layers) on {inst.cluster.num_gpus} GPUs"]
    if not state.micro_batches():
        lines.append(f"  no micro-batch size works: global_batch_size {t.global_batch_size} with "
                     f"max_micro_batch_share {t.max_micro_batch_share}")
        return "\n".join(lines)
    best_layers = 0
    best_desc = ""
    for b in state.micro_batches():
        for c in stage_configs(inst, b):
            n = state.cache.max_layers(c, b, False, False, True, 1)
            if n > best_layers:
                best_layers, best_desc = n, f"{c.label()} at micro-batch {b}"
    per_layer_states = m.params_per_layer * 16 / GIB
    usable = sum(g.num_gpus * (inst.device(g.device).memory_gib - t.reserved_memory_gib)
                 for g in inst.cluster.node_groups)
    need = m.total_params * 16 / GIB
    short = f", short by {need - usable:,.1f} GiB" if need > usable else ""
    lines.append(f"  model states alone need {need:,.1f} GiB "
                 f"(16 B/parameter, {per_layer_states:.2f} GiB per layer before sharding); "
                 f"the cluster has {usable:,.1f} GiB usable{short}")
    if best_layers == 0:
        lines.append("  no stage configuration holds even one layer (largest per-GPU memory "
                     f"{max(d.memory_gib for d in inst.cluster.devices.values()):.0f} GiB)")
    else:
        lines.append(f"  the roomiest stage configuration ({best_desc}) holds {best_layers} "
                     f"layer(s); all GPUs together cannot hold the {L} layers with their "
                     "activations")
    lines.append("  try: more or larger GPUs, a smaller global batch or micro-batch, ZeRO "
                 "(training.zero_stage), or full recomputation")
    return "\n".join(lines)
