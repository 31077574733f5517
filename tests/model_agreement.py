"""Every sub-problem's full model of an instance, and the backends' answers on it compared
(tests/test_model_agreement.py, benchmarks/model_agreement.py)."""

from __future__ import annotations

import math
from collections.abc import Iterator

from haap_solver.instance import Instance
from haap_solver.search.backends import SolveOptions, get_backend
from haap_solver.search.branch_and_bound import BranchAndBound, _time_ub
from haap_solver.search.formulation import SubProblem, build_model, build_slots
from haap_solver.search.lp import LinearProgram

RELATIVE_TOLERANCE = 1e-9
"""As the brute-force agreement: two optima of one model must agree to this."""


def full_models(instance: Instance, *, mixed: bool = False, max_vars: int = 400
                ) -> Iterator[tuple[SubProblem, LinearProgram, float]]:
    """Each sub-problem's full model (formulations/stage-assignment.md Sec. 5) as the search
    builds it, without a cutoff or a stage-time cap, with the floor the search would give a
    backend (the sub-problem's cheap bound); models above `max_vars` variables are skipped."""
    search = BranchAndBound(instance, backend="highs", time_limit_s=1e9, threads=1, seed=0,
                            state=None, max_stages=None, progress=None,
                            seed_with_baselines=False, mixed=mixed)
    state, cache = search.state, search.cache
    for cand in search.candidates:
        sub = cand.sub
        slots = build_slots(instance, cache, sub, state.configs(sub.micro_batch),
                            end_configs=state.end_configs(sub.micro_batch))
        if slots is None:
            continue
        sm = build_model(instance, cache, sub, slots,
                         time_upper_bound_s=_time_ub(slots, sub, instance, cache),
                         load_balance_floor_s=0.0, objective_cutoff_s=None,
                         require_mixed=state.require_mixed)
        if len(sm.lp.vars) > max_vars:
            continue
        floor_s = cand.lower_bound if math.isfinite(cand.lower_bound) else 0.0
        yield sub, sm.lp, max(floor_s, 1e-9)


def model_disagreements(lp: LinearProgram, floor_s: float, backends: list[str],
                        time_limit_s: float) -> list[str]:
    """Where the backends' answers on one model contradict each other: two optima more than
    RELATIVE_TOLERANCE apart, or "optimal" against "infeasible" (an answer cut short by the
    limit claims nothing)."""
    answers = {}
    for name in backends:
        res = get_backend(name)(lp, SolveOptions(time_limit_s=time_limit_s, threads=1, seed=0),
                                floor_s)
        answers[name] = res
    out = []
    names = list(answers)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            ra, rb = answers[a], answers[b]
            if ra.status == rb.status == "optimal":
                assert ra.objective_s is not None and rb.objective_s is not None
                if abs(ra.objective_s - rb.objective_s) > RELATIVE_TOLERANCE * min(
                        ra.objective_s, rb.objective_s):
                    out.append(f"{a} optimal {ra.objective_s!r} s, {b} optimal "
                               f"{rb.objective_s!r} s")
            elif {ra.status, rb.status} == {"optimal", "infeasible"}:
                out.append(f"{a} {ra.status}, {b} {rb.status}")
    return out
