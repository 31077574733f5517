"""Baselines the exact search is compared with; each returns a SolveResult like ``solve``."""

from haap_solver.baselines.bruteforce import bruteforce
from haap_solver.baselines.metis import metis
from haap_solver.baselines.proportional import proportional
from haap_solver.baselines.uniform import uniform

__all__ = ["bruteforce", "metis", "proportional", "uniform"]
