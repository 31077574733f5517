"""The exact search for objectives beyond time: the cheapest plan, rented by the node.

A plan pays for every node it touches (haap_solver.objective). Its objective (iteration time,
or cost per iteration = T x price of the touched nodes) only grows with its time for a fixed set
of touched nodes, and with the set for a fixed time. So (formulations/objectives.md, Sec. 1):

    min over plans of f(plan) = min over sub-clusters S of f(T*(S), S),

S a number of nodes per node group (identical nodes are interchangeable), T*(S) the least
iteration time of a plan on S alone: the time-optimal search (`solve`) on the instance cut down
to S. This module runs that outer loop: every S allowed by the groups' ``max_gpus``, best lower
bound first, each closed by a bound where it can be and searched otherwise:

* T*(S) >= L B / sum_g G_g(S) rho*_g (the search's any_plan_floor on S, with its per-GPU peak
  rates rho*_g, which do not depend on node counts), and T*(S) >= T*(S') for every S' that
  contains S (a plan on S is one on S'), the searched S' giving their proven bounds;
* S is closed once its bound on f reaches the best plan's f (less the relative gap), or its
  bound on T breaks a limit (min_tokens_per_s, max_cost_per_iteration).

The result is optimal when every S is searched to proof or closed by a bound; otherwise feasible
with the least bound of the open ones. Every plan comes from `solve` (validated there), and is
validated and costed again on the whole instance here: its reported time is evaluate()'s there.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from haap_solver.cost.evaluate import CostModel
from haap_solver.errors import HaapError, InfeasibleError
from haap_solver.instance import Instance
from haap_solver.objective import Objective, Rental, rental
from haap_solver.result import SolveResult
from haap_solver.search.state import SearchState
from haap_solver.search.subproblem_bounds import peak_layer_rates
from haap_solver.validate import check_plan

MAX_SUBCLUSTERS = 1_000_000
"""Most sub-clusters (node counts per group) the cost objectives enumerate; cap a group's
max_gpus to search a larger cluster."""


@dataclass
class ObjectiveResult(SolveResult):
    """A `SolveResult` with what the plan rents and costs. For the cost objectives `gap` is the
    relative gap of the cost per iteration, and `best_bound_s` a lower bound on the iteration
    time of every plan that meets the limits."""

    objective: str = "time"
    """What was minimised (Objective.optimize)."""
    rental: Rental | None = None
    """Nodes and GPUs the plan rents, and those it leaves idle, per node group."""
    cost_per_iteration: float | None = None
    """Price of one iteration on the rented nodes (None without prices)."""
    tokens_per_cost_unit: float | None = None
    """Tokens trained per unit of currency (None without prices)."""
    cost_bound: float | None = None
    """Proven lower bound on the cost per iteration of every plan that meets the limits (cost
    objectives)."""
    subclusters: dict[str, int] = field(default_factory=dict)
    """Sub-clusters (node counts per group): `total`, `searched` (time searches run), and each
    sub-cluster once in: `proven` (searched to proof), `without_plan` (searched: nothing fits),
    `closed_by_limit` (its time bound breaks a limit), `closed_by_bound` (its bound reaches the
    best plan's), `open`."""

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["objective"] = {
            "optimize": self.objective, "cost_per_iteration": self.cost_per_iteration,
            "tokens_per_cost_unit": self.tokens_per_cost_unit, "cost_bound": self.cost_bound,
            "rental": self.rental.to_dict() if self.rental else None,
            "subclusters": self.subclusters}
        return out


def applies(instance: Instance) -> bool:
    """Whether `instance` asks for more than the plain time search: another objective, a limit,
    a cap on a group's GPUs, or prices to report."""
    return (instance.objective != Objective()
            or any(g.max_gpus is not None or g.price_per_gpu_hour is not None
                   for g in instance.cluster.node_groups))


def sub_instance(instance: Instance, nodes: tuple[int, ...]) -> Instance:
    """`instance` cut down to `nodes[i]` nodes of its i-th group (groups at 0 dropped), with the
    plain time objective and no prices or caps: the time search on S. Same name and group names,
    so that its plans are plans of `instance` (first nodes of each group), costed as there: a
    group cut down to one node of several keeps its pipeline sends on the network
    (`Cluster.cut_from_several_nodes`; the cost model puts them on NVLink/PCIe only in a group of
    one node, so the search on S would otherwise optimise, and bound, another cost than the
    plan's on `instance`: capped to one node of two, it said "optimal" 24x slower than the
    best plan, with that time as its bound)."""
    cut = set(instance.cluster.cut_from_several_nodes)
    groups = []
    for g, n in zip(instance.cluster.node_groups, nodes, strict=True):
        if n:
            groups.append(replace(g, num_nodes=n, max_gpus=None, price_per_gpu_hour=None))
            if n == 1 < g.num_nodes:
                cut.add(g.name)
    return replace(instance, cluster=replace(instance.cluster, node_groups=tuple(groups),
                                             cut_from_several_nodes=frozenset(cut)),
                   objective=Objective(), expected=None)


@dataclass
class _Sub:
    """One sub-cluster and what is known of it."""

    nodes: tuple[int, ...]
    gpus: int
    price_per_hour: float
    time_bound_s: float
    """Proven lower bound on T*(S)."""
    state: str = "new"
    """new, searched (proven), open (searched, not proven), infeasible (no plan), limit, bound."""


def solve_objective(instance: Instance, *, solve: Callable[..., SolveResult],
                    time_limit_s: float, relative_gap: float = 0.0,
                    **options: Any) -> ObjectiveResult:
    """The plan that minimises `instance.objective` within its limits and caps, with its proof
    (module docstring). `solve` is the time search (search.solve.solve), given the remaining
    time each call; `options` go to it (backend, threads, seed, ...)."""
    start = time.perf_counter()
    deadline = start + time_limit_s
    goal = instance.objective
    groups = instance.cluster.node_groups
    caps = tuple(g.max_nodes for g in groups)
    by_cost = goal.optimize != "time"
    prices = [g.price_per_gpu_hour for g in groups]
    priced = all(p is not None for p in prices)
    tokens = instance.tokens_per_iteration
    t_max = tokens / goal.min_tokens_per_s if goal.min_tokens_per_s else math.inf
    c_max = goal.max_cost_per_iteration if goal.max_cost_per_iteration else math.inf

    def price_of(nodes: tuple[int, ...]) -> float:
        if not priced:
            return 0.0
        return sum(n * g.gpus_per_node * (p or 0.0) for n, g, p in zip(nodes, groups, prices,
                                                                       strict=True))

    def value(t: float, price_per_hour: float) -> float:
        return t * price_per_hour / 3600.0 if by_cost else t

    def within_limits(t: float, price_per_hour: float) -> bool:
        return t <= t_max and t * price_per_hour / 3600.0 <= c_max

    # The sub-clusters. With time as the objective and no cost limit the largest allowed one
    # is the answer (T* only falls as nodes are added; a time limit is met there or nowhere).
    # T* is over the whole instance's space; the search on a smaller cluster explores a wider
    # one (formulations/objectives.md Sec. 2, *Which space*), so its answer is at least as good.
    if by_cost or math.isfinite(c_max):
        count = math.prod(c + 1 for c in caps) - 1
        if count > MAX_SUBCLUSTERS:
            raise HaapError(f"{instance.name}: {count:,} sub-clusters (nodes per group) to "
                            f"search, more than {MAX_SUBCLUSTERS:,}; cap some groups' "
                            "max_gpus")
        shapes = [n for n in itertools.product(*(range(c + 1) for c in caps)) if any(n)]
    else:
        shapes = [caps]
    state = SearchState(sub_instance(instance, tuple(g.num_nodes for g in groups)))
    rates = peak_layer_rates(state)
    work = instance.model.num_layers * instance.training.global_batch_size
    subs = []
    for nodes in shapes:
        rate = sum(n * g.gpus_per_node * rates[g.name]
                   for n, g in zip(nodes, groups, strict=True) if n)
        subs.append(_Sub(nodes=nodes, gpus=sum(n * g.gpus_per_node for n, g in
                                               zip(nodes, groups, strict=True)),
                         price_per_hour=price_of(nodes),
                         time_bound_s=work / rate if rate > 0 else math.inf))
    # Best bound first; among equal bounds the larger sub-cluster, whose proven bound then
    # bounds every sub-cluster inside it.
    heap = [(value(s.time_bound_s, s.price_per_hour), -s.gpus, i) for i, s in enumerate(subs)]
    heapq.heapify(heap)
    searched: list[_Sub] = []
    best: tuple[float, SolveResult, Any, Rental] | None = None  # (value, result, ev, rental)
    totals = {"subproblems": 0, "solved": 0, "pruned_by_bound": 0, "pruned_by_memory": 0,
              "plans_costed": 0}
    cm = CostModel(instance)
    unresolved: list[int] = []  # searched without a proof: their bound stays open
    while heap:
        bound, _, i = heap[0]
        sub = subs[i]
        if best is not None and bound >= best[0] * (1 - relative_gap):
            break  # every sub-cluster left is closed by the bound
        heapq.heappop(heap)
        lifted = max([sub.time_bound_s] + [s.time_bound_s for s in searched
                                           if all(a <= b for a, b in zip(sub.nodes, s.nodes,
                                                                         strict=True))])
        if not within_limits(lifted, sub.price_per_hour):  # (inf: inside one where none fits)
            sub.time_bound_s, sub.state = lifted, "limit" if math.isfinite(lifted) \
                else "infeasible"
            continue
        if lifted > sub.time_bound_s:
            sub.time_bound_s = lifted
            heapq.heappush(heap, (value(lifted, sub.price_per_hour), -sub.gpus, i))
            continue
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            heapq.heappush(heap, (bound, -sub.gpus, i))
            break
        searched.append(sub)
        # A plan of this sub-cluster beats the best one only below this time: the search
        # starts as if it had a plan of it (solve's cutoff), so its bounds close at once what
        # cannot (no plan of it below: status "cutoff", a proof for this sub-cluster).
        if best is None or (by_cost and sub.price_per_hour <= 0):
            cutoff = math.inf
        else:  # (value() inverted at the best plan's value)
            cutoff = best[0] * 3600.0 / sub.price_per_hour if by_cost else best[0]
        try:
            res = solve(sub_instance(instance, sub.nodes), time_limit_s=remaining,
                        relative_gap=relative_gap, cutoff_s=cutoff, **options)
        except InfeasibleError:
            sub.state, sub.time_bound_s = "infeasible", math.inf
            continue
        for key in totals:
            totals[key] += getattr(res, key)
        if math.isfinite(res.best_bound_s):
            sub.time_bound_s = max(sub.time_bound_s, res.best_bound_s)
        sub.state = "searched" if res.status in ("optimal", "cutoff") else "open"
        if sub.state == "open":
            unresolved.append(i)
        if res.plan is None:
            continue
        check_plan(instance, res.plan, cost_model=cm)
        ev = cm.evaluate(res.plan)
        rent = rental(instance, res.plan)
        t, price = ev.iteration_time_s, rent.price_per_hour or 0.0
        if within_limits(t, price) and (best is None or value(t, price) < best[0]):
            best = (value(t, price), res, ev, rent)
    # What is left: sub-clusters never searched (in the heap) and searched without a proof.
    threshold = best[0] * (1 - relative_gap) if best is not None else math.inf
    left = [(b, i) for b, _, i in heap] + [
        (value(subs[i].time_bound_s, subs[i].price_per_hour), i) for i in unresolved]
    # Each sub-cluster once: searched to proof, searched and left without a plan, closed by a
    # limit or by the bound (searched or not), or open.
    counts = dict.fromkeys(("proven", "without_plan", "closed_by_limit", "closed_by_bound",
                            "open"), 0)
    open_bounds = []
    for b, i in left:
        if not within_limits(subs[i].time_bound_s, subs[i].price_per_hour):
            counts["closed_by_limit"] += 1
        elif b >= threshold:
            counts["closed_by_bound"] += 1
        else:
            counts["open"] += 1
            open_bounds.append(b)
    counts["closed_by_limit"] += sum(1 for s in subs if s.state == "limit")
    counts["without_plan"] = sum(1 for s in subs if s.state == "infeasible")
    counts["proven"] = sum(1 for s in subs if s.state == "searched")
    counts["total"], counts["searched"] = len(subs), len(searched)
    wall = time.perf_counter() - start
    if best is None:
        if open_bounds:  # as the time search: status unknown, no plan, the bound so far
            return ObjectiveResult(
                instance=instance.name, method="haap", plan=None, evaluation=None,
                status="unknown", iteration_time_s=math.inf,
                best_bound_s=min(s.time_bound_s for s in subs if s.state != "infeasible"),
                gap=math.inf, wall_s=wall, objective=goal.optimize, subclusters=counts,
                cost_bound=min(open_bounds) if by_cost else None,
                message=f"time limit ({time_limit_s:g} s) reached before a plan meeting the "
                f"objective's limits was found; {len(open_bounds)} of {len(subs)} "
                "sub-clusters left open")
        raise InfeasibleError(_why_none(instance, subs, t_max, c_max))
    value_best, res, ev, rent = best
    # Sub-clusters closed only by the accepted relative gap still bound the optimum.
    lower = min([value_best, *(b for b, i in left
                               if within_limits(subs[i].time_bound_s, subs[i].price_per_hour))])
    gap = max(0.0, (value_best - lower) / value_best) if value_best > 0 else 0.0
    status = "optimal" if gap <= 1e-9 else "feasible"
    cost = rent.cost_of(ev.iteration_time_s)
    time_bounds = [s.time_bound_s for s in subs if s.state not in ("infeasible", "limit")]
    result = ObjectiveResult(
        instance=instance.name, method=res.method, plan=res.plan, evaluation=ev, status=status,
        iteration_time_s=ev.iteration_time_s,
        best_bound_s=lower if not by_cost else min([ev.iteration_time_s, *time_bounds]),
        gap=gap, wall_s=wall, cache=res.cache,
        # (the sub-problem counts of one sub-cluster's search would not match the totals)
        search_space={k: v for k, v in res.search_space.items()
                      if k not in ("subproblem_fates", "single_type_phase")},
        compute_bound_s=res.compute_bound_s, options=res.options,
        model_mismatch_s=res.model_mismatch_s, objective=goal.optimize, rental=rent,
        cost_per_iteration=cost,
        tokens_per_cost_unit=tokens / cost if cost else None,
        cost_bound=lower if by_cost else None, subclusters=counts,
        subproblems=totals["subproblems"], solved=totals["solved"],
        pruned_by_bound=totals["pruned_by_bound"], pruned_by_memory=totals["pruned_by_memory"],
        plans_costed=totals["plans_costed"])
    result.message = _summary(result, res.message)
    if relative_gap > 0 and status == "feasible" and gap <= relative_gap:
        result.message += (f"; proven within {gap:.2%} of the optimum, which meets the "
                           f"requested relative gap ({relative_gap:.2%}): the search stopped "
                           "there")
    return result


def _why_none(instance: Instance, subs: list[_Sub], t_max: float, c_max: float) -> str:
    """Why no plan meets the limits, with the numbers: the least proven bound on the time (and
    on the cost, within the time limit) over the sub-clusters where some plan fits."""
    goal = instance.objective
    fits = [s for s in subs if s.state != "infeasible"]
    if not fits:
        return (f"{instance.name}: no plan fits memory on the GPUs the node groups' max_gpus "
                "allow")
    fastest = min(s.time_bound_s for s in fits)
    if fastest > t_max:
        return (f"{instance.name}: objective.min_tokens_per_s = {goal.min_tokens_per_s:,.6g} "
                f"needs an iteration time <= {t_max:.6g} s ({instance.tokens_per_iteration:,} "
                f"tokens); the fastest plan on the allowed GPUs takes at least {fastest:.6g} s "
                f"({instance.tokens_per_iteration / fastest:,.6g} tokens/s at most)")
    cheapest = min(s.time_bound_s * s.price_per_hour / 3600.0 for s in fits
                   if s.time_bound_s <= t_max)
    return (f"{instance.name}: objective.max_cost_per_iteration = {c_max:.6g}; every plan on "
            f"the allowed GPUs" + (" within min_tokens_per_s" if math.isfinite(t_max) else "")
            + f" costs at least {cheapest:.6g} per iteration")


def _summary(result: ObjectiveResult, inner: str) -> str:
    """One sentence on what is rented and how the sub-clusters were closed."""
    rent, counts = result.rental, result.subclusters
    parts = []
    if rent is not None:
        idle = [f"{n} node(s) ({rent.idle_gpus[g]} GPUs) of {g}"
                for g, n in rent.idle_nodes.items() if n]
        parts.append("not rented: " + (", ".join(idle) if idle else "none"))
    if result.cost_per_iteration is not None:
        parts.append(f"cost {result.cost_per_iteration:.6g} per iteration, "
                     f"{result.tokens_per_cost_unit:,.6g} tokens per unit of currency")
    if counts["total"] > 1:
        parts.append(f"{counts['total']} sub-clusters: {counts['proven']} searched to proof, "
                     f"{counts['without_plan']} without a plan, {counts['closed_by_bound']} "
                     f"closed by the bound, {counts['closed_by_limit']} by a limit, "
                     f"{counts['open']} open")
    text = "; ".join(parts)
    return f"{inner}; {text}" if inner else text


__all__ = ["MAX_SUBCLUSTERS", "ObjectiveResult", "applies", "solve_objective", "sub_instance"]
