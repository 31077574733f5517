"""The analytical cost model: pure functions of the specs, no solver imports.

Every formula is written down, with its source, in ``docs/cost-model.md``.
"""

from haap_solver.cost.evaluate import CostModel, Evaluation

__all__ = ["CostModel", "Evaluation"]
