"""The Planner (issue 22): a warm re-solve proves the optimum a cold solve proves, on random event
sequences and on the shipped traces; stragglers are costed (a slowed node loses layers, brute
force agrees); the migration option keeps GPUs in place within its slack; events files and
`haap replan`."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tiny_instances import tiny_instance

import haap_solver as haap
from haap_solver import changes as ch
from haap_solver.baselines.bruteforce import bruteforce
from haap_solver.cli import main
from haap_solver.cluster import NodeGroup
from haap_solver.cost.evaluate import CostModel
from haap_solver.errors import InputError
from haap_solver.result import SolveResult
from haap_solver.search import coefficients
from haap_solver.search.coefficients import CoefficientCache
from haap_solver.search.state import SearchState
from haap_solver.stragglers import Straggler, apply_stragglers

ROOT = Path(__file__).resolve().parent.parent
LIMIT_S = 60.0


def _cold(instance: haap.Instance) -> SolveResult:
    return haap.solve(instance, time_limit_s=LIMIT_S, threads=1, seed=0,
                      seed_with_baselines=False)


def _agree(warm: SolveResult, cold: SolveResult) -> None:
    """Both proven: the same optimum within 1e-9 relative; else overlapping proven intervals."""
    if warm.status == "optimal" and cold.status == "optimal":
        assert warm.iteration_time_s == pytest.approx(cold.iteration_time_s, rel=1e-9, abs=0)
    else:
        assert warm.best_bound_s <= cold.iteration_time_s * (1 + 1e-9)
        assert cold.best_bound_s <= warm.iteration_time_s * (1 + 1e-9)


def _assert_cache_holds(state: SearchState) -> None:
    """Every entry the Planner carried into `state` is what a fresh cache computes on its
    instance: the entries themselves, and the ones computed from the carried per-group and
    per-device entries."""
    fresh = CoefficientCache(CostModel(state.instance))
    from_misc = CoefficientCache(state.cost_model)
    from_misc._misc = dict(state.cache._misc)
    for key, co in state.cache._coeffs.items():
        assert co == fresh.coefficients(*key) == from_misc.coefficients(*key), key
    for key, n in state.cache._max_layers.items():
        assert n == fresh.max_layers(*key) == from_misc.max_layers(*key), key
    for key, t in state.cache._p2p.items():
        assert t == fresh.p2p_side(*key) == from_misc.p2p_side(*key), key
    for key, below in state.cache._misc.items():
        if key[0] == "dom":  # (the dominance verdicts on the coefficients alone)
            assert below == fresh._memory_below(*key[1:]), key
        if key[0] == "domt":
            assert below == fresh._times_below(*key[1:]), key


def _base() -> haap.Instance:
    """Two node groups of two device types: memory binds, so stages and splits move."""
    return tiny_instance(devices=[("A100-80G", 4.0), ("V100-32G", 2.0)],
                         groups=[(0, 2, 2), (1, 2, 4)], layers=6, hidden=512, heads=8, seq=512,
                         batch=8, recompute=("none", "full"))


def _event(kind: str, value: float, instance: haap.Instance) -> ch.Change | None:
    """One change of `kind` on `instance` drawn from `value` in [0, 1) (None: not applicable)."""
    groups = instance.cluster.node_groups
    g = groups[int(value * len(groups))]
    if kind == "resize":
        return ch.Resize(node_group=g.name, num_nodes=1 + int(value * 7) % 3)
    if kind == "slow_node":
        return ch.Slowdown(straggler=Straggler(node_group=g.name, node=0,
                                               compute_speed=0.5 + value / 3))
    if kind == "slow_network":  # same device name, slower links: "link" entries must go
        return ch.Slowdown(straggler=Straggler(node_group=g.name, network_speed=0.1))
    if kind == "batch":
        return ch.SetGlobalBatch(global_batch_size=(4, 8, 16)[int(value * 3)])
    if kind == "seq":  # same configurations, another model: every coefficient must go
        return ch.SetSequenceLength(seq_length=(256, 1024)[int(value * 2)])
    if kind == "device":  # same device name, other numbers
        dev = instance.cluster.devices[g.device]
        return ch.SetDevice(device=dataclasses.replace(dev, peak_tflops=dev.peak_tflops / 3,
                                                       memory_gib=dev.memory_gib * 1.5))
    if kind == "add":
        return ch.AddNodeGroup(group=NodeGroup(name=f"new{len(groups)}", device=groups[0].device,
                                               num_nodes=1, gpus_per_node=2, nic_gbit_s=50.0))
    if kind == "remove":
        return ch.RemoveNodeGroup(node_group=g.name) if len(groups) > 1 else None
    raise AssertionError(kind)


KINDS = ("resize", "slow_node", "slow_network", "batch", "seq", "device", "add", "remove")


@settings(max_examples=2, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(KINDS), st.floats(0, 0.999)), min_size=2,
                max_size=2))
def test_warm_equals_cold_on_random_event_sequences(events: list[tuple[str, float]]) -> None:
    planner = haap.Planner(_base(), time_limit_s=LIMIT_S)
    planner.solve()
    for kind, value in events:
        change = _event(kind, value, planner.instance)
        if change is None:
            continue
        try:
            planner.apply(change)
            _assert_cache_holds(planner.state)
            cold = _cold(planner.instance)
        except (InputError, haap.InfeasibleError):
            return  # (the changed instance has no plan: nothing to compare)
        warm = planner.solve()
        _agree(warm.result, cold)
        haap.check_plan(planner.instance, warm.result.plan)
        assert haap.evaluate(planner.instance, warm.result.plan).iteration_time_s == \
            warm.result.iteration_time_s


@pytest.mark.parametrize("kind", ["seq", "device", "slow_network", "resize"])
def test_warm_equals_cold_where_names_stay(kind: str) -> None:
    """Changes after which the stage configurations keep their names (so a stale cache entry
    would be read): a new sequence length, new device numbers, slower links, fewer nodes."""
    planner = haap.Planner(_base(), time_limit_s=LIMIT_S)
    planner.solve()
    change = _event(kind, 0.3, planner.instance)  # (on g0, whose stages the plans use)
    assert change is not None
    planner.apply(change)
    _assert_cache_holds(planner.state)
    _agree(planner.solve().result, _cold(planner.instance))


def test_every_change_kind_is_drawn() -> None:
    """(The strategy above covers every kind of change there is.)"""
    made = {type(_event(kind, 0.5, _base())) for kind in KINDS}
    assert {ch.Resize, ch.AddNodeGroup, ch.RemoveNodeGroup, ch.Slowdown, ch.SetGlobalBatch,
            ch.SetSequenceLength, ch.SetDevice} <= made


def test_cache_carried_only_where_it_holds() -> None:
    """A resize keeps the coefficients (a node count changes only point-to-point times, and
    only between one node and more); a new sequence length keeps none."""
    planner = haap.Planner(_base(), time_limit_s=LIMIT_S)
    planner.solve()
    kept = planner.apply(ch.Resize(node_group="g0", num_nodes=3))
    assert 0 < kept.kept <= kept.total
    assert kept.share > 0.5
    planner.solve()
    dropped = planner.apply(ch.SetSequenceLength(seq_length=1024))
    assert dropped.kept == 0 and dropped.total > 0


def test_a_cluster_seen_before_starts_from_what_was_proven_on_it() -> None:
    """Nodes leave and come back: the cluster after the round trip is one the Planner solved,
    so the bounds proven on it then hold again (formulations Sec. 8, *A cluster seen
    before*), where a carry across nodes gained keeps none. The re-solve closes its
    sub-problems on them, solves no model, and proves what a cold solve proves. (The first
    version recalled by the instance before the change: every change "recalled" the last
    cluster's bounds, and the spot trace's 11:00 event was "proven" 2.1% above the optimum.)"""
    planner = haap.Planner(_base(), time_limit_s=LIMIT_S)
    planner.solve()
    # A cluster not solved before recalls nothing (here nothing is carried either: g0 drops
    # to one node), and its re-solve proves its own optimum.
    down = planner.apply(ch.Resize(node_group="g0", num_nodes=1))
    assert down.bounds_kept == 0 and "one node" in down.bounds_note
    _agree(planner.solve().result, _cold(planner.instance))
    back = planner.apply(ch.Resize(node_group="g0", num_nodes=2))
    assert back.bounds_kept > 0 and back.bounds_note == ""
    warm = planner.solve().result
    assert warm.search_space["subproblem_fates"]["carried_bound"] > 0
    assert warm.solved == 0
    _agree(warm, _cold(planner.instance))
    assert warm.status == "optimal"


def test_a_group_down_to_one_node_keeps_all_but_its_point_to_point_times() -> None:
    """The coefficients, memory forms and placements do not read a group's node count; only a
    point-to-point time does (sends within a one-node group are intra-node transfers). So when
    g0 goes from two nodes to one, every entry is carried but the point-to-point times naming
    g0, and each carried entry is what a fresh cache computes."""
    planner = haap.Planner(_base(), time_limit_s=LIMIT_S)
    planner.solve()
    old = planner.state.cache
    planner.apply(ch.Resize(node_group="g0", num_nodes=1))

    def names_g0(key: tuple[Any, ...]) -> bool:
        return "g0" in (*key[0].groups, *((key[2],) if isinstance(key[2], str) else key[2]))

    p2p_g0 = [k for k in old._p2p if names_g0(k)]
    assert p2p_g0 and any("g0" in k[0].groups for k in old._coeffs)
    new = planner.state.cache
    assert new._coeffs.keys() == old._coeffs.keys()
    assert new._max_layers.keys() == old._max_layers.keys()
    assert new._p2p.keys() == old._p2p.keys() - set(p2p_g0)
    _assert_cache_holds(planner.state)


def test_dominance_verdicts_are_carried_with_the_coefficients(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The configurations' set-up after a change that keeps every node group's signature (the
    global batch) compares no coefficient pieces again: the verdicts of the dominance test on
    the two configurations' coefficients are carried with them (`search.carry`, "dom"), where
    a cold set-up compares them all. It keeps the configurations the cold one keeps."""
    planner = haap.Planner(_base(), time_limit_s=LIMIT_S)
    planner.solve()
    planner.apply(ch.SetGlobalBatch(global_batch_size=4))
    calls: list[int] = []
    real = coefficients.pieces_below

    def counted(*args: Any) -> bool:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(coefficients, "pieces_below", counted)
    warm, cold = planner.state, SearchState(planner.instance)
    assert warm.prepare_mixed(math.inf)
    warm_calls = len(calls)
    assert cold.prepare_mixed(math.inf)
    assert len(calls) > warm_calls == 0
    for b in cold.micro_batches():
        warm.mixed = cold.mixed = True
        assert warm.configs(b) == cold.configs(b)
    _assert_cache_holds(warm)


def test_previous_plan_is_the_incumbent_after_growth() -> None:
    """More nodes: the running plan still fits, is the first incumbent, and bounds the new
    optimum from above."""
    planner = haap.Planner(_base(), time_limit_s=LIMIT_S)
    first = planner.solve()
    planner.apply(ch.Resize(node_group="g1", num_nodes=3))
    second = planner.solve()
    assert second.incumbent_s == pytest.approx(first.result.iteration_time_s, rel=1e-12)
    assert second.result.iteration_time_s <= second.incumbent_s


def _two_node_pipeline() -> haap.Instance:
    """Two one-GPU nodes of one group; memory makes a two-stage pipeline the only plan shape."""
    return tiny_instance(devices=[("A100-80G", 4.0)], groups=[(0, 2, 1)], layers=8, hidden=1024,
                         heads=8, seq=1024, batch=8, recompute=("none",))


def test_slowed_node_loses_layers_and_brute_force_agrees() -> None:
    base = _two_node_pipeline()
    slow = dataclasses.replace(base, cluster=apply_stragglers(
        base.cluster, [Straggler(node_group="g0", node=1, compute_speed=0.5)]))
    even = _cold(base)
    routed = _cold(slow)
    assert [s.num_layers for s in even.plan.stages] == [4, 4]
    on_slow = [s.num_layers for s in routed.plan.stages
               if s.replicas[0].node_group == "g0.node1"]
    on_fast = [s.num_layers for s in routed.plan.stages if s.replicas[0].node_group == "g0"]
    assert on_slow and on_fast and max(on_slow) < min(on_fast)
    truth = bruteforce(slow)
    assert routed.iteration_time_s == pytest.approx(truth.iteration_time_s, rel=1e-9)
    assert haap.evaluate(slow, routed.plan).iteration_time_s == routed.iteration_time_s
    # The even split, run with the slow node, costs what the straggler makes it cost.
    even_on_slow = dataclasses.replace(even.plan, stages=tuple(
        dataclasses.replace(s, replicas=tuple(dataclasses.replace(
            r, node_group="g0.node1" if s.first_layer == 0 else "g0",
            device=slow.cluster.group("g0.node1" if s.first_layer == 0 else "g0").device,
            placement=(haap.Placement(node=0, replicas=1),)) for r in s.replicas))
        for s in even.plan.stages))
    assert haap.evaluate(slow, even_on_slow).iteration_time_s > routed.iteration_time_s


def test_slowed_node_keeps_its_name_for_later_events() -> None:
    """Events name nodes as the instance does: after node 0 of g0 slows (the search sees it as
    group g0.node0), g0 still names the whole group: it can shrink, and node 0 back at full
    speed rejoins it. Warm == cold at each step. (Before, the slowdown renamed the cluster the
    later events were applied to: 'unknown node group g0'.)"""
    base = _base()
    planner = haap.Planner(base, time_limit_s=LIMIT_S)
    planner.solve()
    steps = [ch.Slowdown(straggler=Straggler(node_group="g0", node=0, compute_speed=0.5)),
             ch.Resize(node_group="g0", num_nodes=1),
             ch.Resize(node_group="g0", num_nodes=2),
             ch.Slowdown(straggler=Straggler(node_group="g0", node=0, compute_speed=1.0))]
    names = []
    for change in steps:
        planner.apply(change)
        names.append(sorted(g.name for g in planner.instance.cluster.node_groups))
        _agree(planner.solve().result, _cold(planner.instance))
    assert names == [["g0", "g0.node0", "g1"], ["g0.node0", "g1"], ["g0", "g0.node0", "g1"],
                     ["g0", "g1"]]
    assert planner.instance.cluster == base.cluster


def test_straggler_in_instance_file(tmp_path: Path) -> None:
    text = (ROOT / "instances/small/toy-gpt-6l-a100x2-t4x2.toml").read_text()
    path = tmp_path / "slow.toml"
    path.write_text(text + '\n[[cluster.stragglers]]\nnode_group = "a100"\n'
                           "compute_speed = 0.7\nnetwork_speed = 0.5\n")
    inst = haap.load_instance(path)
    group = inst.cluster.group("a100")
    assert group.device == "A100-80G@70%"
    assert inst.cluster.devices[group.device].peak_tflops == pytest.approx(
        0.7 * haap.device_preset("A100-80G").peak_tflops)
    assert group.nic_gbit_s == pytest.approx(100.0)
    path.write_text(text + '\n[[cluster.stragglers]]\nnode_group = "a100"\nnode = 1\n'
                           "compute_speed = 0.7\n")
    with pytest.raises(InputError, match=r"cluster\.stragglers\[0\]\.node.*1 node"):
        haap.load_instance(path)
    path.write_text(text + '\n[[cluster.stragglers]]\nnode_group = "a10"\n')
    with pytest.raises(InputError, match=r"cluster\.stragglers\[0\]\.node_group.*unknown"):
        haap.load_instance(path)
    path.write_text(text + '\n[[cluster.stragglers]]\nnode_group = "a100"\ncompute_speed = 1.5\n')
    with pytest.raises(InputError, match=r"cluster\.stragglers\[0\]\.compute_speed"):
        haap.load_instance(path)
    path.write_text('profile = "measured.toml"\n' + text
                    + '\n[[cluster.stragglers]]\nnode_group = "a100"\ncompute_speed = 0.7\n')
    with pytest.raises(InputError, match=r"cluster\.stragglers.*profile"):
        haap.load_instance(path)


def test_migration_option_keeps_gpus_in_place_within_its_slack() -> None:
    """Node 1 of a two-stage pipeline slows to 80%: the best plan swaps the stages' nodes (both
    GPUs move); the running plan, 13.7% slower now (blocking sends, the default; 4.5% with
    overlapped ones), is within a 20% slack and moves none."""
    slack = 0.20
    got = {}
    for option in (None, slack):
        planner = haap.Planner(_two_node_pipeline(), time_limit_s=LIMIT_S,
                               migration_slack=option)
        planner.solve()
        planner.apply(ch.Slowdown(straggler=Straggler(node_group="g0", node=1,
                                                      compute_speed=0.8)))
        got[option] = planner.solve()
    plain, aware = got[None], got[slack]
    assert plain.result.status == "optimal"
    assert aware.migration.moved_gpus < plain.migration.moved_gpus
    assert plain.result.iteration_time_s < aware.result.iteration_time_s \
        <= plain.result.iteration_time_s * (1 + slack)
    assert aware.result.best_bound_s <= plain.result.iteration_time_s * (1 + 1e-9)
    haap.check_plan(_slowed(), aware.result.plan)


def _slowed() -> haap.Instance:
    base = _two_node_pipeline()
    return dataclasses.replace(base, cluster=apply_stragglers(
        base.cluster, [Straggler(node_group="g0", node=1, compute_speed=0.8)]))


def test_events_file_and_replan_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    instance = ROOT / "instances/small/toy-gpt-6l-a100x2-t4x2.toml"
    events = tmp_path / "events.toml"
    events.write_text('[[events]]\nkind = "slowdown"\nnode_group = "a100"\nnode = 0\n'
                      'compute_speed = 0.5\nlabel = "throttled"\n')
    assert main(["replan", str(instance), str(events), "--json", "--time-limit", "30"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = out["events"]
    assert [r["label"] for r in rows] == ["initial plan", "throttled"]
    for row in rows[1:]:
        assert row["status"] == row["cold_status"] == "optimal"
        assert math.isclose(row["iteration_time_s"], row["cold_iteration_time_s"], rel_tol=1e-9)
        assert row["moved_gpus"] >= 0 and row["solve_s"] > 0
    events.write_text('[[events]]\nkind = "resize"\nnode_group = "a100"\nnum_nodes = 0\n')
    assert main(["replan", str(instance), str(events)]) == 2
    assert "events[0].num_nodes" in capsys.readouterr().err
    events.write_text('[[events]]\nkind = "grow"\n')
    assert main(["replan", str(instance), str(events)]) == 2
    assert "events[0].kind" in capsys.readouterr().err
    assert main(["replan", str(instance), str(events), "--gap", "1.5"]) == 2
    assert "--gap" in capsys.readouterr().err
    # Checked only once applied (the group exists in the changed cluster): still located.
    events.write_text('[[events]]\nkind = "global_batch"\nglobal_batch_size = 16\n'
                      '[[events]]\nkind = "add_node_group"\nname = "a100"\n'
                      'device = "A100-80G"\nnum_nodes = 1\ngpus_per_node = 2\nnic_gbit_s = 100\n')
    assert main(["replan", str(instance), str(events), "--no-cold", "--time-limit", "30"]) == 2
    err = capsys.readouterr().err
    assert f"{events}: events[1].name: node group 'a100' exists already" in err, err


TRACES = [("instances/replan/spot-a100-v100.toml", "instances/replan/spot-a100-v100.events.toml"),
          ("instances/replan/fleet-1024.toml", "instances/replan/fleet-1024.events.toml")]


@pytest.mark.slow
@pytest.mark.parametrize(("instance", "events"), TRACES)
def test_warm_equals_cold_on_shipped_traces(instance: str, events: str) -> None:
    planner = haap.Planner(haap.load_instance(ROOT / instance), time_limit_s=LIMIT_S)
    planner.solve()
    for change, _ in ch.changes_from_toml(ROOT / events):
        planner.apply(change)
        warm = planner.solve()
        _agree(warm.result, _cold(planner.instance))


@pytest.mark.slow
def test_readme_planner_example_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Re-planning when the cluster changes", 1)[1].split("\n## ", 1)[0]
    block = section.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {}
    exec(compile(block, "README.md", "exec"), namespace)
    again = namespace["again"]
    assert isinstance(again, haap.Replanned)
    assert again.changes == ("t4 -> 2 node(s)", "a100 node 0 at compute 0.8, network 1")
    assert again.result.plan is not None and again.result.status in ("optimal", "feasible")


def test_repair_shrinks_the_stage_whose_gpus_matter_least(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The 1,024-GPU trace's first event on the plan a 30 s solve found (15 stages, every one 16
    replicas, micro-batch 16): one H100 node is lost, and a stage on the H100s must give up 8
    GPUs. The space has no replica count between 8 and 16 there, so the largest-stage-first rule
    halved the 128-GPU stage that holds five layers; the repair now tries every stage on the
    group, with fewer replicas or a smaller TP degree, and keeps the fastest that fits. The
    repaired plan is valid and lies in the space (the Planner's cutoff)."""
    from haap_solver.search import repair
    from haap_solver.search.space import StageConfig, build_plan
    from haap_solver.search.state import SearchState

    inst = haap.load_instance(ROOT / "instances/replan/fleet-1024.toml")
    layout = ([(5, "dgx-h100", 8)] + [(2, "dgx-a100", 8)] * 4 + [(3, "dgx-h100", 4),
                                                                 (1, "dgx-h100", 2)]
              + [(2, "dgx-h100", 2)] * 7 + [(1, "dgx-h100", 4)])
    configs = [StageConfig(node_group=g, device=inst.cluster.group(g).device, tp=tp, dp=16,
                           recompute="none", gpus_per_node=8) for _, g, tp in layout]
    plan = build_plan(inst, configs, [n for n, _, _ in layout], micro_batch=16, schedule="1f1b")
    assert plan is not None
    before = haap.evaluate(inst, plan).iteration_time_s
    lost = ch.Resize(node_group="dgx-h100", num_nodes=63).apply_to(inst)
    state = SearchState(lost)
    got = repair.repaired_plan(state, plan, mixed=True)
    assert got is not None
    haap.check_plan(lost, got[0])
    fit = repair._fit_to_groups
    monkeypatch.setattr(repair, "_fit_to_groups",
                        lambda i, c, b, s, score=None: fit(i, c, b, s, None))
    largest_first = repair.repaired_plan(state, plan, mixed=True)
    assert largest_first is not None
    assert before < got[1].iteration_time_s < largest_first[1].iteration_time_s
    assert got[1].iteration_time_s < 1.1 * before < largest_first[1].iteration_time_s


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_a_solve_time_limit_must_be_positive_seconds(bad: float) -> None:
    planner = haap.Planner(_base(), time_limit_s=LIMIT_S)
    with pytest.raises(ValueError, match="time_limit_s"):
        planner.solve(time_limit_s=bad)


def test_a_solve_time_limit_applies_to_that_solve_only() -> None:
    """A short solve then one at the Planner's limit on the same instance: the second proves
    what a cold solve proves (the short one's bounds carried do not change the optimum)."""
    planner = haap.Planner(_base(), time_limit_s=LIMIT_S)
    short = planner.solve(time_limit_s=5.0)
    assert short.result.options["time_limit_s"] == 5.0
    full = planner.solve()
    assert full.result.options["time_limit_s"] == LIMIT_S
    _agree(full.result, _cold(planner.instance))


def test_capacity_back_makes_the_earlier_plan_the_incumbent() -> None:
    """Nodes leave, then come back: the cluster is the first solve's again, so the first plan
    (kept among the earlier plans, repaired: here unchanged) is the cutoff, not the running
    plan, which leaves the returned nodes idle. The optimum is still the cold solve's."""
    # (Two one-GPU A100 nodes that the optimum runs as two replicas, beside a V100 node.)
    instance = tiny_instance(devices=[("A100-80G", 4.0), ("V100-32G", 2.0)],
                             groups=[(0, 2, 1), (1, 1, 2)], layers=6, hidden=512, heads=8,
                             seq=512, batch=8, recompute=("none", "full"))
    planner = haap.Planner(instance, time_limit_s=LIMIT_S)
    first = planner.solve()
    assert first.result.status == "optimal" and first.result.plan is not None
    group = "g0"
    assert sum(r.count for s in first.result.plan.stages for r in s.replicas
               if r.node_group == group) == 2
    planner.apply(ch.Resize(node_group=group, num_nodes=1))
    shrunk = planner.solve()
    assert shrunk.result.plan != first.result.plan
    planner.apply(ch.Resize(node_group=group, num_nodes=2))
    back = planner.solve()
    assert back.incumbent_from == "2 solves back"
    assert back.incumbent_s is not None
    assert back.incumbent_s <= first.result.iteration_time_s * (1 + 1e-12)
    assert back.result.iteration_time_s == pytest.approx(first.result.iteration_time_s,
                                                         rel=1e-9, abs=0)
    _agree(back.result, _cold(planner.instance))


def _one_node_a100() -> haap.Instance:
    """One node of two A100s; the optimum runs one stage of two replicas (TP 1, 16 sequences
    each); more GPUs make a faster plan."""
    return tiny_instance(devices=[("A100-80G", None)], groups=[(0, 1, 2)], layers=8, hidden=1024,
                         heads=8, seq=1024, batch=64, recompute=("none",))


@pytest.mark.parametrize(("change", "replan"), [
    (ch.Resize(node_group="g0", num_nodes=2), True),
    (ch.AddNodeGroup(group=NodeGroup(name="new", device="d0", num_nodes=1, gpus_per_node=2,
                                     nic_gbit_s=100.0)), False)], ids=["resize", "add_group"])
def test_growth_repair_puts_arrived_gpus_to_work(change: ch.Change, replan: bool) -> None:
    """GPUs arrive (a node group grows, a node group is added): the repair keeps the running
    plan as it is, its GPUs idle beside the new ones; the growth repair widens a stage onto
    them (TP 2) or inserts one there, and that faster plan (valid, in the search space) is the
    cutoff. The optimum is still the cold solve's (checked where the node group grew: with a
    new group the space's mixed stages make both solves take seconds)."""
    from haap_solver.search.growth import grown_plan
    from haap_solver.search.repair import rebalanced, repaired_plan, stage_config_of
    from haap_solver.search.space import stage_configs

    planner = haap.Planner(_one_node_a100(), time_limit_s=LIMIT_S)
    first = planner.solve()
    assert first.result.plan is not None
    before = first.result.plan
    planner.apply(change)
    state = SearchState(planner.instance)
    repaired = repaired_plan(state, before, mixed=True)
    assert repaired is not None
    shrink_only = rebalanced(planner.instance, *repaired)
    assert shrink_only[1].iteration_time_s == pytest.approx(first.result.iteration_time_s,
                                                            rel=1e-12)
    grown = grown_plan(state, *shrink_only)
    assert grown is not None
    plan, ev = grown
    haap.check_plan(planner.instance, plan)
    assert haap.evaluate(planner.instance, plan).iteration_time_s == ev.iteration_time_s
    assert ev.iteration_time_s < shrink_only[1].iteration_time_s * (1 - 1e-6)
    used = sum(r.count * r.tp for s in plan.stages for r in s.replicas)
    assert used > sum(r.count * r.tp for s in before.stages for r in s.replicas)
    space = set(stage_configs(planner.instance, plan.micro_batch_size))
    assert all(stage_config_of(planner.instance, s, plan.micro_batch_size) in space
               for s in plan.stages)

    if not replan:
        return
    again = planner.solve()
    assert again.incumbent_from == "running, grown onto idle GPUs"
    assert again.incumbent_s == pytest.approx(ev.iteration_time_s, rel=1e-12)
    assert again.result.iteration_time_s <= again.incumbent_s
    _agree(again.result, _cold(planner.instance))


def test_a_short_first_solve_of_a_large_cluster_returns_a_plan() -> None:
    """512 GPUs of three types: within a 1 s limit the search's set-up does not finish, and the
    Planner's search runs without the baseline seeds; its first solve found no plan. The best
    uniform grid (or its proportional split), where it lies in the search space, is now its
    cutoff and the plan returned unless the search beats it."""
    inst = haap.load_instance(ROOT / "instances/gpt3-6.7b-a100x128-v100x256-a10x128-4gpu.toml")
    got = haap.Planner(inst, time_limit_s=1.0).solve()
    assert got.incumbent_from.startswith("baseline: ")
    assert got.result.plan is not None and got.incumbent_s is not None
    haap.check_plan(inst, got.result.plan)
    assert got.result.iteration_time_s <= got.incumbent_s


@pytest.mark.parametrize("start", [[6, 1, 1], [1, 6, 1]])
def test_rebalanced_with_the_state_gives_the_best_split(start: list[int]) -> None:
    """With the search state, the re-balancing is the exact optimal layer split of the stage
    sequence (one dynamic program, not up to 200 evaluate() calls): every split of the three
    stages, costed by evaluate(), is no faster."""
    import itertools

    from haap_solver.search.repair import rebalanced
    from haap_solver.search.space import StageConfig, build_plan

    inst = tiny_instance(devices=[("A100-80G", None), ("V100-32G", None)],
                         groups=[(0, 1, 2), (1, 1, 4)], layers=8, hidden=1024, heads=8, seq=1024,
                         batch=32, recompute=("none",))

    def config(group: str) -> StageConfig:
        g = inst.cluster.group(group)
        return StageConfig(node_group=group, device=g.device, tp=1, dp=2, recompute="none",
                           gpus_per_node=g.gpus_per_node)

    configs = [config("g1"), config("g0"), config("g1")]
    plan = build_plan(inst, configs, start, micro_batch=4, schedule="1f1b")
    assert plan is not None
    got, ev = rebalanced(inst, plan, haap.evaluate(inst, plan), state=SearchState(inst))
    haap.check_plan(inst, got)
    assert haap.evaluate(inst, got).iteration_time_s == ev.iteration_time_s
    splits = [list(n) for n in itertools.product(range(1, 7), repeat=3) if sum(n) == 8]
    best = min(haap.evaluate(inst, p).iteration_time_s for n in splits
               if (p := build_plan(inst, configs, n, micro_batch=4, schedule="1f1b")) is not None)
    assert ev.iteration_time_s == pytest.approx(best, rel=1e-12)


def _two_solves_back() -> haap.Planner:
    """A Planner whose running plan and one earlier plan both repair to its instance."""
    planner = haap.Planner(_base(), time_limit_s=LIMIT_S)
    planner.solve()
    planner.apply(ch.Resize(node_group="g1", num_nodes=1))
    planner.solve()
    planner.apply(ch.Resize(node_group="g1", num_nodes=2))
    return planner


def _record_search_limits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The time limit of every search the Planner starts, in order."""
    import haap_solver.planner as planner_module

    searched = planner_module.solve
    limits: list[float] = []

    def search(*args: Any, **kwargs: Any) -> SolveResult:
        limits.append(kwargs["time_limit_s"])
        return searched(*args, **kwargs)

    monkeypatch.setattr(planner_module, "solve", search)
    return limits


def test_a_re_plan_s_steps_share_its_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """`solve(time_limit_s=T)` bounds the whole re-plan: where the repairs take `slow` seconds,
    the search gets what is left of T (it got T on top of them before: 2 s re-plans of
    fleet-1024 took up to 2.4 s), and the result says the re-plan's limit. Asserted on the
    limit passed down, not on measured seconds (a sleep only makes at least `slow` pass)."""
    import time

    import haap_solver.planner as planner_module

    planner = _two_solves_back()
    slow, limit = 0.4, 10.0
    repaired = planner_module.repaired_plan
    limits = _record_search_limits(monkeypatch)

    def slow_repair(*args: Any, **kwargs: Any) -> Any:
        time.sleep(slow)
        return repaired(*args, **kwargs)

    monkeypatch.setattr(planner_module, "repaired_plan", slow_repair)
    got = planner.solve(time_limit_s=limit)
    assert len(limits) == 1
    assert limits[0] <= limit - 2 * slow  # (the running plan's and the earlier plan's repair)
    assert got.search_limit_s == limits[0]
    assert got.result.options["time_limit_s"] == limit


def test_a_re_plan_whose_repairs_outlast_its_limit_stays_honest(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the running plan's repair alone takes longer than the re-plan's limit, no earlier
    plan is repaired, the growth and the search get deadlines within the limit (the search its
    least, MIN_SEARCH_S), and the plan returned is still validated, costed by evaluate(), with
    a bound that holds (a cold solve's optimum is not below it)."""
    import time

    import haap_solver.planner as planner_module

    planner = _two_solves_back()
    assert planner._earlier  # (an earlier plan the repairs would take next)
    limit = 0.5
    repaired, grown = planner_module.repaired_plan, planner_module.grown_plan
    repairs: list[float] = []
    deadlines: list[float] = []
    limits = _record_search_limits(monkeypatch)

    def slow_repair(*args: Any, **kwargs: Any) -> Any:
        repairs.append(time.perf_counter())
        time.sleep(limit * 1.2)
        return repaired(*args, **kwargs)

    def growth(*args: Any, **kwargs: Any) -> Any:
        deadlines.append(kwargs["deadline"])
        return grown(*args, **kwargs)

    monkeypatch.setattr(planner_module, "repaired_plan", slow_repair)
    monkeypatch.setattr(planner_module, "grown_plan", growth)
    got = planner.solve(time_limit_s=limit)
    assert len(repairs) == 1  # the running plan's only
    assert all(d <= repairs[0] + limit for d in deadlines)
    assert limits == [planner_module.MIN_SEARCH_S]
    r = got.result
    assert r.plan is not None
    haap.check_plan(planner.instance, r.plan)
    assert haap.evaluate(planner.instance, r.plan).iteration_time_s == r.iteration_time_s
    assert r.status in ("optimal", "feasible")
    assert r.best_bound_s <= r.iteration_time_s
    assert r.gap == pytest.approx((r.iteration_time_s - r.best_bound_s) / r.iteration_time_s)
    _agree(r, _cold(planner.instance))


def test_a_mixed_search_that_did_not_fit_is_left_out_of_solves_as_short() -> None:
    """Where a solve as short could not set up the search over plans with a mixed stage (the
    Planner's 2 s re-plans at 1,024 GPUs never did), the next one leaves it out: the single-type
    search gets the whole limit and those plans are bounded by the floors, which the status and
    gap say (the interval still holds a cold solve's optimum; here the first solve's proof left
    a floor at the optimum). A longer limit searches them again, and records that they fit."""
    # (an instance whose optimum has a mixed stage)
    planner = haap.Planner(haap.load_instance(ROOT / "instances/llama3.2-1b-h100x4-l40sx4.toml"),
                           time_limit_s=LIMIT_S)
    first = planner.solve()
    assert "skipped" not in first.result.search_space["mixed_phase"]
    assert planner._mixed_setup == (LIMIT_S, True)
    planner._mixed_setup = (LIMIT_S, False)  # (as if its set-up had not finished)
    short = planner.solve()
    phase = short.result.search_space["mixed_phase"]
    assert phase["skipped"] and not phase["set_up"]
    r = short.result
    assert r.plan is not None
    haap.check_plan(planner.instance, r.plan)
    assert haap.evaluate(planner.instance, r.plan).iteration_time_s == r.iteration_time_s
    # (the floors: here the space floor the first solve's proof left, Sec. 8)
    assert r.best_bound_s <= phase["best_bound_s"] * (1 + 1e-12)
    cold = _cold(planner.instance)
    _agree(r, cold)
    assert planner._mixed_setup == (LIMIT_S, False)  # (kept: a skipped solve tells nothing)
    planner._mixed_setup = (LIMIT_S / 2, False)  # (a shorter solve did not fit: this one tries)
    again = planner.solve()
    assert "skipped" not in again.result.search_space["mixed_phase"]
    assert planner._mixed_setup == (LIMIT_S, True)
    _agree(again.result, cold)


def test_a_replan_first_makes_the_collections_that_are_due() -> None:
    """`Planner.solve` makes the cyclic collector's due work before its search, inside its time
    limit (`_collect_what_is_due`), so that none falls right after the search, when its pause of
    the collector ends: the young generations always, the full collection where its count is
    due, nothing where the collector is off."""
    import gc

    from haap_solver.planner import _collect_what_is_due

    made: list[int] = []

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            made.append(info["generation"])

    was_enabled, thresholds = gc.isenabled(), gc.get_threshold()
    gc.callbacks.append(record)
    try:
        gc.enable()
        gc.set_threshold(thresholds[0], thresholds[1], 10**9)  # a full collection not due
        _collect_what_is_due()
        assert made and max(made) == 1 and gc.get_count()[1] == 0, made
        made.clear()
        gc.set_threshold(thresholds[0], thresholds[1], 0)  # due
        _collect_what_is_due()
        assert 2 in made and gc.get_count()[2] == 0, made
        made.clear()
        gc.disable()
        _collect_what_is_due()
        assert made == []
    finally:
        gc.callbacks.remove(record)
        gc.set_threshold(*thresholds)
        if was_enabled:
            gc.enable()
        else:
            gc.disable()


def test_a_solve_may_stop_at_its_own_relative_gap() -> None:
    """`Planner.solve(relative_gap=g)` overrides the Planner's gap for that solve only: its plan
    is proven within g (or optimal), the next solve goes back to the Planner's own (a proof
    here), and a gap outside [0, 1) is refused naming the argument."""
    inst = haap.load_instance(ROOT / "instances/small/toy-gpt-6l-a100x2-t4x2.toml")
    planner = haap.Planner(inst, time_limit_s=30)
    loose = planner.solve(relative_gap=0.5).result
    assert loose.status == "optimal" or loose.gap <= 0.5 + 1e-9
    assert loose.options["relative_gap"] == 0.5
    proven = planner.solve().result
    assert proven.status == "optimal" and proven.options["relative_gap"] == 0.0
    for bad in (-0.1, 1.0, float("nan")):
        with pytest.raises(ValueError, match="relative_gap"):
            planner.solve(relative_gap=bad)


def test_a_two_thread_re_plan_searches_beside_and_keeps_what_it_proved() -> None:
    """With threads=2 a re-plan searches the plans with a mixed stage in the second process,
    as a cold solve does, although it starts from a cutoff (the repaired plan); the bounds
    that process proved come back into the Planner's state, to be carried to the next change;
    and a re-plan on a cluster proven before, whose recalled bounds close that space, searches
    it here instead of starting a process. (Before, a cutoff kept every re-plan in one
    process: the two searches ran one after the other, and spot-a100-v100's 14:00 re-plan
    took 16.8 s against the cold solve's 5.0 s.) The instance's optimum has a mixed stage."""
    inst = haap.load_instance(ROOT / "instances/llama3.2-1b-h100x4-l40sx4.toml")
    planner = haap.Planner(inst, time_limit_s=LIMIT_S, threads=2)
    first = planner.solve().result
    assert first.status == "optimal"
    planner.apply(ch.Slowdown(straggler=Straggler(node_group="l40s-server",
                                                  compute_speed=0.9)))
    warm = planner.solve()
    assert warm.incumbent_s is not None and math.isfinite(warm.incumbent_s)  # (a cutoff)
    assert warm.result.search_space["mixed_phase"].get("second_process") is True
    _agree(warm.result, _cold(planner.instance))
    assert any(space == "mixed" for space, _ in planner.state.sub_bounds)
    planner.apply(ch.Slowdown(straggler=Straggler(node_group="l40s-server")))
    back = planner.solve().result
    assert "second_process" not in back.search_space["mixed_phase"]
    assert back.status == "optimal"
    assert back.iteration_time_s == pytest.approx(first.iteration_time_s, rel=1e-9, abs=0)


def test_new_compute_numbers_of_a_profiled_device_are_refused() -> None:
    """A device event on a device the instance's measured profile covers: a new peak would not
    change its compute times (the profile gives them), so it is refused, naming the field; new
    memory numbers, which the profile does not give, and a device the profile does not cover,
    are taken."""
    profile = Path(__file__).parent / "data" / "profiles" / "a100-small-gpt.toml"
    base = tiny_instance(devices=[("A100-80G", None), ("V100-32G", None)],
                         groups=[(0, 1, 2), (1, 1, 2)], layers=4, hidden=256, heads=4,
                         seq=128, batch=8, recompute=("none",))
    a100 = base.cluster.devices["d0"]
    renamed = {"A100-80G": dataclasses.replace(a100, name="A100-80G"),
               "V100-32G": dataclasses.replace(base.cluster.devices["d1"], name="V100-32G")}
    groups = tuple(dataclasses.replace(g, device="A100-80G" if g.device == "d0" else "V100-32G")
                   for g in base.cluster.node_groups)
    cluster = dataclasses.replace(base.cluster, node_groups=groups, devices=renamed)
    instance = dataclasses.replace(base, cluster=cluster, profile=str(profile))
    covered = renamed["A100-80G"]
    with pytest.raises(InputError) as err:
        ch.SetDevice(device=dataclasses.replace(covered, peak_tflops=100.0)).apply_to(instance)
    assert err.value.field == "peak_tflops" and "profile" in err.value.message
    roomier = ch.SetDevice(device=dataclasses.replace(covered, memory_gib=40.0))
    assert roomier.apply_to(instance).cluster.devices["A100-80G"].memory_gib == 40.0
    other = renamed["V100-32G"]
    slower = ch.SetDevice(device=dataclasses.replace(other, peak_tflops=50.0))
    assert slower.apply_to(instance).cluster.devices["V100-32G"].peak_tflops == 50.0
