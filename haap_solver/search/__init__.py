"""Exact heterogeneity-aware search (formulations/stage-assignment.md)."""

from haap_solver.result import SolveResult
from haap_solver.search.solve import solve
from haap_solver.search.state import SearchState

__all__ = ["SearchState", "SolveResult", "solve"]
