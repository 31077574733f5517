"""Model and device presets, the Hugging Face config.json loader, and the shipped instance files."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from pathlib import Path

import pytest

from haap_solver.devices import DEVICE_PRESETS, device_preset
from haap_solver.errors import InputError
from haap_solver.instance import load_instance
from haap_solver.model import PRESETS, ModelSpec, model_from_hf_config, model_preset

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
HF = Path(__file__).resolve().parent / "data" / "hf"
LLAMA3_8B_JSON = HF / "llama3-8b" / "config.json"
GPT2_MEDIUM_JSON = HF / "gpt2-medium" / "config.json"
INSTANCES = sorted((ROOT / "instances").glob("*.toml"))


# -- Hugging Face config.json ------------------------------------------------------------------
def test_hf_llama3_8b_matches_preset() -> None:
    spec = model_from_hf_config(LLAMA3_8B_JSON)
    assert spec.name == "llama3-8b"  # directory name, since the file is called config.json
    assert dataclasses.replace(spec, name="llama3-8b") == PRESETS["llama3-8b"]
    assert spec.num_layers == 32
    assert spec.hidden_size == 4096
    assert spec.ffn_hidden_size == 14336
    assert spec.num_attention_heads == 32
    assert spec.num_kv_heads == 8
    assert spec.kv_size == 1024
    assert spec.vocab_size == 128256
    assert spec.seq_length == 8192
    assert spec.gated_mlp and not spec.tied_embeddings
    assert not spec.learned_position_embeddings and not spec.uses_dropout
    assert spec.total_params == 8_030_261_248  # the published parameter count of Llama-3-8B


def test_hf_gpt2_medium() -> None:
    spec = model_from_hf_config(GPT2_MEDIUM_JSON)
    assert spec == ModelSpec(
        name="gpt2-medium", num_layers=24, hidden_size=1024, ffn_hidden_size=4096,
        num_attention_heads=16, num_kv_heads=None, vocab_size=50257, seq_length=1024,
        gated_mlp=False, tied_embeddings=True, learned_position_embeddings=True, uses_dropout=True,
    )
    # Hugging Face's GPT2LMHeadModel("gpt2-medium").num_parameters() == 354,823,168.
    assert spec.total_params == 354_823_168


def test_hf_seq_length_override() -> None:
    assert model_from_hf_config(LLAMA3_8B_JSON, seq_length=4096).seq_length == 4096
    assert model_from_hf_config(GPT2_MEDIUM_JSON, seq_length=512).seq_length == 512


def test_hf_name_or_path_and_optional_keys(tmp_path: Path) -> None:
    raw = json.loads(LLAMA3_8B_JSON.read_text())
    raw["_name_or_path"] = "meta-llama/Meta-Llama-3-8B"
    del raw["num_key_value_heads"]  # absent means multi-head attention
    del raw["max_position_embeddings"]  # absent falls back to 4096
    path = tmp_path / "llama.json"
    path.write_text(json.dumps(raw))
    spec = model_from_hf_config(path)
    assert spec.name == "meta-llama/Meta-Llama-3-8B"
    assert spec.num_kv_heads is None and spec.kv_heads == 32
    assert spec.seq_length == 4096


def _write_instance(path: Path, model_table: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"""
[model]
{model_table}

[training]
global_batch_size = 64

[cluster]
[[cluster.node_groups]]
name = "h100"
device = "H100"
num_nodes = 1
gpus_per_node = 8
nic_gbit_s = 400
nics_per_node = 8
""")
    return path


def test_instance_hf_config_relative_to_instance_file(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copy(LLAMA3_8B_JSON, tmp_path / "llama.json")
    (tmp_path / "models").mkdir()
    shutil.copy(GPT2_MEDIUM_JSON, tmp_path / "models" / "config.json")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # resolution must not depend on the working directory

    inst = load_instance(_write_instance(tmp_path / "inst" / "a.toml",
                                         'hf_config = "../llama.json"'))
    assert dataclasses.replace(inst.model, name="llama3-8b") == PRESETS["llama3-8b"]

    inst = load_instance(_write_instance(tmp_path / "b.toml",
                                         'hf_config = "models/config.json"\nseq_length = 512'))
    assert inst.model.name == "models"
    assert inst.model.hidden_size == 1024 and inst.model.seq_length == 512

    absolute = (tmp_path / "llama.json").resolve()
    inst = load_instance(_write_instance(tmp_path / "c.toml", f'hf_config = "{absolute}"'))
    assert inst.model.num_kv_heads == 8


def test_instance_preset_with_overrides(tmp_path: Path) -> None:
    path = _write_instance(tmp_path / "x.toml",
                           'preset = "Llama3-8B"\nseq_length = 2048\nname = "my llama"')
    inst = load_instance(path)
    assert inst.model == dataclasses.replace(PRESETS["llama3-8b"], seq_length=2048,
                                             name="my llama")


# -- Model presets -------------------------------------------------------------------------------
# Published sizes: Brown et al. 2020 Table 2.1 (GPT-3, nominal), Meta's model cards (Llama-3).
PUBLISHED_PARAMS = {
    "gpt3-125m": 125e6,
    "gpt3-350m": 350e6,
    "gpt3-760m": 760e6,
    "gpt3-1.3b": 1.3e9,
    "gpt3-2.7b": 2.7e9,
    "gpt3-6.7b": 6.7e9,
    "gpt3-13b": 13.0e9,
    "gpt3-175b": 175.0e9,
    "llama3.2-1b": 1.24e9,
    "llama3.2-3b": 3.21e9,
    "llama3-8b": 8.03e9,
    "llama3.1-8b": 8.03e9,
    "llama3-70b": 70.6e9,
    "llama3.1-70b": 70.6e9,
    "llama3.1-405b": 405.9e9,
}


def test_every_preset_has_a_published_size() -> None:
    assert set(PUBLISHED_PARAMS) == set(PRESETS)


@pytest.mark.parametrize("name", sorted(PUBLISHED_PARAMS))
def test_preset_total_params_match_published(name: str) -> None:
    spec = model_preset(name)
    published = PUBLISHED_PARAMS[name]
    assert abs(spec.total_params - published) / published < 0.02, (spec.total_params, published)


def test_exact_parameter_counts() -> None:
    # Exact counts of the released checkpoints (safetensors metadata / model cards).
    assert PRESETS["llama3-8b"].total_params == 8_030_261_248
    assert PRESETS["llama3-70b"].total_params == 70_553_706_496
    assert PRESETS["llama3.1-405b"].total_params == 405_853_388_800
    assert PRESETS["llama3.2-1b"].total_params == 1_235_814_400
    assert PRESETS["llama3.2-3b"].total_params == 3_212_749_824
    # GPT-style layer: 12 h^2 + 13 h (QKV, projection, MLP weights and biases, two LayerNorms).
    h = 2048
    assert PRESETS["gpt3-1.3b"].params_per_layer == 12 * h * h + 13 * h


def test_preset_lookup_is_case_insensitive_and_names_match() -> None:
    for name, spec in PRESETS.items():
        assert spec.name == name
        assert model_preset(name.upper()) is spec
    with pytest.raises(InputError, match="unknown model preset 'gpt4'"):
        model_preset("gpt4")


def test_preset_head_dims_are_whole() -> None:
    for spec in PRESETS.values():
        assert spec.hidden_size % spec.num_attention_heads == 0
        assert spec.num_attention_heads % spec.kv_heads == 0


# -- Device presets ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(DEVICE_PRESETS))
def test_device_preset_loads_with_source(name: str) -> None:
    dev = device_preset(name)
    assert dev is DEVICE_PRESETS[name]
    assert device_preset(name.lower()) is dev
    assert dev.source and dev.source != "user-defined"
    assert "gpu_specs.csv" in dev.source
    assert dev.peak_tflops > 0 and dev.memory_gib > 0 and dev.hbm_gb_s > 0
    assert dev.intra_node_gb_s > 0


def test_device_flags() -> None:
    assert not DEVICE_PRESETS["V100-32G"].supports_bf16
    assert not DEVICE_PRESETS["T4"].supports_bf16
    assert DEVICE_PRESETS["A100-80G"].supports_bf16
    assert device_preset("a100-sxm4-80gb") is DEVICE_PRESETS["A100-80G"]


def test_custom_device_from_base(tmp_path: Path) -> None:
    path = tmp_path / "custom.toml"
    path.write_text("""
[model]
preset = "gpt3-1.3b"

[training]
global_batch_size = 32

[devices.A100-custom]
base = "A100-80G"
memory_gib = 40
hbm_gb_s = 1555

[devices.Fresh]
peak_tflops = 100
memory_gib = 24
hbm_gb_s = 500
intra_node_gb_s = 16
supports_bf16 = false
source = "made up for a test"

[cluster]
[[cluster.node_groups]]
name = "a"
device = "A100-custom"
num_nodes = 2
gpus_per_node = 8
nic_gbit_s = 200
nics_per_node = 8
""")
    inst = load_instance(path)
    dev = inst.device("A100-custom")
    base = DEVICE_PRESETS["A100-80G"]
    assert dev.name == "A100-custom"
    assert dev.memory_gib == 40 and dev.hbm_gb_s == 1555
    assert dev.peak_tflops == base.peak_tflops
    assert dev.intra_node_gb_s == base.intra_node_gb_s
    assert dev.supports_bf16 and dev.efficiency_family == base.efficiency_family
    assert "A100-80G" in dev.source and "memory_gib" in dev.source
    assert set(inst.cluster.devices) == {"A100-custom"}  # only the devices in use

    text = path.read_text().replace('device = "A100-custom"', 'device = "Fresh"')
    path.write_text(text.replace("global_batch_size = 32",
                                 'global_batch_size = 32\ndtype = "fp16"'))
    dev = load_instance(path).device("Fresh")
    assert dev.source == "made up for a test" and not dev.supports_bf16


def test_node_group_device_alias_resolves_to_preset(tmp_path: Path) -> None:
    path = _write_instance(tmp_path / "alias.toml", 'preset = "gpt3-1.3b"')
    path.write_text(path.read_text().replace('device = "H100"', 'device = "h100-sxm5-80gb"'))
    inst = load_instance(path)
    assert inst.cluster.node_groups[0].device == "H100"
    assert inst.device("H100") is DEVICE_PRESETS["H100"]


# -- Shipped instance files ----------------------------------------------------------------------
def test_instances_are_shipped() -> None:
    assert len(INSTANCES) >= 8


@pytest.mark.parametrize("path", INSTANCES, ids=[p.stem for p in INSTANCES])
def test_shipped_instance_loads(path: Path) -> None:
    inst = load_instance(path)
    raw = tomllib.loads(path.read_text())
    assert inst.name == path.stem == raw["name"]
    assert len(inst.description) > 40
    assert inst.model.name in PRESETS or "seq_length" in raw["model"]
    for group in inst.cluster.node_groups:
        dev = inst.device(group.device)
        if inst.training.dtype == "bf16":
            assert dev.supports_bf16
        # Realistic networks: 10 GbE (cloud VMs of 4 V100-16GB: AWS p3.8xlarge) to 400G
        # NDR/RoCE, up to 8 NICs per node.
        assert 10 <= group.nic_gbit_s <= 400 and 1 <= group.nics_per_node <= 8
    # Realistic batches: about 0.5M-4M tokens per step (16M for the 16,384-GPU Llama-3 405B
    # instance, the batch Meta trained 405B with).
    assert 2**19 <= inst.tokens_per_iteration <= 2**24
    # Every instance leaves room for data parallelism to split the batch.
    assert inst.training.global_batch_size >= 64
