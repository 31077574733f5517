"""Trace a `haap solve` in both of its processes: models, strengthenings and improved plans.

Not part of the package: a measuring aid. Python imports `sitecustomize` at start-up from its
path, and the search over plans with a mixed stage runs in a spawned process, so patching from
the command line would miss it. Put this folder first on PYTHONPATH and set HAAP_TRACE to a
time origin (seconds since the epoch); every line goes to stderr as `[seconds] PROCESS what`:

    HAAP_TRACE=$(date +%s.%N) PYTHONPATH=benchmarks/trace_hooks haap solve INSTANCE --threads 2

HAAP_TUNE="NAME=value;NAME=value" overrides constants of `haap_solver.search.tuning` in both
processes (values are Python literals), which is how a tuning note's A/B runs were made:

    HAAP_TUNE="LEVEL_STEP=0.05" PYTHONPATH=benchmarks/trace_hooks haap solve INSTANCE
"""

from __future__ import annotations

import ast
import importlib.abc
import importlib.machinery
import os
import sys
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any


def _after_import(name: str, then: Callable[[ModuleType], None]) -> None:
    """Run `then(module)` once module `name` has been executed (a one-shot meta-path hook)."""

    class Hook(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname: str, path: Sequence[str] | None,
                      target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
            if fullname != name:
                return None
            sys.meta_path.remove(self)
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            if spec is None or spec.loader is None:
                return spec
            loader: Any = spec.loader
            execute = loader.exec_module

            def exec_module(module: ModuleType) -> None:
                execute(module)
                then(module)

            loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, Hook())


def _tune(module: ModuleType) -> None:
    for item in filter(None, os.environ["HAAP_TUNE"].split(";")):
        key, value = item.split("=", 1)
        setattr(module, key.strip(), ast.literal_eval(value.strip()))


def _trace(module: ModuleType) -> None:
    origin = float(os.environ["HAAP_TRACE"])
    bnb = module.BranchAndBound

    def say(search: Any, text: str) -> None:
        phase = "MIXED" if search.state.mixed else "SINGLE"
        print(f"[{time.time() - origin:7.2f}] {phase} {text}", file=sys.stderr, flush=True)

    attempt, strengthen, improved = bnb.attempt, bnb.strengthen, bnb.improved

    def traced_attempt(self: Any, sub: Any, *args: Any, **kwargs: Any) -> Any:
        start, cuts = time.perf_counter(), self.tail_cut_rows
        res = attempt(self, sub, *args, **kwargs)
        say(self, f"model p={sub.num_stages} b={sub.micro_batch} {sub.schedule} "
                  f"restricted={kwargs.get('restricted', False)} "
                  f"{time.perf_counter() - start:.2f}s {getattr(res, 'status', res)} "
                  f"cuts+{self.tail_cut_rows - cuts} threshold {self.threshold():.4f}"
                  f" by {self.unproven_by.get(sub, '-')} bound {getattr(res, 'bound_s', '-')}")
        return res

    def traced_strengthen(self: Any, cand: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        res = strengthen(self, cand, *args, **kwargs)
        say(self, f"strengthen p={cand.sub.num_stages} b={cand.sub.micro_batch} "
                  f"{time.perf_counter() - start:.2f}s bound {cand.lower_bound:.4f} "
                  f"threshold {self.threshold():.4f}")
        return res

    def traced_improved(self: Any, plan: Any, ev: Any) -> Any:
        say(self, f"improved {ev.iteration_time_s:.4f} p={len(plan.stages)} "
                  f"b={plan.micro_batch_size} {plan.note[:60]}")
        return improved(self, plan, ev)

    bnb.attempt, bnb.strengthen, bnb.improved = traced_attempt, traced_strengthen, traced_improved


def _trace_helper(module: ModuleType) -> None:
    """The second process's bounds on the first's single-type sub-problems (HELPER lines)."""
    origin = float(os.environ["HAAP_TRACE"])
    strong = module.strong_lower_bound

    def traced_strong(state: Any, sub: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        res = strong(state, sub, *args, **kwargs)
        if not state.mixed:
            print(f"[{time.time() - origin:7.2f}] HELPER strengthen p={sub.num_stages} "
                  f"b={sub.micro_batch} {time.perf_counter() - start:.2f}s bound {res:.4f}",
                  file=sys.stderr, flush=True)
        return res

    module.strong_lower_bound = traced_strong


if os.environ.get("HAAP_TUNE"):
    _after_import("haap_solver.search.tuning", _tune)
if os.environ.get("HAAP_TRACE"):
    _after_import("haap_solver.search.branch_and_bound", _trace)
    _after_import("haap_solver.search.second_process", _trace_helper)
