"""The baselines: every plan they return passes the one validator, on every matrix instance.

Also the building blocks (GPU line slicing into mixed stages, the proportional split with its
memory repair, Metis' group sizes), the method registry and the ``compare`` / ``plot`` commands.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest

from haap_solver.baselines.common import gpu_line, proportional_split
from haap_solver.baselines.metis import group_sizes
from haap_solver.cli import main
from haap_solver.compare import matrix_instances
from haap_solver.cost.evaluate import CostModel
from haap_solver.instance import load_instance
from haap_solver.methods import METHODS
from haap_solver.report.plots import schedule_events
from haap_solver.result import SolveResult
from haap_solver.validate import check_plan

ROOT = Path(__file__).resolve().parent.parent
MATRIX = matrix_instances(ROOT / "instances")
HETERO = str(ROOT / "instances" / "gpt3-1.3b-t4x4-a100x12.toml")
TOY = str(ROOT / "instances" / "small" / "toy-gpt-6l-a100x2-t4x2.toml")


def test_matrix_is_complete() -> None:
    assert len(MATRIX) >= 16
    gpus = {load_instance(p).cluster.num_gpus for p in MATRIX}
    assert {8, 32, 64, 1024, 16384} <= gpus
    types = {load_instance(p).name: len(load_instance(p).cluster.devices) for p in MATRIX}
    assert types["gpt3-175b-4types-x1024"] == 4
    assert types["llama3-405b-6types-x16384"] == 6


def _check(result: SolveResult, path: Path) -> None:
    inst = load_instance(path)
    assert result.status in ("feasible", "optimal", "infeasible", "unknown")
    if result.plan is None:
        assert result.iteration_time_s == math.inf
        return
    check_plan(inst, result.plan)
    ev = CostModel(inst).evaluate(result.plan)
    assert result.iteration_time_s == pytest.approx(ev.iteration_time_s, rel=1e-12)
    assert result.plans_costed >= 1
    assert math.isnan(result.gap) or result.gap == 0.0


SLOW_BASELINES = ("gpt3-175b-4types-x1024", "llama3-405b-6types-x16384")
"""The matrix instances whose uniform-grid enumeration alone takes tens of seconds: under
`-m slow` (`haap bench` validates every baseline plan on them in each run too)."""


@pytest.mark.parametrize("path", [
    pytest.param(p, id=p.stem, marks=pytest.mark.slow if p.stem in SLOW_BASELINES else ())
    for p in MATRIX])
def test_baseline_plans_pass_the_validator(path: Path) -> None:
    inst = load_instance(path)
    cm = CostModel(inst)
    big = inst.cluster.num_gpus > 256
    found = {}
    for name, limit in (("uniform", 30.0), ("proportional", 30.0),
                        ("metis", 1.0 if big else 0.5), ("balanced", 1.0 if big else 2.0)):
        res = METHODS[name](inst, time_limit_s=limit, threads=1, seed=0, cost_model=cm)
        assert res.method == name
        _check(res, path)
        found[name] = res.iteration_time_s
    # Proportional keeps the best uniform grid: it only changes the layer split.
    assert found["uniform"] < math.inf
    assert found["proportional"] <= found["uniform"] * 1.5


def test_mixed_stage_slices_keep_tp_inside_nodes() -> None:
    inst = load_instance(HETERO)  # 3 x 4 A100 then 1 x 4 T4
    line = gpu_line(inst)
    reps = line.slice(8, 8, 2)  # last A100 node + the T4 node
    assert reps is not None
    assert [(r.node_group, r.count, r.tp) for r in reps] == [("hgx-a100", 2, 2), ("t4-box", 2, 2)]
    assert line.slice(6, 4, 4) is None  # a TP group of 4 would span two nodes
    assert line.slice(12, 8, 1) is None  # past the end


def test_proportional_split_and_memory_repair() -> None:
    assert proportional_split(12, [2.0, 1.0], [12, 12]) == [8, 4]
    assert proportional_split(12, [2.0, 1.0], [6, 12]) == [6, 6]
    assert proportional_split(12, [1.0, 1.0], [5, 5]) is None
    assert sum(proportional_split(7, [3.0, 1.0, 1.0], [7, 7, 7]) or []) == 7
    # Three stages, the middle one capped at 1: its excess layer goes to the stage least loaded
    # after taking it, (4 + 1) / 2 = 2.5 against (2 + 1) / 1 = 3 (mutation_check: the repair
    # giving it to the most loaded survived every other test).
    assert proportional_split(8, [1.0, 1.0, 2.0], [10, 1, 10]) == [2, 1, 5]


def test_metis_group_sizes_are_low_variance_powers_of_two() -> None:
    for n, p in ((16, 3), (24, 2), (1024, 5), (16384, 24)):
        for sizes in group_sizes(n, p):
            assert sum(sizes) == n and len(sizes) == p
            assert all(s & (s - 1) == 0 for s in sizes)
            assert max(sizes) <= 2 * min(sizes)
    assert group_sizes(16, 3) and not group_sizes(24, 1)


def test_registry_has_every_method() -> None:
    assert {"haap", "haap-cpsat", "haap-1pct", "uniform", "proportional", "metis",
            "balanced", "bruteforce"} <= set(METHODS)


def test_bench_report_states_the_time_to_a_proven_gap(tmp_path: Path) -> None:
    """haap-1pct is the search with relative_gap=0.01: its plan within 1% of haap's proven
    optimum; the report's "Time to a proof" row gives both searches' status and gap (two
    decimals: 0.99% must not read 1.0%)."""
    from haap_solver.compare import compare_instance
    from haap_solver.report.bench import bench_report

    inst = load_instance(TOY)
    methods = ["haap", "haap-1pct", "uniform"]
    rows = compare_instance(inst, methods, time_limit_s=30)
    by = {r["method"]: r for r in rows}
    assert by["haap"]["status"] == "optimal"
    assert by["haap-1pct"]["gap"] <= 0.01 + 1e-9
    assert by["haap-1pct"]["iteration_time_s"] * 0.99 <= \
        by["haap"]["iteration_time_s"] * (1 + 1e-9)
    report = bench_report(rows, [inst], methods=methods, limit=30, quick=False, total_s=1.0,
                          plots={}, output=tmp_path / "benchmarks.md")
    section = report.split("## Time to a proof")[1].split("\n## ")[0]
    row = next(line for line in section.splitlines() if line.startswith(f"| {inst.name} |"))
    assert "| optimal (0.00%) |" in row
    assert f"| {by['haap-1pct']['status']} ({by['haap-1pct']['gap']:.2%}) |" in row


def test_gantt_schedule_respects_dependencies() -> None:
    inst = load_instance(TOY)
    # The optimal plan (the exact search's: a fraction of the brute force's 10 s).
    res = METHODS["haap"](inst, time_limit_s=60, threads=1, seed=0)
    assert res.plan is not None and res.evaluation is not None
    m = res.plan.num_micro_batches
    events = schedule_events(res.plan, res.evaluation, m)
    p = res.plan.num_stages
    assert len(events) == 2 * p * m
    end = {(k, i, j): e for i, j, k, _, e in events}
    for i, j, kind, start, _ in events:
        if kind == "F" and i > 0:
            assert start >= end[("F", i - 1, j)]
        if kind == "B" and i < p - 1:
            assert start >= end[("B", i + 1, j)]


def test_compare_cli_csv_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    # The brute force needs 10-20 s of the limit on the toy instance (110k plans; a loaded host).
    assert main(["compare", TOY, "--methods", "haap,uniform,metis,bruteforce",
                 "--time-limit", "120", "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    by = {r["method"]: r for r in rows}
    assert set(by) == {"haap", "uniform", "metis", "bruteforce"}
    assert by["bruteforce"]["status"] == "optimal"
    # Nothing beats the ground truth (equality is tests/test_bruteforce_agreement.py's job).
    truth = float(by["bruteforce"]["iteration_time_s"])
    for r in rows:
        assert float(r["iteration_time_s"]) >= truth * (1 - 1e-9)
    assert float(by["uniform"]["speedup_vs_uniform"]) == 1.0
    assert main(["compare", TOY, "--methods", "uniform", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data[0]["plan"]["schema_version"] == 1


def test_plot_cli_writes_pngs(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    inst = load_instance(TOY)
    res = METHODS["uniform"](inst, time_limit_s=10, threads=1, seed=0)
    assert res.plan is not None
    plan = tmp_path / "plan.json"
    res.plan.save(plan)
    gantt, mem = tmp_path / "g.png", tmp_path / "m.png"
    assert main(["plot", TOY, str(plan), "--gantt", str(gantt), "--memory", str(mem)]) == 0
    assert gantt.read_bytes()[:4] == b"\x89PNG" and mem.stat().st_size > 1000


def test_gantt_blocking_sends_occupy_the_sender() -> None:
    """With blocking sends (training.pipeline_p2p) a stage is busy while it sends: the steady
    state of equal stages then repeats every tau + c_{i-1} + c_i, the period of cost model
    Sec. 7; overlapped sends are faster (their steady state is not strictly periodic: the
    round trip of the p micro-batches in flight paces it, at (p tau + 2 (p - 1) c) / p on
    average)."""
    from itertools import pairwise
    from types import SimpleNamespace

    tau_f, tau_b, c, p, m = 1.0, 2.0, 0.25, 3, 12
    ev = SimpleNamespace(stages=[SimpleNamespace(fwd_s=tau_f, bwd_s=tau_b, p2p_next_s=c)
                                 for _ in range(p)])
    plan = SimpleNamespace(schedule="1f1b")
    steady = {}
    for blocking in (False, True):
        events = schedule_events(plan, ev, m, blocking=blocking)
        starts = sorted(s for i, j, k, s, _ in events if i == 1 and k == "F")
        steady[blocking] = [b - a for a, b in pairwise(starts)][-6:]
    assert steady[True] == pytest.approx([tau_f + tau_b + 2 * c] * 6)
    assert sum(steady[False]) == pytest.approx(6 * (p * (tau_f + tau_b) + 2 * (p - 1) * c) / p)
