"""Communication terms of a plan beyond the collectives' formulas (``comm``): the links a stage
uses (`Links`: its data-parallel ring, its side of a pipeline link), which collectives its
data-parallel and ZeRO traffic needs (`dp_traffic`), and how much of that overlaps compute.
docs/cost-model.md Sec. 6.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

from haap_solver.cluster import INTRA_NODE_LATENCY_US, NodeGroup
from haap_solver.cost import comm
from haap_solver.cost.efficiency import CostConstants
from haap_solver.instance import Instance
from haap_solver.plan import ReplicaGroup
from haap_solver.training import TrainingSpec


class _Terms(Protocol):
    """What the overlap rules read of a replica's terms (an evaluate.ReplicaTerms)."""

    @property
    def fwd_s(self) -> float: ...
    @property
    def bwd_s(self) -> float: ...
    @property
    def tp_fwd_s(self) -> float: ...
    @property
    def tp_bwd_s(self) -> float: ...
    @property
    def zero_fwd_s(self) -> float: ...
    @property
    def zero_bwd_s(self) -> float: ...
    @property
    def end_comm_s(self) -> float: ...
    @property
    def last_bucket_s(self) -> float: ...


def nic_users(replicas: tuple[ReplicaGroup, ...], node_group: str, node_size: int) -> int:
    """GPUs of a stage in node group `node_group` sharing one node's NICs, under the canonical
    placement (formulations Sec. 1: a sub-node stage packed on one node, a whole-node one
    filling its nodes): min(its GPUs there, node size), counting every replica group of the
    stage on that node group (a stage written as two identical replica groups shares the NICs
    as the one group it is; per group, the split bought each half a larger NIC share). A
    function of the configuration, never of where the replicas happen to sit: spreading a 2-GPU
    stage over two nodes would otherwise buy it a NIC per GPU that the search, which places
    stages canonically, cannot see (a plan outside the search's costs was 0.4% faster on a
    random instance, seed 2074). Spread placements are therefore costed as if packed, like the
    data-parallel ring (docs/cost-model.md Sec. 6.2)."""
    return min(sum(x.count * x.tp for x in replicas if x.node_group == node_group), node_size)


def p2p_signature(replicas: tuple[ReplicaGroup, ...]) -> tuple[tuple[str, str, int, int, int],
                                                                 ...]:
    """What a stage's point-to-point times depend on: each replica group's node group, device,
    TP degree, share and replica count (not its recomputation, nor where it sits: Sec. 6.2).
    The p2p caches are keyed by it, so stages that differ in nothing else share one computation."""
    return tuple((r.node_group, r.device, r.tp, r.micro_batch_share, r.count)
                 for r in replicas)


def _exposed(z: float, compute: float, overlap: float) -> float:
    """z - o min(z, compute) = max((1 - o) z, z - o compute): convex in the layer count; and
    compute + exposed has slope 1 or 1 - o >= 0 in compute, so a faster pass is never slower."""
    return z - overlap * min(z, compute)


def zero_exposed_s(terms: _Terms, constants: CostConstants) -> tuple[float, float]:
    """ZeRO traffic not hidden by prefetching, (forward, backward) per micro-batch (Sec. 6.4).

    Each pass's traffic overlaps that pass's own compute, so a faster device never makes a pass
    (hence a plan) slower: fwd + exposed_fwd is non-decreasing in fwd.
    """
    o = constants.zero3_overlap
    return (_exposed(terms.zero_fwd_s, terms.fwd_s + terms.tp_fwd_s, o),
            _exposed(terms.zero_bwd_s, terms.bwd_s + terms.tp_bwd_s, o))


def end_exposed_s(terms: _Terms, overlap: bool, window_share: float = 1.0) -> float:
    """Exposed end-of-iteration collective.

    Overlapped with the last micro-batch's backward, except its last bucket (Sec. 6.3). Under
    the interleaved schedule (`window_share` 1/v) only with the last chunk's backward, 1/v of
    it: the last chunk's gradients are final only then (the other chunks' earlier, so this is
    conservative), and it keeps a faster stage from ever making the plan slower (the pipeline
    term falls by at least 1/v of a stage's backward, Sec. 7.1).
    """
    if not overlap or terms.end_comm_s <= 0:
        return terms.end_comm_s
    return max(terms.end_comm_s - window_share * (terms.bwd_s + terms.tp_bwd_s),
               terms.last_bucket_s)


class DpTraffic(NamedTuple):
    """A replica's data-parallel and ZeRO collectives, before overlap (Sec. 6.3, 6.4)."""

    zero_fwd_s: float
    """ZeRO-3 weight all-gather of the forward pass, per micro-batch."""
    zero_bwd_s: float
    """ZeRO-2/3 backward traffic (ZeRO-3 weight all-gather, gradient reduce-scatter), per
    micro-batch."""
    end_comm_s: float
    """End-of-iteration gradient (ZeRO 0/1) or weight (ZeRO-2) collective."""
    last_bucket_s: float
    """The same collective for the last gradient bucket, which cannot overlap."""
    param_gather_s: float
    """Distributed optimizer's parameter all-gather after the step, when not overlapped."""


def dp_traffic(training: TrainingSpec, grad_bytes: float, weight_bytes: float,
               bucket_grad_bytes: float, bucket_weight_bytes: float, dp: int, gb_s: float,
               latency_s: float) -> DpTraffic:
    """The collectives of one replica's `grad_bytes` / `weight_bytes` over a ring of `dp` ranks
    (`gb_s`, `latency_s`: `Links.dp_ring`), by ZeRO stage. ZeRO-2 reduce-scatters gradients
    every micro-batch, ZeRO-3 also all-gathers the weights for forward and for backward; ZeRO
    0/1 reduce once per iteration."""
    def gather(nbytes: float) -> float:
        return comm.ring_allgather_s(nbytes, dp, gb_s, latency_s)

    if training.zero_stage == 1 and not training.overlap_param_gather:
        # Distributed optimizer (Sec. 6.3): the gradients' reduce-scatter overlaps the last
        # backward, the updated parameters' all-gather follows the step exposed.
        return DpTraffic(0.0, 0.0, gather(grad_bytes), gather(bucket_grad_bytes),
                         gather(weight_bytes))
    if training.zero_stage == 1:
        # Distributed optimizer with the all-gather overlapped: the pair, the gradients'
        # reduce-scatter and the (16-bit) parameters' all-gather, costed together; with 16-bit
        # gradients exactly one all-reduce (Sec. 6.3).
        return DpTraffic(0.0, 0.0, gather(grad_bytes) + gather(weight_bytes),
                         gather(bucket_grad_bytes) + gather(bucket_weight_bytes), 0.0)
    if training.zero_stage == 0:
        return DpTraffic(0.0, 0.0, comm.ring_allreduce_s(grad_bytes, dp, gb_s, latency_s),
                         comm.ring_allreduce_s(bucket_grad_bytes, dp, gb_s, latency_s), 0.0)
    if training.zero_stage == 2:
        return DpTraffic(0.0, gather(grad_bytes), gather(weight_bytes),
                         gather(bucket_weight_bytes), 0.0)
    weights = gather(weight_bytes)
    return DpTraffic(weights, weights + gather(grad_bytes), 0.0, 0.0, 0.0)


class Links:
    """Per-GPU links of an instance's cluster under a cost model's constants: a stage's
    data-parallel ring (Sec. 6.3) and one side of a pipeline link (Sec. 6.2). The links between
    two node groups are cached by the groups and their NIC sharing."""

    def __init__(self, instance: Instance, constants: CostConstants, per_seq_bytes: float):
        self.instance = instance
        self.constants = constants
        self.per_seq_bytes = per_seq_bytes
        """Bytes of one sequence's activations at a stage boundary (s h beta)."""
        self._group_links: dict[tuple[str, str, int | None, int | None],
                                tuple[float, float]] = {}

    def dp_ring(self, replicas: tuple[ReplicaGroup, ...]) -> tuple[float, float]:
        """(GB/s per GPU, latency s) of the ring joining a stage's replicas: NVLink/PCIe on one
        node, else the network among its node groups at each GPU's share of its node's NICs.

        A stage of at most a node's GPUs on one node group whose replicas sit on several nodes
        is never costed faster than on one node (the slower bandwidth and latency of the two):
        with two of its replicas on a node its ring has a hop over that node's NVLink/PCIe
        anyway, and a cost that rewarded spreading (a PCIe box beside fast NICs) would be
        invisible to the search, which places such a stage on one node unless the packing
        needs it spread (formulations Sec. 1.3). Conservative only for one replica a node."""
        nodes = {(r.node_group, p.node) for r in replicas for p in r.placement}
        dev = self.instance.device(replicas[0].device)
        # (its GPUs on one node, one rank per replica in each ring: across NVLink domains
        # where they outnumber one)
        own = (dev.link_gb_s(sum(r.count * r.tp for r in replicas),
                             ring=sum(r.count for r in replicas))
               * self.constants.intra_node_efficiency,
               INTRA_NODE_LATENCY_US * 1e-6)
        if len(nodes) == 1:
            return own
        groups = self._groups_of(replicas)
        net = self._network_link(groups, groups)
        if len({r.node_group for r in replicas}) == 1 and \
                sum(r.count * r.tp for r in replicas) <= groups[0].gpus_per_node:
            return min(net[0], own[0]), max(net[1], own[1])
        return net

    def p2p_side(self, replicas: tuple[ReplicaGroup, ...],
                 other: tuple[ReplicaGroup, ...]) -> float:
        """The slowest of a stage's replica groups `replicas` sending (or receiving) its share,
        split over its TP ranks, to/from a neighbouring stage with replica groups `other`
        (CostModel.p2p_side_s, which caches it; Sec. 6.2)."""
        groups_other = self._groups_of(other)
        names = {r.node_group for r in (*replicas, *other)}
        # (a group the objective search cut down to one node keeps its sends on the network,
        # as on the whole cluster: Cluster.cut_from_several_nodes)
        one_node = len(names) == 1 and groups_other[0].num_nodes == 1 and \
            groups_other[0].name not in self.instance.cluster.cut_from_several_nodes
        worst = 0.0
        for r in replicas:
            if one_node:
                node = groups_other[0].gpus_per_node
                gb_s = (min(self.instance.device(x.device).send_gb_s(node)
                            for x in (*replicas, *other)) * self.constants.intra_node_efficiency)
                lat = INTRA_NODE_LATENCY_US * 1e-6
            else:
                group = self.instance.cluster.group(r.node_group)
                gb_s, lat = self._network_link([group], groups_other,
                                               users_a=nic_users(replicas, r.node_group,
                                                                 group.gpus_per_node),
                                               users_b=1)
            worst = max(worst, comm.p2p_s(r.micro_batch_share * self.per_seq_bytes / r.tp,
                                          gb_s, lat))
        return worst

    def _groups_of(self, replicas: tuple[ReplicaGroup, ...]) -> list[NodeGroup]:
        cluster = self.instance.cluster
        return [cluster.group(r.node_group) for r in replicas]

    def _network_link(self, a: list[NodeGroup], b: list[NodeGroup], users_a: int | None = None,
                      users_b: int | None = None) -> tuple[float, float]:
        """(GB/s per GPU, latency s) between GPUs of groups `a` and `b`, the slowest pair, with
        `users_a` / `users_b` GPUs per node sharing the NICs (None: the whole node)."""
        links = [self._group_link(x, y, users_a, users_b) for x in a for y in b]
        gb_s = min(gb for gb, _ in links)
        lat = max(lat for _, lat in links)
        return gb_s * self.constants.network_efficiency, lat

    def _group_link(self, a: NodeGroup, b: NodeGroup, users_a: int | None = None,
                    users_b: int | None = None) -> tuple[float, float]:
        """(GB/s, latency s) between a GPU of `a` and one of `b`, before network efficiency."""
        key = (a.name, b.name, users_a, users_b)
        hit = self._group_links.get(key)
        if hit is None:
            cluster = self.instance.cluster
            hit = self._group_links[key] = (cluster.link_gb_s(a, b, users_a, users_b),
                                            cluster.link_latency_s(a, b))
        return hit
