"""Changes to a planning instance that a `Planner` applies between solves: the cluster grows or
shrinks, a node runs slow, the batch or the sequence grows, a device type or the training
options change. Each change is a frozen dataclass that makes the changed instance
(`apply_to`) and says in a line what it did (`describe`); what it invalidates of the search
state follows from the instances before and after (`haap_solver.search.carry`).

A trace of changes is read from TOML (``[[events]]`` tables, `changes_from_toml`), each table
naming its `kind` and the change's fields:

    [[events]]
    kind = "resize"          # node_group, num_nodes
    [[events]]
    kind = "add_node_group"  # the fields of a [[cluster.node_groups]] table
    [[events]]
    kind = "remove_node_group"  # node_group
    [[events]]
    kind = "slowdown"        # node_group, node (optional), compute_speed, network_speed
    [[events]]
    kind = "global_batch"    # global_batch_size
    [[events]]
    kind = "seq_length"      # seq_length
    [[events]]
    kind = "device"          # name, then the fields of a [devices.NAME] table (base = ...)
    [[events]]
    kind = "training"        # any fields of [training]

Every table may carry a `label` (free text, printed by ``haap replan``).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from haap_solver import limits
from haap_solver._fields import Range, build, show, to_mapping
from haap_solver._parse import loads_toml
from haap_solver.cluster import Cluster, NodeGroup
from haap_solver.cost.efficiency import family_error
from haap_solver.devices import DeviceType, device_preset
from haap_solver.errors import InputError, did_you_mean, read_text
from haap_solver.instance import Instance, _refuse_renamed, check_plannable
from haap_solver.stragglers import (
    PROFILE_BESIDE_STRAGGLERS,
    Straggler,
    apply_stragglers,
    node_renames,
)
from haap_solver.training import TrainingSpec


def _with_cluster(instance: Instance, cluster: Cluster) -> Instance:
    return dataclasses.replace(instance, cluster=cluster)


def _groups_replaced(instance: Instance, groups: list[NodeGroup],
                     devices: dict[str, DeviceType] | None = None) -> Instance:
    """`instance` on node groups `groups` (devices: the ones they use, from `devices` or the
    cluster's own). A cluster too large is an error on the change's `num_nodes`."""
    known = {**instance.cluster.devices, **(devices or {})}
    used = {g.device: known[g.device] for g in groups}
    try:
        cluster = dataclasses.replace(instance.cluster, node_groups=tuple(groups),
                                      devices=dict(sorted(used.items())))
    except InputError as exc:
        if exc.field != "node_groups":
            raise
        raise InputError(f"the node groups would {exc.message}", field="num_nodes") from None
    return _with_cluster(instance, cluster)


def _group_index(instance: Instance, name: str, field: str) -> int:
    names = [g.name for g in instance.cluster.node_groups]
    if name not in names:
        raise InputError(f"unknown node group {name!r}{did_you_mean(name, names)}; the groups "
                         "are " + ", ".join(names), field=field)
    return names.index(name)


@dataclass(frozen=True, kw_only=True)
class Resize:
    """A node group's node count changes (nodes lost or added; lost nodes are its last ones)."""

    node_group: str
    """The group's name."""
    num_nodes: Annotated[int, Range(1, limits.MAX_NODES)]
    """Its new node count (to remove every node, use RemoveNodeGroup)."""

    def apply_to(self, instance: Instance) -> Instance:
        i = _group_index(instance, self.node_group, "node_group")
        groups = list(instance.cluster.node_groups)
        groups[i] = dataclasses.replace(groups[i], num_nodes=self.num_nodes)
        return _groups_replaced(instance, groups)

    def describe(self) -> str:
        return f"{self.node_group} -> {self.num_nodes} node(s)"


@dataclass(frozen=True, kw_only=True)
class AddNodeGroup:
    """A new node group joins the cluster."""

    group: NodeGroup
    """The new group (its name not taken)."""
    device: DeviceType | None = None
    """Its device type where it is not a preset nor one the cluster has."""

    def apply_to(self, instance: Instance) -> Instance:
        if any(g.name == self.group.name for g in instance.cluster.node_groups):
            raise InputError(f"node group {self.group.name!r} exists already", field="name")
        devices = {} if self.device is None else {self.device.name: self.device}
        group = self.group
        if group.device not in devices and group.device not in instance.cluster.devices:
            preset = device_preset(group.device, field="device")
            group = dataclasses.replace(group, device=preset.name)
            devices[preset.name] = preset
        groups = [*instance.cluster.node_groups, group]
        try:
            return _groups_replaced(instance, groups, devices)
        except InputError as exc:  # (its device without the training's precision)
            if exc.field == "num_nodes":
                raise
            changed = dataclasses.replace(instance.cluster, node_groups=tuple(groups))
            raise _as_event_error(exc, dataclasses.replace(instance, cluster=changed),
                                  "cluster", ["device"]) from None

    def describe(self) -> str:
        g = self.group
        return f"+ {g.name} ({g.num_nodes} x {g.gpus_per_node} {g.device})"


@dataclass(frozen=True, kw_only=True)
class RemoveNodeGroup:
    """A node group leaves the cluster."""

    node_group: str
    """The group's name."""

    def apply_to(self, instance: Instance) -> Instance:
        i = _group_index(instance, self.node_group, "node_group")
        groups = [g for k, g in enumerate(instance.cluster.node_groups) if k != i]
        if not groups:
            raise InputError("the cluster's last node group cannot be removed",
                             field="node_group")
        return _groups_replaced(instance, groups)

    def describe(self) -> str:
        return f"- {self.node_group}"


@dataclass(frozen=True, kw_only=True)
class Slowdown:
    """A node or a node group runs at a fraction of nominal speed (haap_solver.stragglers: a
    slowed node becomes the node group GROUP.nodeK for the search; the Planner keeps naming it
    node K of GROUP, and a speed of 1.0 restores it)."""

    straggler: Straggler
    """Which nodes, and how slow."""

    def apply_to(self, instance: Instance) -> Instance:
        if instance.profile and self.straggler.compute_speed != 1.0:
            raise InputError(PROFILE_BESIDE_STRAGGLERS, field="compute_speed")
        try:
            cluster = apply_stragglers(instance.cluster, [self.straggler], prefix="slowdown")
        except InputError as exc:  # named by apply_stragglers as slowdown[0].FIELD
            field = (exc.field or "").removeprefix("slowdown").removeprefix("[0]")
            raise InputError(exc.message, field=field.removeprefix(".") or None) from None
        return _with_cluster(instance, cluster)

    def node_renames(self, instance: Instance) -> dict[tuple[str, int], tuple[str, int]]:
        """Where the split puts each node of the slowed node's group (stragglers.node_renames)."""
        return node_renames(instance.cluster, [self.straggler])

    def describe(self) -> str:
        s = self.straggler
        where = s.node_group if s.node is None else f"{s.node_group} node {s.node}"
        return f"{where} at compute {s.compute_speed:g}, network {s.network_speed:g}"


@dataclass(frozen=True, kw_only=True)
class SetGlobalBatch:
    """The global batch size changes (batch ramp-up)."""

    global_batch_size: Annotated[int, Range(1, limits.MAX_BATCH)]
    """Sequences per iteration."""

    def apply_to(self, instance: Instance) -> Instance:
        return _with_training(instance, {"global_batch_size": self.global_batch_size})

    def describe(self) -> str:
        return f"global batch -> {self.global_batch_size}"


@dataclass(frozen=True, kw_only=True)
class SetSequenceLength:
    """The sequence length changes (long-context training)."""

    seq_length: Annotated[int, Range(1, limits.MAX_SEQ_LENGTH)]
    """Tokens per sequence."""

    def apply_to(self, instance: Instance) -> Instance:
        try:
            model = build(type(instance.model), {**to_mapping(instance.model),
                                                 "seq_length": self.seq_length}, prefix="model")
            return dataclasses.replace(instance, model=model)
        except InputError as exc:
            raise _as_event_error(exc, instance, "model", ["seq_length"]) from None

    def describe(self) -> str:
        return f"sequence length -> {self.seq_length}"


@dataclass(frozen=True, kw_only=True)
class SetDevice:
    """New numbers for a device type the cluster uses (a new profile of it: measured peak,
    memory, bandwidth)."""

    device: DeviceType
    """The device type, named as the cluster names it."""

    def apply_to(self, instance: Instance) -> Instance:
        if self.device.name not in instance.cluster.devices:
            raise InputError(f"no node group uses device {self.device.name!r}; the devices are "
                             + ", ".join(sorted(instance.cluster.devices)), field="name")
        if instance.profile:
            old = instance.cluster.devices[self.device.name]
            changed = [f for f in _COMPUTE_FIELDS
                       if getattr(old, f) != getattr(self.device, f)]
            if changed and _profile_covers(instance.profile, self.device.name):
                raise InputError(
                    f"the instance's measured profile gives device {self.device.name!r} its "
                    f"compute times, so a new {changed[0]} would not change them; measure a new "
                    "profile (haap profile) or leave the compute numbers as they are",
                    field=changed[0])
        devices = {**instance.cluster.devices, self.device.name: self.device}
        try:
            updated = _with_cluster(instance, dataclasses.replace(instance.cluster,
                                                                  devices=devices))
        except InputError as exc:  # (a device without the training's precision)
            raise _as_event_error(exc, instance, "devices", []) from None
        if _plannable(instance):  # (as a file's: memory_gib above reserved_memory_gib)
            try:
                check_plannable(updated.model, updated.training, updated.cluster)
            except InputError as exc:
                raise _as_event_error(exc, instance, "devices", ["memory_gib"]) from None
        return updated

    def describe(self) -> str:
        return f"device {self.device.name} updated"


_COMPUTE_FIELDS = ("peak_tflops", "peak_fp32_tflops", "peak_tf32_tflops", "peak_fp8_tflops",
                   "matmul_efficiency", "matmul_efficiency_fp8")
"""Device fields that only the analytical compute times read: a measured profile of the device
replaces them (its layer, embedding and head times)."""


def _profile_covers(path: str, device: str) -> bool:
    """Whether the profile file at `path` measures `device` (an unreadable one: assumed so;
    the instance's own load reported it)."""
    from haap_solver.cost.profile import load_profile

    try:
        return load_profile(path).has_device(device)
    except (InputError, OSError):
        return True


@dataclass(frozen=True, kw_only=True)
class SetTraining:
    """Training options change (any fields of [training])."""

    changes: tuple[tuple[str, Any], ...]
    """(field, new value) pairs, values as in an instance file."""

    def apply_to(self, instance: Instance) -> Instance:
        return _with_training(instance, dict(self.changes))

    def describe(self) -> str:
        return "training: " + ", ".join(f"{k} = {v!r}" for k, v in self.changes)


Change = (Resize | AddNodeGroup | RemoveNodeGroup | Slowdown | SetGlobalBatch
          | SetSequenceLength | SetDevice | SetTraining)


def _with_training(instance: Instance, changes: dict[str, Any]) -> Instance:
    try:
        training = build(TrainingSpec, {**to_mapping(instance.training), **changes},
                         prefix="training")
        changed = dataclasses.replace(instance, training=training)
        if _plannable(instance):  # (an instance built in code may be so on purpose)
            check_plannable(changed.model, changed.training, changed.cluster)  # (as a file's)
        return changed
    except InputError as exc:
        raise _as_event_error(exc, instance, "training", list(changes)) from None


def _plannable(instance: Instance) -> bool:
    try:
        check_plannable(instance.model, instance.training, instance.cluster)
    except InputError:
        return False
    return True


_GROUP_FIELD = re.compile(r"cluster\.node_groups\[(\d+)\]\.(.+)")


def _as_event_error(exc: InputError, instance: Instance, table: str,
                    keys: list[str]) -> InputError:
    """An error of the changed instance, located in the fields of the change (an events
    table): a field TABLE.X of the instance that the change sets is X there; a rule of the
    whole instance that the change breaks (a device without bf16 for a new dtype) names the
    node group, on the change's field where it sets one."""
    field = exc.field or ""
    inner = field.removeprefix(f"{table}.")
    if inner != field and re.split(r"[.\[]", inner)[0] in keys:
        return InputError(exc.message, field=inner)
    group = _GROUP_FIELD.fullmatch(field)
    if group is not None and int(group[1]) < len(instance.cluster.node_groups):
        name = instance.cluster.node_groups[int(group[1])].name
        where = f"the {group[2]} of node group {name!r}"
    else:
        where = field or "the instance"
    return InputError(f"makes {where} invalid: {exc.message}",
                      field=keys[0] if len(keys) == 1 else None)


KINDS = ("resize", "add_node_group", "remove_node_group", "slowdown", "global_batch",
         "seq_length", "device", "training")


def change_from_dict(data: Any, *, field: str = "events[0]") -> tuple[Change, str]:
    """A change and its label from an ``[[events]]`` table (module docstring)."""
    if not isinstance(data, dict):
        raise InputError(f"expected a table, got {show(data)}", field=field)
    fields = dict(data)
    kind = fields.pop("kind", None)
    label = fields.pop("label", "")
    if kind not in KINDS:
        raise InputError(f"expected kind = one of {', '.join(KINDS)}, got {show(kind)}",
                         field=f"{field}.kind")
    if not isinstance(label, str):
        raise InputError(f"expected a string, got {show(label)}", field=f"{field}.label")
    change: Change
    if kind == "resize":
        change = build(Resize, fields, prefix=field)
    elif kind == "add_node_group":
        for key in ("max_gpus", "price_per_gpu_hour"):
            if key in fields:  # (the Planner searches time alone: objectives.applies)
                raise InputError("a Planner re-plans for time alone: a node group it adds "
                                 "takes no GPU cap or price", field=f"{field}.{key}")
        change = AddNodeGroup(group=build(NodeGroup, fields, prefix=field))
    elif kind == "remove_node_group":
        change = build(RemoveNodeGroup, fields, prefix=field)
    elif kind == "slowdown":
        change = Slowdown(straggler=build(Straggler, fields, prefix=field))
    elif kind == "global_batch":
        change = build(SetGlobalBatch, fields, prefix=field)
    elif kind == "seq_length":
        change = build(SetSequenceLength, fields, prefix=field)
    elif kind == "device":
        change = SetDevice(device=_device_from(fields, field))
    else:
        change = SetTraining(changes=tuple(sorted(_training_fields(fields, field).items())))
    return change, label


def _training_fields(fields: dict[str, Any], field: str) -> dict[str, Any]:
    """The fields of a training event, each checked as [training] checks it (keys, types,
    ranges), before any solve; the rules between them and the rest of the instance are checked
    when the event is applied."""
    if not fields:
        raise InputError("no field of [training] to change; give one or more, e.g. "
                         "zero_stage = 2", field=field)
    try:
        _refuse_renamed(fields)
    except InputError as exc:
        raise InputError(exc.message, field=f"{field}.{(exc.field or '').split('.')[-1]}") \
            from None
    # (global_batch_size is required in [training]: a stand-in where the event leaves it)
    build(TrainingSpec, {"global_batch_size": 1, **fields}, prefix=field)
    if fields.get("target", "any") != "any":  # (the Planner searches the general plan)
        raise InputError(f"a Planner re-plans haap's general plan (target 'any'), not what "
                         f"target {fields['target']!r} runs (use haap solve --target)",
                         field=f"{field}.target")
    return fields


def _device_from(fields: dict[str, Any], field: str) -> DeviceType:
    name = fields.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(f"expected the device's name, got {show(name)}", field=f"{field}.name")
    if "base" in fields:
        base = device_preset(fields["base"], field=f"{field}.base")
        rest = {k: v for k, v in fields.items() if k != "base"}
        fields = {**to_mapping(base), **rest}
    device = build(DeviceType, fields, prefix=field)
    # (a Planner costs with the default constants: no family of its own is known there)
    unknown = family_error(device.efficiency_family)
    if unknown:
        raise InputError(unknown, field=f"{field}.efficiency_family")
    return device


def changes_from_toml(path: str | Path) -> list[tuple[Change, str]]:
    """The changes of an events file, in order, each with its label."""
    source = str(path)
    try:
        data = loads_toml(read_text(Path(path), "an events .toml file"), source)
        for key in data:
            if key != "events":
                raise InputError("unknown top-level key; allowed keys: events", field=key)
        events = data.get("events")
        if not isinstance(events, list) or not events:
            raise InputError("expected one or more [[events]] tables", field="events")
        return [change_from_dict(e, field=f"events[{i}]") for i, e in enumerate(events)]
    except InputError as exc:
        raise exc.within(source=source) from None
