"""The price of each engine target (haap_solver.target_prices): the table `haap bench` writes
into its report and docs/targets.md, checked against figures worked out by hand from a fake run;
`haap bench --targets`'s glue with the methods faked; and, on the shipped instances small enough
for CI, the claims of issue 24: `--target megatron` and `--target deepspeed` return a plan the
target runs, never faster than the proven unrestricted optimum (benchmarks/target_prices.py runs
the same over every shipped instance)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from haap_solver.compare import run_method
from haap_solver.cost.evaluate import CostModel
from haap_solver.instance import load_instance
from haap_solver.plan import plan_from_dict
from haap_solver.report.bench_docs import (
    bench_record,
    load_record,
    marked_block,
    render_target_prices,
)
from haap_solver.target_prices import Price, price_section, prices, row_violations
from haap_solver.validate import plan_violations

ROOT = Path(__file__).resolve().parents[1]


def row(instance: str, method: str, status: str, time_s: float, gap: float) -> dict[str, Any]:
    return {"instance": instance, "gpus": 8, "method": method, "status": status,
            "iteration_time_s": time_s, "gap": gap, "search_s": 1.0}


FAKE = [row("a", "haap", "optimal", 2.0, 0.0),
        row("a", "haap-megatron", "optimal", 2.1, 0.0),
        row("a", "haap-deepspeed", "feasible", 2.2, 0.05),
        row("b", "haap", "feasible", 4.0, 0.1),
        row("b", "haap-megatron", "optimal", 4.0, 0.0),
        row("b", "haap-deepspeed", "infeasible", math.inf, math.nan),
        row("c", "uniform", "feasible", 1.0, math.nan)]


def test_price_table_from_a_fake_run() -> None:
    text = "\n".join(price_section(FAKE, ["megatron", "deepspeed"]))
    # a: 2.1 / 2.0 = +5.0% proven; 2.2 / 2.0 = +10.0% with deepspeed's own 5.0% gap.
    assert "| a | 2.000 opt | +5.0% opt | +10.0% gap 5.0% |" in text
    # b: the unrestricted search is unproven; deepspeed runs no plan of it.
    assert "| b | 4.000 feasible | +0.0% (unrestricted unproven) | infeasible |" in text
    assert "| c |" not in text  # no haap row
    assert "search bug" not in text
    assert price_section(FAKE, ["torchtitan"]) == []


def test_a_target_faster_than_the_proven_optimum_is_flagged() -> None:
    rows = [row("a", "haap", "optimal", 2.0, 0.0), row("a", "haap-megatron", "optimal", 1.9, 0.0),
            row("b", "haap", "feasible", 2.0, 0.2), row("b", "haap-megatron", "optimal", 1.9, 0.0)]
    flagged = [p.instance for p in prices(rows, ["megatron"]) if p.faster_than_optimum()]
    assert flagged == ["a"]  # b's unrestricted search is unproven: no contradiction
    assert "(a search bug):** a megatron." in "\n".join(price_section(rows, ["megatron"]))


def test_docs_block_renders_from_the_json() -> None:
    record = json.loads(json.dumps(bench_record(
        FAKE, generated_utc="2026-12-01 22:00 UTC", time_limit_s=60.0, threads=1,
        methods=["haap", "uniform", "haap-megatron", "haap-deepspeed"], total_s=1.0,
        machine={})))
    text = render_target_prices(record)
    assert "| a | 2.000 opt | +5.0% opt | +10.0% gap 5.0% |" in text
    assert "run of 2026-12-01 22:00 UTC" in text.splitlines()[0]
    none = dict(record, methods=["haap", "uniform"])
    assert render_target_prices(none).startswith("(No target search in the ")


def test_bench_targets_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from haap_solver import compare
    from haap_solver.cli import main
    from haap_solver.report.bench_docs import BLOCKS

    for rel in BLOCKS:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    shutil.copytree(ROOT / "instances" / "small", tmp_path / "instances" / "small")

    def fake(instance: Any, methods: Any, **_: Any) -> list[dict[str, Any]]:
        return [dict(row(instance.name, m, "optimal", 1.0 + (m == "haap-megatron"), 0.0),
                     tokens_per_s=1.0, mfu=0.1, speedup_vs_uniform=1.0, speedup_vs_metis=1.0,
                     plans_costed=1, subproblems_solved=1, stages=1, mixed_stages=0,
                     message="", plan=None) for m in methods]

    monkeypatch.setattr(compare, "compare_instance", fake)
    monkeypatch.chdir(tmp_path)
    assert main(["bench", "--methods", "haap,uniform", "--targets", "megatron",
                 "--img-dir", str(tmp_path / "img")]) == 0
    record = load_record(tmp_path / "docs" / "benchmarks.json")
    assert [r["method"] for r in record["rows"]] == ["haap", "uniform", "haap-megatron"]
    report = (tmp_path / "docs" / "benchmarks.md").read_text()
    assert "## The price of each target" in report
    assert "| toy-gpt-6l-a100x2-t4x2 | 1.000 opt | +100.0% opt |" in report
    assert "haap-megatron s" not in report  # not a baseline column
    docs = (tmp_path / "docs" / "targets.md").read_text()
    assert marked_block(docs, "target-prices") == render_target_prices(record)
    assert main(["bench", "--targets", "megatronlm"]) == 2


# The shipped instances the target searches prove within seconds (benchmarks/target_prices.py:
# the rest). Each: the unrestricted search and each target's, as `haap bench --targets` runs them.
# On llama3.2-1b-h100x4-l40sx4 the unrestricted optimum has a mixed stage no engine runs.
CI_INSTANCES = ["small/toy-gpt-6l-a100x2-t4x2",
                pytest.param("gpt3-1.3b-a100x8", marks=pytest.mark.slow),  # (~15 s of CPU)
                "llama3.2-1b-h100x4-l40sx4"]


@pytest.mark.parametrize("name", CI_INSTANCES)
def test_every_target_plan_runs_and_costs_at_least_the_optimum(name: str) -> None:
    instance = load_instance(ROOT / "instances" / f"{name}.toml")
    rows = [run_method(m, instance, cost_model=CostModel(instance), time_limit_s=60)
            for m in ("haap", "haap-megatron", "haap-deepspeed")]
    assert rows[0]["status"] == "optimal"
    for r in rows[1:]:
        target = r["method"].removeprefix("haap-")
        assert r["status"] == "optimal" and r["plan"] is not None
        assert row_violations(instance, r, target) == []
        assert plan_violations(instance, plan_from_dict(r["plan"])) == []
        # What both engines need, read off the plan's JSON without targets.py: one TP and one
        # DP degree for every stage, one micro-batch share per stage, one recomputation mode
        # (DeepSpeed: none or full).
        stages = r["plan"]["stages"]
        assert len({g["tp"] for st in stages for g in st["replicas"]}) == 1
        assert len({sum(g["count"] for g in st["replicas"]) for st in stages}) == 1
        assert all(len({g["micro_batch_share"] for g in st["replicas"]}) == 1 for st in stages)
        assert len({st["recompute"] for st in stages}) == 1
        if target == "deepspeed":
            assert stages[0]["recompute"] in ("none", "full")
    for p in prices(rows, ["megatron", "deepspeed"]):
        assert isinstance(p, Price) and p.proven
        assert not p.faster_than_optimum() and p.price >= -1e-9
