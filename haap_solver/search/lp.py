"""A small backend-independent mixed-integer linear program: build once, solve with any backend.

Rows are tagged *time rows* when their coefficients are seconds (as opposed to counts of GPUs and
layers); the CP-SAT backend scales exactly those to integers (``haap_solver.search.scaling``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Sense = Literal["<=", ">=", "=="]


@dataclass
class Var:
    name: str
    lb: float
    ub: float
    integer: bool
    time: bool = False
    """A continuous variable measured in seconds (scaled for CP-SAT)."""


@dataclass
class Row:
    coeffs: dict[int, float]
    sense: Sense
    rhs: float
    name: str
    time: bool = False
    active_weight: float | None = None
    """For a time row: the largest sum of |value| its non-time variables can reach at once (the
    formulation knows its one-hot structure); None means the sum of their bounds."""
    defines: int | None = None
    """For a time row: the epigraph variable it bounds from below."""
    exclusive: bool = False
    """For a time row: at most one of its time variables other than `defines` is non-zero at
    their least values (each belongs to one configuration of a one-hot choice), so their
    rounding errors do not add up."""


@dataclass
class LinearProgram:
    """min objective . x + objective_constant  subject to rows, bounds and integrality."""

    vars: list[Var] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    objective: dict[int, float] = field(default_factory=dict)
    objective_constant: float = 0.0
    objective_cutoff: float | None = None
    """Only solutions with objective <= this are wanted (a known plan is at least this good)."""

    def var(self, name: str, lb: float, ub: float, *, integer: bool = False,
            time: bool = False) -> int:
        self.vars.append(Var(name, lb, ub, integer, time))
        return len(self.vars) - 1

    def binary(self, name: str) -> int:
        return self.var(name, 0, 1, integer=True)

    def add(self, coeffs: dict[int, float], sense: Sense, rhs: float, name: str, *,
            time: bool = False, active_weight: float | None = None,
            defines: int | None = None, exclusive: bool = False) -> None:
        clean = {k: v for k, v in coeffs.items() if v != 0}
        self.rows.append(Row(clean, sense, rhs, name, time, active_weight, defines, exclusive))

    def value(self, x: list[float]) -> float:
        return self.objective_constant + sum(c * x[i] for i, c in self.objective.items())

    def violations(self, x: list[float], tol: float = 1e-6) -> list[str]:
        """Rows and bounds that `x` breaks (used to check backend answers)."""
        out = []
        for v, xv in zip(self.vars, x, strict=True):
            if xv < v.lb - tol or xv > v.ub + tol:
                out.append(f"bound {v.name}: {xv} not in [{v.lb}, {v.ub}]")
        for r in self.rows:
            lhs = sum(c * x[i] for i, c in r.coeffs.items())
            scale = tol * max(1.0, abs(r.rhs), *(abs(c * x[i]) for i, c in r.coeffs.items()))
            if (r.sense == "<=" and lhs > r.rhs + scale) or (
                    r.sense == ">=" and lhs < r.rhs - scale) or (
                    r.sense == "==" and abs(lhs - r.rhs) > scale):
                out.append(f"row {r.name}: {lhs} {r.sense} {r.rhs}")
        return out
