"""Engine targets: what each training engine can execute of haap's general plan, and the exact
search restricted to it.

haap's plan lets every stage have its own TP degree, DP degree, recomputation and replica groups
of several device types with their own micro-batch shares. The engines run less
(docs/targets.md, with the file and version each rule comes from):

- **megatron** (Megatron-LM core): one TP and one DP degree for the whole pipeline, one
  micro-batch per data-parallel rank, one recomputation setting, the 1F1B schedule; any layer
  split (``--pipeline-model-parallel-layout``); ZeRO-1 at most (``--use-distributed-optimizer``).
- **deepspeed** (``PipelineModule`` / ``PipelineEngine``): one TP (topology's model axis) and one
  DP degree, one micro-batch per rank, full recomputation or none, set once
  (``activation_checkpoint_interval``), its 1F1B-like ``TrainSchedule``; ZeRO-1 at most.
- **torchtitan**: one TP and one DP degree over the device mesh, one micro-batch per rank, one
  activation-checkpoint mode, schedules 1F1B and GPipe among others; any layer split
  (``module_fqns_per_model_part``).
- **flagscale** (heterogeneous mode): consecutive stages grouped into process meshes, each of one
  device type with its own TP / DP / PP, so every stage its own TP and DP, but one device type,
  one TP and one micro-batch share per stage; full recomputation set per stage, selective only
  for all stages at once; with tied embeddings the first and last stage share one TP degree;
  1F1B; ZeRO-1 at most.

`target_violations` names each stage and field a target cannot express. `solve_for_target` runs
the exact search over the target's space: an outer loop over the (TP, DP, recomputation) choices
the target fixes for the whole pipeline, each a search restricted by a per-stage filter
(``solve(stage_filter=)``), the best plan over all, the least bound over all.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from haap_solver.cost.evaluate import CostModel
from haap_solver.errors import HaapError, InfeasibleError
from haap_solver.instance import Instance
from haap_solver.plan import Plan
from haap_solver.search.space import StageConfig, tp_candidates
from haap_solver.target_rules import RULES, TargetRules, rules_of, target_violations
from haap_solver.training import TARGETS

if TYPE_CHECKING:
    from haap_solver.result import SolveResult


# -- the search restricted to a target ---------------------------------------------------------
StageFilter = Callable[[StageConfig], bool]
FIRST_ROUND_SHARE = 0.5
"""Share of the time limit the first round (a short search of every restricted space) takes."""
MIN_SEARCH_S = 0.2
SEED_SHARE = 0.1
"""Share of the time limit the uniform-grid seed may take (`_uniform_seed`)."""
ORDER_SHARE = 0.1
"""Share of the time limit the first round's ordering (each space's compute floor) may take; the
spaces it leaves out come after, in their own order. Each costs the space's configurations,
which its search then reuses (0.2-0.4 s a space at 1,024 GPUs, where there are 168)."""
"""Shortest time limit one restricted search is given."""


@dataclass(kw_only=True)
class _Space:
    """One restricted space of a target's search and what is known of it so far."""

    label: str
    """What the space holds, for the result's search_space["target"]."""
    keep: StageFilter
    """The per-stage filter that makes the space (solve(stage_filter=))."""
    counts_in_bound: bool = True
    """False for the spaces searched in addition that lie inside the others (tied TP)."""
    state: Any = None
    """The search's SearchState, kept while the space is open (its caches serve the next run)."""
    status: str = "not searched"
    """The last search's status: not searched, feasible (open), optimal, infeasible, closed."""
    bound_s: float = 0.0
    """The best lower bound of the space's optimum so far (0 before any search)."""
    time_s: float = math.inf
    """Iteration time of the space's best plan that the target runs."""
    runs: int = 0
    """Searches run on the space."""
    order_s: float = math.inf
    """The order the first round takes the spaces in (least first): the single-type compute
    floor of the space (`compute_bound`: perfect balance, no bubble), inf where not computed."""

    @property
    def is_open(self) -> bool:
        return self.status in ("not searched", "feasible")

    def summary(self) -> dict[str, object]:
        return {"space": self.label, "status": self.status, "runs": self.runs,
                "best_bound_s": self.bound_s,
                "iteration_time_s": self.time_s if self.time_s < math.inf else None}


def _shape(c: StageConfig) -> tuple[set[int], set[int], set[str], int]:
    """(TP degrees, shares or {0} for a single-type stage, device types, DP) of a
    configuration; a single-type configuration's replicas all take one share, but an uneven
    one's take two (no engine target runs that: each gives every data-parallel rank of a stage
    the same micro-batch)."""
    if c.mixed:
        return ({p.tp for p in c.parts}, {p.share for p in c.parts},
                {p.device for p in c.parts}, c.dp)
    return {c.tp}, {0, 1} if c.uneven else {0}, {c.device}, c.dp


def stage_rule(rules: TargetRules) -> StageFilter:
    """The per-stage part of the rules: one TP and one share per stage, a TP degree that divides
    the node size (ranks TP-innermost), modes the engine has, one device type where needed."""

    def ok(c: StageConfig) -> bool:
        tps, shares, devices, _ = _shape(c)
        parts = c.parts or c.replica_parts(1)
        return (len(tps) == 1 and len(shares) == 1 and c.recompute in rules.recompute_modes
                and all(p.gpus_per_node % p.tp == 0 for p in parts)
                and (not rules.single_device_per_stage or len(devices) == 1))

    return ok


def restricted_spaces(instance: Instance, target: str) -> list[tuple[str, StageFilter]]:
    """The target's space as a union of spaces each given by one per-stage filter: for engines
    with one TP / DP / recomputation for the whole pipeline, one space per choice of those."""
    r = rules_of(target)
    base = stage_rule(r)
    if not (r.uniform_tp or r.uniform_dp or r.uniform_recompute):
        if r.uniform_selective and "selective" in instance.training.recompute:
            return [("selective on every stage",
                     lambda c: base(c) and c.recompute == "selective"),
                    ("no selective recomputation",
                     lambda c: base(c) and c.recompute != "selective")]
        return [("every stage", base)]
    modes = [m for m in instance.training.recompute if m in r.recompute_modes]
    out: list[tuple[str, StageFilter]] = []
    for tp, dp in _pipeline_shapes(instance, base):
        for mode in modes:
            def f(c: StageConfig, tp: int = tp, dp: int = dp, mode: str = mode) -> bool:
                tps_c, _, _, dp_c = _shape(c)
                return base(c) and tps_c == {tp} and dp_c == dp and c.recompute == mode
            out.append((f"tp {tp}, dp {dp}, recompute {mode}", f))
    return out


def _pipeline_shapes(instance: Instance, base: StageFilter) -> list[tuple[int, int]]:
    """Every (TP, DP) some stage configuration of the search space that `base` accepts has, at
    some micro-batch size (mixed ones included): the only choices for a pipeline of one TP and
    one DP degree. (Any other pair restricts the space to nothing.)"""
    from haap_solver.search.space import stage_configs
    from haap_solver.search.state import SearchState

    state = SearchState(instance, mixed=True)
    pairs: set[tuple[int, int]] = set()
    for b in state.micro_batches():
        for c in [*stage_configs(instance, b), *state.mixed_space(b)]:
            if base(c):
                pairs.add((min(_shape(c)[0]), c.dp))
    return sorted(pairs)


def solve_for_target(instance: Instance, target: str, *, time_limit_s: float = 60.0,
                     backend: str | None = None, seed: int = 0, max_stages: int | None = None,
                     mixed: bool = True, relative_gap: float = 0.0) -> SolveResult:
    """The fastest plan `target` can run, with a proof over the target's space.

    One search per restricted space (`restricted_spaces`), in rounds (docs/targets.md), each
    starting from the best plan found so far as its cutoff (`solve(cutoff_s=)`: a space that
    cannot beat it closes by its bounds at once), the uniform grid the target runs being the
    first; the plan is the best of all, the bound the least of the open spaces' bounds and the
    plan's time (an infeasible space bounds nothing). No plan within the time limit: a result
    with none, status "unknown". Where a rule spans stages (FlagScale's tied first and last TP) the
    restricted spaces hold more than the target runs: a plan breaking it is dropped, and the
    spaces with one TP degree for every stage are searched in addition (a subset of the
    target's), so the bound stays valid for the target's space while the plan may not be its
    optimum; the gap then says how far it can be."""
    from haap_solver.result import SolveResult
    from haap_solver.search.solve import DEFAULT_BACKEND, SearchState, solve
    from haap_solver.search.subproblem_bounds import any_plan_floor, compute_bound

    if target == "any":
        return solve(instance, backend=backend or DEFAULT_BACKEND, time_limit_s=time_limit_s,
                     seed=seed, max_stages=max_stages, mixed=mixed, relative_gap=relative_gap)
    rules = rules_of(target)
    instance = with_target(instance, target)
    bad = [m for m in target_violations(instance, _EMPTY_PLAN, target)
           if m.startswith("training.")]
    if bad:
        raise InfeasibleError(f"no plan for target {target!r}: {bad[0]}")
    if not any(s in rules.schedules for s in instance.training.schedules):
        raise InfeasibleError(f"no plan for target {target!r}: {rules.engine} runs the "
                              f"schedules {', '.join(rules.schedules)}, training.schedules "
                              f"allows {', '.join(instance.training.schedules)}")
    if not any(m in rules.recompute_modes for m in instance.training.recompute):
        raise InfeasibleError(f"no plan for target {target!r}: {rules.engine} has the "
                              f"recomputation modes {', '.join(rules.recompute_modes)}, "
                              f"training.recompute allows {', '.join(instance.training.recompute)}")
    schedules = tuple(s for s in instance.training.schedules if s in rules.schedules)
    if instance.training.zero_stage > rules.max_zero_stage:  # (the engine without a pipeline)
        max_stages = 1
    # The searches run on target "any" (the filters restrict them; a rule across stages is
    # checked on their plans here), the result is validated with the target's rules.
    inst = dataclasses.replace(instance, training=dataclasses.replace(
        instance.training, schedules=schedules, target="any"))
    start = time.perf_counter()
    spaces = [_Space(label=label, keep=f) for label, f in restricted_spaces(inst, target)]
    cost_model = CostModel(inst)
    # A plan the target runs before any search: the best uniform grid (one TP, DP, recomputation
    # and share for every stage) where the target runs it; the first cutoff of every space.
    # (At least MIN_SEARCH_S, as every search here: on a loaded host a share of a very short
    # limit ended the grid before its first plan, and the search then had no cutoff either.)
    best: SolveResult | None = _uniform_seed(inst, target, cost_model,
                                             max(SEED_SHARE * time_limit_s, MIN_SEARCH_S))
    # A space never searched is bounded by what bounds every plan (`any_plan_floor`).
    floor = any_plan_floor(SearchState(inst, cost_model))
    for sp in spaces:
        sp.bound_s = floor

    def left_s() -> float:
        return time_limit_s - (time.perf_counter() - start)

    def search(sp: _Space, budget_s: float) -> None:
        nonlocal best
        state = sp.state or SearchState(inst, cost_model)
        try:
            # The best plan of the other spaces is the cutoff: what cannot beat it closes.
            res = solve(inst, backend=backend or DEFAULT_BACKEND,
                        time_limit_s=max(budget_s, MIN_SEARCH_S), seed=seed,
                        max_stages=max_stages, mixed=mixed, relative_gap=relative_gap,
                        state=state, stage_filter=sp.keep,
                        cutoff_s=best.iteration_time_s if best is not None else math.inf)
        except InfeasibleError:
            sp.status, sp.bound_s, sp.state = "infeasible", math.inf, None
            return
        except HaapError as exc:
            # No single-type plan in this space, and its time ran out before the plans with a
            # mixed stage were set up (_mixed_not_set_up): open, its bound as it was.
            if "time limit" not in str(exc):
                raise
            sp.runs, sp.status, sp.state = sp.runs + 1, "feasible", state
            return
        sp.runs += 1
        sp.bound_s = max(sp.bound_s, res.best_bound_s)  # each run's bound holds
        sp.status = res.status
        if res.status == "cutoff":
            sp.status = "closed (no plan below the best of the other spaces)"
        elif res.status == "unknown":
            sp.status = "feasible"  # open: the time limit came before a plan below the cutoff
        if res.plan is not None:
            if target_violations(inst, res.plan, target):
                # A rule across stages the filter cannot hold (FlagScale's tied TP): the
                # space's own search cannot go on to its target plans; its bound stays.
                sp.status = "closed (its best plan breaks a rule across stages)"
            else:
                sp.time_s = min(sp.time_s, res.iteration_time_s)
                if best is None or res.iteration_time_s < best.iteration_time_s:
                    best = res
        sp.state = state if sp.is_open else None

    def cutoff() -> float:
        return best.iteration_time_s * (1 - relative_gap) if best is not None else math.inf

    # Round 1: every space gets a short search (bounds and first plans), the most promising
    # first (least compute floor) so that the best plan found early closes the others (their
    # searches start from it as a cutoff); the time a closed space leaves goes to the next ones.
    # Round 2 on: the spaces still open whose bound could beat the best plan, least bound first,
    # share the time left.
    first_end = time.perf_counter() + FIRST_ROUND_SHARE * time_limit_s
    order_end = time.perf_counter() + ORDER_SHARE * time_limit_s
    for sp in spaces:
        if time.perf_counter() < order_end:
            sp.state = SearchState(inst, cost_model)
            sp.state.stage_filter = sp.keep
            sp.order_s = compute_bound(sp.state)
    for k, sp in enumerate(sorted(spaces, key=lambda sp: sp.order_s)):
        if left_s() > MIN_SEARCH_S / 2:
            share = (first_end - time.perf_counter()) / (len(spaces) - k)
            search(sp, min(max(share, MIN_SEARCH_S), left_s()))
    while left_s() > MIN_SEARCH_S / 2:
        todo = sorted((sp for sp in spaces if sp.is_open and sp.bound_s < cutoff()),
                      key=lambda sp: sp.bound_s)
        if not todo:
            break
        for k, sp in enumerate(todo):
            if left_s() <= MIN_SEARCH_S / 2:
                break
            if sp.bound_s < cutoff():
                search(sp, left_s() / (len(todo) - k))
    if best is None and rules.tied_first_last_tp and inst.model.tied_embeddings:
        tps = sorted({tp for g in inst.cluster.node_groups for tp in tp_candidates(inst, g)})
        base = stage_rule(rules)
        for k, tp in enumerate(tps):
            def same_tp(c: StageConfig, tp: int = tp) -> bool:
                return base(c) and _shape(c)[0] == {tp}
            extra = _Space(label=f"tp {tp} on every stage (tied embeddings)", keep=same_tp,
                           counts_in_bound=False)
            spaces.append(extra)
            search(extra, left_s() / (len(tps) - k))
    for sp in spaces:
        if sp.is_open and sp.status != "not searched" and sp.bound_s >= cutoff():
            sp.status, sp.state = "closed (its bound reaches the best plan)", None
    searched = [sp.summary() for sp in spaces]
    # The target's optimum is the least over the spaces: below the best plan only where an
    # open space's bound is (a closed one is solved, infeasible or bounded above the plan).
    open_bounds = [sp.bound_s for sp in spaces if sp.counts_in_bound and sp.is_open]
    if best is None:
        if all(sp.status == "infeasible" for sp in spaces):
            raise InfeasibleError(f"no plan of {inst.name} fits what target {target!r} "
                                  f"({rules.engine}) can run: every one of its {len(spaces)} "
                                  "restricted spaces is infeasible")
        # Like solve() at its time limit: no plan, the bound that holds, an honest status.
        return SolveResult(
            instance=inst.name, method=f"haap-{target}", plan=None, evaluation=None,
            status="unknown", iteration_time_s=math.inf,
            best_bound_s=min(open_bounds, default=0.0), gap=math.inf,
            wall_s=time.perf_counter() - start,
            search_space={"target": {"name": target, "searches": searched}},
            message=f"no plan for target {target!r} found within the time limit "
                    f"({time_limit_s:g} s); give it more time (--time-limit)")
    bound = min([best.iteration_time_s, *open_bounds])
    from haap_solver.validate import check_plan

    assert best.plan is not None
    check_plan(instance, best.plan)  # the one validator, with the target's rules
    t = best.iteration_time_s
    gap = max(0.0, (t - bound) / t)
    status = "optimal" if gap <= 1e-9 else "feasible"
    message = (f"target {target} ({rules.engine}): best of {len(searched)} restricted "
               f"searches (docs/targets.md)")
    space = dict(best.search_space)
    space["target"] = {"name": target, "searches": searched}
    return dataclasses.replace(best, method=f"haap-{target}", status=status,
                               best_bound_s=bound, gap=gap,
                               wall_s=time.perf_counter() - start, search_space=space,
                               message=f"{best.message}; {message}" if best.message else message)


def _uniform_seed(inst: Instance, target: str, cost_model: Any,
                  time_limit_s: float) -> SolveResult | None:
    """The best uniform Megatron-LM grid (baselines/uniform.py) over the recomputation modes the
    target has, where the target runs it (None elsewhere: FlagScale when a stage straddles two
    device types, or no grid fits). It seeds the target's search with a cutoff: on the largest
    clusters the restricted searches alone found no plan within a minute (168 spaces at 1,024
    GPUs, each 2-4 s to set up)."""
    from haap_solver.baselines.uniform import uniform
    from haap_solver.validate import plan_violations

    modes = tuple(m for m in inst.training.recompute if m in rules_of(target).recompute_modes)
    if not modes:
        return None
    seed_inst = dataclasses.replace(inst, training=dataclasses.replace(
        inst.training, recompute=modes))
    try:
        res = uniform(seed_inst, time_limit_s=time_limit_s, cost_model=CostModel(seed_inst)
                      if modes != inst.training.recompute else cost_model)
    except InfeasibleError:
        return None
    if res.plan is None or target_violations(inst, res.plan, target) \
            or plan_violations(inst, res.plan, cost_model=cost_model):
        return None
    res.evaluation = cost_model.evaluate(res.plan)  # the time on the target's instance
    res.iteration_time_s = res.evaluation.iteration_time_s
    res.message = (f"the best plan is the uniform grid's seed ({res.message}); the bound and gap "
                   f"refer to the target's space")
    return res


_EMPTY_PLAN = Plan(micro_batch_size=1, num_micro_batches=1, stages=())


def with_target(instance: Instance, target: str) -> Instance:
    """`instance` with ``training.target`` set to `target` (the CLI's ``--target``)."""
    if target not in TARGETS:
        raise HaapError(f"target {target!r}: targets are {', '.join(TARGETS)}")
    return dataclasses.replace(instance, training=dataclasses.replace(
        instance.training, target=target))  # type: ignore[arg-type]


__all__ = ["RULES", "TargetRules", "restricted_spaces", "rules_of", "solve_for_target",
           "stage_rule", "target_violations", "with_target"]
