"""Every bad instance, plan or profile file gets a one-line error naming the file, the dotted field
and what is allowed, through the library (InputError) and through the CLI (exit 2, no traceback)."""

from __future__ import annotations

import copy
import json
import math
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from haap_solver.cli import main
from haap_solver.cost.evaluate import CostModel
from haap_solver.cost.profile import load_profile, profile_from_dict
from haap_solver.errors import MAX_LISTED, InputError
from haap_solver.instance import instance_from_dict, load_instance
from haap_solver.model import model_from_hf_config
from haap_solver.plan import Plan, load_plan, plan_from_dict
from haap_solver.validate import plan_violations

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

HF_LLAMA = Path(__file__).resolve().parent / "data" / "hf" / "llama3-8b" / "config.json"

BASE_HEAD = """\
name = "t"
description = "a test instance"
"""
MODEL = """
[model]
preset = "gpt3-1.3b"
"""
TRAINING = """
[training]
global_batch_size = 256
dtype = "bf16"
zero_stage = 1
"""
CLUSTER = """
[cluster]
[[cluster.node_groups]]
name = "a100"
device = "A100-80G"
num_nodes = 1
gpus_per_node = 8
nic = "infiniband"
nic_gbit_s = 200
nics_per_node = 8
"""
BASE = BASE_HEAD + MODEL + TRAINING + CLUSTER

BASE_PLAN: dict[str, Any] = {
    "schema_version": 1,
    "instance": "t",
    "schedule": "1f1b",
    "micro_batch_size": 8,
    "num_micro_batches": 32,
    "stages": [{
        "first_layer": 0,
        "num_layers": 24,
        "recompute": "none",
        "replicas": [{
            "node_group": "a100", "device": "A100-80G", "count": 8, "tp": 1,
            "micro_batch_share": 1, "placement": [{"node": 0, "replicas": 8}],
        }],
    }],
}

BASE_PROFILE = """
description = "test"

[[entry]]
device = "A100-80G"
tp = 1
micro_batch = 1
layer_fwd_s = 0.010
layer_bwd_s = 0.020

[[entry]]
device = "A100-80G"
tp = 1
micro_batch = 2
layer_fwd_s = 0.018
layer_bwd_s = 0.036
"""


def sub(old: str, new: str, text: str = BASE) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def check_message(msg: str, path: Path | str | None, field: str | None,
                  fragments: tuple[str, ...]) -> None:
    """One line, starts with the file, names the dotted field, says what is allowed."""
    assert "\n" not in msg, msg
    for bad in ("Traceback", "<class", "object at 0x", "ModelSpec(", "NodeGroup(", "Error("):
        assert bad not in msg, msg
    if path is not None:
        assert msg.startswith(f"{path}: "), msg
    if field is not None:
        assert f": {field}: " in msg or msg.startswith(f"{field}: "), msg
    for fragment in fragments:
        assert fragment in msg, (fragment, msg)


def check_cli(capsys: pytest.CaptureFixture[str], argv: list[str], path: Path | str,
              field: str | None, fragments: tuple[str, ...]) -> None:
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (code, err)
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("haap: error: "), err
    check_message(lines[0].removeprefix("haap: error: "), path, field, fragments)


# -- Instance files --------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    id: str
    content: str | bytes | None  # None: no file; a callable-free description of the file
    field: str | None
    fragments: tuple[str, ...]
    setup: Callable[[Path], None] | None = None  # makes extra files beside the instance


def _hf(content: str | dict[str, Any]) -> Callable[[Path], None]:
    def setup(directory: Path) -> None:
        text = content if isinstance(content, str) else json.dumps(content)
        (directory / "hf.json").write_text(text)
    return setup


def _llama(**changes: Any) -> dict[str, Any]:
    raw = json.loads(HF_LLAMA.read_text())
    for k, v in changes.items():
        if v is None:
            raw.pop(k, None)
        else:
            raw[k] = v
    return raw


HF_MODEL = '\n[model]\nhf_config = "hf.json"\n'
DIGITS = "9" * 5000  # an integer literal longer than Python converts (4,300 digits)

INSTANCE_CASES = [
    # Files that are not instance files at all.
    Case("missing-file", None, None, ("file not found",)),
    Case("empty", "", None, ("file is empty", "[model]", "[training]", "[cluster]")),
    Case("whitespace-only", "\n  \n# just a comment\n", None, ("file is empty",)),
    Case("binary", b"\x89PNG\r\n\x1a\n\x00\xff\xfe\x00", None, ("not a UTF-8 text file",)),
    Case("latin-1", "name = 'caf\xe9'\n".encode("latin-1"), None, ("not a UTF-8 text file",)),
    Case("invalid-toml", "[model\npreset = 'x'\n", None, ("not valid TOML", "line 1")),
    Case("toml-duplicate-key", sub("zero_stage = 1", "zero_stage = 1\nzero_stage = 2"), None,
         ("not valid TOML",)),
    Case("toml-unterminated-string", 'name = "t\n', None, ("not valid TOML",)),
    Case("json-instead-of-toml", json.dumps({"model": {"preset": "gpt3-1.3b"}}), None,
         ("not valid TOML",)),
    # Structure.
    Case("unknown-top-level-key", sub("[training]", "[trainng]"), "trainng",
         ("unknown top-level key", "did you mean 'training'", "allowed keys:")),
    Case("missing-training", BASE_HEAD + MODEL + CLUSTER, "training",
         ("required table [training] is missing",)),
    Case("missing-cluster", BASE_HEAD + MODEL + TRAINING, "cluster",
         ("required table [cluster] is missing",)),
    Case("model-is-a-string", 'model = "gpt3-1.3b"\n' + TRAINING + CLUSTER, "model",
         ("expected a table", "preset =", "got the string 'gpt3-1.3b'")),
    Case("training-is-a-list", "training = [256]\n" + MODEL + CLUSTER, "training",
         ("expected a table, got a list",)),
    Case("cluster-is-a-number", "cluster = 8\n" + MODEL + TRAINING, "cluster",
         ("expected a table, got 8",)),
    Case("node-groups-not-array-of-tables",
         sub("[[cluster.node_groups]]", "[cluster.node_groups]"), "cluster.node_groups",
         ("expected a list of tables, got a table", "[[cluster.node_groups]]", "double brackets")),
    Case("node-groups-missing", BASE_HEAD + MODEL + TRAINING + "\n[cluster]\n",
         "cluster.node_groups", ("required key is missing", "[[cluster.node_groups]]")),
    Case("node-groups-empty", BASE_HEAD + MODEL + TRAINING + "\n[cluster]\nnode_groups = []\n",
         "cluster.node_groups", ("at least one node group",)),
    # Names are printable (exports write them into comment lines of launch flags).
    Case("group-name-newline", sub('name = "a100"', 'name = "a100\\necho injected; #"'),
         "cluster.node_groups[0].name", ("printable", "no newline")),
    Case("group-name-blank", sub('name = "a100"', 'name = "   "'),
         "cluster.node_groups[0].name", ("not blank",)),
    Case("instance-name-tab", sub('name = "t"', 'name = "t\\tx"'), "name", ("printable",)),
    Case("model-name-newline", sub('preset = "gpt3-1.3b"', 'preset = "gpt3-1.3b"\nname = "a\\nb"'),
         "model.name", ("printable",)),
    Case("device-table-name-blank",
         BASE + '\n[devices." "]\nbase = "A100-80G"\n', 'devices. .name', ("not blank",)),
    # Unknown keys with did-you-mean.
    Case("unknown-training-key", sub("global_batch_size", "global_batch_szie"),
         "training.global_batch_szie",
         ("unknown key", "did you mean 'global_batch_size'", "allowed keys:")),
    Case("unknown-model-key", sub('preset = "gpt3-1.3b"', 'preset = "gpt3-1.3b"\nnum_layer = 4'),
         "model.num_layer", ("unknown key", "did you mean 'num_layers'", "allowed keys:")),
    Case("unknown-model-key-preset", sub("preset =", "presett ="), "model.presett",
         ("did you mean 'preset'",)),
    Case("unknown-node-group-key", sub("gpus_per_node", "gpus_per_nod"),
         "cluster.node_groups[0].gpus_per_nod", ("did you mean 'gpus_per_node'",)),
    Case("unknown-cluster-key", sub("[cluster]", "[cluster]\ncross_class_gbits = 100"),
         "cluster.cross_class_gbits", ("did you mean 'cross_class_gbit_s'",)),
    Case("devices-under-cluster", sub("[cluster]", "[cluster]\ndevices = {}"), "cluster.devices",
         ("top-level [devices.NAME]",)),
    Case("unknown-expected-key", BASE + "\n[expected]\niteration_time = 1.0\n",
         "expected.iteration_time", ("did you mean 'iteration_time_s'",)),
    # Wrong types.
    Case("string-for-int", sub("global_batch_size = 256", 'global_batch_size = "256"'),
         "training.global_batch_size", ("expected an integer", "got the string '256'")),
    Case("float-for-int", sub("num_nodes = 1", "num_nodes = 1.5"),
         "cluster.node_groups[0].num_nodes", ("expected an integer, got 1.5",)),
    Case("bool-for-int", sub("zero_stage = 1", "zero_stage = true"), "training.zero_stage",
         ("expected an integer, got true",)),
    # Whole floats and booleans for integers (were read as 2 and 1, silently).
    Case("whole-float-for-int", sub("num_nodes = 1", "num_nodes = 2.0"),
         "cluster.node_groups[0].num_nodes",
         ("expected an integer, got 2.0 (write 2, without a decimal point)",)),
    Case("bool-for-nodes", sub("num_nodes = 1", "num_nodes = true"),
         "cluster.node_groups[0].num_nodes", ("expected an integer, got true",)),
    Case("whole-float-for-model-int", sub('preset = "gpt3-1.3b"',
                                          'preset = "gpt3-1.3b"\nnum_layers = 24.0'),
         "model.num_layers", ("expected an integer, got 24.0",)),
    Case("whole-float-for-batch", sub("global_batch_size = 256", "global_batch_size = 256.0"),
         "training.global_batch_size", ("expected an integer, got 256.0",)),
    Case("bool-for-optional-int", sub("nics_per_node = 8", "nics_per_node = 8\nmax_gpus = true"),
         "cluster.node_groups[0].max_gpus", ("expected an integer, got true",)),
    Case("whole-float-straggler-node", BASE + '\n[[cluster.stragglers]]\nnode_group = "a100"\n'
         "node = 0.0\ncompute_speed = 0.5\n", "cluster.stragglers[0].node",
         ("expected an integer, got 0.0",)),
    Case("list-for-int", sub("gpus_per_node = 8", "gpus_per_node = [8]"),
         "cluster.node_groups[0].gpus_per_node", ("expected an integer, got a list",)),
    Case("table-for-number", sub("nic_gbit_s = 200", "nic_gbit_s = {rate = 200}"),
         "cluster.node_groups[0].nic_gbit_s", ("expected a number, got a table",)),
    Case("string-for-number", sub("nic_gbit_s = 200", 'nic_gbit_s = "200G"'),
         "cluster.node_groups[0].nic_gbit_s", ("expected a number", "'200G'")),
    Case("nan", sub("nic_gbit_s = 200", "nic_gbit_s = nan"), "cluster.node_groups[0].nic_gbit_s",
         ("expected a finite number, got nan",)),
    Case("inf", sub("nic_gbit_s = 200", "nic_gbit_s = inf"), "cluster.node_groups[0].nic_gbit_s",
         ("expected a finite number, got inf",)),
    Case("date-for-int", sub("global_batch_size = 256", "global_batch_size = 2024-01-01"),
         "training.global_batch_size", ("expected an integer, got the date/time 2024-01-01",)),
    Case("int-for-bool", sub('preset = "gpt3-1.3b"', 'preset = "gpt3-1.3b"\ngated_mlp = 1'),
         "model.gated_mlp", ("expected true or false, got 1",)),
    Case("int-for-string", sub('name = "a100"', "name = 100"), "cluster.node_groups[0].name",
         ("expected a string, got 100",)),
    Case("string-for-list", sub("zero_stage = 1", 'zero_stage = 1\nrecompute = "full"'),
         "training.recompute", ("expected a list of values from", "write ['full']")),
    Case("optional-wrong-type", sub("nics_per_node = 8", 'nics_per_node = 8\nnic_latency_us = "5"'),
         "cluster.node_groups[0].nic_latency_us", ("expected a number, got the string '5'",)),
    Case("cross-class-wrong-type", sub("[cluster]", '[cluster]\ncross_class_gbit_s = "fast"'),
         "cluster.cross_class_gbit_s", ("expected a number",)),
    Case("description-not-string", sub('description = "a test instance"', "description = 5"),
         "description", ("expected a string, got 5",)),
    Case("name-not-string", sub('name = "t"', "name = [1]"), "name",
         ("expected a non-empty string",)),
    Case("profile-not-string", sub('name = "t"', 'name = "t"\nprofile = 3'), "profile",
         ("expected a path string, got 3",)),
    # Values out of range.
    Case("zero-nodes", sub("num_nodes = 1", "num_nodes = 0"), "cluster.node_groups[0].num_nodes",
         ("must be >= 1, got 0",)),
    Case("negative-gpus", sub("gpus_per_node = 8", "gpus_per_node = -8"),
         "cluster.node_groups[0].gpus_per_node", ("must be >= 1, got -8",)),
    Case("zero-nics", sub("nics_per_node = 8", "nics_per_node = 0"),
         "cluster.node_groups[0].nics_per_node", ("must be >= 1, got 0",)),
    Case("negative-nic-rate", sub("nic_gbit_s = 200", "nic_gbit_s = -200"),
         "cluster.node_groups[0].nic_gbit_s", ("must be >= 1e-06, got -200",)),
    Case("zero-batch", sub("global_batch_size = 256", "global_batch_size = 0"),
         "training.global_batch_size", ("must be >= 1, got 0",)),
    Case("negative-reserved", sub("zero_stage = 1", "zero_stage = 1\nreserved_memory_gib = -1"),
         "training.reserved_memory_gib", ("must be >= 0",)),
    Case("zero-layers-override",
         sub('preset = "gpt3-1.3b"', 'preset = "gpt3-1.3b"\nnum_layers = 0'), "model.num_layers",
         ("must be >= 1, got 0",)),
    Case("heads-do-not-divide",
         sub('preset = "gpt3-1.3b"', 'preset = "gpt3-1.3b"\nnum_attention_heads = 7'),
         "model.num_attention_heads", ("must divide hidden_size (2048)",)),
    Case("empty-group-name", sub('name = "a100"', 'name = ""'), "cluster.node_groups[0].name",
         ("non-empty",)),
    Case("zero-stage-5", sub("zero_stage = 1", "zero_stage = 5"), "training.zero_stage",
         ("must be <= 3, got 5",)),
    Case("empty-recompute", sub("zero_stage = 1", "zero_stage = 1\nrecompute = []"),
         "training.recompute", ("at least one mode",)),
    Case("recompute-misspelt", sub("zero_stage = 1", 'zero_stage = 1\nrecompute = ["ful"]'),
         "training.recompute[0]",
         ("'ful' is not allowed", "'none', 'selective', 'full'", "did you mean 'full'")),
    Case("schedule-upper-case", sub("zero_stage = 1", 'zero_stage = 1\nschedules = ["1F1B"]'),
         "training.schedules[0]", ("did you mean '1f1b'",)),
    Case("dtype-misspelt", sub('dtype = "bf16"', 'dtype = "BF16"'), "training.dtype",
         ("expected one of 'bf16', 'fp16', 'fp32'", "did you mean 'bf16'")),
    # No plan can exist: the search said the GPUs could not hold the layers, or reported
    # negative usable memory.
    Case("virtual-stages-above-layers",
         sub("zero_stage = 1", 'zero_stage = 1\nschedules = ["1f1b", "interleaved-1f1b"]\n'
             "virtual_stages = 25"), "training.virtual_stages",
         ("must be at most the model's 24 layers with the 'interleaved-1f1b' schedule",
          "got 25")),
    # With 'interleaved-1f1b' the only schedule (2 or more stages, each a multiple of
    # virtual_stages layers, the micro-batch count a multiple of the stages): the search said
    # "all GPUs together cannot hold the 24 layers" on 640 GiB.
    Case("interleaved-only-layers-not-a-multiple",
         sub("zero_stage = 1", 'zero_stage = 1\nschedules = ["interleaved-1f1b"]\n'
             "virtual_stages = 5"), "training.virtual_stages",
         ("'interleaved-1f1b', the only schedule in training.schedules, needs 2 or more stages",
          "the model's 24 layers must be a multiple of it, at least twice it, got 5")),
    Case("interleaved-only-one-stage-of-layers",
         sub("zero_stage = 1", 'zero_stage = 1\nschedules = ["interleaved-1f1b"]\n'
             "virtual_stages = 24"), "training.virtual_stages", ("at least twice it, got 24",)),
    Case("interleaved-only-batch-without-a-stage-count",
         sub("global_batch_size = 256", "global_batch_size = 7",
             sub("zero_stage = 1", 'zero_stage = 1\nschedules = ["interleaved-1f1b"]\n'
                 "virtual_stages = 4")), "training.global_batch_size",
         ("with 24 layers, virtual_stages 4 and 8 GPUs a plan has 2 to 6 stages, none of which "
          "divides the global batch, got 7",)),
    Case("reserved-above-memory", sub("zero_stage = 1", "zero_stage = 1\nreserved_memory_gib = 80"),
         "cluster.node_groups[0].device",
         ("A100-80G has 80 GiB, no more than the 80 GiB training.reserved_memory_gib",)),
    Case("optimizer-unknown", sub("zero_stage = 1", 'zero_stage = 1\noptimizer = "sgd"'),
         "training.optimizer", ("expected one of 'adam'",)),
    # Names that do not resolve.
    Case("unknown-model-preset", sub('preset = "gpt3-1.3b"', 'preset = "gpt3-1.5b"'),
         "model.preset", ("unknown model preset 'gpt3-1.5b'", "did you mean", "known presets:")),
    Case("preset-not-string", sub('preset = "gpt3-1.3b"', "preset = 13"), "model.preset",
         ("expected a preset name string, got 13",)),
    Case("model-without-preset", sub('preset = "gpt3-1.3b"', "num_layers = 4"), "model.hidden_size",
         ("required key is missing", "preset = NAME or hf_config = PATH")),
    Case("unknown-device", sub('device = "A100-80G"', 'device = "A200"'),
         "cluster.node_groups[0].device", ("unknown device 'A200'", "known devices:", "H100",
                                           "[devices.NAME]")),
    Case("device-typo", sub('device = "A100-80G"', 'device = "A100-80"'),
         "cluster.node_groups[0].device", ("did you mean 'A100-80G'",)),
    Case("unknown-nic", sub('nic = "infiniband"', 'nic = "IB"'), "cluster.node_groups[0].nic",
         ("'IB' is not allowed", "'infiniband', 'roce', 'ethernet'")),
    Case("nic-typo", sub('nic = "infiniband"', 'nic = "infinband"'), "cluster.node_groups[0].nic",
         ("did you mean 'infiniband'",)),
    Case("bf16-on-v100", sub('device = "A100-80G"', 'device = "V100-32G"'),
         "cluster.node_groups[0].device", ("no bf16 support", "fp16")),
    Case("bf16-on-t4-second-group",
         BASE + CLUSTER.replace("[cluster]\n", "").replace('"a100"', '"t4"')
         .replace('"A100-80G"', '"T4"'),
         "cluster.node_groups[1].device", ("T4 has no bf16 support",)),
    Case("duplicate-group-names", BASE + CLUSTER.replace("[cluster]\n", ""),
         "cluster.node_groups[1].name", ("duplicate name 'a100'",)),
    # Custom devices.
    Case("device-unknown-base", BASE + '\n[devices.X]\nbase = "A100-90G"\n', "devices.X.base",
         ("unknown device 'A100-90G'", "did you mean")),
    Case("device-base-not-string", BASE + "\n[devices.X]\nbase = 100\n", "devices.X.base",
         ("expected a device preset name, got 100",)),
    Case("device-unknown-key", BASE + '\n[devices.X]\nbase = "A100-80G"\nmemory_gb = 40\n',
         "devices.X.memory_gb", ("did you mean 'memory_gib'",)),
    Case("device-missing-field", BASE + "\n[devices.X]\npeak_tflops = 100\n",
         "devices.X.memory_gib", ("required key is missing (a number)",)),
    Case("device-negative", BASE + '\n[devices.X]\nbase = "H100"\npeak_tflops = -1\n',
         "devices.X.peak_tflops", ("must be >= 1e-06, got -1",)),
    Case("device-matmul-ceiling-above-one",
         BASE + '\n[devices.X]\nbase = "H100"\nmatmul_efficiency = 1.5\n',
         "devices.X.matmul_efficiency", ("must be <= 1, got 1.5",)),
    Case("device-matmul-ceiling-zero",
         BASE + '\n[devices.X]\nbase = "H100"\nmatmul_efficiency = 0\n',
         "devices.X.matmul_efficiency", ("must be > 0, got 0",)),
    Case("device-name-key", BASE + '\n[devices.X]\nbase = "H100"\nname = "Y"\n',
         "devices.X.name", ("[devices.NAME]",)),
    Case("devices-not-table", sub('name = "t"', 'name = "t"\ndevices = ["H100"]'), "devices",
         ("expected a table of device tables",)),
    Case("device-entry-not-table", sub('name = "t"', 'name = "t"\ndevices = {X = 1}'),
         "devices.X", ("expected a table, got 1",)),
    # Hugging Face config files.
    Case("preset-and-hf-config", sub('preset = "gpt3-1.3b"',
                                     'preset = "gpt3-1.3b"\nhf_config = "hf.json"'),
         "model", ("either 'preset' or 'hf_config'",)),
    Case("hf-config-missing", BASE_HEAD + HF_MODEL + TRAINING + CLUSTER, "model.hf_config",
         ("hf.json: file not found",)),
    Case("hf-config-not-string", BASE_HEAD + "\n[model]\nhf_config = 1\n" + TRAINING + CLUSTER,
         "model.hf_config", ("expected a path string, got 1",)),
    Case("hf-config-invalid-json", BASE_HEAD + HF_MODEL + TRAINING + CLUSTER, "model.hf_config",
         ("hf.json: not valid JSON", "line 1"), setup=_hf("{'hidden_size': 4096")),
    Case("hf-config-empty", BASE_HEAD + HF_MODEL + TRAINING + CLUSTER, "model.hf_config",
         ("hf.json: file is empty",), setup=_hf("")),
    Case("hf-config-list", BASE_HEAD + HF_MODEL + TRAINING + CLUSTER, "model.hf_config",
         ("expected a JSON object",), setup=_hf("[1, 2]")),
    Case("hf-config-missing-key", BASE_HEAD + HF_MODEL + TRAINING + CLUSTER, "model.hf_config",
         ("hf.json: num_hidden_layers: required key is missing",),
         setup=_hf(_llama(num_hidden_layers=None))),
    Case("hf-config-missing-ffn", BASE_HEAD + HF_MODEL + TRAINING + CLUSTER, "model.hf_config",
         ("intermediate_size: required key is missing",),
         setup=_hf(_llama(intermediate_size=None))),
    Case("hf-config-string-value", BASE_HEAD + HF_MODEL + TRAINING + CLUSTER, "model.hf_config",
         ("intermediate_size: expected a positive integer, got the string '14336'",),
         setup=_hf(_llama(intermediate_size="14336"))),
    Case("hf-config-string-kv-heads", BASE_HEAD + HF_MODEL + TRAINING + CLUSTER,
         "model.hf_config", ("num_key_value_heads: expected a positive integer",),
         setup=_hf(_llama(num_key_value_heads="8"))),
    Case("hf-config-bad-kv-heads", BASE_HEAD + HF_MODEL + TRAINING + CLUSTER, "model.hf_config",
         ("num_key_value_heads: must divide num_attention_heads (32)",),
         setup=_hf(_llama(num_key_value_heads=5))),
    Case("hf-config-bad-tie", BASE_HEAD + HF_MODEL + TRAINING + CLUSTER, "model.hf_config",
         ("tie_word_embeddings: expected true or false",),
         setup=_hf(_llama(tie_word_embeddings="no"))),
    Case("hf-config-gpt2-bad-heads", BASE_HEAD + HF_MODEL + TRAINING + CLUSTER,
         "model.hf_config", ("n_head: must divide hidden_size (1024)",),
         setup=_hf({"n_layer": 2, "n_embd": 1024, "n_head": 7, "vocab_size": 100})),
    Case("hf-config-directory", BASE_HEAD + HF_MODEL + TRAINING + CLUSTER, "model.hf_config",
         ("is a directory",), setup=lambda d: (d / "hf.json").mkdir()),
    Case("hf-config-duplicate-key", BASE_HEAD + HF_MODEL + TRAINING + CLUSTER, "model.hf_config",
         ("hf.json: not valid JSON: the key 'hidden_size' is given twice",),
         setup=_hf(json.dumps(_llama()).replace('"hidden_size":', '"hidden_size": 1, '
                                                '"hidden_size":'))),
    Case("hf-config-binary", BASE_HEAD + HF_MODEL + TRAINING + CLUSTER, "model.hf_config",
         ("not a UTF-8 text file",), setup=lambda d: (d / "hf.json").write_bytes(b"\xff\xfe\x00")),
    # Numbers too long to read, too large for any model or cluster, or not finite.
    Case("5000-digit-int", sub("num_nodes = 1", "num_nodes = " + DIGITS),
         "cluster.node_groups[0].num_nodes",
         ("an integer of 5,000 digits (line 16, column 13) is too long to read",)),
    Case("5000-digit-int-model", sub('preset = "gpt3-1.3b"',
                                     'preset = "gpt3-1.3b"\n"num_layers" = -' + DIGITS),
         "model.num_layers", ("an integer of 5,000 digits (line 6, column 17)",)),
    Case("5000-digit-int-inline", sub('preset = "gpt3-1.3b"', 'preset = "gpt3-1.3b"\n')
         + "\n[devices]\nX = {base = 'H100', memory_gib = " + DIGITS + "}\n", None,
         ("an integer of 5,000 digits (line 24, column 34)",)),
    Case("1e300-for-int", sub('preset = "gpt3-1.3b"', 'preset = "gpt3-1.3b"\nhidden_size = 1e300'),
         "model.hidden_size", ("expected an integer, got 1e+300",)),
    # Tiny rates gave costs of 1e20 s and more, which HiGHS reads as infinity: an internal error
    # or an invalid plan instead of an answer (limits.MIN_GBIT_S, MIN_TFLOPS, MIN_GB_S).
    Case("1e-30-nic-rate", sub("nic_gbit_s = 200", "nic_gbit_s = 1e-30"),
         "cluster.node_groups[0].nic_gbit_s", ("must be >= 1e-06, got 1e-30",)),
    Case("1e-30-peak", BASE + '\n[devices.X]\nbase = "H100"\npeak_tflops = 1e-30\n',
         "devices.X.peak_tflops", ("must be >= 1e-06, got 1e-30",)),
    Case("1e-30-hbm", BASE + '\n[devices.X]\nbase = "H100"\nhbm_gb_s = 1e-30\n',
         "devices.X.hbm_gb_s", ("must be >= 1e-06, got 1e-30",)),
    Case("1e-30-straggler", BASE + '\n[[cluster.stragglers]]\nnode_group = "a100"\n'
         'compute_speed = 1e-30\n',
         "cluster.stragglers[0].compute_speed", ("must be >= 0.01, got 1e-30",)),
    Case("1e300-for-float", sub("nic_gbit_s = 200", "nic_gbit_s = 1e300"),
         "cluster.node_groups[0].nic_gbit_s", ("must be <= 1,000,000, got 1e+300",)),
    Case("huge-hex-int", sub("gpus_per_node = 8", "gpus_per_node = 0x" + "f" * 5000),
         "cluster.node_groups[0].gpus_per_node",
         ("must be <= 1,024, got an integer of about 6,021 digits",)),
    Case("huge-hex-for-choice", sub('nic = "infiniband"', "nic = 0x" + "f" * 5000),
         "cluster.node_groups[0].nic", ("an integer of about 6,021 digits is not allowed",)),
    Case("huge-hex-for-list", sub("zero_stage = 1", "zero_stage = 1\nrecompute = 0x" + "f" * 5000),
         "training.recompute", ("expected a list of values from",)),
    Case("huge-hex-for-float", sub("nic_gbit_s = 200", "nic_gbit_s = 0x" + "f" * 5000),
         "cluster.node_groups[0].nic_gbit_s", ("expected a number from -1e300 to 1e300",)),
    Case("absurd-layers", sub('preset = "gpt3-1.3b"', 'preset = "gpt3-1.3b"\nnum_layers = 100000'),
         "model.num_layers", ("must be <= 4,096, got 100000",)),
    # Each of these kept `haap solve --time-limit 5` running over 40 s in the search's set-up.
    Case("absurd-micro-batch", sub("zero_stage = 1", "zero_stage = 1\nmax_micro_batch_share = "
                                   "16777216"), "training.max_micro_batch_share",
         ("must be <= 65,536, got 16777216",)),
    Case("absurd-batch", sub("global_batch_size = 256", "global_batch_size = 16777216"),
         "training.global_batch_size", ("must be <= 1,048,576, got 16777216",)),
    Case("absurd-gpus", sub("num_nodes = 1", "num_nodes = 1000000"), "cluster.node_groups",
         ("hold 8,000,000 GPUs; a cluster has at most 4,194,304",)),
    Case("absurd-memory", BASE + '\n[devices.X]\nbase = "H100"\nmemory_gib = 1e7\n',
         "devices.X.memory_gib", ("must be <= 1,048,576, got 10000000.0",)),
    Case("expected-nan", BASE + "\n[expected]\nrel_tol = nan\n", "expected.rel_tol",
         ("expected a finite number, got nan",)),
    # An optional number's NaN said "expected a number, got nan".
    Case("optional-nan", sub("nics_per_node = 8", "nics_per_node = 8\nnic_latency_us = nan"),
         "cluster.node_groups[0].nic_latency_us", ("expected a finite number, got nan",)),
    Case("optional-inf-price", sub("nics_per_node = 8", "nics_per_node = 8\n"
                                   "price_per_gpu_hour = inf"),
         "cluster.node_groups[0].price_per_gpu_hour", ("expected a finite number, got inf",)),
    Case("recompute-repeated", sub("zero_stage = 1", 'zero_stage = 1\nrecompute = ["none", '
                                   '"none", "full", "full"]'), "training.recompute",
         ("holds at most 3 modes, got 4",)),
    # Set-like lists: a value given twice (was accepted, and searched once).
    Case("recompute-duplicate", sub("zero_stage = 1", 'zero_stage = 1\nrecompute = ["none", '
                                    '"none"]'), "training.recompute[1]",
         ("'none' is listed twice (also item 0)", "give each value once")),
    Case("schedules-duplicate", sub("zero_stage = 1", 'zero_stage = 1\nschedules = ["gpipe", '
                                    '"1f1b", "gpipe"]'), "training.schedules[2]",
         ("'gpipe' is listed twice (also item 0)",)),
    Case("duplicate-misspelt", sub("zero_stage = 1", 'zero_stage = 1\nrecompute = ["ful", '
                                   '"ful"]'), "training.recompute[0]",
         ("'ful' is not allowed", "did you mean 'full'")),
    Case("key-with-newline", sub("[training]", '[training]\n"a\\nb" = 1'),
         "training.a\\nb", ("unknown key",)),
    Case("hf-config-5000-digits", BASE_HEAD + HF_MODEL + TRAINING + CLUSTER, "model.hf_config",
         ("hf.json: hidden_size: must be <= 1,048,576, got an integer of 5,000 digits",),
         setup=_hf(json.dumps(_llama(hidden_size=1234567)).replace("1234567", DIGITS))),
    Case("hf-config-1e300", BASE_HEAD + HF_MODEL + TRAINING + CLUSTER, "model.hf_config",
         ("hf.json: hidden_size: expected a positive integer, got 1e+300",),
         setup=_hf(_llama(hidden_size=1e300))),
    Case("hf-config-huge-dropout", BASE_HEAD + HF_MODEL + TRAINING + CLUSTER, "model.hf_config",
         ("attention_dropout: expected a probability from 0 to 1, got an integer of 401 digits",),
         setup=_hf(_llama(attention_dropout=10**400))),
    Case("hf-config-gpt2-huge", BASE_HEAD + HF_MODEL + TRAINING + CLUSTER, "model.hf_config",
         ("hf.json: n_embd: must be <= 1,048,576, got 10000000",),
         setup=_hf({"n_layer": 2, "n_embd": 10**7, "n_head": 8, "vocab_size": 100})),
]


def _make_instance(tmp_path: Path, case: Case) -> Path:
    path = tmp_path / f"{case.id}.toml"
    if isinstance(case.content, bytes):
        path.write_bytes(case.content)
    elif case.content is not None:
        path.write_text(case.content)
    if case.setup is not None:
        case.setup(tmp_path)
    return path


@pytest.mark.parametrize("case", INSTANCE_CASES, ids=[c.id for c in INSTANCE_CASES])
def test_bad_instance_library(tmp_path: Path, case: Case) -> None:
    path = _make_instance(tmp_path, case)
    with pytest.raises(InputError) as info:
        load_instance(path)
    exc = info.value
    assert exc.source == str(path)
    check_message(str(exc), path, case.field, case.fragments)


@pytest.mark.parametrize("case", INSTANCE_CASES, ids=[c.id for c in INSTANCE_CASES])
def test_bad_instance_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: Case) -> None:
    path = _make_instance(tmp_path, case)
    check_cli(capsys, ["validate", str(path)], path, case.field, case.fragments)


def test_instance_is_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(InputError) as info:
        load_instance(tmp_path)
    check_message(str(info.value), tmp_path, None, ("is a directory",))
    check_cli(capsys, ["validate", str(tmp_path)], tmp_path, None, ("is a directory",))


def test_base_files_are_valid(tmp_path: Path) -> None:
    """The bad cases are small edits of files that load."""
    path = tmp_path / "ok.toml"
    path.write_text(BASE)
    load_instance(path)
    plan_from_dict(BASE_PLAN)
    profile_from_dict(tomllib.loads(BASE_PROFILE))


def test_swapped_instance_and_plan_say_so(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A plan given where the instance goes (and the reverse) is "not valid TOML" ("JSON"):
    the error also says which kind of file it is, and to check the order of the arguments; a
    file of neither kind gets no such hint."""
    instance, plan = tmp_path / "i.toml", tmp_path / "p.json"
    instance.write_text(BASE)
    plan.write_text(json.dumps(BASE_PLAN))
    for argv, source, hint in ((["evaluate", str(plan), str(instance)], plan,
                                "it is a JSON file, such as a plan"),
                               (["validate", str(instance), str(instance)], instance,
                                "it is a TOML file, such as an instance")):
        check_cli(capsys, argv, str(source), None, (hint, "order of the arguments"))
    neither = tmp_path / "n.toml"
    neither.write_text("garbage =\n")
    with pytest.raises(InputError) as info:
        load_instance(neither)
    assert "order of the arguments" not in str(info.value)


def test_a_byte_order_mark_is_not_an_error(tmp_path: Path) -> None:
    """A UTF-8 byte-order mark (some Windows editors write one) before an instance, a plan or a
    profile: the file loads as without it (TOML and JSON parsers refuse one)."""
    from haap_solver.plan import load_plan

    bom = b"\xef\xbb\xbf"
    plain, marked = tmp_path / "plain.toml", tmp_path / "marked.toml"
    plain.write_text(BASE)
    marked.write_bytes(bom + BASE.encode())
    from dataclasses import replace

    expected = load_instance(plain)
    assert replace(load_instance(marked), source=expected.source) == expected
    plan = tmp_path / "plan.json"
    plan.write_bytes(bom + json.dumps(BASE_PLAN).encode())
    assert load_plan(plan) == plan_from_dict(BASE_PLAN)
    profile = tmp_path / "profile.toml"
    profile.write_bytes(bom + BASE_PROFILE.encode())
    assert load_profile(profile).entries == profile_from_dict(
        tomllib.loads(BASE_PROFILE)).entries


# -- Every field, every wrong kind of value: InputError or success, never another exception --
WRONG_VALUES: list[Any] = ["x", "", 1.5, 0, -1, True, [1], {"a": 1}, [], float("nan"), 10**30]


def _leaves(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = []
    if isinstance(data, dict):
        for k, v in data.items():
            out.append((*path, k))
            out.extend(_leaves(v, (*path, k)))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out.append((*path, i))
            out.extend(_leaves(v, (*path, i)))
    return out


def _set(data: Any, path: tuple[Any, ...], value: Any) -> Any:
    data = copy.deepcopy(data)
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


def _only_input_errors(build: Callable[[Any], Any], data: Any) -> int:
    failures = 0
    for path in _leaves(data):
        for value in WRONG_VALUES:
            try:
                build(_set(data, path, value))
            except InputError as exc:
                failures += 1
                check_message(str(exc), "f", None, ())
    return failures


def test_every_instance_field_fails_cleanly() -> None:
    data = tomllib.loads(BASE + '\n[devices.X]\nbase = "H100"\n\n[expected]\nfeasible = true\n')
    assert _only_input_errors(lambda d: instance_from_dict(d, source="f"), data) > 100


def test_every_plan_field_fails_cleanly() -> None:
    assert _only_input_errors(lambda d: plan_from_dict(d, source="f"), BASE_PLAN) > 100


def test_every_profile_field_fails_cleanly() -> None:
    data = tomllib.loads(BASE_PROFILE)
    assert _only_input_errors(lambda d: profile_from_dict(d, source="f"), data) > 50


# -- Plan files ------------------------------------------------------------------------------
def _plan(**changes: Any) -> str:
    data = copy.deepcopy(BASE_PLAN)
    for k, v in changes.items():
        if v is None:
            data.pop(k)
        else:
            data[k] = v
    return json.dumps(data)


def _plan_at(path: tuple[Any, ...], value: Any) -> str:
    return json.dumps(_set(BASE_PLAN, path, value))


def _plan_without(path: tuple[Any, ...]) -> str:
    data = copy.deepcopy(BASE_PLAN)
    node = data
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return json.dumps(data)


REPLICA = ("stages", 0, "replicas", 0)

PLAN_CASES = [
    Case("missing-file", None, None, ("file not found",)),
    Case("empty", "", None, ("file is empty",)),
    Case("binary", b"\x00\x01\xff\xfe", None, ("not a UTF-8 text file",)),
    Case("invalid-json", '{"schema_version": 1,', None, ("not valid JSON", "line 1")),
    Case("trailing-comma", '{"schema_version": 1,}', None, ("not valid JSON",)),
    Case("toml-instead-of-json", "schema_version = 1\n", None, ("not valid JSON",)),
    Case("top-level-list", "[1, 2]", None, ("expected a JSON object", "got a list")),
    Case("no-schema-version", _plan(schema_version=None), "schema_version",
         ("required key is missing", "writes 1")),
    Case("schema-version-99", _plan(schema_version=99), "schema_version",
         ("reads schema_version 1, got 99",)),
    Case("schema-version-99-other-shape", json.dumps({"schema_version": 99, "pipeline": []}),
         "schema_version", ("got 99",)),
    Case("schema-version-string", _plan(schema_version="1"), "schema_version",
         ("expected the integer 1, got the string '1'",)),
    Case("unknown-key", _plan(micro_batch_szie=8), "micro_batch_szie",
         ("unknown key", "did you mean 'micro_batch_size'")),
    Case("missing-key", _plan(num_micro_batches=None), "num_micro_batches",
         ("required key is missing (an integer)",)),
    Case("stages-not-a-list", _plan(stages={"first_layer": 0}), "stages",
         ("expected a list of tables, got a table",)),
    Case("stages-a-string", _plan(stages="all"), "stages", ("expected a list of tables",)),
    Case("stage-not-a-table", _plan(stages=[1]), "stages[0]", ("expected a table, got 1",)),
    Case("stage-unknown-key", _plan_at(("stages", 0, "recomp"), "full"), "stages[0].recomp",
         ("did you mean 'recompute'",)),
    Case("stage-recompute-misspelt", _plan_at(("stages", 0, "recompute"), "ful"),
         "stages[0].recompute", ("did you mean 'full'",)),
    Case("schedule-wrong", _plan(schedule="1F1B"), "schedule", ("did you mean '1f1b'",)),
    Case("placement-string-node", _plan_at((*REPLICA, "placement", 0, "node"), "0"),
         "stages[0].replicas[0].placement[0].node", ("expected an integer, got the string '0'",)),
    Case("placement-not-list", _plan_at((*REPLICA, "placement"), {"node": 0, "replicas": 8}),
         "stages[0].replicas[0].placement", ("expected a list of tables",)),
    Case("replica-missing-tp", _plan_without((*REPLICA, "tp")), "stages[0].replicas[0].tp",
         ("required key is missing",)),
    Case("replica-float-count", _plan_at((*REPLICA, "count"), 2.5), "stages[0].replicas[0].count",
         ("expected an integer, got 2.5",)),
    Case("replica-bool-tp", _plan_at((*REPLICA, "tp"), True), "stages[0].replicas[0].tp",
         ("expected an integer, got true",)),
    Case("replica-device-number", _plan_at((*REPLICA, "device"), 100),
         "stages[0].replicas[0].device", ("expected a string, got 100",)),
    Case("nan-batch", '{"schema_version": 1, "micro_batch_size": NaN, "num_micro_batches": 1, '
         '"stages": []}', "micro_batch_size", ("expected an integer, got nan",)),
    Case("note-not-string", _plan(note=["a"]), "note", ("expected a string, got a list",)),
    # A key given twice: a JSON reader keeps the last value (was read silently).
    Case("duplicate-key", _plan().replace('"micro_batch_size": 8,',
                                          '"micro_batch_size": 8, "micro_batch_size": 16,'),
         None, ("not valid JSON: the key 'micro_batch_size' is given twice in one object",)),
    Case("duplicate-key-deep", _plan().replace('"tp": 1,', '"tp": 1, "tp": 2,'), None,
         ("not valid JSON: the key 'tp' is given twice",)),
    # Numbers and sizes no plan has.
    Case("5000-digit-batch", _plan(micro_batch_size=1234567).replace("1234567", DIGITS),
         "micro_batch_size", ("must be <= 1,048,576, got an integer of 5,000 digits",)),
    Case("negative-5000-digit-count", _plan_at((*REPLICA, "count"), -1234567)
         .replace("1234567", DIGITS), "stages[0].replicas[0].count",
         ("must be >= 1, got a negative integer of 5,000 digits",)),
    Case("1e300-count", _plan_at((*REPLICA, "count"), 1e300), "stages[0].replicas[0].count",
         ("expected an integer, got 1e+300",)),
    # A whole float is not an integer (was read as 8, silently).
    Case("whole-float-count", _plan_at((*REPLICA, "count"), 8.0), "stages[0].replicas[0].count",
         ("expected an integer, got 8.0 (write 8, without a decimal point)",)),
    Case("whole-float-batch", _plan(micro_batch_size=8.0), "micro_batch_size",
         ("expected an integer, got 8.0",)),
    Case("bool-node", _plan_at((*REPLICA, "placement", 0, "node"), False),
         "stages[0].replicas[0].placement[0].node", ("expected an integer, got false",)),
    Case("1e400-tp", _plan_at((*REPLICA, "tp"), 1234567).replace("1234567", "1e400"),
         "stages[0].replicas[0].tp", ("expected an integer, got inf",)),
    Case("4099-stages", _plan(stages=[BASE_PLAN["stages"][0]] * 4099), "stages",
         ("holds at most 4,098 stages, got 4,099",)),
    Case("negative-node", _plan_at((*REPLICA, "placement", 0, "node"), -1),
         "stages[0].replicas[0].placement[0].node", ("must be >= 0, got -1",)),
    Case("key-with-newline", _plan(**{"a\nb\u202e": 1}), "a\\nb\\u202e", ("unknown key",)),
]


def _make_file(tmp_path: Path, case: Case, suffix: str) -> Path:
    path = tmp_path / f"{case.id}{suffix}"
    if isinstance(case.content, bytes):
        path.write_bytes(case.content)
    elif case.content is not None:
        path.write_text(case.content)
    return path


@pytest.mark.parametrize("case", PLAN_CASES, ids=[c.id for c in PLAN_CASES])
def test_bad_plan_library(tmp_path: Path, case: Case) -> None:
    path = _make_file(tmp_path, case, ".json")
    with pytest.raises(InputError) as info:
        load_plan(path)
    check_message(str(info.value), path, case.field, case.fragments)


@pytest.mark.parametrize("case", PLAN_CASES, ids=[c.id for c in PLAN_CASES])
def test_bad_plan_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: Case) -> None:
    instance = tmp_path / "instance.toml"
    instance.write_text(BASE)
    path = _make_file(tmp_path, case, ".json")
    check_cli(capsys, ["evaluate", str(instance), str(path)], path, case.field, case.fragments)


def test_plan_is_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(InputError) as info:
        load_plan(tmp_path)
    check_message(str(info.value), tmp_path, None, ("is a directory",))
    instance = tmp_path / "instance.toml"
    instance.write_text(BASE)
    check_cli(capsys, ["evaluate", str(instance), str(tmp_path)], tmp_path, None,
              ("is a directory",))


# -- Profile files ---------------------------------------------------------------------------
def _entry(old: str, new: str) -> str:
    return sub(old, new, BASE_PROFILE)


PROFILE_CASES = [
    Case("missing-file", None, None, ("profile file not found",)),
    Case("empty", "", None, ("file is empty", "[[entry]]")),
    Case("binary", b"\xff\xfe\x00\x00", None, ("not a UTF-8 text file",)),
    Case("invalid-toml", "[[entry]\n", None, ("not valid TOML",)),
    Case("unknown-top-key", BASE_PROFILE.replace("[[entry]]", "[[entries]]"), "entries",
         ("did you mean 'entry'",)),
    Case("no-entries", 'description = "nothing measured"\n', "entry",
         ("at least one [[entry]] table",)),
    Case("entry-single-table", 'description = "x"\n[entry]\ndevice = "H100"\n', "entry",
         ("expected a list of tables, got a table", "[[entry]]")),
    Case("entry-unknown-key", _entry("layer_fwd_s = 0.010", "layer_fwd = 0.010"),
         "entry[0].layer_fwd", ("did you mean 'layer_fwd_s'",)),
    Case("entry-missing-key", _entry("layer_bwd_s = 0.020\n", ""), "entry[0].layer_bwd_s",
         ("required key is missing (a number)",)),
    Case("entry-negative-time", _entry("layer_bwd_s = 0.020", "layer_bwd_s = -0.020"),
         "entry[0].layer_bwd_s", ("must be > 0, got -0.02",)),
    Case("entry-zero-tp", _entry("tp = 1", "tp = 0"), "entry[0].tp", ("must be >= 1, got 0",)),
    Case("entry-string-micro-batch", _entry("micro_batch = 1", 'micro_batch = "1"'),
         "entry[0].micro_batch", ("expected an integer, got the string '1'",)),
    Case("entry-extrapolated", _entry("tp = 1", 'tp = 1\nextrapolated = "yes"'),
         "entry[0].extrapolated", ("set by lookups",)),
    Case("entry-duplicate", _entry("micro_batch = 2", "micro_batch = 1"), "entry[1]",
         ("duplicate of entry[0]",)),
    Case("description-not-string", _entry('description = "test"', "description = 1"),
         "description", ("expected a string, got 1",)),
    # Numbers no measurement has: too long to read, beyond the range.
    Case("entry-5000-digit-tp", _entry("tp = 1", "tp = " + DIGITS), "entry[0].tp",
         ("an integer of 5,000 digits (line 6, column 6) is too long to read",)),
    Case("entry-huge-time", _entry("layer_fwd_s = 0.010", "layer_fwd_s = 1e300"),
         "entry[0].layer_fwd_s", ("must be <= 1,000,000,000, got 1e+300",)),
    Case("entry-huge-tp", _entry("tp = 1", "tp = 4096"), "entry[0].tp",
         ("must be <= 1,024, got 4096",)),
]


@pytest.mark.parametrize("case", PROFILE_CASES, ids=[c.id for c in PROFILE_CASES])
def test_bad_profile_library(tmp_path: Path, case: Case) -> None:
    path = _make_file(tmp_path, case, ".toml")
    with pytest.raises(InputError) as info:
        load_profile(path)
    check_message(str(info.value), path, case.field, case.fragments)


@pytest.mark.parametrize("case", PROFILE_CASES, ids=[c.id for c in PROFILE_CASES])
def test_bad_profile_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: Case) -> None:
    path = _make_file(tmp_path, case, ".toml")
    instance = tmp_path / "instance.toml"
    instance.write_text(sub('name = "t"', f'name = "t"\nprofile = "{path.name}"'))
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(BASE_PLAN))
    if case.id == "missing-file":  # the instance's field names a file that is not there
        check_cli(capsys, ["evaluate", str(instance), str(plan)], str(instance), "profile",
                  ("no profile file", str(path)))
        return
    check_cli(capsys, ["evaluate", str(instance), str(plan)], str(path), case.field,
              case.fragments)


def test_profile_is_a_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load_profile(tmp_path)
    check_message(str(info.value), tmp_path, None, ("is a directory",))


# -- User text is printed as text: never read as rich markup or emoji codes ----------------------
MARKUP = ("[/bold]x", "[/]", "[red]r[/red] :smile:", "[link=file:///etc]l")
TOY = Path(__file__).resolve().parent.parent / "instances" / "small" / "toy-gpt-6l-a100x2-t4x2.toml"


def _markup_instance(directory: Path) -> Path:
    """The toy instance with rich markup in the instance, model, node-group and device names."""
    text = TOY.read_text()
    text = sub('name = "toy-gpt-6l"', f'name = "{MARKUP[1]}"', text)
    text = sub('name = "a100"', f'name = "{MARKUP[2]}"', text)
    text = sub('name = "t4"', f'name = "{MARKUP[3]}"', text)
    text = sub('device = "A100-80G"', 'device = "[b]gpu"', text)
    text = f'name = "{MARKUP[0]}"\n' + text.split("\n", 1)[1]
    text += '\n[devices."[b]gpu"]\nbase = "A100-80G"\n'
    path = directory / "[" / "bold]instance.toml"  # the path reads [/bold]instance.toml
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def test_markup_in_names_is_printed_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """validate, solve (table, summary, 'plan written to') and evaluate print names verbatim."""
    # Lines as wide as the message: the temporary path's length (longer under pytest-xdist)
    # must not move where rich wraps the line this test compares whole.
    monkeypatch.setenv("COLUMNS", "1000")
    instance = _markup_instance(tmp_path)
    assert load_instance(instance).name == MARKUP[0]
    plan = tmp_path / "[" / "]plan.json"
    errs = {}
    for name, argv in (
            ("validate", ["validate", str(instance)]),
            ("solve", ["solve", str(instance), "--time-limit", "20", "--no-progress", "-o",
                       str(plan)]),
            ("evaluate", ["evaluate", str(instance), str(plan)]),
            ("validate-plan", ["validate", str(instance), str(plan)])):
        capsys.readouterr()
        code = main(argv)
        _, errs[name] = capsys.readouterr()
        assert code == 0, (argv, errs[name])
        assert "haap: error" not in errs[name], errs[name]
    assert errs["validate"] == f"ok {instance}: {MARKUP[1]}, 4 GPUs in 2 node group(s)\n"
    assert f"ok {plan}: " in errs["validate-plan"]
    assert f"plan written to {plan}" in errs["solve"]
    for err in (errs["solve"], errs["evaluate"]):
        # The tables name the instance, the model, the node groups and the device as written.
        assert f"{MARKUP[0]}: {MARKUP[1]}" in err, err
        assert f"[b]gpu ({MARKUP[2]})" in err or f"T4 ({MARKUP[3]})" in err, err


# -- Huge plans: refused at once, and an error lists at most MAX_LISTED violations ----------------
def test_plan_of_236966_stages_is_refused_before_its_stages_are_read() -> None:
    data = {**BASE_PLAN, "stages": [BASE_PLAN["stages"][0]] * 236_966}
    with pytest.raises(InputError) as info:
        plan_from_dict(data, source="big.json")
    check_message(str(info.value), "big.json", "stages",
                  ("holds at most 4,098 stages, got 236,966",))


def _many_stage_plan(stages: int, *, device: str = "A100-80G", tp: int = 1) -> Plan:
    replica = {"node_group": "a100", "device": device, "count": 1, "tp": tp,
               "micro_batch_share": 8, "placement": [{"node": 0, "replicas": 1}]}
    return plan_from_dict({**BASE_PLAN, "stages": [
        {"first_layer": 0, "num_layers": 1, "replicas": [replica]}] * stages})


def test_validator_refuses_more_stages_than_layers_at_once(tmp_path: Path) -> None:
    """27 stages for 24 layers: one message about the size, not one per stage."""
    path = tmp_path / "ok.toml"
    path.write_text(BASE)
    instance = load_instance(path)
    violations = plan_violations(instance, _many_stage_plan(27))
    assert violations == [
        "plan has 27 stages but the model has 24 layers: at most 26 stages (one per layer, an "
        "embedding-only first and a head-only last stage)",
        "plan has 27 replica groups but the cluster has 8 GPUs (a replica group uses at least "
        "one)",
        "plan places replicas 27 times but the cluster has 8 GPUs (a placement uses at least one)"]
    assert len(plan_violations(instance, _many_stage_plan(8))) > 3  # checked one by one


def test_plan_error_lists_the_first_violations_and_counts_the_rest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ok.toml"
    path.write_text(BASE)
    plan = _many_stage_plan(8, device="H100", tp=3)
    violations = plan_violations(load_instance(path), plan)
    assert len(violations) > MAX_LISTED + 5
    plan_path = tmp_path / "plan.json"
    plan.save(plan_path)
    capsys.readouterr()
    assert main(["validate", str(path), str(plan_path)]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == (f"haap: error: {plan_path}: plan is invalid ({len(violations)} "
                        "violation(s)):")
    assert lines[1:-1] == [f"  - {v}" for v in violations[:MAX_LISTED]]
    assert lines[-1] == f"  ... and {len(violations) - MAX_LISTED} more"


# -- Numeric command-line options: NaN, infinities, negatives and absurd values are usage errors --
# The instance file does not exist: the options are checked first, and a check that let a value
# through would end on the missing file instead of running anything.
OPTION_CASES = [
    ("solve", "--time-limit", "nan", "must be a finite number, got nan"),
    ("solve", "--time-limit", "inf", "must be a finite number, got inf"),
    ("solve", "--time-limit", "-inf", "must be a finite number, got -inf"),
    ("solve", "--time-limit", "0", "must be > 0, got 0.0"),
    ("solve", "--time-limit", "-5", "must be > 0, got -5.0"),
    ("solve", "--time-limit", "1e308", "must be <= 10,000,000, got 1e+308"),
    ("solve", "--gap", "nan", "must be a fraction in [0, 1) (0.01 for 1%), got nan"),
    ("solve", "--gap", "inf", "must be a fraction in [0, 1) (0.01 for 1%), got inf"),
    ("solve", "--gap", "-0.1", "must be a fraction in [0, 1) (0.01 for 1%), got -0.1"),
    ("solve", "--threads", "0", "must be >= 1, got 0"),
    ("solve", "--threads", "100000", "must be <= 256, got 100000"),
    ("solve", "--seed", "-1", "must be >= 0, got -1"),
    ("solve", "--seed", str(2**40), "must be <= 2,147,483,646, got 1099511627776"),
    ("solve", "--max-stages", "0", "must be >= 1, got 0"),
    ("solve", "--max-stages", "99999", "must be <= 4,098, got 99999"),
    ("compare", "--time-limit", "nan", "must be a finite number, got nan"),
    ("compare", "--threads", "-2", "must be >= 1, got -2"),
    ("compare", "--seed", "-1", "must be >= 0, got -1"),
    ("bench", "--time-limit", "nan", "must be a finite number, got nan"),
    ("bench", "--threads", "0", "must be >= 1, got 0"),
]


@pytest.mark.parametrize(("command", "option", "value", "message"), OPTION_CASES,
                         ids=[f"{c}{o}={v}" for c, o, v, _ in OPTION_CASES])
def test_bad_numeric_options(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str,
                             option: str, value: str, message: str) -> None:
    capsys.readouterr()
    code = main([command, str(tmp_path / "missing.toml"), f"{option}={value}"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), err
    assert err == f"haap: error: {option}: {message}\n"


def test_plot_with_nothing_to_draw_is_a_usage_error(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 2, as every usage error (was 1, the code of an invalid plan)."""
    capsys.readouterr()
    assert main(["plot", str(TOY), str(tmp_path / "plan.json")]) == 2
    assert capsys.readouterr().err == ("haap: error: nothing to draw: give --gantt FILE.png "
                                       "and/or --memory FILE.png\n")


def test_bad_plot_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    code = main(["plot", str(tmp_path / "missing.toml"), str(tmp_path / "missing.json"),
                 "--gantt", str(tmp_path / "g.png"), "--micro-batches", "0"])
    assert code == 2
    assert capsys.readouterr().err == "haap: error: --micro-batches: must be >= 1, got 0\n"


# -- Fuzzing the loaders: any file is either read or refused with one clean line ------------------
# Structured mutations of the shipped files (wrong types, huge, negative and non-finite numbers,
# 5,000-digit integers, deep nesting, unknown keys, unicode and rich markup in names, empty
# tables, long lists) and raw mutations of their text. A file that is read is then used (costed,
# validated, evaluated, looked up) so that an accepted value cannot crash what comes after.
ROOT = Path(__file__).resolve().parent.parent
# 100 examples a loader, the same ones every run; HAAP_FUZZ_EXAMPLES=5000 HAAP_FUZZ_RANDOM=1 to
# explore further (not in CI).
FUZZ = settings(max_examples=int(os.environ.get("HAAP_FUZZ_EXAMPLES", "100")), deadline=None,
                derandomize=not os.environ.get("HAAP_FUZZ_RANDOM"), database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
TOY_PLAN: dict[str, Any] = {"schema_version": 1, "micro_batch_size": 8, "num_micro_batches": 1,
                            "stages": [
    {"first_layer": 0, "num_layers": 4, "recompute": "none", "replicas": [
        {"node_group": "a100", "device": "A100-80G", "count": 2, "tp": 1,
         "micro_batch_share": 4, "placement": [{"node": 0, "replicas": 2}]}]},
    {"first_layer": 4, "num_layers": 2, "recompute": "full", "replicas": [
        {"node_group": "t4", "device": "T4", "count": 1, "tp": 2, "micro_batch_share": 8,
         "placement": [{"node": 0, "replicas": 1}]}]}]}


@dataclass(frozen=True)
class Raw:
    """Text written into a file as it is: a literal no parsed value can hold (5,000 digits)."""

    toml: str
    json: str

    def __repr__(self) -> str:  # hypothesis prints failing examples
        return f"Raw({self.toml[:20]!r}... {len(self.toml)} characters)"


def _nest(depth: int, table: bool) -> Raw:
    if table:
        return Raw("{a = " * depth + "1" + "}" * depth, '{"a": ' * depth + "1" + "}" * depth)
    return Raw("[" * depth + "1" + "]" * depth, "[" * depth + "1" + "]" * depth)


HOSTILE_VALUES: list[Any] = [
    0, -1, 1, 3, 2**31, -(2**63), 2**64, 10**30, 10**400, 1e300, -1e300, 1e-300, -0.0, 0.5, 2.0,
    float("nan"), float("inf"), float("-inf"), True, False, None, [], {}, [1], {"a": 1},
    Raw("9" * 5000, "9" * 5000), Raw("-" + "9" * 5000, "-" + "9" * 5000),
    Raw("0x" + "f" * 5000, "1e99999"), Raw("1" + "0" * 400 + ".0", "1" + "0" * 400 + ".0"),
    _nest(3000, table=False), _nest(3000, table=True), _nest(60, table=False),
    "", " ", "[/bold]x", "[/]", "[red]", ":smile:", "a\nb", "tab\there", "\u202eevil", "\x00",
    "é中🙂", "a" * 5000, "../../nowhere", "/dev/null", "A100-80G", "a100", "t4", "none", "full",
    "1f1b", "gpt3-1.3b", "H100",
]
HOSTILE_KEYS = ["", "[/bold]", "a.b", "name ", "Name", "é", "\u202e", "x" * 300, "stages",
                "num_layers", "entry", "preset"]
NUMBER_LITERALS = ["9" * 5000, "-" + "9" * 5000, "0x" + "f" * 5000, "1e300", "-1e300", "nan",
                   "inf", "-inf", "0", "-0", "-1", "1_000", "99999999999999999999", "1e-300",
                   "0.5", "4096", "4097", "1048577"]
STRING_LITERALS = ['"[/bold]x"', '"[/]"', '""', '"\\u202e"', '"é中🙂"', '":smile:"', '"\\n"']


def _toml_value(value: Any) -> str:
    if isinstance(value, Raw):
        return value.toml
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) \
            + "}"
    return "@"  # None and anything else TOML cannot say: a syntax error


def to_toml(data: dict[str, Any]) -> str:
    """A TOML document of one line per top-level key, nested tables written inline."""
    return "".join(f"{json.dumps(k)} = {_toml_value(v)}\n" for k, v in data.items())


def _json_value(value: Any) -> str:
    if isinstance(value, Raw):
        return value.json
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, list):
        return "[" + ", ".join(_json_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {_json_value(v)}" for k, v in value.items()) \
            + "}"
    return json.dumps(value)


@st.composite
def mutated(draw: st.DrawFn, data: Any) -> Any:
    """`data` after one to three structural mutations at random places."""
    data = copy.deepcopy(data)
    for _ in range(draw(st.integers(1, 3))):
        paths = _leaves(data)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        kind = draw(st.sampled_from(["set", "set", "set", "delete", "add-key", "wrap", "empty",
                                     "repeat", "rename"]))
        if kind == "set":
            parent[key] = draw(st.one_of(st.sampled_from(HOSTILE_VALUES), st.integers(),
                                         st.floats(), st.text(max_size=12)))
        elif kind == "delete" and isinstance(parent, dict):
            del parent[key]
        elif kind == "add-key" and isinstance(parent[key], dict):
            parent[key][draw(st.sampled_from(HOSTILE_KEYS))] = draw(st.sampled_from(HOSTILE_VALUES))
        elif kind == "wrap":
            parent[key] = [parent[key]]
        elif kind == "empty":
            parent[key] = {} if isinstance(parent[key], (dict, list)) else []
        elif kind == "repeat" and isinstance(parent[key], list) and parent[key]:
            parent[key] = parent[key] * draw(st.sampled_from([2, 50, 5000]))
        elif kind == "rename" and isinstance(parent, dict):
            parent[draw(st.sampled_from(HOSTILE_KEYS))] = parent.pop(key)
    return data


@st.composite
def mutated_text(draw: st.DrawFn, text: str) -> str:
    """`text` with a number or a string replaced by a hostile literal, truncated, or spliced."""
    kind = draw(st.sampled_from(["number", "number", "string", "truncate", "insert"]))
    if kind in ("number", "string"):
        pattern = r"(?<![\w.\"])-?\d+(?:\.\d+)?(?![\w.])" if kind == "number" else r'"[^"\n]*"'
        spots = list(re.finditer(pattern, text))
        if spots:
            spot = draw(st.sampled_from(spots))
            new = draw(st.sampled_from(NUMBER_LITERALS if kind == "number" else STRING_LITERALS))
            return text[:spot.start()] + new + text[spot.end():]
    position = draw(st.integers(0, len(text)))
    if kind == "truncate":
        return text[:position]
    return text[:position] + draw(st.text(max_size=8)) + text[position:]


def _refused_cleanly(exc: InputError, path: Path | str) -> None:
    """One line starting with the file; a field, unless the file does not parse at all."""
    message = str(exc)
    check_message(message, path, None, ())
    whole_file = ("not valid TOML", "not valid JSON", "file is empty", "expected a table at the "
                  "top level", "expected a JSON object", "an integer of ", "not a UTF-8")
    assert exc.field is not None or exc.message.startswith(whole_file), message


def _try_load(load: Callable[[Path], Any], path: Path) -> Any:
    try:
        return load(path)
    except InputError as exc:
        _refused_cleanly(exc, path)
        return None


def _use_instance(instance: Any, plan: dict[str, Any] | None) -> None:
    """What the CLI does with an instance that loaded: cost model, validation, evaluation."""
    try:
        cm = CostModel(instance)
        if plan is not None and not plan_violations(instance, plan_from_dict(plan), cost_model=cm):
            cm.evaluate(plan_from_dict(plan))
    except InputError as exc:  # its profile file
        _refused_cleanly(exc, exc.source or "")


INSTANCE_SEEDS = sorted((ROOT / "instances").glob("*.toml")) + sorted(
    (ROOT / "instances" / "small").glob("*.toml"))
PLANS_FOR = {"toy-gpt-6l-a100x2-t4x2.toml": TOY_PLAN}


@FUZZ
@given(seed=st.sampled_from(INSTANCE_SEEDS), data=st.data())
def test_fuzz_instance_files(tmp_path_factory: pytest.TempPathFactory, seed: Path,
                             data: st.DataObject) -> None:
    directory = tmp_path_factory.mktemp("fuzz")
    path = directory / "instance.toml"
    text = seed.read_text()
    if data.draw(st.booleans()):
        path.write_text(to_toml(data.draw(mutated(tomllib.loads(text)))))
    else:
        path.write_text(data.draw(mutated_text(text)))
    instance = _try_load(load_instance, path)
    if instance is not None:
        _use_instance(instance, PLANS_FOR.get(seed.name))


@FUZZ
@given(seed=st.sampled_from(["base", "toy"]), data=st.data())
def test_fuzz_plan_files(tmp_path_factory: pytest.TempPathFactory, seed: str,
                         data: st.DataObject) -> None:
    directory = tmp_path_factory.mktemp("fuzz")
    instance_path = directory / "instance.toml"
    instance_path.write_text(BASE) if seed == "base" else None
    instance = load_instance(instance_path if seed == "base" else ROOT / "instances" / "small" /
                             "toy-gpt-6l-a100x2-t4x2.toml")
    plan = BASE_PLAN if seed == "base" else TOY_PLAN
    path = directory / "plan.json"
    if data.draw(st.booleans()):
        path.write_text(_json_value(data.draw(mutated(plan))))
    else:
        path.write_text(data.draw(mutated_text(json.dumps(plan, indent=1))))
    loaded = _try_load(load_plan, path)
    if loaded is not None and not plan_violations(instance, loaded):
        CostModel(instance).evaluate(loaded)


PROFILE_SEEDS = [*sorted((ROOT / "tests" / "data" / "profiles").glob("*.toml")), None]


@FUZZ
@given(seed=st.sampled_from(PROFILE_SEEDS), data=st.data())
def test_fuzz_profile_files(tmp_path_factory: pytest.TempPathFactory, seed: Path | None,
                            data: st.DataObject) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "profile.toml"
    text = seed.read_text() if seed is not None else BASE_PROFILE
    if data.draw(st.booleans()):
        path.write_text(to_toml(data.draw(mutated(tomllib.loads(text)))))
    else:
        path.write_text(data.draw(mutated_text(text)))
    profile = _try_load(load_profile, path)
    if profile is not None:
        for device in profile.devices:
            for tp in (1, 3, 8):
                for micro_batch in (1, 5, 64):
                    entry = profile.lookup(device, tp, micro_batch)
                    assert entry.layer_fwd_s > 0 and entry.layer_bwd_s > 0


HF_SEEDS = sorted((ROOT / "tests" / "data" / "hf").glob("*/config.json"))


@FUZZ
@given(seed=st.sampled_from(HF_SEEDS), data=st.data())
def test_fuzz_hf_config_files(tmp_path_factory: pytest.TempPathFactory, seed: Path,
                              data: st.DataObject) -> None:
    directory = tmp_path_factory.mktemp("fuzz")
    path = directory / "config.json"
    if data.draw(st.booleans()):
        path.write_text(_json_value(data.draw(mutated(json.loads(seed.read_text())))))
    else:
        path.write_text(data.draw(mutated_text(seed.read_text())))
    model = _try_load(model_from_hf_config, path)
    if model is not None:
        assert model.total_params > 0
        # The same file through an instance: a clean error names the instance and hf_config.
        instance = directory / "instance.toml"
        instance.write_text(BASE_HEAD + HF_MODEL.replace("hf.json", "config.json") + TRAINING
                            + CLUSTER)
        loaded = _try_load(load_instance, instance)
        if loaded is not None:
            _use_instance(loaded, None)


@pytest.mark.parametrize("raw", [b"", b"\x00" * 100, b"\xef\xbb\xbf", "\ufeff{}".encode(),
                                 b"\xff" * 10, "é".encode("utf-16"), b"[" * 100_000,
                                 b"{" * 100_000, b'{"a":' * 100_000, b"a = [" * 50_000,
                                 b"a = {b = " * 50_000, b"[[a]]\n" * 20_000])
@pytest.mark.parametrize("loader", ["instance", "plan", "profile", "hf"])
def test_raw_bytes_are_refused_cleanly(tmp_path: Path, raw: bytes, loader: str) -> None:
    path = tmp_path / "file"
    path.write_bytes(raw)
    load = {"instance": load_instance, "plan": load_plan, "profile": load_profile,
            "hf": model_from_hf_config}[loader]
    with pytest.raises(InputError) as info:
        load(path)
    _refused_cleanly(info.value, path)


def _hostile_files(directory: Path) -> dict[str, tuple[str, Path]]:
    """(kind, file) of hostile files the CLI gets: each must give one line and exit 2 (the
    instance profiled.toml names the bad profile.toml)."""
    def write(name: str, text: str) -> Path:
        path = directory / name
        path.write_text(text)
        return path

    (directory / "hf.json").write_text(json.dumps(_llama(hidden_size=1234567))
                                       .replace("1234567", DIGITS))
    write("profile.toml", _entry("tp = 1", "tp = " + DIGITS))
    return {
        "5000-digits": ("instance", write("digits.toml", sub("num_nodes = 1",
                                                             "num_nodes = " + DIGITS))),
        "1e300": ("instance", write("huge.toml", sub(
            'preset = "gpt3-1.3b"', 'preset = "gpt3-1.3b"\nhidden_size = 1e300'))),
        "deep": ("instance", write("deep.toml", BASE + "x = " + "[" * 5000 + "]" * 5000 + "\n")),
        "hf-5000-digits": ("instance", write("hf.toml", BASE_HEAD + HF_MODEL + TRAINING + CLUSTER)),
        "profile-5000-digits": ("instance", write("profiled.toml", sub(
            'name = "t"', 'name = "t"\nprofile = "profile.toml"'))),
        "plan-5000-digits": ("plan", write("digits.json", _plan(num_micro_batches=1234567)
                                           .replace("1234567", DIGITS))),
        "plan-4099-stages": ("plan", write("stages.json",
                                           _plan(stages=[BASE_PLAN["stages"][0]] * 4099))),
        "plan-nan": ("plan", write("nan.json", _plan(micro_batch_size=1234567)
                                   .replace("1234567", "NaN"))),
        "plan-deep": ("plan", write("deep.json", "[" * 100_000)),
    }


@pytest.mark.parametrize("command", ["validate", "evaluate", "solve"])
def test_hostile_files_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       command: str) -> None:
    """Exit 2 and exactly one 'haap: error: FILE: ...' line on stderr, no traceback."""
    good_instance = tmp_path / "good.toml"
    good_instance.write_text(BASE)
    good_plan = tmp_path / "good.json"
    good_plan.write_text(json.dumps(BASE_PLAN))
    checked = 0
    for kind, path in _hostile_files(tmp_path).values():
        if command == "solve" and kind == "plan":
            continue
        instance, plan = (path, good_plan) if kind == "instance" else (good_instance, path)
        argv = {"validate": ["validate", str(instance), str(plan)],
                "evaluate": ["evaluate", str(instance), str(plan)],
                "solve": ["solve", str(instance), "--time-limit", "1", "--no-progress"]}[command]
        capsys.readouterr()
        code = main(argv)
        out, err = capsys.readouterr()
        assert (code, out) == (2, ""), (argv, err)
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
        named = tmp_path / "profile.toml" if path.name == "profiled.toml" else path
        assert err.startswith(f"haap: error: {named}: "), err
        assert "internal error" not in err, err
        checked += 1
    assert checked >= 5


def test_profile_lookups_may_extrapolate_past_the_file_limits() -> None:
    """The limits are on files: an entry a lookup derives (here 1.5e9 s) is not refused."""
    text = sub("layer_fwd_s = 0.018", "layer_fwd_s = 1e9",
               _entry("layer_fwd_s = 0.010", "layer_fwd_s = 5e8"))
    profile = profile_from_dict(tomllib.loads(text))
    assert profile.lookup("A100-80G", 1, 3).layer_fwd_s == pytest.approx(1.5e9)


def test_renamed_max_micro_batch_size_names_the_new_key(tmp_path: Path) -> None:
    """The old key is refused, naming the file, the field and the new key (issue 23 item 4):
    it capped each replica's share of a micro-batch, not the micro-batch."""
    from haap_solver.instance import load_instance

    text = (ROOT / "instances" / "gpt3-2.7b-a100-40gx8-v100x8.toml").read_text().replace(
        "zero_stage = 1", "zero_stage = 1\nmax_micro_batch_size = 4")
    path = tmp_path / "old.toml"
    path.write_text(text)
    with pytest.raises(InputError, match=r"old.toml: training.max_micro_batch_size: renamed to "
                       r"max_micro_batch_share: it caps the sequences each replica takes"):
        load_instance(path)


# -- Found by fuzzing the command line (2026-12-04) ---------------------------------------------
def test_replan_device_event_with_a_base_that_is_no_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A device event's `base` of another type than a string: a clear error naming the events
    file and the field (was an internal AttributeError)."""
    events = tmp_path / "events.toml"
    events.write_text('[[events]]\nkind = "device"\nname = "T4"\nbase = 7\n')
    check_cli(capsys, ["replan", str(TOY), str(events), "--time-limit", "1", "--no-cold"],
              str(events), "events[0].base", ("expected a device preset name", "got 7"))


@pytest.mark.parametrize("name", ["gantt.txt", "gantt", "."])
def test_plot_to_a_file_matplotlib_cannot_write(tmp_path: Path, name: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """`haap plot --gantt` to an unknown image format, no extension (matplotlib would write
    another file, NAME.png) or a directory: refused before the plan is costed."""
    plan = tmp_path / "plan.json"
    assert main(["solve", str(TOY), "--time-limit", "5", "-o", str(plan)]) == 0
    target = tmp_path / name
    capsys.readouterr()
    code = main(["plot", str(TOY), str(plan), "--gantt", str(target)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("haap: error: --gantt: "), err
    assert ("is a directory" if name == "." else "unsupported image format") in err
    assert not (tmp_path / f"{name}.png").exists()


def test_straggler_device_name_taken_by_a_defined_device(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A device named as a slowed one (A100-80G@50%) is not silently replaced by the slowed
    A100: the name clash is an error."""
    text = TOY.read_text().replace('device = "T4"', 'device = "A100-80G@50%"')
    text += ('\n[devices."A100-80G@50%"]\nbase = "T4"\n\n[[cluster.stragglers]]\n'
             'node_group = "a100"\ncompute_speed = 0.5\n')
    path = tmp_path / "clash.toml"
    path.write_text(text)
    check_cli(capsys, ["validate", str(path)], str(path), "cluster.stragglers",
              ("A100-80G@50%", "rename that device"))


def test_profile_for_no_device_of_the_cluster(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A profile whose entries name no device of the cluster would replace nothing: refused,
    naming the profile; one that covers some of them says which entries it ignores."""
    plan = tmp_path / "plan.json"
    assert main(["solve", str(TOY), "--time-limit", "5", "-o", str(plan)]) == 0
    entry = ('[[entry]]\ndevice = "{}"\ntp = 1\nmicro_batch = 1\nlayer_fwd_s = 0.002\n'
             'layer_bwd_s = 0.004\n')
    profile = tmp_path / "p.toml"
    profile.write_text(entry.format("a100"))
    check_cli(capsys, ["evaluate", str(TOY), str(plan), "--profile", str(profile)],
              str(profile), "entry.device", ("no device of the cluster", "A100-80G"))
    profile.write_text(entry.format("A100-80G") + entry.format("H100"))
    capsys.readouterr()
    assert main(["evaluate", str(TOY), str(plan), "--profile", str(profile)]) == 0
    assert "entries for H100 are ignored" in capsys.readouterr().err


CALIBRATION_CSV = (Path(__file__).resolve().parent.parent / "haap_solver" / "data"
                   / "calibration_runs.csv")


@pytest.mark.parametrize(("column", "value", "fragments"), [
    ("tp", "0", ("line 2 (r001): tp:", "[1, 1024]")),
    ("pp", "1000000", ("line 2 (r001): pp:", "got 1000000")),
    ("gpus", "3", ("line 2 (r001): gpus:", "not the 3 GPUs")),
    ("layers", "nan", ("line 2 (r001): layers:", "whole number")),
    ("derived_iteration_time_s", "nan", ("derived_iteration_time_s", "positive finite")),
    ("derived_iteration_time_s", "0", ("derived_iteration_time_s", "positive finite")),
    ("id", "", ("line 2 (no id): id: empty",)),
    ("global_batch_seqs", "3", ("run r001: global batch 3",)),
    # A 5,000-digit cell was quoted whole; a rule of the model named no column.
    ("layers", "9" * 5000, ("line 2 (r001): layers: expected a whole number, got 5,000 "
                            "characters",)),
    ("heads", "7", ("run r001: heads: must divide hidden_size (2304); got 7",)),
])
def test_calibrate_runs_with_a_bad_cell(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        column: str, value: str,
                                        fragments: tuple[str, ...]) -> None:
    """`haap calibrate --runs FILE`: a bad cell of a run is an error naming the file, the line,
    the run and the column (were internal ZeroDivisionError, ValueError, a MemoryError and a
    hang at pp = 10^6)."""
    import csv
    import io

    header, first = CALIBRATION_CSV.read_text().splitlines()[:2]
    columns = header.split(",")
    cells = next(csv.reader([first]))
    cells[columns.index(column)] = value
    out = io.StringIO()
    csv.writer(out).writerows([columns, cells])
    path = tmp_path / "runs.csv"
    path.write_text(out.getvalue())
    check_cli(capsys, ["calibrate", "--runs", str(path), "--json"], str(path), None, fragments)


def test_calibrate_runs_with_a_duplicate_id(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    header, first = CALIBRATION_CSV.read_text().splitlines()[:2]
    path = tmp_path / "runs.csv"
    path.write_text("\n".join([header, first, first]) + "\n")
    check_cli(capsys, ["calibrate", "--runs", str(path)], str(path), None,
              ("line 3 (r001): id:", "also the id of line 2"))


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_solve_output_to_a_full_disk_names_the_file(capsys: pytest.CaptureFixture[str]) -> None:
    """`-o` to a file that cannot be written (a full disk raises ENOSPC with no file name): the
    error names the file."""
    capsys.readouterr()
    assert main(["solve", str(TOY), "--time-limit", "3", "-o", "/dev/full"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("haap: error: /dev/full: cannot write"), err


def test_device_error_indices_are_the_files_before_a_straggler_split(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A slowed node makes its own node group after loading; an error about a node group still
    names its index in the file (was cluster.node_groups[2] for a file with two)."""
    text = TOY.read_text().replace('device = "T4"', 'device = "V100-32G"')
    text = text.replace('dtype = "fp16"', 'dtype = "bf16"', 1)
    text = text.replace("num_nodes = 1", "num_nodes = 2", 1)  # (the a100 group, first)
    text += '\n[[cluster.stragglers]]\nnode_group = "a100"\nnode = 0\ncompute_speed = 0.5\n'
    path = tmp_path / "split.toml"
    path.write_text(text)
    check_cli(capsys, ["validate", str(path)], str(path), "cluster.node_groups[1].device",
              ("no bf16 support",))


def test_set_like_lists_built_in_code_refuse_a_repeated_value() -> None:
    """TrainingSpec built in code checks the same rule as the file loader."""
    from haap_solver.training import TrainingSpec

    with pytest.raises(InputError, match=r"^recompute\[1\]: 'full' is listed twice"):
        TrainingSpec(global_batch_size=8, recompute=("full", "full"))
    with pytest.raises(InputError, match=r"^schedules\[1\]: '1f1b' is listed twice"):
        TrainingSpec(global_batch_size=8, schedules=("1f1b", "1f1b"))


@pytest.mark.parametrize(("command", "option", "value", "message"), [
    ("compare", "--methods", "haap,uniform,haap", "method 'haap' is given twice"),
    ("compare", "--methods", " , ", "no method given; available: haap"),
    ("bench", "--methods", "metis,metis", "method 'metis' is given twice"),
    ("bench", "--targets", "megatron,deepspeed,megatron", "target 'megatron' is given twice"),
])
def test_repeated_or_empty_method_lists(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        command: str, option: str, value: str,
                                        message: str) -> None:
    """A method named twice ran twice (two rows of the same method); an empty list ran only
    the uniform grid, silently."""
    capsys.readouterr()
    code = main([command, str(tmp_path / "missing.toml"), f"{option}={value}"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), err
    assert f"haap {command}: error: argument {option}: {message}" in err, err
    assert "Traceback" not in err


# Checked once applied to the changed instance (replan_cli.check_events, before any solve; until
# 2026-12-05 after the initial plan and every solve before the event): still the event's own
# fields (were events[0].slowdown[0].node, events[0].cluster.node_groups[1].device,
# events[0].node_groups).
REPLAN_APPLIED_CASES = [
    ('kind = "slowdown"\nnode_group = "a100"\nnode = 5\ncompute_speed = 0.5', "events[0].node",
     ("node group 'a100' has 1 node(s)",)),
    ('kind = "slowdown"\nnode_group = "zz"\ncompute_speed = 0.5', "events[0].node_group",
     ("unknown node group 'zz'",)),
    ('kind = "training"\ndtype = "bf16"', "events[0].dtype",
     ("makes the device of node group 't4' invalid", "T4 has no bf16 support")),
    ('kind = "training"\nreserved_memory_gib = 20', "events[0].reserved_memory_gib",
     ("makes the device of node group 't4' invalid", "T4 has 16 GiB")),
    ('kind = "training"\ndtype = "bf16"\nzero_stage = 2', "events[0]",
     ("makes the device of node group 't4' invalid", "no bf16 support")),
    ('kind = "add_node_group"\nname = "b"\ndevice = "T4"\nnum_nodes = 1048576\n'
     "gpus_per_node = 8\nnic_gbit_s = 100", "events[0].num_nodes",
     ("the node groups would hold 8,388,612 GPUs; a cluster has at most 4,194,304",)),
    # A device event's memory at most training.reserved_memory_gib (refused in an instance
    # file) was re-planned as if the device were fine.
    ('kind = "device"\nname = "T4"\nbase = "T4"\nmemory_gib = 1.0', "events[0].memory_gib",
     ("makes the device of node group 't4' invalid", "T4 has 1 GiB, no more than the 2 GiB "
      "training.reserved_memory_gib")),
]
REPLAN_EVENT_CASES = [
    # Checked as the file is read, before any solve: the paths are the events file's own (a
    # training event's error named events[0].training.zero_stage, a field the file has not).
    ('kind = "training"\nzero_stage = 7', "events[0].zero_stage", ("must be <= 3, got 7",)),
    ('kind = "training"\nzero_stagee = 1', "events[0].zero_stagee",
     ("did you mean 'zero_stage'",)),
    ('kind = "training"\nrecompute = ["full", "full"]', "events[0].recompute[1]",
     ("'full' is listed twice",)),
    ('kind = "training"\nmax_micro_batch_size = 4', "events[0].max_micro_batch_size",
     ("renamed to max_micro_batch_share",)),
    ('kind = "training"', "events[0]", ("no field of [training] to change",)),
    # The Planner searches the general plan: its plan for another target failed that target's
    # rules after the solve ("plan is invalid", naming no file).
    ('kind = "training"\ntarget = "deepspeed"', "events[0].target",
     ("a Planner re-plans haap's general plan (target 'any')", "target 'deepspeed'")),
    ('kind = "add_node_group"\nname = "b"\ndevice = "T4"\nnum_nodes = 1\ngpus_per_node = 2\n'
     "nic_gbit_s = 100\nmax_gpus = 2", "events[0].max_gpus", ("takes no GPU cap or price",)),
    ('kind = "add_node_group"\nname = "b"\ndevice = "T4"\nnum_nodes = 1\ngpus_per_node = 2\n'
     "nic_gbit_s = 100\nprice_per_gpu_hour = 2.0", "events[0].price_per_gpu_hour",
     ("takes no GPU cap or price",)),
    *REPLAN_APPLIED_CASES,
]


@pytest.mark.parametrize(("event", "field", "fragments"), REPLAN_EVENT_CASES,
                         ids=[f"{i}" for i in range(len(REPLAN_EVENT_CASES))])
def test_replan_event_errors_name_the_events_files_fields(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], event: str, field: str,
        fragments: tuple[str, ...]) -> None:
    """Every error comes before any solve (one line, nothing on stdout): those found as the file
    is read, and those only the changed instance shows, which each event applied in turn to a
    planner that solves nothing finds (replan_cli.check_events)."""
    events = tmp_path / "events.toml"
    events.write_text(f"[[events]]\n{event}\n")
    argv = ["replan", str(TOY), str(events), "--time-limit", "2", "--no-cold"]
    check_cli(capsys, argv, str(events), field, fragments)


def test_replan_finds_a_bad_later_event_before_any_solve(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A node group that only an earlier event adds is known to a later one, and a bad third
    event is reported at events[2] before the initial plan is solved."""
    events = tmp_path / "events.toml"
    events.write_text('[[events]]\nkind = "add_node_group"\nname = "b"\ndevice = "T4"\n'
                      'num_nodes = 1\ngpus_per_node = 2\nnic_gbit_s = 100\n'
                      '[[events]]\nkind = "slowdown"\nnode_group = "b"\ncompute_speed = 0.5\n'
                      '[[events]]\nkind = "slowdown"\nnode_group = "zz"\ncompute_speed = 0.5\n')
    check_cli(capsys, ["replan", str(TOY), str(events), "--time-limit", "2", "--no-cold"],
              str(events), "events[2].node_group", ("unknown node group 'zz'",))


def test_replan_of_an_instance_with_a_target(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """An instance with training.target = "megatron" was re-planned for the general plan,
    whose mixed stage Megatron-LM cannot run: "plan is invalid" after the solve, naming no
    file. Refused before any solve, on the instance's field."""
    path = tmp_path / "megatron.toml"
    path.write_text(TOY.read_text().replace("zero_stage = 1",
                                            'zero_stage = 1\ntarget = "megatron"'))
    events = tmp_path / "events.toml"
    events.write_text('[[events]]\nkind = "global_batch"\nglobal_batch_size = 16\n')
    check_cli(capsys, ["replan", str(path), str(events), "--time-limit", "2", "--no-cold"],
              str(path), "training.target",
              ("the Planner searches haap's general plan (target 'any')", "'megatron'",
               "haap solve --target"))
    # A library user's change, applied to a Planner (not read from an events file).
    from dataclasses import replace

    from haap_solver.changes import SetTraining
    from haap_solver.planner import Planner

    instance = load_instance(path)
    planner = Planner(replace(instance, training=replace(instance.training, target="any")))
    with pytest.raises(InputError, match="target 'any'"):
        planner.apply(SetTraining(changes=(("target", "deepspeed"),)))


def test_price_error_indices_are_the_files_before_a_straggler_split(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A cost objective without prices: the groups are listed with their index in the file
    (listed cluster.node_groups[2] for a file of two groups, a straggler's split counted)."""
    text = TOY.read_text().replace("num_nodes = 1", "num_nodes = 2", 1)
    text += ('\n[objective]\noptimize = "cost"\n\n[[cluster.stragglers]]\nnode_group = "a100"\n'
             "node = 0\ncompute_speed = 0.5\n")
    path = tmp_path / "split.toml"
    path.write_text(text)
    check_cli(capsys, ["validate", str(path)], str(path), "objective.optimize",
              ("missing on cluster.node_groups[0] (a100), cluster.node_groups[1] (t4)",))


def test_unknown_efficiency_family(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A device's efficiency family that no constants know (a typo) took the default constants
    silently: refused where the constants meet the instance, the cost model; a family whose
    constants a library user passes is accepted."""
    from dataclasses import replace

    from haap_solver.cost.efficiency import DEFAULT_CONSTANTS

    text = TOY.read_text().replace('device = "T4"', 'device = "X"')
    path = tmp_path / "family.toml"
    path.write_text(text + '\n[devices.X]\nbase = "T4"\nefficiency_family = "hoper"\n')
    check_cli(capsys, ["validate", str(path)], str(path), "devices.X.efficiency_family",
              ("unknown efficiency family 'hoper'", "did you mean 'hopper'", "known: ampere, "
               "default, hopper"))
    # A slowed copy of the device is named by the device of the file.
    path.write_text(text + '\n[devices.X]\nbase = "T4"\nefficiency_family = "hoper"\n'
                    '\n[[cluster.stragglers]]\nnode_group = "t4"\ncompute_speed = 0.5\n')
    check_cli(capsys, ["validate", str(path)], str(path), "devices.X.efficiency_family",
              ("unknown efficiency family 'hoper'",))
    path.write_text(text + '\n[devices.X]\nbase = "T4"\nefficiency_family = "mine"\n')
    instance = load_instance(path)
    with pytest.raises(InputError, match="unknown efficiency family 'mine'"):
        CostModel(instance)
    mine = replace(DEFAULT_CONSTANTS, family_constants=(("mine", "max_efficiency", 0.5),))
    assert CostModel(instance, constants=mine).constants is mine
    # A re-plan's device event: the events file's field, before any solve.
    events = tmp_path / "events.toml"
    events.write_text('[[events]]\nkind = "device"\nname = "T4"\nbase = "T4"\n'
                      'efficiency_family = "hoper"\n')
    check_cli(capsys, ["replan", str(TOY), str(events), "--time-limit", "2", "--no-cold"],
              str(events), "events[0].efficiency_family", ("did you mean 'hopper'",))


def test_plan_made_for_another_instance(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A plan file of another instance: the validator refuses what does not fit (layers, batch,
    node groups, devices), and a plan that fits is costed with a note naming both instances."""
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({**TOY_PLAN, "instance": "toy-gpt-6l-a100x2-t4x2"}))
    note = (f"note: {plan}: the plan was made for instance 'toy-gpt-6l-a100x2-t4x2'; checked "
            "against ")
    other = tmp_path / "other.toml"
    cases = [
        (ROOT / "instances" / "gpt3-1.3b-a100x8.toml",
         ("the stages end at layer 6 but the model has 24 layers", "global_batch_size is 256")),
        (TOY.read_text().replace('"a100"', '"dgx"'), ("'a100'",)),
        (TOY.read_text().replace('device = "T4"', 'device = "V100-32G"'), ("T4", "V100-32G")),
        (TOY.read_text().replace("num_layers = 6", "num_layers = 8"),
         ("the model has 8 layers",)),
    ]
    for instance, fragments in cases:
        if isinstance(instance, str):  # (a variant of the toy instance, renamed)
            other.write_text(instance.replace('name = "toy-gpt-6l-a100x2-t4x2"', 'name = "v"'))
            instance = other
        capsys.readouterr()
        assert main(["evaluate", str(instance), str(plan)]) == 1
        err = capsys.readouterr().err
        assert err.startswith(note), err
        assert f"haap: error: {plan}: plan is invalid" in err, err
        for fragment in fragments:
            assert fragment in err, (fragment, err)
    other.write_text(TOY.read_text().replace('name = "toy-gpt-6l-a100x2-t4x2"', 'name = "b"'))
    capsys.readouterr()
    assert main(["evaluate", str(other), str(plan)]) == 0
    assert capsys.readouterr().err.startswith(note + "'b'\n")
    capsys.readouterr()
    assert main(["evaluate", str(TOY), str(plan)]) == 0
    assert "note:" not in capsys.readouterr().err


@pytest.mark.parametrize(("value", "fragment"), [
    ("abc", "expected a whole number, got 'abc'"), ("2.0", "expected a whole number, got '2.0'"),
    ("9" * 5000, "expected a whole number, got 5,000 characters"), ("0", "must be in [1, 65536]")])
def test_calibrate_runs_with_a_bad_micro_batch(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               value: str, fragment: str) -> None:
    """The micro-batch cell of a run (read where the run is not one of SC'21 Table 1): was
    Python's 'invalid literal for int()' or 'Exceeds the limit (4300 digits)', no line or
    column."""
    header, first = CALIBRATION_CSV.read_text().splitlines()[:2]
    columns = header.split(",")
    import csv
    import io

    cells = next(csv.reader([first]))
    cells[columns.index("id")] = "mine"
    cells[columns.index("micro_batch")] = value
    out = io.StringIO()
    csv.writer(out).writerows([columns, cells])
    path = tmp_path / "runs.csv"
    path.write_text(out.getvalue())
    check_cli(capsys, ["calibrate", "--runs", str(path)], str(path), None,
              ("line 2 (mine): micro_batch: " + fragment,))


def test_calibrate_runs_file_limits_and_byte_order_mark(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--runs /dev/zero read until memory ran out (a hang); a CSV saved with a UTF-8 byte order
    mark (spreadsheets do) had no 'id' column."""
    if Path("/dev/zero").exists():
        check_cli(capsys, ["calibrate", "--runs", "/dev/zero"], "/dev/zero", None,
                  ("is larger than 64 MiB",))
    header, first = CALIBRATION_CSV.read_text().splitlines()[:2]
    path = tmp_path / "runs.csv"
    path.write_text("\ufeff" + header + "\n" + first + "\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["calibrate", "--runs", str(path), "--json"]) == 0, capsys.readouterr().err
    assert [r["id"] for r in json.loads(capsys.readouterr().out)["rows"]] == ["r001"]


PROFILE_ENTRY = ('[[entry]]\ndevice = "{}"\ntp = 1\nmicro_batch = 1\nlayer_fwd_s = {}\n'
                 "layer_bwd_s = {}\n")


def test_solve_for_a_target_whose_plan_is_the_grid_seed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`haap solve --target megatron --profile P` where the uniform grid's seed is the best
    plan: the summary line read the search's cache figures, which a seed has not (was an
    internal KeyError 'hit_rate' after the search)."""
    profile = tmp_path / "p.toml"
    profile.write_text(PROFILE_ENTRY.format("A100-80G", 0.002, 0.004)
                       + PROFILE_ENTRY.format("T4", 0.02, 0.04))
    capsys.readouterr()
    code = main(["solve", str(TOY), "--profile", str(profile), "--target", "megatron",
                 "--time-limit", "5", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "internal error" not in err and "models solved" in err and "infx" not in err


def test_profile_option_checks_as_the_instance_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--profile beside an instance's stragglers is refused as a profile in the file is (was
    accepted, the slowed devices costed by the analytical model); a directory or /dev/zero is
    not 'profile file not found'."""
    profile = tmp_path / "p.toml"
    profile.write_text(PROFILE_ENTRY.format("A100-80G", 0.002, 0.004))
    slowed = tmp_path / "slowed.toml"
    slowed.write_text(TOY.read_text() + '\n[[cluster.stragglers]]\nnode_group = "a100"\n'
                      "compute_speed = 0.5\n")
    check_cli(capsys, ["solve", str(slowed), "--profile", str(profile), "--time-limit", "2"],
              "--profile", None, ("does not cover a straggler's slowed device",
                                  f"{slowed} has stragglers"))
    check_cli(capsys, ["solve", str(TOY), "--profile", str(tmp_path), "--time-limit", "2"],
              str(tmp_path), None, ("is a directory, expected a profile .toml file",))
    if Path("/dev/zero").exists():
        check_cli(capsys, ["evaluate", str(TOY), str(tmp_path / "plan.json"), "--profile",
                           "/dev/zero"], "/dev/zero", None, ("is larger than 64 MiB",))


@pytest.mark.parametrize("command", ["compare", "bench"])
def test_instance_file_given_twice(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    """An instance file given twice (also as another path to it) was solved twice and listed
    twice: refused before anything runs, naming both spellings. (Run in a scratch directory:
    a bench that did run would write its docs there.)"""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "toy.toml"
    path.write_text(TOY.read_text())
    other = f"{tmp_path}/./toy.toml"
    capsys.readouterr()
    code = main([command, str(path), other, "--methods", "uniform"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), err
    assert f"the instance file {other!r} is given twice (also as {str(path)!r})" in err, err
    assert "Traceback" not in err


def test_output_over_an_input_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                         ) -> None:
    """`-o` naming the instance (solve, export) or the plan (export) would overwrite the file
    the command reads: refused before any work, the file left as it was."""
    instance = tmp_path / "toy.toml"
    instance.write_text(TOY.read_text())
    text = instance.read_text()
    check_cli(capsys, ["solve", str(instance), "--time-limit", "1", "-o", str(instance)],
              "--output", None, ("instance file", "overwrite"))
    assert instance.read_text() == text
    plan = tmp_path / "plan.json"
    assert main(["solve", str(instance), "--time-limit", "5", "-o", str(plan)]) == 0
    capsys.readouterr()
    written = plan.read_text()
    check_cli(capsys, ["export", str(instance), str(plan), "--to", "megatron", "-o",
                       str(tmp_path / "." / "plan.json")], "--output", None, ("plan file",))
    assert plan.read_text() == written
