"""haap export: each engine's output read back by a parser declaring the engine's own argument
names and types (Megatron-LM arguments.py / its config dataclasses, FlagScale's
arguments.py.patch) or checked against its documented schema (DeepSpeed config keys, torchtitan
ParallelismConfig fields), then compared with the plan; refusals name stage and field."""

from __future__ import annotations

import argparse
import ast
import itertools
import json
import re
import shlex
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from haap_solver.baselines.uniform import uniform
from haap_solver.cli import main
from haap_solver.errors import HaapError
from haap_solver.export import ExportRefused, export
from haap_solver.instance import load_instance
from haap_solver.plan import load_plan

ROOT = Path(__file__).parent.parent
DATA = Path(__file__).parent / "data" / "runtime"
TOY = ROOT / "instances" / "small" / "toy-gpt-6l-a100x2-t4x2.toml"
SHIPPED = ["gpt3-2.7b-a100-40gx8-v100x8", "gpt3-1.3b-a100x8", "llama3-8b-h100x16"]


def megatron_parser() -> argparse.ArgumentParser:
    """The flags haap writes, with Megatron-LM's names and types (megatron/training/
    arguments.py, and ModelParallelConfig / TransformerConfig / TrainingConfig fields, which its
    ArgumentGroupFactory turns into --field-name flags of the field's type)."""
    p = argparse.ArgumentParser(exit_on_error=False)
    for name in ("tensor-model-parallel-size", "pipeline-model-parallel-size", "num-layers",
                 "hidden-size", "ffn-hidden-size", "num-attention-heads", "num-query-groups",
                 "seq-length", "max-position-embeddings", "micro-batch-size",
                 "global-batch-size", "recompute-num-layers", "decoder-first-pipeline-num-layers",
                 "decoder-last-pipeline-num-layers"):
        p.add_argument(f"--{name}", type=int)
    p.add_argument("--pipeline-model-parallel-layout", type=str)
    p.add_argument("--recompute-granularity", choices=["full", "selective"])
    p.add_argument("--normalization", choices=["LayerNorm", "RMSNorm"])
    p.add_argument("--position-embedding-type",
                   choices=["learned_absolute", "rope", "yarn", "mrope", "relative", "none"])
    p.add_argument("--recompute-method", choices=["uniform", "block"])
    for flag in ("group-query-attention", "untie-embeddings-and-output-weights", "swiglu",
                 "bf16", "fp16", "use-distributed-optimizer", "overlap-grad-reduce",
                 "sequence-parallel"):
        p.add_argument(f"--{flag}", action="store_true")
    return p


def flagscale_parser() -> argparse.ArgumentParser:
    """Megatron's flags plus FlagScale's heterogeneous ones (flagscale/backends/Megatron-LM/
    megatron/training/arguments.py.patch: nargs='*', int or str)."""
    p = megatron_parser()
    p.add_argument("--enable-hetero", action="store_true")
    p.add_argument("--hetero-device-types", nargs="*", type=str)
    p.add_argument("--hetero-pipeline-layer-split", nargs="*", type=int)
    p.add_argument("--hetero-process-meshes", nargs="*", type=int)
    for name in ("granularity", "method", "num-layers"):
        p.add_argument(f"--recompute-{name}-per-stage-micro-batch", nargs="*", type=str)
    return p


def parse_layout(layout: str) -> list[int]:
    """Decoder layers per stage of a --pipeline-model-parallel-layout string (the grammar of
    Megatron-LM's docs: E, t, L symbols, t*N repetition, '|' between stages)."""
    counts = []
    for stage in layout.split("|"):
        n = 0
        for sym, times in re.findall(r"([EtL])(?:\*(\d+))?", stage.replace(",", "")):
            if sym == "t":
                n += int(times or 1)
        counts.append(n)
    return counts


def _args(text: str, parser: argparse.ArgumentParser) -> argparse.Namespace:
    return parser.parse_args(shlex.split(text, comments=True))


@pytest.fixture(scope="module")
def uniform_plans():
    out = []
    for name in SHIPPED:
        inst = load_instance(ROOT / "instances" / f"{name}.toml")
        res = uniform(inst, time_limit_s=30)
        out.append((inst, res.plan))
    return out


def test_megatron_flags_parse_and_match(uniform_plans):
    for inst, plan in uniform_plans:
        a = _args(export(inst, plan, "megatron"), megatron_parser())
        assert a.pipeline_model_parallel_size == plan.num_stages
        assert parse_layout(a.pipeline_model_parallel_layout) == [s.num_layers for s in
                                                                  plan.stages]
        assert a.pipeline_model_parallel_layout.startswith("E")
        assert a.pipeline_model_parallel_layout.endswith("L")
        st = plan.stages[0]
        assert a.tensor_model_parallel_size == st.replicas[0].tp
        # Megatron: global batch = micro-batch x DP x accumulation steps.
        assert a.global_batch_size == a.micro_batch_size * st.dp * plan.num_micro_batches
        assert a.num_layers == inst.model.num_layers
        assert a.swiglu == inst.model.gated_mlp
        assert a.untie_embeddings_and_output_weights == (not inst.model.tied_embeddings)
        assert (a.num_query_groups or a.num_attention_heads) == inst.model.kv_heads


DS_SCHEMA = {  # DeepSpeed deepspeed/runtime/constants.py and its config docs
    "train_batch_size": int, "train_micro_batch_size_per_gpu": int,
    "gradient_accumulation_steps": int, "zero_optimization": dict, "bf16": dict, "fp16": dict,
}


def test_deepspeed_config_schema_and_parts(uniform_plans):
    for inst, plan in uniform_plans:
        out = json.loads(export(inst, plan, "deepspeed"))
        ds, mod = out["ds_config"], out["pipeline_module"]
        for key, value in ds.items():
            assert key in DS_SCHEMA and isinstance(value, DS_SCHEMA[key]), key
        assert set(ds["zero_optimization"]) == {"stage"} and ds["zero_optimization"]["stage"] <= 1
        dp = mod["topology"]["data"]
        # DeepSpeed's _batch_assertion: train_batch = micro x accumulation x DP world size.
        assert ds["train_batch_size"] == (ds["train_micro_batch_size_per_gpu"]
                                          * ds["gradient_accumulation_steps"] * dp)
        parts = mod["parts"]
        assert parts[0] == 0 and parts[-1] == len(mod["layers"]) == inst.model.num_layers + 2
        sizes = [b - a for a, b in itertools.pairwise(parts)]
        expect = [s.num_layers for s in plan.stages]
        expect[0] += 1
        expect[-1] += 1
        assert sizes == expect


TITAN_FIELDS = {  # torchtitan/config/configs.py ParallelismConfig
    "pipeline_parallel_degree": int, "tensor_parallel_degree": int,
    "data_parallel_replicate_degree": int, "data_parallel_shard_degree": int,
    "pipeline_parallel_schedule": str, "num_pp_microbatches": int,
    "module_fqns_per_model_part": list,
}


def test_torchtitan_toml_fields_and_fqns(uniform_plans):
    for inst, plan in uniform_plans:
        data = tomllib.loads(export(inst, plan, "torchtitan"))
        par = data["parallelism"]
        for key, value in par.items():
            assert key in TITAN_FIELDS and isinstance(value, TITAN_FIELDS[key]), key
        fqns = [f for part in par["module_fqns_per_model_part"] for f in part]
        assert fqns == ["tok_embeddings", *(f"layers.{i}" for i in range(inst.model.num_layers)),
                        "norm", "lm_head"]
        assert [sum(f.startswith("layers.") for f in part)
                for part in par["module_fqns_per_model_part"]] == [s.num_layers
                                                                   for s in plan.stages]
        assert par["pipeline_parallel_schedule"] in ("1F1B", "GPipe")


def test_pipelining_split_points(uniform_plans):
    for inst, plan in uniform_plans:
        spec = json.loads(export(inst, plan, "pipelining"))
        assert list(spec["split_spec"]) == [f"layers.{s.first_layer}" for s in plan.stages[1:]]
        assert set(spec["split_spec"].values()) <= {"BEGINNING"}
        assert spec["schedule"] in ("Schedule1F1B", "ScheduleGPipe")


def test_flagscale_keeps_per_type_dp_and_uneven_split():
    inst = load_instance(TOY)
    plan = load_plan(DATA / "toy-hetero-dp.json")
    a = _args(export(inst, plan, "flagscale"), flagscale_parser())
    assert a.enable_hetero
    meshes = [a.hetero_process_meshes[i:i + 5] for i in range(0, len(a.hetero_process_meshes), 5)]
    assert len(a.hetero_process_meshes) % 5 == 0
    assert a.hetero_device_types == ["A100-80G", "T4"]
    # [TP, CP, EP, DP, PP] per mesh: A100 DP 2 one stage, T4 DP 1 two stages.
    assert meshes == [[1, 1, 1, 2, 1], [1, 1, 1, 1, 2]]
    assert a.hetero_pipeline_layer_split == [4, 1, 1]
    assert sum(m[4] for m in meshes) == a.pipeline_model_parallel_size == 3
    assert sum(a.hetero_pipeline_layer_split) == a.num_layers
    # FlagScale's check: DP_0 x micro-batch divisible by every mesh's DP.
    assert all(meshes[0][3] * a.micro_batch_size % m[3] == 0 for m in meshes)
    # Refined recomputation, read as FlagScale reads it (ast.literal_eval of each item): per
    # stage [1 stage, micro-batches, value], the micro-batches those of the plan.
    for name in ("granularity", "method", "num_layers"):
        items = [ast.literal_eval(v)
                 for v in getattr(a, f"recompute_{name}_per_stage_micro_batch")]
        assert [i[0] for i in items] == [1, 1, 1]
        assert all(i[1] == plan.num_micro_batches for i in items)
        if name == "granularity":
            assert [i[2] for i in items] == [1, 1, 1]  # every stage recomputes in full
        if name == "num_layers":
            assert [i[2] for i in items] == [4, 1, 1]
    assert a.recompute_granularity == "full"
    # Megatron cannot run it: refused, naming the stage.
    with pytest.raises(ExportRefused, match=r"stages\[1\] data-parallel degree 1"):
        export(inst, plan, "megatron")


def test_export_refuses_mixed_stage(capsys):
    inst = ROOT / "instances" / "llama3.2-1b-h100x4-l40sx4.toml"
    plan = DATA / "llama3.2-1b-mixed-plan.json"
    for to in ("megatron", "deepspeed", "torchtitan", "flagscale", "pipelining"):
        assert main(["export", str(inst), str(plan), "--to", to]) == 1
        err = capsys.readouterr().err
        assert "stages[0].replicas[*].micro_batch_share" in err, to
    assert main(["export", str(inst), str(plan), "--to", "foo"]) == 2


def test_export_writes_file(tmp_path):
    out = tmp_path / "megatron.args"
    assert main(["export", str(TOY), str(DATA / "toy-hetero-dp.json"), "--to", "flagscale",
                 "-o", str(out)]) == 0
    assert "--hetero-process-meshes" in out.read_text()
    with pytest.raises(HaapError):
        export(load_instance(TOY), load_plan(DATA / "toy-hetero-dp.json"), "nothing")


PLANS = sorted((Path(__file__).parent / "data" / "plans").glob("*.json"))


@pytest.mark.parametrize("path", PLANS, ids=[p.stem for p in PLANS])
def test_golden_plans_every_format(path):
    from haap_solver.targets import target_violations
    from haap_solver.validate import check_plan

    inst = load_instance(ROOT / "instances" / f"{path.stem.split('--')[0]}.toml")
    plan = load_plan(path)
    check_plan(inst, plan)
    rules = {"megatron": "megatron", "deepspeed": "deepspeed", "torchtitan": "torchtitan",
             "flagscale": "flagscale", "pipelining": "torchtitan"}
    for to, target in rules.items():
        if target_violations(inst, plan, target):
            with pytest.raises(ExportRefused, match=r"stages\[|training\.|schedule"):
                export(inst, plan, to)
            continue
        text = export(inst, plan, to)
        layers = [s.num_layers for s in plan.stages]
        if to == "megatron":
            a = _args(text, megatron_parser())
            assert parse_layout(a.pipeline_model_parallel_layout) == layers
        elif to == "flagscale":
            a = _args(text, flagscale_parser())
            assert a.hetero_pipeline_layer_split == layers
            meshes = [a.hetero_process_meshes[i:i + 5]
                      for i in range(0, len(a.hetero_process_meshes), 5)]
            # Expand the meshes back to stages: each stage's device, TP and DP as in the plan.
            per_stage = [(d, m[0], m[3]) for d, m in zip(a.hetero_device_types, meshes,
                                                          strict=True) for _ in range(m[4])]
            assert per_stage == [(s.replicas[0].device, s.replicas[0].tp, s.dp)
                                 for s in plan.stages]
        elif to == "deepspeed":
            parts = json.loads(text)["pipeline_module"]["parts"]
            assert parts[-1] == inst.model.num_layers + 2
        elif to == "torchtitan":
            par = tomllib.loads(text)["parallelism"]
            assert par["pipeline_parallel_degree"] == plan.num_stages
        else:
            assert len(json.loads(text)["split_spec"]) == plan.num_stages - 1


def test_flagscale_keeps_solver_plan_per_type_tp_dp():
    # The optimum of llama3-70b on 32 H100 + 32 A100 for FlagScale (haap solve --target
    # flagscale, proven in 5 s under the cost model of 2026-12-02, whose fp32 gradients with
    # bf16 no longer fit the five-stage optimum of before): eight stages, A100 TP 4, TP 8,
    # TP 4 at DP 2, then H100 TP 4 DP 2 three times and TP 2 DP 2 twice; layers
    # 5/10/5/15/15/15/8/7.
    inst = load_instance(ROOT / "instances" / "llama3-70b-h100x32-a100x32.toml")
    plan = load_plan(Path(__file__).parent / "data" / "plans"
                     / "llama3-70b-h100x32-a100x32--flagscale.json")
    a = _args(export(inst, plan, "flagscale"), flagscale_parser())
    assert a.hetero_process_meshes == [4, 1, 1, 2, 1, 8, 1, 1, 2, 1, 4, 1, 1, 2, 1,
                                       4, 1, 1, 2, 3, 2, 1, 1, 2, 2]
    assert a.hetero_device_types == ["A100-80G", "A100-80G", "A100-80G", "H100", "H100"]
    assert a.hetero_pipeline_layer_split == [5, 10, 5, 15, 15, 15, 8, 7]
    with pytest.raises(ExportRefused, match=r"stages\[1\]"):
        export(inst, plan, "megatron")
