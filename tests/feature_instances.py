"""Random tiny instances with the features the agreement generator never draws (seeded).

tests/random_instances.py draws the brute force's sizes (1-5 layers, 2-3 node groups of up to
10 GPUs) but always fp16, ZeRO 0/1, 1F1B or GPipe, the engine's defaults and the time objective.
`feature_instance(seed)` starts from that seed's instance and randomizes, from its own stream,
what the search and the cost model read beyond it:

* training: dtype (fp16, bf16, fp32 with either matmul precision, fp8: its devices without fp8
  tensor cores swapped for the device table's nearest ones that have them), grad_dtype, framework
  ("deepspeed" and its defaults), ZeRO stage 0-3, sequence parallelism, flash attention,
  DP gradient-reduction overlap, the distributed optimizer's parameter-gather overlap, TP
  communication overlap, pipeline_p2p (auto, blocking, overlapped), interleaved 1F1B with
  virtual_stages 2 or 3 (the layer count made a multiple of it; alone or beside 1F1B), GPipe,
  empty_end_stages, max_tp, reserved memory;
* model: gated MLP, tied embeddings, grouped-query attention, no learned positions, no dropout;
* cluster: stragglers (one node of a group, or a whole group, at a fraction of its compute
  and/or NIC speed; haap_solver/stragglers.py; a one-node straggler on a cluster of one-node
  groups gives a small group a second node);
* objective: prices per node group with optimize = "cost" or "throughput_per_dollar", a cost
  limit, a throughput limit, a cap on one group's GPUs (limits set from the brute force's
  optima by the caller, `with_limits`, so that they bind);
* a measured profile (haap_solver/cost/profile.py) for some device types: the analytic times
  at a few (TP, micro-batch) points, each scaled by its own random factor (so not monotone in
  the micro-batch, as real measurements need not be), written to a file.

The draw goes through the instance loader (``instance_from_dict``), so a combination it refuses
(bf16 on a V100 or T4, a straggler in a capped group, a profile beside a slowed device)
raises its InputError: such a draw is skipped, its reason counted (`Draw.refused`), and the
features redrawn from the seed's stream, as for a draw whose brute-force space exceeds
MAX_SPACE.

A seed always gives the same instance at one version of this file, not across versions: since
the fp8 device swap and the straggler draws of 2026-12-03 (node or whole group drawn first,
one in two; stragglers in 2 draws of 5, were 3 of 10; a cap on a group without a straggler
where there is one of several nodes) a seed one of whose draws (the accepted one or one
refused before it) held or now holds a straggler, or an fp8 draw refused before, gives
another instance than it did in the runs recorded before in benchmarks/feature_probe.py
(seeds 0-299, and 0-381 with ``multi_node``); the others are unchanged.
"""

from __future__ import annotations

import dataclasses
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from random_instances import random_instance

from haap_solver.baselines.bruteforce import space_size
from haap_solver.cost import compute
from haap_solver.cost.evaluate import CostModel
from haap_solver.devices import DEVICE_PRESETS
from haap_solver.errors import InputError
from haap_solver.instance import Instance, instance_from_dict
from haap_solver.objective import Objective

MAX_SPACE = 40_000
"""Largest brute-force space (mixed stages included) a draw may have."""
MULTI_GPUS = 14
"""Most GPUs of a `multi_node` draw."""
REDRAWS = 6
"""Draws of the features per seed before it is given up as too large."""
PRICES = (0.4, 1.0, 2.5, 6.0)
OBJECTIVES = ("time", "time", "time", "cost", "throughput_per_dollar", "time-cost-limit",
              "cost-rate-limit", "time-rate-limit", "cost-capped", "time-capped")
"""Objective scenarios (the first three: none, the plain time search)."""


@dataclass
class Draw:
    """One seed's instance, the features it has, and the objective scenario still to be given
    its limits (`with_limits`)."""

    seed: int
    instance: Instance
    features: list[str]
    scenario: str
    data: dict[str, Any] = field(repr=False)
    base_dir: Path = field(repr=False)
    refused: list[str] = field(default_factory=list)
    """Why the seed's earlier draws were refused (the loader's reason, or too large)."""


def _plain(obj: Any) -> Any:
    """A dataclass as the loader's mapping: tuples as lists, None fields left out."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)
                if getattr(obj, f.name) is not None}
    if isinstance(obj, tuple | list):
        return [_plain(x) for x in obj]
    return obj


def _noise(rng: random.Random) -> float:
    return rng.choice((0.55, 0.75, 0.9, 1.0, 1.0, 1.1, 1.3, 1.7))


def profile_text(instance: Instance, rng: random.Random) -> tuple[str, list[str]]:
    """A profile TOML for some of `instance`'s devices: the analytic costs at a few (TP,
    micro-batch) points times random factors (each field its own). Returns the text and the
    devices covered."""
    cm = CostModel(instance)
    names = sorted(instance.cluster.devices)
    covered = sorted(rng.sample(names, rng.randint(1, len(names))))
    heads = instance.model.num_attention_heads
    lines = ['description = "feature_instances: analytic times with random factors"']
    for dev in covered:
        tps = [1] + ([2] if heads % 2 == 0 and rng.random() < 0.5 else [])
        for tp in tps:
            for mb in sorted(rng.sample((1, 2, 3, 4, 6, 8), rng.randint(1, 3))):
                lc = cm.layer_cost(dev, tp, mb, "none")
                first, last = cm.first_cost(dev, tp, mb), cm.last_cost(dev, tp, mb)
                opt = compute.optimizer_step_s(cm.params_per_layer / tp, instance.device(dev),
                                               cm.constants)
                vals = {"layer_fwd_s": (lc.fwd_s + lc.tp_fwd_s) * _noise(rng),
                        "layer_bwd_s": (lc.bwd_s + lc.tp_bwd_s) * _noise(rng),
                        "embedding_fwd_s": (first.fwd_s + first.tp_fwd_s) * _noise(rng),
                        "embedding_bwd_s": (first.bwd_s + first.tp_bwd_s) * _noise(rng),
                        "head_fwd_s": (last.fwd_s + last.tp_fwd_s) * _noise(rng),
                        "head_bwd_s": (last.bwd_s + last.tp_bwd_s) * _noise(rng)}
                if rng.random() < 0.7:
                    vals["layer_optimizer_s"] = opt * _noise(rng)
                if rng.random() < 0.5:
                    vals["layer_activation_bytes"] = lc.activation_bytes * _noise(rng)
                lines += ["", "[[entry]]", f'device = "{dev}"', f"tp = {tp}",
                          f"micro_batch = {mb}"]
                lines += [f"{k} = {v!r}" for k, v in vals.items()]
    return "\n".join(lines) + "\n", covered


FP8_PRESETS = tuple(sorted(n for n, d in DEVICE_PRESETS.items() if d.peak_fp8_tflops))
"""The device table's presets with fp8 tensor cores (H100, H200, L40S, RTX4090, MI300X)."""


def _fp8_devices(data: dict[str, Any]) -> None:
    """Give an fp8 draw devices that can run it: each device of `data` without fp8 tensor cores
    becomes the fp8 preset of the device table nearest in 16-bit peak (A100 -> L40S; V100, A10,
    T4 -> RTX4090), keeping its drawn memory (the instance's tightness), renamed ``dK-PRESET``
    in the groups too. Without it the loader refused nearly every fp8 draw (only instances of
    H100s and L40Ss passed: 1 fp8 seed checked of 294). Deterministic (no draw from the seed's
    stream), so the other features' draws are unchanged."""
    renamed: dict[str, str] = {}
    devices = data["devices"]
    for name in list(devices):
        spec = devices[name]
        if spec.get("peak_fp8_tflops"):
            continue
        peak = float(spec["peak_tflops"])
        preset = min(FP8_PRESETS, key=lambda n: (
            abs(math.log(DEVICE_PRESETS[n].peak_tflops / peak)), n))
        new = f"{name.split('-', 1)[0]}-{preset}"
        fields = _plain(dataclasses.replace(DEVICE_PRESETS[preset], name=new,
                                            memory_gib=spec["memory_gib"]))
        del devices[name]
        devices[new] = {k: v for k, v in fields.items() if k != "name"}
        renamed[name] = new
    for g in data["cluster"]["node_groups"]:
        g["device"] = renamed.get(g["device"], g["device"])


def _second_node(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For a one-node straggler on a cluster of one-node groups: the one-node group of fewest
    GPUs per node (at most 4, the cluster then of at most MULTI_GPUS GPUs) given a second node
    (in place), as a list; empty where none fits. The base instances have a group of several
    nodes in about 1 seed of 9 (MAX_GPUS), so a one-node straggler was drawn in 2 of 294."""
    total = sum(g["num_nodes"] * g["gpus_per_node"] for g in groups)
    fits = [g for g in groups if g["num_nodes"] == 1 and g["gpus_per_node"] <= 4
            and total + g["gpus_per_node"] <= MULTI_GPUS]
    if not fits:
        return []
    g = min(fits, key=lambda x: x["gpus_per_node"])
    g["num_nodes"] = 2
    return [g]


def _draw_features(rng: random.Random, base: Instance, data: dict[str, Any],
                   profile_dir: Path, seed: int,
                   multi_node: bool = False) -> tuple[list[str], str]:
    """Randomize `data` (the loader's mapping of `base`) in place; the features drawn."""
    feats: list[str] = []
    tr = data["training"]
    model = data["model"]
    groups = data["cluster"]["node_groups"]
    if multi_node:  # two nodes of every group of one node of at most 4 GPUs, up to MULTI_GPUS
        total = sum(g["num_nodes"] * g["gpus_per_node"] for g in groups)
        for g in groups:
            if g["num_nodes"] == 1 and g["gpus_per_node"] <= 4 and \
                    total + g["gpus_per_node"] <= MULTI_GPUS:
                g["num_nodes"] = 2
                total += g["gpus_per_node"]
        if any(g["num_nodes"] >= 2 for g in groups):
            feats.append("multi_node_group")
    # -- precision and engine
    dtype = rng.choice(("fp16", "fp16", "bf16", "bf16", "fp32", "fp8"))
    tr["dtype"] = dtype
    feats.append(f"dtype={dtype}")
    if dtype == "fp8":
        _fp8_devices(data)
    if dtype == "fp32" and rng.random() < 0.5:
        tr["fp32_matmul_precision"] = "high"
        feats.append("fp32_high")
    if rng.random() < 0.3:
        tr["framework"] = "deepspeed"
        feats.append("framework=deepspeed")
    if rng.random() < 0.3:
        tr["grad_dtype"] = rng.choice(("fp32", "param"))
        feats.append(f"grad_dtype={tr['grad_dtype']}")
    tr["zero_stage"] = rng.choice((0, 1, 1, 2, 3))
    feats.append(f"zero={tr['zero_stage']}")
    for key, p in (("sequence_parallel", 0.3), ("flash_attention", 0.3),
                   ("overlap_grad_reduce", 0.4), ("overlap_param_gather", 0.4)):
        if rng.random() < p:
            tr[key] = False
            feats.append(f"{key}_off")
    if rng.random() < 0.3:
        tr["tp_comm_overlap"] = True
        feats.append("tp_comm_overlap")
    # -- schedules
    p2p = rng.choice(("auto", "auto", "blocking", "overlapped"))
    tr["pipeline_p2p"] = p2p
    feats.append(f"p2p={p2p}")
    if rng.random() < 0.3:
        v = rng.choice((2, 2, 3))
        tr["virtual_stages"] = v
        tr["schedules"] = rng.choice([["interleaved-1f1b"], ["1f1b", "interleaved-1f1b"]])
        model["num_layers"] = v * rng.choice((1, 2, 2))
        feats.append(f"interleaved_v{v}")
    elif rng.random() < 0.3:
        tr["schedules"] = rng.choice([["gpipe"], ["1f1b", "gpipe"]])
    if "gpipe" in tr["schedules"]:
        feats.append("gpipe")
    tr["empty_end_stages"] = rng.random() < 0.5
    if tr["empty_end_stages"]:
        feats.append("empty_end_stages")
    if rng.random() < 0.25:
        tr["max_tp"] = rng.choice((1, 2))
        feats.append("max_tp<8")
    if rng.random() < 0.2:
        tr["reserved_memory_gib"] = rng.choice((0.01, 0.05))
        feats.append("reserved_memory")
    # -- model
    if rng.random() < 0.25:
        model["gated_mlp"] = True
        model["ffn_hidden_size"] = int(model["hidden_size"] * 8 / 3) // 64 * 64
        feats.append("gated_mlp")
    if rng.random() < 0.25:
        model["tied_embeddings"] = True
        feats.append("tied_embeddings")
    if rng.random() < 0.2 and model["num_attention_heads"] % 2 == 0:
        model["num_kv_heads"] = model["num_attention_heads"] // 2
        feats.append("gqa")
    if rng.random() < 0.2:
        model["learned_position_embeddings"] = False
        feats.append("no_learned_positions")
    if rng.random() < 0.2:
        model["uses_dropout"] = False
        feats.append("no_dropout")
    # -- stragglers
    if rng.random() < 0.4:
        several = [g for g in groups if g["num_nodes"] >= 2]
        one_node = rng.random() < 0.5
        if one_node and not several:
            several = _second_node(groups)
        s: dict[str, Any]
        if one_node and several:
            g = rng.choice(several)
            s = {"node_group": g["name"], "node": rng.randrange(g["num_nodes"])}
            feats.append("straggler_node")
        else:
            g = rng.choice(groups)
            s = {"node_group": g["name"]}
            feats.append("straggler_group")
        s["compute_speed"] = rng.choice((0.35, 0.6, 0.8, 0.95, 1.0))
        s["network_speed"] = rng.choice((0.1, 0.5, 1.0, 1.0))
        if s["compute_speed"] == 1.0 and s["network_speed"] == 1.0:
            s["compute_speed"] = 0.5
        if s["network_speed"] < 1.0:
            feats.append("straggler_network")
        data["cluster"]["stragglers"] = [s]
    # -- objective
    scenario = rng.choice(OBJECTIVES)
    if scenario != "time" or rng.random() < 0.15:
        for g in groups:
            g["price_per_gpu_hour"] = rng.choice(PRICES)
        feats.append("prices")
    if scenario != "time":
        feats.append(f"objective={scenario}")
    if scenario.endswith("capped"):
        slowed = {x["node_group"] for x in data["cluster"].get("stragglers", [])}
        free = [j for j, x in enumerate(groups) if x["name"] not in slowed and x["num_nodes"] >= 2]
        k = max(free or range(len(groups)), key=lambda j: (groups[j]["num_nodes"],
                                                           groups[j]["num_nodes"]
                                                           * groups[j]["gpus_per_node"]))
        g = groups[k]
        g["max_gpus"] = max(1, g["num_nodes"] - 1) * g["gpus_per_node"]
        data["objective"] = {"optimize": scenario.split("-")[0]}
    elif scenario in ("cost", "throughput_per_dollar"):
        data["objective"] = {"optimize": scenario}
    # -- measured profile
    if rng.random() < 0.25:
        loaded = instance_from_dict(data, name=f"feat-{seed}", base_dir=profile_dir)
        text, _ = profile_text(loaded, rng)
        path = profile_dir / f"feature-{seed}.toml"
        path.write_text(text)
        data["profile"] = path.name
        feats.append("profile")
    return feats, scenario


def feature_instance(seed: int, profile_dir: Path, *, multi_node: bool = False) -> Draw:
    """The instance of `seed` (a measured profile, if drawn, written to `profile_dir`). A draw
    the loader refuses, or whose brute-force space exceeds MAX_SPACE, is redrawn (features
    only) from the seed's stream, its reason kept in `Draw.refused`; InputError where no draw
    of REDRAWS passes. `multi_node`: every group of one node of at most 4 GPUs gets a second
    (up to MULTI_GPUS GPUs in all), where sub-clusters, caps and slowed nodes split groups; its
    own stream of draws."""
    base = random_instance(seed)
    rng = random.Random(seed * 104_729 + (29 if multi_node else 17))
    profile_dir.mkdir(parents=True, exist_ok=True)
    refused: list[str] = []
    for _ in range(REDRAWS):
        data: dict[str, Any] = {
            "name": f"feat-{seed}", "model": _plain(base.model),
            "training": _plain(base.training),
            "cluster": {"node_groups": [_plain(g) for g in base.cluster.node_groups]},
            "devices": {n: {k: v for k, v in _plain(d).items() if k != "name"}
                        for n, d in base.cluster.devices.items()}}
        try:
            feats, scenario = _draw_features(rng, base, data, profile_dir, seed, multi_node)
            inst = instance_from_dict(data, name=f"feat-{seed}", base_dir=profile_dir)
        except InputError as exc:
            refused.append(refusal(exc))
            continue
        if space_size(inst, mixed=True, stop_above=MAX_SPACE) > MAX_SPACE:
            refused.append("too large for the brute force")
            continue
        return Draw(seed=seed, instance=inst, features=feats, scenario=scenario, data=data,
                    base_dir=profile_dir, refused=refused)
    raise InputError(f"seed {seed}: no draw of {REDRAWS} accepted: " + "; ".join(refused))


def refusal(exc: InputError) -> str:
    """The loader's reason, without the names of the seed's devices and groups."""
    text = str(exc)
    for key in ("no bf16 support", "no fp8 tensor cores", "rental cap", "measured profile",
                "slows node group"):
        if key in text:
            return key
    return text[:80]


def with_limits(draw: Draw, t_best: float, c_best: float) -> Instance:
    """`draw`'s instance with the limits of its scenario set from the brute force's least time
    `t_best` and least cost `c_best` on the whole priced cluster (so that they bind)."""
    inst = draw.instance
    tokens = inst.tokens_per_iteration
    rng = random.Random(draw.seed * 31 + 5)
    if draw.scenario == "time-cost-limit":
        limit = rng.choice((1.05, 1.3, 2.0)) * c_best if c_best < float("inf") else 1.0
        return dataclasses.replace(inst, objective=Objective(max_cost_per_iteration=limit))
    if draw.scenario in ("cost-rate-limit", "time-rate-limit"):
        rate = tokens / (rng.choice((1.05, 1.2, 1.6)) * t_best) if t_best < float("inf") \
            else 1.0
        return dataclasses.replace(inst, objective=Objective(
            optimize=draw.scenario.split("-")[0], min_tokens_per_s=rate))  # type: ignore[arg-type]
    return inst


def needs_references(draw: Draw) -> bool:
    """Whether `with_limits` needs the brute force's least time and cost first."""
    return draw.scenario in ("time-cost-limit", "cost-rate-limit", "time-rate-limit")
