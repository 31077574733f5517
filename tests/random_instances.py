"""Random tiny instances for the brute-force agreement tests (seeded, reproducible).

Each seed gives one instance small enough for the brute force (haap_solver.baselines.bruteforce)
yet shaped so that its optimum is often not the obvious one: 1-5 decoder layers of a small GPT,
2 or 3 node groups of 2 or 3 device types of clearly different speed (H100, A100, V100, T4, L40S,
A10 presets), each with its own memory capacity set between 0.3x and 2x of what the whole model
needs on one GPU (so that memory often forces several stages, or recomputation), node sizes drawn
from {1, 2, 3, 4, 6, 8} with 1 or 2 nodes per group and at most MAX_GPUS GPUs in all, a global
batch of 1-12, a small max_micro_batch_share, one or two recomputation modes, and both schedules
sometimes. Instances whose brute-force space (``space_size`` with mixed stages) exceeds
MAX_SPACE are redrawn from the same seed's stream, so a seed always gives the same instance.

``random_instance(seed)`` builds one; ``instances()`` is the hypothesis strategy of them;
``features(instance, plan)`` says what an optimum uses (the reach of an example) and
``disagreement(...)`` checks the exact search against the brute force's optimum (used by
tests/test_bruteforce_agreement.py and benchmarks/bruteforce_agreement.py).
"""

from __future__ import annotations

import math
import random
from dataclasses import replace

from hypothesis import strategies as st

from haap_solver.baselines.bruteforce import space_size
from haap_solver.cluster import NodeGroup
from haap_solver.cost.evaluate import CostModel
from haap_solver.cost.memory import GIB
from haap_solver.devices import DEVICE_PRESETS
from haap_solver.errors import InfeasibleError
from haap_solver.instance import Instance, make_instance
from haap_solver.model import ModelSpec
from haap_solver.plan import Plan
from haap_solver.result import SolveResult
from haap_solver.search.solve import solve
from haap_solver.training import TrainingSpec
from haap_solver.validate import check_plan

PRESETS = ("H100", "A100-80G", "V100-32G", "T4", "L40S", "A10")
"""Device presets of clearly different speed (65 to 989 TFLOP/s) and links (NVLink or PCIe)."""
REL_TOL = 1e-9
"""The search's iteration time must equal the brute force's to this relative tolerance."""
NODE_SIZES = (1, 2, 3, 4, 6, 8)
MAX_GPUS = 10
MAX_SPACE = 25_000
"""Largest brute-force space (plans before memory, mixed stages included) a seed may give."""
MEMORY_FACTORS = (0.15, 0.3, 0.45, 0.6, 0.8, 1.2, 2.0)
"""A device's capacity as a multiple of the whole model's memory on one GPU at one sequence."""
BATCHES = (1, 2, 3, 4, 4, 5, 6, 6, 8, 8, 9, 10, 12, 12)
"""Global batch sizes, weighted towards those with many divisors (more micro-batch sizes, and
batch splits for mixed stages)."""
DATA_PARALLEL_SHARE = 0.25
"""Share of the draws shaped for data parallelism across device types (see _draw)."""
FAST_MEMORY_FACTORS = (0.15, 0.25, 0.35, 0.5, 0.7)
"""The same for the fastest device type of the instance."""


def _model(rng: random.Random, *, data_parallel: bool) -> ModelSpec:
    hidden = 512 if data_parallel else rng.choice((512, 512, 768, 1024))
    heads = rng.choice((4, 8))
    return ModelSpec(name="rand-gpt", num_layers=rng.choice((1, 2, 3, 3, 4, 4, 5)),
                     hidden_size=hidden, ffn_hidden_size=4 * hidden, num_attention_heads=heads,
                     vocab_size=rng.choice((2048, 4096, 8192)),
                     seq_length=2048 if data_parallel else rng.choice((512, 1024, 2048)),
                     learned_position_embeddings=True, uses_dropout=True)


def _training(rng: random.Random, *, data_parallel: bool) -> TrainingSpec:
    recompute = rng.choice([("none",), ("none",), ("full",), ("none", "full"),
                            ("none", "selective")])
    batch = rng.choice((6, 8, 9, 10, 12)) if data_parallel else rng.choice(BATCHES)
    mbs = rng.choice((6, 8, 12)) if data_parallel else rng.choice((1, 2, 4, 6, 8, 12))
    return TrainingSpec(global_batch_size=batch, dtype="fp16", zero_stage=rng.choice((0, 1)),
                        recompute=recompute,  # type: ignore[arg-type]
                        schedules=rng.choice([("1f1b",), ("1f1b",), ("1f1b", "gpipe")]),  # type: ignore[arg-type]
                        max_micro_batch_share=mbs, reserved_memory_gib=0.0,
                        empty_end_stages=True)  # (their search, Sec. 1.2, is checked too)


def _whole_model_bytes(model: ModelSpec, training: TrainingSpec) -> float:
    """Memory of the whole model as one stage on one A100 at one sequence: the scale against
    which the devices' capacities are drawn."""
    probe = make_instance(model=model, training=training, name="probe",
                          node_groups=[NodeGroup(name="g", device="A100-80G", num_nodes=1,
                                                 gpus_per_node=1, nic_gbit_s=100.0)])
    cm = CostModel(probe)
    mode = training.recompute[0]
    mem = cm.replica_memory(device="A100-80G", tp=1, share=1, dp=1, num_layers=model.num_layers,
                            recompute=mode, params=cm.params_held(model.num_layers, True, True,
                                                                  False),
                            is_first=True, is_last=True, in_flight=1)
    return mem.total - mem.reserved


def _draw(rng: random.Random, seed: int) -> Instance:
    """One draw. One in DATA_PARALLEL_SHARE is data-parallel-friendly (long sequences, narrow
    model, large batch shares, fast NICs, one small node per group, ample memory): where a
    mixed-type stage can win; the others have tight memory on the fastest type."""
    data_parallel = rng.random() < DATA_PARALLEL_SHARE
    model = _model(rng, data_parallel=data_parallel)
    training = _training(rng, data_parallel=data_parallel)
    scale = _whole_model_bytes(model, training)
    n_types = rng.choice((2, 2, 3))
    # Fastest first; the fastest type gets the tightest memory, so that it rarely runs the
    # whole model alone and the optimum has to use the others too.
    presets = sorted(rng.sample(PRESETS, n_types), key=lambda n: -DEVICE_PRESETS[n].peak_tflops)
    factors = [rng.choice(FAST_MEMORY_FACTORS)] + [rng.choice(MEMORY_FACTORS)
                                                   for _ in presets[1:]]
    if data_parallel:
        factors = [rng.choice((1.5, 3.0, 6.0)) for _ in presets]
    devices = {f"d{k}-{name}": replace(DEVICE_PRESETS[name], name=f"d{k}-{name}",
                                       memory_gib=f * scale / GIB)
               for k, (name, f) in enumerate(zip(presets, factors, strict=True))}
    names = list(devices)
    n_groups = rng.choice((2, 2, 3)) if n_types == 2 else 3
    kinds = names + [rng.choice(names) for _ in range(n_groups - n_types)]
    rng.shuffle(kinds)
    groups = []
    for k, dev in enumerate(kinds):
        if data_parallel:
            nodes, size, nic = 1, rng.choice((1, 1, 2)), rng.choice((200.0, 400.0))
        else:
            nodes, size = rng.choice((1, 1, 2)), rng.choice(NODE_SIZES)
            nic = rng.choice((25.0, 100.0, 200.0, 400.0))
        groups.append(NodeGroup(name=f"g{k}", device=dev, num_nodes=nodes, gpus_per_node=size,
                                nic_gbit_s=nic))
    return make_instance(model=model, training=training, node_groups=groups,
                         extra_devices=devices, name=f"rand-{seed}")


def random_instance(seed: int, *, max_space: int = MAX_SPACE) -> Instance:
    """The instance of `seed`: drawn until it has at most MAX_GPUS GPUs and a brute-force space
    of at most `max_space` plans."""
    rng = random.Random(seed)
    while True:
        inst = _draw(rng, seed)
        if inst.cluster.num_gpus <= MAX_GPUS and \
                space_size(inst, mixed=True, stop_above=max_space) <= max_space:
            return inst


def instances(max_space: int = MAX_SPACE) -> st.SearchStrategy[Instance]:
    """Hypothesis strategy: the instance of a drawn seed."""
    return st.integers(0, 2**31 - 1).map(lambda s: random_instance(s, max_space=max_space))


def features(instance: Instance, plan: Plan) -> dict[str, bool]:
    """What a plan uses that a narrower search space would miss: the reach of an example."""
    groups = {g.name: g for g in instance.cluster.node_groups}
    whole_odd = any(
        _not_pow2(groups[r.node_group].gpus_per_node)
        and r.num_gpus % groups[r.node_group].gpus_per_node == 0
        for s in plan.stages for r in s.replicas)
    return {
        "multi_stage": plan.num_stages >= 2,
        "stages_2_to_4": 2 <= plan.num_stages <= 4,
        "multi_type": len({r.device for s in plan.stages for r in s.replicas}) >= 2,
        "empty_end": plan.num_stages >= 2 and (plan.stages[0].num_layers == 0
                                               or plan.stages[-1].num_layers == 0),
        "whole_odd_node": whole_odd,
        "mixed_stage": any(len(s.replicas) >= 2 for s in plan.stages),
    }


FEATURES = ("multi_stage", "stages_2_to_4", "multi_type", "empty_end", "whole_odd_node",
            "mixed_stage")


def _not_pow2(n: int) -> bool:
    return n & (n - 1) != 0


def describe(plan: Plan) -> str:
    """One line: micro-batch, schedule, and per stage its layers, mode and replica groups."""
    return f"b={plan.micro_batch_size} {plan.schedule} " + " | ".join(
        f"{s.num_layers}L {s.recompute} " + "+".join(
            f"{r.node_group}:tp{r.tp}x{r.count}@{r.micro_batch_share}" for r in s.replicas)
        for s in plan.stages)


def disagreement(instance: Instance, truth: SolveResult, *, backend: str, mixed: bool,
                 time_limit_s: float = 60.0, threads: int = 1) -> str | None:
    """Why the exact search (one thread unless `threads` says more: then the search over plans
    with a mixed stage runs in a second process; seed 0, no baseline seeds) and the brute
    force's optimum `truth` disagree, or None: the search must say "optimal" at the brute
    force's iteration time (1e-9 relative), with a valid plan whose evaluate() time it reports,
    or both find no plan."""
    try:
        res = solve(instance, backend=backend, threads=threads, seed=0,
                    time_limit_s=time_limit_s,
                    seed_with_baselines=False, mixed=mixed)
    except InfeasibleError:
        if truth.plan is None:
            return None
        return f"{backend}: infeasible, brute force {truth.iteration_time_s:.6g} s " \
            f"[{describe(truth.plan)}]"
    if res.plan is None:
        return None if truth.plan is None else \
            f"{backend}: {res.status} without a plan, brute force {truth.iteration_time_s:.6g} s"
    check_plan(instance, res.plan)
    reported = CostModel(instance).evaluate(res.plan).iteration_time_s
    if not math.isclose(reported, res.iteration_time_s, rel_tol=REL_TOL):
        return f"{backend}: reports {res.iteration_time_s} s, evaluate() gives {reported} s"
    if truth.plan is None:
        return f"{backend}: {res.status} {res.iteration_time_s:.6g} s [{describe(res.plan)}], " \
            "brute force: no plan"
    if res.status != "optimal" or not math.isclose(res.iteration_time_s, truth.iteration_time_s,
                                                   rel_tol=REL_TOL):
        return f"{backend}: {res.status} {res.iteration_time_s:.6g} s [{describe(res.plan)}] vs " \
            f"brute force {truth.iteration_time_s:.6g} s [{describe(truth.plan)}]"
    return None
