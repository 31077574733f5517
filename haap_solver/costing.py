"""The public ``evaluate()`` (``haap_solver.evaluate``): a plan validated by the one validator,
then costed by the cost model. It sits above both, since the validator itself costs memory with
the cost model: the cost model never imports the validator."""

from __future__ import annotations

from haap_solver.cost.efficiency import DEFAULT_CONSTANTS, CostConstants
from haap_solver.cost.evaluate import CostModel, Evaluation
from haap_solver.cost.profile import Profile
from haap_solver.instance import Instance
from haap_solver.plan import Plan
from haap_solver.validate import check_plan


def evaluate(instance: Instance, plan: Plan, *, constants: CostConstants = DEFAULT_CONSTANTS,
             profile: Profile | None = None, validate: bool = True) -> Evaluation:
    """Validate `plan` against `instance` and cost it. Raises PlanValidationError if invalid
    (`validate=False`: cost it as it is)."""
    if validate:
        check_plan(instance, plan)
    return CostModel(instance, constants=constants, profile=profile).evaluate(plan)
