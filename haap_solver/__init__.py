"""haap_solver: exact heterogeneity-aware parallelism planning for LLM training."""

from haap_solver.cluster import Cluster, NodeGroup
from haap_solver.cost import CostModel, Evaluation
from haap_solver.costing import evaluate
from haap_solver.devices import DEVICE_PRESETS, DeviceType, device_preset
from haap_solver.errors import HaapError, InfeasibleError, InputError, PlanValidationError
from haap_solver.instance import (
    Expected,
    Instance,
    instance_from_dict,
    load_instance,
    make_instance,
)
from haap_solver.model import PRESETS as MODEL_PRESETS
from haap_solver.model import ModelSpec, model_from_hf_config, model_preset
from haap_solver.objective import Objective, Rental, rental
from haap_solver.plan import Placement, Plan, ReplicaGroup, Stage, load_plan, plan_from_dict
from haap_solver.planner import Planner, Replanned
from haap_solver.search import SearchState, SolveResult, solve
from haap_solver.search.objectives import ObjectiveResult
from haap_solver.stragglers import Straggler
from haap_solver.training import TrainingSpec
from haap_solver.validate import check_plan, plan_violations

__version__ = "0.1.0"

__all__ = [
    "DEVICE_PRESETS", "MODEL_PRESETS", "Cluster", "CostModel", "DeviceType", "Evaluation",
    "Expected", "HaapError", "InfeasibleError", "InputError", "Instance", "ModelSpec", "NodeGroup",
    "Objective", "ObjectiveResult", "Placement", "Plan", "PlanValidationError", "Planner",
    "Rental", "Replanned", "ReplicaGroup", "SearchState", "SolveResult", "Stage", "Straggler",
    "TrainingSpec", "check_plan", "device_preset", "evaluate", "instance_from_dict",
    "load_instance", "load_plan", "make_instance", "model_from_hf_config", "model_preset",
    "plan_from_dict", "plan_violations", "rental", "solve",
]
