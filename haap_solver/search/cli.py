"""`haap solve`: the exact search from the command line (plan table on stderr, JSON on stdout)."""

from __future__ import annotations

import argparse
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

from haap_solver import limits
from haap_solver._fields import Range
from haap_solver.cli import (
    SEED,
    THREADS,
    TIME_LIMIT_S,
    _console,
    add_profile_option,
    add_target_option,
    check_option,
    check_output_not_input,
    command,
    load_with_options,
    print_json,
    styled,
)
from haap_solver.errors import InputError, write_text
from haap_solver.search.backends import BACKENDS
from haap_solver.search.solve import DEFAULT_BACKEND


def _cfg_solve(p: argparse.ArgumentParser) -> None:
    p.add_argument("instance", help="instance .toml file")
    p.add_argument("--backend", choices=sorted(BACKENDS), default=DEFAULT_BACKEND,
                   help=f"solver for the stage-assignment models (default: {DEFAULT_BACKEND})")
    p.add_argument("--no-baseline-seeds", action="store_true",
                   help="do not seed the search with the uniform-grid and Metis-style plans")
    p.add_argument("--time-limit", type=float, default=60.0, metavar="S",
                   help="wall-clock limit in seconds; the best plan and its proven gap are "
                        "returned when it is reached (default: 60)")
    p.add_argument("--gap", type=float, default=0.0, metavar="FRACTION",
                   help="stop once the plan is proven within this relative gap of the optimum "
                        "(0.01: 1%%); default 0, a proof of the optimum")
    p.add_argument("--threads", type=int, default=1, metavar="N",
                   help="solver threads (default 1: deterministic)")
    p.add_argument("--seed", type=int, default=0, help="solver random seed (default 0)")
    p.add_argument("--max-stages", type=int, default=None, metavar="P",
                   help="consider at most P pipeline stages")
    p.add_argument("--mixed", action=argparse.BooleanOptionalAction, default=True,
                   help="also search mixed-type stages: replica groups of several node groups "
                        "in one data-parallel stage, each with its own TP degree and batch share, "
                        "after the single-type space (which takes up to 3/4 of the time limit); "
                        "default on, --no-mixed for single-type stages only")
    p.add_argument("--empty-end-stages", action=argparse.BooleanOptionalAction, default=None,
                   help="also search plans whose first stage holds only the embedding or whose "
                        "last holds only the LM head (formulations Sec. 1.2; default: the "
                        "instance's training.empty_end_stages, off unless set)")
    p.add_argument("-o", "--output", metavar="PLAN.json", help="write the plan here")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_target_option(p)
    add_profile_option(p)


@command("solve", "find the fastest plan, with a proof of optimality or a proven gap", _cfg_solve)
def cmd_solve(args: argparse.Namespace) -> int:
    from haap_solver.report.tables import render_evaluation
    from haap_solver.result import SolveResult
    from haap_solver.search.solve import solve
    from haap_solver.targets import solve_for_target

    check_option(args.time_limit, "--time-limit", TIME_LIMIT_S)
    check_option(args.threads, "--threads", THREADS)
    check_option(args.seed, "--seed", SEED)
    if not 0.0 <= args.gap < 1.0:  # (false for NaN)
        raise InputError(f"must be a fraction in [0, 1) (0.01 for 1%), got {args.gap}",
                         field="--gap")
    check_option(args.max_stages, "--max-stages", Range(1, limits.MAX_STAGES))
    check_output_not_input(args, "instance", "profile")
    instance = load_with_options(args)
    if args.empty_end_stages is not None:
        instance = replace(instance, training=replace(instance.training,
                                                      empty_end_stages=args.empty_end_stages))
    console = _console()
    progress_cb = None
    bar = None
    if not args.no_progress and console.is_terminal:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(TextColumn("solving", style="bold", markup=False), BarColumn(),
                       TextColumn("{task.completed}/{task.total} sub-problems", markup=False),
                       TextColumn("{task.description}", markup=False), TimeElapsedColumn(),
                       console=console, transient=True)
        task = bar.add_task("", total=1)

        def progress_cb(done: int, total: int, note: str) -> None:
            bar.update(task, completed=done, total=max(total, 1), description=note)

        bar.start()
    try:
        if instance.training.target != "any":  # the exact search over the engine's space
            result: SolveResult = solve_for_target(
                instance, instance.training.target, backend=args.backend,
                time_limit_s=args.time_limit, seed=args.seed, max_stages=args.max_stages,
                mixed=args.mixed, relative_gap=args.gap)
        else:
            result = solve(instance, backend=args.backend, time_limit_s=args.time_limit,
                           threads=args.threads, seed=args.seed, max_stages=args.max_stages,
                           progress=progress_cb, seed_with_baselines=not args.no_baseline_seeds,
                           mixed=args.mixed, relative_gap=args.gap)
    finally:
        if bar is not None:
            bar.stop()
    if args.output and result.plan is not None:
        write_text(Path(args.output), result.plan.to_json() + "\n")
    if args.json:
        print_json(result.to_dict())
    if result.plan is not None and result.evaluation is not None:
        if not args.json:
            render_evaluation(console, instance, result.plan, result.evaluation)
        gap = f"gap {result.gap:.2%}" if result.status != "optimal" else "proven optimal"
        cost_bound = getattr(result, "cost_bound", None)  # the cost objectives (objectives.py)
        bound = (f"cost bound {cost_bound:,.6g} per iteration" if cost_bound is not None
                 else f"bound {result.best_bound_s:.4f} s")
        # (no cache or compute-bound figures where a baseline's seed is the plan: a target's
        # uniform grid)
        hits = result.cache.get("hit_rate")
        cache = f"; cache hit rate {hits:.0%}" if hits is not None else ""
        compute = (f"; {result.ratio_to_compute_bound:.3f}x the compute-bound limit "
                   f"({result.compute_bound_s:.4f} s)" if result.compute_bound_s else "")
        console.print(styled(
            (result.status, "bold"), f" ({gap}; {bound}) in "
            f"{result.wall_s:.2f} s; {result.solved} models solved{cache}{compute}"))
        phase = result.search_space.get("single_type_phase")
        fates = result.search_space.get("subproblem_fates")  # (None: an objective's sub-clusters)
        if fates is not None and phase:
            console.print("sub-problems of single-type stages: " + fates_line(
                phase["subproblems"], phase["subproblem_fates"], phase["excluded_by_memory"]))
            console.print("sub-problems with a mixed-type stage: " + fates_line(
                result.subproblems, fates, result.pruned_by_memory))
        elif fates is not None:
            console.print("sub-problems: " + fates_line(result.subproblems, fates,
                                                        result.pruned_by_memory))
        polished = local_search_line(result.search_space)
        if polished:
            console.print(polished)
        if phase:
            mixed = result.search_space.get("mixed_stage_configs", {})
            resumed = result.search_space.get("resumed_single_type_phase")
            mixed_phase = result.search_space.get("mixed_phase", {})
            mixed_bound = mixed_phase.get("best_bound_s", math.nan)
            what = (f"({mixed.get('after_pruning', 0)} configurations, "
                    f"{mixed.get('generated', 0)} generated)" if mixed_phase.get("set_up", True)
                    else "(not set up in time, see below)")
            # With two threads or more the two searches ran side by side (formulations Sec. 1.1).
            beside = bool(mixed_phase.get("second_process"))
            order = ("single-type stages, beside the search over plans with a mixed-type stage"
                     " in a second process" if beside else "single-type stages first")
            console.print(
                f"{order}: {phase['status']} {phase['iteration_time_s']:.4f} s "
                f"(bound {phase['best_bound_s']:.4f} s) in {phase['wall_s']:.2f} s; plans with a "
                f"mixed-type stage {what}: bound {mixed_bound:.4f} s"
                + (f"; single-type stages resumed: bound {resumed['best_bound_s']:.4f} s in "
                   f"{resumed['wall_s']:.2f} s" if resumed else "")
                + ". The status, bound and gap above cover both.")
        cut = result.search_space.get("mixed_space", {}).get("cut_micro_batches")
        if phase and cut:
            console.print(
                f"mixed-type stages at micro-batch sizes {', '.join(map(str, cut))}: the cut "
                "space of formulations Sec. 1.1 (two device types, power-of-two or whole-node "
                "parts, one split per skeleton), their full space having over "
                f"{result.search_space['mixed_space']['full_candidates_budget']} candidates; "
                "the proof covers that space there.")
        outside = result.search_space.get("outside_space")
        if outside:
            console.print("valid plans outside the searched space (formulations/"
                          "stage-assignment.md; the proof covers the searched space): "
                          + "; ".join(outside) + ".")
        if result.message:
            console.print(result.message)
        if args.output:
            console.print(f"plan written to {args.output}")
    else:
        console.print(styled((result.status, "yellow"), f": {result.message}"))
        return 1
    return 0


def fates_line(subproblems: int, fates: dict[str, int], excluded: int) -> str:
    """How the search's sub-problems ended, each counted once (SolveResult.subproblems)."""
    return (f"{subproblems} searched: {fates.get('load_balance_bound', 0)} closed by their "
            f"load-balance bound, "
            + (f"{fates['carried_bound']} by a bound carried from the previous cluster, "
               if fates.get("carried_bound") else "")
            + f"{fates.get('strengthened_bound', 0)} by a strengthened bound, "
            f"{fates.get('model', 0)} by their model, {fates.get('open', 0)} left open; "
            f"{excluded} more excluded by memory before the search")


__all__ = ["cmd_solve", "fates_line"]


def local_search_line(space: dict[str, Any]) -> str:
    """What the local search around improved incumbents did over the search's phases (its
    plans are plans, not bounds: formulations Sec. 4, *Polish*), or "" where it never ran."""
    runs = [got for got in (space.get("local_search"),
                            *(space.get(key, {}).get("local_search")
                              for key in ("single_type_phase", "resumed_single_type_phase")))
            if got]
    if not runs:
        return ""
    plans = sum(got["plans_improved"] for got in runs)
    seconds = sum(got["seconds"] for got in runs)
    return (f"local search around improved plans (formulations Sec. 4, Polish): {plans} "
            f"plan{'s' if plans != 1 else ''} made faster, in {seconds:.2f} s")
