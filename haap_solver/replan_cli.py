"""`haap replan INSTANCE.toml EVENTS.toml`: replay a trace of changes through a `Planner`,
printing per event the new plan's iteration time, its proven gap, what changed in the plan, the
GPUs moved, and the warm re-solve's time beside a cold solve's of the same instance (table on
stderr, ``--json`` on stdout)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from haap_solver.changes import Change, changes_from_toml
from haap_solver.cli import (
    SEED,
    THREADS,
    TIME_LIMIT_S,
    _console,
    check_option,
    command,
    print_json,
)
from haap_solver.errors import InputError
from haap_solver.instance import Instance, load_instance
from haap_solver.plan import Plan
from haap_solver.planner import Planner, Replanned
from haap_solver.result import SolveResult
from haap_solver.search.solve import solve


def _cfg_replan(p: argparse.ArgumentParser) -> None:
    p.add_argument("instance", help="instance .toml file (the cluster before the first event)")
    p.add_argument("events", help="events .toml file: [[events]] tables, one per change")
    p.add_argument("--time-limit", type=float, default=60.0, metavar="S",
                   help="time limit of each solve, seconds (default 60)")
    p.add_argument("--threads", type=int, default=1, metavar="N", help="solver threads (default 1)")
    p.add_argument("--seed", type=int, default=0, help="solver random seed (default 0)")
    p.add_argument("--gap", type=float, default=0.0, metavar="FRACTION",
                   help="stop each solve (warm and cold) once its plan is proven within this "
                        "fraction of the optimum (0.01: 1%%; default 0, a proof)")
    p.add_argument("--migration-slack", type=float, default=None, metavar="FRACTION",
                   help="keep the running plan where it is within this fraction of the best "
                        "plan found and moves fewer GPUs (0.02: 2%%)")
    p.add_argument("--cold", action=argparse.BooleanOptionalAction, default=True,
                   help="also solve each changed instance cold, for the warm/cold times "
                        "(default on)")
    p.add_argument("--json", action="store_true", help="print the events as JSON on stdout")


def plan_delta(before: Plan | None, after: Plan | None) -> str:
    """What changed between two plans, in a few words."""
    if after is None:
        return "no plan"
    if before is None:
        return f"{after.num_stages} stages, {after.num_gpus} GPUs, micro-batch " \
               f"{after.micro_batch_size}"
    parts = []
    for name, a, b in (("stages", before.num_stages, after.num_stages),
                       ("GPUs", before.num_gpus, after.num_gpus),
                       ("micro-batch", before.micro_batch_size, after.micro_batch_size)):
        if a != b:
            parts.append(f"{name} {a}->{b}")
    if not parts:
        same_split = [s.num_layers for s in before.stages] == [s.num_layers for s in after.stages]
        parts.append("same shape" if same_split else "layers re-split")
    return ", ".join(parts)


def cold_solve(instance: Instance, *, time_limit_s: float, threads: int,
               seed: int, relative_gap: float = 0.0) -> tuple[SolveResult, float]:
    """A solve from nothing, as the Planner solves (no baseline seeds), and its wall time."""
    start = time.perf_counter()
    result = solve(instance, time_limit_s=time_limit_s, threads=threads, seed=seed,
                   seed_with_baselines=False, relative_gap=relative_gap)
    return result, time.perf_counter() - start


def _row(index: int, label: str, got: Replanned, before: Plan | None,
         cold: tuple[SolveResult, float] | None) -> dict[str, Any]:
    row: dict[str, Any] = {"event": index, "label": label, **got.to_dict(),
                           "plan_change": plan_delta(before, got.result.plan)}
    if cold is not None:
        result, seconds = cold
        row.update(cold_s=seconds, cold_iteration_time_s=result.iteration_time_s,
                   cold_best_bound_s=result.best_bound_s, cold_status=result.status,
                   warm_over_cold=got.solve_s / seconds if seconds > 0 else None)
    return row


def check_events(instance: Instance, events: list[tuple[Change, str]], source: str) -> None:
    """Every event applied in turn to a Planner that solves nothing (0.2 s for the 1,024-GPU
    trace), so that what only the changed instance can refuse (an unknown node group, a node
    index past a resized group, a device the new training set-up cannot use) is reported, at
    the event's own field, before the first solve rather than after every solve before it."""
    dry = Planner(instance)
    for index, (change, _) in enumerate(events):
        try:
            dry.apply(change)
        except InputError as e:
            raise e.within(source=source, prefix=f"events[{index}]") from None


@command("replan", "replay a trace of cluster and job changes, re-planning warm after each",
         _cfg_replan)
def cmd_replan(args: argparse.Namespace) -> int:
    check_option(args.time_limit, "--time-limit", TIME_LIMIT_S)
    check_option(args.threads, "--threads", THREADS)
    check_option(args.seed, "--seed", SEED)
    for value, flag in ((args.migration_slack, "--migration-slack"), (args.gap, "--gap")):
        if value is not None and not 0.0 <= value < 1.0:
            raise InputError(f"must be in [0, 1), got {value}", field=flag)
    instance = load_instance(args.instance)
    events = changes_from_toml(args.events)
    planner = Planner(instance, time_limit_s=args.time_limit, threads=args.threads,
                      seed=args.seed, migration_slack=args.migration_slack,
                      relative_gap=args.gap)
    check_events(instance, events, str(args.events))
    options = {"time_limit_s": args.time_limit, "threads": args.threads, "seed": args.seed,
               "relative_gap": args.gap}
    rows = []
    steps: list[tuple[str, Any]] = [("initial plan", None), *[(label, change)
                                                             for change, label in events]]
    for index, (label, change) in enumerate(steps):
        if change is not None:
            try:
                planner.apply(change)
            except InputError as e:  # what only the changed instance can check, located
                raise e.within(source=str(args.events), prefix=f"events[{index - 1}]") \
                    from None
        before = planner.plan
        got = planner.solve()
        cold = cold_solve(planner.instance, **options) if args.cold and change is not None \
            else None
        rows.append(_row(index, label, got, before, cold))
        _print_row(rows[-1])
    if args.json:
        print_json({"instance": instance.name, "events": rows})
    return 0


def _print_row(row: dict[str, Any]) -> None:
    """One event on stderr as it is re-planned."""
    console = _console()
    changes = "; ".join(row["changes"]) or "-"
    cold = ""
    if "cold_s" in row:
        cold = (f", cold {row['cold_s']:.2f} s ({row['cold_status']}, "
                f"{row['cold_iteration_time_s']:.6g} s)")
    head = f"{row['label']}: {changes}" if row["label"] and row["changes"] else (
        row["label"] or changes)
    reuse = row["cache_reuse"]
    bounds = (f", bounds {reuse['bounds_kept']} of {reuse['bounds_total']}"
              + (f" ({reuse['bounds_note']})" if reuse["bounds_note"] else ""))
    cache = (f"; cache kept {reuse['share']:.0%}{bounds}" if row["changes"] else "")
    console.print(f"[{row['event']}] {head}")
    console.print(f"    {row['iteration_time_s']:.6g} s/iter ({row['status']}, gap "
                  f"{row['gap']:.2%}); {row['plan_change']}; moved {row['moved_gpus']} GPUs, "
                  f"{row['moved_layers']} layer-GPUs; warm {row['solve_s']:.2f} s{cold}{cache}")
