"""The previous plan, repaired to a changed instance: the Planner's first incumbent.

A plan found by the search is a sequence of stage configurations with a layer split, placed the
canonical way (space.build_plan). On the changed instance the same sequence is placed again;
where a node group lost nodes and the sequence no longer fits it, the stages on that group give
up data-parallel replicas (largest stage first, to the next smaller replica count the space
allows) until it fits. The result counts as an incumbent only where it lies in the search space
of the changed instance (every configuration one the space has, its schedule one searched, no
stage without layers: Sec. 1.2 restricts those): its time then bounds
the optimum over that space from above, so that a warm solve's proven optimum is a cold one's.
It must also pass the validator (memory) like every plan.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Callable

from haap_solver.cost.evaluate import Evaluation
from haap_solver.costing import evaluate
from haap_solver.errors import HaapError
from haap_solver.instance import Instance
from haap_solver.plan import Placement, Plan, ReplicaGroup, Stage
from haap_solver.search.space import (
    ReplicaPart,
    StageConfig,
    build_plan,
    canonical_placement,
    mixed_config,
    stage_configs,
)
from haap_solver.search.state import SearchState
from haap_solver.training import SEARCHED_SCHEDULES, Schedule


def renamed_plan(plan: Plan, renames: dict[tuple[str, int], tuple[str, int]],
                 instance: Instance) -> Plan:
    """`plan` with its nodes where `renames` moved them (a slowed node now its own node group):
    a replica group whose nodes land in several groups becomes one replica group per group,
    each with the device of its new group. Not validated (the repair and the migration count
    read it)."""
    if not renames:
        return plan
    stages = []
    for stage in plan.stages:
        groups: list[ReplicaGroup] = []
        for r in stage.replicas:
            by_group: dict[str, list[Placement]] = {}
            for p in r.placement:
                name, node = renames.get((r.node_group, p.node), (r.node_group, p.node))
                by_group.setdefault(name, []).append(Placement(node=node, replicas=p.replicas))
            for name, placement in by_group.items():
                device = (instance.cluster.group(name).device
                          if name in {g.name for g in instance.cluster.node_groups} else r.device)
                groups.append(dataclasses.replace(
                    r, node_group=name, device=device, placement=tuple(placement),
                    count=sum(p.replicas for p in placement)))
        stages.append(dataclasses.replace(stage, replicas=tuple(groups)))
    return dataclasses.replace(plan, stages=tuple(stages))


def stage_config_of(instance: Instance, stage: Stage, micro_batch: int) -> StageConfig | None:
    """The configuration that runs `stage` on `instance` (None where a node group it uses is
    gone or has another device or node size)."""
    order = {g.name: k for k, g in enumerate(instance.cluster.node_groups)}
    parts = []
    for r in stage.replicas:
        if r.node_group not in order:
            return None
        g = instance.cluster.group(r.node_group)
        if g.device != r.device:
            return None
        parts.append(ReplicaPart(node_group=g.name, device=g.device, tp=r.tp, count=r.count,
                                 share=r.micro_batch_share, gpus_per_node=g.gpus_per_node))
    if len(parts) == 2 and parts[0].node_group == parts[1].node_group \
            and parts[0].tp == parts[1].tp:
        # An uneven stage (Sec. 1) where its shares are those the space gives its replicas.
        dp = parts[0].count + parts[1].count
        uneven = StageConfig(node_group=parts[0].node_group, device=parts[0].device,
                             tp=parts[0].tp, dp=dp, recompute=stage.recompute,
                             gpus_per_node=parts[0].gpus_per_node, uneven=True,
                             spread=sum(x.gpus for x in parts) <= parts[0].gpus_per_node
                             and len({pl.node for r in stage.replicas
                                      for pl in r.placement}) > 1)
        if micro_batch % dp and sorted(uneven.replica_parts(micro_batch)) == sorted(parts):
            return uneven
    if len(parts) == 1:
        (p,) = parts
        if p.share * p.count != micro_batch:
            return None
        # A stage of at most a node on several nodes is a spread one (Sec. 1.3).
        spread = p.gpus <= p.gpus_per_node and len(stage.replicas[0].placement) > 1
        return StageConfig(node_group=p.node_group, device=p.device, tp=p.tp, dp=p.count,
                           recompute=stage.recompute, gpus_per_node=p.gpus_per_node,
                           spread=spread)
    return mixed_config(tuple(sorted(parts, key=lambda p: order[p.node_group])), stage.recompute)


def plan_configs(instance: Instance, plan: Plan) -> list[StageConfig] | None:
    """The configuration of each of `plan`'s stages on `instance` (stage_config_of), or None
    where some stage has none."""
    configs: list[StageConfig] = []
    for stage in plan.stages:
        c = stage_config_of(instance, stage, plan.micro_batch_size)
        if c is None:
            return None
        configs.append(c)
    return configs


def repaired_plan(state: SearchState, plan: Plan, *, mixed: bool) -> tuple[Plan, Evaluation] | None:
    """`plan` repaired to `state`'s instance (module docstring) with its evaluation, or None
    where it cannot be repaired into the search space."""
    instance = state.instance
    b = plan.micro_batch_size
    t = instance.training
    if instance.training.global_batch_size % b or plan.schedule not in t.schedules \
            or plan.schedule not in SEARCHED_SCHEDULES:
        return None
    layers = [s.num_layers for s in plan.stages]
    if sum(layers) != instance.model.num_layers or 0 in layers:
        return None  # (an empty end stage's configurations are restricted: not repaired)
    found = plan_configs(instance, plan)
    if found is None:
        return None
    single = set(stage_configs(instance, b))
    # A spread stage outside the space here (Sec. 1.3: no size needs the packing rows, or the
    # ring rule) is repaired as its twin on one node.
    configs = [dataclasses.replace(c, spread=False)
               if c.spread and (c not in single or not state.cache.spread_allowed(c, b)) else c
               for c in found]
    mixed_space = set(state.mixed_space(b)) if mixed and any(c.mixed for c in configs) else set()
    configs = [_as_single(c) if c.mixed and c not in mixed_space else c for c in configs]
    fitted = _fit_to_groups(instance, configs, b, single,
                            lambda cs: _time_of(instance, cs, layers, b, plan.schedule))
    if fitted is None:
        return None
    if any(c not in (mixed_space if c.mixed else single) for c in fitted):
        return None
    repaired = build_plan(instance, fitted, layers, micro_batch=b, schedule=plan.schedule,
                          note=f"{plan.note} (repaired)" if plan.note else "repaired")
    if repaired is None:
        return None
    try:
        return repaired, evaluate(instance, repaired)
    except HaapError:
        return None  # e.g. a shrunk stage's larger share no longer fits memory


def _time_of(instance: Instance, configs: list[StageConfig], layers: list[int],
             micro_batch: int, schedule: Schedule) -> float:
    """evaluate()'s time of the stage sequence `configs` with `layers`, placed the canonical way
    (inf where it is no valid plan)."""
    plan = build_plan(instance, configs, layers, micro_batch=micro_batch, schedule=schedule)
    if plan is None:
        return math.inf
    try:
        return evaluate(instance, plan).iteration_time_s
    except HaapError:
        return math.inf


def _as_single(c: StageConfig) -> StageConfig:
    """A mixed stage outside the space (a stage that spanned a node now slowed, `renamed_plan`)
    as a single-type stage of all its replicas on its largest part's group, where its parts
    share one TP degree; the fitting then gives up the replicas that group lacks."""
    parts = c.parts
    if len({p.tp for p in parts}) != 1:
        return c
    main = max(parts, key=lambda p: (p.count, p.node_group))
    return StageConfig(node_group=main.node_group, device=main.device, tp=main.tp,
                       dp=sum(p.count for p in parts), recompute=c.recompute,
                       gpus_per_node=main.gpus_per_node)


def _fit_to_groups(instance: Instance, configs: list[StageConfig], micro_batch: int,
                   single: set[StageConfig],
                   score: Callable[[list[StageConfig]], float] | None = None
                   ) -> list[StageConfig] | None:
    """`configs`, with stages on over-full node groups shrunk until the canonical placement
    fits (None where no shrinking makes it fit). With `score` (a sequence's time, inf where it
    has none), the last shrink is the one among those that make it fit that `score` rates
    fastest (`_best_fitting_shrink`)."""
    configs = list(configs)
    for _ in range(sum(c.dp for c in configs) + 1):
        if canonical_placement(instance, configs) is not None:
            return configs
        used: Counter[str] = Counter()
        for c in configs:
            for g in c.groups:
                used[g] += c.gpus_in(g)
        over = [g for g in instance.cluster.node_groups if used[g.name] > g.num_gpus]
        if not over:
            return None  # fits by count but not by nodes: no repair tried
        best = _best_fitting_shrink(instance, configs, over[0].name, single, score) \
            if score is not None else None
        if best is not None:
            return best
        shrunk = _shrink_one(configs, over[0].name, micro_batch, single)
        if shrunk is None:
            return None
        configs = shrunk
    return None


def _best_fitting_shrink(instance: Instance, configs: list[StageConfig], group: str,
                         single: set[StageConfig],
                         score: Callable[[list[StageConfig]], float]
                         ) -> list[StageConfig] | None:
    """Among the ways one single-type stage on `group` can give up GPUs (any stage; the largest
    smaller replica count, or TP degree, the space has) that make the sequence fit the
    cluster, the one `score` rates fastest; None where no single shrink makes it fit. The
    largest-stage-first rule (`_shrink_one`) often shrinks the stage whose GPUs matter most: on
    the 1,024-GPU trace (2026-12-03), after one H100 node of 64 was lost, it repaired a 1.983 s
    plan to 3.356 s (2.796 s rebalanced), this to 2.058 s; after the third H100 node, 2.821 s
    rebalanced against 2.432 s."""
    best: tuple[float, list[StageConfig]] | None = None
    for i, c in enumerate(configs):
        if c.mixed or c.node_group != group:
            continue
        # Fewer replicas, or the same replicas at a smaller TP degree (where the space has only
        # half the replicas, as when they must divide the micro-batch, the latter loses less).
        # For each, the largest that fits: fewer GPUs of the same kind only run slower.
        for shrinks in ([dataclasses.replace(c, dp=dp) for dp in range(c.dp - 1, 0, -1)],
                        [dataclasses.replace(c, tp=tp) for tp in range(c.tp - 1, 0, -1)]):
            for smaller in shrinks:
                if smaller not in single:
                    continue
                candidate = [*configs[:i], smaller, *configs[i + 1:]]
                if canonical_placement(instance, candidate) is None:
                    continue
                t = score(candidate)
                if best is None or t < best[0]:
                    best = (t, candidate)
                break
    return None if best is None or not math.isfinite(best[0]) else best[1]


def _shrink_one(configs: list[StageConfig], group: str, micro_batch: int,
                single: set[StageConfig]) -> list[StageConfig] | None:
    """`configs` with the largest single-type stage on `group` that can lose replicas given the
    next smaller replica count the space has (None where none can)."""
    for i in sorted((k for k, c in enumerate(configs)
                     if not c.mixed and c.node_group == group),
                    key=lambda k: (-configs[k].gpus, k)):
        c = configs[i]
        for dp in range(c.dp - 1, 0, -1):
            smaller = dataclasses.replace(c, dp=dp)
            if smaller in single:
                return [*configs[:i], smaller, *configs[i + 1:]]
    return None


EXACT_SPLIT_SCHEDULES = ("1f1b", "gpipe")
"""The schedules whose layer split `dp.best_layer_split` gives exactly for any stage count
(the interleaved schedule's layers per stage follow its chunks, Sec. 1.4)."""


def rebalanced(instance: Instance, plan: Plan, ev: Evaluation, *,
               state: SearchState | None = None,
               max_moves: int = 200) -> tuple[Plan, Evaluation]:
    """`plan` with its layers re-split where that lowers evaluate()'s time: a repaired plan
    whose stages lost GPUs keeps its old split, and a better incumbent prunes more. With
    `state` (of `instance`), a 1F1B or GPipe plan whose stages are configurations of the space
    gets the exact optimal split of its stage sequence (`dp.best_layer_split`, one dynamic
    program); otherwise, and where that fails, layers move one at a time between neighbouring
    stages while the time falls (at most `max_moves` plans costed). The moves cost up to 200
    evaluate() calls a plan, 0.5-1 s at 1,024 GPUs on a loaded 2-core host (2026-12-03, the
    Planner's 2 s re-plans of fleet-1024 spent 2-3 s in them for its up to nine repaired
    plans), the dynamic program 0.03-0.05 s. Every plan it returns passed the validator
    (evaluate() validates)."""
    if state is not None and plan.schedule in EXACT_SPLIT_SCHEDULES:
        exact = _exact_rebalanced(state, plan, ev)
        if exact is not None:
            return exact
    best, best_ev = plan, ev
    tried = 0
    improved = True
    while improved and tried < max_moves:
        improved = False
        for i in range(len(best.stages) - 1):
            for give in (1, -1):  # a layer from stage i to i + 1, or back
                layers = [s.num_layers for s in best.stages]
                layers[i] -= give
                layers[i + 1] += give
                if min(layers[i], layers[i + 1]) < 1:
                    continue
                tried += 1
                candidate = _with_layers(best, layers)
                try:
                    got = evaluate(instance, candidate)
                except HaapError:
                    continue
                if got.iteration_time_s < best_ev.iteration_time_s * (1 - 1e-12):
                    best, best_ev, improved = candidate, got, True
    return best, best_ev


def _exact_rebalanced(state: SearchState, plan: Plan,
                      ev: Evaluation) -> tuple[Plan, Evaluation] | None:
    """`plan` with the optimal layer split of its stage sequence (or as it is, where its split
    is that), or None where the sequence has no configurations of the space or the dynamic
    program gives no split evaluate() accepts."""
    from haap_solver.search.dp import best_layer_split

    instance, b = state.instance, plan.micro_batch_size
    configs = plan_configs(instance, plan)
    if configs is None:
        return None
    split = best_layer_split(instance, state.cache, configs, b, plan.schedule)
    if split is None:
        return None
    if split[0] == [s.num_layers for s in plan.stages]:
        return plan, ev
    candidate = _with_layers(plan, split[0])
    try:
        got = evaluate(instance, candidate)
    except HaapError:
        return None
    return (candidate, got) if got.iteration_time_s < ev.iteration_time_s else (plan, ev)


def _with_layers(plan: Plan, layers: list[int]) -> Plan:
    stages = []
    first = 0
    for stage, n in zip(plan.stages, layers, strict=True):
        stages.append(dataclasses.replace(stage, first_layer=first, num_layers=n))
        first += n
    return dataclasses.replace(plan, stages=tuple(stages))
