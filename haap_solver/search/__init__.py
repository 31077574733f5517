"""Exact heterogeneity-aware search (formulations/stage-assignment.md)."""

from haap_solver.result import SolveResult
from haap_solver.search.solve import SearchState, solve

__all__ = ["SearchState", "SolveResult", "solve"]
