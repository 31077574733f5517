"""How much of the machine other processes took while a benchmark ran.

A search stopped by a time limit proves less on a busier machine, and on a small virtual machine
even a low-priority job on the other core slows the benchmark (the cores may be hyperthreads or
share the host with it): a run of `haap bench` beside two nice-19 jobs on 2 vCPUs ran its
baselines 1.3-2.2x slower than a run alone, and a one-thread search on
gpt3-2.7b-a100x8-v100x8-4gpu ended at a 37.7% gap against 22.8% alone (2026-12-03). So the
benchmark records the CPU time the rest of the machine used during the run, and the report
says when its timings are pessimistic. Linux only (/proc/stat); elsewhere it reports nothing.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

BUSY_SHARE_WARN = 0.05
"""Share of the machine (all cores over the run's wall time) used by other processes above
which the report warns that its search times and gaps at the limit are pessimistic."""


def _machine_busy_s() -> float | None:
    """CPU seconds all cores have spent busy since boot (None where /proc/stat is absent)."""
    try:
        first = Path("/proc/stat").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if first[0] != "cpu":
        return None
    ticks = [int(x) for x in first[1:]]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
    # (guest and guest_nice are already inside user and nice)
    busy = sum(ticks[:8]) - idle
    return busy / os.sysconf("SC_CLK_TCK")


def _own_cpu_s() -> float:
    """CPU seconds of this process and of its children that have been waited for."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


@dataclass
class HostLoad:
    """Started before a run, read after it: the CPU time other processes took meanwhile."""

    wall0: float
    busy0: float | None
    own0: float

    @classmethod
    def start(cls) -> HostLoad:
        return cls(wall0=time.perf_counter(), busy0=_machine_busy_s(), own0=_own_cpu_s())

    def read(self) -> dict[str, float] | None:
        """`other_cpu_s` (CPU seconds of other processes) and `other_share` (of all cores over
        the wall time), or None where the machine's busy time cannot be read."""
        busy = _machine_busy_s()
        if busy is None or self.busy0 is None:
            return None
        wall = time.perf_counter() - self.wall0
        other = max(0.0, (busy - self.busy0) - (_own_cpu_s() - self.own0))
        cores = os.cpu_count() or 1
        # (clock ticks of 10 ms can put a short run's share a little above 1)
        return {"other_cpu_s": other, "other_share": min(1.0, other / max(wall * cores, 1e-9))}
