"""What a search state keeps across a change of its instance (the Planner's cache carry-over,
formulations/stage-assignment.md Sec. 8).

The coefficient cache (`CoefficientCache`) holds, per stage configuration, the affine stage-time
pieces, the memory bounds, the point-to-point times and the replica placement; per replica group
(device, TP, share, DP, recomputation, role) the pieces and memory forms. Each of them depends on
the model, the training set-up, the cost constants, and on the node groups (and their device
types) the configuration uses, never on how many nodes a group has (a point-to-point time only
on whether it has one: a stage's sends within a one-node group are intra-node transfers) nor on
the global batch (coefficients are per micro-batch). So after a change an entry is carried
where:

- the model, the training set-up less its global batch size, the cost constants, the profile
  and the end-stage flags are unchanged (else nothing is carried), and
- every node group the entry names has the same *signature* before and after: the group less
  its node count (a point-to-point entry: less whether it has one node or more), its device
  type's numbers, and the fabric between NIC classes; a per-device entry, where its device
  type's numbers are the same.

The sub-problem bounds a search proved (`SearchState.sub_bounds`) are carried where the change
only takes nodes away (`bounds_break` gives why not, else None): every plan of the new cluster
is then a plan of the old one at the same cost, so each sub-problem's least time can only grow
(formulations Sec. 8). The bounds on plans with a mixed-type stage are carried at a micro-batch
size only where the new mixed space there is no wider (full before, or cut after; stages with
two replica groups on one node group before, or none after: Sec. 1.1), and none where uneven
shares join the space (the cluster drops to UNEVEN_MAX_GPUS GPUs or fewer, Sec. 1).

Measured on instances/replan/spot-a100-v100 (2026-12-03, 30 s limit, one thread, CPU seconds on
a loaded 2-core host), where every resize crosses one node: keyed by "one node or more" before,
the 09:30 event (the A100 group from two nodes to one) carried 41% of the entries, with the
node count ignored but for the point-to-point times 92%; the set-up of the configurations went
from 2.30 s (a cold state) to 1.50 s, of which the dominance test's comparisons still make
most (5,790 of its 6,529 pairs of configurations are new at the new node count), and the warm
re-solve from 4.66-4.74 s to 4.17-4.18 s, against 5.41-5.48 s cold. The rest is the search's
proof, as long as cold's: no sub-problem bound holds across a group going to one node.

Everything else of the state (the configurations of each micro-batch size after memory and
dominance pruning, the mixed-stage candidates, the load-balance floors, the capacity and
positional bounds, the tail staircases) depends on the set of configurations, hence on the
node counts, and is rebuilt: when in doubt, invalidate.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from haap_solver.cost.evaluate import CostModel
from haap_solver.instance import Instance
from haap_solver.search.coefficients import CoefficientCache
from haap_solver.search.space import (
    UNEVEN_MAX_GPUS,
    StageConfig,
    mixed_space_full,
    same_group_space,
    uneven_searched,
)
from haap_solver.search.state import SearchState

_BY_CONFIG = ("reps", "parts", "taus", "endonly", "mem", "dom", "domt")
"""CoefficientCache._misc tags keyed (tag, StageConfig, ...): carried by the config's groups.
("domt", a, b, micro_batch) and ("dom", a, b, micro_batch): whether `a`'s time pieces, and its
memory forms, are all below `b`'s, the parts of the dominance test that read nothing else
(`CoefficientCache._times_below`, `_memory_below`); `a` and `b` are on the same node groups.)"""
_BY_DEVICE = ("part", "maxp", "memp", "unit")
"""Tags keyed (tag, device name, ...): carried where the device's numbers are unchanged. (The
per-group pieces ("part") are also keyed by the stage's ring bandwidth and latency, which the
carried "link" entries give.)"""


@dataclass(frozen=True, kw_only=True)
class CacheReuse:
    """How much of a coefficient cache a change carried over."""

    kept: int
    """Entries carried into the new cache."""
    total: int
    """Entries the old cache held."""
    bounds_kept: int = 0
    """Sub-problem bounds carried (`SearchState.sub_bounds`)."""
    bounds_total: int = 0
    """Sub-problem bounds the old state held."""
    bounds_note: str = ""
    """Why no bound was carried ("" where they were, or there were none)."""
    floors_kept: int = 0
    """Space floors carried (`SearchState.space_floors`: "single", "mixed")."""

    @property
    def share(self) -> float:
        """Share of the old entries carried (1.0 for an empty old cache)."""
        return self.kept / self.total if self.total else 1.0

    @property
    def bounds_share(self) -> float:
        """Share of the old sub-problem bounds carried (1.0 where there were none)."""
        return self.bounds_kept / self.bounds_total if self.bounds_total else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"kept": self.kept, "total": self.total, "share": self.share,
                "bounds_kept": self.bounds_kept, "bounds_total": self.bounds_total,
                "bounds_share": self.bounds_share, "bounds_note": self.bounds_note,
                "floors_kept": self.floors_kept}


def _job_key(instance: Instance) -> tuple[Any, ...]:
    """What every coefficient depends on besides the node groups."""
    return (instance.model, dataclasses.replace(instance.training, global_batch_size=1),
            instance.profile, instance.cluster.cross_class_gbit_s)


def _group_signatures(instance: Instance, *, one_node: bool) -> dict[str, tuple[Any, ...]]:
    """Per node group: everything of it but its node count, its device type's numbers and, with
    `one_node`, whether it has one node (what the point-to-point times read of the count)."""
    cluster = instance.cluster
    return {g.name: (tuple((f.name, getattr(g, f.name)) for f in dataclasses.fields(g)
                           if f.name != "num_nodes"),
                     g.num_nodes == 1 if one_node else None, cluster.devices[g.device])
            for g in cluster.node_groups}


class _Carrier:
    """Decides, per cache entry, whether it holds on the new instance."""

    def __init__(self, old: Instance, new: Instance):
        before, after = (_group_signatures(old, one_node=False),
                         _group_signatures(new, one_node=False))
        self.groups = {name for name, sig in after.items() if before.get(name) == sig}
        before, after = (_group_signatures(old, one_node=True),
                         _group_signatures(new, one_node=True))
        self.p2p_groups = {name for name, sig in after.items() if before.get(name) == sig}
        """The groups whose point-to-point entries hold: cost.network reads a group's node
        count there alone (a send within a one-node group is an intra-node transfer)."""
        self.devices = {name for name, dev in new.cluster.devices.items()
                        if old.cluster.devices.get(name) == dev}

    def config(self, c: StageConfig) -> bool:
        return all(g in self.groups for g in c.groups)

    def names(self, key: str | tuple[str, ...]) -> bool:
        return all(g in self.groups for g in ((key,) if isinstance(key, str) else key))

    def p2p(self, c: StageConfig, other: str | tuple[str, ...]) -> bool:
        return all(g in self.p2p_groups
                   for g in (*c.groups, *((other,) if isinstance(other, str) else other)))

    def misc(self, key: tuple[Any, ...]) -> bool:
        tag = key[0]
        if tag in _BY_CONFIG:
            return self.config(key[1])
        if tag in _BY_DEVICE:
            return key[1] in self.devices
        if tag in ("link", "neighbour"):
            return self.names(key[1])
        if tag == "split":
            return self.names(tuple(name for name, _, _ in key[1]))
        return False  # ("mixed", b): the candidates depend on the node counts


def _same_job(old: CostModel, new: CostModel) -> bool:
    """Whether two cost models cost every configuration of a shared node group alike."""
    return (_job_key(old.instance) == _job_key(new.instance)
            and old.constants == new.constants and old.profile is new.profile
            and (old.embedding_held, old.head_held) == (new.embedding_held, new.head_held))


def bounds_break(old: CostModel, new: CostModel) -> str | None:
    """Why the sub-problem bounds proven on `old`'s instance may not hold on `new`'s, or None
    where they hold: `new` has a subset of the nodes of `old` (nodes lost, groups removed) and
    everything else the same, so every plan of `new` is one of `old` at the same cost
    (formulations Sec. 8). A group that drops to one node is excluded: a stage's sends towards
    a one-node group of its own are intra-node transfers, cheaper than over the network."""
    if not _same_job(old, new):
        return "the model, training set-up, cost constants or profile changed"
    a, b = old.instance, new.instance
    if a.training != b.training:
        return "the global batch size changed"
    if a.cluster.cross_class_gbit_s != b.cluster.cross_class_gbit_s:
        return "the fabric between NIC classes changed"
    before = {g.name: g for g in a.cluster.node_groups}
    for g in b.cluster.node_groups:
        was = before.get(g.name)
        if was is None:
            return f"node group {g.name!r} is new"
        if dataclasses.replace(was, num_nodes=g.num_nodes) != g \
                or a.cluster.devices.get(g.device) != b.cluster.devices[g.device]:
            return f"node group {g.name!r} changed"
        if g.num_nodes > was.num_nodes:
            return f"node group {g.name!r} gained nodes"
        if g.num_nodes == 1 < was.num_nodes:
            return f"node group {g.name!r} dropped to one node"
    return None


def carry_bounds(old: SearchState, new: SearchState) -> tuple[int, str]:
    """Put into `new.sub_bounds` the bounds of `old` that hold on `new`'s instance
    (`bounds_break`); the mixed-stage ones only at micro-batch sizes whose mixed space did not
    widen (full on `old`, or cut on `new`: Sec. 1.1). Returns how many, and why none."""
    if not old.sub_bounds:
        return 0, ""
    why = bounds_break(old.cost_model, new.cost_model)
    if why is not None:
        return 0, why
    a, b = old.instance, new.instance
    if uneven_searched(b) and not uneven_searched(a):
        # (Fewer GPUs may bring uneven shares into the space, Sec. 1: no longer nested.)
        return 0, f"uneven shares join the space at {UNEVEN_MAX_GPUS} GPUs or fewer"
    sizes = {sub.micro_batch for space, sub in old.sub_bounds if space == "mixed"}
    # (Fewer nodes may also bring stages with two replica groups on one node group into the
    # mixed space at a size, Sec. 1.1: same_group_space is not monotone in the node counts.)
    nested = {m: (mixed_space_full(a, m) or not mixed_space_full(b, m))
              and (same_group_space(a, m) or not same_group_space(b, m)) for m in sizes}
    new.sub_bounds = {(space, sub): bound for (space, sub), bound in old.sub_bounds.items()
                      if space == "single" or nested[sub.micro_batch]}
    # A floor on every plan of a space: the mixed one only where the mixed space is nested at
    # every micro-batch size of the new instance.
    new.space_floors = {space: floor for space, floor in old.space_floors.items()
                        if space == "single" or all(
                            (mixed_space_full(a, m) or not mixed_space_full(b, m))
                            and (same_group_space(a, m) or not same_group_space(b, m))
                            for m in new.micro_batches())}
    return len(new.sub_bounds), ""


def carry_cache(old: CoefficientCache, cost_model: CostModel) -> tuple[CoefficientCache,
                                                                      CacheReuse]:
    """A coefficient cache on `cost_model` holding the entries of `old` that hold on its
    instance (module docstring), and how many were carried."""
    new = CoefficientCache(cost_model)
    total = len(old._coeffs) + len(old._max_layers) + len(old._p2p) + len(old._misc)
    if not _same_job(old.cm, cost_model):
        return new, CacheReuse(kept=0, total=total)
    keep = _Carrier(old.instance, cost_model.instance)
    new._coeffs = {k: v for k, v in old._coeffs.items() if keep.config(k[0])}
    new._max_layers = {k: v for k, v in old._max_layers.items() if keep.config(k[0])}
    new._p2p = {k: v for k, v in old._p2p.items() if keep.p2p(k[0], k[2])}
    new._misc = {k: v for k, v in old._misc.items() if keep.misc(k)}
    kept = len(new._coeffs) + len(new._max_layers) + len(new._p2p) + len(new._misc)
    return new, CacheReuse(kept=kept, total=total)


def carry_state(old: SearchState, instance: Instance) -> tuple[SearchState, CacheReuse]:
    """A fresh search state on `instance` whose coefficient caches (its own and those of its
    end-stage relaxations, `SearchState.without_ends`) carry what holds over from `old`'s."""
    profile = old.cost_model.profile if instance.profile == old.instance.profile else None
    cm = CostModel(instance, constants=old.cost_model.constants, profile=profile)
    state = SearchState(instance, cm)
    state.cache, reuse = carry_cache(old.cache, cm)
    kept, total = reuse.kept, reuse.total
    for (embedding, head), bare in old._without_ends.items():
        fresh = state.without_ends(embedding, head)
        fresh.cache, more = carry_cache(bare.cache, fresh.cost_model)
        kept, total = kept + more.kept, total + more.total
    bounds_kept, note = carry_bounds(old, state)
    return state, CacheReuse(kept=kept, total=total, bounds_kept=bounds_kept,
                             bounds_total=len(old.sub_bounds), bounds_note=note,
                             floors_kept=len(state.space_floors))
