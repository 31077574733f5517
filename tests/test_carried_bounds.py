"""Sub-problem bounds carried across a change (issue 22; formulations Sec. 8): where the change
only takes nodes away, the bounds a search proved on the larger cluster start the next search,
so a loss the running plan does not feel is proven without a model; they are never carried
where the new cluster has plans the old one had not, or plans it costs lower (a group down to
one node: intra-node sends), and a warm re-solve with them proves what a cold solve proves."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tiny_instances import tiny_instance

import haap_solver as haap
from haap_solver import changes as ch
from haap_solver.cluster import NodeGroup
from haap_solver.cost.evaluate import CostModel
from haap_solver.result import SolveResult
from haap_solver.search import carry, space

LIMIT_S = 60.0


def _cold(instance: haap.Instance) -> SolveResult:
    return haap.solve(instance, time_limit_s=LIMIT_S, threads=1, seed=0,
                      seed_with_baselines=False)


def _agree(warm: SolveResult, cold: SolveResult) -> None:
    assert warm.status == cold.status == "optimal"
    assert warm.iteration_time_s == pytest.approx(cold.iteration_time_s, rel=1e-9, abs=0)


def _two_groups(a100_gib: float) -> haap.Instance:
    """Four 2-GPU nodes of one device type and three of another, memory binding: at 2.7 GiB the
    optimum takes two nodes of g0, at 2.3 GiB all four."""
    return tiny_instance(devices=[("A100-80G", a100_gib), ("V100-32G", 2.0)],
                         groups=[(0, 4, 2), (1, 3, 2)], layers=8, hidden=512, heads=8, seq=512,
                         batch=16, recompute=("none", "full"))


def _used_nodes(result: SolveResult) -> set[tuple[str, int]]:
    assert result.plan is not None
    return {(rg.node_group, p.node) for s in result.plan.stages for rg in s.replicas
            for p in rg.placement}


def test_a_loss_the_plan_does_not_feel_is_proven_by_the_carried_bounds(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Nodes the plan does not use are lost, one group removed: every sub-problem closes on its
    carried bound, no model is solved, and the optimum is the cold solve's. Without the carry
    the warm search solves the models again (the cutoff alone does not close them). (The
    changes take the cluster to 10 GPUs, where stages with two replica groups on one node group
    join the mixed space, space.SAME_GROUP_MAX_GPUS: the space is no longer nested and the carry
    rightly drops the mixed bounds, `carry.carry_bounds`; the cap is set below the cluster here
    so that the space stays nested, as the test means.)"""
    monkeypatch.setattr(space, "SAME_GROUP_MAX_GPUS", 0)
    planner = haap.Planner(_two_groups(2.7), time_limit_s=LIMIT_S)
    first = planner.solve().result
    assert _used_nodes(first) <= {("g0", 0), ("g0", 1)}
    for change in (ch.Resize(node_group="g0", num_nodes=3), ch.Resize(node_group="g1",
                                                                       num_nodes=2),
                   ch.RemoveNodeGroup(node_group="g1")):
        reuse = planner.apply(change)
        assert reuse.bounds_kept == reuse.bounds_total > 0, reuse.bounds_note
        warm = planner.solve().result
        cold = _cold(planner.instance)
        _agree(warm, cold)
        assert cold.solved > 0
        assert warm.solved == 0
        assert warm.search_space["subproblem_fates"]["carried_bound"] > 0


@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 3)), min_size=3, max_size=3))
def test_warm_equals_cold_after_losses_the_plan_feels(losses: list[tuple[int, int]]) -> None:
    """Node losses on the cluster whose optimum takes every node of g0 (so the repaired plan is
    worse, and the carried bounds lie below the new cutoff): each re-solve proves the cold
    optimum. A group may drop to one node (its bounds then are not carried) or go (value 0)."""
    planner = haap.Planner(_two_groups(2.3), time_limit_s=LIMIT_S)
    planner.solve()
    for group, lose in losses:
        groups = {g.name: g.num_nodes for g in planner.instance.cluster.node_groups}
        name = f"g{group}"
        if name not in groups:
            continue
        left = groups[name] - lose
        if left < 1 and len(groups) == 1:
            continue
        change = (ch.RemoveNodeGroup(node_group=name) if left < 1 else
                  ch.Resize(node_group=name, num_nodes=left))
        before = len(planner.state.sub_bounds)
        reuse = planner.apply(change)
        shrinks_to_one = left == 1 < groups[name]
        if before and not shrinks_to_one:
            assert reuse.bounds_kept > 0, reuse.bounds_note
        try:
            cold = _cold(planner.instance)
        except haap.InfeasibleError:
            return
        _agree(planner.solve().result, cold)


def test_a_group_down_to_one_node_carries_no_bound() -> None:
    """Two 2-GPU nodes on a 1 Gbit/s network, one is lost: on one node the two stages' sends are
    intra-node, so the best two-stage plan is faster than any two-stage plan of two nodes was,
    and a bound carried from there would "prove" the one-stage plan (0.0281 s) optimal against
    the true 0.0260 s."""
    instance = tiny_instance(devices=[("A100-80G", 2.4)], groups=[(0, 2, 2)], layers=8,
                             hidden=512, heads=8, seq=512, batch=8, recompute=("none",),
                             nic_gbit_s=1.0)
    planner = haap.Planner(instance, time_limit_s=LIMIT_S)
    planner.solve()
    reuse = planner.apply(ch.Resize(node_group="g0", num_nodes=1))
    warm, cold = planner.solve().result, _cold(planner.instance)
    _agree(warm, cold)
    assert cold.plan is not None and cold.plan.num_stages == 2
    assert reuse.bounds_kept == 0 and "one node" in reuse.bounds_note


def _why(old: haap.Instance, new: haap.Instance) -> str | None:
    return carry.bounds_break(CostModel(old), CostModel(new))


def test_bounds_break_says_why() -> None:
    """Only losses carry; every other change names what breaks the subset argument."""
    base = _two_groups(2.7)
    cluster = base.cluster

    def with_groups(*groups: NodeGroup) -> haap.Instance:
        return dataclasses.replace(base, cluster=dataclasses.replace(cluster,
                                                                     node_groups=groups))

    g0, g1 = cluster.node_groups
    assert _why(base, base) is None
    assert _why(base, with_groups(dataclasses.replace(g0, num_nodes=2), g1)) is None
    assert _why(base, with_groups(g0)) is None
    assert "gained" in str(_why(base, with_groups(g0, dataclasses.replace(g1, num_nodes=4))))
    assert "one node" in str(_why(base, with_groups(g0, dataclasses.replace(g1, num_nodes=1))))
    assert "new" in str(_why(with_groups(g0), base))
    assert "changed" in str(_why(base, with_groups(g0, dataclasses.replace(g1,
                                                                             nic_gbit_s=25.0))))
    bigger = dataclasses.replace(base, training=dataclasses.replace(base.training,
                                                                    global_batch_size=32))
    assert _why(base, bigger) is not None


def test_with_a_relative_gap_the_carried_bounds_close_within_it() -> None:
    """A Planner stopped at a 5% gap: after a loss it re-solves within 5% of the cold optimum,
    its bound below that optimum, and a loss the plan does not feel solves no model."""
    gap = 0.05
    planner = haap.Planner(_two_groups(2.7), time_limit_s=LIMIT_S, relative_gap=gap)
    planner.solve()
    planner.apply(ch.Resize(node_group="g1", num_nodes=2))
    warm = planner.solve().result
    cold = _cold(planner.instance)
    assert warm.solved == 0
    assert cold.iteration_time_s * (1 - 1e-9) <= warm.iteration_time_s \
        <= cold.iteration_time_s * (1 + gap)
    assert warm.best_bound_s <= cold.iteration_time_s * (1 + 1e-9)
    assert warm.gap <= gap + 1e-9
    with pytest.raises(ValueError, match="relative_gap"):
        haap.Planner(_two_groups(2.7), relative_gap=1.0)


def test_the_warm_start_runs_where_the_repaired_plan_is_worse(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Node 1 of a two-stage pipeline slows to 80%: the repaired plan (the running one) is
    slower than the old optimum, so the re-solve runs the warm start's heuristic plans for the
    sub-problems its cutoff leaves open, as a cold solve does (before, the repaired plan alone
    was the incumbent, and the strengthening walks ran against its poorer time: on the spot
    trace's 09:30 event the warm re-solve took 1.5x the cold solve's CPU time). Where every
    sub-problem is closed at once (a loss the plan does not feel) it runs none: the first test
    asserts that no model is solved there."""
    from test_planner import _two_node_pipeline

    from haap_solver.search.branch_and_bound import BranchAndBound
    from haap_solver.stragglers import Straggler

    warmed: list[object] = []
    in_warm_start = [False]
    warm, warm_start = BranchAndBound.warm, BranchAndBound.warm_start

    def counting(self: BranchAndBound, cand: Any, restricted_model: bool = True) -> None:
        if in_warm_start[0]:
            warmed.append(cand)
        warm(self, cand, restricted_model)

    def flagged(self: BranchAndBound) -> None:
        in_warm_start[0] = True
        try:
            warm_start(self)
        finally:
            in_warm_start[0] = False

    planner = haap.Planner(_two_node_pipeline(), time_limit_s=LIMIT_S)
    first = planner.solve().result
    planner.apply(ch.Slowdown(straggler=Straggler(node_group="g0", node=1, compute_speed=0.8)))
    monkeypatch.setattr(BranchAndBound, "warm", counting)
    monkeypatch.setattr(BranchAndBound, "warm_start", flagged)
    again = planner.solve()
    assert again.incumbent_s is not None and again.incumbent_s > first.iteration_time_s
    assert warmed
    _agree(again.result, _cold(planner.instance))


def test_a_carried_space_floor_bounds_what_the_deadline_left_unbuilt(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A search that set up every micro-batch size records the least bound over its
    sub-problems as a floor on every plan of its space; after a loss the Planner carries it
    (Sec. 8), and where the deadline cuts the next search's set-up (simulated here: every size
    cut, as at 1,024 GPUs with a 2 s limit) the sizes left unbuilt are
    bounded by it, not by the cluster's compute alone (`any_plan_floor`). A loss the running
    plan does not feel is then proven optimal with nothing set up; the bound never passes the
    cold optimum."""
    from haap_solver.search import state as state_module
    from haap_solver.search.branch_and_bound import BranchAndBound
    from haap_solver.search.deadline import DeadlineReached
    from haap_solver.search.subproblem_bounds import any_plan_floor

    monkeypatch.setattr(space, "SAME_GROUP_MAX_GPUS", 0)  # (nested space: see the first test)
    planner = haap.Planner(_two_groups(2.7), time_limit_s=LIMIT_S)
    first = planner.solve().result
    # (no mixed stage fits here: the single-type search is the whole space's)
    assert set(planner.state.space_floors) == {"single"}
    assert planner.state.space_floors["single"] <= first.iteration_time_s * (1 + 1e-9)
    reuse = planner.apply(ch.Resize(node_group="g1", num_nodes=2))
    assert set(planner.state.space_floors) == {"single"} and reuse.floors_kept == 1

    def cut(self: BranchAndBound, b: int) -> Any:
        raise DeadlineReached

    with monkeypatch.context() as m:
        m.setattr(BranchAndBound, "set_up_size", cut)
        m.setattr(state_module.SearchState, "prepare_mixed", lambda self, *a, **k: False)
        warm = planner.solve().result
    cold = _cold(planner.instance)
    floor = any_plan_floor(state_module.SearchState(planner.instance))
    assert warm.best_bound_s <= cold.iteration_time_s * (1 + 1e-9)
    assert warm.best_bound_s > floor * 1.01
    assert warm.status == cold.status == "optimal"
    assert warm.iteration_time_s == pytest.approx(cold.iteration_time_s, rel=1e-9, abs=0)


def test_no_space_floor_is_carried_where_the_cluster_grows() -> None:
    """Nodes added: plans the old search never bounded, so no floor survives."""
    planner = haap.Planner(_two_groups(2.7), time_limit_s=LIMIT_S)
    planner.solve()
    assert planner.state.space_floors
    reuse = planner.apply(ch.Resize(node_group="g1", num_nodes=4))
    assert not planner.state.space_floors and "gained" in reuse.bounds_note
    assert reuse.floors_kept == 0
