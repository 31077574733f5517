"""Under overlapped sends a link is a pipeline stage of its own (T >= 2 c_j, formulations (9)),
and a link takes at least either side's least time pi(c), so a configuration beside a link
paces the pipeline at 2 pi(c) at least (formulations Sec. 4.3, "Links pace the pipeline"). The
capacity tables of Sec. 4.3-4.4 and the models' candidates (Sec. 4.2) use it. On clusters of
small nodes behind a slow NIC it decides most proofs (a node's stage sends all its replicas'
activations through one NIC); here on a tiny instance of that kind, where it binds: the bounds
stay below every plan's (test_bounds._check_bounds, with T the model's bottleneck, links
included), and the search agrees with the brute force."""

from __future__ import annotations

import dataclasses
import math

import pytest
from test_bounds import _check_bounds, _sequences, compositions
from tiny_instances import tiny_instance

from haap_solver.baselines.bruteforce import bruteforce
from haap_solver.instance import Instance
from haap_solver.search.formulation import SubProblem
from haap_solver.search.solve import SearchState, solve
from haap_solver.search.space import build_plan
from haap_solver.validate import plan_violations


def _slow_nic_instance(p2p: str = "overlapped") -> Instance:
    """Two device types on two 2-GPU nodes each behind a 3 Gbit/s NIC, memory tight enough that
    the best plan has three stages (found by the brute force). Overlapped sends, where the rule
    holds, unless `p2p` says otherwise."""
    inst = tiny_instance(devices=[("A100-80G", 2.3), ("V100-32G", 2.3)],
                         groups=[(0, 2, 2), (1, 2, 2)], layers=4, hidden=1024, heads=4,
                         seq=1024, batch=4, recompute=("none",), nic_gbit_s=3.0)
    return dataclasses.replace(inst, training=dataclasses.replace(inst.training,
                                                                   pipeline_p2p=p2p))


def _least_stage_bottleneck(state: SearchState, sub: SubProblem) -> float:
    """The least slowest-stage time (links left out) over the valid plans of `sub`."""
    inst = state.instance
    budget = {g.name: g.num_gpus for g in inst.cluster.node_groups}
    p, b = sub.num_stages, sub.micro_batch
    best = math.inf
    for seq in _sequences(state.configs(b), p, dict(budget)):
        for layers in compositions(inst.model.num_layers, p):
            plan = build_plan(inst, seq, layers, micro_batch=b, schedule="1f1b", note="test")
            if plan is None or plan_violations(inst, plan, cost_model=state.cost_model):
                continue
            best = min(best, max(state.cache.coefficients(c, b, i == 0, i == p - 1, p > 1).tau(n)
                                 for i, (c, n) in enumerate(zip(seq, layers, strict=True))))
    return best


def test_links_pace_the_bounds_validly() -> None:
    state = SearchState(_slow_nic_instance())
    assert _check_bounds(state) > 0
    # Not vacuous: the link floor lifts some bottleneck floor above the slowest stage alone of
    # every plan of its sub-problem (a floor on stage times alone could not do that).
    p_cap = state.instance.model.num_layers
    lifted = [(p, b) for b in state.micro_batches() for p in range(2, p_cap + 1)
              if state.bottleneck_floor(SubProblem(p, b, "1f1b"), p_cap)
              > _least_stage_bottleneck(state, SubProblem(p, b, "1f1b")) * (1 + 1e-9)]
    assert lifted


@pytest.mark.parametrize("p2p", ["overlapped", "auto"])
def test_search_agrees_with_bruteforce_where_links_pace(p2p: str) -> None:
    """And under the default, whose 1F1B blocks: there a stage's period is tau + its links, and
    an end stage's can be below 2 pi(c) (one link, tau < pi(c) behind a slow NIC), so the rule
    must not cut its models."""
    inst = _slow_nic_instance(p2p)
    truth = bruteforce(inst)
    assert truth.plan is not None and len(truth.plan.stages) >= 2
    for backend in ("highs", "cpsat"):
        result = solve(inst, backend=backend, threads=1, seed=0, time_limit_s=60, mixed=False)
        assert result.status == "optimal"
        assert math.isclose(result.iteration_time_s, truth.iteration_time_s, rel_tol=1e-9)
