"""Mixed-type stages (issue 5): the batch split, the stage costs, placement and the CLI.

Brute force over plans with mixed stages is in test_bruteforce_agreement.py and the bounds'
validity with mixed candidates in test_bounds.py; here the parts those rely on are checked
against evaluate() and against enumeration.
"""

from __future__ import annotations

import importlib
import itertools
import json
import math
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from tiny_instances import tiny_instance

from haap_solver.cli import main
from haap_solver.cost.evaluate import CostModel
from haap_solver.instance import Instance, load_instance
from haap_solver.result import SolveResult
from haap_solver.search import space
from haap_solver.search.coefficients import MIXED_MIN_BUSY, _splits
from haap_solver.search.formulation import SubProblem
from haap_solver.search.solve import SearchState, solve
from haap_solver.search.space import build_plan, mixed_shapes, stage_configs
from haap_solver.validate import plan_violations

ROOT = Path(__file__).resolve().parent.parent
MIXED_WINS = ROOT / "instances" / "llama3.2-1b-h100x4-l40sx4.toml"

PRESETS = ("A100-80G", "V100-32G", "T4", "A10", "H100", "L40S")
TUNING = importlib.import_module("haap_solver.search.tuning")
BNB = importlib.import_module("haap_solver.search.branch_and_bound")
SECOND = importlib.import_module("haap_solver.search.second_process")
BOUNDS = importlib.import_module("haap_solver.search.subproblem_bounds")


@cache
def _one_process_optimum(name: str) -> SolveResult:
    """The one-process proven optimum of a shipped instance, solved once per test worker: the
    reference several tests compare a patched or two-process search against (each solve takes
    2-12 s). Computed unpatched, the first time a test asks."""
    return solve(load_instance(ROOT / "instances" / name), time_limit_s=60)


@st.composite
def two_type_instances(draw: st.DrawFn) -> Instance:
    first, second = draw(st.permutations(PRESETS))[:2]
    devices = [(first, draw(st.sampled_from([4.0, 16.0, None]))),
               (second, draw(st.sampled_from([3.0, 16.0, None])))]
    groups = [(0, draw(st.integers(1, 2)), draw(st.sampled_from([2, 4]))),
              (1, 1, draw(st.sampled_from([1, 2, 4])))]
    return tiny_instance(devices=devices, groups=groups, layers=draw(st.integers(2, 6)),
                         hidden=draw(st.sampled_from([512, 1024])), heads=4,
                         seq=draw(st.sampled_from([256, 1024])),
                         batch=draw(st.sampled_from([4, 6, 8, 12, 16])),
                         recompute=draw(st.sampled_from([("none",), ("none", "full")])),
                         zero=draw(st.sampled_from([0, 1, 2, 3])), overlap=draw(st.booleans()))


def _per_layer(cm: CostModel, device: str, tp: int, share: int, recompute: str) -> float:
    lc = cm.layer_cost(device, tp, share, recompute)
    return lc.fwd_s + lc.bwd_s + lc.tp_fwd_s + lc.tp_bwd_s


def _fraction(cm: CostModel, device: str, tp: int, share: int, dp: int) -> float:
    """Memory fraction of one replica of a one-layer middle stage, one micro-batch in flight."""
    mem = cm.replica_memory(device=device, tp=tp, share=share, dp=dp, num_layers=1,
                            recompute="none", params=cm.params_held(1, False, False, True),
                            is_first=False, is_last=False, in_flight=1)
    return mem.total / mem.capacity


@given(st.lists(st.integers(1, 8), min_size=1, max_size=3), st.integers(1, 64),
       st.integers(1, 16))
def test_splits_are_every_integer_split_in_order(counts: list[int], total: int,
                                                 cap: int) -> None:
    """The splits mixed_split weighs (the two-part case has its own path) against the
    product of every share in [1, cap], lexicographically (ties in mixed_split go to the first)."""
    expected = [shares for shares in itertools.product(range(1, cap + 1), repeat=len(counts))
                if sum(c * s for c, s in zip(counts, shares, strict=True)) == total]
    assert _splits(counts, total, cap) == expected


@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(two_type_instances())
def test_split_is_the_best_balanced_split_by_enumeration(instance: Instance) -> None:
    """mixed_split against every integer split of every skeleton: the least slowest-replica time
    among the splits that fit, kept only if balanced (Sec. 1.1)."""
    state = SearchState(instance, mixed=True)
    cm, cache = state.cost_model, state.cache
    t = instance.training
    checked = 0
    for b in state.micro_batches():
        for shape in mixed_shapes(instance, b):
            counts = [c for _, _, c in shape]
            devices = [instance.cluster.group(g).device for g, _, _ in shape]
            tps = [tp for _, tp, _ in shape]
            best = None
            for shares in itertools.product(range(1, t.max_micro_batch_share + 1),
                                            repeat=len(shape)):
                if sum(c * s for c, s in zip(counts, shares, strict=True)) != b:
                    continue
                if any(not cm.replica_memory(
                        device=d, tp=tp, share=s, dp=sum(counts), num_layers=1,
                        recompute="none", params=cm.params_held(1, False, False, True),
                        is_first=False, is_last=False, in_flight=1).fits
                       for d, tp, s in zip(devices, tps, shares, strict=True)):
                    continue
                worst = max(_per_layer(cm, d, tp, s, "none")
                            for d, tp, s in zip(devices, tps, shares, strict=True))
                # Ties (layers at their launch floor take the same time whatever the share) go
                # to the lighter split, as mixed_split documents.
                heavy = max(_fraction(cm, d, tp, s, sum(counts))
                            for d, tp, s in zip(devices, tps, shares, strict=True))
                if best is None or (worst, heavy) < best[0]:
                    best = ((worst, heavy), shares)
            got = cache.mixed_split(shape, b, "none")
            if best is None:
                assert got is None
                continue
            times = [_per_layer(cm, d, tp, s, "none")
                     for d, tp, s in zip(devices, tps, best[1], strict=True)]
            stage_t = best[0][0]
            balanced = all(
                own >= MIXED_MIN_BUSY * stage_t
                or _per_layer(cm, d, tp, s + 1, "none") >= stage_t
                for own, d, tp, s in zip(times, devices, tps, best[1], strict=True))
            if not balanced:
                assert got is None, shape
                continue
            assert got is not None, shape
            assert sum(p.count * p.share for p in got) == b
            got_worst = max(_per_layer(cm, p.device, p.tp, p.share, "none") for p in got)
            assert math.isclose(got_worst, stage_t, rel_tol=1e-12), (shape, got, best)
            checked += 1
    assume(checked)


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(two_type_instances(), st.sampled_from(["1f1b", "gpipe"]))
def test_stage_pieces_reproduce_evaluate(instance: Instance, schedule: str) -> None:
    """A mixed stage's affine pieces (the union of its parts', Sec. 1.1) give evaluate()'s forward,
    backward and tail of that stage in every role, at every layer count."""
    state = SearchState(instance, mixed=True)
    cm, cache = state.cost_model, state.cache
    L = instance.model.num_layers
    checked = 0
    for b in state.micro_batches():
        mixed = [c for c in state.configs(b) if c.mixed]
        singles = [c for c in state.configs(b) if not c.mixed]
        for c in mixed[:4]:
            for n in range(1, L):
                # The mixed stage first, last, or alone; a single-type neighbour where it fits.
                for seq, layers in (([c], [L]),
                                    *(([c, s], [n, L - n]) for s in singles[:2]),
                                    *(([s, c], [L - n, n]) for s in singles[:2])):
                    plan = build_plan(instance, seq, layers, micro_batch=b,
                                      schedule=schedule, note="test")  # type: ignore[arg-type]
                    if plan is None:
                        continue
                    ev = cm.evaluate(plan)
                    p = len(seq)
                    k = seq.index(c)
                    co = cache.coefficients(c, b, k == 0, k == p - 1, p > 1)
                    stage = ev.stages[k]
                    nk = layers[k]
                    assert math.isclose(co.fwd(nk), stage.fwd_s, rel_tol=1e-9)
                    assert math.isclose(co.bwd(nk), stage.bwd_s, rel_tol=1e-9)
                    assert math.isclose(co.tau(nk), stage.fwd_s + stage.bwd_s, rel_tol=1e-9)
                    assert math.isclose(co.tail(nk), stage.tail_s, rel_tol=1e-9, abs_tol=1e-15)
                    fits = cache.max_layers(c, b, k == 0, k == p - 1, p > 1, stage.in_flight)
                    violations = plan_violations(instance, plan, cost_model=cm)
                    # The validator checks memory only on an otherwise valid plan (a GPipe plan
                    # where training.schedules allows 1F1B only is not one).
                    if not any("GiB" not in v for v in violations):
                        assert (nk <= fits) == (not violations), (c.label(), nk, fits,
                                                                  violations)
                    checked += 1
    assume(checked)


def test_placement_packs_mixed_parts_within_budgets() -> None:
    """Two mixed stages and a single-type one share the nodes; one part too many is refused."""
    inst = tiny_instance(devices=[("A100-80G", None), ("A10", None)],
                         groups=[(0, 1, 4), (1, 1, 4)], layers=4, hidden=512, heads=4,
                         seq=256, batch=8, recompute=("none",))
    state = SearchState(inst, mixed=True)
    configs = state.configs(8)
    small = [c for c in configs if c.mixed and c.gpus_in("g0") == 1 and c.gpus_in("g1") == 1]
    assert small, "expected a mixed stage of one GPU per group"
    plan = build_plan(inst, [small[0], small[0]], [2, 2], micro_batch=8, schedule="1f1b")
    assert plan is not None
    assert plan_violations(inst, plan) == []
    assert [len(s.replicas) for s in plan.stages] == [2, 2]
    big = [c for c in configs if c.mixed and c.gpus_in("g1") == 4]
    if big:
        assert build_plan(inst, [big[0], small[0]], [2, 2], micro_batch=8,
                          schedule="1f1b") is None


def test_mixed_search_on_one_device_type_is_the_single_type_search(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """On one node group the mixed space holds only stages of two TP degrees there (Sec. 1.1),
    and only on clusters of at most SAME_GROUP_MAX_GPUS GPUs: above it (the cap patched to 0
    here) the mixed search generates nothing and is the single-type search."""
    inst = load_instance(ROOT / "instances" / "gpt3-1.3b-a100x8.toml")
    single = solve(inst, time_limit_s=30, mixed=False)
    monkeypatch.setattr(space, "SAME_GROUP_MAX_GPUS", 0)
    both = solve(inst, time_limit_s=30)
    assert both.search_space["mixed_stage_configs"]["generated"] == 0
    assert both.iteration_time_s == single.iteration_time_s
    assert both.options["mixed"] is True


@pytest.mark.parametrize("unproven", [(1,), (1, 3)])
def test_single_type_bound_combines_with_the_mixed_one(monkeypatch: pytest.MonkeyPatch,
                                                        unproven: tuple[int, ...]) -> None:
    """When the single-type search ends unproven, the second search still bounds only the plans
    with a mixed stage (M); once those are ruled out, the single-type search resumes with the
    time left from the first one's bounds, and the whole space's bound is the lesser of the two.
    Searches whose numbers are in `unproven` are made to report a bound of half their plan's
    time."""
    inst = load_instance(MIXED_WINS)
    reference = _one_process_optimum(MIXED_WINS.name)
    assert reference.status == "optimal"
    real = BNB.search
    calls: list[tuple[bool, bool]] = []

    given: list[dict[str, object]] = []

    def search(*args: object, **kwargs: object) -> object:
        state = kwargs["state"]
        calls.append((bool(kwargs["mixed"]), state.require_mixed))  # type: ignore[attr-defined]
        given.append(kwargs)
        result = real(*args, **kwargs)
        if len(calls) in unproven:
            result.status, result.gap = "feasible", 0.5
            result.best_bound_s = 0.5 * result.iteration_time_s
        return result

    monkeypatch.setattr(BNB, "search", search)
    result = solve(inst, time_limit_s=60)
    # single-type, then (M) only, then the single-type sub-problems again, from the first
    # search's bounds (every sub-problem's; it proved its optimum, so all are closed: none
    # below that optimum, also the one whose model proved it)
    assert calls == [(False, False), (True, True), (False, False)]
    known = given[2]["known_bounds"]
    assert known is given[0]["bounds_out"]
    assert isinstance(known, dict) and known
    single_optimum = solve(inst, time_limit_s=60, mixed=False).iteration_time_s
    assert all(bound >= single_optimum * (1 - 1e-9) for bound, _ in known.values())
    assert result.iteration_time_s == pytest.approx(reference.iteration_time_s, rel=1e-9)
    if unproven == (1,):  # the resumed search proves the single-type part
        assert result.status == "optimal"
        assert result.best_bound_s == pytest.approx(reference.iteration_time_s, rel=1e-9)
    phases = result.search_space
    single_time = phases["single_type_phase"]["iteration_time_s"]
    if unproven == (1, 3):  # both bound the single-type plans: the better one counts
        assert result.status == "feasible"
        bound = 0.5 * max(single_time, reference.iteration_time_s)
        assert result.best_bound_s == pytest.approx(bound, rel=1e-9)
        assert result.gap == pytest.approx(1 - bound / result.iteration_time_s, rel=1e-9)
    assert phases["single_type_phase"]["status"] == "feasible"
    assert phases["single_type_phase"]["best_bound_s"] == pytest.approx(0.5 * single_time)
    # No plan with a mixed stage beats the optimum, which has one.
    assert phases["mixed_phase"]["best_bound_s"] == pytest.approx(reference.iteration_time_s,
                                                                  rel=1e-9)
    assert "resumed_single_type_phase" in phases


def test_single_type_search_resumes_where_its_bound_holds_the_whole_one_down(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the search over plans with a mixed stage ends unproven with time left (its open
    sub-problems too large for a model) but with a bound above the single-type one, the
    single-type search resumes with that time: its bound is what holds the whole bound down.
    Here the first search reports a bound of half its plan's time, the second 0.8 of its own;
    the resumed search proves the single-type part, so the whole bound is the second's."""
    inst = load_instance(MIXED_WINS)
    reference = _one_process_optimum(MIXED_WINS.name)
    real = BNB.search
    calls: list[tuple[bool, bool]] = []

    def search(*args: object, **kwargs: object) -> object:
        state = kwargs["state"]
        calls.append((bool(kwargs["mixed"]), state.require_mixed))  # type: ignore[attr-defined]
        result = real(*args, **kwargs)
        weak = {1: 0.5, 2: 0.8}.get(len(calls))
        if weak is not None:
            result.status, result.gap = "feasible", 1.0 - weak
            result.best_bound_s = weak * result.iteration_time_s
        return result

    monkeypatch.setattr(BNB, "search", search)
    result = solve(inst, time_limit_s=60)
    assert calls == [(False, False), (True, True), (False, False)]
    assert result.iteration_time_s == pytest.approx(reference.iteration_time_s, rel=1e-9)
    assert result.status == "feasible"
    assert result.best_bound_s == pytest.approx(0.8 * reference.iteration_time_s, rel=1e-9)
    assert result.search_space["resumed_single_type_phase"]["best_bound_s"] \
        > 0.8 * reference.iteration_time_s


def test_single_type_search_yields_once_its_models_stop_paying(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """After its first pass the single-type search hands the time over to plans with a mixed
    stage at its first model that neither closes its sub-problem nor improves the plan (here:
    every model gives up without an answer), and takes it back afterwards. A plan and a valid
    bound still come out (from the baseline seeds and the bounds)."""
    from haap_solver.search.backends import BackendResult

    inst = load_instance(MIXED_WINS)
    reference = _one_process_optimum(MIXED_WINS.name)
    real_get, real_solve = BNB.get_backend, BNB.search
    phase = {"name": ""}
    follow_up_models: dict[str, int] = {}

    def get_backend(name: str) -> object:
        def no_answer(lp: object, opts: object, floor: float) -> BackendResult:
            # (the passes after the first: budgets of 2 s and more)
            if opts.time_limit_s > TUNING.FIRST_PASS_BUDGET_S:  # type: ignore[attr-defined]
                key = phase["name"]
                follow_up_models[key] = follow_up_models.get(key, 0) + 1
            return BackendResult("unknown", None, None, -math.inf, 0.0)
        real_get(name)  # the same checks as the real one
        return no_answer

    def search(*args: object, **kwargs: object) -> object:
        phase["name"] = ("mixed" if kwargs["mixed"] else
                         "resumed" if kwargs.get("known_bounds") else "single")
        return real_solve(*args, **kwargs)

    monkeypatch.setattr(BNB, "get_backend", get_backend)
    monkeypatch.setattr(BNB, "search", search)
    # No dives: their models' budget (DIVE_BUDGET_S) would pass for a later pass's.
    monkeypatch.setattr(TUNING, "DIVE_FIRST", 10**9)
    monkeypatch.setattr(TUNING, "DIVE_EVERY", 10**9)
    # Nor the incumbent's own sub-problem's longer first model, for the same reason.
    monkeypatch.setattr(TUNING, "INCUMBENT_FIRST_BUDGET_S", TUNING.FIRST_PASS_BUDGET_S)
    result = solve(inst, time_limit_s=20)
    assert follow_up_models.get("single") == 1  # yielded at the first one
    assert result.plan is not None
    assert result.best_bound_s <= reference.iteration_time_s * (1 + 1e-9)


def test_cli_mixed_finds_the_mixed_stage(capsys: pytest.CaptureFixture[str]) -> None:
    """The shipped instance where a mixed stage wins: proven optimal by default and faster than
    the best single-type plan (--no-mixed), with each replica group's share in the plan."""
    assert main(["solve", str(MIXED_WINS), "--json", "--no-progress", "--time-limit", "60"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == "optimal"
    assert data["options"]["mixed"] is True
    assert data["search_space"]["mixed_stage_configs"]["after_pruning"] > 0
    mixed_stages = [s for s in data["plan"]["stages"]
                    if len({r["device"] for r in s["replicas"]}) > 1]
    assert mixed_stages
    assert main(["solve", str(MIXED_WINS), "--json", "--no-progress", "--no-mixed"]) == 0
    single = json.loads(capsys.readouterr().out)
    assert single["status"] == "optimal"
    assert single["options"]["mixed"] is False
    assert data["iteration_time_s"] < single["iteration_time_s"] * (1 - 1e-6)
    assert main(["solve", str(MIXED_WINS), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "L40S" in err and "H100" in err
    # The first phase is the single-type search: the same optimum as --no-mixed.
    assert (f"single-type stages first: optimal {single['iteration_time_s']:.4f} s"
            in " ".join(err.split()))
    # With two threads the searches run side by side, and the summary says so.
    assert main(["solve", str(MIXED_WINS), "--no-progress", "--threads", "2"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert ("single-type stages, beside the search over plans with a mixed-type stage in a "
            f"second process: optimal {single['iteration_time_s']:.4f} s") in err


@pytest.mark.parametrize("name", ["llama3.2-1b-h100x4-l40sx4", "gpt3-2.7b-a100-40gx8-v100x8"])
def test_replica_group_caches_change_no_coefficient(name: str) -> None:
    """Pieces and memory are cached per replica group (device, TP, share, and the stage's DP
    degree, recomputation, role and ring), shared by every mixed stage with that group, and the
    cost model caches point-to-point times per replica-group signature (node group, device, TP,
    share): a cache warmed by all candidates gives each one exactly what a fresh cache (with a
    fresh cost model for the point-to-point times) gives it alone."""
    from haap_solver.search.coefficients import CoefficientCache

    inst = load_instance(ROOT / "instances" / f"{name}.toml")
    cm = CostModel(inst)
    warm = CoefficientCache(cm)
    roles = ((True, True, False), (True, False, True), (False, True, True), (False, False, True))
    checked = 0
    for b in SearchState(inst).micro_batches():
        candidates = warm.mixed_candidates(b)
        sides = sorted({g.name for g in inst.cluster.node_groups}) + sorted(
            {c.groups for c in candidates})
        for c, role in itertools.product(candidates, roles):
            warm.coefficients(c, b, *role)
            warm.memory_bilinear(c, b, *role)
            warm.max_layers(c, b, *role, 2)
        singles = [c for c in stage_configs(inst, b)][:40]
        for c, side in itertools.product(candidates + singles, sides):
            warm.p2p_side(c, b, side)
        for c, side in itertools.product(candidates + singles, sides):
            fresh_p2p = CoefficientCache(CostModel(inst)).p2p_side(c, b, side)
            assert warm.p2p_side(c, b, side) == fresh_p2p
        for c, role in itertools.product(candidates, roles):
            fresh = CoefficientCache(cm)
            assert warm.part_coefficients(c, b, *role) == fresh.part_coefficients(c, b, *role)
            assert warm.coefficients(c, b, *role) == fresh.coefficients(c, b, *role)
            assert warm.memory_bilinear(c, b, *role) == fresh.memory_bilinear(c, b, *role)
            assert warm.max_layers(c, b, *role, 2) == fresh.max_layers(c, b, *role, 2)
            checked += 1
    assert checked > 100


@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(two_type_instances())
def test_stage_time_is_at_least_every_replica_s_layer_time(instance: Instance) -> None:
    """The steps any_plan_floor rests on: a stage of n layers, single-type or mixed, in any role,
    takes at least n times each of its replicas' per-layer forward + backward time (TP
    communication included) per micro-batch, and no replica group of any configuration of the
    space advances more sequence-layers per GPU-second than its node group's peak rate; the
    floor is below the search's optimum."""
    state = SearchState(instance, mixed=True)
    peak = BOUNDS.peak_layer_rates(state)
    L = instance.model.num_layers
    checked = 0
    for b in state.micro_batches():
        for c in state.configs(b):
            for p in c.replica_parts(b):
                rate = p.share / (p.tp * _per_layer(state.cost_model, p.device, p.tp, p.share,
                                                    c.recompute))
                assert rate <= peak[p.node_group] * (1 + 1e-12), (c, p)
            for role in ((False, False, True), (True, False, True), (False, True, True),
                         (True, True, False)):
                co = state.cache.coefficients(c, b, *role)
                per_layer = max(_per_layer(state.cost_model, p.device, p.tp, p.share,
                                           c.recompute) for p in c.replica_parts(b))
                for n in range(1, L + 1):
                    assert co.tau(n) >= n * per_layer * (1 - 1e-12), (c, role, n)
                checked += 1
    assume(checked)
    floor = BOUNDS.any_plan_floor(SearchState(instance))
    best = solve(instance, time_limit_s=30)
    assume(best.status == "optimal")
    assert floor <= best.iteration_time_s * (1 + 1e-12)


def test_prepare_mixed_stops_at_its_deadline() -> None:
    inst = load_instance(MIXED_WINS)
    state = SearchState(inst)
    assert not state.prepare_mixed(deadline=0.0)  # long past
    assert state.mixed_counts == {} and state.mixed is False
    assert state.prepare_mixed(deadline=math.inf)
    assert set(state.mixed_counts) == set(state.micro_batches())
    assert state.mixed is False


def test_prepare_mixed_stops_inside_a_micro_batch_size() -> None:
    """prepare_mixed also stops inside one micro-batch size's set-up (its dominance filter
    asks every 64 configurations): it keeps nothing of that size, and a later set-up builds
    the same configurations as one never stopped."""
    inst = load_instance(ROOT / "instances" / "llama3-8b-h100-a100-l40s.toml")
    state = SearchState(inst)
    asks_since: dict[int, int] = {}  # sizes built -> times asked since

    def stop() -> bool:
        # Once two sizes with mixed configurations are built, stop at the second question
        # about the next one: the loop's own question lets it through, the filter's stops it.
        done = sum(1 for counts in state.mixed_counts.values() if counts[0])
        asks_since[done] = asks_since.get(done, 0) + 1
        return done >= 2 and asks_since[done] >= 2

    assert not state.prepare_mixed(math.inf, stop)
    assert state._set_up_until is None and state.mixed is False
    built = set(state.mixed_counts)
    assert built == {b for b, mixed in state._configs if mixed}
    assert sum(1 for counts in state.mixed_counts.values() if counts[0]) == 2
    assert len(built) < len(state.micro_batches())
    assert state.prepare_mixed(math.inf)
    fresh = SearchState(inst)
    assert fresh.prepare_mixed(math.inf)
    state.mixed = fresh.mixed = True
    assert all(state.configs(b) == fresh.configs(b) for b in state.micro_batches())
    assert state.mixed_counts == fresh.mixed_counts


def test_mixed_set_up_cut_by_the_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the time limit stops the set-up of the plans with a mixed stage (faked here), the
    single-type search's plan comes back, and the bound covers the plans with a mixed stage
    through any_plan_floor only: it stays below the whole space's optimum (here a plan with a
    mixed stage), and the message says so."""
    inst = load_instance(MIXED_WINS)
    reference = _one_process_optimum(MIXED_WINS.name)
    single = solve(inst, time_limit_s=60, mixed=False)
    assert single.iteration_time_s > reference.iteration_time_s  # the mixed stage wins here
    monkeypatch.setattr(SearchState, "prepare_mixed", lambda self, deadline: False)
    result = solve(inst, time_limit_s=60)
    assert result.plan is not None
    assert result.iteration_time_s == pytest.approx(single.iteration_time_s, rel=1e-9)
    assert result.best_bound_s <= reference.iteration_time_s
    assert result.best_bound_s == pytest.approx(
        min(single.best_bound_s, BOUNDS.any_plan_floor(SearchState(inst))), rel=1e-12)
    assert result.status == "feasible" and result.gap > 0
    assert result.search_space["mixed_phase"]["set_up"] is False
    assert "bounded only by the cluster's compute" in result.message


def test_no_single_type_plan_and_no_time_to_set_up_mixed_ones(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no single-type plan fits (faked) and the time limit stops the set-up of the plans
    with a mixed stage (faked), the answer is an error that says both, not 'infeasible'."""
    from haap_solver.errors import HaapError, InfeasibleError

    inst = load_instance(MIXED_WINS)
    real = BNB.search

    def search(*args: object, **kwargs: object) -> object:
        if not kwargs["mixed"]:
            raise InfeasibleError("no single-type plan (faked)")
        return real(*args, **kwargs)

    monkeypatch.setattr(BNB, "search", search)
    monkeypatch.setattr(SearchState, "prepare_mixed", lambda self, deadline: False)
    with pytest.raises(HaapError, match="no plan with single-type stages fits") as caught:
        solve(inst, time_limit_s=10)
    assert not isinstance(caught.value, InfeasibleError)
    assert "bounded only by the cluster's compute" in str(caught.value)


@pytest.mark.parametrize("name", ["llama3.2-1b-h100x4-l40sx4.toml", "gpt3-1.3b-t4x4-a100x12.toml"])
def test_two_processes_prove_what_one_proves(name: str) -> None:
    """threads=2: the plans with a mixed stage are searched in a second process beside the
    single-type search (sharing plans); the proven optimum is the one process's, also where it
    has a mixed stage (the first instance), and the result reports both phases and the call's
    options."""
    inst = load_instance(ROOT / "instances" / name)
    one = _one_process_optimum(name)
    two = solve(inst, time_limit_s=60, threads=2)
    assert one.status == two.status == "optimal"
    assert two.iteration_time_s == pytest.approx(one.iteration_time_s, rel=1e-12)
    assert two.plan is not None
    assert plan_violations(inst, two.plan, cost_model=CostModel(inst)) == []
    assert one.plan is not None
    assert [len(s.replicas) for s in two.plan.stages] == [len(s.replicas) for s in one.plan.stages]
    assert two.search_space["mixed_phase"]["best_bound_s"] >= one.iteration_time_s * (1 - 1e-9)
    assert "single_type_phase" in two.search_space
    assert two.search_space["mixed_stage_configs"] == one.search_space["mixed_stage_configs"]
    assert two.options["threads"] == 2 and two.options["time_limit_s"] == 60


@pytest.mark.parametrize("answer", [("error", "faked"), ("timeout",), None])
def test_second_process_failing_falls_back_to_one(monkeypatch: pytest.MonkeyPatch,
                                                   answer: tuple[str, ...] | None) -> None:
    """Where the second process fails, does not answer, or cannot start (None), the first one
    searches the plans with a mixed stage itself: the same proven optimum."""
    inst = load_instance(MIXED_WINS)
    reference = _one_process_optimum(MIXED_WINS.name)
    if answer is None:
        monkeypatch.setattr(SECOND._MixedHelper, "start", classmethod(lambda cls, *a, **k: None))
    else:
        monkeypatch.setattr(SECOND._MixedHelper, "answer", lambda self, until_wall: answer)
    result = solve(inst, time_limit_s=60, threads=2)
    assert result.status == "optimal"
    assert result.iteration_time_s == pytest.approx(reference.iteration_time_s, rel=1e-12)


def test_second_process_not_set_up_in_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The second process's set-up cut by the time limit (faked answer): the plans with a mixed
    stage are bounded by the compute floor, as in one process."""
    inst = load_instance(MIXED_WINS)
    reference = _one_process_optimum(MIXED_WINS.name)
    monkeypatch.setattr(SECOND._MixedHelper, "answer",
                        lambda self, until_wall: ("not_set_up", 0.5, 1))
    result = solve(inst, time_limit_s=60, threads=2)
    assert result.search_space["mixed_phase"]["set_up"] is False
    assert result.best_bound_s <= reference.iteration_time_s
    assert "1 of" in result.message


def test_second_process_uses_the_callers_cost_model() -> None:
    """The second process builds its cost model with the constants (and profile) of the state
    it was given: with slower devices than the defaults, two processes find the one-process
    optimum, a plan with a mixed stage, and its time is the caller's cost model's."""
    from dataclasses import replace

    from haap_solver.cost.efficiency import DEFAULT_CONSTANTS

    inst = load_instance(MIXED_WINS)
    d = DEFAULT_CONSTANTS  # every device half as fast: GEMMs, attention and memory-bound work
    constants = replace(d, max_efficiency=0.5 * d.max_efficiency, family_constants=(),
                        flash_efficiency=0.5 * d.flash_efficiency,
                        hbm_efficiency=0.5 * d.hbm_efficiency)

    def state() -> SearchState:
        return SearchState(inst, CostModel(inst, constants=constants))

    one = solve(inst, time_limit_s=60, state=state())
    two = solve(inst, time_limit_s=60, state=state(), threads=2)
    default = _one_process_optimum(MIXED_WINS.name)
    assert one.status == two.status == "optimal"
    assert one.iteration_time_s > 1.5 * default.iteration_time_s  # the constants matter
    assert two.iteration_time_s == pytest.approx(one.iteration_time_s, rel=1e-12)
    assert two.plan is not None
    assert CostModel(inst, constants=constants).evaluate(two.plan).iteration_time_s == \
        pytest.approx(two.iteration_time_s, rel=1e-12)


def test_second_process_refused_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside a daemonic process (a worker of the caller's own pool) multiprocessing refuses to
    start a child with an AssertionError; solve goes on in one process."""
    import multiprocessing

    class Refusing:
        def Pipe(self) -> object:
            return multiprocessing.Pipe()

        def Process(self, *args: object, **kwargs: object) -> object:
            raise AssertionError("daemonic processes are not allowed to have children")

    inst = load_instance(MIXED_WINS)
    reference = _one_process_optimum(MIXED_WINS.name)
    monkeypatch.setattr(multiprocessing, "get_context", lambda method=None: Refusing())
    result = solve(inst, time_limit_s=60, threads=2)
    assert result.status == "optimal"
    assert result.iteration_time_s == pytest.approx(reference.iteration_time_s, rel=1e-12)


def test_main_module_hidden_while_the_second_process_starts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The caller's __main__ shows no __file__ or __spec__ while the second process starts (so a
    script that solves at top level is not run again there), and both come back after."""
    import sys
    import types

    main = types.ModuleType("__main__")
    main.__file__ = "/somewhere/script.py"
    spec = object()
    main.__spec__ = spec  # type: ignore[assignment]
    monkeypatch.setitem(sys.modules, "__main__", main)
    with SECOND._main_module_hidden():
        assert not hasattr(main, "__file__")
        assert main.__spec__ is None
    assert main.__file__ == "/somewhere/script.py"
    assert main.__spec__ is spec


@pytest.mark.parametrize("name", [
    pytest.param("llama3-8b-h100-a100-l40s.toml", marks=pytest.mark.slow),  # (~40 s of CPU)
    "gpt3-1.3b-t4x4-a100x12.toml"])
def test_two_processes_with_the_first_helping_prove_what_one_proves(
        monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """The first process helping bound the plans with a mixed stage once its single-type search
    is over (forced here, where it otherwise waits: _helps_from_the_top), the two exchanging
    bounds: the same proven optimum as one process. Overlapped sends: with the default
    blocking ones llama3-8b-h100-a100-l40s takes 55 s of CPU to prove on one thread (13 s
    overlapped), too near the limit on a loaded host; the cooperation does not depend on them."""
    inst = load_instance(ROOT / "instances" / name)
    inst = replace(inst, training=replace(inst.training, pipeline_p2p="overlapped"))
    # Limits far above the proof times (~12 s and ~3 s on an idle 2-core machine): only a
    # ceiling, for a machine that runs the tests side by side with other work.
    one = solve(inst, time_limit_s=300)
    monkeypatch.setattr(SECOND, "_helps_from_the_top", lambda single: True)
    two = solve(inst, time_limit_s=300, threads=2)
    assert one.status == two.status == "optimal"
    assert two.iteration_time_s == pytest.approx(one.iteration_time_s, rel=1e-12)
    assert "bounds_from_the_other_search" in two.search_space


def _helper_on_a_pipe() -> tuple[SECOND._MixedHelper, Any]:
    """A `_MixedHelper` whose second process is the other end of a pipe (returned with it),
    never ending."""
    import multiprocessing

    class Alive:
        exitcode = None

        def is_alive(self) -> bool:
            return True

    here, there = multiprocessing.Pipe()
    return SECOND._MixedHelper(Alive(), here, deadline_wall=math.inf), there


def test_helper_keeps_bounds_apart_from_its_answer() -> None:
    """The second process's messages to the first: bounds (once the first helps) are kept in
    `bounds`, the larger per sub-problem, and do not count as its answer; the answer, once
    sent, does, and what comes after it is still read (the second goes on to help the
    single-type search) without replacing it."""
    helper, there = _helper_on_a_pipe()
    a, b = SubProblem(3, 4, "1f1b"), SubProblem(5, 4, "1f1b")
    helper.help()
    assert there.recv() == ("helping",)
    there.send(("bounds", {a: 1.0, b: 2.0}))
    there.send(("bounds", {a: 0.5}))
    assert not helper.answered()
    assert helper.bounds == {a: 1.0, b: 2.0}
    there.send(("result", "the answer"))
    there.send(("bounds", {b: 3.0}))
    there.send(("infeasible", "not an answer any more"))
    assert helper.answered()
    assert helper.answer(until_wall=math.inf) == ("result", "the answer")
    assert helper.bounds == {a: 1.0, b: 3.0}


def test_single_type_bounds_cross_both_ways_once_the_second_helps() -> None:
    """The single-type direction: the first's strengthened bounds wait until the second says
    it helps ("single_helping"), then all go at once and each later one as it comes; the
    second's single-type bounds reach the search's feed, once each, apart from the mixed-space
    `bounds`, and the answer read meanwhile is kept for `answer`; a pipe the second has closed
    after answering still gives that answer."""
    helper, there = _helper_on_a_pipe()
    a, b, c = SubProblem(3, 4, "1f1b"), SubProblem(5, 4, "1f1b"), SubProblem(6, 8, "1f1b")
    helper.share_single_bound(a, 1.5)
    assert not there.poll()  # (not before the second helps)
    there.send(("result", "the answer"))
    there.send(("single_helping",))
    there.send(("single_bounds", {b: 2.0}))
    assert helper.single_bounds_feed() == {b: 2.0}
    assert there.recv() == ("single_bounds", {a: 1.5})
    helper.share_single_bound(c, 2.5)
    assert there.recv() == ("single_bounds", {c: 2.5})
    assert helper.single_bounds_feed() == {}
    assert helper.bounds == {}
    there.close()
    assert helper.answer(until_wall=math.inf) == ("result", "the answer")


class _RecordingConn:
    """A pipe end that records what is sent and never has anything to read."""

    def __init__(self) -> None:
        self.sent: list[tuple[object, ...]] = []

    def poll(self, timeout: float = 0.0) -> bool:
        return False

    def send(self, message: tuple[object, ...]) -> None:
        self.sent.append(message)


def _single_type_optimum() -> tuple[Instance, SolveResult, SubProblem]:
    """gpt3-1.3b-t4x4-a100x12, its single-type optimum and the sub-problem that holds it."""
    inst = load_instance(ROOT / "instances" / "gpt3-1.3b-t4x4-a100x12.toml")
    best = solve(inst, time_limit_s=120, mixed=False)
    assert best.status == "optimal" and best.plan is not None
    optimum = SubProblem(len(best.plan.stages), best.plan.micro_batch_size, best.plan.schedule)
    return inst, best, optimum


def _bounded_from_the_top(state: SearchState, shared_s: float,
                          *strengthened_by_the_first: SubProblem) -> Any:
    """The second process's `_bound_single_from_the_top` run here, on a pipe end that has
    shared a plan of `shared_s` and says the first strengthened `strengthened_by_the_first`;
    its `conn.sent` holds what it sent."""
    end = SECOND._SecondEnd(_RecordingConn(), math.inf, 0.0)
    end.best_time = shared_s
    for sub in strengthened_by_the_first:
        end.single_elsewhere[sub] = 0.0
    SECOND._bound_single_from_the_top(state, end, math.inf, None)
    return end


def test_second_bounds_the_single_type_sub_problems_from_the_top() -> None:
    """`_bound_single_from_the_top`, run here on a pipe end that has shared the single-type
    optimum: it says it helps, skips what the first has strengthened, takes the largest
    cheap bound first, and every bound it sends is at most the threshold and at most the
    optimum of the sub-problem that holds the optimal plan (a valid lower bound)."""
    from haap_solver.search.subproblem_bounds import lower_bound

    inst, best, optimum = _single_type_optimum()
    state = SearchState(inst)
    skipped = SubProblem(optimum.num_stages + 1, optimum.micro_batch, optimum.schedule)
    end = _bounded_from_the_top(state, best.iteration_time_s * 1.05, skipped)
    sent = end.conn.sent
    assert sent[0] == ("single_helping",)
    bounds = []
    for kind, (sub, value) in ((m[0], next(iter(m[1].items()))) for m in sent[1:]):
        if kind == "single_strengthened":  # (left open: with its threshold and window)
            assert value.bound < value.against == end.threshold()
            bounds.append((sub, value.bound))
        else:
            assert kind == "single_bounds"
            bounds.append((sub, value))
    assert bounds and all(bound <= end.threshold() for _, bound in bounds)
    assert skipped not in dict(bounds)
    assert dict(bounds)[optimum] <= best.iteration_time_s * (1 + 1e-9)
    cheap = []
    for sub, _ in bounds:
        floors = state.floors(sub.micro_batch)
        assert floors is not None
        cheap.append(lower_bound(state, sub, floors))
    assert cheap == sorted(cheap, reverse=True)


def test_a_strengthening_beside_stands_for_the_search_here() -> None:
    """A single-type sub-problem the second process strengthened and left open reaches the
    first's search with its threshold and the window of its walk ("single_strengthened"): the
    search takes it as its own strengthening (not stale, the window recorded, the bound
    raised), so it goes to its model without a walk of its own; and the search still proves
    the optimum. Here the optimum's own sub-problem, strengthened against a plan 5% above
    the optimum, as the second would."""
    inst, best, optimum = _single_type_optimum()
    end = _bounded_from_the_top(SearchState(inst), best.iteration_time_s * 1.05)
    opened = {sub: value for m in end.conn.sent if m[0] == "single_strengthened"
              for sub, value in m[1].items()}
    done = opened[optimum]
    assert done.window is not None and done.window[0] >= end.threshold()
    fed = [{optimum: done}]
    search = BNB.BranchAndBound(
        inst, backend="auto", time_limit_s=120, threads=1, seed=0, state=SearchState(inst),
        max_stages=None, progress=None, seed_with_baselines=False, mixed=False,
        cutoff_s=end.threshold(), strengthened_feed=lambda: fed.pop() if fed else {})
    cand = search.by_sub[optimum]
    assert search.stale(cand)
    search.absorb()
    assert not search.stale(cand) and cand.lower_bound >= done.bound
    assert search.state.window(optimum, end.threshold()) == done.window[1:]
    result = search.run()
    assert result.status == "optimal"
    assert result.iteration_time_s == pytest.approx(best.iteration_time_s, rel=1e-9)


def test_no_dives_in_the_mixed_search_on_large_clusters(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above MIXED_DIVES_MAX_GPUS the search over plans with a mixed stage makes no dives (their
    seeds come from the least strong bound, _ranked_per_group): here, with the line moved below
    this 8-GPU instance, none, where there are some otherwise; the same proven optimum either
    way (one process: the mixed search has no warm start, so only dives rank)."""
    inst = load_instance(MIXED_WINS)
    calls: list[bool] = []
    ranked = BNB._ranked_per_group

    def counting(state: SearchState, *args: object) -> object:
        calls.append(state.require_mixed)
        return ranked(state, *args)

    monkeypatch.setattr(BNB, "_ranked_per_group", counting)
    with_dives = solve(inst, time_limit_s=60)
    assert any(calls)
    calls.clear()
    monkeypatch.setattr(TUNING, "MIXED_DIVES_MAX_GPUS", 4)
    without = solve(inst, time_limit_s=60)
    assert not any(calls) and calls  # (the single-type search still ranks)
    assert with_dives.status == without.status == "optimal"
    assert without.iteration_time_s == pytest.approx(with_dives.iteration_time_s, rel=1e-12)


def test_pieces_refuse_a_term_that_is_not_affine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pieces are read off the cost model at n = 1 and 2: a term that is not affine in the
    layer count (here the forward time with an n^2 part) must stop the search at n = 3, not give
    pieces that disagree with evaluate()."""
    from dataclasses import replace

    from haap_solver.errors import HaapError
    from haap_solver.search.coefficients import CoefficientCache

    inst = load_instance(ROOT / "instances" / "llama3.2-1b-h100x4-l40sx4.toml")
    cm = CostModel(inst)
    b = SearchState(inst).micro_batches()[0]
    c = stage_configs(inst, b)[0]
    assert CoefficientCache(cm).coefficients(c, b, False, False, True).tau_pieces
    affine_terms = cm.replica_terms

    def curved(**kw: object) -> object:
        terms = affine_terms(**kw)  # type: ignore[arg-type]
        n = kw["num_layers"]
        return replace(terms, fwd_s=terms.fwd_s * (1 + 0.01 * n * n))  # type: ignore[operator]

    monkeypatch.setattr(cm, "replica_terms", curved)
    with pytest.raises(HaapError, match=r"fwd_s of .* is not affine in the layer count"):
        CoefficientCache(cm).coefficients(c, b, False, False, True)


def test_the_second_process_takes_the_cutoff() -> None:
    """solve(cutoff_s=) with threads=2: the second process searches against the cutoff too.
    Just above the one-process optimum (a plan with a mixed stage here) the two processes find
    it; at it, nothing beats the cutoff and the result says so (status "cutoff", no plan)."""
    inst = load_instance(MIXED_WINS)
    best = _one_process_optimum(MIXED_WINS.name).iteration_time_s
    above = solve(inst, time_limit_s=60, threads=2, cutoff_s=best * 1.001)
    assert above.search_space["mixed_phase"].get("second_process") is True
    assert above.status == "optimal"
    assert above.iteration_time_s == pytest.approx(best, rel=1e-12)
    at = solve(inst, time_limit_s=60, threads=2, cutoff_s=best)
    assert at.plan is None and at.status == "cutoff"
    assert at.best_bound_s >= best * (1 - 1e-9)


def test_known_bounds_close_a_space_by_their_floor_or_all_of_them() -> None:
    """`Known.closes`: the floor alone, or every bound kept, at or above the threshold (up to
    the search's own 1e-12); nothing known closes nothing."""
    from haap_solver.search.formulation import SubProblem

    a, b = SubProblem(1, 1, "1f1b"), SubProblem(2, 1, "1f1b")
    assert not SECOND.Known({}, 0.0).closes(1.0)
    assert SECOND.Known({}, 2.0).closes(1.5)
    assert SECOND.Known({a: 2.0, b: 1.5}, 0.0).closes(1.5)
    assert not SECOND.Known({a: 2.0, b: 1.0}, 0.0).closes(1.5)
    assert SECOND.Known({a: 2.0, b: 1.0}, 1.5).closes(1.5)
