"""Single-type stages of at most a node spread over several nodes (formulations/stage-assignment.md
Sec. 1.3): a stage of two replicas at TP 1 with one GPU on each of two nodes, its data-parallel
ring over the network.

Before they joined the space, the search and the brute force kept every such stage on one node,
while the validator accepts it spread; where the stages on one node leave a GPU free on each node
(two 3-GPU nodes, stages of two GPUs), only a spread stage uses those two GPUs. On the instances
below the search then said "optimal" at a slower time than a plan with one, or "no plan" where
one exists. The checks:

* the search (HiGHS, CP-SAT) finds those plans, and agrees with the brute force, which enumerates
  every placement of the documented space (a stage of at most a node spread where its ring over
  the network is no faster than on one node);
* the canonical placement packs a selection with spread stages exactly when the brute force's
  enumeration finds a placement, and puts each spread stage on two nodes or more whenever some
  placement does;
* the coefficients of a spread stage equal evaluate()'s costs of the plan the canonical placement
  builds (its ring over the network);
* a spread stage is in the space only where its ring over the network is no faster than on one
  node (a PCIe device beside fast NICs: outside, on both sides).

Planted bugs these tests catch (each checked by hand, see the commit message): spread twins not
generated (`stage_configs`): the two optimum tests fail; the brute force keeping every stage of
at most a node on one node: the optimum tests fail (its truth has no spread stage); the spread
twin costed with its ring inside a node (`CoefficientCache.replicas`): the coefficient test fails;
`_straddle` and `_straddle_search` skipped: the placement test on two 6-GPU nodes fails;
`spread_allowed` always true: the ring test fails; the footprint rule of dominance (Sec. 2.3)
treating a spread twin as a stage on one node, so that the twin on one node drops it: the two
optimum tests fail; the repair reading every stage of at most a node as on one node: the repair
test fails.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import os
import random
from dataclasses import replace

import pytest
from random_instances import disagreement
from tiny_instances import tiny_instance

from haap_solver.baselines.bruteforce import MAX_PLANS, bruteforce, space_size
from haap_solver.cluster import NodeGroup
from haap_solver.cost.evaluate import CostModel
from haap_solver.costing import evaluate
from haap_solver.devices import DEVICE_PRESETS
from haap_solver.instance import Instance, make_instance
from haap_solver.model import ModelSpec
from haap_solver.plan import Placement, Plan, ReplicaGroup, Stage
from haap_solver.result import SolveResult
from haap_solver.search.coefficients import CoefficientCache
from haap_solver.search.dp import best_layer_split
from haap_solver.search.repair import repaired_plan
from haap_solver.search.solve import solve
from haap_solver.search.space import StageConfig, build_plan, canonical_placement, stage_configs
from haap_solver.search.state import SearchState
from haap_solver.training import TrainingSpec
from haap_solver.validate import plan_violations

bf = importlib.import_module("haap_solver.baselines.bruteforce")
"""The module (the package's attribute of that name is the function)."""
BACKENDS = ("highs", "cpsat")
OLD_SLOWER = {3: (2.3, 0.025019693), 4: (2.35, 0.031589268)}
"""Layers: (A100 memory GiB, the time in s the search without spread stages called optimal) on
`_beaten`; the optimum with a spread stage is 0.014849 s (3 layers) and 0.020915 s (4)."""


def _beaten(layers: int) -> Instance:
    """Two 3-GPU A100 nodes whose memory holds a layer only on two GPUs at ZeRO-1 (DP 2), beside
    one slow T4: the pipeline of one layer a stage needs three 2-GPU A100 stages, the third one
    spread over the GPU each node has left; without it a layer goes to the T4. TP 1 only
    (`max_tp = 1`): with TP 2 on a 3-GPU node (in the space since Sec. 1 took TP degrees that
    do not divide the node) a TP-2 stage per node holds the layers without spreading."""
    mem, _ = OLD_SLOWER[layers]
    inst = tiny_instance(devices=[("A100-80G", mem), ("T4", 16.0)], groups=[(0, 2, 3), (1, 1, 1)],
                         layers=layers, hidden=1024, heads=4, seq=1024, batch=2,
                         recompute=("none",), zero=1)
    return replace(inst, training=replace(inst.training, max_micro_batch_share=1, max_tp=1))


def _only_spread() -> Instance:
    """`_beaten(3)` without the T4: only a plan with a spread stage fits memory (TP 1 only)."""
    inst = tiny_instance(devices=[("A100-80G", 2.3)], groups=[(0, 2, 3)], layers=3, hidden=1024,
                         heads=4, seq=1024, batch=2, recompute=("none",), zero=1)
    return replace(inst, training=replace(inst.training, max_micro_batch_share=1, max_tp=1))


def _spread_stages(inst: Instance, plan: Plan) -> int:
    """Stages of at most a node's GPUs whose replicas sit on two nodes or more."""
    q = {g.name: g.gpus_per_node for g in inst.cluster.node_groups}
    return sum(1 for s in plan.stages for r in s.replicas
               if len(s.replicas) == 1 and r.num_gpus <= q[r.node_group] and len(r.placement) > 1)


@functools.cache
def _truth(layers: int | None) -> SolveResult:
    inst = _only_spread() if layers is None else _beaten(layers)
    return bruteforce(inst, cost_model=CostModel(inst), mixed=False)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layers", sorted(OLD_SLOWER))
def test_spread_stage_beats_the_old_optimum(layers: int, backend: str) -> None:
    inst = _beaten(layers)
    truth = _truth(layers)
    assert truth.plan is not None and _spread_stages(inst, truth.plan) == 1
    assert truth.iteration_time_s < OLD_SLOWER[layers][1] * 0.9
    d = disagreement(inst, truth, backend=backend, mixed=False)
    assert d is None, d


@pytest.mark.parametrize("backend", BACKENDS)
def test_memory_needs_a_spread_stage(backend: str) -> None:
    inst = _only_spread()
    truth = _truth(None)
    assert truth.plan is not None and _spread_stages(inst, truth.plan) == 1
    res = solve(inst, backend=backend, time_limit_s=60, threads=1, seed=0,
                seed_with_baselines=False, mixed=False)
    assert res.status == "optimal" and res.plan is not None
    assert res.iteration_time_s == pytest.approx(truth.iteration_time_s, rel=1e-9)


def _configs(inst: Instance, shapes: tuple[tuple[int, int, bool], ...]) -> list[StageConfig]:
    g = inst.cluster.node_groups[0]
    return [StageConfig(node_group=g.name, device=g.device, tp=t, dp=d, recompute="none",
                        gpus_per_node=g.gpus_per_node, spread=s) for t, d, s in shapes]


def _placements(inst: Instance, shapes: tuple[tuple[int, int, bool], ...]) -> tuple[bool, bool]:
    """(some placement exists, some placement puts every spread stage on two nodes or more), by
    the brute force's enumeration: a stage of at most a node that is not spread on one node."""
    g = inst.cluster.node_groups[0]
    every = bf._group_placements(tuple((t, d) for t, d, _ in shapes), g.num_nodes,
                                 g.gpus_per_node)
    held = tuple((k,) for k, (t, d, s) in enumerate(shapes)
                 if t * d <= g.gpus_per_node and not s)
    ok = bf._on_one_node(every, held)
    straddling = [pl for pl in ok
                  if all(len(pl[k]) > 1 for k, (_, _, s) in enumerate(shapes) if s)]
    return bool(ok), bool(straddling)


@pytest.mark.parametrize("nodes, q", [(2, 3), (2, 4), (3, 4), (2, 6)])
def test_canonical_placement_packs_and_straddles(nodes: int, q: int) -> None:
    """Every multiset of up to four stage shapes (TP a power of two dividing q; spread ones of
    two replicas or more, at most a node) within the GPUs: the canonical placement exists
    exactly when a placement does, is one, and spreads every spread stage whenever some
    placement does."""
    inst = tiny_instance(devices=[("A100-80G", None)], groups=[(0, nodes, q)], layers=4,
                         hidden=512, heads=4, seq=512, batch=12, recompute=("none",))
    tps = [t for t in (1, 2, 4) if q % t == 0]
    shapes = sorted({(t, d, s) for t in tps for d in range(1, 2 * q + 1) for s in (False, True)
                     if (t * d <= q or t * d == 2 * q) and (not s or (d >= 2 and t * d <= q))})
    checked = spread_checked = 0
    for k in range(1, 5):
        for combo in itertools.combinations_with_replacement(shapes, k):
            if sum(t * d for t, d, _ in combo) > nodes * q:
                continue
            configs = _configs(inst, combo)
            placed = canonical_placement(inst, configs)
            exists, straddles = _placements(inst, combo)
            assert (placed is not None) == exists, combo
            checked += 1
            if placed is None:
                continue
            load = [0] * nodes
            for c, (pls,) in zip(configs, placed, strict=True):
                assert sum(pl.replicas for pl in pls) == c.dp
                assert len({pl.node for pl in pls}) == len(pls)
                assert c.gpus > q or c.spread or len(pls) == 1, (combo, placed)
                for pl in pls:
                    load[pl.node] += pl.replicas * c.tp
            assert max(load) <= q, (combo, placed)
            if straddles:
                spread_checked += any(c.spread for c in configs)
                assert all(len(pls) > 1 for c, (pls,) in zip(configs, placed, strict=True)
                           if c.spread), (combo, placed)
    assert checked > 30 and spread_checked > 10


@pytest.mark.parametrize("p2p", ["overlapped", "blocking"])
def test_spread_coefficients_equal_evaluate(p2p: str) -> None:
    """Every sequence of one to three configurations with a spread stage at micro-batch 2 on
    `_only_spread`'s cluster (memory ample): the layer split's time from the coefficients is
    evaluate()'s time of the plan built with the canonical placement where it spreads every
    spread stage, and no less where it cannot (one left on one node, its ring inside it)."""
    inst = tiny_instance(devices=[("A100-80G", None)], groups=[(0, 2, 3)], layers=3,
                         hidden=1024, heads=4, seq=1024, batch=4, recompute=("none",), zero=1)
    inst = replace(inst, training=replace(inst.training, pipeline_p2p=p2p))
    cm = CostModel(inst)
    cache = CoefficientCache(cm)
    b = 2
    configs = [c for c in stage_configs(inst, b) if cache.spread_allowed(c, b)]
    assert any(c.spread for c in configs)
    checked = cheaper = 0
    for k in (1, 2, 3):
        for seq in itertools.product(configs, repeat=k):
            if not any(c.spread for c in seq):
                continue
            got = best_layer_split(inst, cache, list(seq), b, "1f1b")
            if got is None:
                continue
            layers, time_s = got
            plan = build_plan(inst, list(seq), layers, micro_batch=b, schedule="1f1b")
            assert plan is not None
            got_s = evaluate(inst, plan).iteration_time_s
            if _spread_stages(inst, plan) == sum(c.spread for c in seq):
                assert got_s == pytest.approx(time_s, rel=1e-9), [c.label() for c in seq]
                checked += 1
            else:  # (2 + 2 + 2 spread twice on two 3-GPU nodes: only one straddles)
                assert got_s <= time_s * (1 + 1e-9), [c.label() for c in seq]
                cheaper += 1
    assert checked >= 3 and cheaper >= 1


def test_spread_only_where_the_network_ring_is_no_faster() -> None:
    """T4 (16 GB/s between its GPUs) on 3-GPU nodes with one 400 Gbit/s NIC: a GPU's share of
    the NIC is faster than the node's PCIe. A spread stage used to cost less than on one node
    there and could not always be spread (a whole-node stage beside it), so it was outside the
    space on both sides; the cost model now takes the slower ring for it (cost model Sec. 6.3),
    so its ring is never faster and the twin is in with 400 as with 25 Gbit/s NICs."""
    for nic, inside in ((400.0, True), (25.0, True)):
        inst = tiny_instance(devices=[("T4", None)], groups=[(0, 2, 3)], layers=3,
                             hidden=1024, heads=4, seq=1024, batch=6, recompute=("none",),
                             nic_gbit_s=nic)
        cm = CostModel(inst)
        cache = CoefficientCache(cm)
        spread = [c for c in stage_configs(inst, 6) if c.spread]
        assert spread
        assert all(cache.spread_allowed(c, 6) == inside for c in spread), nic
        part = bf.Part(node_group="g0", device="d0", tp=1, count=2, share=3)
        assert bf._may_spread(cm, part) == inside, nic


def spread_instance(seed: int) -> Instance:
    """A random instance where spread stages may matter (seeded, reproducible): two nodes of
    3, 4 or 6 GPUs of one fast device type whose memory (2.3 or 2.35 GiB) holds a layer of the
    1,024-wide GPT only at DP 2 or more at ZeRO-1 (or at TP 2); mostly beside one slow GPU; 3-4
    layers, a batch of 2, 4 or 6; mostly TP 1 only."""
    rng = random.Random(20_000 + seed)
    fast = rng.choice(("A100-80G", "H100", "V100-32G"))
    devices = [(fast, rng.choice((2.3, 2.35)))]
    groups = [(0, 2, rng.choice((3, 3, 4, 6)))]
    if rng.random() < 0.7:
        devices.append((rng.choice(("T4", "A10", "L40S")), 16.0))
        groups.append((1, 1, 1))
    inst = tiny_instance(devices=devices, groups=groups, layers=rng.randint(3, 4), hidden=1024,
                         heads=4, seq=1024, batch=rng.choice((2, 2, 4, 6)), recompute=("none",),
                         zero=1)
    return replace(inst, name=f"spread-{seed}", training=replace(
        inst.training, max_micro_batch_share=rng.choice((1, 1, 2, 3)),
        max_tp=rng.choice((1, 1, 1, 8))))  # (TP 2 on 3-GPU nodes holds a layer unspread)


@pytest.mark.slow
def test_spread_agreement_randomized() -> None:
    """HAAP_SPREAD_SEEDS seeds (default 40) of `spread_instance`, HiGHS and CP-SAT, mixed
    stages off and on: the search agrees with the brute force; some optima have a spread
    stage."""
    count = int(os.environ.get("HAAP_SPREAD_SEEDS", "40"))
    failures, spread_optima = [], 0
    for seed in range(count):
        inst = spread_instance(seed)
        for mixed in (False, True):
            if space_size(inst, mixed=mixed, stop_above=MAX_PLANS) > MAX_PLANS:
                continue
            truth = bruteforce(inst, mixed=mixed)
            spread_optima += truth.plan is not None and _spread_stages(inst, truth.plan) > 0
            for backend in BACKENDS:
                d = disagreement(inst, truth, backend=backend, mixed=mixed)
                if d is not None:
                    failures.append(f"seed {seed} mixed={mixed}: {d}")
    assert not failures, "\n".join(failures)
    assert spread_optima > 0


def test_repair_keeps_a_spread_stage() -> None:
    """The re-planner's repair (formulations Sec. 8) reads a stage of at most a node on two
    nodes as a spread configuration: the optimum of `_beaten(3)` repaired to its own instance
    is itself (as its twin on one node, it would not pack with the two other 2-GPU stages)."""
    inst = _beaten(3)
    truth = _truth(3)
    assert truth.plan is not None
    got = repaired_plan(SearchState(inst), truth.plan, mixed=False)
    assert got is not None
    plan, ev = got
    assert _spread_stages(inst, plan) == 1
    assert ev.iteration_time_s == pytest.approx(truth.iteration_time_s, rel=1e-9)


def _fast_nic_instance() -> Instance:
    """gap_probe --gap fast_nic seed 83: two L40S nodes of 2 GPUs (PCIe, 32 GB/s) with an
    800 Gbit/s NIC each (50 GB/s, 25 a GPU: faster than PCIe after efficiencies) beside one
    small H100. Before the ring rule below, a valid plan spreading a 2-GPU stage over both
    nodes was 2.7% faster than the search's "optimal" (the search keeps such stages on one
    node where the network ring is faster: formulations Sec. 1.3)."""
    model = ModelSpec(name="m", num_layers=4, hidden_size=768, ffn_hidden_size=3072,
                      num_attention_heads=8, vocab_size=4096, seq_length=2048,
                      learned_position_embeddings=True, uses_dropout=True)
    training = TrainingSpec(global_batch_size=2, dtype="fp16", zero_stage=0,
                            recompute=("full",), schedules=("1f1b",), max_micro_batch_share=6,
                            reserved_memory_gib=0.0, empty_end_stages=True)
    l40s = replace(DEVICE_PRESETS["L40S"], name="l40s-small", memory_gib=0.8894462585449219)
    h100 = replace(DEVICE_PRESETS["H100"], name="h100-small", memory_gib=0.2964820861816406)
    return make_instance(model=model, training=training, name="fast-nic",
                         extra_devices={"l40s-small": l40s, "h100-small": h100},
                         node_groups=[NodeGroup(name="g0", device="l40s-small", num_nodes=2,
                                                gpus_per_node=2, nic_gbit_s=800.0),
                                      NodeGroup(name="g1", device="h100-small", num_nodes=1,
                                                gpus_per_node=1, nic_gbit_s=400.0)])


def test_spreading_a_stage_of_at_most_a_node_is_never_faster() -> None:
    """docs/cost-model.md Sec. 6.3: a stage of at most a node on several nodes is costed no
    faster than on one node, even where the network ring is faster than PCIe. Fails with the
    rule taken out of `network.Links.dp_ring` (the spread plan is then 2.7% faster; checked)."""
    inst = _fast_nic_instance()
    cm = CostModel(inst)

    def plan(where: tuple[Placement, ...]) -> Plan:
        stage = Stage(first_layer=0, num_layers=4, recompute="full", replicas=(
            ReplicaGroup(node_group="g0", device="l40s-small", count=2, tp=1,
                         micro_batch_share=1, placement=where),))
        return Plan(instance=inst.name, schedule="1f1b", micro_batch_size=2,
                    num_micro_batches=1, stages=(stage,))

    packed = plan((Placement(node=0, replicas=2),))
    spread = plan((Placement(node=0, replicas=1), Placement(node=1, replicas=1)))
    assert not plan_violations(inst, packed) and not plan_violations(inst, spread)
    assert cm.evaluate(spread).iteration_time_s >= cm.evaluate(packed).iteration_time_s


@pytest.mark.parametrize("backend", ["highs", "cpsat"])
def test_search_optimal_over_every_valid_plan_with_fast_nics(backend: str) -> None:
    """The search's optimum equals the brute force's over every plan the validator accepts
    (space="validator", every placement) on the fast-NIC instance."""
    inst = _fast_nic_instance()
    res = solve(inst, backend=backend, threads=1, seed=0, time_limit_s=60,
                seed_with_baselines=False)
    wider = bruteforce(inst, mixed=True, space="validator")
    assert res.status == "optimal" and res.plan is not None
    assert res.iteration_time_s == pytest.approx(wider.iteration_time_s, rel=1e-9)


def test_ring_cache_tells_a_spread_twin_from_a_larger_stage() -> None:
    """The data-parallel ring of a spread twin (at most a node, on several: no faster than on one
    node) and of a larger stage of the same group (the network) are cached apart, in either
    order. Before, both had one cache key, so on L40S nodes of 3 GPUs with 3,200 Gbit/s NICs
    (gap_probe --gap fast_nic seed 34) a TP-1 DP-4 stage asked after the DP-2 twin got the
    twin's 22.4 GB/s ring instead of its own 93.5 GB/s (checked on the commit before)."""
    l40s = replace(DEVICE_PRESETS["L40S"], name="l40s-small", memory_gib=0.7285594940185547)
    inst = make_instance(
        model=ModelSpec(name="m", num_layers=1, hidden_size=768, ffn_hidden_size=3072,
                        num_attention_heads=12, vocab_size=8192, seq_length=4096,
                        learned_position_embeddings=True, uses_dropout=True),
        training=TrainingSpec(global_batch_size=8, recompute=("none",), zero_stage=2,
                              max_micro_batch_share=12),
        extra_devices={"l40s-small": l40s},
        node_groups=[NodeGroup(name="g0", device="l40s-small", num_nodes=2, gpus_per_node=3,
                               nic_gbit_s=3200.0)])
    cm = CostModel(inst)
    configs = stage_configs(inst, 4)
    twin = next(c for c in configs if c.spread)
    big = next(c for c in configs if not c.spread and c.gpus > c.gpus_per_node and c.dp > 1)
    for order in ((twin, big), (big, twin)):
        cache = CoefficientCache(cm)
        for c in order:
            assert cache.dp_link(c, 4) == cm.dp_link(cache.replicas(c, 4)), c.label()
