"""The search's last resort (`BranchAndBound.last_resort`, tuning.LAST_RESORT_MAX_GPUS): on a
small cluster, a sub-problem left open only because its full model is larger than a dive takes
(DIVE_FULL_MAX_VARS) gets that model with the time left, instead of the search ending early
with a gap. Here every full model is made "too large" (DIVE_FULL_MAX_VARS = 0), so only the
bounds and the last resort can close what the bounds leave."""

from __future__ import annotations

from pathlib import Path

import pytest

from haap_solver.instance import load_instance
from haap_solver.search import solve, tuning
from haap_solver.validate import check_plan

INSTANCE = Path(__file__).resolve().parent.parent / "instances/gpt3-2.7b-a100-40gx8-v100x8.toml"


def test_last_resort_proves_what_too_large_models_left_open(monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    instance = load_instance(INSTANCE)
    reference = solve(instance, time_limit_s=60, threads=1, seed=0)
    assert reference.status == "optimal"
    monkeypatch.setattr(tuning, "DIVE_FULL_MAX_VARS", 0)
    monkeypatch.setattr(tuning, "LAST_RESORT_MAX_GPUS", 0)
    without = solve(instance, time_limit_s=60, threads=1, seed=0)
    # (the bounds alone leave a sub-problem open: the search ends with a gap, long before 60 s)
    assert without.status == "feasible" and without.gap > 0
    monkeypatch.setattr(tuning, "LAST_RESORT_MAX_GPUS", instance.cluster.num_gpus)
    got = solve(instance, time_limit_s=60, threads=1, seed=0)
    assert got.status == "optimal" and got.gap == 0
    assert got.iteration_time_s == pytest.approx(reference.iteration_time_s, rel=1e-9)
    assert got.plan is not None
    check_plan(instance, got.plan)
