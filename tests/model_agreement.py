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


def full_models(instance: Instance, *, mixed: bool = False, max_vars: int = 400,
                tail_cuts: bool = False) -> Iterator[tuple[SubProblem, LinearProgram, float]]:
    """Each sub-problem's full model (formulations/stage-assignment.md Sec. 5) as the search
    builds it, without a cutoff or a stage-time cap, with the floor the search would give a
    backend (the sub-problem's cheap bound); models above `max_vars` variables are skipped.
    With `tail_cuts`, the tail staircase cuts (R') that the search adds to HiGHS's models."""
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
        if tail_cuts:
            floors = search.floors_by_b[sub.micro_batch]
            # (objective 0: the cuts wherever the staircase has a corner, not only where
            # the search deems them worth it)
            search.tail_cuts(sm, max(state.bottleneck_floor(sub, search.p_cap), floors[0]),
                             math.inf, math.inf, 0.0)
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


def cut_rows(lp: LinearProgram) -> list[int]:
    """Indices of the tail staircase cuts (R') of a model."""
    return [k for k, r in enumerate(lp.rows) if r.name.startswith("tail_staircase")]


def tail_cut_violations(lp: LinearProgram, floor_s: float, time_limit_s: float,
                        weights: tuple[float, ...] = (0.0, 1.0, 10.0)) -> list[str]:
    """Where the cuts (R') of a model `lp` cut a point that the model without them allows: the
    model without the cuts is solved (HiGHS) under its own objective and under `tail + w T`
    for each w of `weights` (points along the staircase, from the least tail up), and each
    optimum must satisfy every cut (1e-9 relative)."""
    cuts = cut_rows(lp)
    if not cuts:
        return []
    plain = LinearProgram(vars=lp.vars, rows=[r for k, r in enumerate(lp.rows) if k not in cuts],
                          objective=dict(lp.objective), objective_constant=lp.objective_constant)
    names = {v.name: i for i, v in enumerate(lp.vars)}
    objectives = [dict(lp.objective)] + [{names["tail"]: 1.0, names["T"]: w} | (
        {} if w else {names["T"]: 1e-6}) for w in weights]
    out = []
    for objective in objectives:
        plain.objective = objective
        res = get_backend("highs")(plain, SolveOptions(time_limit_s=time_limit_s, threads=1,
                                                       seed=0), floor_s)
        if res.status != "optimal" or res.values is None:
            continue
        for k in cuts:
            row = lp.rows[k]
            lhs = sum(c * res.values[i] for i, c in row.coeffs.items())
            if lhs < row.rhs - 1e-9 * abs(row.rhs):
                out.append(f"{row.name}: {lhs!r} < {row.rhs!r} at the optimum of {objective}")
    return out
