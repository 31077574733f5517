"""No placement of a replica group inside its node group is cheaper than the canonical one.

The exact search places every stage canonically (formulations Sec. 1: a sub-node stage packed on
one node, a whole-node stage filling its nodes) and costs it from its configuration alone. A
placement that the cost model made cheaper than the canonical one would let a plan outside the
search's costs beat its "optimum": it happened with the NIC share of pipeline sends
(docs/cost-model.md Sec. 6.2), where spreading a 2-GPU stage over two nodes bought each GPU a
whole NIC. The independent brute force (which enumerated every placement the validator accepts)
found that plan 0.4% faster on the random instance of seed 2074, under both pipeline_p2p modes.
Since part-node stages (Sec. 1.3) the brute force keeps a single-type stage of at most a node on
one node unless it may spread (its ring over the network no faster: the search's spread stages,
Sec. 1.3), so the first test below (spread costs no less than packed) checks that placement
directly; the second keeps the instance's agreement.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
import random_instances
from random_instances import disagreement, random_instance

from haap_solver.baselines.bruteforce import bruteforce
from haap_solver.cost.evaluate import CostModel
from haap_solver.instance import Instance
from haap_solver.plan import Placement, Plan
from haap_solver.validate import check_plan

SEED = 2074
"""Two nodes of two A10 (g1) hold two one-layer stages of two replicas each (the search's and
the brute force's optimum): packed, one stage per node; spread, one replica of each per node."""


def _instance(p2p: str) -> Instance:
    """The instance of the issue: the second draw of SEED's stream, which random_instance(SEED)
    returned until part-node stages (formulations Sec. 1.3) grew its brute-force space past
    MAX_SPACE (35,110 plans), so that random_instance(SEED) now draws on."""
    rng = random.Random(SEED)
    random_instances._draw(rng, SEED)
    inst = random_instances._draw(rng, SEED)
    return replace(inst, training=replace(inst.training, pipeline_p2p=p2p))


def _spread(plan: Plan, group: str) -> Plan:
    """`plan` with every two-replica, TP-1 group on `group` placed one replica per node."""
    stages = []
    for stage in plan.stages:
        replicas = tuple(
            replace(r, placement=(Placement(node=0, replicas=1), Placement(node=1, replicas=1)))
            if r.node_group == group and r.count == 2 and r.tp == 1 else r
            for r in stage.replicas)
        stages.append(replace(stage, replicas=replicas))
    return replace(plan, stages=tuple(stages))


def _packed(plan: Plan, group: str) -> Plan:
    """`plan` with the two-replica groups on `group` packed, the k-th such group on node k."""
    stages, k = [], 0
    for stage in plan.stages:
        replicas = []
        for r in stage.replicas:
            if r.node_group == group and r.count == 2 and r.tp == 1:
                r = replace(r, placement=(Placement(node=k, replicas=2),))
                k += 1
            replicas.append(r)
        stages.append(replace(stage, replicas=tuple(replicas)))
    return replace(plan, stages=tuple(stages))


@pytest.mark.parametrize("p2p", ["overlapped", "blocking"])
def test_spreading_a_stage_over_nodes_never_makes_it_cheaper(p2p: str) -> None:
    """Pipeline sends cost the same spread or packed (the NIC share is the canonical one); the
    data-parallel ring of a spread stage crosses the network, so spreading can only cost more."""
    inst = _instance(p2p)
    truth = bruteforce(inst, cost_model=CostModel(inst), mixed=False, empty_end_stages=True)
    assert truth.plan is not None
    spread, packed = _spread(truth.plan, "g1"), _packed(truth.plan, "g1")
    assert spread != packed  # (the instance still has the shape this test is about)
    for plan in (spread, packed):
        check_plan(inst, plan)
    cm = CostModel(inst)
    a, b = cm.evaluate(spread), cm.evaluate(packed)
    assert a.iteration_time_s >= b.iteration_time_s * (1 - 1e-12)
    assert [s.p2p_next_s for s in a.stages] == pytest.approx([s.p2p_next_s for s in b.stages])


@pytest.mark.parametrize("p2p", ["overlapped", "blocking"])
def test_the_search_agrees_with_the_brute_force_where_placement_once_mattered(p2p: str) -> None:
    inst = _instance(p2p)
    truth = bruteforce(inst, cost_model=CostModel(inst), mixed=False, empty_end_stages=True)
    assert truth.plan is not None
    assert disagreement(inst, truth, backend="highs", mixed=False) is None


BLOCKING_SEEDS = (5, 18, 29, 52, 2074)
"""Seeds of the CI agreement set with several stages (5, 29, 52), a mixed-stage optimum (18),
and 2074 (the placement case above until Sec. 1.3 redrew it), re-checked with blocking sends
(training.pipeline_p2p): the generator draws the default ("overlapped") only, and blocking
sends change the period every model row, layer split and bound must respect
(tau_i + c_{i-1} + c_i)."""


@pytest.mark.parametrize("seed", BLOCKING_SEEDS)
@pytest.mark.parametrize("backend", ["highs", "cpsat"])
def test_search_equals_bruteforce_with_blocking_sends(seed: int, backend: str) -> None:
    inst = random_instance(seed)
    inst = replace(inst, training=replace(inst.training, pipeline_p2p="blocking"))
    truth = bruteforce(inst, cost_model=CostModel(inst), mixed=True, empty_end_stages=True)
    assert disagreement(inst, truth, backend=backend, mixed=True) is None
