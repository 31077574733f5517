"""The re-planning benchmark (`haap_solver.report.replan_bench`): the short re-plan track and the
bench section's table."""

from __future__ import annotations

import shutil
from pathlib import Path

from haap_solver.report.replan_bench import replan_section, run_trace

ROOT = Path(__file__).resolve().parent.parent

EVENTS = """
[[events]]
label = "a T4 runs at half speed"
kind = "slowdown"
node_group = "t4"
compute_speed = 0.5

[[events]]
label = "the batch doubles"
kind = "global_batch"
global_batch_size = 64
"""


def _trace(tmp_path: Path, events: str = EVENTS) -> Path:
    shutil.copy(ROOT / "instances/small/toy-gpt-6l-a100x2-t4x2.toml", tmp_path / "toy.toml")
    (tmp_path / "toy.events.toml").write_text(events)
    return tmp_path


def test_the_short_replan_is_never_better_than_a_proven_cold_optimum(tmp_path: Path) -> None:
    """Both Planners and the cold solve search the same space, so where the cold solve proves
    its optimum the short re-plan's plan can only match it or be slower; on this toy both
    prove, so they match."""
    out = run_trace(_trace(tmp_path), "toy", 30.0, quick_limit_s=10.0, log=False)
    assert [r["label"] for r in out["events"]] == ["a T4 runs at half speed", "the batch doubles"]
    for r in out["events"]:
        assert r["cold_status"] == "optimal"
        assert r["quick_over_cold"] >= 1.0 - 1e-9
        if r["quick_status"] == "optimal":
            assert abs(r["quick_over_cold"] - 1.0) <= 1e-9
    assert out["max_quick_over_cold"] == max(r["quick_over_cold"] for r in out["events"])
    # The re-plan to the cold solve's guarantee: a proof here, hence the cold optimum.
    for r in out["events"]:
        assert r["matched"] and r["matched_status"] == "optimal"
        assert abs(r["matched_time_s"] / r["cold_time_s"] - 1.0) <= 1e-9
    assert out["all_matched"]
    lines = replan_section([out])
    table = [line for line in lines if line.startswith("| ")]
    assert "re-plan in 10 s" in table[0] and "to cold's gap" in table[0]
    assert len(table) == 1 + len(out["events"]) + 1  # header, events, median
    widths = {line.count("|") for line in table}
    assert widths == {table[0].count("|")}, "every row has the header's columns"


def test_the_section_leaves_out_the_short_replan_where_it_did_not_run(tmp_path: Path) -> None:
    one_event = EVENTS.split("[[events]]")[1]
    out = run_trace(_trace(tmp_path, "[[events]]" + one_event), "toy", 30.0, quick_limit_s=None,
                    match_cold=False, log=False)
    assert "quick_s" not in out["events"][0] and "max_quick_s" not in out
    assert "matched_cpu_s" not in out["events"][0] and "median_cold_over_matched_cpu" not in out
    table = [line for line in replan_section([out]) if line.startswith("| ")]
    assert "re-plan" not in table[0] and "cold's gap" not in table[0]
    assert {line.count("|") for line in table} == {table[0].count("|")}
