"""Every planning method behind one interface, so that all are compared alike.

``METHODS[name](instance, *, time_limit_s, threads, seed, cost_model=None) -> SolveResult``.
"haap" is the exact search with its defaults (backend auto: CP-SAT for small models, HiGHS for
large ones; mixed-type stages included), "haap-single" the same with single-type stages only,
"haap-cpsat" with CP-SAT only, "haap-1pct" the default search stopped once its plan is
proven within 1% of the optimum (``relative_gap=0.01``); the others
are the baselines of ``haap_solver.baselines``. Pass one CostModel per instance to share its caches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from haap_solver.cost.evaluate import CostModel
from haap_solver.instance import Instance
from haap_solver.result import SolveResult
from haap_solver.search.state import SearchState

Method = Callable[..., SolveResult]


def _solver(backend: str, name: str, *, mixed: bool, relative_gap: float = 0.0) -> Method:
    def run(instance: Instance, *, time_limit_s: float = 60.0, threads: int = 1, seed: int = 0,
            cost_model: CostModel | None = None, **kwargs: Any) -> SolveResult:
        from haap_solver.search.solve import solve

        state = SearchState(instance, cost_model) if cost_model is not None else None
        kwargs.setdefault("relative_gap", relative_gap)
        result = solve(instance, backend=backend, time_limit_s=time_limit_s, threads=threads,
                       seed=seed, state=state, mixed=mixed, **kwargs)
        result.method = name
        return result

    run.__name__ = name.replace("-", "_")
    run.__doc__ = f"The exact search, {backend} backend, " + (
        "mixed-type stages included" if mixed else "single-type stages only") + (
        f", stopped once proven within {relative_gap:.0%} of the optimum." if relative_gap
        else ".")
    return run


def _target(target: str) -> Method:
    """The exact search over what engine `target` can run (haap_solver/targets.py)."""

    def run(instance: Instance, *, time_limit_s: float = 60.0, threads: int = 1, seed: int = 0,
            cost_model: CostModel | None = None, **kwargs: Any) -> SolveResult:
        from haap_solver.targets import solve_for_target

        return solve_for_target(instance, target, time_limit_s=time_limit_s, seed=seed)

    run.__name__ = f"haap_{target}"
    run.__doc__ = f"The exact search restricted to what {target} can run (docs/targets.md)."
    return run


def _lazy(module: str, fn: str) -> Method:
    def run(instance: Instance, **kwargs: Any) -> SolveResult:
        import importlib

        from haap_solver.training import check_searchable

        check_searchable(instance.training)  # the baselines plan 1F1B and GPipe only

        result: SolveResult = getattr(importlib.import_module(module), fn)(instance, **kwargs)
        return result

    run.__name__ = fn
    return run


METHODS: dict[str, Method] = {
    "haap": _solver("auto", "haap", mixed=True),
    "haap-single": _solver("auto", "haap-single", mixed=False),
    "haap-cpsat": _solver("cpsat", "haap-cpsat", mixed=True),
    "haap-1pct": _solver("auto", "haap-1pct", mixed=True, relative_gap=0.01),
    "uniform": _lazy("haap_solver.baselines.uniform", "uniform"),
    "proportional": _lazy("haap_solver.baselines.proportional", "proportional"),
    "metis": _lazy("haap_solver.baselines.metis", "metis"),
    "balanced": _lazy("haap_solver.baselines.balanced", "balanced"),
    "bruteforce": _lazy("haap_solver.baselines.bruteforce", "bruteforce"),
    # The exact search over each engine target's space: `haap bench --targets` (megatron and
    # deepspeed by default) runs them beside haap for the price of each target (docs/targets.md).
    **{f"haap-{t}": _target(t) for t in ("megatron", "deepspeed", "torchtitan", "flagscale")},
}
"""Method name -> callable(instance, *, time_limit_s, threads, seed, cost_model=None)."""


def get_method(name: str) -> Method:
    from haap_solver.errors import HaapError

    if name not in METHODS:
        raise HaapError(f"unknown method {name!r}; available: {', '.join(METHODS)}")
    return METHODS[name]
