"""What each training engine can express of haap's general plan (docs/targets.md): its rules
(`TargetRules`, `RULES`) and `target_violations`, which names each stage and field a target
cannot express. The validator checks plans with it, so it imports nothing of the search (the
search restricted to a target, above the search, is in ``targets``)."""

from __future__ import annotations

from dataclasses import dataclass

from haap_solver.errors import HaapError
from haap_solver.instance import Instance
from haap_solver.plan import Plan
from haap_solver.training import TARGETS, Recompute, Schedule, Target


@dataclass(frozen=True, kw_only=True)
class TargetRules:
    """What one engine can express of a plan (docs/targets.md)."""

    name: Target
    """Target name as in ``training.target``."""
    engine: str
    """The engine's name, for messages."""
    uniform_tp: bool
    """One TP degree for every stage."""
    uniform_dp: bool
    """One DP degree for every stage."""
    uniform_recompute: bool
    """One recomputation mode for every stage."""
    recompute_modes: tuple[Recompute, ...]
    """Recomputation modes the engine has."""
    uniform_selective: bool
    """Selective recomputation only on every stage at once (FlagScale)."""
    single_device_per_stage: bool
    """Every replica of a stage on one device type (FlagScale: one mesh per device type)."""
    schedules: tuple[Schedule, ...]
    """Pipeline schedules the engine runs."""
    max_zero_stage: int
    """Largest ZeRO stage the engine's pipeline runs with."""
    max_zero_stage_unpipelined: int
    """Largest ZeRO stage the engine runs without pipeline parallelism (a one-stage plan):
    DeepSpeed's plain engine runs ZeRO-2 and -3, its pipeline engine refuses them."""
    tied_first_last_tp: bool
    """With tied embeddings, the first and last stage need the same TP (FlagScale)."""


RULES: dict[str, TargetRules] = {
    "megatron": TargetRules(
        name="megatron", engine="Megatron-LM", uniform_tp=True, uniform_dp=True,
        uniform_recompute=True, recompute_modes=("none", "selective", "full"),
        uniform_selective=False, single_device_per_stage=False,
        schedules=("1f1b", "interleaved-1f1b"),
        max_zero_stage=1, max_zero_stage_unpipelined=1, tied_first_last_tp=False),
    "deepspeed": TargetRules(
        name="deepspeed", engine="DeepSpeed pipeline", uniform_tp=True, uniform_dp=True,
        uniform_recompute=True, recompute_modes=("none", "full"), uniform_selective=False,
        single_device_per_stage=False, schedules=("1f1b",), max_zero_stage=1,
        max_zero_stage_unpipelined=3, tied_first_last_tp=False),
    "torchtitan": TargetRules(
        name="torchtitan", engine="torchtitan", uniform_tp=True, uniform_dp=True,
        uniform_recompute=True, recompute_modes=("none", "selective", "full"),
        uniform_selective=False, single_device_per_stage=False, schedules=("1f1b", "gpipe"),
        max_zero_stage=3, max_zero_stage_unpipelined=3, tied_first_last_tp=False),
    "flagscale": TargetRules(
        name="flagscale", engine="FlagScale (heterogeneous mode)", uniform_tp=False,
        uniform_dp=False, uniform_recompute=False, recompute_modes=("none", "selective", "full"),
        uniform_selective=True, single_device_per_stage=True, schedules=("1f1b",),
        max_zero_stage=1, max_zero_stage_unpipelined=1, tied_first_last_tp=True),
}


def rules_of(target: str) -> TargetRules:
    """The rules of `target` (an error naming the allowed targets for any other name)."""
    if target not in RULES:
        raise HaapError(f"target {target!r} has no rules; targets: {', '.join(TARGETS)}")
    return RULES[target]


def target_violations(instance: Instance, plan: Plan, target: str) -> list[str]:
    """Every part of `plan` that `target` cannot express, one message each naming the stage
    and field (empty for "any" and for a plan the target runs)."""
    if target == "any":
        return []
    r = rules_of(target)
    out: list[str] = []
    eng = r.engine
    t = instance.training
    if plan.schedule not in r.schedules:
        out.append(f"schedule {plan.schedule!r}: {eng} runs {', '.join(r.schedules)}")
    if t.zero_stage > r.max_zero_stage_unpipelined:
        out.append(f"training.zero_stage {t.zero_stage}: {eng} runs ZeRO stage "
                   f"{r.max_zero_stage_unpipelined} at most (set training.zero_stage = "
                   f"{r.max_zero_stage})")
    elif t.zero_stage > r.max_zero_stage and len(plan.stages) > 1:
        out.append(f"stages: {eng} runs ZeRO stage {t.zero_stage} only without pipeline "
                   f"parallelism (one stage), this plan has {len(plan.stages)} (set "
                   f"training.zero_stage = {r.max_zero_stage} to pipeline)")
    if not plan.stages:
        return out
    first = plan.stages[0]
    for i, stage in enumerate(plan.stages):
        where = f"stages[{i}]"
        tps = {g.tp for g in stage.replicas}
        shares = {g.micro_batch_share for g in stage.replicas}
        devices = {g.device for g in stage.replicas}
        if len(tps) > 1:
            out.append(f"{where}.replicas[*].tp: {eng} runs one TP degree per stage, this stage "
                       f"has {sorted(tps)}")
        if len(shares) > 1:
            out.append(f"{where}.replicas[*].micro_batch_share: {eng} gives every data-parallel "
                       f"rank of a stage the same micro-batch, this stage has {sorted(shares)}")
        if r.single_device_per_stage and len(devices) > 1:
            out.append(f"{where}.replicas[*].device: {eng} runs one device type per stage "
                       f"(one process mesh per device type), this stage has {sorted(devices)}")
        for j, g in enumerate(stage.replicas):
            gpn = instance.cluster.group(g.node_group).gpus_per_node
            if gpn % g.tp:
                out.append(f"{where}.replicas[{j}].tp {g.tp}: {eng} gives a TP group consecutive "
                           f"ranks, which stay on one node only where TP divides its "
                           f"{gpn} GPUs")
        if stage.recompute not in r.recompute_modes:
            out.append(f"{where}.recompute {stage.recompute!r}: {eng} has "
                       f"{', '.join(r.recompute_modes)}")
        if i == 0:
            continue
        if r.uniform_tp and stage.replicas[0].tp != first.replicas[0].tp:
            out.append(f"{where}.replicas[0].tp {stage.replicas[0].tp}: {eng} runs one TP degree "
                       f"for every stage, stages[0] has {first.replicas[0].tp}")
        if r.uniform_dp and stage.dp != first.dp:
            out.append(f"{where} data-parallel degree {stage.dp}: {eng} runs one DP degree for "
                       f"every stage, stages[0] has {first.dp}")
        if r.uniform_recompute and stage.recompute != first.recompute:
            out.append(f"{where}.recompute {stage.recompute!r}: {eng} sets recomputation once "
                       f"for every stage, stages[0] has {first.recompute!r}")
    modes = {s.recompute for s in plan.stages}
    if r.uniform_selective and "selective" in modes and len(modes) > 1:
        out.append(f"stages[*].recompute: {eng} sets selective recomputation for every stage at "
                   f"once (per-stage recomputation is full or none), this plan mixes "
                   f"{sorted(modes)}")
    last = plan.stages[-1]
    if (r.tied_first_last_tp and instance.model.tied_embeddings and len(plan.stages) > 1
            and first.replicas[0].tp != last.replicas[0].tp):
        out.append(f"stages[{len(plan.stages) - 1}].replicas[0].tp {last.replicas[0].tp}: with "
                   f"tied embeddings {eng} needs the first and last stage to share one TP "
                   f"degree, stages[0] has {first.replicas[0].tp}")
    return out
