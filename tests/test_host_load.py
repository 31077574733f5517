"""The benchmark's record of what other processes took from the machine (report.host_load)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from haap_solver.report.host_load import BUSY_SHARE_WARN, HostLoad

# Burns 0.4 s of its own CPU, says so, then waits to be killed (unreaped until then, so its
# CPU time is not yet counted among the parent's children).
BUSY_CHILD = """
import sys, time
while time.process_time() < 0.4:
    pass
print("done", flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="needs /proc/stat (Linux)")
def test_another_process_cpu_is_counted_and_this_one_is_not() -> None:
    load = HostLoad.start()
    child = subprocess.Popen([sys.executable, "-c", BUSY_CHILD], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "done"
        got = load.read()
    finally:
        child.kill()
        child.wait()
    assert got is not None
    # (/proc/stat counts in clock ticks, 10 ms: the 0.4 s shows as at least 0.3 s)
    assert got["other_cpu_s"] >= 0.3
    assert 0.0 < got["other_share"] <= 1.0 + 1e-9


def test_bench_report_warns_when_the_machine_was_shared(tmp_path: Path) -> None:
    from haap_solver.report.bench import bench_report

    def report(share: float) -> str:
        return bench_report([], [], methods=["haap"], limit=30, quick=False, total_s=100.0,
                            plots={}, output=tmp_path / "benchmarks.md",
                            host_load={"other_cpu_s": share * 200.0, "other_share": share})

    busy, idle = report(BUSY_SHARE_WARN * 4), report(BUSY_SHARE_WARN / 4)
    assert "| other processes during the run | 40 CPU s, 20.0% of the machine |" in busy
    assert "gaps at the time limit wider" in busy
    assert "| other processes during the run |" in idle
    assert "gaps at the time limit wider" not in idle
