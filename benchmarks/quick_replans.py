"""Short re-plans along a shipped trace, each taken apart: where a 2 s re-plan's time goes.

    python benchmarks/quick_replans.py fleet-1024 [--limit 2] [--first 30] [--runs 1]

A Planner solves the trace's instance at `--first` seconds, then applies each event and
re-plans with `--limit` (as the short track of `haap bench`'s re-plan section). Per event: the
wall and CPU seconds of `Planner.solve`, the limit its search got, the wall of the repairs, the
growth and the search, the cyclic collector's collections during the re-plan (generation,
seconds; those of 5 ms or more) and the plan's iteration time. Run it alone on the host: it
measures wall time. Written 2026-12-03 to find what still ran past 2 s (planner.py's docstring:
the collector's work and the last model's overrun).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import haap_solver.planner as planner_module
from haap_solver.changes import changes_from_toml
from haap_solver.instance import load_instance
from haap_solver.planner import Planner
from haap_solver.report.replan_bench import _timed

ROOT = Path(__file__).resolve().parent.parent


class StepClock:
    """Wall seconds of named steps and of the collector's collections, since the last reset."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, float]] = []
        self.collections: list[tuple[int, float]] = []
        self._started = 0.0

    def reset(self) -> None:
        self.steps.clear()
        self.collections.clear()

    def timed(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn`, its wall seconds recorded under `name` at each call."""
        def call(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.steps.append((name, time.perf_counter() - start))
        return call

    def on_collection(self, phase: str, info: dict[str, int]) -> None:
        """A gc.callbacks hook."""
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.collections.append((info["generation"], time.perf_counter() - self._started))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", help="a trace of instances/replan/ (fleet-1024, spot-a100-v100)")
    parser.add_argument("--limit", type=float, default=2.0, help="each re-plan's limit, s")
    parser.add_argument("--first", type=float, default=30.0, help="the first solve's limit, s")
    parser.add_argument("--runs", type=int, default=1, help="runs of the whole trace")
    args = parser.parse_args()
    folder = ROOT / "instances/replan"
    clock = StepClock()
    planner_module.solve = clock.timed("search", planner_module.solve)  # type: ignore[assignment]
    planner_module.grown_plan = clock.timed("growth", planner_module.grown_plan)
    Planner._fastest_repair = clock.timed("repair", Planner._fastest_repair)  # type: ignore[method-assign]
    gc.callbacks.append(clock.on_collection)
    walls: list[float] = []
    for _ in range(args.runs):
        planner = Planner(load_instance(folder / f"{args.trace}.toml"), time_limit_s=args.limit)
        planner.solve(time_limit_s=args.first)
        for change, label in changes_from_toml(folder / f"{args.trace}.events.toml"):
            planner.apply(change)
            clock.reset()
            out, wall, cpu = _timed(planner.solve)
            walls.append(wall)
            steps = " ".join(f"{name} {s:.3f}" for name, s in clock.steps)
            collected = " ".join(f"gen{g} {s:.3f}" for g, s in clock.collections if s >= 0.005)
            print(f"{label[:42]:42s} wall {wall:.3f} cpu {cpu:.3f} search limit "
                  f"{out.search_limit_s:.3f} | {steps} | gc {collected or '-'} | plan "
                  f"{out.result.iteration_time_s:.4f} s", flush=True)
    print(f"{len(walls)} re-plans: wall {min(walls):.3f}-{max(walls):.3f} s, "
          f"{sum(w > args.limit for w in walls)} above {args.limit:g} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
