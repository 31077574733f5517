"""How long one CostModel.evaluate() call takes on a large plan (a benchmark, not a test).

The plan: GPT-3 175B on 64 DGX A100 nodes plus 32 DGX H100 nodes (768 GPUs), 48 pipeline stages of
2 layers each, TP 8 and DP 2 per stage (32 stages on A100, 16 on H100), micro-batch 2 x 768.

    python benchmarks/bench_evaluate.py [--warm N] [--cold N]

"Warm" reuses one CostModel, so every per-layer coefficient comes from its cache (the situation of
a search calling evaluate() in its inner loop); "cold" builds a new CostModel for every call.
"""

from __future__ import annotations

import argparse
import time

from haap_solver.cluster import NodeGroup
from haap_solver.cost.evaluate import CostModel
from haap_solver.instance import Instance, make_instance
from haap_solver.model import model_preset
from haap_solver.plan import Placement, Plan, ReplicaGroup, Stage
from haap_solver.training import TrainingSpec
from haap_solver.validate import check_plan

GLOBAL_BATCH = 1536
MICRO_BATCH = 2
TP, DP = 8, 2
A100_STAGES, H100_STAGES = 32, 16
LAYERS_PER_STAGE = 2


def build() -> tuple[Instance, Plan]:
    model = model_preset("gpt3-175b")
    training = TrainingSpec(global_batch_size=GLOBAL_BATCH, zero_stage=1)
    groups = [
        NodeGroup(name="a100", device="A100-80G", num_nodes=A100_STAGES * DP, gpus_per_node=8,
                  nic_gbit_s=200, nics_per_node=8),
        NodeGroup(name="h100", device="H100", num_nodes=H100_STAGES * DP, gpus_per_node=8,
                  nic_gbit_s=400, nics_per_node=8),
    ]
    instance = make_instance(model=model, training=training, node_groups=groups,
                             name="bench-gpt3-175b-a100x512-h100x256")
    stages = []
    layer = 0
    for group, device, count in (("a100", "A100-80G", A100_STAGES), ("h100", "H100", H100_STAGES)):
        for k in range(count):
            # Each stage takes two whole nodes: one TP-8 replica per node.
            placement = tuple(Placement(node=DP * k + d, replicas=1) for d in range(DP))
            replicas = (ReplicaGroup(node_group=group, device=device, count=DP, tp=TP,
                                     micro_batch_share=MICRO_BATCH // DP, placement=placement),)
            stages.append(Stage(first_layer=layer, num_layers=LAYERS_PER_STAGE,
                                recompute="selective", replicas=replicas))
            layer += LAYERS_PER_STAGE
    assert layer == model.num_layers
    plan = Plan(micro_batch_size=MICRO_BATCH, num_micro_batches=GLOBAL_BATCH // MICRO_BATCH,
                stages=tuple(stages), note="benchmark plan")
    check_plan(instance, plan)
    return instance, plan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm", type=int, default=3000, help="calls on one CostModel")
    parser.add_argument("--cold", type=int, default=300, help="calls, each on a new CostModel")
    args = parser.parse_args()

    instance, plan = build()
    print(f"{instance.name}: {plan.num_stages} stages, {plan.num_gpus} GPUs, "
          f"{plan.num_micro_batches} micro-batches of {plan.micro_batch_size}")

    cm = CostModel(instance)
    ev = cm.evaluate(plan)  # fill the caches
    print(f"iteration {ev.iteration_time_s:.3f} s, MFU {ev.mfu:.1%}, "
          f"peak memory {ev.peak_memory_fraction:.0%}")
    start = time.perf_counter()
    for _ in range(args.warm):
        cm.evaluate(plan)
    warm = (time.perf_counter() - start) / args.warm

    start = time.perf_counter()
    for _ in range(args.cold):
        CostModel(instance).evaluate(plan)
    cold = (time.perf_counter() - start) / args.cold

    print(f"warm cache: {warm * 1e6:8.1f} us per evaluate() (mean of {args.warm} calls)")
    print(f"cold model: {cold * 1e6:8.1f} us per evaluate() incl. CostModel() "
          f"(mean of {args.cold} calls)")


if __name__ == "__main__":
    main()
