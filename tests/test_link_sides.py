"""The positional LP's link sides (formulations/stage-assignment.md Sec. 4.4 *Link sides*): the
bounds stay below every sub-problem's optimum, found by enumeration, on clusters whose node
groups have different networks, and they lift the bottleneck floor where a plan must cross
from one group to another (cloud VMs of two GPU types)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_bounds import P2P_MODES, PRESETS, _check_bounds, _with_p2p
from tiny_instances import tiny_instance

from haap_solver.instance import Instance, load_instance
from haap_solver.search import bounds
from haap_solver.search.formulation import SubProblem
from haap_solver.search.solve import SearchState
from haap_solver.search.subproblems import _stage_count_cap

INSTANCES = Path(__file__).resolve().parent.parent / "instances"


@st.composite
def many_group_instances(draw: st.DrawFn) -> Instance:
    """Two or three node groups (their NICs 100, 200, 300 Gbit/s), of one or two device types,
    with little memory, so that which group sits next to which decides the links."""
    n_dev = draw(st.integers(1, 2))
    devices = [(draw(st.sampled_from(PRESETS)), draw(st.sampled_from([2.5, 3.0, 6.0])))
               for _ in range(n_dev)]
    groups = [(draw(st.integers(0, n_dev - 1)), draw(st.integers(1, 2)),
               draw(st.sampled_from([1, 2]))) for _ in range(draw(st.integers(2, 3)))]
    return tiny_instance(devices=devices, groups=groups, layers=draw(st.integers(3, 5)),
                         hidden=draw(st.sampled_from([512, 1024])), heads=4,
                         seq=draw(st.sampled_from([512, 1024])),
                         batch=draw(st.sampled_from([2, 4, 8])), recompute=("none",),
                         zero=draw(st.sampled_from([0, 1])), overlap=draw(st.booleans()))


@settings(max_examples=10, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(many_group_instances(), st.sampled_from(P2P_MODES))
def test_bounds_with_link_sides_never_exceed_the_optimum(instance: Instance, p2p: str) -> None:
    state = SearchState(_with_p2p(instance, p2p))
    assume(any(bounds.link_sides(state.cache, state.configs(b), b) is not None
               for b in state.micro_batches()))
    assume(_check_bounds(state))


def test_link_sides_lift_the_floor_on_cloud_vms(monkeypatch: pytest.MonkeyPatch) -> None:
    """gpt3-2.7b on 8 A100 and 24 V100 VMs of 4 GPUs, (p, b) = (5, 8): a 5-stage plan uses
    both groups (no group holds 5 stages that fit), so some A100 stage sends over a V100 VM's
    10 Gbit/s NIC; the LP that charges every link its least side anywhere misses that."""
    instance = load_instance(INSTANCES / "gpt3-2.7b-a100x32-v100x96-4gpu.toml")
    p_cap = _stage_count_cap(instance, None)
    sub = SubProblem(5, 8, "1f1b")
    with_sides = SearchState(instance).bottleneck_floor(sub, p_cap)
    monkeypatch.setattr(bounds, "link_sides", lambda *args: None)
    without = SearchState(instance).bottleneck_floor(sub, p_cap)
    assert with_sides > without * 1.01, (with_sides, without)
