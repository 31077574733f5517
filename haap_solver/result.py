"""The result of a search or a baseline: a plan with its proof (status, bound, gap) and what the
method did to find it. Its own module, below both the search and the baselines, so that neither
imports the other for it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from haap_solver.cost.evaluate import Evaluation
from haap_solver.plan import Plan


@dataclass
class SolveResult:
    """A plan with its proof: status, bound, gap and what the search did."""

    instance: str
    method: str
    plan: Plan | None
    evaluation: Evaluation | None
    status: str
    """optimal (proven within `gap`), feasible (time limit; `gap` says how far), infeasible;
    with no plan: unknown (time limit), cutoff (no plan below `solve(cutoff_s=)`)."""
    iteration_time_s: float
    """evaluate()'s iteration time of `plan` (inf when infeasible)."""
    best_bound_s: float
    """Proven lower bound on the optimal iteration time over the search space."""
    gap: float
    """(iteration_time - bound) / iteration_time."""
    wall_s: float
    subproblems: int = 0
    """Sub-problems searched (formulations Sec. 1); each ends closed by a bound
    (`pruned_by_bound`), closed by its model (`closed_by_model`) or open (`left_open`). With two
    phases (single-type stages, then plans with a mixed-type stage), the last phase's; each
    phase's are in `search_space` ("subproblem_fates", "single_type_phase")."""
    solved: int = 0
    """Models handed to a solver backend, every phase's (warm starts and dives included; a
    sub-problem may need several, and many need none)."""
    pruned_by_bound: int = 0
    """Sub-problems closed by a lower bound (cheap or strengthened) reaching the incumbent."""
    closed_by_model: int = 0
    """Sub-problems closed by their model's answer (optimal, or no plan below the incumbent)."""
    left_open: int = 0
    """Sub-problems neither closed by a bound nor by a model when the search stopped."""
    pruned_by_memory: int = 0
    """Sub-problems excluded by memory before the search (fewer stages than the model needs to
    fit, or a micro-batch no stage fits): not among `subproblems`."""
    search_space: dict[str, Any] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)
    compute_bound_s: float = 0.0
    """Total FLOPs over the aggregate effective FLOP/s of the cluster (no bubble, no comm)."""
    options: dict[str, Any] = field(default_factory=dict)
    plans_costed: int = 0
    """Plans (or stage candidates) the method costed with the cost model."""
    model_mismatch_s: float = 0.0
    """Largest |model objective - evaluate()| seen (the scaling bound for CP-SAT; 0 for MILP)."""
    message: str = ""

    @property
    def ratio_to_compute_bound(self) -> float:
        return self.iteration_time_s / self.compute_bound_s if self.compute_bound_s else math.inf

    def to_dict(self) -> dict[str, Any]:
        return {
            "instance": self.instance, "method": self.method, "status": self.status,
            "iteration_time_s": self.iteration_time_s, "best_bound_s": self.best_bound_s,
            "gap": self.gap, "wall_s": self.wall_s, "subproblems": self.subproblems,
            "solved": self.solved, "pruned_by_bound": self.pruned_by_bound,
            "pruned_by_memory": self.pruned_by_memory, "closed_by_model": self.closed_by_model,
            "left_open": self.left_open, "search_space": self.search_space,
            "cache": self.cache, "compute_bound_s": self.compute_bound_s,
            "ratio_to_compute_bound": self.ratio_to_compute_bound, "options": self.options,
            "model_mismatch_s": self.model_mismatch_s, "message": self.message,
            "plans_costed": self.plans_costed,
            "tokens_per_s": self.evaluation.tokens_per_s if self.evaluation else None,
            "mfu": self.evaluation.mfu if self.evaluation else None,
            "plan": self.plan.to_dict() if self.plan else None,
        }
