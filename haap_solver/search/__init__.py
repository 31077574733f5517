"""Exact heterogeneity-aware search (formulations/stage-assignment.md)."""

from haap_solver.search.solve import SearchState, SolveResult, solve

__all__ = ["SearchState", "SolveResult", "solve"]
