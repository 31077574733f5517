"""The ``haap`` command (haap_solver.cli.main): streams, exit codes, error format, tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from haap_solver import __version__
from haap_solver.cli import MIN_CONSOLE_WIDTH, _console, main
from haap_solver.cost.evaluate import BREAKDOWN_KEYS, CostModel

ROOT = Path(__file__).resolve().parent.parent
INSTANCE = str(ROOT / "instances" / "gpt3-1.3b-a100x8.toml")

# GPT-3 1.3B on one DGX A100: two stages, TP 2 x DP 2 and TP 4.
PLAN: dict[str, Any] = {
    "schema_version": 1, "schedule": "1f1b", "micro_batch_size": 4, "num_micro_batches": 64,
    "stages": [
        {"first_layer": 0, "num_layers": 12, "recompute": "selective",
         "replicas": [{"node_group": "a100", "device": "A100-80G", "count": 2, "tp": 2,
                       "micro_batch_share": 2, "placement": [{"node": 0, "replicas": 2}]}]},
        {"first_layer": 12, "num_layers": 12, "recompute": "none",
         "replicas": [{"node_group": "a100", "device": "A100-80G", "count": 1, "tp": 4,
                       "micro_batch_share": 4, "placement": [{"node": 0, "replicas": 1}]}]},
    ],
}


def _write(path: Path, data: Any) -> str:
    path.write_text(json.dumps(data))
    return str(path)


@pytest.fixture
def plan_file(tmp_path: Path) -> str:
    return _write(tmp_path / "plan.json", PLAN)


@pytest.fixture
def invalid_plan_file(tmp_path: Path) -> str:
    # Three violations: 4 x 32 sequences for a batch of 256, and 12 GPUs on the 8-GPU node
    # (reported for the node and for the node group).
    data = json.loads(json.dumps(PLAN))
    data["num_micro_batches"] = 32
    data["stages"][1]["replicas"][0]["tp"] = 8
    return _write(tmp_path / "invalid.json", data)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


# -- validate ------------------------------------------------------------------------------------
def test_validate_ok_prints_nothing_on_stdout(capsys: pytest.CaptureFixture[str],
                                               plan_file: str) -> None:
    code, out, err = run(capsys, "validate", INSTANCE, plan_file)
    assert code == 0 and out == ""
    lines = err.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"ok {INSTANCE}: gpt3-1.3b, 8 GPUs")
    assert lines[1] == f"ok {plan_file}: 2 stage(s), 8 GPUs"


def test_validate_instance_alone(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "validate", INSTANCE)
    assert code == 0 and out == ""
    assert err.startswith(f"ok {INSTANCE}: ") and len(err.splitlines()) == 1


def test_validate_invalid_plan_prints_only_the_error(capsys: pytest.CaptureFixture[str],
                                                      invalid_plan_file: str) -> None:
    code, out, err = run(capsys, "validate", INSTANCE, invalid_plan_file)
    assert code == 1 and out == ""
    lines = err.splitlines()
    assert not any(line.startswith("ok ") for line in lines), err
    assert lines[0] == f"haap: error: {invalid_plan_file}: plan is invalid (3 violation(s)):"
    # One violation per line.
    assert len(lines) == 4
    assert all(line.startswith("  - ") for line in lines[1:]), err
    assert "global_batch_size" in err and "GPUs" in err


def test_evaluate_invalid_plan_has_the_same_error(capsys: pytest.CaptureFixture[str],
                                                   invalid_plan_file: str) -> None:
    code, out, err = run(capsys, "evaluate", INSTANCE, invalid_plan_file, "--json")
    assert code == 1 and out == ""
    assert err.startswith(f"haap: error: {invalid_plan_file}: plan is invalid (3 violation(s)):\n")


def test_validate_bad_plan_file_prints_only_the_error(capsys: pytest.CaptureFixture[str],
                                                       tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, out, err = run(capsys, "validate", INSTANCE, str(bad))
    assert code == 2 and out == ""
    assert err.startswith(f"haap: error: {bad}: not valid JSON") and len(err.splitlines()) == 1


def test_validate_reads_the_instance_profile(capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    inst = tmp_path / "inst.toml"
    inst.write_text('profile = "missing.toml"\n' + Path(INSTANCE).read_text())
    code, out, err = run(capsys, "validate", str(inst))
    assert code == 2 and out == ""
    assert err == (f"haap: error: {inst}: profile: no profile file {tmp_path / 'missing.toml'} "
                   "(a relative path is taken from the instance file's folder)\n")


# -- evaluate ------------------------------------------------------------------------------------
def test_evaluate_prints_a_table_on_stderr_only(capsys: pytest.CaptureFixture[str],
                                                plan_file: str) -> None:
    code, out, err = run(capsys, "evaluate", INSTANCE, plan_file)
    assert code == 0 and out == ""
    assert "iteration time" in err and "tokens/s" in err
    # The tables are not squeezed: every column header of the plan table is on one line.
    header = next(line for line in err.splitlines() if "stage" in line and "recompute" in line)
    for col in ("layers", "replicas", "device", "TP", "share", "fwd+bwd ms", "mem GiB / cap"):
        assert col in header, header
    assert "A100-80G (a100)" in err


def test_evaluate_json_adds_up(capsys: pytest.CaptureFixture[str], plan_file: str) -> None:
    code, out, err = run(capsys, "evaluate", INSTANCE, plan_file, "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    assert set(data["breakdown"]) == set(BREAKDOWN_KEYS)
    assert sum(data["breakdown"].values()) == pytest.approx(data["iteration_time_s"], rel=1e-12)
    assert data["iteration_time_s"] > 0 and data["memory_ok"] is True
    assert len(data["stages"]) == 2 and data["num_gpus_used"] == 8


# -- Console width -------------------------------------------------------------------------------
def test_console_is_wide_when_stderr_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    console = _console()
    assert not console.is_terminal
    assert console.width == MIN_CONSOLE_WIDTH
    monkeypatch.setenv("COLUMNS", "200")
    assert _console().width == 200  # wider is kept


# -- Usage errors --------------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["evaluate", INSTANCE, "plan.json", "--bogus"],
    ["validate", "--bogus", INSTANCE],
    ["evaluate", INSTANCE],
    ["evaluate"],
    ["frobnicate"],
    ["calibrate", "--runs"],
])
def test_usage_errors_exit_2_with_a_short_message(capsys: pytest.CaptureFixture[str],
                                                  argv: list[str]) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert 1 <= len(lines) <= 3, err
    assert lines[0].startswith("usage: haap")
    assert "error: " in lines[-1]


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys)
    assert code == 2 and out == "" and "usage: haap" in err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip() == f"haap_solver {__version__}"


# -- Bad files: one line, no traceback, from every subcommand -------------------------------------
def _bad_files(tmp_path: Path) -> dict[str, Path]:
    binary = tmp_path / "binary.bin"
    binary.write_bytes(b"\x00\xff\xfe\x81")
    empty = tmp_path / "empty"
    empty.write_text("")
    folder = tmp_path / "folder"
    folder.mkdir()
    return {"missing": tmp_path / "missing", "directory": folder, "binary": binary,
            "empty": empty}


@pytest.mark.parametrize("kind", ["missing", "directory", "binary", "empty"])
@pytest.mark.parametrize("where", ["validate-instance", "validate-plan", "evaluate-instance",
                                   "evaluate-plan", "calibrate-runs"])
def test_bad_files_give_one_error_line(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                       plan_file: str, where: str, kind: str) -> None:
    bad = str(_bad_files(tmp_path)[kind])
    argv = {
        "validate-instance": ["validate", bad, plan_file],
        "validate-plan": ["validate", INSTANCE, bad],
        "evaluate-instance": ["evaluate", bad, plan_file],
        "evaluate-plan": ["evaluate", INSTANCE, bad, "--json"],
        "calibrate-runs": ["calibrate", "--runs", bad, "--json"],
    }[where]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith(f"haap: error: {bad}: ") and len(err.splitlines()) == 1, err


def test_calibrate_write_to_a_directory(capsys: pytest.CaptureFixture[str],
                                        tmp_path: Path) -> None:
    code, out, err = run(capsys, "calibrate", "--write", str(tmp_path))
    assert code == 2 and out == ""
    assert err.splitlines()[-1] == f"haap: error: {tmp_path}: cannot write: Is a directory"


def test_calibrate_write_under_a_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Refused before the calibration runs, naming the file that stands where a directory
    must."""
    blocker = tmp_path / "docs"
    blocker.write_text("")
    target = blocker / "validation.md"
    code, out, err = run(capsys, "calibrate", "--write", str(target))
    assert code == 2 and out == ""
    assert err.splitlines()[-1] == (f"haap: error: {target}: cannot write: {blocker} is not a "
                                    "directory")


def test_internal_errors_are_one_line(capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch, plan_file: str) -> None:
    def broken(self: CostModel, plan: Any) -> Any:
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(CostModel, "evaluate", broken)
    monkeypatch.delenv("HAAP_DEBUG", raising=False)
    code, out, err = run(capsys, "evaluate", INSTANCE, plan_file)
    assert code == 1 and out == ""
    assert err == ("haap: error: internal error: ZeroDivisionError: float division by zero "
                   "(set HAAP_DEBUG=1 for the traceback)\n")
    monkeypatch.setenv("HAAP_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        main(["evaluate", INSTANCE, plan_file])
