"""Solver libraries must honour the time limits we give them: a search that promises to stop at
its limit cannot sit inside a MIP presolve for minutes."""

from __future__ import annotations

import lzma
import threading
import time
from pathlib import Path

from haap_solver.search.backends import new_highs

DATA = Path(__file__).resolve().parent / "data"


def test_highs_stops_near_its_time_limit_where_sparsify_loops(tmp_path: Path) -> None:
    """A stage-assignment model (llama3-8b-h100-a100-l40s, mixed phase, with the incumbent's
    cutoff) on which HiGHS 1.16's presolve rule Sparsify loops without looking at the clock: with
    the options of every HiGHS model of the package (`new_highs`), a 0.5 s limit must end the
    solve within seconds. (With the rule on, presolve ran past 13 minutes.)"""
    model = tmp_path / "model.mps"
    model.write_bytes(lzma.decompress((DATA / "highs-sparsify-hang.mps.xz").read_bytes()))
    h = new_highs(threads=1, seed=0, time_limit_s=0.5)
    h.readModel(str(model))
    assert h.getOptionValue("time_limit")[1] == 0.5  # reading a model keeps the options
    start = time.perf_counter()
    # A daemon thread: if HiGHS loops, the test fails here instead of hanging the suite.
    worker = threading.Thread(target=h.run, daemon=True)
    worker.start()
    worker.join(60.0)
    assert not worker.is_alive(), "HiGHS ignored its 0.5 s time limit for 60 s"
    assert time.perf_counter() - start < 60.0
