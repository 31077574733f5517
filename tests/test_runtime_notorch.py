"""Without PyTorch, haap run and haap profile name the extra to install."""

from __future__ import annotations

import sys
from pathlib import Path

from haap_solver.cli import main

DATA = Path(__file__).parent / "data" / "runtime"


def test_run_and_profile_name_the_extra(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    assert main(["run", str(DATA / "tiny-gpt-8l.toml"), str(DATA / "hetero-3stage.json")]) == 1
    assert "pip install -e '.[run]'" in capsys.readouterr().err
    assert main(["profile", str(DATA / "tiny-gpt-8l.toml"), "-o", str(tmp_path / "p.toml")]) == 1
    assert "pip install -e '.[profile]'" in capsys.readouterr().err


def test_run_refuses_more_replicas_than_processes(monkeypatch, capsys):
    import haap_solver.runtime.cli as runtime_cli

    monkeypatch.setattr(runtime_cli, "MAX_PROCESSES", 5)
    assert main(["run", str(DATA / "tiny-gpt-8l.toml"), str(DATA / "hetero-3stage.json")]) == 2
    err = capsys.readouterr().err
    assert "hetero-3stage.json" in err and "6 replicas" in err and "at most 5" in err
