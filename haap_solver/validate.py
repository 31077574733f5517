"""The one plan validator: every plan any code path returns goes through here.

It is independent of every search: it re-derives each rule from the instance (layers covered once
and in order, no GPU used twice, node-group budgets, legal TP degrees, exact batch arithmetic,
memory within capacity on every GPU) and lists every violation with its own message.
"""

from __future__ import annotations

from collections import defaultdict

from haap_solver.cost.evaluate import CostModel
from haap_solver.cost.memory import GIB
from haap_solver.errors import PlanValidationError, listing
from haap_solver.instance import Instance
from haap_solver.memory_check import gpu_memory, measured_activations, micro_batches_in_flight
from haap_solver.plan import Plan


def plan_violations(instance: Instance, plan: Plan, *,
                    cost_model: CostModel | None = None) -> list[str]:
    """Every rule `plan` breaks, one message each (empty when the plan is valid)."""
    model, training, cluster = instance.model, instance.training, instance.cluster
    out: list[str] = []

    # Batch arithmetic.
    if plan.micro_batch_size < 1:
        out.append(f"micro_batch_size must be >= 1, got {plan.micro_batch_size}")
    if plan.num_micro_batches < 1:
        out.append(f"num_micro_batches must be >= 1, got {plan.num_micro_batches}")
    if plan.micro_batch_size * plan.num_micro_batches != training.global_batch_size:
        out.append(
            f"micro_batch_size x num_micro_batches = {plan.micro_batch_size} x "
            f"{plan.num_micro_batches} = {plan.micro_batch_size * plan.num_micro_batches}, "
            f"but training.global_batch_size is {training.global_batch_size}")
    if plan.schedule not in training.schedules:
        out.append(f"schedule {plan.schedule!r} is not allowed by training.schedules "
                   f"{list(training.schedules)}")
    if not plan.stages:
        out.append("plan has no stages")
        return out
    too_large = _size_violations(instance, plan)
    if too_large:  # do not check hundreds of thousands of stages one by one
        return out + too_large

    # Layers: every decoder layer exactly once, contiguous, in order.
    p = len(plan.stages)
    expected_first = 0
    for i, stage in enumerate(plan.stages):
        where = f"stages[{i}]"
        if stage.num_layers < 0:
            out.append(f"{where}.num_layers must be >= 0, got {stage.num_layers}")
        elif stage.num_layers == 0 and 0 < i < p - 1:
            out.append(f"{where} holds no layers; only the first or last stage may be empty "
                       "(holding just the embedding or the head)")
        elif stage.num_layers == 0 and not training.empty_end_stages:
            out.append(f"{where} holds no layers (an embedding-only first or head-only last "
                       "stage), which training.empty_end_stages = false does not allow")
        elif stage.num_layers == 0 and plan.schedule == "interleaved-1f1b":
            out.append(f"{where} holds no layers, which schedule 'interleaved-1f1b' does not "
                       "allow: it splits every stage into training.virtual_stages equal model "
                       "chunks, and an embedding-only or head-only stage has none")
        if stage.first_layer != expected_first:
            kind = "overlaps the previous stage" if stage.first_layer < expected_first else \
                "leaves a gap after the previous stage"
            out.append(f"{where}.first_layer is {stage.first_layer} but the previous stage ends at "
                       f"layer {expected_first} ({kind})")
        expected_first = stage.first_layer + max(stage.num_layers, 0)
        if stage.recompute not in training.recompute:
            out.append(f"{where}.recompute {stage.recompute!r} is not allowed by "
                       f"training.recompute {list(training.recompute)}")
    if expected_first != model.num_layers:
        out.append(f"the stages end at layer {expected_first} but the model has "
                   f"{model.num_layers} layers")
    if plan.schedule == "interleaved-1f1b":
        out.extend(_interleaving_violations(plan, training.virtual_stages))

    # Replicas: device, TP, batch shares, placement, GPU usage.
    used: dict[tuple[str, int], int] = defaultdict(int)
    groups = {g.name: g for g in cluster.node_groups}
    structurally_ok = True
    for i, stage in enumerate(plan.stages):
        where = f"stages[{i}]"
        if not stage.replicas:
            out.append(f"{where} has no replica groups")
            structurally_ok = False
            continue
        share_sum = 0
        for j, r in enumerate(stage.replicas):
            rw = f"{where}.replicas[{j}]"
            group = groups.get(r.node_group)
            if group is None:
                out.append(f"{rw}.node_group {r.node_group!r} is not a node group of the cluster "
                           f"({listing(groups)})")
                structurally_ok = False
                continue
            if r.device != group.device:
                out.append(f"{rw}.device is {r.device!r} but node group {group.name!r} has "
                           f"{group.device!r}")
                structurally_ok = False
            if r.count < 1:
                out.append(f"{rw}.count must be >= 1, got {r.count}")
                structurally_ok = False
            if r.micro_batch_share < 1:
                out.append(f"{rw}.micro_batch_share must be >= 1, got {r.micro_batch_share}")
                structurally_ok = False
            share_sum += r.count * r.micro_batch_share
            if r.tp < 1:
                out.append(f"{rw}.tp must be >= 1, got {r.tp}")
                structurally_ok = False
                continue
            if r.tp > group.gpus_per_node:
                out.append(f"{rw}.tp {r.tp} spans nodes: node group {group.name!r} has "
                           f"{group.gpus_per_node} GPUs per node")
                structurally_ok = False
            for what, n in (("num_attention_heads", model.num_attention_heads),
                            ("num_kv_heads", model.kv_heads),
                            ("ffn_hidden_size", model.ffn_hidden_size)):
                if n % r.tp:
                    out.append(f"{rw}.tp {r.tp} does not divide the model's {what} ({n})")
                    structurally_ok = False
            placed = 0
            seen_nodes: set[int] = set()
            for k, pl in enumerate(r.placement):
                pw = f"{rw}.placement[{k}]"
                if not 0 <= pl.node < group.num_nodes:
                    out.append(f"{pw}.node {pl.node} is outside node group {group.name!r} "
                               f"(nodes 0..{group.num_nodes - 1})")
                    structurally_ok = False
                    continue
                if pl.node in seen_nodes:
                    out.append(f"{pw}.node {pl.node} is listed twice for this replica group")
                if pl.replicas < 1:
                    out.append(f"{pw}.replicas must be >= 1, got {pl.replicas}")
                seen_nodes.add(pl.node)
                placed += pl.replicas
                used[(group.name, pl.node)] += pl.replicas * r.tp
            if placed != r.count:
                out.append(f"{rw}.placement places {placed} replicas but count is {r.count}")
                structurally_ok = False
        if share_sum != plan.micro_batch_size:
            out.append(f"{where}: replica shares add up to {share_sum} sequences "
                       f"(sum of count x micro_batch_share) but micro_batch_size is "
                       f"{plan.micro_batch_size}")
            structurally_ok = False
    given: dict[str, int] = defaultdict(int)
    for (gname, node), n in sorted(used.items()):
        given[gname] += n
        cap = groups[gname].gpus_per_node
        if n > cap:
            out.append(f"node {node} of node group {gname!r} is given {n} GPUs but has {cap}")
    for gname, group in groups.items():
        total = given[gname]
        if total > group.num_gpus:
            out.append(f"node group {gname!r} is given {total} GPUs but has {group.num_gpus}")

    # What the instance's target engine cannot express (docs/targets.md).
    if training.target != "any" and structurally_ok:
        from haap_solver.target_rules import target_violations

        out.extend(f"target {training.target}: {v}"
                   for v in target_violations(instance, plan, training.target))

    # Memory, on every GPU (needs a structurally sound plan to be meaningful). Computed by
    # haap_solver.memory_check, not by the cost model the searches use, so that a wrong memory
    # formula on either side shows up here as a rejected plan.
    if structurally_ok and not out:
        cm = cost_model or CostModel(instance)
        measured = measured_activations(cm.profile)
        for i, stage in enumerate(plan.stages):
            for j, r in enumerate(stage.replicas):
                mem = gpu_memory(instance, plan, i, j, measured=measured)
                if not mem.fits:
                    in_flight = micro_batches_in_flight(
                        plan.schedule, stage_index=i, num_stages=p,
                        num_micro_batches=plan.num_micro_batches,
                        chunks=training.virtual_stages)
                    out.append(
                        f"stages[{i}].replicas[{j}] needs {mem.total_bytes / GIB:.2f} GiB per "
                        f"{r.device} but it has {mem.capacity_bytes / GIB:.2f} GiB (states "
                        f"{mem.states_bytes / GIB:.2f}, activations "
                        f"{mem.activations_bytes / GIB:.2f} for {in_flight:g} micro-batches "
                        f"in flight, extras {mem.extras_bytes / GIB:.2f}, reserved "
                        f"{mem.reserved_bytes / GIB:.2f})")
    return out


def _interleaving_violations(plan: Plan, chunks: int) -> list[str]:
    """What Megatron-LM's interleaved 1F1B needs (docs/cost-model.md Sec. 7.1): more than one
    stage, a micro-batch count that is a multiple of the stage count (its schedule raises
    otherwise), and v = training.virtual_stages equal chunks on every stage (the cost model
    splits a stage's time and activations evenly over its chunks)."""
    p = len(plan.stages)
    out: list[str] = []
    if p < 2:
        out.append("schedule 'interleaved-1f1b' needs at least 2 pipeline stages, the plan has 1")
        return out
    if plan.num_micro_batches % p:
        out.append(f"schedule 'interleaved-1f1b' needs num_micro_batches to be a multiple of the "
                   f"{p} stages (Megatron-LM's interleaved schedule), got "
                   f"{plan.num_micro_batches}")
    for i, stage in enumerate(plan.stages):
        if stage.num_layers % chunks:
            out.append(f"stages[{i}].num_layers {stage.num_layers} is not a multiple of "
                       f"training.virtual_stages ({chunks}): schedule 'interleaved-1f1b' splits "
                       "every stage into that many equal model chunks")
    return out


def _size_violations(instance: Instance, plan: Plan) -> list[str]:
    """Sizes no plan of the instance can have: more stages than layers + 2, more replica groups
    or placements than GPUs (each uses at least one). Checked first, so that a huge plan gets one
    message at once rather than one per stage."""
    layers, gpus = instance.model.num_layers, instance.cluster.num_gpus
    out = []
    if len(plan.stages) > layers + 2:
        out.append(f"plan has {len(plan.stages):,} stages but the model has {layers} layers: at "
                   f"most {layers + 2} stages (one per layer, an embedding-only first and a "
                   "head-only last stage)")
    groups = sum(len(s.replicas) for s in plan.stages)
    if groups > gpus:
        out.append(f"plan has {groups:,} replica groups but the cluster has {gpus:,} GPUs (a "
                   "replica group uses at least one)")
    placements = sum(len(r.placement) for s in plan.stages for r in s.replicas)
    if placements > gpus:
        out.append(f"plan places replicas {placements:,} times but the cluster has {gpus:,} "
                   "GPUs (a placement uses at least one)")
    return out


def check_plan(instance: Instance, plan: Plan, *, cost_model: CostModel | None = None,
               source: str | None = None) -> None:
    """Raise PlanValidationError listing every violation, or return None for a valid plan."""
    violations = plan_violations(instance, plan, cost_model=cost_model)
    if violations:
        raise PlanValidationError(violations, source=source)


__all__ = ["GIB", "check_plan", "plan_violations"]
