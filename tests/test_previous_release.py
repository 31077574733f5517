"""`haap bench --previous REF`: an earlier release's exact search, run from its own exported
package in a child process, beside this release's (haap_solver.report.previous)."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pytest

from haap_solver import load_instance
from haap_solver.errors import HaapError
from haap_solver.report import previous

ROOT = Path(__file__).resolve().parent.parent
TOY = ROOT / "instances" / "small" / "toy-gpt-6l-a100x2-t4x2.toml"


def _in_git_checkout() -> bool:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                             check=False)
    except OSError:
        return False
    return out.returncode == 0


needs_git = pytest.mark.skipif(not _in_git_checkout(), reason="needs a git checkout")


@needs_git
def test_the_release_runs_from_its_own_tree_and_its_plan_is_costed_here(tmp_path: Path) -> None:
    tree, short = previous.export_release("HEAD", ROOT, tmp_path)
    assert (tree / "haap_solver" / "__init__.py").is_file() and short
    answer = previous.run_release(tree, TOY, time_limit_s=5.0, threads=1, seed=0)
    assert "error" not in answer, answer
    instance = load_instance(TOY)
    current = {"status": "optimal", "iteration_time_s": answer["iteration_time_s"],
               "gap": 0.0, "search_s": 2 * answer["search_s"]}
    row = previous.compare_row(instance, current, answer, short)
    # HEAD's plan, costed by this checkout's cost model: HEAD's own figure (same code, unless
    # the working tree changed the cost model).
    assert row["previous_plan_note"] == ""
    assert math.isclose(row["previous_plan_here_s"], answer["iteration_time_s"], rel_tol=1e-6)
    assert math.isclose(row["search_ratio"], 0.5)
    section = "\n".join(previous.previous_section([row]))
    assert short in section and "toy-gpt-6l-a100x2-t4x2" in section


@needs_git
def test_an_unknown_revision_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(HaapError, match=r"--previous no-such-ref: not a revision"):
        previous.export_release("no-such-ref", ROOT, tmp_path)


def test_a_failing_release_is_recorded_not_raised(tmp_path: Path) -> None:
    # A "release" whose package cannot import: the child's last error line is the record.
    tree = tmp_path / "broken"
    (tree / "haap_solver").mkdir(parents=True)
    (tree / "haap_solver" / "__init__.py").write_text("raise ImportError('broken release')\n")
    answer = previous.run_release(tree, TOY, time_limit_s=1.0, threads=1, seed=0)
    assert "broken release" in answer["error"]
    row = previous.compare_row(load_instance(TOY), {"status": "optimal",
                               "iteration_time_s": 1.0, "gap": 0.0, "search_s": 1.0}, answer, "x")
    assert row["previous_status"] == "error" and math.isnan(row["search_ratio"])


def test_small_node_clusters() -> None:
    assert previous.small_node(load_instance(ROOT / "instances"
                                             / "gpt3-2.7b-a100x8-v100x8-4gpu.toml"))
    assert not previous.small_node(load_instance(ROOT / "instances" / "gpt3-1.3b-a100x8.toml"))
