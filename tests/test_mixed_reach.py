"""Mixed stages the validator accepts that the search's mixed space left out (issue 23 item 1).

Before, a mixed stage was two parts on node groups of different device types with the one
fastest balanced split of its skeleton (formulations Sec. 1.1, now the *cut* space). A probe
over 85 random small instances (tests/random_instances.py) found valid plans beating the
search's proven "optimal" on 13 of them, of three kinds, each reproduced here by its seed and
plan (one stage each):

* a stage over three device types (seed 13: 14.5% faster than the search's "optimal");
* a stage over two node groups of one device type (seed 41, two A100 groups: 22.7%);
* a split other than the fastest balanced one (seed 35, 2 + 2 sequences on an H100 and a V100,
  where the fastest split does not fit the whole model with its embedding and head: 7.7%).

Each plan must be valid, in the brute force's mixed options (the full mixed space of Sec. 1.1,
read from the text), and no faster than the search's optimum, which every backend must prove
equal to the brute force's. Planted bugs, each run and reverted: the full space at two parts
(``_full_mixed_shapes`` with ``range(2, 3)``) fails the seed-13 tests; parts on distinct device
types only fails seed 41's; the one split of the cut space (``mixed_candidates`` taking
``mixed_split`` where the space is full) fails seed 35's.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from random_instances import disagreement, random_instance

from haap_solver.cost.evaluate import CostModel
from haap_solver.instance import Instance, load_instance
from haap_solver.plan import Placement, Plan, ReplicaGroup, Stage
from haap_solver.search.solve import solve
from haap_solver.validate import check_plan

bf = importlib.import_module("haap_solver.baselines.bruteforce")
"""The module (the package's attribute of that name is the function)."""

CASES = {
    # seed: (micro-batch, layers, recompute, [(node group, replicas, tp, share)], search before)
    13: (8, 4, "full", [("g0", 1, 1, 4), ("g1", 1, 1, 3), ("g2", 1, 1, 1)], 0.0111746),
    41: (6, 4, "none", [("g1", 1, 1, 3), ("g2", 1, 1, 3)], 0.0152829),
    35: (4, 1, "full", [("g0", 1, 1, 2), ("g1", 1, 1, 2)], 0.00697365),
}
"""The probe's plans: one stage of the whole model; the search's "optimal" time before, on the
cost model of the probe's day (a record: the cost model has moved since, so it is not asserted;
what is asserted is that the search now never loses to the plan)."""
BACKENDS = ("highs", "cpsat", "cbc")
SHIPPED = Path(__file__).resolve().parents[1] / "instances"


def _plan(inst: Instance, seed: int) -> Plan:
    """The case's one-stage plan, each part on node 0 of its group."""
    b, layers, recompute, parts, _ = CASES[seed]
    groups = {g.name: g for g in inst.cluster.node_groups}
    reps = tuple(ReplicaGroup(node_group=g, device=groups[g].device, count=n, tp=tp,
                              micro_batch_share=share,
                              placement=(Placement(node=0, replicas=n),))
                 for g, n, tp, share in parts)
    return Plan(instance=inst.name, schedule="1f1b", micro_batch_size=b,
                num_micro_batches=inst.training.global_batch_size // b,
                stages=(Stage(first_layer=0, num_layers=layers, recompute=recompute,  # type: ignore[arg-type]
                              replicas=reps),), note="issue 23 item 1 probe")


@pytest.mark.parametrize("seed", sorted(CASES))
def test_probe_plan_is_valid_in_the_space_and_never_beats_the_search(seed: int) -> None:
    inst = random_instance(seed)
    cm = CostModel(inst)
    plan = _plan(inst, seed)
    check_plan(inst, plan)
    plan_s = cm.evaluate(plan).iteration_time_s
    stage = plan.stages[0]
    wanted = sorted((r.node_group, r.tp, r.count, r.micro_batch_share) for r in stage.replicas)
    assert any(o.recompute == stage.recompute and
               sorted((p.node_group, p.tp, p.count, p.share) for p in o.parts) == wanted
               for o in bf.mixed_options(inst, plan.micro_batch_size, cm)), \
        "the brute force's mixed space lacks the stage"
    res = solve(inst, threads=1, seed=0, time_limit_s=60, seed_with_baselines=False)
    assert res.status == "optimal" and res.plan is not None
    check_plan(inst, res.plan)
    assert res.iteration_time_s <= plan_s * (1 + 1e-9)


@pytest.mark.parametrize("seed", sorted(CASES))
def test_probe_seed_agrees_with_the_brute_force_on_every_backend(seed: int) -> None:
    inst = random_instance(seed)
    truth = bf.bruteforce(inst, mixed=True)
    for backend in BACKENDS:
        why = disagreement(inst, truth, backend=backend, mixed=True)
        assert why is None, why


def test_search_and_brute_force_cut_the_same_micro_batch_sizes() -> None:
    """The search counts the full mixed space's candidates in closed form
    (`space.full_mixed_count`), the brute force by enumeration: the counts must be equal, and both
    must take the full space at the same micro-batch sizes, on instances under and over the
    budget. Planted bug: the
    closed form's shares up to max_micro_batch_share - 1 (or the budget compared with <):
    this fails."""
    from part_node_instances import part_node_instance

    from haap_solver.search.space import (
        full_mixed_count,
        micro_batch_candidates,
        mixed_space_full,
    )

    shipped = ("llama3.2-1b-h100x4-l40sx4", "gpt3-2.7b-a100-40gx8-v100x8")
    instances = [random_instance(s) for s in range(12)] + \
        [part_node_instance(s) for s in range(6)] + \
        [load_instance(SHIPPED / f"{name}.toml") for name in shipped]
    sizes = over = 0
    for inst in instances:
        for b in micro_batch_candidates(inst):
            full = bf.mixed_space_is_full(inst, b)
            assert mixed_space_full(inst, b) == full, (inst.name, b)
            counted = sum(len(bf._full_splits(inst, skeleton, b))
                          for skeleton in bf._full_skeletons(inst, b, "documented"))
            assert full_mixed_count(inst, b) == counted, (inst.name, b)
            sizes += 1
            over += not full
    assert sizes > 50 and over >= 1  # (both kinds of sizes checked)


def test_a_solve_says_where_the_mixed_space_was_cut() -> None:
    from haap_solver.search.space import mixed_space_summary

    res = solve(random_instance(13), threads=1, seed=0, time_limit_s=60,
                seed_with_baselines=False)
    assert res.search_space["mixed_space"]["cut_micro_batches"] == []
    big = load_instance(SHIPPED / "gpt3-175b-4types-x1024.toml")
    summary = mixed_space_summary(big)
    assert summary["cut_micro_batches"] and summary["full_micro_batches"]


def test_canonical_placement_spreads_mixed_parts_of_any_size() -> None:
    """Full-space mixed parts (Sec. 1.1) of 3 GPUs of a 4-GPU node, or 6 GPUs over 4-GPU
    nodes, are chain items (Sec. 1.3): any selection within the budget packs, so the canonical
    placement must find one where first-fit does not (3 + 3 + 2 and 6 + 2 GPUs on two 4-GPU
    nodes), and the plan must be valid. Planted bug: `_place` giving up after first-fit where
    every piece is mixed or of a first-fit size (the rule before the full space): fails."""
    from tiny_instances import tiny_instance

    from haap_solver.search.space import ReplicaPart, build_plan, mixed_config

    inst = tiny_instance(devices=[("A100-80G", None), ("V100-32G", None)],
                         groups=[(0, 2, 4), (1, 1, 4)], layers=3, hidden=512, heads=4, seq=512,
                         batch=12, recompute=("none",))

    def stage(tp: int, count: int, share: int) -> object:
        return mixed_config((ReplicaPart(node_group="g0", device="d0", tp=tp, count=count,
                                         share=share, gpus_per_node=4),
                             ReplicaPart(node_group="g1", device="d1", tp=1, count=1,
                                         share=4 - count * share, gpus_per_node=4)), "none")

    for configs, layers in (([stage(1, 3, 1), stage(1, 3, 1), stage(2, 1, 2)], [1, 1, 1]),
                            ([stage(2, 3, 1), stage(2, 1, 2)], [2, 1])):
        plan = build_plan(inst, configs, layers, micro_batch=4,  # type: ignore[arg-type]
                          schedule="1f1b")
        assert plan is not None
        check_plan(inst, plan)
