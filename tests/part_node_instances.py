"""Random tiny instances on 4- and 6-GPU nodes with batches divisible by 3, where a stage on
part of a node (3 GPUs of 4; 3, 4 or 5 of 6) may be the fastest: formulations Sec. 1.3.

``part_node_instance(seed)`` builds one (seeded, reproducible): one or two node groups of one
node (4 or 6 GPUs) or two 4-GPU nodes, of one or two device types, a 1-3 layer GPT, a global
batch of 3, 6 or 9 and memory between tight and ample; ``packing_instance(seed)`` one where the
packing binds more often. Small enough for the brute force in about a second at most.
"""

from __future__ import annotations

import random
from dataclasses import replace

from tiny_instances import tiny_instance

from haap_solver.instance import Instance

PRESETS = ("H100", "A100-80G", "V100-32G", "T4", "L40S", "A10")


def part_node_instance(seed: int) -> Instance:
    """The instance of `seed` (see the module docstring)."""
    rng = random.Random(seed)
    kinds = rng.sample(PRESETS, 2)
    devices = [(k, rng.choice((2.0, 4.0, 8.0, 16.0))) for k in kinds]
    sizes = [rng.choice((4, 6))]
    if rng.random() < 0.6:
        sizes.append(rng.choice((4, 6)))
    groups = [(k % len(devices), 2 if q == 4 and rng.random() < 0.5 else 1, q)
              for k, q in enumerate(sizes)]
    inst = tiny_instance(devices=devices, groups=groups, layers=rng.randint(1, 3),
                         hidden=rng.choice((512, 1024)), heads=4, seq=rng.choice((512, 1024)),
                         batch=rng.choice((3, 6, 9)), recompute=("none",),
                         zero=rng.choice((0, 1)))
    share = rng.choice((1, 2))
    return replace(inst, name=f"part-node-{seed}",
                   training=replace(inst.training, max_micro_batch_share=share))


def packing_instance(seed: int) -> Instance:
    """Two 4-GPU nodes of one device type (sometimes beside a second, one-node group), a
    3-6 layer GPT whose memory (2.4-2.9 GiB a GPU) holds one or two layers a stage, a batch of 6
    or 12: where the fastest stage sizes, say 3 + 3 + 2, fit the GPU budget but not the nodes,
    and the packing rows (4a)-(4c) of Sec. 1.3 decide (seeded, reproducible)."""
    rng = random.Random(10_000 + seed)
    kinds = rng.sample(PRESETS, 2)
    devices = [(k, rng.choice((2.4, 2.5, 2.6, 2.7, 2.8, 2.9))) for k in kinds]
    groups = [(0, 2, 4)]
    if rng.random() < 0.3:
        groups.append((1, 1, rng.choice((1, 2))))
    inst = tiny_instance(devices=devices, groups=groups, layers=rng.randint(3, 6),
                         hidden=1024, heads=4, seq=1024, batch=rng.choice((6, 12)),
                         recompute=("none",), zero=rng.choice((0, 1)))
    return replace(inst, name=f"packing-{seed}",
                   training=replace(inst.training, max_micro_batch_share=rng.choice((2, 3))))
