"""Stragglers: a node, or a whole node group, whose compute and/or network runs at a fraction
of nominal (thermal throttling, a bad NIC or cable), costed everywhere by rewriting the cluster.

A straggler is folded into the cluster itself, so that `evaluate()`, the validator, the bounds,
the models and the brute force all cost it without a line of their own:

- the slowed nodes get a *derived device type* (``A100-80G@70%``): every peak FLOP/s and the
  memory bandwidth scaled by `compute_speed`, so every kernel the cost model times takes
  1 / `compute_speed` as long (what a lower clock does); memory capacity, NVLink and the
  efficiency family are the base device's;
- their NICs run at `network_speed` times the line rate (`nic_gbit_s`);
- a slowed *node* of an otherwise identical group becomes a node group of its own, named
  ``GROUP.nodeK`` (K its index in the group as written), and the group keeps its other nodes,
  renumbered 0.. in their order. This is exact: the search space places stages on node groups up
  to the symmetry of identical nodes, and a slowed node is not identical to the others; a stage
  that spans it and normal nodes is then a mixed-type stage (two device types, Sec. 1.1), costed
  at its slowest replica as `evaluate()` costs any stage. Keeping the node inside its group with
  a per-node speed would have broken that symmetry (the canonical placement's nodes would no
  longer be interchangeable) in every part of the search; the split keeps each part unchanged.

In an instance file (``[[cluster.stragglers]]``)::

    [[cluster.stragglers]]
    node_group = "a100"   # the group as written in [[cluster.node_groups]]
    node = 3              # optional: one node (0-based); absent: the whole group
    compute_speed = 0.7   # fraction of nominal compute, in [0.01, 1]
    network_speed = 1.0   # fraction of nominal NIC bandwidth, in [0.01, 1]
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Annotated, Any

from haap_solver import limits
from haap_solver._fields import Range, build, check_ranges, show
from haap_solver.cluster import Cluster, NodeGroup
from haap_solver.devices import DeviceType
from haap_solver.errors import InputError

NODE_SUFFIX = ".node"
"""A slowed node K of group G becomes the node group ``G.nodeK``."""


@dataclass(frozen=True, kw_only=True)
class Straggler:
    """A node group, or one node of it, running at a fraction of its nominal speed."""

    node_group: str
    """The node group's name."""
    node: Annotated[int | None, Range(0, limits.MAX_NODES - 1)] = None
    """The slowed node's index in the group (0-based); None: every node of the group."""
    compute_speed: Annotated[float, Range(limits.MIN_SPEED, 1)] = 1.0
    """Fraction of nominal compute (peak FLOP/s and memory bandwidth) the nodes run at."""
    network_speed: Annotated[float, Range(limits.MIN_SPEED, 1)] = 1.0
    """Fraction of nominal NIC bandwidth the nodes get."""

    def __post_init__(self) -> None:
        check_ranges(self)


def stragglers_from_list(entries: Any, prefix: str = "cluster.stragglers") -> list[Straggler]:
    """Parse ``[[cluster.stragglers]]`` tables (errors name the dotted field)."""
    if not isinstance(entries, list):
        raise InputError(f"expected a list of tables ([[cluster.stragglers]]), got {show(entries)}",
                         field=prefix)
    out = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise InputError(f"expected a table, got {show(entry)}", field=f"{prefix}[{i}]")
        out.append(build(Straggler, entry, prefix=f"{prefix}[{i}]"))
    return out


SLOWED_SOURCE = "straggler: "
"""How a straggler's derived device's `source` begins (`slowed_device`, `is_slowed`)."""

PROFILE_BESIDE_STRAGGLERS = "a measured profile does not cover a straggler's slowed device"
"""Why a profile is refused beside stragglers (the instance file, `--profile`, a re-plan's
slowdown): its times are of the device at nominal speed."""


def is_slowed(device: DeviceType) -> bool:
    """Whether `device` is a straggler's derived device (`slowed_device`)."""
    return device.source.startswith(SLOWED_SOURCE)


def slowed_device(device: DeviceType, speed: float) -> DeviceType:
    """`device` with every peak FLOP/s and its memory bandwidth scaled by `speed` (named
    ``NAME@P%``); `device` itself at full speed."""
    if speed == 1.0:
        return device
    scaled: dict[str, Any] = {}
    for name in ("peak_tflops", "peak_fp32_tflops", "peak_tf32_tflops", "peak_fp8_tflops",
                 "hbm_gb_s"):
        value = getattr(device, name)
        scaled[name] = None if value is None else value * speed
    return dataclasses.replace(device, name=f"{device.name}@{speed * 100:.4g}%", **scaled,
                               source=f"{SLOWED_SOURCE}{device.name} at {speed:.4g} of nominal "
                                      f"compute ({device.source})")


def apply_stragglers(cluster: Cluster, stragglers: list[Straggler], *,
                     prefix: str = "cluster.stragglers") -> Cluster:
    """The cluster with each straggler folded in (module docstring): whole slowed groups get a
    derived device and slower NICs, each slowed node becomes its own node group."""
    if not stragglers:
        return cluster
    devices = dict(cluster.devices)
    whole: dict[str, Straggler] = {}
    nodes: dict[str, dict[int, Straggler]] = {}
    names = {g.name for g in cluster.node_groups}
    for i, s in enumerate(stragglers):
        where = f"{prefix}[{i}]"
        if s.node_group not in names:
            raise InputError(f"unknown node group {s.node_group!r}; the groups are "
                             + ", ".join(sorted(names)), field=f"{where}.node_group")
        group = cluster.group(s.node_group)
        if group.max_gpus is not None:
            raise InputError(f"node group {group.name!r} has max_gpus set; a straggler in a "
                             "group with a rental cap is not supported",
                             field=f"{where}.node_group")
        if s.node is None:
            if s.node_group in whole:
                raise InputError(f"node group {s.node_group!r} is slowed twice",
                                 field=f"{where}.node_group")
            whole[s.node_group] = s
            continue
        if s.node >= group.num_nodes:
            raise InputError(f"node group {group.name!r} has {group.num_nodes} node(s) "
                             f"(0..{group.num_nodes - 1}), got {s.node}", field=f"{where}.node")
        if s.node in nodes.setdefault(s.node_group, {}):
            raise InputError(f"node {s.node} of {s.node_group!r} is slowed twice",
                             field=f"{where}.node")
        nodes[s.node_group][s.node] = s
    groups: list[NodeGroup] = []
    for g in cluster.node_groups:
        base = whole.get(g.name)
        slow_nodes = nodes.get(g.name, {})
        rest = g.num_nodes - len(slow_nodes)
        if rest:
            groups.append(_slowed_group(g, g.name, rest, [base], devices, prefix))
        for k in sorted(slow_nodes):
            name = f"{g.name}{NODE_SUFFIX}{k}"
            if name in names:
                raise InputError(f"the slowed node's group name {name!r} is taken by another "
                                 "node group; rename that group", field=prefix)
            groups.append(_slowed_group(g, name, 1, [base, slow_nodes[k]], devices, prefix))
    used = {g.device for g in groups}
    return dataclasses.replace(cluster, node_groups=tuple(groups),
                               devices={k: devices[k] for k in sorted(used)})


def node_renames(cluster: Cluster, stragglers: list[Straggler]) -> dict[tuple[str, int],
                                                                        tuple[str, int]]:
    """Where `apply_stragglers` puts each node of the groups it splits: (group, node) before ->
    (group, node) after (nodes of groups it does not split keep their place)."""
    slow: dict[str, set[int]] = {}
    for s in stragglers:
        if s.node is not None:
            slow.setdefault(s.node_group, set()).add(s.node)
    out: dict[tuple[str, int], tuple[str, int]] = {}
    for name, nodes in slow.items():
        rest = 0
        for k in range(cluster.group(name).num_nodes):
            if k in nodes:
                out[(name, k)] = (f"{name}{NODE_SUFFIX}{k}", 0)
            else:
                out[(name, k)] = (name, rest)
                rest += 1
    return out


def _slowed_group(g: NodeGroup, name: str, num_nodes: int, slow: list[Straggler | None],
                  devices: dict[str, DeviceType], field: str) -> NodeGroup:
    """`g` as `name` with `num_nodes` nodes at the product of the speeds in `slow`, its derived
    device added to `devices`. The derived device and NICs keep the lower limits of what an
    instance may declare (limits.MIN_TFLOPS, MIN_GB_S, MIN_GBIT_S: costs the solvers can hold);
    a straggler that slows them below is refused, naming `field`."""
    compute = network = 1.0
    for s in slow:
        if s is not None:
            compute *= s.compute_speed
            network *= s.network_speed
    try:
        device = slowed_device(devices[g.device], compute)
        slowed = dataclasses.replace(g, name=name, num_nodes=num_nodes, device=device.name,
                                     nic_gbit_s=g.nic_gbit_s * network)
    except ValueError as e:
        raise InputError(f"slows node group {g.name!r} below what a device or link may be "
                         f"({e})", field=field) from None
    taken = devices.get(device.name)
    if taken is not None and taken != device:
        raise InputError(f"slows node group {g.name!r} to a device named {device.name!r}, but "
                         "the instance defines another device of that name; rename that device "
                         "(a slowed device is named DEVICE@P%)", field=field)
    devices[device.name] = device
    return slowed
