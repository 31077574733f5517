"""What the warm start and the dives of the branch-and-bound pick (they prove nothing): the
sub-problems the warm start tries first (`_warm_start_order`), the configurations of its
restricted models (`_ranked_per_group`), and the stage sequence of the integer capacity
program's seed (`positional_seed_sequence`), for sub-problems too large for a model.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from haap_solver.search.bounds import first_true
from haap_solver.search.deadline import until
from haap_solver.search.formulation import SubProblem
from haap_solver.search.space import StageConfig
from haap_solver.search.subproblems import _Candidate

if TYPE_CHECKING:
    from haap_solver.search.state import SearchState


def positional_seed_sequence(state: SearchState, sub: SubProblem, p_max: int, *,
                             deadline: float = math.inf) -> list[StageConfig] | None:
    """The stage sequence of a seed (it proves nothing): at the sub-problem's positional
    bottleneck floor T (Sec. 4.4), the least tail threshold R at which the capacity model with
    integer stage counts holds every layer (`PositionalBound.integer_sequence`), and its
    sequence holding the most layers there. The LP's least R at T is a floor for it (the LP
    relaxes it), so the bisection starts there. On gpt3-175b-4types-x1024, (p, b) = (27, 12),
    this gives a 14.537 s plan where the search had found 14.890 s: the full models are too
    large for HiGHS there, and the restricted ones miss the few slow, low-tail stages.

    With a finite `deadline` (time.perf_counter() seconds) it raises DeadlineReached once that
    has passed (its integer programs take up to POSITIONAL_IP_TIME_S each): no seed."""
    with until(deadline):
        return _positional_seed_sequence(state, sub, p_max)


def _positional_seed_sequence(state: SearchState, sub: SubProblem,
                              p_max: int) -> list[StageConfig] | None:
    """positional_seed_sequence, inside its deadline."""
    t = state.bottleneck_floor(sub, p_max)
    if not math.isfinite(t):
        return None
    positional = state.positional_bound(sub.micro_batch, sub.schedule)
    p = sub.num_stages
    r_values = positional.tail_values()
    if len(r_values) == 0 or positional.integer_sequence(
            p, t, math.inf, most_layers=False) is None:
        return None
    # The integer program holds at R = inf, so the LP holds at the largest tail of all.
    top = len(r_values) - 1
    lo = first_true(lambda i: positional.holds_all_layers(p, t, float(r_values[i])), 0, top)
    lo = first_true(lambda i: positional.integer_sequence(
        p, t, float(r_values[i]), most_layers=False) is not None, lo, top + 1)
    return positional.integer_sequence(p, t, float(r_values[lo]) if lo <= top else math.inf)


def _warm_start_order(candidates: list[_Candidate], count: int) -> list[_Candidate]:
    """The first `count` sub-problems the warm start tries (WARM_START_SUBPROBLEMS), from
    `candidates` in the queue's order: each micro-batch size's first, then the rest."""
    leads: list[_Candidate] = []
    rest: list[_Candidate] = []
    sizes: set[int] = set()
    for c in candidates:
        (rest if c.sub.micro_batch in sizes else leads).append(c)
        sizes.add(c.sub.micro_batch)
    return (leads + rest)[:count]


def _ranked_per_group(state: SearchState, sub: SubProblem,
                      p_cap: int) -> dict[str, list[StageConfig]]:
    """Warm-start candidates: per node group, its configurations ranked by how many layers the
    whole group hosts with them (min(floor(G_g / gpus), p) stages of N_c(T) layers each: a
    p-stage plan has no more stages) at a bottleneck just above the sub-problem's bound T_LB(p),
    as the capacity bound would use them.

    Memory is taken with the first stage's micro-batches in flight or the last stage's (one
    under 1F1B), whichever is fewer: a configuration without recomputation that holds few
    layers at the front of the pipeline holds many at the back. Ranked by the first stage
    alone, llama3-70b-h100x32-a100x32's optimum (three H100 configurations without
    recomputation) lay outside the two best per group, and only a dive's full model found it.
    (The layers hosted grow with the bottleneck and shrink with the micro-batches in flight, so
    the fewest in flight at the larger bottleneck give each configuration its best count.)"""
    b = sub.micro_batch
    t_lb = state.capacity_bound(b, p_cap, sub.schedule).bottleneck_floor(sub.num_stages)
    if not math.isfinite(t_lb):
        return {}
    m = sub.num_micro_batches(state.instance)
    in_flight = min(min(sub.num_stages, m),  # the first stage's, the last stage's
                    state.cache.in_flight(sub.schedule, 0, sub.num_stages, m))
    t_try = 1.1 * t_lb
    budget = {g.name: g.num_gpus for g in state.instance.cluster.node_groups}
    scores: dict[StageConfig, float] = {}
    for c in state.configs(b):
        if c.mixed:  # warm start: single-type stages only
            continue
        co = state.cache.coefficients(c, b, False, False, True)
        n_mem = state.cache.max_layers(c, b, False, False, True, in_flight)
        n = 0
        while n < n_mem and co.tau(n + 1) <= t_try:
            n += 1
        hosted = min(budget[c.node_group] // c.gpus, sub.num_stages) * n
        if hosted > 0:
            scores[c] = hosted
    ranked: dict[str, list[StageConfig]] = {}
    for c in sorted(scores, key=lambda c: (-scores[c], c)):
        ranked.setdefault(c.node_group, []).append(c)
    return ranked
