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
