"""The validator at the edge of each rule: one GPU, one layer, one byte over is rejected.

The corruption tests of test_properties overshoot each rule by a wide margin (a node given many
GPUs too many, a plan with layers added), so a validator that let a rule slip by one went
unnoticed (benchmarks/mutation_check.py: 'validator-node-overbooked', 'validator-layers-short',
'validator-memory-off'). Here each rule is tested just inside and just outside its limit.
"""

from __future__ import annotations

import pytest
from tiny_instances import tiny_instance

from haap_solver.instance import Instance
from haap_solver.memory_check import BYTES_PER_GIB, gpu_memory
from haap_solver.plan import Placement, Plan, ReplicaGroup, Stage
from haap_solver.validate import plan_violations

LAYERS = 4


def instance(memory_gib: float | None = None) -> Instance:
    """A100s, two nodes of 4 GPUs; a 4-layer GPT; global batch 8."""
    return tiny_instance(devices=[("A100-80G", memory_gib)], groups=[(0, 2, 4)], layers=LAYERS,
                         hidden=256, heads=4, seq=256, batch=8, recompute=("none",))


def replicas(node: int, count: int, share: int) -> tuple[ReplicaGroup, ...]:
    return (ReplicaGroup(node_group="g0", device="d0", count=count, tp=1,
                         micro_batch_share=share,
                         placement=(Placement(node=node, replicas=count),)),)


def two_stage_plan(second_stage_gpus_on_node_0: int) -> Plan:
    """Stage 0 on all 4 GPUs of node 0; stage 1 on node 0 too, `n` GPUs (4 + n on node 0)."""
    n = second_stage_gpus_on_node_0
    return Plan(micro_batch_size=4, num_micro_batches=2, stages=(
        Stage(first_layer=0, num_layers=2, replicas=replicas(0, 4, 1)),
        Stage(first_layer=2, num_layers=2, replicas=replicas(0, n, 4 // n))))


def test_a_node_given_one_gpu_too_many() -> None:
    ok = Plan(micro_batch_size=4, num_micro_batches=2, stages=(
        Stage(first_layer=0, num_layers=2, replicas=replicas(0, 4, 1)),
        Stage(first_layer=2, num_layers=2, replicas=replicas(1, 4, 1))))
    assert plan_violations(instance(), ok) == []
    assert plan_violations(instance(), two_stage_plan(1)) == [
        "node 0 of node group 'g0' is given 5 GPUs but has 4"]


@pytest.mark.parametrize("short_by", [1, 2])
def test_stages_that_stop_short_of_the_last_layer(short_by: int) -> None:
    plan = Plan(micro_batch_size=4, num_micro_batches=2, stages=(
        Stage(first_layer=0, num_layers=LAYERS - short_by, replicas=replicas(0, 4, 1)),))
    assert plan_violations(instance(), plan) == [
        f"the stages end at layer {LAYERS - short_by} but the model has {LAYERS} layers"]


def test_memory_one_part_in_a_million_over_capacity() -> None:
    """The device's memory set just above, then just below, what the plan needs per GPU."""
    plan = Plan(micro_batch_size=4, num_micro_batches=2, stages=(
        Stage(first_layer=0, num_layers=LAYERS, replicas=replicas(0, 4, 1)),))
    need_gib = gpu_memory(instance(), plan, 0, 0).total_bytes / BYTES_PER_GIB
    assert plan_violations(instance(need_gib * (1 + 1e-6)), plan) == []
    over = plan_violations(instance(need_gib * (1 - 1e-6)), plan)
    assert len(over) == 1 and over[0].startswith("stages[0].replicas[0] needs ")


def test_an_empty_end_stage_only_where_the_training_allows_it() -> None:
    """An embedding-only first stage is valid with training.empty_end_stages and not without
    it (as the recomputation modes and schedules, the flag says what a plan may use: the
    search's space and the validator's agree), nor under interleaved 1F1B (its stages split
    into equal model chunks, which an embedding-only stage has none of)."""
    from dataclasses import replace

    plan = Plan(micro_batch_size=4, num_micro_batches=2, stages=(
        Stage(first_layer=0, num_layers=0, replicas=replicas(0, 4, 1)),
        Stage(first_layer=0, num_layers=LAYERS, replicas=replicas(1, 4, 1))))
    off = instance()
    on = replace(off, training=replace(off.training, empty_end_stages=True))
    assert plan_violations(on, plan) == []
    assert any("empty_end_stages" in v for v in plan_violations(off, plan))
    both = replace(on, training=replace(on.training, schedules=("1f1b", "interleaved-1f1b"),
                                        virtual_stages=2))
    assert plan_violations(both, plan) == []
    woven = replace(plan, schedule="interleaved-1f1b")
    assert any("interleaved" in v and "no layers" in v for v in plan_violations(both, woven))
