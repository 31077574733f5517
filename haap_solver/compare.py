"""``haap compare``, ``haap bench`` and ``haap plot``: every method on the same instances, alike
(`run_method`, `compare_instance`), and the three commands. What they print, write and draw is
in ``haap_solver.report`` (comparison table and CSV, the benchmark report, the plots).

Each instance gets one CostModel, shared by every method (the exact search runs first, so it pays
for filling the shared caches). Every reported time is ``CostModel.evaluate``'s, of a plan that
passed ``check_plan``. Tables and progress go to stderr; CSV / JSON to stdout.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from haap_solver import limits
from haap_solver._fields import Range
from haap_solver.cli import (
    SEED,
    THREADS,
    TIME_LIMIT_S,
    _console,
    check_option,
    command,
    json_safe,
    load_plan_for,
    styled,
)
from haap_solver.errors import HaapError, InfeasibleError, InputError, write_text
from haap_solver.instance import Instance
from haap_solver.report import bench_docs, previous
from haap_solver.report.bench import bench_report, machine_info
from haap_solver.report.comparison import rows_csv, rows_table
from haap_solver.report.host_load import HostLoad
from haap_solver.report.plots import bench_plots, plot_gantt, plot_memory
from haap_solver.report.replan_bench import TRACES as REPLAN_TRACES
from haap_solver.report.replan_bench import run_trace
from haap_solver.target_prices import PRICE_TARGETS, method_of

DEFAULT_METHODS = ("haap", "uniform", "proportional", "metis", "bruteforce")


def run_method(name: str, instance: Instance, *, cost_model: Any, time_limit_s: float,
               threads: int = 1, seed: int = 0) -> dict[str, Any]:
    """Run one method; a row of the comparison (never raises on a valid instance)."""
    from haap_solver.methods import get_method

    fn = get_method(name)
    start = time.perf_counter()
    row: dict[str, Any] = {"instance": instance.name, "gpus": instance.cluster.num_gpus,
                           "device_types": len(instance.cluster.devices), "method": name,
                           "iteration_time_s": math.inf, "tokens_per_s": 0.0, "mfu": 0.0,
                           "gap": math.nan, "plans_costed": 0, "subproblems_solved": 0,
                           "stages": 0, "mixed_stages": 0, "message": "", "plan": None}
    try:
        res = fn(instance, time_limit_s=time_limit_s, threads=threads, seed=seed,
                 cost_model=cost_model)
    except InfeasibleError as exc:
        row.update(status="infeasible", message=str(exc).splitlines()[0])
    except HaapError as exc:
        if name != "bruteforce":
            raise
        row.update(status="skipped", message=str(exc))
    else:
        row.update(status=res.status, iteration_time_s=res.iteration_time_s, gap=res.gap,
                   plans_costed=res.plans_costed, subproblems_solved=res.solved,
                   message=res.message)
        if res.evaluation is not None and res.plan is not None:
            row.update(tokens_per_s=res.evaluation.tokens_per_s, mfu=res.evaluation.mfu,
                       stages=res.plan.num_stages, plan=res.plan.to_dict(),
                       mixed_stages=sum(len({r.device for r in st.replicas}) > 1
                                        for st in res.plan.stages))
    row["search_s"] = time.perf_counter() - start
    return row


def compare_instance(instance: Instance, methods: Sequence[str], *, time_limit_s: float,
                     threads: int = 1, seed: int = 0,
                     on_row: Callable[[dict[str, Any]], None] | None = None,
                     limits: dict[str, float] | None = None) -> list[dict[str, Any]]:
    """Every method on one instance with one shared CostModel; speed-ups filled in."""
    from haap_solver.cost.evaluate import CostModel

    cm = CostModel(instance)
    rows = []
    for name in methods:
        limit = (limits or {}).get(name, time_limit_s)
        row = run_method(name, instance, cost_model=cm, time_limit_s=limit, threads=threads,
                         seed=seed)
        rows.append(row)
        if on_row:
            on_row(row)
    by = {r["method"]: r["iteration_time_s"] for r in rows}
    for r in rows:
        for base, key in (("uniform", "speedup_vs_uniform"), ("metis", "speedup_vs_metis")):
            t0 = by.get(base, math.nan)
            t = r["iteration_time_s"]
            r[key] = t0 / t if math.isfinite(t) and math.isfinite(t0) else math.nan
    return rows


# -- compare -------------------------------------------------------------------------------------
def _no_repeats(names: list[str], what: str) -> list[str]:
    """`names` of a comma-separated option, refused where one is given twice (it would run, or
    count, twice)."""
    for i, n in enumerate(names):
        if n in names[:i]:
            raise argparse.ArgumentTypeError(f"{what} {n!r} is given twice; give each once")
    return names


def _no_repeated_files(paths: list[str]) -> None:
    """Refuse an instance file given twice (also as another path to the same file): it would be
    solved twice and its rows listed twice."""
    seen: dict[Path, str] = {}
    for p in paths:
        key = Path(p).resolve()
        if key in seen:
            raise InputError(f"the instance file {p!r} is given twice"
                             + ("" if seen[key] == p else f" (also as {seen[key]!r})")
                             + "; give each once", field="INSTANCE")
        seen[key] = p


def _methods_arg(text: str) -> list[str]:
    from haap_solver.methods import METHODS

    names = [m.strip() for m in text.split(",") if m.strip()]
    if not names:
        raise argparse.ArgumentTypeError("no method given; available: " + ", ".join(METHODS))
    for n in names:
        if n not in METHODS:
            raise argparse.ArgumentTypeError(f"unknown method {n!r}; available: "
                                             + ", ".join(METHODS))
    return _no_repeats(names, "method")


def _cfg_compare(p: argparse.ArgumentParser) -> None:
    p.add_argument("instances", nargs="+", metavar="INSTANCE", help="instance .toml files")
    p.add_argument("--methods", type=_methods_arg, default=list(DEFAULT_METHODS),
                   help="comma-separated methods (default: " + ",".join(DEFAULT_METHODS)
                   + "; also haap-single, haap-cpsat, haap-1pct)")
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds per method (60)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    out = p.add_mutually_exclusive_group()
    out.add_argument("--csv", action="store_true", help="print the rows as CSV on stdout")
    out.add_argument("--json", action="store_true",
                     help="print the rows (with each plan) as JSON on stdout")


@command("compare", "run several methods on instances: time, tokens/s, MFU, speed-up, search time",
         _cfg_compare)
def cmd_compare(args: argparse.Namespace) -> int:
    from haap_solver.instance import load_instance

    check_option(args.time_limit, "--time-limit", TIME_LIMIT_S)
    check_option(args.threads, "--threads", THREADS)
    check_option(args.seed, "--seed", SEED)
    console = _console()
    _no_repeated_files(args.instances)
    instances = [load_instance(p) for p in args.instances]
    methods = list(args.methods)
    if "uniform" not in methods:
        methods.append("uniform")  # the speed-up reference
    rows: list[dict[str, Any]] = []
    for inst in instances:
        with console.status(styled(f"{inst.name}...")) as status:
            def note(row: dict[str, Any], status: Any = status, inst: Instance = inst) -> None:
                status.update(styled(f"{inst.name}: {row['method']} done ({row['status']})"))

            rows.extend(compare_instance(inst, methods, time_limit_s=args.time_limit,
                                         threads=args.threads, seed=args.seed, on_row=note))
    console.print(rows_table(rows))
    if args.csv:
        sys.stdout.write(rows_csv(rows))
    elif args.json:
        sys.stdout.write(json.dumps(json_safe(rows), indent=2, default=str) + "\n")
    return 0


def matrix_instances(root: Path) -> list[Path]:
    """The benchmark matrix: instances/*.toml and instances/small/*.toml."""
    return sorted(root.glob("*.toml")) + sorted((root / "small").glob("*.toml"))


def _targets_arg(text: str) -> list[str]:
    from haap_solver.targets import RULES

    names = [t.strip() for t in text.split(",") if t.strip() and t.strip() != "none"]
    for n in names:
        if n not in RULES:
            raise argparse.ArgumentTypeError(f"unknown target {n!r}; targets: "
                                             + ", ".join(RULES) + " (or none)")
    return _no_repeats(names, "target")


def _cfg_bench(p: argparse.ArgumentParser) -> None:
    p.add_argument("instances", nargs="*", metavar="INSTANCE",
                   help="instance files (default: instances/*.toml and instances/small/*.toml)")
    p.add_argument("--quick", action="store_true",
                   help="short time limits (10 s per method), no haap-single, haap-cpsat or "
                        "haap-1pct")
    p.add_argument("--time-limit", type=float, default=None,
                   help="seconds per method (default 60, or 10 with --quick)")
    p.add_argument("--methods", type=_methods_arg, default=None,
                   help="comma-separated methods (default: haap,haap-1pct,haap-single,"
                        "haap-cpsat,uniform,proportional,metis,bruteforce; --quick drops "
                        "haap-1pct, haap-single and haap-cpsat)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--targets", type=_targets_arg, default=None,
                   help="comma-separated engine targets whose price to measure: the exact "
                        "search over each target's space beside haap's, same time limit "
                        "(default: megatron,deepspeed without --methods, none with it; 'none')")
    p.add_argument("--output", default="docs/benchmarks.md", help="Markdown report to write")
    p.add_argument("--img-dir", default="docs/img", help="where the plots go")
    p.add_argument("--csv", action="store_true", help="also print the rows as CSV on stdout")
    p.add_argument("--previous", metavar="REF", default=None,
                   help="also run the exact search of git revision REF of this repository (an "
                        "earlier release) on the instances of nodes of at most 4 GPUs, right "
                        "after this release's, and report the search-time ratio")


@command("bench", "run the benchmark matrix and write docs/benchmarks.md with plots", _cfg_bench)
def cmd_bench(args: argparse.Namespace) -> int:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from haap_solver.instance import load_instance

    check_option(args.time_limit, "--time-limit", TIME_LIMIT_S)
    check_option(args.threads, "--threads", THREADS)
    console = _console()
    _no_repeated_files(args.instances)
    paths = [Path(p) for p in args.instances] or matrix_instances(Path("instances"))
    if not paths:
        raise HaapError("no instances found (run from the repository root or name them)")
    limit = args.time_limit if args.time_limit is not None else (10.0 if args.quick else 60.0)
    methods = args.methods or ([m for m in ("haap", "uniform", "proportional", "metis",
                                            "bruteforce")] if args.quick else
                               ["haap", "haap-1pct", "haap-single", "haap-cpsat", "uniform",
                                "proportional", "metis", "bruteforce"])
    if "uniform" not in methods:
        methods.append("uniform")
    targets = args.targets if args.targets is not None else (
        [] if args.methods else list(PRICE_TARGETS))
    methods += [method_of(t) for t in targets if method_of(t) not in methods]
    instances = [load_instance(p) for p in paths]
    rows: list[dict[str, Any]] = []
    earlier_rows: list[dict[str, Any]] = []
    if args.previous is not None and "haap" not in methods:
        raise HaapError("--previous compares with this release's exact search: keep the method "
                        "haap in --methods")
    scratch = None if args.previous is None else tempfile.TemporaryDirectory(
        prefix="haap-previous-")
    earlier = None if scratch is None else previous.export_release(
        args.previous, Path.cwd(), Path(scratch.name))
    started = time.perf_counter()
    load = HostLoad.start()
    with Progress(TextColumn("{task.description}", markup=False), BarColumn(),
                  MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console) as bar:
        task = bar.add_task("bench", total=len(instances) * len(methods))
        for path, inst in zip(paths, instances, strict=True):
            def note(row: dict[str, Any], inst: Instance = inst) -> None:
                bar.update(task, advance=1, description=f"{inst.name}: {row['method']} "
                           f"{row['status']}")

            bar.update(task, description=f"{inst.name}...")
            got = compare_instance(inst, methods, time_limit_s=limit, threads=args.threads,
                                   on_row=note, limits={"bruteforce": max(limit, 120.0)})
            rows.extend(got)
            if earlier is not None and previous.small_node(inst):
                bar.update(task, description=f"{inst.name}: haap of {earlier[1]}...")
                answer = previous.run_release(earlier[0], path,
                                              time_limit_s=limit, threads=args.threads, seed=0)
                mine = next(r for r in got if r["method"] == "haap")
                earlier_rows.append(previous.compare_row(inst, mine, answer, earlier[1]))
    if scratch is not None:
        scratch.cleanup()
    traces = Path("instances/replan")  # (issue 22: warm against cold, the full matrix only)
    replan = [] if args.quick or args.instances or args.methods or not traces.is_dir() else [
        run_trace(traces, name, limit) for name in REPLAN_TRACES]
    total = time.perf_counter() - started
    host_load = load.read()
    console.print(rows_table(rows))
    img = Path(args.img_dir)
    plots = bench_plots(rows, instances, img)
    report = bench_report(rows, instances, methods=methods, limit=limit, quick=args.quick,
                          total_s=total, plots=plots, output=Path(args.output),
                          threads=args.threads, replan=replan, previous=earlier_rows,
                          host_load=host_load)
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    write_text(Path(args.output), report)
    console.print(f"wrote {args.output} and {len(plots)} plot(s) in {img} ({total:.0f} s)")
    # The same rows, machine-readable (docs/benchmarks.json), and the figures of README.md and
    # formulations/ regenerated from them (only on the whole matrix: a partial run would
    # misstate the status).
    record = bench_docs.bench_record(
        rows, generated_utc=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        time_limit_s=limit, threads=args.threads, methods=methods, total_s=total,
        machine=machine_info())
    if host_load is not None:
        record["host_load"] = host_load
    if earlier_rows:
        record["previous_release"] = [{k: bench_docs.json_number(v) for k, v in r.items()}
                                      for r in earlier_rows]
    json_path = Path(args.output).with_suffix(".json")
    json_path.write_text(json.dumps(json_safe(record), indent=1) + "\n")
    console.print(f"wrote {json_path}")
    if not args.instances:
        for path in bench_docs.update_docs(record, Path(".")):
            console.print(f"updated the generated figures of {path}")
    if args.csv:
        sys.stdout.write(rows_csv(rows))
    return 0


def _check_image_path(flag: str, path: Path) -> None:
    """The image file a plot is written to: an extension matplotlib writes (without one it
    would add ".png" and write another file than the one named), not a directory. Checked
    before the plan is costed, so a typo costs nothing."""
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    suffix = path.suffix.lower().lstrip(".")
    if path.is_dir():
        raise InputError(f"{path}: is a directory; give an image file such as "
                         f"{path / 'plot.png'}", field=flag)
    if suffix not in formats:
        what = repr(suffix) if suffix else "(no extension)"
        raise InputError(f"{path}: unsupported image format {what}; supported: "
                         + ", ".join(sorted(formats)), field=flag)


def _cfg_plot(p: argparse.ArgumentParser) -> None:
    p.add_argument("instance", help="instance .toml file")
    p.add_argument("plan", help="plan .json file")
    p.add_argument("--gantt", metavar="FILE.png", help="pipeline schedule Gantt chart")
    p.add_argument("--memory", metavar="FILE.png", help="per-stage memory against capacity")
    p.add_argument("--micro-batches", type=int, default=None,
                   help="micro-batches to draw in the Gantt chart (default: all, at most 32)")


@command("plot", "draw a plan: pipeline Gantt chart and per-stage memory", _cfg_plot)
def cmd_plot(args: argparse.Namespace) -> int:
    from haap_solver.cost.evaluate import CostModel
    from haap_solver.instance import load_instance
    from haap_solver.validate import check_plan

    if not args.gantt and not args.memory:
        raise InputError("nothing to draw: give --gantt FILE.png and/or --memory FILE.png")
    check_option(args.micro_batches, "--micro-batches", Range(1, limits.MAX_BATCH))
    for flag, path in (("--gantt", args.gantt), ("--memory", args.memory)):
        if path:
            _check_image_path(flag, Path(path))
    instance = load_instance(args.instance)
    plan = load_plan_for(instance, args.plan)
    cm = CostModel(instance)
    check_plan(instance, plan, cost_model=cm, source=args.plan)
    ev = cm.evaluate(plan)
    console = _console()
    if args.gantt:
        plot_gantt(instance, plan, ev, Path(args.gantt), micro_batches=args.micro_batches)
        console.print(f"wrote {args.gantt}")
    if args.memory:
        plot_memory(instance, plan, ev, Path(args.memory))
        console.print(f"wrote {args.memory}")
    return 0


