"""Solver libraries must honour the time limits we give them: a search that promises to stop at
its limit cannot sit inside a MIP presolve for minutes."""

from __future__ import annotations

import lzma
import threading
from pathlib import Path

import pytest

from haap_solver.search.backends import new_highs

DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize("name", ["highs-presolve-hang-1.mps.xz", "highs-presolve-hang-2.mps.xz"])
def test_highs_stops_near_its_time_limit_where_presolve_loops(tmp_path: Path, name: str) -> None:
    """Stage-assignment models with the incumbent's cutoff (llama3-8b-h100-a100-l40s, mixed
    phase; llama3-405b-6types-x16384) on which HiGHS 1.16's MIP presolve loops in
    strengthenInequalities without looking at the clock. With the options every HiGHS MIP of the
    package gets (`new_highs(mip=True)`), a 0.5 s limit must end the solve within seconds. (With
    presolve on, it ran past 13 minutes.)"""
    model = tmp_path / "model.mps"
    model.write_bytes(lzma.decompress((DATA / name).read_bytes()))
    h = new_highs(threads=1, seed=0, time_limit_s=0.5, mip=True)
    h.readModel(str(model))
    assert h.getOptionValue("time_limit")[1] == 0.5  # reading a model keeps the options
    # A daemon thread: if HiGHS loops, the test fails here instead of hanging the suite.
    worker = threading.Thread(target=h.run, daemon=True)
    worker.start()
    worker.join(60.0)
    assert not worker.is_alive(), f"HiGHS ignored its 0.5 s time limit for 60 s on {name}"
