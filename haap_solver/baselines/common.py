"""Shared machinery of the baselines: GPU orderings, stage slicing, memory caps, results.

The heuristic baselines lay the cluster's GPUs out in one line (node group after node group, node
after node) and give each pipeline stage a contiguous slice of that line. A slice may cross from
one node group into the next: the stage is then *mixed* (one replica group per node group, each
with its own per-replica share of the micro-batch), which the plan format supports. Tensor
parallelism stays inside a node: a slice can use TP degree t only if every node's part of the slice
is a multiple of t GPUs.
"""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from haap_solver.cost.evaluate import CostModel, Evaluation
from haap_solver.instance import Instance
from haap_solver.parallelism import node_aligned_tps
from haap_solver.plan import Placement, Plan, ReplicaGroup, Stage
from haap_solver.result import SolveResult
from haap_solver.validate import check_plan, plan_violations

CHEAPEST_FIRST = ("none", "selective", "full")


def recompute_order(instance: Instance) -> list[str]:
    """Allowed recomputation modes, cheapest (least recomputed work) first."""
    allowed = instance.training.recompute
    return [r for r in CHEAPEST_FIRST if r in allowed]


@dataclass(frozen=True)
class GpuLine:
    """The cluster's nodes in one order; GPU k of the line is on node `node_of(k)`."""

    nodes: tuple[tuple[str, str, int, int], ...]
    """(node group, device, node index inside the group, GPUs on the node), in line order."""
    offsets: tuple[int, ...]
    """Index of each node's first GPU in the line (plus the total at the end)."""

    @property
    def num_gpus(self) -> int:
        return self.offsets[-1]

    def slice(self, start: int, size: int, tp: int) -> tuple[ReplicaGroup, ...] | None:
        """Replica groups (share 0, to be set) of GPUs [start, start+size) at TP `tp`.

        None when some node's part of the slice is not a multiple of `tp`.
        """
        if size <= 0 or start + size > self.num_gpus:
            return None
        end = start + size
        k = bisect.bisect_right(self.offsets, start) - 1
        per_group: dict[str, tuple[str, list[Placement]]] = {}
        while k < len(self.nodes) and self.offsets[k] < end:
            group, device, node, _ = self.nodes[k]
            lo, hi = max(start, self.offsets[k]), min(end, self.offsets[k + 1])
            n = hi - lo
            if n % tp:
                return None
            per_group.setdefault(group, (device, []))[1].append(
                Placement(node=node, replicas=n // tp))
            k += 1
        return tuple(ReplicaGroup(node_group=g, device=dev, count=sum(p.replicas for p in pls),
                                  tp=tp, micro_batch_share=0, placement=tuple(pls))
                     for g, (dev, pls) in per_group.items())


def gpu_line(instance: Instance, order: Sequence[str] | None = None) -> GpuLine:
    """The GPUs in node-group order (`order` names the groups; default: the instance's order)."""
    groups = {g.name: g for g in instance.cluster.node_groups}
    names = list(order) if order is not None else list(groups)
    nodes = []
    offsets = [0]
    for name in names:
        g = groups[name]
        for node in range(g.num_nodes):
            nodes.append((g.name, g.device, node, g.gpus_per_node))
            offsets.append(offsets[-1] + g.gpus_per_node)
    return GpuLine(nodes=tuple(nodes), offsets=tuple(offsets))


def legal_tps(instance: Instance) -> dict[str, list[int]]:
    """TP degrees each node group allows the baselines: powers of two dividing the node size and
    the model dims. Unlike the exact search's (`tp_candidates`), the degree divides the node size
    (and is a power of two, as Megatron-LM users choose it): Megatron-LM lays ranks out TP-
    innermost, so on 3-GPU nodes a TP-2 group would cross nodes."""
    return {g.name: node_aligned_tps(instance, g) for g in instance.cluster.node_groups}


def tp_ok(replicas: Iterable[ReplicaGroup], tps: dict[str, list[int]]) -> bool:
    return all(r.tp in tps[r.node_group] for r in replicas)


def with_shares(replicas: tuple[ReplicaGroup, ...],
                shares: Sequence[int]) -> tuple[ReplicaGroup, ...]:
    return tuple(ReplicaGroup(node_group=r.node_group, device=r.device, count=r.count, tp=r.tp,
                              micro_batch_share=s, placement=r.placement)
                 for r, s in zip(replicas, shares, strict=True))


def layer_time(cm: CostModel, r: ReplicaGroup, recompute: str) -> float:
    """Forward + backward time of one layer for one micro-batch share on replica group `r`."""
    c = cm.layer_cost(r.device, r.tp, r.micro_batch_share, recompute)
    return c.fwd_s + c.bwd_s + c.tp_fwd_s + c.tp_bwd_s


def stage_layer_time(cm: CostModel, replicas: Sequence[ReplicaGroup], recompute: str) -> float:
    """Per-layer time of a stage: its slowest replica group sets the pace."""
    return max(layer_time(cm, r, recompute) for r in replicas)


def max_layers_fit(cm: CostModel, replicas: Sequence[ReplicaGroup], recompute: str, index: int,
                   num_stages: int, schedule: str, num_micro_batches: int, limit: int) -> int:
    """Largest layer count (<= limit) whose memory fits every replica of the stage (-1: none)."""
    in_flight, emb, head = cm.in_flight(schedule, index, num_stages, num_micro_batches)
    dp = sum(r.count for r in replicas)
    first, last = index == 0, index == num_stages - 1

    def fits(n: int) -> bool:
        params = cm.params_held(n, first, last, num_stages > 1)
        return all(cm.replica_memory(device=r.device, tp=r.tp, share=r.micro_batch_share, dp=dp,
                                     num_layers=n, recompute=recompute, params=params,
                                     is_first=first, is_last=last, in_flight=in_flight,
                                     in_flight_first=emb, in_flight_last=head).fits
                   for r in replicas)

    if not fits(0):
        return -1
    lo, hi = 0, limit  # memory is increasing in n: binary search the last n that fits
    if fits(hi):
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def memory_headroom(cm: CostModel, replicas: Sequence[ReplicaGroup], recompute: str, index: int,
                    num_stages: int, schedule: str, num_micro_batches: int, layers: int) -> float:
    """Smallest (capacity - need) / capacity over the stage's replica groups at `layers` layers."""
    in_flight, emb, head = cm.in_flight(schedule, index, num_stages, num_micro_batches)
    dp = sum(r.count for r in replicas)
    first, last = index == 0, index == num_stages - 1
    params = cm.params_held(layers, first, last, num_stages > 1)
    worst = math.inf
    for r in replicas:
        mem = cm.replica_memory(device=r.device, tp=r.tp, share=r.micro_batch_share, dp=dp,
                                num_layers=layers, recompute=recompute, params=params,
                                is_first=first, is_last=last, in_flight=in_flight,
                                in_flight_first=emb, in_flight_last=head)
        worst = min(worst, (mem.capacity - mem.total) / mem.capacity)
    return worst


def proportional_split(total: int, speeds: Sequence[float],
                       caps: Sequence[int]) -> list[int] | None:
    """Split `total` layers in proportion to `speeds` (each stage >= 1), then repair for memory.

    Largest-remainder rounding of the proportional split; stages above their memory cap give their
    excess to the stage with the most spare capacity relative to its speed. None if the caps
    cannot hold `total` layers with at least one per stage.
    """
    p = len(speeds)
    if p > total or any(c < 1 for c in caps) or sum(caps) < total:
        return None
    s = sum(speeds)
    raw = [total * v / s for v in speeds]
    n = [max(1, int(x)) for x in raw]
    while sum(n) > total:  # the max(1, .) floors may overshoot
        k = max((i for i in range(p) if n[i] > 1), key=lambda i: n[i] - raw[i])
        n[k] -= 1
    rest = sorted(range(p), key=lambda i: raw[i] - n[i], reverse=True)
    i = 0
    while sum(n) < total:
        n[rest[i % p]] += 1
        i += 1
    # Memory repair: move layers off stages over their cap, onto the stage that will be least
    # loaded (relative to its speed) after taking one more.
    excess = sum(max(0, n[k] - caps[k]) for k in range(p))
    for k in range(p):
        n[k] = min(n[k], caps[k])
    for _ in range(excess):
        room = [k for k in range(p) if n[k] < caps[k]]
        if not room:
            return None
        k = min(room, key=lambda j: (n[j] + 1) / speeds[j])
        n[k] += 1
    return n


def make_plan(instance: Instance, stages: Sequence[tuple[tuple[ReplicaGroup, ...], str]],
              layers: Sequence[int], *, micro_batch: int, schedule: str, note: str) -> Plan:
    out = []
    first = 0
    for (replicas, rc), n in zip(stages, layers, strict=True):
        out.append(Stage(first_layer=first, num_layers=n, recompute=rc,  # type: ignore[arg-type]
                         replicas=replicas))
        first += n
    return Plan(instance=instance.name, schedule=schedule,  # type: ignore[arg-type]
                micro_batch_size=micro_batch,
                num_micro_batches=instance.training.global_batch_size // micro_batch,
                stages=tuple(out), note=note)


class Best:
    """The best plan a baseline has costed so far, and how many it costed."""

    def __init__(self, cm: CostModel, time_limit_s: float):
        self.cm = cm
        self.start = time.perf_counter()
        self.deadline = self.start + time_limit_s
        self.plan: Plan | None = None
        self.evaluation: Evaluation | None = None
        self.time = math.inf
        self.costed = 0
        self.timed_out = False
        self.info: dict[str, object] = {}

    def out_of_time(self) -> bool:
        if time.perf_counter() > self.deadline:
            self.timed_out = True
        return self.timed_out

    def offer(self, plan: Plan, **info: object) -> Evaluation | None:
        """Cost `plan`; keep it if memory fits and it is the fastest so far."""
        ev = self.cm.evaluate(plan)
        self.costed += 1
        if not ev.memory_ok:
            return None
        if plan.schedule == "interleaved-1f1b" and plan_violations(self.cm.instance, plan,
                                                                   cost_model=self.cm):
            return None  # (its rules, cost model Sec. 7.1: an even split rarely keeps them)
        if ev.iteration_time_s < self.time:
            self.time, self.plan, self.evaluation = ev.iteration_time_s, plan, ev
            self.info = dict(info)
        return ev

    def keep(self, plan: Plan, ev: Evaluation, **info: object) -> None:
        """Keep a plan costed elsewhere (by `offer` of another Best, or a move that kept memory
        and the schedule's rules) if it is the fastest so far."""
        if ev.memory_ok and ev.iteration_time_s < self.time:
            self.time, self.plan, self.evaluation = ev.iteration_time_s, plan, ev
            self.info = dict(info)

    def result(self, instance: Instance, method: str, *, exact: bool = False,
               message: str = "") -> SolveResult:
        wall = time.perf_counter() - self.start
        if self.plan is None:
            why = "time limit reached before any plan was found" if self.timed_out else \
                "no plan of this method fits the cluster's memory"
            return SolveResult(instance=instance.name, method=method, plan=None, evaluation=None,
                               status="unknown" if self.timed_out else "infeasible",
                               iteration_time_s=math.inf, best_bound_s=math.nan, gap=math.nan,
                               wall_s=wall, plans_costed=self.costed,
                               message=message or why)
        # Every plan a method returns passes the one validator.
        check_plan(instance, self.plan, cost_model=self.cm)
        ev = self.evaluation
        assert ev is not None
        optimal = exact and not self.timed_out
        if self.timed_out:
            message = (message + "; " if message else "") + "time limit reached"
        return SolveResult(instance=instance.name, method=method, plan=self.plan, evaluation=ev,
                           status="optimal" if optimal else "feasible",
                           iteration_time_s=ev.iteration_time_s,
                           best_bound_s=ev.iteration_time_s if optimal else math.nan,
                           gap=0.0 if optimal else math.nan, wall_s=wall,
                           plans_costed=self.costed, options={"choice": self.info},
                           message=message)


def proportional_layers(cm: CostModel, stages: Sequence[Sequence[ReplicaGroup]], recompute: str,
                        schedule: str, num_micro_batches: int) -> list[int] | None:
    """Layers split in proportion to each stage's speed under `recompute`, capped by what fits
    each stage's memory at its position (None when the caps cannot hold every layer)."""
    L = cm.model.num_layers
    pp = len(stages)
    speeds = [1.0 / stage_layer_time(cm, reps, recompute) for reps in stages]
    caps = [max_layers_fit(cm, reps, recompute, k, pp, schedule, num_micro_batches, L)
            for k, reps in enumerate(stages)]
    return proportional_split(L, speeds, caps)

