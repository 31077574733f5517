"""The uniform baseline is the best uniform grid: checked against a plain enumeration of grids.

README's `uniform`: the best uniform DP x TP x PP grid (even layer split, one micro-batch size, one
recomputation setting, GPUs handed to the stages in node-group order). The enumeration below is
written from that description alone: every TP legal on every node group, every pipeline depth that
divides the layers, every DP degree that fits the GPUs, every per-replica micro-batch that divides
the batch, every allowed recomputation mode and schedule; each grid's plan is built here, checked by
the validator (memory included) and costed by evaluate(); the fastest wins. The baseline must find
exactly that time. (An off-by-one in the baseline's grid loop, `>` for `>=`, skipped every grid
that uses all the GPUs: the baseline was up to 2.07x slower on 12 of 16 instances and no test
noticed; issue 25.)
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from tiny_instances import tiny_instance

from haap_solver.baselines.uniform import uniform
from haap_solver.cost.evaluate import CostModel
from haap_solver.instance import Instance, load_instance
from haap_solver.plan import Placement, Plan, ReplicaGroup, Stage
from haap_solver.validate import plan_violations

ROOT = Path(__file__).resolve().parents[1] / "instances"
SHIPPED = ("small/toy-gpt-6l-a100x2-t4x2", "gpt3-1.3b-a100x8", "gpt3-2.7b-h100x8",
           "llama3.2-1b-h100x4-l40sx4", "llama3.2-1b-rtx4090-a10", "gpt3-1.3b-t4x4-a100x12",
           "gpt3-2.7b-a100-40gx8-v100x8", "llama3-8b-h100x16")


def legal_tp(instance: Instance, tp: int) -> bool:
    """A power of two inside every node, within max_tp, dividing heads, KV heads and the MLP."""
    m = instance.model
    kv_heads = m.num_kv_heads or m.num_attention_heads
    return (tp & (tp - 1) == 0 and tp <= instance.training.max_tp
            and all(g.gpus_per_node % tp == 0 for g in instance.cluster.node_groups)
            and m.num_attention_heads % tp == 0 and kv_heads % tp == 0
            and m.ffn_hidden_size % tp == 0)


def gpus_in_order(instance: Instance) -> list[tuple[str, str, int]]:
    """Every GPU as (node group, device, node), node group after node group, node after node."""
    return [(g.name, g.device, node) for g in instance.cluster.node_groups
            for node in range(g.num_nodes) for _ in range(g.gpus_per_node)]


def stage_replicas(gpus: list[tuple[str, str, int]], tp: int,
                   share: int) -> tuple[ReplicaGroup, ...] | None:
    """Replica groups of a run of GPUs, TP inside nodes (None if a TP group straddles two)."""
    per_node: dict[tuple[str, str, int], int] = {}
    for gpu in gpus:
        per_node[gpu] = per_node.get(gpu, 0) + 1
    if any(n % tp for n in per_node.values()):
        return None
    groups: dict[tuple[str, str], list[Placement]] = {}
    for (group, device, node), n in per_node.items():
        groups.setdefault((group, device), []).append(Placement(node=node, replicas=n // tp))
    return tuple(ReplicaGroup(node_group=group, device=device, tp=tp, micro_batch_share=share,
                              count=sum(p.replicas for p in places), placement=tuple(places))
                 for (group, device), places in groups.items())


def best_grid_by_enumeration(instance: Instance) -> tuple[float, int]:
    """(fastest iteration time over every uniform grid that is valid, grids that are valid)."""
    cm = CostModel(instance)
    training, L = instance.training, instance.model.num_layers
    B = training.global_batch_size
    line = gpus_in_order(instance)
    best, valid = math.inf, 0
    for schedule in training.schedules:
        for tp in range(1, len(line) + 1):
            if not legal_tp(instance, tp):
                continue
            for pp in range(1, L + 1):
                if L % pp:
                    continue
                for dp in range(1, len(line) + 1):
                    if tp * pp * dp > len(line):
                        continue
                    for share in range(1, training.max_micro_batch_share + 1):
                        if B % (dp * share):
                            continue
                        stages = []
                        for k in range(pp):
                            run = line[k * tp * dp:(k + 1) * tp * dp]
                            reps = stage_replicas(run, tp, share)
                            if reps is None:
                                break
                            stages.append(reps)
                        if len(stages) < pp:
                            continue
                        for rc in training.recompute:
                            plan = Plan(schedule=schedule, micro_batch_size=dp * share,
                                        num_micro_batches=B // (dp * share),
                                        stages=tuple(Stage(first_layer=k * (L // pp),
                                                           num_layers=L // pp, recompute=rc,
                                                           replicas=reps)
                                                     for k, reps in enumerate(stages)))
                            if plan_violations(instance, plan, cost_model=cm):
                                continue
                            valid += 1
                            best = min(best, cm.evaluate(plan).iteration_time_s)
    return best, valid


def check_baseline(instance: Instance) -> None:
    expected, valid = best_grid_by_enumeration(instance)
    res = uniform(instance, time_limit_s=600.0, threads=1, seed=0)
    if valid == 0:
        assert res.plan is None and res.status == "infeasible"
        return
    assert res.plan is not None and res.status == "feasible"
    assert res.iteration_time_s == pytest.approx(expected, rel=1e-12), (
        f"uniform baseline {res.iteration_time_s} s, best of {valid} valid grids {expected} s")


@pytest.mark.parametrize("name", SHIPPED)
def test_uniform_is_the_best_grid_on_shipped_instances(name: str) -> None:
    check_baseline(load_instance(ROOT / f"{name}.toml"))


TINY = [
    # Two device types, single-node groups, memory tight on the small device.
    dict(devices=[("A100-80G", None), ("T4", 4.0)], groups=[(0, 1, 2), (1, 1, 2)], layers=4,
         hidden=256, heads=8, seq=256, batch=8, recompute=("none", "full")),
    # Multi-node groups: grids straddle nodes and node groups; GPipe and 1F1B.
    dict(devices=[("H100", None), ("A10", None)], groups=[(0, 2, 2), (1, 2, 4)], layers=6,
         hidden=512, heads=8, seq=512, batch=12, recompute=("none", "selective", "full"),
         schedules=("1f1b", "gpipe")),
    # Three device types, one GPU per node on one of them (TP 1 only), ZeRO-3.
    dict(devices=[("A100-80G", 2.5), ("V100-32G", None), ("L40S", None)],
         groups=[(0, 1, 4), (1, 3, 1), (2, 1, 4)], layers=8, hidden=256, heads=4, seq=256,
         batch=16, recompute=("none", "full"), zero=3),
    # Memory so tight that only grids with TP x PP = all the GPUs fit (DP 1).
    dict(devices=[("H100", 2.8)], groups=[(0, 2, 2)], layers=8, hidden=1024, heads=8, seq=1024,
         batch=8, recompute=("none",), zero=0),
]


@pytest.mark.parametrize("case", range(len(TINY)))
def test_uniform_is_the_best_grid_on_tiny_instances(case: int) -> None:
    check_baseline(tiny_instance(**TINY[case]))  # type: ignore[arg-type]
