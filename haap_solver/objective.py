"""What a plan is chosen for: iteration time, or what it costs to rent the GPUs it runs on.

The instance's optional ``[objective]`` table (`Objective`) and the prices and caps of its node
groups (``price_per_gpu_hour``, ``max_gpus``). A cloud bills whole machines, so a plan pays for
every node it touches, all of its GPUs, for the iteration's time (`rental`): its cost per
iteration is T x sum over the touched nodes of gpus_per_node x price / 3600. GPUs of untouched
nodes are not rented. The search over these objectives is haap_solver.search.objectives
(formulations/objectives.md); this module only defines and prices.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Literal

from haap_solver import limits
from haap_solver._fields import Range, check_ranges
from haap_solver.errors import InputError

if TYPE_CHECKING:
    from haap_solver.cluster import Cluster
    from haap_solver.instance import Instance
    from haap_solver.plan import Plan

Goal = Literal["time", "cost", "throughput_per_dollar"]
GOALS: tuple[Goal, ...] = ("time", "cost", "throughput_per_dollar")


@dataclass(frozen=True, kw_only=True)
class Objective:
    """What the search minimises, and the limits a plan must meet (``[objective]``)."""

    optimize: Goal = "time"
    """"time": the least iteration time. "cost": the least price of one iteration (the GPUs of
    every node the plan touches, for the iteration's time), which may leave nodes unrented.
    "throughput_per_dollar": the most tokens per unit of currency, the same plan as "cost"
    (tokens per iteration are fixed by the instance), reported as tokens per unit."""
    max_cost_per_iteration: Annotated[float | None,
                                      Range(0, limits.MAX_COST_PER_ITERATION,
                                            min_exclusive=True)] = None
    """Most one iteration may cost, in the currency of the node groups' price_per_gpu_hour."""
    min_tokens_per_s: Annotated[float | None,
                                Range(0, limits.MAX_TOKENS_PER_S, min_exclusive=True)] = None
    """Least training throughput, tokens per second (an upper limit on the iteration time)."""

    def __post_init__(self) -> None:
        check_ranges(self)

    @property
    def prices_needed(self) -> bool:
        return self.optimize != "time" or self.max_cost_per_iteration is not None


@dataclass(frozen=True, kw_only=True)
class Rental:
    """The nodes a plan touches, per node group, and what they cost."""

    nodes: dict[str, int]
    """Nodes rented (touched by the plan) per node group, every group listed."""
    idle_nodes: dict[str, int]
    """Nodes not rented per node group (every group listed)."""
    gpus: dict[str, int]
    """GPUs rented per node group (whole nodes)."""
    idle_gpus: dict[str, int]
    """GPUs not rented per node group."""
    price_per_hour: float | None
    """Price of the rented nodes for one hour (None: a rented group has no price)."""

    def cost_of(self, seconds: float) -> float | None:
        """What renting these nodes for `seconds` costs (None without prices)."""
        return None if self.price_per_hour is None else self.price_per_hour * seconds / 3600.0

    def to_dict(self) -> dict[str, object]:
        return {"nodes": self.nodes, "gpus": self.gpus, "idle_nodes": self.idle_nodes,
                "idle_gpus": self.idle_gpus, "price_per_hour": self.price_per_hour}


def rental(instance: Instance, plan: Plan) -> Rental:
    """The nodes `plan` touches on `instance`'s cluster and their hourly price: a node is
    touched when a replica of any stage is placed on it (the plan's placements)."""
    touched: dict[str, set[int]] = {g.name: set() for g in instance.cluster.node_groups}
    for stage in plan.stages:
        for group in stage.replicas:
            touched[group.node_group].update(p.node for p in group.placement)
    nodes, idle, gpus, idle_gpus = {}, {}, {}, {}
    price: float | None = 0.0
    for g in instance.cluster.node_groups:
        n = len(touched[g.name])
        nodes[g.name], idle[g.name] = n, g.num_nodes - n
        gpus[g.name], idle_gpus[g.name] = n * g.gpus_per_node, (g.num_nodes - n) * g.gpus_per_node
        if n and price is not None:
            price = None if g.price_per_gpu_hour is None else \
                price + n * g.gpus_per_node * g.price_per_gpu_hour
    return Rental(nodes=nodes, idle_nodes=idle, gpus=gpus, idle_gpus=idle_gpus,
                  price_per_hour=price)


def check_prices(objective: Objective, cluster: Cluster) -> None:
    """An InputError naming every node group without a price, where the objective needs one.
    The instance loader calls it before a straggler splits node groups too (a split group keeps
    its price), so that an error's indices are the file's."""
    if not objective.prices_needed:
        return
    missing = [f"cluster.node_groups[{i}] ({g.name})"
               for i, g in enumerate(cluster.node_groups)
               if g.price_per_gpu_hour is None]
    if missing:
        why = (f"optimize = {objective.optimize!r}" if objective.optimize != "time"
               else "max_cost_per_iteration")
        raise InputError(f"{why} needs price_per_gpu_hour on every node group; missing on "
                         + ", ".join(missing),
                         field="objective.optimize" if objective.optimize != "time"
                         else "objective.max_cost_per_iteration")


__all__ = ["GOALS", "Goal", "Objective", "Rental", "check_prices", "rental"]
