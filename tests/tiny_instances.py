"""Tiny instances for the exactness tests: small enough to enumerate every plan."""

from __future__ import annotations

from dataclasses import replace

from haap_solver.cluster import NodeGroup
from haap_solver.devices import DEVICE_PRESETS
from haap_solver.instance import Instance, make_instance
from haap_solver.model import ModelSpec
from haap_solver.training import TrainingSpec


def tiny_instance(*, devices: list[tuple[str, float | None]], groups: list[tuple[int, int, int]],
                  layers: int, hidden: int, heads: int, seq: int, batch: int,
                  recompute: tuple[str, ...], schedules: tuple[str, ...] = ("1f1b",),
                  zero: int = 1, overlap: bool = True,
                  nic_gbit_s: float | None = None) -> Instance:
    """devices: (preset, memory GiB or None for the preset's); groups: (device, nodes, GPUs/node).

    A preset with less memory makes memory bind on a tiny model. `nic_gbit_s`: every group's NIC
    (default 100 Gbit/s times the group's 1-based index); a slow one makes pipeline links bind."""
    extra = {}
    for k, (preset, mem) in enumerate(devices):
        base = DEVICE_PRESETS[preset]
        extra[f"d{k}"] = replace(base, name=f"d{k}", memory_gib=mem or base.memory_gib)
    node_groups = [NodeGroup(name=f"g{k}", device=f"d{dev}", num_nodes=nodes,
                             gpus_per_node=gpn,
                             nic_gbit_s=nic_gbit_s or 100.0 * (k + 1))
                   for k, (dev, nodes, gpn) in enumerate(groups)]
    model = ModelSpec(name="tiny-gpt", num_layers=layers, hidden_size=hidden,
                      ffn_hidden_size=4 * hidden, num_attention_heads=heads, vocab_size=8192,
                      seq_length=seq, learned_position_embeddings=True, uses_dropout=True)
    training = TrainingSpec(global_batch_size=batch, dtype="fp16", zero_stage=zero,
                            recompute=recompute, schedules=schedules,  # type: ignore[arg-type]
                            overlap_grad_reduce=overlap)
    return make_instance(model=model, training=training, node_groups=node_groups,
                         extra_devices=extra, name="tiny")
