"""`haap run` and `haap profile` (need the optional PyTorch extra)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from haap_solver.cli import _console, command, load_plan_for, load_with_options, print_json
from haap_solver.errors import InputError
from haap_solver.runtime import require_torch

REL_TOL = 1e-5
"""The runtime's loss must equal the single-process reference's within this (relative)."""
MAX_PROCESSES = 32
"""`haap run` starts one process per replica; a plan with more replicas is refused."""
MAX_CPU_HIDDEN = 256
"""Above this width (or 128 tokens, or a 1,024-token vocabulary) `haap run` runs the instance's
model scaled down, with the plan's layer count and split (it says so)."""


def _cfg_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("instance", help="instance .toml file")
    p.add_argument("plan", help="plan .json file")
    p.add_argument("--steps", type=int, default=3, help="training steps (default 3)")
    p.add_argument("--json", action="store_true", help="print the report as JSON on stdout")


def runtime_shape(model: Any) -> tuple[Any, str]:
    """The GPT that `haap run` runs: the instance's, or scaled down where it is too large for
    CPU processes (same layer count; the note says what changed)."""
    from haap_solver.runtime.gpt import GPTShape
    from haap_solver.runtime.profiler import shape_of

    shape = shape_of(model)
    if (shape.hidden_size <= MAX_CPU_HIDDEN and shape.seq_length <= 128
            and shape.vocab_size <= 1024):
        return shape, "the instance's model"
    small = GPTShape(num_layers=shape.num_layers, hidden_size=64, ffn_hidden_size=256,
                     num_heads=4, vocab_size=256, seq_length=32, gated_mlp=shape.gated_mlp)
    return small, ("the instance's model scaled down to hidden 64, 4 heads, 32 tokens, "
                   f"vocabulary 256, its {shape.num_layers} layers kept")


@command("run", "execute a plan's heterogeneous pipeline on CPU processes and check the loss "
         "(needs '.[run]')", _cfg_run)
def cmd_run(args: argparse.Namespace) -> int:
    from haap_solver.cost.evaluate import CostModel
    from haap_solver.validate import check_plan

    if args.steps < 1:
        raise InputError(f"must be >= 1, got {args.steps}", field="--steps")
    instance = load_with_options(args)
    plan = load_plan_for(instance, args.plan)
    check_plan(instance, plan, source=args.plan)
    replicas = sum(st.dp for st in plan.stages)
    if replicas > MAX_PROCESSES:
        raise InputError(f"the plan has {replicas} replicas and haap run starts one CPU process "
                         f"per replica (at most {MAX_PROCESSES}); run a plan of a smaller "
                         "cluster", source=args.plan)
    require_torch("run")
    from haap_solver.runtime.pipeline import run_plan

    shape, what = runtime_shape(instance.model)
    out = run_plan(plan, shape, args.steps)
    rel = max(abs(a - b) / abs(b) for a, b in zip(out["losses"], out["reference"], strict=True))
    out["max_rel_loss_error"] = rel
    out["loss_matches"] = rel <= REL_TOL
    out["model"] = what
    # The prediction: evaluate() with this CPU's measured profile of the same GPT, standing for
    # every device type of the plan (float64, one thread, like the runtime).
    profile = cpu_profile(shape, plan)
    if what == "the instance's model":
        cm = CostModel(instance, profile=profile)
        ev = cm.evaluate(plan)
        out["predicted"] = {
            "iteration_time_s": ev.iteration_time_s, "breakdown": ev.breakdown,
            "stages": [{"compute_s": plan.num_micro_batches * (st.fwd_s + st.bwd_s)}
                       for st in ev.stages]}
    out["measured"] = measured_summary(out, plan)
    # What the processes shared: with more processes than cores each stage's compute is
    # time-sliced, which the profile (one process alone) does not see.
    out["host"] = {"cpus": os.cpu_count(), "processes": out["world"],
                   "load_average_1min": os.getloadavg()[0] if hasattr(os, "getloadavg")
                   else None}
    if args.json:
        print_json(out)
    else:
        _render_run(out)
    return 0 if out["loss_matches"] else 1


def cpu_profile(shape: Any, plan: Any) -> Any:
    """A profile of `shape` measured here at every share the plan uses, for its device types."""
    import torch

    from haap_solver.cost.profile import Profile, ProfileEntry
    from haap_solver.runtime.pipeline import DTYPE
    from haap_solver.runtime.profiler import measure

    torch.set_num_threads(1)
    shares = sorted({g.micro_batch_share for s in plan.stages for g in s.replicas})
    devices = sorted({g.device for s in plan.stages for g in s.replicas})
    entries = []
    for b in shares:
        values = measure(shape, b, dtype=DTYPE)
        entries += [ProfileEntry(device=d, tp=1, micro_batch=b, **values)  # type: ignore[arg-type]
                    for d in devices]
    return Profile(entries, source="haap run (CPU)")


def measured_summary(out: dict[str, Any], plan: Any) -> dict[str, Any]:
    """Per stage the slowest replica's mean compute, p2p and all-reduce seconds per step."""
    stages = []
    for s in range(plan.num_stages):
        ranks = [r["timing"] for r in out["ranks"] if r["stage"] == s]
        stages.append({k: max(t[k] for t in ranks) for k in ranks[0]})
    return {"iteration_time_s": max(st["iteration_s"] for st in stages), "stages": stages}


def _render_run(out: dict[str, Any]) -> None:
    from rich.table import Table

    console = _console()
    host = out["host"]
    console.print(f"ran {out['world']} processes on {host['cpus']} CPU(s) ({out['model']}): "
                  "losses "
                  + ", ".join(f"{v:.6f}" for v in out["losses"]) + "; one process: "
                  + ", ".join(f"{v:.6f}" for v in out["reference"])
                  + f"; largest relative difference {out['max_rel_loss_error']:.1e} "
                  + ("[green]ok[/green]" if out["loss_matches"] else "[red]MISMATCH[/red]"))
    table = Table(title="per stage, seconds per step (slowest replica)")
    for col in ("stage", "compute", "predicted compute", "p2p and waiting", "all-reduce",
                "optimizer"):
        table.add_column(col, justify="right")
    pred = out.get("predicted")
    for i, st in enumerate(out["measured"]["stages"]):
        pc = f"{pred['stages'][i]['compute_s']:.4f}" if pred else "-"
        table.add_row(str(i), f"{st['compute_s']:.4f}", pc, f"{st['p2p_s']:.4f}",
                      f"{st['allreduce_s']:.4f}", f"{st['optimizer_s']:.4f}")
    console.print(table)
    measured = out["measured"]["iteration_time_s"]
    if pred:
        console.print(f"iteration: measured {measured:.4f} s, evaluate() with this CPU's "
                      f"profile {pred['iteration_time_s']:.4f} s "
                      f"({pred['iteration_time_s'] / measured - 1:+.0%}); the cost model's "
                      "p2p and all-reduce are the instance's network, not gloo on one host")
    else:
        console.print(f"iteration: measured {measured:.4f} s (no prediction: the model ran "
                      "scaled down)")


# -- profile -------------------------------------------------------------------------------------
def _cfg_profile(p: argparse.ArgumentParser) -> None:
    p.add_argument("instance", help="instance .toml file")
    p.add_argument("-o", "--output", required=True, metavar="PROFILE.toml",
                   help="profile file to write (docs/cost-model.md Sec. 9)")
    p.add_argument("--micro-batches", default=None, metavar="B,B,...",
                   help="micro-batch sizes to measure (default: 1, 2, 4, ... up to "
                        "training.max_micro_batch_share)")
    p.add_argument("--as", dest="devices", default=None, metavar="DEVICE,...",
                   help="device types the measurement stands for (default: every device type "
                        "of the instance's cluster)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="where to measure (auto: the first CUDA GPU if any, else the CPU)")
    p.add_argument("--repeats", type=int, default=5, help="timed runs per value (median)")
    p.add_argument("--threads", type=int, default=1, metavar="N",
                   help="CPU threads for the measurement (default 1: on a busy host more "
                        "threads wait on each other, 0.3 ms layers measured at 100+ ms)")


def _int_list(text: str, field: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise InputError(f"expected comma-separated integers, got {text!r}", field=field) from None
    if not values or min(values) < 1:
        raise InputError(f"expected positive integers, got {text!r}", field=field)
    return sorted(set(values))


@command("profile", "measure the instance's layer, embedding and head on this machine "
         "(needs '.[profile]')", _cfg_profile)
def cmd_profile(args: argparse.Namespace) -> int:
    require_torch("profile")
    import torch

    from haap_solver.cost.profile import load_profile
    from haap_solver.runtime.profiler import profile_toml

    instance = load_with_options(args)
    if args.repeats < 1:
        raise InputError(f"must be >= 1, got {args.repeats}", field="--repeats")
    if args.threads < 1:
        raise InputError(f"must be >= 1, got {args.threads}", field="--threads")
    torch.set_num_threads(args.threads)
    if args.micro_batches:
        sizes = _int_list(args.micro_batches, "--micro-batches")
    else:
        top = instance.training.max_micro_batch_share
        sizes = [b for b in (1, 2, 4, 8, 16, 32, 64) if b <= top]
    known = sorted(instance.cluster.devices)
    devices = [d.strip() for d in args.devices.split(",")] if args.devices else known
    for d in devices:
        if d not in known:
            raise InputError(f"{d!r} is not a device type of the instance's cluster "
                             f"({', '.join(known)})", field="--as")
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise InputError("no CUDA GPU here", field="--device")
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(instance.training.dtype,
                                                                 torch.float32)
    if device == "cpu":
        dtype = torch.float32  # CPU half-precision kernels are no guide to anything
    text = profile_toml(instance.model, devices, sizes, device=device, dtype=dtype,
                        repeats=args.repeats)
    Path(args.output).write_text(text)
    load_profile(args.output)  # what we wrote must read back
    sys.stderr.write(f"profile of {instance.model.name} on {device} ({len(sizes)} micro-batch "
                     f"size(s), for {', '.join(devices)}) written to {args.output}\n")
    return 0


__all__ = ["cmd_profile", "cmd_run", "runtime_shape"]
