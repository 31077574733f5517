"""A mixed stage's part on several whole nodes (issue 23 item 1; formulations Sec. 1.1, at most
``MIXED_MAX_PART_NODES`` = 2 nodes a part).

Before, a part took at most one node: on 8 A100-40GB + 8 V100-16GB in 4-GPU nodes, one stage of
8 A100 replicas at TP 1 (two nodes) plus 2 V100 replicas at TP 4 (two nodes) was outside the
space. It is a valid plan; both the brute force's definition and the search's candidates now
hold it, and the search's optimum is no slower. The brute-force agreement of such parts on
random instances (groups of two nodes) is checked by tests/test_bruteforce_agreement.py.
Planted bug: a part back to one node (``mixed_part_allowed`` without several nodes, or
``mixed_shapes``' count bound at one node): the candidate assertion fails.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from haap_solver.cost.evaluate import CostModel
from haap_solver.instance import load_instance
from haap_solver.plan import Placement, Plan, ReplicaGroup, Stage
from haap_solver.search.coefficients import CoefficientCache
from haap_solver.search.solve import solve
from haap_solver.validate import check_plan

bf = importlib.import_module("haap_solver.baselines.bruteforce")
"""The module (the package's attribute of that name is the function)."""
INSTANCE = Path(__file__).resolve().parent / "data" / "multi-node-mixed-part.toml"
SKELETON = [("a100", 1, 8), ("v100", 4, 2)]
"""(node group, TP, replicas) of the two parts: two whole nodes each."""


def _two_node_parts_plan() -> Plan:
    """One stage, micro-batch 24: 8 A100 at TP 1 taking 2 sequences each, 2 V100 at TP 4 taking
    4 each (the documented split of that skeleton), each part on both nodes of its group."""
    a100 = ReplicaGroup(node_group="a100", device="A100-40G", count=8, tp=1, micro_batch_share=2,
                        placement=(Placement(node=0, replicas=4), Placement(node=1, replicas=4)))
    v100 = ReplicaGroup(node_group="v100", device="V100-16G", count=2, tp=4, micro_batch_share=4,
                        placement=(Placement(node=0, replicas=1), Placement(node=1, replicas=1)))
    return Plan(instance="a100x8-v100-16gx8-4gpu-nodes", schedule="1f1b", micro_batch_size=24,
                num_micro_batches=2, stages=(Stage(first_layer=0, num_layers=4, recompute="none",
                                                   replicas=(a100, v100)),), note="issue 23")


def test_two_node_parts_are_in_the_space_and_the_search_is_no_slower() -> None:
    inst = load_instance(INSTANCE)
    cm = CostModel(inst)
    plan = _two_node_parts_plan()
    check_plan(inst, plan)
    plan_s = cm.evaluate(plan).iteration_time_s

    def skeleton(parts: object) -> list[tuple[str, int, int]]:
        return sorted((p.node_group, p.tp, p.count) for p in parts)  # type: ignore[attr-defined]

    documented = [o for o in bf.mixed_options(inst, 24, cm) if skeleton(o.parts) == SKELETON]
    assert [tuple(p.share for p in o.parts) for o in documented if o.recompute == "none"] == [
        (2, 4)]
    searched = [c for c in CoefficientCache(cm).mixed_candidates(24)
                if skeleton(c.parts) == SKELETON and c.recompute == "none"]
    assert [tuple(p.share for p in c.parts) for c in searched] == [(2, 4)]
    res = solve(inst, threads=1, seed=0, time_limit_s=60, seed_with_baselines=False)
    assert res.plan is not None and res.status == "optimal"
    assert res.iteration_time_s <= plan_s * (1 + 1e-9)
