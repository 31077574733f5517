"""A problem instance: model + training + cluster (+ optional expected results), from TOML."""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

if sys.version_info >= (3, 11):
    pass
else:  # pragma: no cover
    pass

from haap_solver import limits
from haap_solver._fields import Range, build, check_ranges, require, require_name, show
from haap_solver._parse import loads_toml
from haap_solver.cluster import Cluster, NodeGroup
from haap_solver.devices import DEVICE_PRESETS, DeviceType, device_preset
from haap_solver.errors import InputError, did_you_mean, read_text
from haap_solver.model import ModelSpec, model_from_hf_config, model_preset
from haap_solver.objective import Objective, check_prices
from haap_solver.stragglers import (
    PROFILE_BESIDE_STRAGGLERS,
    apply_stragglers,
    stragglers_from_list,
)
from haap_solver.training import TrainingSpec


@dataclass(frozen=True, kw_only=True)
class Expected:
    """Reference results recorded with an instance, checked by tests and benchmarks."""

    iteration_time_s: Annotated[float | None,
                                Range(0, limits.MAX_SECONDS, min_exclusive=True)] = None
    """Best known iteration time under the cost model, seconds."""
    feasible: bool = True
    """False for an instance that must be reported infeasible."""
    rel_tol: Annotated[float, Range(0, 1)] = 1e-3
    """Relative tolerance when comparing iteration times."""
    method: str | None = None
    """Which method found `iteration_time_s`."""

    def __post_init__(self) -> None:
        check_ranges(self)


@dataclass(frozen=True, kw_only=True)
class Instance:
    """Everything the planner needs: what to train, how, and on what."""

    name: str
    """Instance name (the file stem by default)."""
    model: ModelSpec
    """The transformer."""
    training: TrainingSpec
    """Batch, precision, sharding and planner choices."""
    cluster: Cluster
    """Node groups and network."""
    expected: Expected | None = None
    """Optional reference results."""
    objective: Objective = field(default_factory=Objective)
    """What the plan is chosen for (``[objective]``; default: the least iteration time)."""
    profile: str | None = None
    """Optional path of a measured profile file (see ``haap_solver.cost.profile``)."""
    description: str = ""
    """Free text."""
    source: str | None = None
    """File the instance was read from."""

    def __post_init__(self) -> None:
        check_devices(self.cluster, self.training)
        check_prices(self.objective, self.cluster)

    def device(self, name: str) -> DeviceType:
        return self.cluster.devices[name]

    @property
    def tokens_per_iteration(self) -> int:
        return self.training.global_batch_size * self.model.seq_length


def check_devices(cluster: Cluster, training: TrainingSpec) -> None:
    """Every node group's device is known and runs the training precision. The instance loader
    calls it before a straggler splits node groups too, so that an error's index is the one of
    the file (after the split, a group of the file may be several)."""
    for i, g in enumerate(cluster.node_groups):
        dev = cluster.devices.get(g.device)
        require(dev is not None, f"cluster.node_groups[{i}].device",
                f"unknown device {g.device!r}")
        if training.dtype == "bf16" and dev is not None and not dev.supports_bf16:
            raise InputError(
                f"{g.device} has no bf16 support but training.dtype is 'bf16'; "
                "use dtype = 'fp16' for this cluster",
                field=f"cluster.node_groups[{i}].device",
            )
        if training.dtype == "fp8" and dev is not None and dev.peak_fp8_tflops is None:
            raise InputError(
                f"{g.device} has no fp8 tensor cores (no peak_fp8_tflops) but "
                "training.dtype is 'fp8'; use 'bf16' or 'fp16' for this cluster",
                field=f"cluster.node_groups[{i}].device",
            )


def check_plannable(model: ModelSpec, training: TrainingSpec, cluster: Cluster) -> None:
    """Settings of a file (or of a re-plan's event) that leave no plan at all, refused with the
    field rather than left to the search, whose "no plan fits" then blamed the GPUs' memory:
    more interleaved virtual stages than layers (every stage holds a multiple of them), and a
    device that `reserved_memory_gib` leaves no memory. Not in ``Instance.__post_init__``:
    instances built in code (the tests' random ones) may be infeasible on purpose."""
    if "interleaved-1f1b" in training.schedules and training.virtual_stages > model.num_layers:
        raise InputError(
            f"must be at most the model's {model.num_layers} layers with the 'interleaved-1f1b' "
            f"schedule (every stage holds a multiple of virtual_stages layers), got "
            f"{training.virtual_stages}", field="training.virtual_stages")
    if training.schedules == ("interleaved-1f1b",):
        _check_interleaved_only(model, training, cluster)
    for i, g in enumerate(cluster.node_groups):
        dev = cluster.devices.get(g.device)
        if dev is not None and training.reserved_memory_gib >= dev.memory_gib:
            raise InputError(
                f"{g.device} has {dev.memory_gib:g} GiB, no more than the "
                f"{training.reserved_memory_gib:g} GiB training.reserved_memory_gib holds back "
                "on every GPU: nothing is left for the model",
                field=f"cluster.node_groups[{i}].device")


def _check_interleaved_only(model: ModelSpec, training: TrainingSpec, cluster: Cluster) -> None:
    """With 'interleaved-1f1b' the only schedule every plan has p >= 2 stages (one GPU or more
    each), each holding a positive multiple of v = virtual_stages layers, and a micro-batch
    count that is a multiple of p (the validator's rules, docs/cost-model.md Sec. 7.1): where no
    p meets them the search said the GPUs could not hold the layers."""
    v, layers, batch = training.virtual_stages, model.num_layers, training.global_batch_size
    why = "'interleaved-1f1b', the only schedule in training.schedules, needs 2 or more stages"
    if layers % v or layers < 2 * v:
        raise InputError(
            f"{why}, each holding a multiple of virtual_stages layers: the model's {layers} "
            f"layers must be a multiple of it, at least twice it, got {v}",
            field="training.virtual_stages")
    if cluster.num_gpus < 2:
        raise InputError(f"{why} (each on its own GPUs); the cluster has 1 GPU",
                         field="cluster.node_groups")
    most = min(layers // v, cluster.num_gpus)
    if not any(batch % p == 0 for p in range(2, most + 1)):
        raise InputError(
            f"{why}, and a micro-batch count that is a multiple of the stage count: with "
            f"{layers} layers, virtual_stages {v} and {cluster.num_gpus:,} GPUs a plan has 2 to "
            f"{most:,} stages, none of which divides the global batch, got {batch:,}",
            field="training.global_batch_size")


_TOP_KEYS = ("name", "description", "model", "training", "cluster", "devices", "expected",
             "profile", "objective")
_MODEL_FIELDS = [f.name for f in dataclasses.fields(ModelSpec)]
_CLUSTER_KEYS = ("node_groups", "cross_class_gbit_s", "stragglers")
_DEVICE_FIELDS = [f.name for f in dataclasses.fields(DeviceType)]


def _model_from_table(table: Any, base_dir: Path) -> ModelSpec:
    if not isinstance(table, dict):
        raise InputError(f"expected a table (e.g. [model] with preset = 'gpt3-1.3b'), got "
                         f"{show(table)}", field="model")
    allowed = ["preset", "hf_config", *_MODEL_FIELDS]
    for key in table:
        if key not in allowed:
            raise InputError(f"unknown key{did_you_mean(key, allowed)}; allowed keys: "
                             + ", ".join(allowed), field=f"model.{key}")
    overrides = {k: v for k, v in table.items() if k not in ("preset", "hf_config")}
    if "preset" in table and "hf_config" in table:
        raise InputError("give either 'preset' or 'hf_config', not both", field="model")
    if "preset" in table:
        if not isinstance(table["preset"], str):
            raise InputError(f"expected a preset name string, got {show(table['preset'])}",
                             field="model.preset")
        base = dataclasses.asdict(model_preset(table["preset"]))
    elif "hf_config" in table:
        if not isinstance(table["hf_config"], str) or not table["hf_config"]:
            raise InputError(f"expected a path string, got {show(table['hf_config'])}",
                             field="model.hf_config")
        path = Path(table["hf_config"])
        if not path.is_absolute():
            path = base_dir / path
        try:
            base = dataclasses.asdict(model_from_hf_config(path))
        except InputError as exc:
            raise InputError(f"in {exc}", field="model.hf_config") from None
    else:
        base = {}
    try:
        return build(ModelSpec, {**base, **overrides}, prefix="model")
    except InputError as exc:
        if not base and exc.message.startswith("required key is missing"):
            raise InputError(exc.message + "; or start from preset = NAME or hf_config = PATH "
                             "and override single fields", field=exc.field) from None
        raise


def _devices_from_table(table: Any) -> dict[str, DeviceType]:
    devices = dict(DEVICE_PRESETS)
    if table is None:
        return devices
    if not isinstance(table, dict):
        raise InputError(f"expected a table of device tables, e.g. [devices.MyGPU], got "
                         f"{show(table)}", field="devices")
    for name, fields in table.items():
        where = f"devices.{name}"
        if not isinstance(fields, dict):
            raise InputError(f"expected a table, got {show(fields)}", field=where)
        if "name" in fields:
            raise InputError("a custom device is named by its table ([devices.NAME]); remove "
                             "this key", field=f"{where}.name")
        allowed = ["base", *(k for k in _DEVICE_FIELDS if k != "name")]
        for key in fields:
            if key not in allowed:
                raise InputError(f"unknown key{did_you_mean(key, allowed)}; allowed keys: "
                                 + ", ".join(allowed), field=f"{where}.{key}")
        data = {"name": name, **fields}
        if "base" in data:  # start from a preset and change some numbers
            base_name = data.pop("base")
            if not isinstance(base_name, str):
                raise InputError(f"expected a device preset name, got {show(base_name)}",
                                 field=f"{where}.base")
            base = device_preset(base_name, field=f"{where}.base")
            changed = sorted(k for k in fields if k not in ("base", "source"))
            source = (f"user-defined: {base.name} with " + ", ".join(changed) + " changed"
                      if changed else f"user-defined copy of {base.name} ({base.source})")
            data = {**dataclasses.asdict(base), **data, "source": data.get("source", source)}
        devices[name] = build(DeviceType, data, prefix=where)
    return devices


RENAMED_TRAINING_KEYS = {
    "max_micro_batch_size": (
        "max_micro_batch_share", "it caps the sequences each replica takes of a micro-batch "
        "(the plan's micro_batch_share, Megatron-LM's --micro-batch-size), not the pipeline "
        "micro-batch, which is the sum over a stage's data-parallel replicas"),
}
"""Keys of [training] that were renamed: old name -> (new name, why)."""


def _refuse_renamed(table: Any) -> None:
    """An error naming the new key where a file uses a renamed one (never read silently)."""
    if not isinstance(table, dict):
        return
    for old, (new, why) in RENAMED_TRAINING_KEYS.items():
        if old in table:
            raise InputError(f"renamed to {new}: {why}; write {new} = ... (same value) "
                             "instead", field=f"training.{old}")


def instance_from_dict(data: Any, *, name: str = "instance", source: str | None = None,
                       base_dir: Path | None = None) -> Instance:
    """Build an Instance from a parsed TOML mapping; errors name `source` and the dotted field."""
    base_dir = base_dir or Path.cwd()
    try:
        if not isinstance(data, dict):
            raise InputError(f"expected a table at the top level, got {show(data)}")
        for key in data:
            if key not in _TOP_KEYS:
                raise InputError(f"unknown top-level key{did_you_mean(key, _TOP_KEYS)}; "
                                 "allowed keys: "
                                 + ", ".join(_TOP_KEYS), field=key)
        for key in ("model", "training", "cluster"):
            if key not in data:
                raise InputError(f"required table [{key}] is missing", field=key)
        model = _model_from_table(data["model"], base_dir)
        _refuse_renamed(data["training"])
        training = build(TrainingSpec, data["training"], prefix="training")
        devices = _devices_from_table(data.get("devices"))
        cluster_table = data["cluster"]
        if not isinstance(cluster_table, dict):
            raise InputError(f"expected a table, got {show(cluster_table)}", field="cluster")
        if "devices" in cluster_table:
            raise InputError("custom devices go in a top-level [devices.NAME] table",
                             field="cluster.devices")
        for key in cluster_table:
            if key not in _CLUSTER_KEYS:
                raise InputError(f"unknown key{did_you_mean(key, _CLUSTER_KEYS)}; allowed keys: "
                                 + ", ".join(_CLUSTER_KEYS), field=f"cluster.{key}")
        if "node_groups" not in cluster_table:
            raise InputError("required key is missing: add one [[cluster.node_groups]] table "
                             "per group of identical nodes", field="cluster.node_groups")
        if isinstance(cluster_table["node_groups"], dict):
            raise InputError("expected a list of tables, got a table (write one "
                             "[[cluster.node_groups]] table per group, with double brackets)",
                             field="cluster.node_groups")
        stragglers = stragglers_from_list(cluster_table["stragglers"]) \
            if "stragglers" in cluster_table else []
        cluster = build(Cluster, {k: v for k, v in cluster_table.items() if k != "stragglers"},
                        prefix="cluster")
        groups = list(cluster.node_groups)
        for i, group in enumerate(groups):
            if group.device not in devices:
                # Accept aliases and case differences for presets.
                preset = device_preset(group.device, field=f"cluster.node_groups[{i}].device")
                groups[i] = dataclasses.replace(group, device=preset.name)
        used = {g.device for g in groups}
        cluster = dataclasses.replace(cluster, node_groups=tuple(groups),
                                      devices={k: devices[k] for k in sorted(used)})
        objective = (build(Objective, data["objective"], prefix="objective")
                     if "objective" in data else Objective())
        check_devices(cluster, training)  # (with the file's group indices)
        check_prices(objective, cluster)
        check_plannable(model, training, cluster)
        cluster = apply_stragglers(cluster, stragglers)
        expected = (build(Expected, data["expected"], prefix="expected")
                    if "expected" in data else None)
        profile = data.get("profile")
        if profile is not None:
            if not isinstance(profile, str) or not profile:
                raise InputError(f"expected a path string, got {show(profile)}", field="profile")
            if not Path(profile).is_absolute():
                profile = str(base_dir / profile)
            if any(s.compute_speed != 1.0 for s in stragglers):
                raise InputError(f"{PROFILE_BESIDE_STRAGGLERS}; give the stragglers or the "
                                 "profile, not both", field="cluster.stragglers")
            if not Path(profile).is_file():
                raise InputError(f"no profile file {profile} (a relative path is taken from the "
                                 "instance file's folder)", field="profile")
        description = data.get("description", "")
        if not isinstance(description, str):
            raise InputError(f"expected a string, got {show(description)}", field="description")
        inst_name = data.get("name", name)
        if not isinstance(inst_name, str) or not inst_name:
            raise InputError(f"expected a non-empty string, got {show(inst_name)}", field="name")
        require_name(inst_name, "name")
        return Instance(name=inst_name, model=model, training=training, cluster=cluster,
                        expected=expected, objective=objective, profile=profile,
                        description=description, source=source)
    except InputError as exc:
        raise exc.within(source=source) from None


def load_instance(path: str | Path) -> Instance:
    """Read an instance TOML file."""
    path = Path(path)
    source = str(path)
    data = loads_toml(read_text(path, "an instance .toml file"), source)
    if not data:
        raise InputError("file is empty; an instance needs [model], [training] and [cluster] "
                         "tables", source=source)
    return instance_from_dict(data, name=path.stem, source=source, base_dir=path.parent)


def make_instance(*, model: ModelSpec, training: TrainingSpec, node_groups: list[NodeGroup],
                  name: str = "instance", cross_class_gbit_s: float | None = None,
                  extra_devices: dict[str, DeviceType] | None = None) -> Instance:
    """Build an Instance in code (tests, generators): device names resolve to presets or extras."""
    devices = dict(DEVICE_PRESETS)
    devices.update(extra_devices or {})
    used = {g.device: devices.get(g.device) or device_preset(g.device,
                                                             field=f"node_groups[{i}].device")
            for i, g in enumerate(node_groups)}
    cluster = Cluster(node_groups=tuple(node_groups), cross_class_gbit_s=cross_class_gbit_s,
                      devices=used)
    return Instance(name=name, model=model, training=training, cluster=cluster)
