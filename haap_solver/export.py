"""`haap export`: a plan in the form a training engine reads (docs/targets.md).

- ``megatron``: Megatron-LM command-line flags (one per line; ``#`` lines are comments), the
  layer split as ``--pipeline-model-parallel-layout``.
- ``deepspeed``: JSON with the DeepSpeed config (``ds_config``) and the ``PipelineModule``
  arguments (``pipeline_module``: stage count, topology, the part boundaries ``parts`` over the
  layer list [embedding, decoder layers..., head]).
- ``torchtitan``: TOML of torchtitan's ``[parallelism]`` fields, the split as
  ``module_fqns_per_model_part``.
- ``flagscale``: FlagScale heterogeneous-mode command-line flags: one process mesh per run of
  consecutive stages with the same device type, TP and DP (``--hetero-process-meshes``,
  ``--hetero-device-types``, ``--hetero-pipeline-layer-split``).
- ``pipelining``: JSON split specification for ``torch.distributed.pipelining`` (split points
  ``layers.N`` at the beginning of each stage but the first, the schedule class, micro-batches);
  the rules of torchtitan, which runs on it, apply.

Each export first checks the plan against the instance (the validator) and against the
engine's rules (`target_violations`), and refuses naming every stage and field the engine
cannot express.
"""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path
from typing import Any

from haap_solver.cli import add_profile_option, command
from haap_solver.errors import HaapError, write_text
from haap_solver.instance import Instance
from haap_solver.plan import Plan
from haap_solver.target_rules import rules_of, target_violations

FORMATS = ("megatron", "deepspeed", "torchtitan", "flagscale", "pipelining")
RULES_OF_FORMAT = {"megatron": "megatron", "deepspeed": "deepspeed", "torchtitan": "torchtitan",
                   "flagscale": "flagscale", "pipelining": "torchtitan"}


class ExportRefused(HaapError):
    """The plan holds something the engine cannot express; the message lists each part."""


def check_exportable(instance: Instance, plan: Plan, to: str) -> None:
    """Raise ExportRefused naming each stage and field the engine of `to` cannot express."""
    rules = rules_of(RULES_OF_FORMAT[to])
    problems = target_violations(instance, plan, rules.name)
    if problems:
        raise ExportRefused(f"{rules.engine} cannot run this plan as it is ({len(problems)} "
                            "problem(s)):\n  " + "\n  ".join(problems)
                            + f"\nask for a plan it can run: haap solve INSTANCE --target "
                              f"{rules.name}")


def _layer_counts(plan: Plan) -> list[int]:
    return [s.num_layers for s in plan.stages]


def _recompute_flags(mode: str) -> list[str]:
    if mode == "selective":
        return ["--recompute-granularity", "selective"]
    if mode == "full":
        return ["--recompute-granularity", "full", "--recompute-method", "uniform",
                "--recompute-num-layers", "1"]
    return []


def _model_flags(instance: Instance) -> list[str]:
    m, t = instance.model, instance.training
    out = ["--num-layers", str(m.num_layers), "--hidden-size", str(m.hidden_size),
           "--ffn-hidden-size", str(m.ffn_hidden_size),
           "--num-attention-heads", str(m.num_attention_heads),
           "--seq-length", str(m.seq_length), "--max-position-embeddings", str(m.seq_length),
           "--global-batch-size", str(t.global_batch_size)]
    if m.kv_heads != m.num_attention_heads:
        out += ["--group-query-attention", "--num-query-groups", str(m.kv_heads)]
    if not m.tied_embeddings:
        out.append("--untie-embeddings-and-output-weights")
    if m.gated_mlp:  # Llama: SwiGLU with RMSNorm (haap's model ties the two, model.py)
        out += ["--swiglu", "--normalization", "RMSNorm"]
    out += ["--position-embedding-type",
            "learned_absolute" if m.learned_position_embeddings else "rope"]
    if t.dtype == "bf16":
        out.append("--bf16")
    elif t.dtype == "fp16":
        out.append("--fp16")
    if t.zero_stage >= 1:
        out.append("--use-distributed-optimizer")
    if t.overlap_grad_reduce:
        out.append("--overlap-grad-reduce")
    return out


def megatron_layout(plan: Plan, chunks: int = 1) -> str:
    """``--pipeline-model-parallel-layout``: E (embedding), t (decoder layer), L (loss) per
    stage, stages split by '|' (Megatron-LM
    docs/user-guide/features/pipeline_parallel_layout.md). With `chunks` = v > 1 (the
    interleaved schedule) p v virtual stages, in Megatron's order: virtual stage j p + i is
    chunk j of stage i, its n_i / v layers; Megatron-LM takes the virtual pipeline size from the
    layout's length over the pipeline size."""
    parts = []
    p = len(plan.stages)
    last = p * chunks - 1
    for k in range(p * chunks):
        n = plan.stages[k % p].num_layers // chunks
        piece = ("E" if k == 0 else "") + (f"t*{n}" if n else "")
        piece += "L" if k == last else ""
        parts.append(piece)
    return "|".join(parts)


def export_megatron(instance: Instance, plan: Plan) -> str:
    check_exportable(instance, plan, "megatron")
    first = plan.stages[0]
    tp, dp = first.replicas[0].tp, first.dp
    share = first.replicas[0].micro_batch_share
    t = instance.training
    chunks = t.virtual_stages if plan.schedule == "interleaved-1f1b" else 1
    flags = ["--tensor-model-parallel-size", str(tp),
             "--pipeline-model-parallel-size", str(plan.num_stages),
             "--pipeline-model-parallel-layout", megatron_layout(plan, chunks),
             "--micro-batch-size", str(share), *_model_flags(instance),
             *_recompute_flags(first.recompute)]
    if tp > 1 and t.sequence_parallel:
        flags.append("--sequence-parallel")
    if chunks > 1 and t.pipeline_p2p == "blocking":  # (Megatron overlaps them by default)
        flags.append("--no-overlap-p2p-communication")
    interleaved = ([f"# interleaved 1F1B, {chunks} model chunks per stage: the layout lists the "
                    f"{chunks * plan.num_stages} virtual stages (virtual stage j*{plan.num_stages}"
                    "+i is chunk j of stage i)"] if chunks > 1 else [])
    head = [f"# Megatron-LM flags for {instance.name}: {plan.num_stages} stages, TP {tp}, "
            f"DP {dp}, layers {_layer_counts(plan)} (haap export --to megatron)",
            *interleaved,
            f"# world size {tp * dp * plan.num_stages}: ranks in Megatron's order tp-dp-pp, "
            "so stage i is ranks [i*TP*DP, (i+1)*TP*DP); place them on these nodes:",
            *_placement_comments(plan),
            "# add your data, tokenizer, optimizer and checkpoint flags"]
    return "\n".join([*head, *_flag_lines(flags)]) + "\n"


def _placement_comments(plan: Plan) -> list[str]:
    out = []
    for i, s in enumerate(plan.stages):
        where = ", ".join(f"{r.count} x TP{r.tp} on {r.node_group} nodes "
                          + "/".join(str(p.node) for p in r.placement) for r in s.replicas)
        out.append(f"#   stage {i}: {where}")
    return out


def _flag_lines(flags: list[str]) -> list[str]:
    """One flag per line, its values after it, shell-quoted."""
    lines: list[str] = []
    for f in flags:
        if f.startswith("--"):
            lines.append(f)
        else:
            lines[-1] += " " + shlex.quote(f)
    return lines


def export_deepspeed(instance: Instance, plan: Plan) -> str:
    check_exportable(instance, plan, "deepspeed")
    t = instance.training
    first = plan.stages[0]
    tp, dp = first.replicas[0].tp, first.dp
    share = first.replicas[0].micro_batch_share
    ds: dict[str, Any] = {
        "train_batch_size": t.global_batch_size,
        "train_micro_batch_size_per_gpu": share,
        "gradient_accumulation_steps": plan.num_micro_batches,
        "zero_optimization": {"stage": t.zero_stage},
    }
    if t.dtype == "bf16":
        ds["bf16"] = {"enabled": True}
    elif t.dtype == "fp16":
        ds["fp16"] = {"enabled": True}
    if t.zero_stage >= 2:  # (one stage, checked above): the plain engine, no PipelineModule
        return json.dumps({"ds_config": ds, "pipeline_module": None, "note": (
            f"ZeRO-{t.zero_stage} without pipeline parallelism: deepspeed.initialize() on the "
            "plain model, not a PipelineModule (DeepSpeed's pipeline engine refuses ZeRO-2 "
            "and -3)")}, indent=2) + "\n"
    parts = [0]
    for s in plan.stages:
        parts.append(parts[-1] + s.num_layers + (1 if len(parts) == 1 else 0))
    parts[-1] += 1  # the head is the last entry of the layer list
    module = {
        "num_stages": plan.num_stages,
        "topology": {"pipe": plan.num_stages, "data": dp, "model": tp},
        "layers": ["embedding", *(f"decoder.{i}" for i in range(instance.model.num_layers)),
                   "head"],
        "parts": parts,
        "partition_note": "DeepSpeed's partition_method has no explicit boundaries "
                          "('uniform', 'parameters', 'type:REGEX'): set PipelineModule.parts "
                          "to `parts` by overriding _partition_layers (docs/targets.md)",
        "activation_checkpoint_interval": 1 if first.recompute == "full" else 0,
    }
    return json.dumps({"ds_config": ds, "pipeline_module": module}, indent=2) + "\n"


def export_torchtitan(instance: Instance, plan: Plan) -> str:
    check_exportable(instance, plan, "torchtitan")
    t = instance.training
    first = plan.stages[0]
    tp, dp = first.replicas[0].tp, first.dp
    fqns = _fqns(plan)
    replicate, shard = (dp, 1) if t.zero_stage == 0 else (1, dp)
    lines = [f"# torchtitan [parallelism] for {instance.name} (haap export --to torchtitan); "
             f"per data-parallel rank {first.replicas[0].micro_batch_share} sequence(s) per "
             f"micro-batch, recomputation {first.recompute!r} "
             "(activation checkpointing: none / SelectiveAC / FullAC)",
             "[parallelism]",
             f"pipeline_parallel_degree = {plan.num_stages}",
             f"tensor_parallel_degree = {tp}",
             f"data_parallel_replicate_degree = {replicate}",
             f"data_parallel_shard_degree = {shard}",
             f"pipeline_parallel_schedule = \"{'1F1B' if plan.schedule == '1f1b' else 'GPipe'}\"",
             f"num_pp_microbatches = {plan.num_micro_batches}",
             "module_fqns_per_model_part = [",
             *(f"  {json.dumps(part)}," for part in fqns), "]"]
    return "\n".join(lines) + "\n"


def _fqns(plan: Plan) -> list[list[str]]:
    """torchtitan's module names per stage: tok_embeddings, layers.N, norm, lm_head
    (torchtitan/models/common/decoder.py)."""
    out = []
    last = len(plan.stages) - 1
    for i, s in enumerate(plan.stages):
        part = (["tok_embeddings"] if i == 0 else []) + [
            f"layers.{k}" for k in range(s.first_layer, s.end_layer)]
        part += ["norm", "lm_head"] if i == last else []
        out.append(part)
    return out


def flagscale_meshes(plan: Plan) -> list[tuple[str, int, int, int]]:
    """(device, TP, DP, PP) per process mesh: runs of consecutive stages with one device type,
    TP and DP."""
    meshes: list[tuple[str, int, int, int]] = []
    for s in plan.stages:
        key = (s.replicas[0].device, s.replicas[0].tp, s.dp)
        if meshes and meshes[-1][:3] == key:
            d, tp, dp, pp = meshes[-1]
            meshes[-1] = (d, tp, dp, pp + 1)
        else:
            meshes.append((*key, 1))
    return meshes


def export_flagscale(instance: Instance, plan: Plan) -> str:
    check_exportable(instance, plan, "flagscale")
    meshes = flagscale_meshes(plan)
    first = plan.stages[0]
    mesh_values: list[str] = []
    for _, tp, dp, pp in meshes:
        mesh_values += [str(tp), "1", "1", str(dp), str(pp)]  # TP, CP, EP, DP, PP
    flags = ["--enable-hetero",
             "--hetero-process-meshes", *mesh_values,
             "--hetero-device-types", *(m[0] for m in meshes),
             "--hetero-pipeline-layer-split", *(str(n) for n in _layer_counts(plan)),
             "--tensor-model-parallel-size", str(first.replicas[0].tp),
             "--pipeline-model-parallel-size", str(plan.num_stages),
             "--micro-batch-size", str(first.replicas[0].micro_batch_share),
             *_model_flags(instance)]
    modes = {s.recompute for s in plan.stages}
    if modes == {"selective"}:
        flags += ["--recompute-granularity", "selective"]
    elif "full" in modes:
        # FlagScale's refined recomputation (flagscale/train/arguments.py
        # _parse_recompute_refined_config): per stage "[stages, micro-batches, value]", the
        # granularity flag 1 (full) or 0 (none), method 1 (block: the first N layers), N the
        # stage's layer count.
        m = plan.num_micro_batches
        flags += ["--recompute-granularity", "full", "--recompute-method", "block",
                  "--recompute-num-layers", "1",
                  "--recompute-granularity-per-stage-micro-batch",
                  *(f"[1, {m}, {int(s.recompute == 'full')}]" for s in plan.stages),
                  "--recompute-method-per-stage-micro-batch",
                  *(f"[1, {m}, 1]" for _ in plan.stages),
                  "--recompute-num-layers-per-stage-micro-batch",
                  *(f"[1, {m}, {s.num_layers if s.recompute == 'full' else 0}]"
                    for s in plan.stages)]
    head = [f"# FlagScale heterogeneous mode for {instance.name} (haap export --to flagscale): "
            f"{len(meshes)} process mesh(es) [TP, CP, EP, DP, PP] = "
            + "; ".join(f"{d} [{tp}, 1, 1, {dp}, {pp}]" for d, tp, dp, pp in meshes),
            "# set --hetero-current-device-type per host (FlagScale's runner does it from the "
            "host file); stages on nodes:", *_placement_comments(plan)]
    return "\n".join([*head, *_flag_lines(flags)]) + "\n"


def export_pipelining(instance: Instance, plan: Plan) -> str:
    check_exportable(instance, plan, "pipelining")
    first = plan.stages[0]
    spec = {
        "split_spec": {f"layers.{s.first_layer}": "BEGINNING" for s in plan.stages[1:]},
        "stage_modules": _fqns(plan),
        "schedule": "Schedule1F1B" if plan.schedule == "1f1b" else "ScheduleGPipe",
        "n_microbatches": plan.num_micro_batches,
        "micro_batch_size_per_rank": first.replicas[0].micro_batch_share,
        "mesh": {"pp": plan.num_stages, "dp": first.dp, "tp": first.replicas[0].tp},
    }
    return json.dumps(spec, indent=2) + "\n"


EXPORTERS = {"megatron": export_megatron, "deepspeed": export_deepspeed,
             "torchtitan": export_torchtitan, "flagscale": export_flagscale,
             "pipelining": export_pipelining}


def export(instance: Instance, plan: Plan, to: str) -> str:
    """The text of `plan` for engine `to` (one of FORMATS)."""
    from haap_solver.validate import check_plan

    if to not in EXPORTERS:
        raise HaapError(f"--to {to!r}: formats are {', '.join(FORMATS)}")
    check_plan(instance, plan)
    return EXPORTERS[to](instance, plan)


def _cfg_export(p: argparse.ArgumentParser) -> None:
    p.add_argument("instance", help="instance .toml file")
    p.add_argument("plan", help="plan .json file")
    p.add_argument("--to", required=True, choices=FORMATS, help="the engine to export for")
    p.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    add_profile_option(p)


@command("export", "write a plan in the form a training engine reads (docs/targets.md)",
         _cfg_export)
def cmd_export(args: argparse.Namespace) -> int:
    import sys

    from haap_solver.cli import check_output_not_input, load_plan_for, load_with_options
    from haap_solver.validate import check_plan

    check_output_not_input(args, "instance", "plan", "profile")
    instance = load_with_options(args)
    plan = load_plan_for(instance, args.plan)
    check_plan(instance, plan, source=args.plan)
    text = export(instance, plan, args.to)
    if args.output:
        write_text(Path(args.output), text)
        sys.stderr.write(f"{args.to} export written to {args.output}\n")
    else:
        sys.stdout.write(text)
    return 0


__all__ = ["EXPORTERS", "FORMATS", "ExportRefused", "check_exportable", "export",
           "flagscale_meshes", "megatron_layout"]
