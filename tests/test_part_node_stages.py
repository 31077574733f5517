"""Stages on part of a node (formulations/stage-assignment.md Sec. 1.3): 3 GPUs of a 4-GPU node,
3-5 of a 6-GPU node.

Before Sec. 1.3 the search left these sizes out while the validator accepted them, and a plan
with one beat the search's "optimal" (on every ``OLD_OPTIMUM_BEATEN`` seed below the old search
said "optimal" at a slower time than the brute force's optimum now). With them in, first-fit no
longer packs every selection that fits the GPU budget (3 + 3 + 2 on two 4-GPU nodes), so the
model has packing rows (4a)-(4c) and the canonical placement packs exactly. The checks:

* the canonical placement finds a placement exactly when the brute force's independent
  enumeration of placements (``baselines.bruteforce``) finds one, on every small selection of
  stage shapes on 4- and 6-GPU nodes;
* the search agrees with the brute force on instances where a part-node stage is the optimum
  (``part_node_instance``) and where the budget alone would let the model choose stages that do
  not pack (``packing_instance``; without the rows the search picks such a selection and stops
  with an internal error), with every backend.

Planted bugs these tests catch (each checked by hand): the old sizes only (``shape_allowed``
without part-node counts): the agreement tests on ``OLD_OPTIMUM_BEATEN`` fail; the packing rows
dropped: those on ``PACKING_BINDS`` fail; first-fit alone as the canonical placement: the
spread test fails; the footprint condition of dominance dropped: its unit test fails (no
random instance measured so far needed it: 60 packing_instance seeds agree without it).
"""

from __future__ import annotations

import functools
import importlib
import itertools
import os
from dataclasses import replace

import pytest
from part_node_instances import packing_instance, part_node_instance
from random_instances import disagreement, random_instance
from tiny_instances import tiny_instance

from haap_solver.baselines.bruteforce import MAX_PLANS, bruteforce, space_size
from haap_solver.cost.evaluate import CostModel
from haap_solver.instance import Instance
from haap_solver.result import SolveResult
from haap_solver.search.coefficients import CoefficientCache
from haap_solver.search.solve import solve
from haap_solver.search.space import StageConfig, canonical_placement

bf = importlib.import_module("haap_solver.baselines.bruteforce")
"""The module (the package's attribute of that name is the function)."""
BACKENDS = ("highs", "cpsat", "cbc")
OLD_OPTIMUM_BEATEN = (0, 4, 7)
"""Seeds of part_node_instance whose optimum has a part-node stage (3 GPUs of a 4- or 6-GPU
node) and where the search before Sec. 1.3 said "optimal" at a slower time (ms: 9.707 vs
13.447; 5.072 vs 8.662; 4.586 vs 7.583). On seeds 0-39 that search was beaten on 25."""
PACKING_BINDS = (11, 13, 36)
"""Seeds of packing_instance where the model without (4a)-(4c) chooses stage sizes that fit the
GPU budget but not the nodes."""


def _shapes(q: int) -> list[tuple[int, int]]:
    """(tp, dp) of single-type stages on q-GPU nodes: TP a power of two dividing q; GPUs below
    q (any count) or whole nodes (one or two)."""
    tps = [t for t in (1, 2, 4) if q % t == 0]
    return sorted({(t, d) for t in tps for d in range(1, 2 * q + 1)
                   if t * d < q or t * d in (q, 2 * q)})


def _configs(inst: Instance, shapes: tuple[tuple[int, int], ...]) -> list[StageConfig]:
    g = inst.cluster.node_groups[0]
    return [StageConfig(node_group=g.name, device=g.device, tp=t, dp=d, recompute="none",
                        gpus_per_node=g.gpus_per_node) for t, d in shapes]


def _placeable(inst: Instance, shapes: tuple[tuple[int, int], ...]) -> bool:
    """The brute force's enumeration: some placement with every stage of at most a node on
    one node."""
    g = inst.cluster.node_groups[0]
    every = bf._group_placements(tuple(shapes), g.num_nodes, g.gpus_per_node)
    held = tuple((k,) for k, (t, d) in enumerate(shapes) if t * d <= g.gpus_per_node)
    return bool(bf._on_one_node(every, held))


@pytest.mark.parametrize("nodes, q", [(2, 4), (2, 6)])
def test_canonical_placement_packs_exactly(nodes: int, q: int) -> None:
    """Every multiset of up to four stage shapes that fits the GPUs of two nodes: the
    canonical placement exists exactly when a placement does, and is one (every replica
    placed, no node over its GPUs, a stage of at most a node on one node)."""
    inst = tiny_instance(devices=[("A100-80G", None)], groups=[(0, nodes, q)], layers=4,
                         hidden=512, heads=4, seq=512, batch=12, recompute=("none",))
    shapes = [s for s in _shapes(q) if s[0] * s[1] <= nodes * q]
    checked = unpackable = 0
    for k in range(1, 5):
        for combo in itertools.combinations_with_replacement(shapes, k):
            if sum(t * d for t, d in combo) > nodes * q:
                continue
            configs = _configs(inst, combo)
            placed = canonical_placement(inst, configs)
            assert (placed is not None) == _placeable(inst, combo), combo
            checked += 1
            if placed is None:
                unpackable += 1
                continue
            load = [0] * nodes
            for c, (pls,) in zip(configs, placed, strict=True):
                assert sum(pl.replicas for pl in pls) == c.dp
                assert len({pl.node for pl in pls}) == len(pls)
                assert c.gpus > q or len(pls) == 1, (combo, placed)  # (on one node)
                for pl in pls:
                    load[pl.node] += pl.replicas * c.tp
            assert max(load) <= q, (combo, placed)
    assert checked > 50 and unpackable > 0


def test_spread_stage_fills_holes() -> None:
    """8 + 3 + 3 + 2 GPUs on four 4-GPU nodes: first-fit (the 8 on two fresh nodes) fails, the
    exact packing spreads the 8 over the holes the 3s leave."""
    inst = tiny_instance(devices=[("A100-80G", None)], groups=[(0, 4, 4)], layers=4,
                         hidden=512, heads=4, seq=512, batch=24, recompute=("none",))
    configs = _configs(inst, ((1, 8), (1, 3), (1, 3), (1, 2)))
    placed = canonical_placement(inst, configs)
    assert placed is not None and len(placed[0][0]) > 2
    two = tiny_instance(devices=[("A100-80G", None)], groups=[(0, 2, 4)], layers=4,
                        hidden=512, heads=4, seq=512, batch=24, recompute=("none",))
    assert canonical_placement(two, _configs(two, ((1, 3), (1, 3), (1, 2)))) is None


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("seed", OLD_OPTIMUM_BEATEN)
def test_part_node_optimum_found(seed: int, backend: str) -> None:
    inst = part_node_instance(seed)
    truth = bruteforce(inst)  # (about 0.05 s each)
    assert truth.plan is not None
    q = {g.name: g.gpus_per_node for g in inst.cluster.node_groups}
    # (Seed 0's optimum is now an uneven stage of 5 GPUs of a 6-GPU node, Sec. 1: still a
    # part-node size.)
    assert any(s.num_gpus in (3, 5) and q[s.replicas[0].node_group] in (4, 6)
               for s in truth.plan.stages)
    d = disagreement(inst, truth, backend=backend, mixed=False)
    assert d is None, f"seed {seed}: {d}"


@functools.cache
def _packing_truth(seed: int) -> SolveResult:
    return bruteforce(packing_instance(seed))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("seed", PACKING_BINDS)
def test_packing_rows_keep_the_search_exact(seed: int, backend: str) -> None:
    d = disagreement(packing_instance(seed), _packing_truth(seed), backend=backend, mixed=False)
    assert d is None, f"seed {seed}: {d}"


@pytest.mark.slow
@pytest.mark.parametrize("make", [part_node_instance, packing_instance],
                         ids=["part-node", "packing"])
def test_part_node_agreement_randomized(make: object) -> None:
    """HAAP_PART_NODE_SEEDS seeds (default 60) of each generator, every backend, mixed stages
    off and on."""
    count = int(os.environ.get("HAAP_PART_NODE_SEEDS", "60"))
    failures = []
    for seed in range(count):
        inst = make(seed)  # type: ignore[operator]
        for mixed in (False, True):
            # (Stages over non-multiple node counts grew the space: a draw may pass the brute
            # force's limit, and is then skipped, not counted as checked.)
            if space_size(inst, mixed=mixed, stop_above=MAX_PLANS) > MAX_PLANS:
                continue
            truth = bruteforce(inst, mixed=mixed)
            for backend in BACKENDS:
                d = disagreement(inst, truth, backend=backend, mixed=mixed)
                if d is not None:
                    failures.append(f"seed {seed} mixed={mixed}: {d}")
    assert not failures, "\n".join(failures)


def test_dominance_needs_the_footprint() -> None:
    """Formulations Sec. 2.3 with Sec. 1.3: where part-node sizes occur (micro-batch 24 on
    4-GPU nodes: 3 GPUs at DP 3), fewer GPUs is not enough for a configuration to take another's
    place: 3 GPUs on one node do not fit the 1-GPU holes an 8-GPU stage of TP 1 may fill, nor 2
    replicas of TP 2 those of TP 1; they fit a one-node stage's room, and holes of TP 4. Where
    every size is a power of two (micro-batch 8 with at most one sequence a replica: DP 8 only;
    with more, uneven shares give DP 3, 5, 6, 7 there, Sec. 1), fewer GPUs is enough."""
    inst = tiny_instance(devices=[("A100-80G", None)], groups=[(0, 4, 4)], layers=4,
                         hidden=512, heads=4, seq=512, batch=24, recompute=("none",))
    cache = CoefficientCache(CostModel(inst))
    three, two_tp2, four, spread_tp1, spread_tp4 = _configs(
        inst, ((1, 3), (2, 2), (1, 4), (1, 8), (4, 2)))
    fits = cache.fits_in_footprint
    assert not fits(three, spread_tp1, "g0", 24)
    assert not fits(two_tp2, spread_tp1, "g0", 24)
    assert fits(three, four, "g0", 24) and fits(two_tp2, four, "g0", 24)
    assert fits(three, spread_tp4, "g0", 24) and fits(two_tp2, spread_tp4, "g0", 24)
    assert not cache.dominates(three, spread_tp1, 24, ["g0"])
    assert not fits(two_tp2, spread_tp1, "g0", 8)  # (uneven DP 3 there: a 3-GPU size)
    one = replace(inst, training=replace(inst.training, max_micro_batch_share=1))
    assert CoefficientCache(CostModel(one)).fits_in_footprint(two_tp2, spread_tp1, "g0", 8)


SPANNING_SEED = 22
"""A random instance whose optimum has a single-type stage over more than a node without
filling whole nodes (5 GPUs over 3-GPU nodes): before such stages joined the space (Sec. 1.3)
the search said "optimal" at 0.0076647 s there, 9.6% slower than this optimum (0.0069918 s)."""


@pytest.mark.parametrize("backend", ["highs", "cpsat"])
def test_stage_over_nodes_without_filling_them(backend: str) -> None:
    inst = random_instance(SPANNING_SEED)
    truth = bruteforce(inst)
    assert truth.plan is not None
    spanning = [r for s in truth.plan.stages for r in s.replicas
                if r.count * r.tp > inst.cluster.group(r.node_group).gpus_per_node
                and r.count * r.tp % inst.cluster.group(r.node_group).gpus_per_node]
    # If a change to the generator or the space moved this seed, pin another one: the point is
    # an optimum with such a stage.
    assert spanning, "the seed's optimum no longer spans nodes without filling them"
    result = solve(inst, backend=backend, threads=1, seed=0, time_limit_s=60, mixed=False)
    assert result.status == "optimal"
    assert result.iteration_time_s == pytest.approx(truth.iteration_time_s, rel=1e-9)
