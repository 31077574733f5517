"""The reference runtime: a plan's heterogeneous pipeline executed on CPU processes (gloo).

Every replica of every stage is one process (a replica's TP degree is not executed: one process
runs its whole share). Each stage holds its own layers and its own DP degree; replica r of a
stage takes rows [o_r, o_r + share_r) of every micro-batch, o_r the shares before it, so
between two stages of different DP widths every sender passes each receiver the rows their
ranges share, and gradients go back the same way. The stages run the plan's schedule (1F1B:
P - s - 1 warm-up forwards on stage s, then one forward one backward, then the cool-down
backwards; GPipe: all forwards, then all backwards), the gradients of each stage are summed
over its DP group (one all-reduce of a flat buffer), then every process takes an Adam step.

The loss is the mean cross-entropy over every token of the global batch; each last-stage replica
adds its rows' share, so the plan cannot change the mathematics: `run_plan` checks the loss of
every step against one process running the same model on the same data.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from haap_solver.plan import Plan, plan_from_dict
from haap_solver.runtime.gpt import GPTShape, batch, build_parts

DTYPE = torch.float64
"""The runtime's precision: float64, so that the loss of a split batch matches one process's to
far below the 1e-5 check (float32 reductions in another order differ by about 1e-7)."""
LR = 1e-3
SEED = 1234


@dataclass(frozen=True, kw_only=True)
class Replica:
    """One process of the pipeline."""

    rank: int
    stage: int
    first_row: int
    rows: int


def replicas_of(plan: Plan) -> list[list[Replica]]:
    """Per stage, its replicas in plan order, with their global ranks and micro-batch rows."""
    out: list[list[Replica]] = []
    rank = 0
    for s, stage in enumerate(plan.stages):
        row = 0
        here = []
        for group in stage.replicas:
            for _ in range(group.count):
                here.append(Replica(rank=rank, stage=s, first_row=row,
                                    rows=group.micro_batch_share))
                rank += 1
                row += group.micro_batch_share
        out.append(here)
    return out


def _overlap(a: Replica, b: Replica) -> tuple[int, int] | None:
    lo, hi = max(a.first_row, b.first_row), min(a.first_row + a.rows, b.first_row + b.rows)
    return (lo, hi) if lo < hi else None


def schedule_of(kind: str, stage: int, stages: int, m: int) -> list[tuple[str, int]]:
    """The order of forwards ("F", j) and backwards ("B", j) on `stage`."""
    if kind == "gpipe":
        return [("F", j) for j in range(m)] + [("B", j) for j in range(m)]
    warm = min(stages - stage - 1, m)
    ops = [("F", j) for j in range(warm)]
    for j in range(m - warm):
        ops += [("F", warm + j), ("B", j)]
    ops += [("B", j) for j in range(m - warm, m)]
    return ops


def _worker(rank: int, world: int, port: int, plan_dict: dict[str, Any], shape: GPTShape,
            steps: int, out_dir: str) -> None:
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        result = _run_rank(rank, plan_from_dict(plan_dict), shape, steps)
        Path(out_dir, f"rank{rank}.json").write_text(json.dumps(result))
    finally:
        dist.destroy_process_group()


def _run_rank(rank: int, plan: Plan, shape: GPTShape, steps: int) -> dict[str, Any]:
    reps = replicas_of(plan)
    me = next(r for stage in reps for r in stage if r.rank == rank)
    s, P, m, b = me.stage, plan.num_stages, plan.num_micro_batches, plan.micro_batch_size
    groups = [dist.new_group([r.rank for r in stage]) for stage in reps]  # every rank, in order
    emb, layers, head = build_parts(shape, SEED, DTYPE)
    stage = plan.stages[s]
    mine = torch.nn.ModuleList(layers[stage.first_layer:stage.end_layer])
    modules: list[torch.nn.Module] = [mine]
    if s == 0:
        modules.insert(0, emb)
    if s == P - 1:
        modules.append(head)
    params = [p for mod in modules for p in mod.parameters()]
    opt = torch.optim.Adam(params, lr=LR)
    prev = [(r, ov) for r in reps[s - 1] if (ov := _overlap(r, me))] if s > 0 else []
    nxt = [(r, ov) for r in reps[s + 1] if (ov := _overlap(r, me))] if s < P - 1 else []
    tokens_total = plan.micro_batch_size * m * shape.seq_length
    losses: list[float] = []
    timing = {"compute_s": 0.0, "p2p_s": 0.0, "allreduce_s": 0.0, "optimizer_s": 0.0,
              "iteration_s": 0.0}
    act_shape = (shape.seq_length, shape.hidden_size)
    for step in range(steps):
        tokens, targets = batch(shape, b * m, seed=step)
        for p in params:
            p.grad = None
        dist.barrier()
        t_iter = time.perf_counter()
        pending: list[Any] = []
        saved: dict[int, tuple[torch.Tensor | None, torch.Tensor]] = {}
        loss_sum = torch.zeros((), dtype=DTYPE)
        for op, j in schedule_of(plan.schedule, s, P, m):
            lo = j * b + me.first_row
            rows = slice(lo, lo + me.rows)
            if op == "F":
                x: torch.Tensor | None = None
                t0 = time.perf_counter()
                if s == 0:
                    t1 = time.perf_counter()
                    h = emb(tokens[rows])
                else:
                    x = torch.empty((me.rows, *act_shape), dtype=DTYPE)
                    works = [dist.irecv(x[a - me.first_row:c - me.first_row], src=r.rank,
                                        tag=2 * j) for r, (a, c) in prev]
                    for w in works:
                        if w is not None:
                            w.wait()
                    x.requires_grad_(True)
                    t1 = time.perf_counter()
                    h = x
                timing["p2p_s"] += t1 - t0
                for layer in mine:
                    h = layer(h)
                if s == P - 1:
                    h = head(h, targets[rows]) / tokens_total
                    loss_sum += h.detach()
                t2 = time.perf_counter()
                timing["compute_s"] += t2 - t1
                for r, (a, c) in nxt:
                    pending.append(dist.isend(h.detach()[a - me.first_row:c - me.first_row]
                                              .contiguous(), dst=r.rank, tag=2 * j))
                timing["p2p_s"] += time.perf_counter() - t2
                saved[j] = (x, h)
            else:
                x, h = saved.pop(j)
                t0 = time.perf_counter()
                if s == P - 1:
                    t1 = time.perf_counter()
                    h.backward()
                else:
                    g = torch.empty((me.rows, *act_shape), dtype=DTYPE)
                    works = [dist.irecv(g[a - me.first_row:c - me.first_row], src=r.rank,
                                        tag=2 * j + 1) for r, (a, c) in nxt]
                    for w in works:
                        if w is not None:
                            w.wait()
                    t1 = time.perf_counter()
                    h.backward(g)
                t2 = time.perf_counter()
                timing["p2p_s"] += t1 - t0
                timing["compute_s"] += t2 - t1
                if x is not None:
                    assert x.grad is not None
                    for r, (a, c) in prev:
                        pending.append(dist.isend(x.grad[a - me.first_row:c - me.first_row]
                                                  .contiguous(), dst=r.rank, tag=2 * j + 1))
                timing["p2p_s"] += time.perf_counter() - t2
        t0 = time.perf_counter()
        for w in pending:
            if w is not None:
                w.wait()
        t1 = time.perf_counter()
        timing["p2p_s"] += t1 - t0
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
        flat = torch.cat([g.reshape(-1) for g in grads])
        if len(reps[s]) > 1:
            dist.all_reduce(flat, group=groups[s])
        k = 0
        for p, g in zip(params, grads, strict=True):
            p.grad = flat[k:k + g.numel()].view_as(g)
            k += g.numel()
        t2 = time.perf_counter()
        timing["allreduce_s"] += t2 - t1
        opt.step()
        t3 = time.perf_counter()
        timing["optimizer_s"] += t3 - t2
        timing["iteration_s"] += t3 - t_iter
        dist.all_reduce(loss_sum)  # only the last stage's replicas add to it
        losses.append(float(loss_sum))
    return {"rank": rank, "stage": s, "losses": losses,
            "timing": {k: v / steps for k, v in timing.items()}}


def reference_losses(plan: Plan, shape: GPTShape, steps: int) -> list[float]:
    """The same model, data and optimizer in one process on the whole batch at once."""
    torch.set_num_threads(1)
    emb, layers, head = build_parts(shape, SEED, DTYPE)
    modules: list[Any] = [emb, *layers, head]  # (torch.nn.Module; Any where torch is absent)
    params = [p for mod in modules for p in mod.parameters()]
    opt = torch.optim.Adam(params, lr=LR)
    n = plan.micro_batch_size * plan.num_micro_batches
    out = []
    for step in range(steps):
        tokens, targets = batch(shape, n, seed=step)
        opt.zero_grad(set_to_none=True)
        h = emb(tokens)
        for layer in layers:
            h = layer(h)
        loss = head(h, targets) / (n * shape.seq_length)
        loss.backward()
        opt.step()
        out.append(float(loss.detach()))
    return out


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_plan(plan: Plan, shape: GPTShape, steps: int) -> dict[str, Any]:
    """Run `plan` for `steps` steps on one process per replica; the per-rank losses and times,
    and the single-process reference losses."""
    world = sum(st.dp for st in plan.stages)
    with tempfile.TemporaryDirectory() as out_dir:
        mp.spawn(_worker, args=(world, _free_port(), plan.to_dict(), shape, steps, out_dir),
                 nprocs=world, join=True)
        ranks = [json.loads(Path(out_dir, f"rank{r}.json").read_text()) for r in range(world)]
    return {"world": world, "shape": asdict(shape), "ranks": ranks,
            "losses": ranks[0]["losses"], "reference": reference_losses(plan, shape, steps)}
