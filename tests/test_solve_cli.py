"""`haap solve` and `solve()` on shipped instances: output streams, proof fields, errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import haap_solver as haap
from haap_solver.cli import main
from haap_solver.errors import InfeasibleError
from haap_solver.search import SearchState, solve

ROOT = Path(__file__).resolve().parent.parent
HETERO = str(ROOT / "instances" / "gpt3-2.7b-a100-40gx8-v100x8.toml")


def test_solve_json_on_stdout_and_plan_file(capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    code = main(["solve", HETERO, "--backend", "highs", "--json", "-o", str(out),
                 "--time-limit", "60"])
    captured = capsys.readouterr()
    assert code == 0
    data = json.loads(captured.out)  # nothing but JSON on stdout (no solver banner)
    assert data["status"] == "optimal"
    assert data["gap"] <= 1e-6
    assert data["best_bound_s"] <= data["iteration_time_s"] * (1 + 1e-9)
    # The reported time is evaluate()'s time of the written plan.
    instance = haap.load_instance(HETERO)
    plan = haap.load_plan(out)
    assert math.isclose(haap.evaluate(instance, plan).iteration_time_s,
                        data["iteration_time_s"], rel_tol=1e-12)
    assert data["search_space"]["stage_configs_after_pruning"] <= \
        data["search_space"]["stage_configs_before_pruning"]
    assert 0 <= data["cache"]["hit_rate"] <= 1
    assert data["ratio_to_compute_bound"] >= 1.0


def test_solve_table_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", HETERO, "--backend", "highs", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "proven optimal" in captured.err
    assert "A100-40G" in captured.err and "V100-32G" in captured.err


def test_solve_rejects_bad_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", HETERO, "--time-limit", "0"]) == 2
    assert "--time-limit" in capsys.readouterr().err
    assert main(["solve", HETERO, "--threads", "0"]) == 2
    for bad in ("1", "-0.01"):
        assert main(["solve", HETERO, "--gap", bad]) == 2
        assert "--gap" in capsys.readouterr().err
    with pytest.raises(ValueError, match="relative_gap"):
        solve(haap.load_instance(HETERO), relative_gap=1.0)


def test_solve_stops_at_the_requested_gap(capsys: pytest.CaptureFixture[str]) -> None:
    """--gap 0.1: the plan is proven within 10% (of a bound at most the optimum, which a solve
    without a gap proves), the options say so, and so does the message where it is not optimal."""
    assert main(["solve", HETERO, "--gap", "0.1", "--json", "--no-progress"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["options"]["relative_gap"] == 0.1
    assert data["gap"] <= 0.1 + 1e-9
    optimum = solve(haap.load_instance(HETERO), seed_with_baselines=False)
    assert optimum.status == "optimal"
    assert data["best_bound_s"] <= optimum.iteration_time_s * (1 + 1e-9)
    assert data["iteration_time_s"] * (1 - 0.1) <= optimum.iteration_time_s * (1 + 1e-9)
    if data["status"] == "feasible":
        assert "requested relative gap (10.00%)" in data["message"]


INFEASIBLE = """
name = "too-big"
[model]
preset = "gpt3-175b"
[training]
global_batch_size = 64
dtype = "fp16"
[cluster]
[[cluster.node_groups]]
name = "t4"
device = "T4"
num_nodes = 2
gpus_per_node = 4
nic = "ethernet"
nic_gbit_s = 25
"""


def test_infeasible_instance_is_explained_with_numbers(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "too-big.toml"
    path.write_text(INFEASIBLE)
    with pytest.raises(InfeasibleError) as info:
        solve(haap.load_instance(path), backend="highs", time_limit_s=30)
    text = str(info.value)
    # 174.6e9 parameters x 16 B = 2,601.8 GiB of model states against 8 x (16 - 2) GiB usable.
    assert "2,601.8 GiB" in text and "112.0 GiB usable" in text and "short by" in text
    assert main(["solve", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("haap: error: no plan fits too-big") and "Traceback" not in err


def test_state_is_reused_across_solves() -> None:
    instance = haap.load_instance(HETERO)
    state = SearchState(instance)
    first = solve(instance, backend="highs", state=state)
    second = solve(instance, backend="cpsat", state=state)
    # The second solve finds everything it needs in the cache.
    assert second.cache["hit_rate"] > first.cache["hit_rate"]
    assert math.isclose(first.iteration_time_s, second.iteration_time_s, rel_tol=1e-6)
