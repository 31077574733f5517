"""The README's library example runs as written (`haap_solver.solve` is the library call)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_readme_library_example_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.DOTALL)
    assert blocks, "README.md has no python example"
    monkeypatch.chdir(ROOT)  # the example names instances/ relative to the repository
    namespace: dict[str, object] = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    result, ev = namespace["result"], namespace["ev"]
    # The time the library call reports is evaluate()'s for the plan it returns.
    assert result.status == "optimal"  # type: ignore[attr-defined]
    assert ev.iteration_time_s == result.iteration_time_s  # type: ignore[attr-defined]


def test_readme_commands_to_a_running_job_work(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Every command of "From a plan to a running job" runs as written and does what it says:
    the plan is one Megatron-LM runs, and each engine's file is written."""
    import shlex

    from haap_solver.cli import main
    from haap_solver.instance import load_instance
    from haap_solver.plan import load_plan
    from haap_solver.targets import target_violations

    text = (ROOT / "README.md").read_text()
    section = text.split("## From a plan to a running job", 1)[1].split("\n## ", 1)[0]
    block = re.findall(r"```bash\n(.*?)```", section, re.DOTALL)[0]
    lines = [line.split("#", 1)[0].strip() for line in block.splitlines()]
    commands = [shlex.split(line) for line in lines if line]
    assert len(commands) >= 7 and all(c[0] == "haap" for c in commands)
    (tmp_path / "instances").symlink_to(ROOT / "instances")
    monkeypatch.chdir(tmp_path)
    for c in commands:
        assert main(c[1:]) == 0, " ".join(c)
    instance = load_instance(ROOT / commands[0][2])
    assert target_violations(instance, load_plan(tmp_path / "plan.json"), "megatron") == []
    for c in commands:
        if "-o" in c:
            assert (tmp_path / c[c.index("-o") + 1]).stat().st_size > 0
