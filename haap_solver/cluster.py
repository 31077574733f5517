"""Heterogeneous cluster: node groups of one device type each, with their network class."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from haap_solver import limits
from haap_solver._fields import Length, Range, check_ranges, require, require_name
from haap_solver.devices import DeviceType

NicKind = Literal["infiniband", "roce", "ethernet"]

# Per-message latency (alpha) of one hop, microseconds. Typical published figures for RDMA
# fabrics (a few us) and kernel TCP over Ethernet (tens of us); override per node group.
DEFAULT_NIC_LATENCY_US: dict[str, float] = {"infiniband": 5.0, "roce": 8.0, "ethernet": 30.0}
INTRA_NODE_LATENCY_US = 5.0


@dataclass(frozen=True, kw_only=True)
class NodeGroup:
    """`num_nodes` identical nodes, each with `gpus_per_node` GPUs of one type and the same NICs."""

    name: str
    """Identifier used by plans (``replicas[].node_group``)."""
    device: str
    """Device type name: a preset (see ``haap_solver.devices``) or one defined in ``[devices]``."""
    num_nodes: Annotated[int, Range(1, limits.MAX_NODES)]
    """Number of nodes in the group."""
    gpus_per_node: Annotated[int, Range(1, limits.MAX_TP)]
    """GPUs in each node; tensor parallelism never spans nodes."""
    nic: NicKind = "infiniband"
    """NIC class; traffic between groups of different classes crosses the cross-class fabric."""
    nic_gbit_s: Annotated[float, Range(limits.MIN_GBIT_S, limits.MAX_GBIT_S)]
    """Line rate of one NIC, Gbit/s (HDR InfiniBand: 200)."""
    nics_per_node: Annotated[int, Range(1, limits.MAX_TP)] = 1
    """NICs in each node; the node's network bandwidth is shared evenly by its GPUs."""
    nic_latency_us: Annotated[float | None, Range(0, limits.MAX_LATENCY_US)] = None
    """Per-message latency of this network, us; None takes the class default."""
    price_per_gpu_hour: Annotated[float | None,
                                  Range(0, limits.MAX_PRICE_PER_GPU_HOUR,
                                        min_exclusive=True)] = None
    """What one GPU of this group costs for one hour, in any currency (the same for every group;
    costs are reported in it). A node is rented whole: a plan that touches a node pays for all
    its GPUs (formulations/objectives.md). None: no price (needed by the cost objectives)."""
    max_gpus: Annotated[int | None, Range(1, limits.MAX_GPUS)] = None
    """Most GPUs of this group a plan may rent, a multiple of `gpus_per_node` (nodes are rented
    whole) and at most the group's GPUs; None: all of them."""

    def __post_init__(self) -> None:
        require_name(self.name, "name")
        check_ranges(self)
        if self.max_gpus is not None:
            require(self.max_gpus % self.gpus_per_node == 0, "max_gpus",
                    f"must be a multiple of gpus_per_node ({self.gpus_per_node}: nodes are "
                    f"rented whole), got {self.max_gpus}")
            require(self.max_gpus <= self.num_gpus, "max_gpus",
                    f"must be at most the group's {self.num_gpus} GPUs "
                    f"({self.num_nodes} node(s) x {self.gpus_per_node}), got {self.max_gpus}")

    @property
    def max_nodes(self) -> int:
        """Nodes a plan may rent (`max_gpus` in whole nodes, or all)."""
        return self.num_nodes if self.max_gpus is None else self.max_gpus // self.gpus_per_node

    @property
    def num_gpus(self) -> int:
        return self.num_nodes * self.gpus_per_node

    @property
    def latency_s(self) -> float:
        us = self.nic_latency_us if self.nic_latency_us is not None else DEFAULT_NIC_LATENCY_US[
            self.nic]
        return us * 1e-6

    @property
    def nic_gb_s_per_gpu(self) -> float:
        """Network bandwidth one GPU gets when all GPUs of the node communicate at once, GB/s."""
        return self.nic_gbit_s * self.nics_per_node / 8.0 / self.gpus_per_node

    def nic_gb_s_per_gpu_among(self, users: int, line_gbit_s: float | None = None) -> float:
        """Network bandwidth one GPU gets when `users` GPUs of its node share the NICs, GB/s
        (docs/cost-model.md Sec. 6.1).

        The node's NICs are shared evenly by the GPUs that use them, but one GPU reaches at most
        max(1, nics / gpus_per_node) NICs: on rail-optimised nodes each GPU sits behind its own
        NIC's PCIe switch, so the NICs of idle GPUs do not add to it. `users` is clamped to
        1..gpus_per_node; with every GPU of the node communicating this is `nic_gb_s_per_gpu`.
        `line_gbit_s` replaces the NIC line rate (a cap on traffic between NIC classes).
        """
        users = min(max(users, 1), self.gpus_per_node)
        nics = min(self.nics_per_node / users, max(1.0, self.nics_per_node / self.gpus_per_node))
        rate = self.nic_gbit_s if line_gbit_s is None else min(self.nic_gbit_s, line_gbit_s)
        return rate * nics / 8.0


@dataclass(frozen=True, kw_only=True)
class Cluster:
    """All node groups, plus the speed of the fabric that joins different NIC classes."""

    node_groups: Annotated[tuple[NodeGroup, ...],
                           Length(max=limits.MAX_NODE_GROUPS, what="node groups")]
    """The node groups (at least one; names unique)."""
    cross_class_gbit_s: Annotated[float | None,
                                  Range(limits.MIN_GBIT_S, limits.MAX_GBIT_S)] = None
    """Per-NIC line rate for traffic between NIC classes, Gbit/s; None means the slower side's."""
    devices: dict[str, DeviceType] = field(default_factory=dict)
    """Device type of every group, by name (filled by the instance loader)."""
    cut_from_several_nodes: frozenset[str] = frozenset()
    """Node groups of one node here that have several on the cluster the plans are costed on:
    the objective search's sub-clusters (formulations/objectives.md Sec. 2) cut a group down to
    its first nodes, and a plan of a sub-cluster must cost what it costs on the whole cluster,
    where two stages of a multi-node group send over the network (docs/cost-model.md Sec. 6.2),
    not over the one node's NVLink/PCIe. Set by code only (no key of instance files)."""

    def __post_init__(self) -> None:
        require(len(self.node_groups) >= 1, "node_groups", "needs at least one node group")
        check_ranges(self)
        seen: set[str] = set()
        for i, g in enumerate(self.node_groups):
            require(g.name not in seen, f"node_groups[{i}].name", f"duplicate name {g.name!r}")
            seen.add(g.name)
        require(self.num_gpus <= limits.MAX_GPUS, "node_groups",
                f"hold {self.num_gpus:,} GPUs; a cluster has at most {limits.MAX_GPUS:,}")

    def group(self, name: str) -> NodeGroup:
        """The node group named `name` (KeyError if none). By a name index built once: the
        search asks it for every part of every mixed candidate, and a scan cost a cluster of
        1,024 one-GPU groups most of its set-up."""
        index = self.__dict__.get("_by_name")
        if index is None:
            index = {g.name: g for g in self.node_groups}
            object.__setattr__(self, "_by_name", index)  # (a cache on a frozen dataclass)
        return index[name]

    @property
    def num_gpus(self) -> int:
        return sum(g.num_gpus for g in self.node_groups)

    def device_of(self, group: NodeGroup) -> DeviceType:
        return self.devices[group.device]

    def link_gb_s(self, a: NodeGroup, b: NodeGroup, users_a: int | None = None,
                  users_b: int | None = None) -> float:
        """Per-GPU bandwidth of inter-node traffic between a GPU of `a` and one of `b`, GB/s,
        when `users_a` GPUs of the first GPU's node and `users_b` of the second's share their
        NICs (None: every GPU of the node)."""
        line = (None if a.nic == b.nic or self.cross_class_gbit_s is None
                else self.cross_class_gbit_s)
        share_a = a.nic_gb_s_per_gpu_among(a.gpus_per_node if users_a is None else users_a, line)
        share_b = b.nic_gb_s_per_gpu_among(b.gpus_per_node if users_b is None else users_b, line)
        return min(share_a, share_b)

    def link_latency_s(self, a: NodeGroup, b: NodeGroup) -> float:
        return max(a.latency_s, b.latency_s)
