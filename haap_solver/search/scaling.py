"""The one explicit step that turns the seconds of a LinearProgram into CP-SAT integers.

Every coefficient of a *time row* (seconds) becomes round(c / unit); rows of counts (GPU budgets,
layers, one-hot choices) are left as they are, and time variables become integers in units.

Error bound (tested in tests/test_search_exact.py). Rounding moves each coefficient by at most
1/2 unit.
In a time row the non-time variables can together reach at most `active_weight` (one config is
active per stage: its layer count plus its binary), so the row's right-hand side moves by at most
err_row = active_weight / 2 + 1 units (the right-hand side is rounded outwards), and the
integrality of the epigraph variable adds < 1 unit.
A time variable defined through other time variables (T >= tau_i) inherits their error, scaled by
the coefficients. The objective's error is the weighted sum of its variables' errors:

    |unit * objective_scaled - objective_true| <= bound_s

at every assignment of the non-time variables, so a CP-SAT optimum is within 2 bound_s of the true
optimum of the same model (each side of the comparison may be off by bound_s), and the true cost
of the plan found is recomputed by evaluate().
"""

from __future__ import annotations

from dataclasses import dataclass

from haap_solver.search.lp import LinearProgram


@dataclass(frozen=True)
class Scaling:
    unit_s: float
    """Seconds per integer unit."""
    bound_s: float
    """Proven bound on |objective(scaled) * unit - objective(true)| at any feasible point."""


def error_units(lp: LinearProgram) -> dict[int, float]:
    """Per time variable: how far (in units) rounding can move it."""
    errors: dict[int, float] = {}
    rows = [r for r in lp.rows if r.time]
    for _ in range(len(lp.vars) + 1):  # the definitions form a DAG; iterate to its depth
        changed = False
        for row in rows:
            own = [i for i, c in row.coeffs.items() if lp.vars[i].time]
            if not own or row.defines is None:
                continue
            if row.active_weight is not None:
                weight = row.active_weight
            else:
                weight = sum(max(abs(lp.vars[i].lb), abs(lp.vars[i].ub))
                             for i in row.coeffs if not lp.vars[i].time)
            base = 0.5 * weight + (1.0 if row.rhs else 0.0)
            target = row.defines
            terms = [abs(row.coeffs[i]) * (errors.get(i, 0.0) + 1.0) for i in own if i != target]
            others = (max(terms, default=0.0) if row.exclusive else sum(terms))
            err = (base + others) / abs(row.coeffs[target]) + 1.0
            if err > errors.get(target, 0.0) + 1e-12:
                errors[target] = err
                changed = True
        if not changed:
            break
    return errors


def rounding_bound_units(lp: LinearProgram) -> float:
    errors = error_units(lp)
    return sum(abs(w) * errors.get(i, 1.0) for i, w in lp.objective.items() if lp.vars[i].time)


RELATIVE_ERROR = 1e-11
"""The rounding bound CP-SAT works with, as a share of the objective's floor. A CP-SAT optimum is
optimal for the rounded objective, so its plan's true time may exceed the model's optimum by
twice the bound, and the search closes the sub-problem on it: the bound must stay far below the
1e-9 to which the search's optimum is checked against the brute force. At 1e-6 (until
2026-12-02) CP-SAT said "optimal" at a choice 6e-7 slower than the best of six whose times were
within 1e-6 of each other (tests/test_search_exact.py)."""

MAX_SCALED = 2.0**52
"""The largest value (a time variable's upper bound, a time row's right-hand side or term) the
scaled model may hold: CP-SAT's integers are 64-bit, its LP relaxation works in doubles; where
the floor's share would go beyond, the unit grows (and the bound with it)."""


MAX_EXPRESSION = 2.0**46
"""The largest value a whole linear expression of the scaled model (a time row's terms at their
bounds, the objective at its variables' bounds) may reach. CP-SAT's integer propagation is
exact, but its LP relaxation and presolve work in doubles: on the model of a 7-stage sub-problem
of llama3-70b-h100x32-a100x32 (128 micro-batches, so the bottleneck weighs 127 in the objective)
the unit of RELATIVE_ERROR put the objective near 4e16, past the 2^53 a double holds exactly,
and CP-SAT answered "infeasible" with a plan 0.6% inside the cutoff (and, at a floor a little
higher, "optimal" at that plan's 1.2% slower neighbour). With the objective near 4e14 it solved
the model right; 2^46 (7e13) keeps a margin below that."""


def _reach(lp: LinearProgram, i: int, c: float) -> float:
    """The largest absolute value the term c x_i takes with x_i within its bounds."""
    v = lp.vars[i]
    return abs(c) * max(abs(v.lb), abs(v.ub))


def _expression_magnitude(lp: LinearProgram) -> float:
    """The largest absolute value, in seconds, that a time row's terms (rhs included) or the
    objective can reach with every variable at its bound: what the scaled model's linear
    expressions reach, times the unit. inf where a time variable has no upper bound."""
    largest = sum(_reach(lp, i, w) for i, w in lp.objective.items())
    for r in lp.rows:
        if r.time:
            largest = max(largest,
                          abs(r.rhs) + sum(_reach(lp, i, c) for i, c in r.coeffs.items()))
    return largest


def choose_scaling(lp: LinearProgram, *, objective_floor_s: float,
                   relative_error: float = RELATIVE_ERROR) -> Scaling:
    """Pick the unit so that the proven rounding bound is `relative_error` x the objective floor,
    or coarser where the scaled model's values would pass MAX_SCALED or its expressions
    MAX_EXPRESSION."""
    units = rounding_bound_units(lp)
    unit = objective_floor_s * relative_error / max(units, 1.0)
    largest = max((abs(v.ub) for v in lp.vars if v.time and abs(v.ub) < float("inf")),
                  default=0.0)
    for r in lp.rows:
        if r.time:
            largest = max(largest, abs(r.rhs), *(
                _reach(lp, i, c) for i, c in r.coeffs.items() if not lp.vars[i].time))
    unit = max(unit, largest / MAX_SCALED)
    expression = _expression_magnitude(lp)
    if expression < float("inf"):
        unit = max(unit, expression / MAX_EXPRESSION)
    return Scaling(unit_s=unit, bound_s=units * unit)
