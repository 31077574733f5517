"""The solve summary states each sub-problem once (issue 23, item 4).

Every sub-problem the search enumerates ends in exactly one way: closed by its cheap load-balance
bound, by a strengthened bound, by its model, or left open when the search stopped; sub-problems
excluded by memory before the search are counted apart. Models solved are a count of solver
calls, not of sub-problems (a sub-problem may need several, most need none).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from haap_solver.cli import main
from haap_solver.instance import load_instance
from haap_solver.result import SolveResult
from haap_solver.search.solve import solve

INSTANCES = Path(__file__).resolve().parent.parent / "instances"
FATES = ("load_balance_bound", "carried_bound", "strengthened_bound", "model", "open")


def _check_fates(subproblems: int, fates: dict[str, int]) -> None:
    assert set(fates) == set(FATES)
    assert all(v >= 0 for v in fates.values())
    assert sum(fates.values()) == subproblems


def _check(result: SolveResult) -> None:
    _check_fates(result.subproblems, result.search_space["subproblem_fates"])
    assert result.pruned_by_bound + result.closed_by_model + result.left_open \
        == result.subproblems
    phase = result.search_space.get("single_type_phase")
    if phase:
        _check_fates(phase["subproblems"], phase["subproblem_fates"])


@pytest.mark.parametrize("mixed", [False, True])
def test_each_subproblem_ends_once(mixed: bool) -> None:
    inst = load_instance(INSTANCES / "llama3.2-1b-h100x4-l40sx4.toml")
    res = solve(inst, threads=1, seed=0, time_limit_s=60, mixed=mixed)
    _check(res)
    assert res.status == "optimal" and res.left_open == 0
    assert res.pruned_by_bound + res.closed_by_model == res.subproblems


def test_a_search_stopped_early_leaves_subproblems_open() -> None:
    inst = load_instance(INSTANCES / "gpt3-175b-a100x64.toml")
    res = solve(inst, threads=1, seed=0, time_limit_s=0.3, mixed=False,
                seed_with_baselines=True)
    _check(res)
    if res.status != "optimal":  # (a proof that fast would leave nothing open, rightly)
        assert res.left_open > 0


def test_cli_summary_counts_add_up(capsys: pytest.CaptureFixture[str]) -> None:
    main(["solve", str(INSTANCES / "llama3.2-1b-h100x4-l40sx4.toml"), "--threads", "1"])
    err = " ".join(capsys.readouterr().err.split())
    assert "pruned by the load-balance bound" not in err  # (the old, overlapping wording)
    lines = re.findall(r"(\d+) searched: (\d+) closed by their load-balance bound, (\d+) by a "
                       r"strengthened bound, (\d+) by their model, (\d+) left open", err)
    assert len(lines) == 2  # (single-type stages, then plans with a mixed-type stage)
    for searched, *ends in lines:
        assert sum(map(int, ends)) == int(searched)


def test_local_search_line_sums_the_phases() -> None:
    """The summary's line on the local search (formulations Sec. 4, Polish) counts every phase
    that ran it, and is left out where none did."""
    from haap_solver.search.cli import local_search_line

    assert local_search_line({"subproblem_fates": {}}) == ""
    space = {"local_search": {"plans_improved": 1, "seconds": 0.25},
             "single_type_phase": {"local_search": {"plans_improved": 2, "seconds": 0.5}}}
    assert local_search_line(space).endswith("3 plans made faster, in 0.75 s")


def test_phases_report_their_local_search() -> None:
    """Each phase's summary carries what its local search did (the merged result keeps only
    the last phase's own `search_space`)."""
    res = solve(load_instance(INSTANCES / "llama3.2-1b-h100x4-l40sx4.toml"), threads=1,
                time_limit_s=30)
    phase = res.search_space["single_type_phase"]
    assert "local_search" in phase  # (the single-type search found plans, so it ran)
    assert phase["local_search"]["plans_improved"] >= 0


@pytest.mark.parametrize("options, field", [
    ({"time_limit_s": math.nan}, "time_limit_s"), ({"time_limit_s": 0.0}, "time_limit_s"),
    ({"time_limit_s": -1.0}, "time_limit_s"), ({"threads": 0}, "threads"),
    ({"threads": 1.5}, "threads"), ({"relative_gap": math.nan}, "relative_gap"),
    ({"cutoff_s": math.nan}, "cutoff_s")])
def test_library_options_are_checked(options: dict[str, float], field: str) -> None:
    """The library's solve() refuses what the CLI's options refuse, naming the argument: a NaN
    time limit would otherwise run with no deadline at all."""
    inst = load_instance(INSTANCES / "llama3.2-1b-h100x4-l40sx4.toml")
    with pytest.raises(ValueError, match=field):
        solve(inst, **options)  # type: ignore[arg-type]
