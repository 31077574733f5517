"""haap run: the heterogeneous pipeline on CPU processes gives one process's loss (needs torch)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

from haap_solver.cli import main
from haap_solver.plan import load_plan
from haap_solver.runtime.pipeline import replicas_of, schedule_of

DATA = Path(__file__).parent / "data" / "runtime"


def test_schedule_1f1b_counts():
    for stages in (1, 3, 4):
        for s in range(stages):
            ops = schedule_of("1f1b", s, stages, 4)
            assert sorted(ops) == sorted([("F", j) for j in range(4)] + [("B", j) for j in
                                                                         range(4)])
            # at most P - s micro-batches in flight
            live, peak = 0, 0
            for op, _ in ops:
                live += 1 if op == "F" else -1
                peak = max(peak, live)
            assert peak == min(stages - s, 4)


def test_rows_follow_shares():
    plan = load_plan(DATA / "hetero-3stage.json")
    reps = replicas_of(plan)
    assert [len(r) for r in reps] == [2, 3, 1]
    assert [(r.first_row, r.rows) for r in reps[1]] == [(0, 2), (2, 2), (4, 2)]


def test_haap_run_matches_single_process(capsys):
    # Three stages, DP 2 / 3 / 1, layers 3 / 2 / 3, six processes, 3 steps.
    code = main(["run", str(DATA / "tiny-gpt-8l.toml"), str(DATA / "hetero-3stage.json"),
                 "--steps", "3", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["world"] == 6
    for a, b in zip(out["losses"], out["reference"], strict=True):
        assert a == pytest.approx(b, rel=1e-5)
    assert out["losses"][2] < out["losses"][0]  # the optimizer steps did something
    assert out["predicted"]["iteration_time_s"] > 0
    assert len(out["measured"]["stages"]) == 3
    print(f"predicted {out['predicted']['iteration_time_s']:.4f} s, measured "
          f"{out['measured']['iteration_time_s']:.4f} s")
