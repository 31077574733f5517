"""Engine targets: the rules (target_violations), the exact search over a target's space
(checked against brute force), the instance field and the CLI flag."""

from __future__ import annotations

import dataclasses
import fcntl
import itertools
import json
import math
import os
import sys
from pathlib import Path

import pytest
from bound_sweep import compositions

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from haap_solver.cli import main
from haap_solver.cost.evaluate import CostModel
from haap_solver.errors import InfeasibleError, InputError
from haap_solver.export import export_deepspeed
from haap_solver.instance import instance_from_dict, load_instance
from haap_solver.plan import load_plan
from haap_solver.search.space import build_plan, micro_batch_candidates, stage_configs
from haap_solver.targets import solve_for_target, target_violations
from haap_solver.validate import plan_violations

ROOT = Path(__file__).parent.parent
TOY = ROOT / "instances" / "small" / "toy-gpt-6l-a100x2-t4x2.toml"
DATA = Path(__file__).parent / "data" / "runtime"
L1B = ROOT / "instances" / "llama3.2-1b-h100x4-l40sx4.toml"


TARGETS = ("megatron", "deepspeed", "torchtitan", "flagscale")


def _target_may_run(c, target: str) -> bool:
    """What every target asks of one stage (docs/targets.md): one TP degree and one micro-batch
    share; FlagScale one device type. The enumeration drops other configurations before their
    sequences (the full mixed space of Sec. 1.1 has every split: thousands of mixed
    configurations on the mini instance, which no target runs); target_violations still judges
    every plan."""
    parts = c.parts or c.replica_parts(1)
    return (len({p.tp for p in parts}) == 1 and len({p.share for p in parts}) == 1
            and (target != "flagscale" or len({p.device for p in parts}) == 1))


def _target_enumeration(instance, targets: tuple[str, ...]) -> dict[str, float]:
    """The least iteration time, per target, over every plan of the search space (mixed stages
    included) that the target can run: the search's stage configurations in every sequence
    that fits the GPUs, every layer split, each plan checked by the validator and
    target_violations. One pass serves every target: a plan is skipped once no target could
    take it (at or above every target's best so far)."""
    from haap_solver.search.solve import SearchState

    cm = CostModel(instance)
    state = SearchState(instance, cm, mixed=True)
    L = instance.model.num_layers
    budget = {g.name: g.num_gpus for g in instance.cluster.node_groups}
    best = dict.fromkeys(targets, math.inf)
    for b in micro_batch_candidates(instance):
        configs = [c for c in stage_configs(instance, b) + state.mixed_space(b)
                   if any(_target_may_run(c, t) for t in targets)]
        for schedule in instance.training.schedules:
            for p in range(1, min(L, instance.cluster.num_gpus) + 1):
                for seq in itertools.product(configs, repeat=p):
                    if any(sum(c.gpus_in(g) for c in seq) > n for g, n in budget.items()):
                        continue
                    runs = [t for t in targets if all(_target_may_run(c, t) for c in seq)]
                    for layers in compositions(L, p):
                        plan = build_plan(instance, list(seq), layers, micro_batch=b,
                                          schedule=schedule, note="bf")
                        if plan is None:
                            break
                        ev = cm.evaluate(plan)
                        t_plan = ev.iteration_time_s
                        takers = [t for t in runs if t_plan < best[t]]
                        if not ev.memory_ok or not takers:
                            continue
                        if plan_violations(instance, plan, cost_model=cm):
                            continue
                        for t in takers:
                            if not target_violations(instance, plan, t):
                                best[t] = t_plan
    return best


def _toy_variant(**training):
    data = tomllib.loads(TOY.read_text())
    data["training"].update(training)
    return instance_from_dict(data, name="toy")


MINI = Path(__file__).parent / "data" / "targets" / "mini-llama-h100x2-l40sx2.toml"


@pytest.fixture(scope="module")
def mini_optimum():
    from haap_solver.search.solve import solve

    instance = load_instance(MINI)
    return instance, solve(instance, time_limit_s=60, threads=1, seed=0)


@pytest.fixture(scope="session")
def mini_truths(tmp_path_factory) -> dict[str, float]:
    """Every target's optimum on the mini instance by enumeration, computed once per test run:
    the first xdist worker to ask enumerates (one pass for every target, some 15 s) and writes
    them to the run's shared temporary directory; the others wait on the lock and read them.
    (Per run, never across runs: a cost-model change must not meet a stale truth.)"""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # (shared by the run's workers)
    path = root / "mini-target-truths.json"
    with open(root / "mini-target-truths.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            truths = _target_enumeration(load_instance(MINI), TARGETS)
            path.write_text(json.dumps(truths))
        return json.loads(path.read_text())


@pytest.mark.parametrize("target", TARGETS)
def test_target_search_matches_bruteforce(target, mini_optimum, mini_truths):
    # The unrestricted optimum is a mixed stage (shares 3 and 1) that no target runs.
    instance, unrestricted = mini_optimum
    assert target_violations(instance, unrestricted.plan, target)
    res = solve_for_target(instance, target, time_limit_s=60)
    assert res.iteration_time_s > unrestricted.iteration_time_s
    assert res.status == "optimal"
    assert target_violations(instance, res.plan, target) == []
    assert not plan_violations(instance, res.plan)
    truth = mini_truths[target]
    assert res.iteration_time_s == pytest.approx(truth, rel=1e-9)
    assert res.iteration_time_s == pytest.approx(
        CostModel(instance).evaluate(res.plan).iteration_time_s, rel=1e-12)


def test_mixed_plan_violations_name_stage_and_field():
    instance = load_instance(L1B)
    plan = load_plan(DATA / "llama3.2-1b-mixed-plan.json")
    assert target_violations(instance, plan, "any") == []
    meg = target_violations(instance, plan, "megatron")
    assert any(v.startswith("stages[0].replicas[*].micro_batch_share") for v in meg)
    fs = target_violations(instance, plan, "flagscale")
    assert any(v.startswith("stages[0].replicas[*].device") for v in fs)


def test_uneven_dp_violates_megatron_not_flagscale():
    instance = load_instance(TOY)
    plan = load_plan(DATA / "toy-hetero-dp.json")
    assert target_violations(instance, plan, "flagscale") == []
    meg = target_violations(instance, plan, "megatron")
    assert any("stages[1] data-parallel degree 1" in v for v in meg)
    assert any("stages[0].recompute" in v or "zero_stage" in v for v in
               target_violations(instance, plan, "deepspeed")) is False
    # The validator lists them once the instance names the target.
    from haap_solver.targets import with_target
    assert any(v.startswith("target megatron: stages[1]")
               for v in plan_violations(with_target(instance, "megatron"), plan))


def test_unknown_target_names_the_field():
    with pytest.raises(InputError, match=r"training\.target.*megatron"):
        _toy_variant(target="megatronlm")


def test_cli_validate_target(capsys):
    plan = str(DATA / "toy-hetero-dp.json")
    assert main(["validate", str(TOY), plan, "--target", "flagscale"]) == 0
    assert main(["validate", str(TOY), plan, "--target", "megatron"]) == 1
    err = capsys.readouterr().err
    assert "target megatron: stages[1] data-parallel degree 1" in err


def test_cli_solve_target_returns_runnable_plan(tmp_path, capsys):
    out = tmp_path / "plan.json"
    assert main(["solve", str(L1B), "--target", "megatron", "--time-limit", "60",
                 "-o", str(out), "--no-progress"]) == 0
    instance = load_instance(L1B)
    plan = load_plan(out)
    assert target_violations(instance, plan, "megatron") == []
    any_plan = load_plan(DATA / "llama3.2-1b-mixed-plan.json")
    cm = CostModel(instance)
    assert cm.evaluate(plan).iteration_time_s >= cm.evaluate(any_plan).iteration_time_s


def test_cli_evaluate_target_and_profile(capsys):
    import json

    inst = str(DATA / "tiny-gpt-8l.toml")
    plan = str(DATA / "hetero-3stage.json")
    assert main(["evaluate", inst, plan, "--json"]) == 0
    analytical = json.loads(capsys.readouterr().out)["iteration_time_s"]
    prof = str(Path(__file__).parent / "data" / "profiles" / "a100-small-gpt.toml")
    assert main(["evaluate", inst, plan, "--json", "--profile", prof]) == 0
    measured = json.loads(capsys.readouterr().out)["iteration_time_s"]
    assert measured != pytest.approx(analytical, rel=1e-3)
    assert main(["evaluate", inst, plan, "--profile", "no-such-file.toml"]) == 2
    assert "--profile" in capsys.readouterr().err
    # Stages of DP 2, 3 and 1: FlagScale runs it, Megatron-LM does not.
    assert main(["evaluate", inst, plan, "--json", "--target", "flagscale"]) == 0
    capsys.readouterr()
    assert main(["evaluate", inst, plan, "--target", "megatron"]) == 1
    assert "target megatron: stages[1] data-parallel degree 3" in capsys.readouterr().err


def test_short_time_limit_gives_an_honest_bound(mini_optimum, mini_truths):
    # Too little time for the 18 restricted searches: whatever comes back, the bound is below
    # the target's true optimum and the plan at or above it.
    instance, _ = mini_optimum
    truth = mini_truths["megatron"]
    for limit in (0.3, 2.0):
        res = solve_for_target(instance, "megatron", time_limit_s=limit)
        assert res.best_bound_s <= truth * (1 + 1e-9)
        if res.plan is None:  # no plan in time is an honest answer too
            assert res.status == "unknown" and "time limit" in res.message
            continue
        assert res.iteration_time_s >= truth * (1 - 1e-9)
        assert (res.status == "optimal") == (res.gap <= 1e-9)
        assert not target_violations(instance, res.plan, "megatron")
        # A space left open (not searched, or stopped by the time limit) below the plan's time
        # leaves the result unproven.
        open_below = [s for s in res.search_space["target"]["searches"]
                      if s["status"] in ("not searched", "feasible")
                      and s["best_bound_s"] < res.iteration_time_s * (1 - 1e-9)]
        if open_below:
            assert res.status == "feasible" and res.gap > 0


def test_cutoff_closes_a_space_that_cannot_beat_it(mini_optimum):
    # solve(cutoff_s=): a plan of that time is known elsewhere. At the optimum (or below) no plan
    # beats it: no plan, status "cutoff", a bound that still holds; just above it, the optimum.
    from haap_solver.search.solve import solve

    instance, unrestricted = mini_optimum
    assert unrestricted.status == "optimal"
    best = unrestricted.iteration_time_s
    for cutoff in (best, 0.9 * best):
        res = solve(instance, time_limit_s=60, threads=1, seed=0, cutoff_s=cutoff)
        assert res.plan is None and res.status == "cutoff"
        assert res.best_bound_s == pytest.approx(cutoff, rel=1e-12)
        assert res.best_bound_s <= best * (1 + 1e-9)
    res = solve(instance, time_limit_s=60, threads=1, seed=0, cutoff_s=1.01 * best)
    assert res.status == "optimal"
    assert res.iteration_time_s == pytest.approx(best, rel=1e-9)
    with pytest.raises(ValueError, match="cutoff_s"):
        solve(instance, time_limit_s=1, cutoff_s=0.0)


def test_a_short_time_limit_still_gives_a_plan_the_target_runs(mini_optimum, mini_truths):
    # The uniform grid seeds the target's search (it runs on Megatron-LM and, with full or no
    # recomputation, on DeepSpeed): no restricted search needs to finish for a plan to come back.
    instance, _ = mini_optimum
    truth = {t: mini_truths[t] for t in ("megatron", "deepspeed")}
    for target, best in truth.items():
        res = solve_for_target(instance, target, time_limit_s=0.01)
        assert res.plan is not None, target
        assert not target_violations(instance, res.plan, target)
        assert not plan_violations(instance, res.plan)
        assert res.iteration_time_s >= best * (1 - 1e-9)
        assert res.best_bound_s <= best * (1 + 1e-9)


def test_spaces_that_cannot_beat_the_best_plan_are_closed_by_it(mini_optimum):
    # The restricted spaces share the incumbent: a space with no plan below the best of the
    # others is closed by its cutoff (not solved to its own optimum), and its bound proves it.
    instance, _ = mini_optimum
    res = solve_for_target(instance, "megatron", time_limit_s=60)
    assert res.status == "optimal"
    searches = res.search_space["target"]["searches"]
    closed = [s for s in searches if s["status"].startswith("closed (no plan below")]
    assert len(closed) >= len(searches) // 2
    for s in closed:
        assert s["iteration_time_s"] is None or s["iteration_time_s"] >= res.iteration_time_s
        assert s["best_bound_s"] >= res.iteration_time_s * (1 - 1e-9)


def test_zero_2_runs_on_deepspeed_without_a_pipeline_only():
    """DeepSpeed's pipeline engine refuses ZeRO-2 and -3, its plain engine runs them: with
    zero_stage 2 the target's optimum is the best one-stage plan (checked against the target
    brute force), a pipelined plan names the stages, and Megatron-LM refuses the instance."""
    instance = load_instance(MINI)
    zero2 = dataclasses.replace(instance, training=dataclasses.replace(
        instance.training, zero_stage=2))
    res = solve_for_target(zero2, "deepspeed", time_limit_s=60, seed=0)
    assert res.plan is not None and res.plan.num_stages == 1
    assert target_violations(zero2, res.plan, "deepspeed") == []
    truth = _target_enumeration(zero2, ("deepspeed",))["deepspeed"]
    assert math.isclose(res.iteration_time_s, truth, rel_tol=1e-9)
    two = solve_for_target(instance, "deepspeed", time_limit_s=60, seed=0, max_stages=2)
    if two.plan is not None and two.plan.num_stages > 1:
        assert any(m.startswith("stages: DeepSpeed") and "without pipeline" in m
                   for m in target_violations(zero2, two.plan, "deepspeed"))
    with pytest.raises(InfeasibleError, match="zero_stage 2: Megatron-LM runs ZeRO stage 1"):
        solve_for_target(zero2, "megatron", time_limit_s=10, seed=0)
    exported = json.loads(export_deepspeed(zero2, res.plan))
    assert exported["pipeline_module"] is None
    assert exported["ds_config"]["zero_optimization"]["stage"] == 2


def test_no_recomputation_mode_the_target_has():
    """training.recompute = ["selective"] with target deepspeed (whose pipeline has none and
    full): no restricted space at all, reported as "every one of its 0 restricted spaces is
    infeasible" (found by fuzzing); now the modes on both sides, as for the schedules."""
    instance = load_instance(TOY)
    selective = dataclasses.replace(instance, training=dataclasses.replace(
        instance.training, recompute=("selective",)))
    with pytest.raises(InfeasibleError, match=r"no plan for target 'deepspeed': DeepSpeed "
                       r"pipeline has the recomputation modes none, full, training.recompute "
                       r"allows selective"):
        solve_for_target(selective, "deepspeed", time_limit_s=2, seed=0)
