"""Brute force: every plan of the documented search space, enumerated from its definition.

The ground truth the exact search is checked against (tests/test_bruteforce_agreement.py). It
shares no code with the search: it imports none of ``haap_solver.search``'s space, coefficients,
bounds or formulation, nor ``SearchState`` (only the ``SolveResult`` record), and builds plans
from the definition below, written from formulations/stage-assignment.md Sec. 1 and 1.1 and
issue 19, using only the plan types, the instance, the cost model's public API
(``CostModel.evaluate``, ``layer_cost``, ``replica_memory``, ``params_held``, ``dp_link``) and
the validator.
A wrong search space (a stage shape the search forgets, a placement it assumes is always
possible, a batch split it gets wrong) makes the two disagree.

**The space** (``space="documented"``, the default). For every micro-batch size ``b`` dividing
``training.global_batch_size`` (``m = B / b`` micro-batches) and every schedule of
``training.schedules``:

* ``p >= 1`` stages with contiguous layer ranges covering the ``L`` decoder layers in order; every
  stage holds at least one layer, except that with ``p >= 2`` the first stage may hold none (the
  embedding only) and the last may hold none (the LM head only) (``empty_end_stages``, the
  instance's ``training.empty_end_stages``; formulations Sec. 1.2), such an empty stage taking
  any stage option below, single-type or (with ``mixed=True``) mixed;
* each stage has one recomputation mode of ``training.recompute``;
* a **single-type stage** is one replica group on one node group ``g`` (``q_g`` GPUs per node):
  TP ``t <= min(q_g, training.max_tp)`` dividing the attention heads, the KV heads and
  ``ffn_hidden_size`` (not necessarily ``q_g``, nor a power of two: TP 2 on a 3-GPU node, TP 3 with
  24 heads; its replicas each on one node, ``q_g // t`` a node at most); DP ``d`` from 1 to
  ``b``, each replica taking ``b / d`` sequences where ``d`` divides ``b``, else ``b mod d`` of
  them ``ceil(b / d)`` and the others ``floor(b / d)`` (*uneven shares*, Sec. 1: two replica groups
  of the node group, placed together as one stage), at most
  ``training.max_micro_batch_share``; its ``t d`` GPUs
  any count up to the group's (``_single_gpus_allowed``, Sec. 1.3): part of one node (3 of a 4-GPU
  node), one whole node of any size (3 or 6 GPUs), or more than a node, whole nodes or not (6 over
  4-GPU nodes);
* a **mixed stage** (only with ``mixed=True``; Sec. 1.1): replica groups (parts), part ``j``
  with ``count_j`` replicas of TP ``t_j`` (any TP degree of its group, as above; before
  2026-12-02 only a power of two dividing ``q_g``) taking ``share_j`` sequences each,
  ``sum_j count_j share_j = b``. At a
  micro-batch size whose *full* mixed space has at most ``MIXED_FULL_CANDIDATES`` candidates
  (skeleton and split; ``mixed_space_is_full``): one part on each of two or more distinct node
  groups of any device types, any ``count_j`` the group holds (``N_g floor(q_g / t_j)``, each
  TP group on one node), every split with
  ``1 <= share_j <= max_micro_batch_share`` where every replica holds one layer as a middle stage
  with one micro-batch in flight (``_full_mixed_options``); there too, on clusters of at most
  ``SAME_GROUP_MAX_GPUS`` GPUs where they number at most ``SAME_GROUP_CANDIDATES`` (skeleton and
  split; ``_same_group_space_is_small``), stages with two parts on ONE node group
  (``_same_group_skeletons``): the two alone when their TP degrees differ, or beside one part of
  another group, the two differing in TP degree or share (``_same_group_split_ok``), placed
  anywhere like any mixed part (a stage of one group then on one node or on several, its ring
  costed as placed). Elsewhere the *cut* space
  (``_cut_mixed_options``): two parts on node groups of different device types; each part's
  ``t_j count_j`` GPUs a power of two dividing its node size or whole nodes, one or two
  (``_mixed_part_gpus_allowed``); the shares are the documented split (``_mixed_split``): among
  the integer splits with ``1 <= share_j <= max_micro_batch_share`` where every replica holds one
  layer as a middle stage with one micro-batch in flight, the least per-layer time of the slowest
  replica (``CostModel.layer_cost``: forward + backward + TP), ties to the lighter split
  (``_lighter_first``); the stage exists only when that split is balanced (``_balanced``: every
  part busy for ``MIXED_MIN_BUSY`` of the stage's per-layer time, or the slowest with one
  sequence more per replica);
* **placement**: every way of putting each replica group's replicas on its group's nodes that
  the validator accepts (no node given more GPUs than it has), up to the symmetry of a group's
  identical nodes (``_group_placements``: one placement per orbit, the nodes' load vectors in
  non-increasing order), a single-type stage of at most ``q_g`` GPUs on one node (Sec. 1.3,
  ``_on_one_node``) unless its replicas may spread: two or more of them, in a group of two nodes
  or more, where its data-parallel ring over the network is no faster than on one node in
  bandwidth and latency (``_may_spread``, asking ``CostModel.dp_link``; Sec. 1.3, spread
  stages); larger stages and mixed parts anywhere, filling holes. Not the search's
  placement: costs depend on placement (a stage's data-parallel ring is intra-node only when
  all its replicas share a node), and with part-node sizes not every selection that fits the
  GPUs packs, so this checks the search's claim that its canonical placement loses nothing
  and its packing rows forbid only what does not pack;
* memory fits on every GPU, as the validator (``plan_violations``) judges;
* under ``"interleaved-1f1b"`` (formulations Sec. 1.4, cost model Sec. 7.1) only plans of
  ``p >= 2`` stages with ``m`` a multiple of ``p``, every stage's layer count a multiple of
  ``training.virtual_stages`` and no empty end stage (``_interleaving_allows``).

Every plan is costed by ``CostModel.evaluate`` and the least iteration time kept (ties: the
first found, in the order above: ``b``, schedule, ``p``, stage options, placements, layer splits).
A plan is handed to the validator when it would become the best, which gives the same minimum as
validating every plan. Memory is checked per stage before the plan is built (``_stage_fits``:
the validator's own call of ``CostModel.replica_memory``, memoised); ``prune_memory=False``
skips that and leaves memory to the validator alone (a diagnostic: the same answer, slower).

``space="validator"`` widens the space to what the validator accepts beyond it: every placement
(a part-node stage spread over nodes included, whatever its ring costs), and as stages of
several replica groups (``_validator_mixed_options``) up to VALIDATOR_MAX_PARTS of them, two on
one node group allowed (two TP degrees or two shares in a group), of any TP degree and GPU count
a group can place (TP 3, TP 2 on 3-GPU nodes), with every split at every micro-batch size (no cut
space; as empty end stages too, where the split fits one layer), and under "interleaved-1f1b"
empty end stages where ``empty_end_stages`` allows them; ``training.max_tp`` and
``max_micro_batch_share`` still bound it (they are the user's limits on the planner; the validator
does not read them). It measures what the documented space leaves out
(``benchmarks/gap_probe.py``).

Refuses (HaapError) instances whose space is larger than ``max_plans``, counted before any plan
is built (``space_size``).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cache

from haap_solver.cost.evaluate import CostModel, Evaluation
from haap_solver.errors import HaapError
from haap_solver.instance import Instance
from haap_solver.plan import Placement, Plan, ReplicaGroup, Stage
from haap_solver.result import SolveResult
from haap_solver.training import check_searchable
from haap_solver.validate import check_plan, plan_violations

METHOD = "bruteforce"
MAX_PLANS = 2_000_000
"""Largest space (``space_size``) the brute force enumerates."""
MIXED_MIN_BUSY = 0.9
"""Formulations Sec. 1.1: each part of a mixed stage busy for at least this share of the stage's
per-layer time at its split (or held back by integrality only)."""
SPACES = ("documented", "validator")
MIXED_MAX_PART_NODES = 2
"""Formulations Sec. 1.1: the most whole nodes one part of a mixed stage takes (cut space)."""
MIXED_FULL_CANDIDATES = 200
"""Formulations Sec. 1.1: the most candidates (skeleton and split, before memory and
recomputation) the full mixed space may have at a micro-batch size for the search to take it
there (else the cut space)."""
UNEVEN_MAX_GPUS = 32
"""Formulations Sec. 1: the largest cluster (GPUs) whose documented space has uneven shares (a
DP degree that does not divide the micro-batch); the validator's space has them on any."""


@dataclass(frozen=True)
class Part:
    """One replica group of a stage option, before placement."""

    node_group: str
    """Node group the replicas run on."""
    device: str
    """Its device type."""
    tp: int
    """TP degree of each replica."""
    count: int
    """Replicas."""
    share: int
    """Sequences of each micro-batch each replica takes."""

    @property
    def gpus(self) -> int:
        return self.tp * self.count


@dataclass(frozen=True)
class StageOption:
    """What one stage runs on, before its layers and placement: one part, or several (an
    uneven single-type stage's two, a mixed one's)."""

    parts: tuple[Part, ...]
    """Replica groups (one for a single-type stage, two for an uneven one, two or more for a
    mixed one)."""
    recompute: str
    """Recomputation mode."""

    def gpus_in(self, group: str) -> int:
        return sum(p.gpus for p in self.parts if p.node_group == group)

    @property
    def single_type(self) -> bool:
        """One replica group, or an uneven single-type stage's two (one node group, one TP
        degree; a stage of two TP degrees on one node group is a mixed one, Sec. 1.1)."""
        return len({p.node_group for p in self.parts}) == 1 and \
            len({p.tp for p in self.parts}) == 1

    def label(self) -> str:
        return "+".join(f"{p.node_group}:tp{p.tp}x{p.count}@{p.share}" for p in self.parts) + \
            f":{self.recompute}"


# -- The definition of the space --------------------------------------------------------------
def _is_pow2(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def _divides_model(instance: Instance, tp: int) -> bool:
    m = instance.model
    return all(n % tp == 0 for n in (m.num_attention_heads, m.kv_heads, m.ffn_hidden_size))


def tp_degrees(instance: Instance, gpus_per_node: int) -> list[int]:
    """TP degrees of a node group of `gpus_per_node` GPUs per node: any degree up to the node
    size and training.max_tp that divides heads, KV heads and FFN width (Sec. 1: TP 2 on a
    3-GPU node, TP 3 with 24 heads; both spaces; a mixed part's is narrower in the documented
    space, see mixed_options)."""
    limit = min(gpus_per_node, instance.training.max_tp)
    return [t for t in range(1, limit + 1) if _divides_model(instance, t)]


def _part_tps(instance: Instance, gpus_per_node: int, space: str) -> list[int]:
    """TP degrees of a mixed stage's part: every degree of the group (Sec. 1.1; a power of two
    dividing the node size before 2026-12-02), in both spaces."""
    return tp_degrees(instance, gpus_per_node)


def _part_replicas_max(num_nodes: int, gpus_per_node: int, tp: int) -> int:
    """The most replicas of TP `tp` a node group holds, each on one node (TP 2 on 3-GPU nodes:
    one a node)."""
    return num_nodes * (gpus_per_node // tp)


def _single_gpus_allowed(gpus: int, group_gpus: int) -> bool:
    """A single-type stage's GPU count: any count within the group (Sec. 1.3): part of one node
    (3 of 4 included), one whole node of any size, or more than a node, whole nodes or not
    (6 GPUs over 4-GPU nodes)."""
    return 1 <= gpus <= group_gpus


def _mixed_part_gpus_allowed(gpus: int, gpus_per_node: int, group_gpus: int, space: str) -> bool:
    """A mixed stage's part: a power of two dividing its node size, or whole nodes (one node of
    any size, 3 GPUs of a 3-GPU node included, or two: issue 23 item 1; Sec. 1.1 caps a part at
    MIXED_MAX_PART_NODES = 2 nodes)."""
    if gpus > group_gpus:
        return False
    if space == "validator":
        return True
    return (_is_pow2(gpus) and gpus_per_node % gpus == 0) or (
        gpus % gpus_per_node == 0 and gpus <= MIXED_MAX_PART_NODES * gpus_per_node)


def single_options(instance: Instance, b: int, space: str = "documented") -> list[StageOption]:
    """Every single-type stage option at micro-batch `b`, in node-group, TP, DP, mode order.

    DP `d` need not divide `b` (formulations Sec. 1, uneven shares): then `b mod d` replicas
    take `ceil(b / d)` sequences and the others `floor(b / d)`, two replica groups of the node
    group (the largest share at most max_micro_batch_share)."""
    t = instance.training
    out: list[StageOption] = []
    uneven = space == "validator" or instance.cluster.num_gpus <= UNEVEN_MAX_GPUS
    for g in instance.cluster.node_groups:
        for tp in tp_degrees(instance, g.gpus_per_node):
            for d in range(1, b + 1):
                low, more = divmod(b, d)
                if low + (more > 0) > t.max_micro_batch_share or (more and not uneven):
                    continue
                if not _single_gpus_allowed(tp * d, g.num_gpus):
                    continue
                parts: tuple[Part, ...] = (Part(node_group=g.name, device=g.device, tp=tp,
                                                count=more, share=low + 1),) if more else ()
                parts += (Part(node_group=g.name, device=g.device, tp=tp, count=d - more,
                               share=low),)
                out.extend(StageOption(parts=parts, recompute=r) for r in t.recompute)
    return out


def _unit(cm: CostModel, device: str, tp: int, share: int, dp: int,
          recompute: str) -> tuple[float, float, bool]:
    """(per-layer forward + backward + TP time, memory fraction, fits) of one replica holding one
    layer as a middle stage with one micro-batch in flight: what the split rule weighs."""
    lc = cm.layer_cost(device, tp, share, recompute)
    mem = cm.replica_memory(device=device, tp=tp, share=share, dp=dp, num_layers=1,
                            recompute=recompute, params=cm.params_held(1, False, False, True),
                            is_first=False, is_last=False, in_flight=1)
    return lc.fwd_s + lc.bwd_s + lc.tp_fwd_s + lc.tp_bwd_s, mem.total / mem.capacity, mem.fits


def _lighter_first(time_s: float, memory_fraction: float, index: int) -> tuple[float, float, int]:
    """The order of candidate splits: least per-layer time, then the lighter split, then the
    first enumerated (part 0's share ascending).

    Formulations Sec. 1.1 says "ties to the lighter" without saying lighter in what; this reads
    it as the smaller largest memory fraction (used / capacity) over the stage's replicas."""
    return (time_s, memory_fraction, index)


def _mixed_split(cm: CostModel, skeleton: tuple[tuple[str, str, int, int], ...], b: int,
                 recompute: str) -> tuple[int, ...] | None:
    """The documented split of a mixed skeleton ((group, device, tp, count) per part) at
    micro-batch `b`: the shares, or None when no split fits one layer or the best one is not
    balanced."""
    cap = cm.instance.training.max_micro_batch_share
    counts = [c for _, _, _, c in skeleton]
    dp = sum(counts)
    best: tuple[tuple[float, float, int], tuple[int, ...]] | None = None
    candidates = [s for s in itertools.product(range(1, cap + 1), repeat=len(skeleton))
                  if sum(c * x for c, x in zip(counts, s, strict=True)) == b]
    for index, shares in enumerate(candidates):
        units = [_unit(cm, dev, tp, s, dp, recompute)
                 for (_, dev, tp, _), s in zip(skeleton, shares, strict=True)]
        if not all(fits for _, _, fits in units):
            continue
        key = _lighter_first(max(u[0] for u in units), max(u[1] for u in units), index)
        if best is None or key < best[0]:
            best = (key, shares)
    if best is None:
        return None
    shares = best[1]
    return shares if _balanced(cm, skeleton, shares, recompute) else None


def _balanced(cm: CostModel, skeleton: tuple[tuple[str, str, int, int], ...],
              shares: tuple[int, ...], recompute: str) -> bool:
    """Formulations Sec. 1.1: every part busy for MIXED_MIN_BUSY of the stage's per-layer time,
    or (its idle time being integrality only) "the slowest with one sequence more per replica".

    The text leaves open what "the slowest" compares with; this reads it as at least the stage's
    per-layer time at the split (the slowest part's now), and asks neither whether that extra
    sequence fits memory nor whether it exceeds max_micro_batch_share."""
    dp = sum(c for _, _, _, c in skeleton)
    own = [_unit(cm, dev, tp, s, dp, recompute)[0]
           for (_, dev, tp, _), s in zip(skeleton, shares, strict=True)]
    stage = max(own)
    for (_, dev, tp, _), s, t in zip(skeleton, shares, own, strict=True):
        if t < MIXED_MIN_BUSY * stage and _unit(cm, dev, tp, s + 1, dp, recompute)[0] < stage:
            return False
    return True


def _full_skeletons(instance: Instance, b: int,
                    space: str) -> Iterator[tuple[tuple[str, str, int, int], ...]]:
    """The skeletons ((group, device, tp, count) per part) of the full mixed space at `b`
    (formulations Sec. 1.1): one part on each of two or more distinct node groups (instance
    order; any device types), `count >= 1` replicas of a TP degree of the group with
    `tp x count` at most the group's GPUs, `sum count <= b`."""
    groups = instance.cluster.node_groups
    per_group = [[(g.name, g.device, tp, n) for tp in _part_tps(instance, g.gpus_per_node, space)
                  for n in range(1, b + 1)
                  if n <= _part_replicas_max(g.num_nodes, g.gpus_per_node, tp)]
                 for g in groups]
    for k in range(2, len(groups) + 1):
        for chosen in itertools.combinations(range(len(groups)), k):
            for parts in itertools.product(*(per_group[i] for i in chosen)):
                if sum(n for _, _, _, n in parts) <= b:
                    yield parts


SAME_GROUP_MAX_GPUS = 10
"""Formulations Sec. 1.1: the largest cluster (GPUs) whose full mixed space also has stages with
two replica groups on one node group (``_same_group_skeletons``)."""


def _same_group_skeletons(instance: Instance, b: int,
                          space: str) -> Iterator[tuple[tuple[str, str, int, int], ...]]:
    """Formulations Sec. 1.1, on clusters of at most SAME_GROUP_MAX_GPUS GPUs: two parts on one
    node group (their GPUs at most the group's), alone when their TP degrees differ, or beside
    one part of another node group (three in all); parts in instance order of their groups,
    the two of one group as ``combinations_with_replacement`` gives them."""
    if instance.cluster.num_gpus > SAME_GROUP_MAX_GPUS:
        return
    groups = instance.cluster.node_groups
    per_group = [[(g.name, g.device, tp, n) for tp in _part_tps(instance, g.gpus_per_node, space)
                  for n in range(1, b + 1)
                  if n <= _part_replicas_max(g.num_nodes, g.gpus_per_node, tp)]
                 for g in groups]
    for i, g in enumerate(groups):
        for x, y in itertools.combinations_with_replacement(per_group[i], 2):
            if x[2] * x[3] + y[2] * y[3] > g.num_gpus or x[3] + y[3] > b:
                continue
            if x[2] != y[2]:
                yield (x, y)
            for j in range(len(groups)):
                if j == i:
                    continue
                for z in per_group[j]:
                    if x[3] + y[3] + z[3] <= b:
                        yield (x, y, z) if i < j else (z, x, y)


SAME_GROUP_CANDIDATES = 200
"""Formulations Sec. 1.1: the most candidates with two replica groups on one node group
(skeleton and split, before memory and recomputation) a micro-batch size may have for the full
mixed space there to hold them."""


def _same_group_space_is_small(instance: Instance, b: int, space: str) -> bool:
    """Formulations Sec. 1.1: at most SAME_GROUP_CANDIDATES candidates with two replica groups on
    one node group at `b` (every skeleton of ``_same_group_skeletons``, every split that
    ``_same_group_split_ok`` keeps)."""
    seen = 0
    for skeleton in _same_group_skeletons(instance, b, space):
        seen += sum(1 for s in _full_splits(instance, skeleton, b)
                    if _same_group_split_ok(skeleton, s))
        if seen > SAME_GROUP_CANDIDATES:
            return False
    return True


def _same_group_split_ok(skeleton: tuple[tuple[str, str, int, int], ...],
                         shares: tuple[int, ...]) -> bool:
    """Two parts on one node group are two replica groups only when their TP degrees or shares
    differ (else one group of their summed count), and two of one TP degree and count are
    written with the smaller share first."""
    for i in range(len(skeleton)):
        for j in range(i + 1, len(skeleton)):
            a, c = skeleton[i], skeleton[j]
            if a[0] != c[0]:
                continue
            if a[2] == c[2] and shares[i] == shares[j]:
                return False
            if a[2:] == c[2:] and shares[i] > shares[j]:
                return False
    return True


def _full_splits(instance: Instance, skeleton: tuple[tuple[str, str, int, int], ...],
                 b: int) -> list[tuple[int, ...]]:
    """Every split of a skeleton: shares in [1, max_micro_batch_share] with
    ``sum count x share = b``."""
    cap = instance.training.max_micro_batch_share
    counts = [n for _, _, _, n in skeleton]
    return [s for s in itertools.product(range(1, cap + 1), repeat=len(skeleton))
            if sum(c * x for c, x in zip(counts, s, strict=True)) == b]


MIXED_FULL_SMALL_GPUS = 6
MIXED_FULL_CANDIDATES_SMALL = 1000
"""Formulations Sec. 1.1: on clusters of at most MIXED_FULL_SMALL_GPUS GPUs the full mixed space
is taken at a size of up to this many candidates (MIXED_FULL_CANDIDATES elsewhere)."""


def mixed_space_is_full(instance: Instance, b: int) -> bool:
    """Formulations Sec. 1.1: the full mixed space at `b` where it has at most
    MIXED_FULL_CANDIDATES candidates (MIXED_FULL_CANDIDATES_SMALL on small clusters; skeleton and
    split; documented TP degrees), else the cut one."""
    budget = (MIXED_FULL_CANDIDATES_SMALL if instance.cluster.num_gpus <= MIXED_FULL_SMALL_GPUS
              else MIXED_FULL_CANDIDATES)
    seen = 0
    for skeleton in _full_skeletons(instance, b, "documented"):
        seen += len(_full_splits(instance, skeleton, b))
        if seen > budget:
            return False
    return True


def mixed_options(instance: Instance, b: int, cm: CostModel,
                  space: str = "documented") -> list[StageOption]:
    """Every mixed stage option at micro-batch `b`: the full space's where it is small enough
    (``mixed_space_is_full``), else the cut space's."""
    if space == "validator":
        return _validator_mixed_options(instance, b, cm)
    if mixed_space_is_full(instance, b):
        return _full_mixed_options(instance, b, cm, space)
    return _cut_mixed_options(instance, b, cm, space)


VALIDATOR_MAX_PARTS = 3
"""space="validator": the most replica groups of one stage (at most two on one node group)."""


def _validator_mixed_options(instance: Instance, b: int, cm: CostModel) -> list[StageOption]:
    """space="validator": every stage of two or more replica groups the validator accepts, up to
    VALIDATOR_MAX_PARTS groups and two on one node group: any node groups (two replica groups
    on ONE node group too: two TP degrees, or two shares, whose ring may sit inside a node), any
    TP degree of the group and GPU count, every split with shares in [1,
    max_micro_batch_share] where every replica holds one layer as a middle stage with one
    micro-batch in flight (a split failing that is in no valid plan with a layer; an empty end
    stage of such a split is left out). Two replica groups on one node group with the same TP
    degree and share are one group of their summed count (the same cost, the same
    placements), so only one of the two writings is enumerated."""
    groups = instance.cluster.node_groups
    cap = instance.training.max_micro_batch_share
    per_group = [[(g.name, g.device, tp, n) for tp in tp_degrees(instance, g.gpus_per_node)
                  for n in range(1, b + 1)
                  if n <= _part_replicas_max(g.num_nodes, g.gpus_per_node, tp)]
                 for g in groups]
    skeletons: list[tuple[tuple[str, str, int, int], ...]] = []
    for k in range(2, VALIDATOR_MAX_PARTS + 1):
        for combo in itertools.combinations_with_replacement(range(len(groups)), k):
            if any(combo.count(i) > 2 for i in combo):
                continue
            choices: list[list[tuple[tuple[str, str, int, int], ...]]] = []
            for i in sorted(set(combo)):
                if combo.count(i) == 1:
                    choices.append([(x,) for x in per_group[i]])
                else:
                    choices.append([(x, y) for x, y in itertools.combinations_with_replacement(
                        per_group[i], 2)
                        if x[2] * x[3] + y[2] * y[3] <= groups[i].num_gpus])
            for picked in itertools.product(*choices):
                parts = tuple(x for chunk in picked for x in chunk)
                if sum(n for _, _, _, n in parts) <= b:
                    skeletons.append(parts)
    out: list[StageOption] = []
    for skeleton in skeletons:
        dp = sum(n for _, _, _, n in skeleton)
        counts = [n for _, _, _, n in skeleton]
        splits = [s for s in itertools.product(range(1, cap + 1), repeat=len(skeleton))
                  if sum(c * x for c, x in zip(counts, s, strict=True)) == b]
        for shares in splits:
            keyed = [(g, tp, x) for (g, _, tp, _), x in zip(skeleton, shares, strict=True)]
            if len(set(keyed)) < len(keyed):
                continue  # two groups that are one
            if any(skeleton[i][0] == skeleton[j][0] and skeleton[i] == skeleton[j]
                   and shares[i] > shares[j]
                   for i in range(len(skeleton)) for j in range(i + 1, len(skeleton))):
                continue  # the same two groups in the other order
            out.extend(_fitting_options(instance, cm, skeleton, shares, dp))
    return out


def _fitting_options(instance: Instance, cm: CostModel,
                     skeleton: tuple[tuple[str, str, int, int], ...], shares: tuple[int, ...],
                     dp: int) -> list[StageOption]:
    """The stage options of one skeleton ((node group, device, TP, count) per part) at one
    split, one per recomputation mode under which every replica holds a layer as a middle stage
    with one micro-batch in flight."""
    return [StageOption(parts=tuple(Part(node_group=g, device=dev, tp=tp, count=n, share=x)
                                    for (g, dev, tp, n), x in zip(skeleton, shares,
                                                                  strict=True)),
                        recompute=r)
            for r in instance.training.recompute
            if all(_unit(cm, dev, tp, x, dp, r)[2]
                   for (_, dev, tp, _), x in zip(skeleton, shares, strict=True))]


def _full_mixed_options(instance: Instance, b: int, cm: CostModel,
                        space: str) -> list[StageOption]:
    """The full space (Sec. 1.1): every skeleton of ``_full_skeletons``, every recomputation
    mode, every split (shares in [1, max_micro_batch_share], ``sum count x share = b``) where
    every replica holds one layer as a middle stage with one micro-batch in flight."""
    out: list[StageOption] = []
    same_group = _same_group_skeletons(instance, b, space) \
        if _same_group_space_is_small(instance, b, space) else iter(())
    for skeleton in itertools.chain(_full_skeletons(instance, b, space), same_group):
        dp = sum(n for _, _, _, n in skeleton)
        splits = [s for s in _full_splits(instance, skeleton, b)
                  if _same_group_split_ok(skeleton, s)]
        by_mode: dict[str, list[StageOption]] = {}
        for shares in splits:  # (options in recomputation-mode order, then split order)
            for option in _fitting_options(instance, cm, skeleton, shares, dp):
                by_mode.setdefault(option.recompute, []).append(option)
        out.extend(o for r in instance.training.recompute for o in by_mode.get(r, []))
    return out


def _cut_mixed_options(instance: Instance, b: int, cm: CostModel,
                       space: str = "documented") -> list[StageOption]:
    """The cut space (Sec. 1.1): two node groups of different device types (in the instance's
    order), every allowed part shape of each, every recomputation mode, with the documented
    split when it exists and is balanced."""
    groups = instance.cluster.node_groups
    shapes: list[list[tuple[str, str, int, int]]] = []
    for g in groups:
        opts = []
        for tp in _part_tps(instance, g.gpus_per_node, space):
            for count in range(1, b + 1):
                if count > _part_replicas_max(g.num_nodes, g.gpus_per_node, tp):
                    continue
                if _mixed_part_gpus_allowed(tp * count, g.gpus_per_node, g.num_gpus, space):
                    opts.append((g.name, g.device, tp, count))
        shapes.append(opts)
    out: list[StageOption] = []
    for i, j in itertools.combinations(range(len(groups)), 2):
        if groups[i].device == groups[j].device:
            continue
        for a in shapes[i]:
            for c in shapes[j]:
                if a[3] + c[3] > b:
                    continue  # every replica takes at least one sequence
                for r in instance.training.recompute:
                    shares = _mixed_split(cm, (a, c), b, r)
                    if shares is None:
                        continue
                    parts = tuple(Part(node_group=g, device=dev, tp=tp, count=n, share=s)
                                  for (g, dev, tp, n), s in zip((a, c), shares, strict=True))
                    out.append(StageOption(parts=parts, recompute=r))
    return out


def layer_splits(num_layers: int, p: int, *, empty_ends: bool) -> Iterator[tuple[int, ...]]:
    """Every split of the layers over p stages in order: each stage >= 1 layer, except the first
    and the last when p >= 2 and `empty_ends` (>= 0)."""
    lows = [1] * p
    if empty_ends and p >= 2:
        lows[0] = lows[-1] = 0

    def rec(k: int, left: int) -> Iterator[tuple[int, ...]]:
        if k == p - 1:
            if left >= lows[k]:
                yield (left,)
            return
        for n in range(lows[k], left - sum(lows[k + 1:]) + 1):
            for rest in rec(k + 1, left - n):
                yield (n, *rest)

    yield from rec(0, num_layers)


def count_layer_splits(num_layers: int, p: int, *, empty_ends: bool) -> int:
    """len(layer_splits(...)) in closed form: C(L - 1, p - 1), or C(L + 1, p - 1) with empty
    ends (one more unit at each end makes them positive)."""
    if empty_ends and p >= 2:
        return math.comb(num_layers + 1, p - 1)
    return math.comb(num_layers - 1, p - 1)


# -- Placement -------------------------------------------------------------------------------
@cache
def _group_placements(items: tuple[tuple[int, int], ...], num_nodes: int,
                      gpus_per_node: int) -> tuple[tuple[tuple[Placement, ...], ...], ...]:
    """Every placement of replica groups `items` ((tp, count) each) on a node group's nodes that
    gives no node more than its GPUs, one per class of node relabellings: node k's load vector
    (replicas of each item on it) is lexicographically at most node k-1's. Each entry gives each
    item's placement (nodes with at least one of its replicas)."""
    n_items = len(items)
    out: list[tuple[tuple[Placement, ...], ...]] = []
    columns: list[tuple[int, ...]] = []

    def node_loads(left: tuple[int, ...], bound: tuple[int, ...] | None) -> Iterator[
            tuple[int, ...]]:
        for vec in itertools.product(*(range(r + 1) for r in left)):
            if sum(x * tp for x, (tp, _) in zip(vec, items, strict=True)) > gpus_per_node:
                continue
            if bound is not None and vec > bound:
                continue
            yield vec

    def rec(k: int, left: tuple[int, ...]) -> None:
        if k == num_nodes:
            if not any(left):
                out.append(tuple(
                    tuple(Placement(node=node, replicas=col[i])
                          for node, col in enumerate(columns) if col[i] > 0)
                    for i in range(n_items)))
            return
        for vec in node_loads(left, columns[-1] if columns else None):
            columns.append(vec)
            rec(k + 1, tuple(r - x for r, x in zip(left, vec, strict=True)))
            columns.pop()

    rec(0, tuple(c for _, c in items))
    return tuple(out)


def placements(instance: Instance, seq: Sequence[StageOption], space: str = "documented",
               cm: CostModel | None = None) -> Iterator[list[tuple[Placement, ...]]]:
    """Every placement of a stage sequence's replica groups (flattened, stage by stage) up to
    the symmetry of each node group's nodes; in the documented space, a single-type stage of at
    most a node's GPUs on one node (``_on_one_node``) unless it may spread (``_may_spread``,
    asked of `cm`; without one, none may)."""
    where: dict[str, list[int]] = {}
    flat = [part for option in seq for part in option.parts]
    # Per flat part: the stage it belongs to where that stage must sit on one node (a
    # single-type stage of at most a node that may not spread), else None.
    one_node: list[int | None] = []
    for s, option in enumerate(seq):
        whole = replace(option.parts[0], count=sum(p.count for p in option.parts))
        held = (space != "validator" and option.single_type
                and whole.gpus <= instance.cluster.group(whole.node_group).gpus_per_node
                and not (cm is not None and _may_spread(cm, whole)))
        one_node.extend(s if held else None for _ in option.parts)
    for k, part in enumerate(flat):
        where.setdefault(part.node_group, []).append(k)
    per_group = []
    for name, idx in where.items():
        g = instance.cluster.group(name)
        every = _group_placements(tuple((flat[k].tp, flat[k].count) for k in idx),
                                  g.num_nodes, g.gpus_per_node)
        stages: dict[int, list[int]] = {}
        for j, k in enumerate(idx):
            if one_node[k] is not None:
                stages.setdefault(one_node[k], []).append(j)  # type: ignore[arg-type]
        per_group.append((idx, _on_one_node(every, tuple(tuple(v) for v in stages.values()))))
    for choice in itertools.product(*(pls for _, pls in per_group)):
        out: list[tuple[Placement, ...]] = [()] * len(flat)
        for (idx, _), pls in zip(per_group, choice, strict=True):
            for k, pl in zip(idx, pls, strict=True):
                out[k] = pl
        yield out


@cache
def _on_one_node(pls: tuple[tuple[tuple[Placement, ...], ...], ...],
                 held: tuple[tuple[int, ...], ...]
                 ) -> tuple[tuple[tuple[Placement, ...], ...], ...]:
    """The placements in which the items of each tuple of `held` (a stage's replica groups:
    one, or an uneven stage's two) sit together on one node.

    Formulations Sec. 1 and 1.3: a single-type stage of at most a node's GPUs is on one node
    (its data-parallel ring inside it) unless it may spread (`_may_spread`, so not in `held`):
    spread, its ring crosses the network, and with part-node sizes (3 GPUs of a 4-GPU node) it
    may fill the holes a packing leaves (3 + 3 + 2 on two 4-GPU nodes, the 2 split 1 + 1). A
    larger stage and a mixed stage's part may spread freely: their rings cross the network
    anyway."""
    return tuple(pl for pl in pls
                 if all(len({x.node for j in stage for x in pl[j]}) == 1 for stage in held))


def _may_spread(cm: CostModel, part: Part) -> bool:
    """Formulations Sec. 1.3: a single-type stage of at most a node's GPUs may put its replicas
    on several nodes (its data-parallel ring then over the network) where that ring is no
    faster than on one node, in bandwidth and in latency, as ``CostModel.dp_link`` costs the
    two placements."""
    group = cm.instance.cluster.group(part.node_group)
    if part.count < 2 or group.num_nodes < 2:
        return False

    def ring(pl: tuple[Placement, ...]) -> tuple[float, float]:
        return cm.dp_link((ReplicaGroup(node_group=part.node_group, device=part.device,
                                        count=part.count, tp=part.tp,
                                        micro_batch_share=part.share, placement=pl),))

    net_gb_s, net_lat = ring((Placement(node=0, replicas=1),
                              Placement(node=1, replicas=part.count - 1)))
    own_gb_s, own_lat = ring((Placement(node=0, replicas=part.count),))
    return net_gb_s <= own_gb_s and net_lat >= own_lat


def _placement_bound(part: Part, num_nodes: int) -> int:
    """Ways to spread `part`'s replicas over `num_nodes` nodes, capacity and symmetry ignored: an
    upper bound on its placements, for space_size."""
    return math.comb(part.count + num_nodes - 1, num_nodes - 1)


# -- Enumeration -----------------------------------------------------------------------------
def stage_options(instance: Instance, b: int, cm: CostModel, *, mixed: bool,
                  space: str) -> list[StageOption]:
    """Single-type options, then mixed ones when `mixed`."""
    single = single_options(instance, b, space)
    return single + mixed_options(instance, b, cm, space) if mixed else single


def _max_stages(instance: Instance, empty_ends: bool, max_stages: int | None = None) -> int:
    """The most stages a plan can have: one layer each (plus two empty ends), one GPU each."""
    L = instance.model.num_layers
    most = min(L + 2 if empty_ends else L, instance.cluster.num_gpus)
    return most if max_stages is None else min(most, max_stages)


def _check_space(space: str) -> None:
    if space not in SPACES:
        raise ValueError(f"space: must be one of {', '.join(SPACES)}, got {space!r}")


def space_size(instance: Instance, *, mixed: bool = False, cost_model: CostModel | None = None,
               space: str = "documented", empty_end_stages: bool | None = None,
               max_stages: int | None = None, stop_above: float = math.inf) -> int:
    """Plans the enumeration may build, before memory: over b, schedule and p, the stage option
    sequences within every node group's GPUs, each weighted by an upper bound on its placements
    (``_placement_bound`` per part), times the layer splits.

    With a finite `stop_above` the count stops once it exceeds that (a number above it is
    returned): all a size limit needs. The exact count at 1,024 GPUs walks millions of GPU
    budgets of its four node groups and ran for over 20 minutes in `haap bench`, which gave
    the brute force 120 s."""
    _check_space(space)
    check_searchable(instance.training)  # (the search does not plan it either)
    if empty_end_stages is None:
        empty_end_stages = instance.training.empty_end_stages
    cm = cost_model or CostModel(instance)
    groups = instance.cluster.node_groups
    names = [g.name for g in groups]
    nodes = {g.name: g.num_nodes for g in groups}
    L = instance.model.num_layers
    p_max = _max_stages(instance, empty_end_stages, max_stages)
    B = instance.training.global_batch_size
    total = 0
    for b in range(1, B + 1):
        if B % b:
            continue
        options = stage_options(instance, b, cm, mixed=mixed, space=space)
        uses = [(tuple(o.gpus_in(n) for n in names),
                 math.prod(_placement_bound(p, nodes[p.node_group]) for p in o.parts))
                for o in options]

        @cache
        def sequences(budget: tuple[int, ...], k: int,
                      uses: tuple[tuple[tuple[int, ...], int], ...] = tuple(uses)) -> int:
            """Weighted stage sequences of `k` stages within `budget`; saturates above
            `stop_above` (any count above it is as good as another)."""
            if k == 0:
                return 1
            n = 0
            for use, weight in uses:
                if all(u <= left for u, left in zip(use, budget, strict=True)):
                    rest = tuple(left - u for u, left in zip(use, budget, strict=True))
                    n += weight * sequences(rest, k - 1)
                    if n > stop_above:
                        return n
            return n

        budget0 = tuple(g.num_gpus for g in groups)
        for p in range(1, p_max + 1):
            total += sequences(budget0, p) * count_layer_splits(L, p,
                                                                empty_ends=empty_end_stages)
            if total * len(instance.training.schedules) > stop_above:
                return total * len(instance.training.schedules)
    return total * len(instance.training.schedules)


class _Best:
    """The fastest valid plan so far, and what the enumeration did."""

    def __init__(self, time_limit_s: float):
        self.start = time.perf_counter()
        self.deadline = self.start + time_limit_s
        self.time = math.inf
        self.plan: Plan | None = None
        self.evaluation: Evaluation | None = None
        self.costed = 0
        self.rejected = 0
        self.timed_out = False
        self.info: dict[str, object] = {}
        self.score: Callable[[Plan, Evaluation], float] | None = None
        """What is minimised (None: the iteration time); `time` then holds the least score."""


def bruteforce(instance: Instance, *, time_limit_s: float = 600.0, threads: int = 1,
               seed: int = 0, cost_model: CostModel | None = None,
               max_plans: int = MAX_PLANS, mixed: bool = False, space: str = "documented",
               empty_end_stages: bool | None = None, prune_memory: bool = True,
               max_stages: int | None = None) -> SolveResult:
    """The least iteration time over the space of the module docstring, by enumeration.

    `mixed`: mixed-type stages too (as ``solve(mixed=True)``). `space`: "documented" or
    "validator" (wider; see the module docstring). `empty_end_stages`: embedding-only and
    head-only end stages too (default: the instance's training.empty_end_stages, as the
    search). `prune_memory=False` is a diagnostic that leaves memory to the validator alone.
    `max_stages` enumerates plans of at most that many stages only (its minimum bounds
    the whole space's from above). `threads` and `seed` are accepted for the methods' common
    interface and unused."""
    _check_space(space)
    # (space_size, below, refuses a schedule the planners do not search)
    if empty_end_stages is None:
        empty_end_stages = instance.training.empty_end_stages
    cm = cost_model or CostModel(instance)
    size = space_size(instance, mixed=mixed, cost_model=cm, space=space,
                      empty_end_stages=empty_end_stages, max_stages=max_stages,
                      stop_above=max_plans)
    if size > max_plans:
        raise HaapError(f"bruteforce refuses {instance.name}: its search space has more than "
                        f"the limit of {max_plans:,} plans (use it on small instances only)")
    best = _Best(time_limit_s)
    B = instance.training.global_batch_size
    for b in range(1, B + 1):
        if B % b:
            continue
        options = stage_options(instance, b, cm, mixed=mixed, space=space)
        for schedule in instance.training.schedules:
            for p in range(1, _max_stages(instance, empty_end_stages, max_stages) + 1):
                if not _enumerate(instance, cm, best, options, b, schedule, p,
                                  empty_end_stages=empty_end_stages,
                                  prune_memory=prune_memory, space=space):
                    return _result(instance, best, size, space, max_stages)
    return _result(instance, best, size, space, max_stages)


def _stage_fits(cm: CostModel, option: StageOption, layers: int, index: int, p: int,
                schedule: str, m: int, memo: dict[tuple[StageOption, int, int], bool]) -> bool:
    """Memory of the stage at position `index` of `p` fits every GPU: the validator's check."""
    key = (option, layers, index)
    hit = memo.get(key)
    if hit is None:
        # The micro-batches in flight of the stage, of its embedding and of its LM head (the
        # cost model's public count, which the validator's memory check agrees with).
        in_flight, emb, head = cm.in_flight(schedule, index, p, m)
        first, last = index == 0, index == p - 1
        params = cm.params_held(layers, first, last, p > 1)
        dp = sum(part.count for part in option.parts)
        hit = memo[key] = all(
            cm.replica_memory(device=part.device, tp=part.tp, share=part.share, dp=dp,
                              num_layers=layers, recompute=option.recompute, params=params,
                              is_first=first, is_last=last, in_flight=in_flight,
                              in_flight_first=emb, in_flight_last=head).fits
            for part in option.parts)
    return hit


def _interleaving_allows(instance: Instance, p: int, m: int,
                         split: tuple[int, ...], space: str = "documented") -> bool:
    """The documented space's rule for "interleaved-1f1b" (module docstring): at least two
    stages, m a multiple of p, every stage holding a positive multiple of v layers. The
    validator's (space="validator") lets an end stage hold none (0 is a multiple of v) where
    the split has empty ends."""
    v = instance.training.virtual_stages
    return p >= 2 and m % p == 0 and all(
        (n > 0 or space == "validator") and n % v == 0 for n in split)


def _enumerate(instance: Instance, cm: CostModel, best: _Best, options: list[StageOption],
               b: int, schedule: str, p: int, *, empty_end_stages: bool,
               prune_memory: bool, space: str = "documented") -> bool:
    """Every plan with micro-batch `b`, `schedule` and `p` stages; False once out of time."""
    L = instance.model.num_layers
    m = instance.training.global_batch_size // b
    names = [g.name for g in instance.cluster.node_groups]
    budget = {g.name: g.num_gpus for g in instance.cluster.node_groups}
    splits = list(layer_splits(L, p, empty_ends=empty_end_stages))
    if schedule == "interleaved-1f1b":
        splits = [s for s in splits if _interleaving_allows(instance, p, m, s, space)]
    # The layer counts position k takes in some split: a stage that fits none is pruned.
    counts = [sorted({s[k] for s in splits}) for k in range(p)]
    memo: dict[tuple[StageOption, int, int], bool] = {}
    seq: list[StageOption] = []
    uses = [(option, [(n, option.gpus_in(n)) for n in names if option.gpus_in(n)])
            for option in options]

    def fits(option: StageOption, layers: int, index: int) -> bool:
        return not prune_memory or _stage_fits(cm, option, layers, index, p, schedule, m, memo)

    def rec() -> bool:
        k = len(seq)
        if k == p:
            return _cost_sequence(instance, cm, best, seq, splits, b, schedule, fits, space)
        for option, use in uses:
            if any(u > budget[n] for n, u in use) or \
                    not any(fits(option, n, k) for n in counts[k]):
                continue
            for n, u in use:
                budget[n] -= u
            seq.append(option)
            going = rec()
            seq.pop()
            for n, u in use:
                budget[n] += u
            if not going:
                return False
        return True

    return rec() if splits else True


def _cost_sequence(instance: Instance, cm: CostModel, best: _Best, seq: list[StageOption],
                   splits: list[tuple[int, ...]], b: int, schedule: str,
                   fits: Callable[[StageOption, int, int], bool],
                   space: str = "documented") -> bool:
    """Every placement and layer split of one stage sequence; False once out of time."""
    m = instance.training.global_batch_size // b
    if time.perf_counter() > best.deadline:
        best.timed_out = True
        return False
    # An empty end stage takes any option, mixed ones too (formulations Sec. 1.2).
    fitting = [s for s in splits
               if all(fits(o, n, k) for k, (o, n) in enumerate(zip(seq, s, strict=True)))]
    if not fitting:
        return True
    for placed in placements(instance, seq, space, cm):
        groups: list[tuple[ReplicaGroup, ...]] = []
        k = 0
        for option in seq:
            reps = []
            for part in option.parts:
                reps.append(ReplicaGroup(node_group=part.node_group, device=part.device,
                                         count=part.count, tp=part.tp,
                                         micro_batch_share=part.share, placement=placed[k]))
                k += 1
            groups.append(tuple(reps))
        made: dict[tuple[int, int, int], Stage] = {}  # (position, first layer, layers)
        for split in fitting:
            if best.costed % 256 == 0 and time.perf_counter() > best.deadline:
                best.timed_out = True
                return False
            stages = []
            first = 0
            for k, n in enumerate(split):
                stage = made.get((k, first, n))
                if stage is None:
                    stage = made[(k, first, n)] = Stage(
                        first_layer=first, num_layers=n,
                        recompute=seq[k].recompute,  # type: ignore[arg-type]
                        replicas=groups[k])
                stages.append(stage)
                first += n
            plan = Plan(instance=instance.name, schedule=schedule,  # type: ignore[arg-type]
                        micro_batch_size=b, num_micro_batches=m, stages=tuple(stages),
                        note="bruteforce")
            ev = cm.evaluate(plan)
            best.costed += 1
            score = ev.iteration_time_s if best.score is None else best.score(plan, ev)
            if score >= best.time:
                continue
            if plan_violations(instance, plan, cost_model=cm):
                best.rejected += 1
                continue
            best.time, best.plan, best.evaluation = score, plan, ev
            best.info = {"micro_batch": b, "schedule": schedule, "stages": len(seq),
                         "options": [o.label() for o in seq], "layers": list(split)}
    return True


def _result(instance: Instance, best: _Best, size: int, space: str,
            max_stages: int | None) -> SolveResult:
    wall = time.perf_counter() - best.start
    message = f"{space} space, <= {size:,} plans; {best.costed:,} costed"
    if max_stages is not None:
        message += f"; plans of at most {max_stages} stages only"
    if best.timed_out:
        message += "; time limit reached"
    if best.plan is None or best.evaluation is None:
        return SolveResult(instance=instance.name, method=METHOD, plan=None, evaluation=None,
                           status="unknown" if best.timed_out else "infeasible",
                           iteration_time_s=math.inf, best_bound_s=math.nan, gap=math.nan,
                           wall_s=wall, plans_costed=best.costed, message=message)
    check_plan(instance, best.plan, cost_model=None)
    optimal = not best.timed_out
    return SolveResult(instance=instance.name, method=METHOD, plan=best.plan,
                       evaluation=best.evaluation, status="optimal" if optimal else "feasible",
                       iteration_time_s=best.time,
                       best_bound_s=best.time if optimal else math.nan,
                       gap=0.0 if optimal else math.nan, wall_s=wall, plans_costed=best.costed,
                       options={"choice": best.info, "space": space}, message=message)


# -- Objectives beyond time (formulations/objectives.md) ----------------------------------------
def rented_price_per_hour(instance: Instance, plan: Plan) -> tuple[dict[str, int], float]:
    """Nodes the plan touches per node group (a replica placed there), and their price for one
    hour: every GPU of a touched node (clouds rent whole machines) at its group's
    price_per_gpu_hour (0 where a group has none). Written here from that definition, apart
    from haap_solver.objective's."""
    nodes: dict[str, set[int]] = {}
    for stage in plan.stages:
        for group in stage.replicas:
            nodes.setdefault(group.node_group, set()).update(p.node for p in group.placement)
    price = 0.0
    for g in instance.cluster.node_groups:
        price += len(nodes.get(g.name, ())) * g.gpus_per_node * (g.price_per_gpu_hour or 0.0)
    return {name: len(touched) for name, touched in nodes.items()}, price


def objective_score(instance: Instance) -> Callable[[Plan, Evaluation], float]:
    """The instance's objective of one plan (inf where it breaks a limit or a cap): its time,
    or its cost per iteration (time x the rented nodes' price per hour / 3600) for "cost" and
    "throughput_per_dollar" (tokens per iteration are fixed, so the most tokens per unit of
    currency is the least cost)."""
    goal = instance.objective
    tokens = instance.training.global_batch_size * instance.model.seq_length
    caps = {g.name: g.max_gpus for g in instance.cluster.node_groups}
    sizes = {g.name: g.gpus_per_node for g in instance.cluster.node_groups}

    def score(plan: Plan, ev: Evaluation) -> float:
        nodes, price = rented_price_per_hour(instance, plan)
        if any(caps[g] is not None and n * sizes[g] > caps[g]  # type: ignore[operator]
               for g, n in nodes.items()):
            return math.inf
        t = ev.iteration_time_s
        cost = t * price / 3600.0
        if goal.min_tokens_per_s is not None and tokens / t < goal.min_tokens_per_s:
            return math.inf
        if goal.max_cost_per_iteration is not None and cost > goal.max_cost_per_iteration:
            return math.inf
        return t if goal.optimize == "time" else cost

    return score


def bruteforce_objective(instance: Instance, *, time_limit_s: float = 600.0,
                         cost_model: CostModel | None = None, max_plans: int = MAX_PLANS,
                         mixed: bool = False) -> tuple[SolveResult, float]:
    """The plan of the documented space (every placement up to node symmetry) that minimises
    `instance.objective` within its limits and the groups' max_gpus, by enumeration, and that
    least score (`objective_score`; inf with no plan). Every plan is costed by evaluate() and the
    best judged by the validator, as in `bruteforce`."""
    cm = cost_model or CostModel(instance)
    empty_end_stages = instance.training.empty_end_stages
    size = space_size(instance, mixed=mixed, cost_model=cm, empty_end_stages=empty_end_stages,
                      stop_above=max_plans)
    if size > max_plans:
        raise HaapError(f"bruteforce refuses {instance.name}: its search space has more than "
                        f"the limit of {max_plans:,} plans")
    best = _Best(time_limit_s)
    best.score = objective_score(instance)
    B = instance.training.global_batch_size
    going = True
    for b in (b for b in range(1, B + 1) if B % b == 0):
        options = stage_options(instance, b, cm, mixed=mixed, space="documented")
        for schedule in instance.training.schedules:
            for p in range(1, _max_stages(instance, empty_end_stages) + 1):
                going = going and _enumerate(instance, cm, best, options, b, schedule, p,
                                             empty_end_stages=empty_end_stages,
                                             prune_memory=True)
    value = best.time
    if best.evaluation is not None:
        best.time = best.evaluation.iteration_time_s  # _result reports the plan's time
    return _result(instance, best, size, "documented", None), value
