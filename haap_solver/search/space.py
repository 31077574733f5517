"""The search space: stage configurations, micro-batch sizes, canonical placement, plan assembly.

A *stage configuration* is (node group, TP, DP, recomputation). The search only uses
node-aligned shapes (formulations/stage-assignment.md, Sec. 1): TP is a power of two dividing the
node size, and a stage's GPU count tp x dp is either a power of two dividing the node size (a
*sub-node* stage, placed on one node) or a multiple of the node size (a *whole-node* stage).
With such shapes, first-fit decreasing packs any selection whose GPU count fits a node group's
budget, so the budget is the only placement constraint the solver needs, and every cost term that
depends on placement (is the data-parallel ring inside one node?) is a function of the
configuration alone.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from haap_solver.cluster import NodeGroup
from haap_solver.instance import Instance
from haap_solver.plan import Placement, Plan, ReplicaGroup, Stage
from haap_solver.training import Recompute, Schedule


@dataclass(frozen=True, order=True)
class StageConfig:
    """How one stage is run: on which node group, with which TP and DP, and what it recomputes."""

    node_group: str
    device: str
    tp: int
    dp: int
    recompute: Recompute
    gpus_per_node: int

    @property
    def gpus(self) -> int:
        return self.tp * self.dp

    @property
    def single_node(self) -> bool:
        return self.gpus <= self.gpus_per_node

    def label(self) -> str:
        return f"{self.node_group}:tp{self.tp}xdp{self.dp}:{self.recompute}"


def _is_pow2(n: int) -> bool:
    return n >= 1 and (n & (n - 1)) == 0


def tp_candidates(instance: Instance, group: NodeGroup) -> list[int]:
    """Powers of two up to the node size and training.max_tp that divide heads, KV heads and FFN."""
    m = instance.model
    out = []
    t = 1
    while t <= min(group.gpus_per_node, instance.training.max_tp):
        if (group.gpus_per_node % t == 0 and m.num_attention_heads % t == 0
                and m.kv_heads % t == 0 and m.ffn_hidden_size % t == 0):
            out.append(t)
        t *= 2
    return out


def shape_allowed(group: NodeGroup, gpus: int) -> bool:
    """Node-aligned stage sizes: a power of two dividing the node size, or whole nodes."""
    gpn = group.gpus_per_node
    if gpus > group.num_gpus:
        return False
    if gpus <= gpn:
        return _is_pow2(gpus) and gpn % gpus == 0
    return gpus % gpn == 0


def stage_configs(instance: Instance, micro_batch: int) -> list[StageConfig]:
    """Every configuration a stage may take when the pipeline micro-batch is `micro_batch`."""
    t = instance.training
    out: list[StageConfig] = []
    for group in instance.cluster.node_groups:
        for tp in tp_candidates(instance, group):
            for dp in range(1, micro_batch + 1):
                if micro_batch % dp or micro_batch // dp > t.max_micro_batch_size:
                    continue
                if not shape_allowed(group, tp * dp):
                    continue
                for rc in t.recompute:
                    out.append(StageConfig(node_group=group.name, device=group.device, tp=tp,
                                           dp=dp, recompute=rc,
                                           gpus_per_node=group.gpus_per_node))
    return out


def micro_batch_candidates(instance: Instance) -> list[int]:
    """Pipeline micro-batch sizes b: divisors of the global batch for which some stage fits b."""
    big = instance.training.global_batch_size
    return [b for b in range(1, big + 1) if big % b == 0 and stage_configs(instance, b)]


def canonical_placement(instance: Instance,
                        configs: list[StageConfig]) -> list[tuple[Placement, ...]] | None:
    """Place stages on nodes: whole-node stages on fresh nodes, then sub-node stages first-fit
    decreasing. Returns one placement per stage, or None if a node group's budget is exceeded."""
    result: list[tuple[Placement, ...] | None] = [None] * len(configs)
    by_group: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(configs):
        by_group[c.node_group].append(i)
    for gname, idxs in by_group.items():
        group = instance.cluster.group(gname)
        gpn = group.gpus_per_node
        free = [gpn] * group.num_nodes
        next_node = 0
        for i in sorted(idxs, key=lambda k: (-configs[k].gpus, k)):
            c = configs[i]
            if not c.single_node:
                nodes = c.gpus // gpn
                if next_node + nodes > group.num_nodes:
                    return None
                per_node = gpn // c.tp
                result[i] = tuple(Placement(node=next_node + k, replicas=per_node)
                                  for k in range(nodes))
                for k in range(nodes):
                    free[next_node + k] = 0
                next_node += nodes
            else:
                for node in range(next_node, group.num_nodes):
                    if free[node] >= c.gpus:
                        free[node] -= c.gpus
                        result[i] = (Placement(node=node, replicas=c.dp),)
                        break
                else:
                    return None
    return [r for r in result if r is not None] if all(r is not None for r in result) else None


def build_plan(instance: Instance, configs: list[StageConfig], layers: list[int], *,
               micro_batch: int, schedule: Schedule, note: str = "") -> Plan | None:
    """Assemble the plan of a stage sequence with canonical placement (None if it does not fit)."""
    placements = canonical_placement(instance, configs)
    if placements is None:
        return None
    stages = []
    first = 0
    for c, n, pl in zip(configs, layers, placements, strict=True):
        stages.append(Stage(
            first_layer=first, num_layers=n, recompute=c.recompute,
            replicas=(ReplicaGroup(node_group=c.node_group, device=c.device, count=c.dp, tp=c.tp,
                                   micro_batch_share=micro_batch // c.dp, placement=pl),),
        ))
        first += n
    return Plan(instance=instance.name, schedule=schedule, micro_batch_size=micro_batch,
                num_micro_batches=instance.training.global_batch_size // micro_batch,
                stages=tuple(stages), note=note)
