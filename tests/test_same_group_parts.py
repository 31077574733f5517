"""Two replica groups of one stage on ONE node group (formulations Sec. 1.1, on clusters of at most
`space.SAME_GROUP_MAX_GPUS` GPUs): a stage of one node group with two TP degrees (one TP-1 and one
TP-2 replica on 3-GPU nodes), or a mixed stage with two replica groups on one of its groups (two
shares or two TP degrees there) beside a part on another group.

Before 2026-12-02 these were outside the searched space: on 120 random small instances aimed at
them (benchmarks/gap_probe.py --gap same_group) a valid plan with one beat the search's "optimal"
on 9, by up to 1.71x.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from haap_solver.baselines.bruteforce import bruteforce
from haap_solver.cluster import NodeGroup
from haap_solver.devices import DEVICE_PRESETS
from haap_solver.instance import Instance, make_instance
from haap_solver.model import ModelSpec
from haap_solver.search.outside import outside_space
from haap_solver.search.solve import solve
from haap_solver.search.space import (
    ReplicaPart,
    canonical_placement,
    mixed_config,
    packing_items,
)
from haap_solver.training import TrainingSpec
from haap_solver.validate import plan_violations


def _model(layers: int, heads: int, vocab: int) -> ModelSpec:
    return ModelSpec(name="m", num_layers=layers, hidden_size=768, ffn_hidden_size=3072,
                     num_attention_heads=heads, vocab_size=vocab, seq_length=1024,
                     learned_position_embeddings=True, uses_dropout=True)


def _two_tp_instance() -> Instance:
    """gap_probe --gap same_group seed 29: one layer, a global batch of 7, two 3-GPU V100 nodes
    with 0.42 GiB a GPU. The optimum's one stage is a TP-1 replica (3 sequences) beside a TP-2
    one (4) on one node: two TP degrees on one node group, 1.2% faster than the best stage of
    one TP degree."""
    training = TrainingSpec(global_batch_size=7, dtype="fp16", zero_stage=0,
                            recompute=("none",), schedules=("1f1b",), max_micro_batch_share=4,
                            reserved_memory_gib=0.0, empty_end_stages=True)
    v100 = replace(DEVICE_PRESETS["V100-32G"], name="v100-small",
                   memory_gib=0.41690826416015625)
    return make_instance(model=_model(1, 8, 4096), training=training, name="two-tp",
                         extra_devices={"v100-small": v100},
                         node_groups=[NodeGroup(name="g0", device="v100-small", num_nodes=2,
                                                gpus_per_node=3, nic_gbit_s=100.0)])


def _two_shares_instance() -> Instance:
    """gap_probe --gap same_group seed 102: two layers, a global batch of 11, a 4-GPU A100 node
    with 1.23 GiB a GPU beside a 2-GPU one with 0.18 GiB. The optimum's one stage has one replica
    of 1 sequence and three of 2 on the 4-GPU node and two of 2 on the other: two shares on one
    of a mixed stage's groups, 9.5% faster than the best plan without."""
    training = TrainingSpec(global_batch_size=11, dtype="fp16", zero_stage=1,
                            recompute=("none", "full"), schedules=("1f1b",),
                            max_micro_batch_share=2, reserved_memory_gib=0.0,
                            empty_end_stages=True)
    big = replace(DEVICE_PRESETS["A100-80G"], name="a100-big", memory_gib=1.23089599609375)
    small = replace(DEVICE_PRESETS["A100-80G"], name="a100-small",
                    memory_gib=0.18463439941406248)
    return make_instance(model=_model(2, 4, 2048), training=training, name="two-shares",
                         extra_devices={"a100-big": big, "a100-small": small},
                         node_groups=[NodeGroup(name="g0", device="a100-big", num_nodes=1,
                                                gpus_per_node=4, nic_gbit_s=400.0),
                                      NodeGroup(name="g1", device="a100-small", num_nodes=1,
                                                gpus_per_node=2, nic_gbit_s=100.0)])


def _same_group_stage(plan_stages: tuple) -> bool:  # type: ignore[type-arg]
    return any(len({r.node_group for r in s.replicas}) < len(s.replicas)
               and len({(r.node_group, r.tp) for r in s.replicas}) > 1 for s in plan_stages)


@pytest.mark.parametrize("make", [_two_tp_instance, _two_shares_instance])
def test_search_equals_the_validator_space(make: object) -> None:
    """The search's optimum is the brute force's over the documented space and over every plan
    the validator accepts, and has a stage with two replica groups on one node group. Fails
    with `space.same_group_searched` returning False (the space before): the search then
    proves plans 1.012x and 1.095x slower "optimal" (checked)."""
    inst = make()  # type: ignore[operator]
    res = solve(inst, threads=1, seed=0, time_limit_s=60, seed_with_baselines=False)
    assert res.status == "optimal" and res.plan is not None
    assert not plan_violations(inst, res.plan)
    wider = bruteforce(inst, mixed=True, space="validator")
    documented = bruteforce(inst, mixed=True)
    assert math.isclose(res.iteration_time_s, documented.iteration_time_s, rel_tol=1e-9)
    assert math.isclose(res.iteration_time_s, wider.iteration_time_s, rel_tol=1e-9)
    assert _same_group_stage(res.plan.stages)
    assert not any("one node group" in k for k in res.search_space["outside_space"])


def test_one_group_stage_on_one_node_is_one_item() -> None:
    """A one-group stage of at most a node sits on one node as one packing item of its GPUs
    (a pattern item for 3 of a 4-GPU node), its replicas all on that node; its spread twin is
    one item per replica, of its TP degree."""
    g = NodeGroup(name="g0", device="A100-80G", num_nodes=2, gpus_per_node=4, nic_gbit_s=100.0)
    parts = (ReplicaPart(node_group="g0", device="A100-80G", tp=1, count=1, share=1,
                         gpus_per_node=4),
             ReplicaPart(node_group="g0", device="A100-80G", tp=2, count=1, share=2,
                         gpus_per_node=4))
    whole, twin = mixed_config(parts, "none"), mixed_config(parts, "none", spread=True)
    assert packing_items(whole, g) == ((3,), ())
    assert packing_items(twin, g) == ((), (1, 2))
    training = TrainingSpec(global_batch_size=3, dtype="fp16", recompute=("none",),
                            schedules=("1f1b",))
    inst = make_instance(model=_model(2, 8, 4096), training=training, name="pack",
                         node_groups=[g])
    placed = canonical_placement(inst, [whole, whole])
    assert placed is not None
    for stage in placed:
        assert len({pl.node for part in stage for pl in part}) == 1
    assert {stage[0][0].node for stage in placed} == {0, 1}
    assert canonical_placement(inst, [whole, whole, whole]) is None


def test_outside_lists_the_kinds_only_above_the_cap() -> None:
    """The two kinds are listed as outside the space only on clusters above the cap."""
    inst = _two_tp_instance()
    assert not any("one node group" in k for k in outside_space(inst, mixed=True))
    big = replace(inst, cluster=replace(inst.cluster, node_groups=(
        replace(inst.cluster.node_groups[0], num_nodes=11),)))
    listed = outside_space(big, mixed=True)
    assert any("two TP degrees on one node group" in k for k in listed)


def test_carried_mixed_bounds_are_dropped_where_the_space_widens() -> None:
    """Losing nodes takes a 12-GPU cluster to 10, where stages with two replica groups on one
    node group join the mixed space (SAME_GROUP_MAX_GPUS): the bounds on plans with a mixed
    stage proven before no longer hold there and are not carried; the single-type ones are.
    Planted: `carry_bounds` without the same_group_space test carries both."""
    from haap_solver.search.carry import carry_bounds
    from haap_solver.search.formulation import SubProblem
    from haap_solver.search.space import same_group_space
    from haap_solver.search.state import SearchState

    def cluster(nodes: int) -> Instance:
        training = TrainingSpec(global_batch_size=8, dtype="fp16", recompute=("none",),
                                schedules=("1f1b",))
        return make_instance(model=_model(2, 8, 4096), training=training, name="carry",
                             node_groups=[NodeGroup(name="g0", device="A100-80G",
                                                    num_nodes=nodes, gpus_per_node=2,
                                                    nic_gbit_s=100.0)])

    old, new = SearchState(cluster(6)), SearchState(cluster(5))
    assert same_group_space(new.instance, 2) and not same_group_space(old.instance, 2)
    sub = SubProblem(num_stages=2, micro_batch=2, schedule="1f1b")
    old.sub_bounds = {("single", sub): 1.0, ("mixed", sub): 1.0}
    kept, _ = carry_bounds(old, new)
    assert kept == 1 and set(new.sub_bounds) == {("single", sub)}
