"""Human-readable tables (rich, on stderr) for evaluations and plans, and `styled` text."""

from __future__ import annotations

from typing import Any

from haap_solver.cost.evaluate import Evaluation
from haap_solver.instance import Instance
from haap_solver.plan import Plan


def styled(*parts: str | tuple[str, str]) -> Any:
    """Rich text from plain strings and (string, style) pairs, none of it read as markup."""
    from rich.text import Text

    return Text.assemble(*parts)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.1f}"


def plan_table(plan: Plan, ev: Evaluation) -> Any:
    from rich.table import Table

    table = Table(title=f"{plan.num_stages} stage(s), micro-batch {plan.micro_batch_size} x "
                        f"{plan.num_micro_batches}, {plan.schedule}", title_justify="left")
    for col in ("stage", "layers", "recompute", "replicas", "device", "TP", "share",
                "fwd+bwd ms", "mem GiB / cap"):
        table.add_column(col, justify="right" if col not in ("recompute", "device") else "left")
    for s, sr in zip(plan.stages, ev.stages, strict=True):
        for j, (r, rr) in enumerate(zip(s.replicas, sr.replicas, strict=True)):
            mem = rr.memory.as_gib()
            table.add_row(
                str(sr.index) if j == 0 else "",
                f"{s.first_layer}-{s.end_layer - 1} ({s.num_layers})" if j == 0 else "",
                s.recompute if j == 0 else "",
                str(r.count), f"{r.device} ({r.node_group})", str(r.tp), str(r.micro_batch_share),
                _ms(rr.fwd_s + rr.bwd_s),
                f"{mem['total_gib']:.1f} / {mem['capacity_gib']:.0f}",
            )
    return table


def _add_cost_rows(summary: Any, instance: Instance, plan: Plan, ev: Evaluation) -> None:
    """What the plan rents (whole nodes), what it leaves idle, and what it costs."""
    from haap_solver.objective import rental

    rent = rental(instance, plan)
    idle = ", ".join(f"{n} node(s) of {g}" for g, n in rent.idle_nodes.items() if n)
    summary.add_row("GPUs rented", f"{sum(rent.gpus.values())} (whole nodes); not rented: "
                    + (idle or "none"))
    summary.add_row("cost per iteration", f"{ev.cost_per_iteration:,.6g}")
    if ev.cost_per_iteration:
        summary.add_row("tokens per unit of currency",
                        f"{instance.tokens_per_iteration / ev.cost_per_iteration:,.0f}")


def render_evaluation(console: Any, instance: Instance, plan: Plan, ev: Evaluation) -> None:
    from rich.table import Table

    console.print(plan_table(plan, ev))
    summary = Table(title=f"{instance.name}: {instance.model.name}", title_justify="left",
                    show_header=False)
    summary.add_column("what")
    summary.add_column("value", justify="right")
    summary.add_row("iteration time", f"{ev.iteration_time_s:.4f} s")
    summary.add_row("throughput", f"{ev.tokens_per_s:,.0f} tokens/s")
    summary.add_row("MFU / HFU", f"{ev.mfu:.1%} / {ev.hfu:.1%}")
    summary.add_row("GPUs used", f"{ev.num_gpus_used} of {instance.cluster.num_gpus}")
    if ev.cost_per_iteration is not None:
        _add_cost_rows(summary, instance, plan, ev)
    summary.add_row("peak memory", f"{ev.peak_memory_fraction:.1%} of capacity")
    for key, value in ev.breakdown.items():
        share = value / ev.iteration_time_s if ev.iteration_time_s else 0.0
        summary.add_row(f"  {key.removesuffix('_s').replace('_', ' ')}",
                        f"{value:.4f} s ({share:.1%})")
    console.print(summary)
    for note in ev.extrapolated:
        console.print(styled(("extrapolated:", "yellow"), f" {note}"))
