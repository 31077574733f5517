"""The plan: an ordered list of pipeline stages, each with its own layers, recomputation, replicas.

Stages may differ in everything (layer count, device type, TP, DP, recomputation): that asymmetry
is the point. A stage may mix device types (heterogeneous data parallelism): each replica group
takes its own per-replica share of the micro-batch, and the shares add up to ``micro_batch_size``.
Plans are versioned JSON (``schema_version``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from haap_solver import limits
from haap_solver._fields import Length, Range, build, require, show, to_mapping
from haap_solver._parse import loads_json
from haap_solver.errors import InputError, read_text
from haap_solver.training import Recompute, Schedule

SCHEMA_VERSION = 1


@dataclass(frozen=True, kw_only=True)
class Placement:
    """How many replicas of a replica group sit on one node."""

    node: Annotated[int, Range(0, limits.MAX_NODES - 1)]
    """Node index inside the node group, 0-based."""
    replicas: Annotated[int, Range(1, limits.MAX_TP)]
    """Replicas of the group on this node (each uses `tp` GPUs of it)."""


@dataclass(frozen=True, kw_only=True)
class ReplicaGroup:
    """`count` identical data-parallel replicas of a stage: same device type, TP and batch share."""

    node_group: str
    """Name of the cluster's node group the replicas run on."""
    device: str
    """Device type (must be the node group's; repeated so a plan reads on its own)."""
    count: Annotated[int, Range(1, limits.MAX_GPUS)]
    """Number of replicas."""
    tp: Annotated[int, Range(1, limits.MAX_TP)]
    """Tensor-parallel degree of each replica (inside one node)."""
    micro_batch_share: Annotated[int, Range(1, limits.MAX_BATCH)]
    """Sequences of each micro-batch that each replica processes."""
    placement: Annotated[tuple[Placement, ...], Length(max=limits.MAX_NODES, what="nodes")]
    """Nodes the replicas sit on; the replicas listed here add up to `count`."""

    @property
    def num_gpus(self) -> int:
        return self.count * self.tp


@dataclass(frozen=True, kw_only=True)
class Stage:
    """One pipeline stage: a contiguous range of decoder layers and the replicas that run it."""

    first_layer: Annotated[int, Range(0, limits.MAX_LAYERS)]
    """Index of the stage's first decoder layer, 0-based."""
    num_layers: Annotated[int, Range(0, limits.MAX_LAYERS)]
    """Number of decoder layers (0 is allowed for a stage holding only the embedding or head)."""
    recompute: Recompute = "none"
    """Activation recomputation mode of this stage."""
    replicas: Annotated[tuple[ReplicaGroup, ...],
                        Length(max=limits.MAX_REPLICA_GROUPS, what="replica groups")]
    """Replica groups; one is the common case, several make a mixed (heterogeneous-DP) stage."""

    @property
    def end_layer(self) -> int:
        return self.first_layer + self.num_layers

    @property
    def dp(self) -> int:
        return sum(r.count for r in self.replicas)

    @property
    def num_gpus(self) -> int:
        return sum(r.num_gpus for r in self.replicas)


@dataclass(frozen=True, kw_only=True)
class Plan:
    """A complete parallel execution plan for one instance."""

    schema_version: int = SCHEMA_VERSION
    """Plan file format version."""
    instance: str = ""
    """Name of the instance the plan was made for (informational)."""
    schedule: Schedule = "1f1b"
    """Pipeline schedule."""
    micro_batch_size: Annotated[int, Range(1, limits.MAX_BATCH)]
    """Sequences per micro-batch flowing through the pipeline."""
    num_micro_batches: Annotated[int, Range(1, limits.MAX_BATCH)]
    """Micro-batches per iteration (gradient accumulation steps)."""
    stages: Annotated[tuple[Stage, ...], Length(max=limits.MAX_STAGES, what="stages")]
    """Pipeline stages, first to last."""
    note: str = ""
    """Free text: which method produced the plan."""

    def __post_init__(self) -> None:
        require(self.schema_version == SCHEMA_VERSION, "schema_version",
                f"this version of haap_solver reads schema_version {SCHEMA_VERSION}, "
                f"got {self.schema_version}")

    @property
    def num_stages(self) -> int:
        return len(self.stages)

    @property
    def num_gpus(self) -> int:
        return sum(s.num_gpus for s in self.stages)

    def to_dict(self) -> dict[str, Any]:
        return to_mapping(self)  # type: ignore[no-any-return]

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json() + "\n")


def plan_from_dict(data: Any, *, source: str | None = None) -> Plan:
    """Build a Plan from parsed JSON; errors name `source` and the dotted field."""
    try:
        if not isinstance(data, dict):
            raise InputError(f"expected a JSON object at the top level, got {show(data)}")
        if "schema_version" not in data:
            raise InputError(f"required key is missing (this version writes {SCHEMA_VERSION})",
                             field="schema_version")
        # Check the version first: a file of another version may differ in every other field.
        version = data["schema_version"]
        if isinstance(version, bool) or not isinstance(version, int):
            raise InputError(f"expected the integer {SCHEMA_VERSION}, got {show(version)}",
                             field="schema_version")
        if version != SCHEMA_VERSION:
            raise InputError(f"this version of haap_solver reads schema_version {SCHEMA_VERSION}, "
                             f"got {version}", field="schema_version")
        return build(Plan, data)
    except InputError as exc:
        raise exc.within(source=source) from None


def load_plan(path: str | Path) -> Plan:
    """Read a plan JSON file."""
    path = Path(path)
    source = str(path)
    text = read_text(path, "a plan .json file")
    if not text.strip():
        raise InputError("file is empty; expected a plan JSON object", source=source)
    return plan_from_dict(loads_json(text, source), source=source)
