"""What the validator accepts on an instance that the exact search does not search
(formulations/stage-assignment.md Sec. 1, 1.1, 1.2, 1.4): said in every result
(`search_space["outside_space"]`) and in `haap solve`'s summary, so that "optimal" is never read
as "no valid plan is faster".

Each kind is listed only where the instance allows such a plan at all; whether one would be
faster is not known without enumerating them (benchmarks/gap_probe.py measures how often on
random small instances: the counts are in formulations Sec. 1).
"""

from __future__ import annotations

from haap_solver.instance import Instance
from haap_solver.parallelism import tp_candidates
from haap_solver.search.space import (
    SAME_GROUP_CANDIDATES,
    SAME_GROUP_MAX_GPUS,
    UNEVEN_MAX_GPUS,
    micro_batch_candidates,
    mixed_full_budget,
    mixed_space_summary,
    same_group_searched,
    same_group_space,
    uneven_searched,
)


def outside_space(instance: Instance, *, mixed: bool,
                  summary: dict[str, object] | None = None) -> list[str]:
    """The kinds of valid plans of `instance` outside the searched space, one phrase each.
    `summary`: `mixed_space_summary(instance)` where the caller has it (`solve` does: it costs
    0.03-0.07 s at 1,024 GPUs, each call, and counts against the time limit)."""
    t = instance.training
    if t.target != "any":  # (an engine target's rules restrict the validator too)
        return []
    groups = instance.cluster.node_groups
    out: list[str] = []
    if not uneven_searched(instance):
        out.append(f"a single-type stage whose DP degree does not divide the micro-batch "
                   f"(uneven shares; searched on clusters of at most {UNEVEN_MAX_GPUS} GPUs, "
                   "Sec. 1)")
    # (Two replica groups on one node group: in the mixed space on clusters of at most
    # SAME_GROUP_MAX_GPUS GPUs, at the micro-batch sizes `same_group_space` takes, Sec. 1.1;
    # listed wherever some size does not take them.)
    cap = (f"searched with mixed stages on clusters of at most {SAME_GROUP_MAX_GPUS} GPUs at "
           f"micro-batch sizes with at most {SAME_GROUP_CANDIDATES} such candidates, Sec. 1.1")
    if mixed and same_group_searched(instance):
        left = [b for b in micro_batch_candidates(instance)
                if not same_group_space(instance, b)]
        where = f"; not searched at micro-batch sizes {left}" if left else ""
    else:
        left, where = [0], ""
    if left:
        for g in groups:
            tps = tp_candidates(instance, g)
            if any(a + b <= g.num_gpus for a in tps for b in tps if a < b):
                out.append("a stage with replica groups of two TP degrees on one node group "
                           f"({cap}{where})")
                break
    if left and mixed and len(groups) >= 2 and any(g.num_gpus >= 2 for g in groups):
        out.append("a mixed-type stage with two replica groups on one of its node groups "
                   f"(two shares or two TP degrees there; {cap}{where})")
    if mixed and len(groups) >= 2:
        cut = (summary or mixed_space_summary(instance))["cut_micro_batches"]
        if cut:
            out.append(f"a mixed-type stage at micro-batch sizes {cut} beyond the cut mixed "
                       "space searched there (two node groups of different device types, "
                       "node-aligned parts, the balanced split; the full space is searched at a "
                       f"size of at most {mixed_full_budget(instance)} candidates, Sec. 1.1)")
    # (Empty end stages: the validator takes them only where training.empty_end_stages allows
    # them and not under interleaved-1f1b, as the search does; mixed ones are in the mixed space
    # as any mixed stage, with its caps above, but only at splits where every replica holds a
    # layer, Sec. 1.2.)
    if t.empty_end_stages and mixed and len(groups) >= 2:
        out.append("an empty end stage of several replica groups at a split where some replica "
                   "holds no decoder layer (Sec. 1.2)")
    return out
