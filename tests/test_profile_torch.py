"""haap profile on CPU writes a profile that haap solve --profile uses (needs torch)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

from haap_solver.cli import main
from haap_solver.cost.evaluate import CostModel
from haap_solver.cost.profile import load_profile
from haap_solver.instance import load_instance
from haap_solver.plan import plan_from_dict

INSTANCE = Path(__file__).parent / "data" / "runtime" / "tiny-gpt-8l.toml"


def test_profile_then_solve_uses_it(tmp_path, capsys):
    prof = tmp_path / "profile.toml"
    assert main(["profile", str(INSTANCE), "-o", str(prof), "--micro-batches", "1,2",
                 "--repeats", "1", "--device", "cpu"]) == 0
    profile = load_profile(prof)
    assert profile.devices == ["A100-80G"]
    e = profile.lookup("A100-80G", 1, 2)
    assert e.layer_fwd_s > 0 and e.layer_bwd_s > 0 and e.layer_activation_bytes > 0
    capsys.readouterr()
    assert main(["solve", str(INSTANCE), "--profile", str(prof), "--time-limit", "30",
                 "--json", "--no-progress"]) == 0
    res = json.loads(capsys.readouterr().out)
    instance = load_instance(INSTANCE)
    plan = plan_from_dict(res["plan"])
    with_profile = CostModel(instance, profile=profile).evaluate(plan).iteration_time_s
    analytical = CostModel(instance).evaluate(plan).iteration_time_s
    assert res["iteration_time_s"] == pytest.approx(with_profile, rel=1e-9)
    assert with_profile != pytest.approx(analytical, rel=1e-3)
