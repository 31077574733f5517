"""How much of a cluster a new plan moves relative to the plan running now.

A GPU stays in place when, in the new plan, it serves the same layer range as before on the same
node; every other GPU of the new plan must load weights and optimizer state: it is *moved*. GPUs
are counted per node (node group, node index, as the plans name them), since a node's GPUs are
interchangeable: on a node, the new plan's GPUs serving layers [a, b) stay in place up to as
many as served [a, b) there before. `moved_layers` counts the layers the moved GPUs load, each
GPU its stage's layers (a stage without decoder layers counts one: it holds the embedding or the
head), a measure of the weights to transfer, in layer-GPUs. Nodes are named as the current
cluster names them (a slowed node that became its own group is renamed first, Planner.apply).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from haap_solver.plan import Plan

_Slot = tuple[str, int, int, int]
"""(node group, node, first layer, layer count)."""


@dataclass(frozen=True, kw_only=True)
class Migration:
    """What a new plan moves relative to the previous one."""

    moved_gpus: int
    """GPUs of the new plan not serving the layers they served before on their node."""
    moved_layers: int
    """Layers those GPUs load, summed over them (layer-GPUs)."""
    kept_gpus: int
    """GPUs of the new plan that stay in place."""

    def to_dict(self) -> dict[str, Any]:
        return {"moved_gpus": self.moved_gpus, "moved_layers": self.moved_layers,
                "kept_gpus": self.kept_gpus}


def _slots(plan: Plan) -> Counter[_Slot]:
    out: Counter[_Slot] = Counter()
    for stage in plan.stages:
        for r in stage.replicas:
            for p in r.placement:
                out[(r.node_group, p.node, stage.first_layer, stage.num_layers)] += (
                    p.replicas * r.tp)
    return out


def migration(before: Plan | None, after: Plan) -> Migration:
    """What `after` moves relative to `before` (every GPU of `after` where there is none)."""
    new = _slots(after)
    old = _slots(before) if before is not None else Counter()
    kept = moved = layers = 0
    for slot, count in new.items():
        stay = min(count, old[slot])
        kept += stay
        moved += count - stay
        layers += (count - stay) * max(slot[3], 1)
    return Migration(moved_gpus=moved, moved_layers=layers, kept_gpus=kept)
