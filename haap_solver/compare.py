"""``haap compare``, ``haap bench`` and ``haap plot``: every method on the same instances, alike.

Each instance gets one CostModel, shared by every method (the exact search runs first, so it pays
for filling the shared caches). Every reported time is ``CostModel.evaluate``'s, of a plan that
passed ``check_plan``. Tables and progress go to stderr; CSV / JSON to stdout.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from haap_solver import bench_docs, limits
from haap_solver._fields import Range
from haap_solver.cli import (
    SEED,
    THREADS,
    TIME_LIMIT_S,
    _console,
    check_option,
    command,
    json_safe,
    styled,
)
from haap_solver.errors import HaapError, InfeasibleError
from haap_solver.instance import Instance
from haap_solver.target_prices import PRICE_TARGETS, method_of, price_section
from haap_solver.targets import RULES as PRICE_TARGET_RULES

DEFAULT_METHODS = ("haap", "uniform", "proportional", "metis", "bruteforce")
BASELINES = ("uniform", "proportional", "metis")
ROW_FIELDS = ("instance", "gpus", "device_types", "method", "status", "iteration_time_s",
              "tokens_per_s", "mfu", "speedup_vs_uniform", "speedup_vs_metis", "gap",
              "search_s", "plans_costed", "subproblems_solved", "stages", "mixed_stages",
              "message")


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


def _fmt(v: Any, kind: str = "") -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if math.isnan(v):
            return "-"
        if math.isinf(v):
            return "inf" if kind != "time" else "-"
        if kind == "time":
            return f"{v:.3f}"
        if kind == "x":
            return f"{v:.2f}x"
        if kind == "pct":
            return f"{v:.1%}"
        if kind == "gap":  # (two decimals: a 0.99% gap is not 1.0%)
            return f"{v:.2%}"
        if kind == "tok":
            return f"{v:,.0f}"
        if kind == "s":
            return f"{v:.2f}"
        return f"{v:.4g}"
    return str(v)


_COLUMNS = (("instance", "instance", ""), ("method", "method", ""), ("status", "status", ""),
            ("iteration s", "iteration_time_s", "time"), ("tokens/s", "tokens_per_s", "tok"),
            ("MFU", "mfu", "pct"), ("vs uniform", "speedup_vs_uniform", "x"),
            ("gap", "gap", "gap"), ("search s", "search_s", "s"),
            ("plans costed", "plans_costed", ""))


def rows_table(rows: list[dict[str, Any]], title: str = "") -> Any:
    from rich.table import Table

    table = Table(title=title or None, title_justify="left")
    for head, _, kind in _COLUMNS:
        table.add_column(head, justify="left" if kind == "" and head != "plans costed"
                         else "right")
    for r in rows:
        table.add_row(*(_fmt(r.get(key), kind) for _, key, kind in _COLUMNS))
    return table


def rows_csv(rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(ROW_FIELDS), extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow({k: r.get(k) for k in ROW_FIELDS})
    return buf.getvalue()


# -- compare -------------------------------------------------------------------------------------
def _methods_arg(text: str) -> list[str]:
    from haap_solver.methods import METHODS

    names = [m.strip() for m in text.split(",") if m.strip()]
    for n in names:
        if n not in METHODS:
            raise argparse.ArgumentTypeError(f"unknown method {n!r}; available: "
                                             + ", ".join(METHODS))
    return names


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


# -- bench ---------------------------------------------------------------------------------------
def machine_info() -> dict[str, str]:
    """nproc, CPU model, RAM, and the versions of Python and the solver packages."""
    from importlib import metadata

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = "?"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                ram = f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except OSError:
        pass
    info = {"nproc": str(os.cpu_count()), "cpu": cpu, "ram": ram,
            "os": f"{platform.system()} {platform.release()}",
            "python": platform.python_version()}
    for pkg in ("haap_solver", "ortools", "highspy", "pulp", "matplotlib"):
        try:
            info[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            info[pkg] = "not installed"
    return info


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
    return names


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
    started = time.perf_counter()
    with Progress(TextColumn("{task.description}", markup=False), BarColumn(),
                  MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console) as bar:
        task = bar.add_task("bench", total=len(instances) * len(methods))
        for inst in instances:
            def note(row: dict[str, Any], inst: Instance = inst) -> None:
                bar.update(task, advance=1, description=f"{inst.name}: {row['method']} "
                           f"{row['status']}")

            bar.update(task, description=f"{inst.name}...")
            rows.extend(compare_instance(inst, methods, time_limit_s=limit,
                                         threads=args.threads, on_row=note,
                                         limits={"bruteforce": max(limit, 120.0)}))
    total = time.perf_counter() - started
    console.print(rows_table(rows))
    img = Path(args.img_dir)
    plots = bench_plots(rows, instances, img)
    report = bench_report(rows, instances, methods=methods, limit=limit, quick=args.quick,
                          total_s=total, plots=plots, output=Path(args.output),
                          threads=args.threads)
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(report)
    console.print(f"wrote {args.output} and {len(plots)} plot(s) in {img} ({total:.0f} s)")
    # The same rows, machine-readable (docs/benchmarks.json), and the figures of README.md and
    # formulations/ regenerated from them (only on the whole matrix: a partial run would
    # misstate the status).
    record = bench_docs.bench_record(
        rows, generated_utc=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        time_limit_s=limit, threads=args.threads, methods=methods, total_s=total,
        machine=machine_info())
    json_path = Path(args.output).with_suffix(".json")
    json_path.write_text(json.dumps(json_safe(record), indent=1) + "\n")
    console.print(f"wrote {json_path}")
    if not args.instances:
        for path in bench_docs.update_docs(record, Path(".")):
            console.print(f"updated the generated figures of {path}")
    if args.csv:
        sys.stdout.write(rows_csv(rows))
    return 0


def bench_plots(rows: list[dict[str, Any]], instances: list[Instance],
                img: Path) -> dict[str, Path]:
    """Throughput by method per instance; search time against cluster size (log-log)."""
    try:
        plt = _pyplot()
    except HaapError:
        return {}
    img.mkdir(parents=True, exist_ok=True)
    methods = list(dict.fromkeys(r["method"] for r in rows))
    names = [i.name for i in instances]
    by = {(r["instance"], r["method"]): r for r in rows}
    out: dict[str, Path] = {}

    # Throughput relative to uniform, per instance (absolute tokens/s span five decades).
    fig, ax = plt.subplots(figsize=(max(8, 0.7 * len(names) + 3), 4.8))
    width = 0.8 / len(methods)
    for j, m in enumerate(methods):
        xs, ys = [], []
        for i, n in enumerate(names):
            r = by.get((n, m))
            if r and math.isfinite(r.get("speedup_vs_uniform", math.nan)):
                xs.append(i + (j - (len(methods) - 1) / 2) * width)
                ys.append(r["speedup_vs_uniform"])
        ax.bar(xs, ys, width=width, label=m)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=40, ha="right", fontsize=7)
    ax.set_ylabel("throughput / uniform (Megatron) throughput")
    ax.set_title("Throughput by method, relative to the best uniform grid")
    ax.legend(fontsize=8, ncol=len(methods))
    fig.tight_layout()
    out["throughput"] = img / "bench-throughput.png"
    fig.savefig(out["throughput"], dpi=120)
    plt.close(fig)

    # Search time against cluster size, log-log.
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    for m in methods:
        pts = sorted((r["gpus"], r["search_s"]) for r in rows
                     if r["method"] == m and r["status"] not in ("skipped",))
        if pts:
            ax.loglog([p[0] for p in pts], [max(p[1], 1e-3) for p in pts], "o-", label=m,
                      alpha=0.8)
    ax.set_xlabel("GPUs in the cluster")
    ax.set_ylabel("search time, s")
    ax.set_title("Search time against cluster size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out["search_time"] = img / "bench-search-time.png"
    fig.savefig(out["search_time"], dpi=120)
    plt.close(fig)
    return out


def bench_report(rows: list[dict[str, Any]], instances: list[Instance], *, methods: list[str],
                 limit: float, quick: bool, total_s: float, plots: dict[str, Path],
                 output: Path, threads: int = 1) -> str:
    info = machine_info()
    lines = ["# Benchmarks", "",
             "Generated by `haap bench" + (" --quick" if quick else "")
             + (f" --threads {threads}" if threads != 1 else "") + "` on "
             + time.strftime("%Y-%m-%d %H:%M %Z") + f" in {total_s:.0f} s. Every iteration time "
             "is `CostModel.evaluate`'s, for a plan that passed `check_plan`; all methods of an "
             "instance share one cost model (the exact search runs first and pays for filling "
             "its caches).", "",
             f"Time limit: {limit:g} s per method per instance (bruteforce: "
             f"{max(limit, 120.0):g} s, and it refuses instances whose search space exceeds "
             f"2,000,000 plans: `skipped`). Threads: {threads}"
             + (" (the exact search then searches the plans with a mixed-type stage in a second "
                "process beside the single-type search; CP-SAT gets that many workers, HiGHS "
                "always one)" if threads > 1 else "") + ". The exact solver is still being "
             "optimised; where it stops at its time limit its status is `feasible` and `gap` is "
             "the proven distance to its lower bound.", "",
             "## Machine", "", "| | |", "|---|---|"]
    for k in ("nproc", "cpu", "ram", "os", "python", "haap_solver", "ortools", "highspy", "pulp",
              "matplotlib"):
        lines.append(f"| {k} | {info[k]} |")
    lines += ["", "## Methods", "",
              "- `haap`: the exact search (`haap_solver.search.solve`, `auto` backend: CP-SAT for "
              "models of up to 400 variables, HiGHS above; mixed-type stages included; seeded "
              "with the uniform-grid plan and, where it lingers, the Metis-style one)"
              + ("; `haap-single`: the same with single-type stages only (`mixed=False`, see "
                 "below)" if "haap-single" in methods else "")
              + ("; `haap-cpsat`: the same as `haap` with CP-SAT" if "haap-cpsat" in methods
                 else "")
              + ("; `haap-1pct`: the same as `haap`, stopped once its plan is proven within 1% "
                 "of the optimum (`relative_gap=0.01`, `haap solve --gap 0.01`)"
                 if "haap-1pct" in methods else "") + ".",
              "- `uniform`: the best Megatron-LM grid (DP x TP x PP, even layer split, one "
              "micro-batch size) over all legal grids, costed on the real devices.",
              "- `proportional`: that grid with layers split in proportion to stage speed, "
              "repaired for memory.",
              "- `metis`: clean-room Metis-style search (power-of-two device groups, device-type "
              "orderings, variance filter, DP-to-TP trading, proportional layers).",
              "- `bruteforce`: exhaustive enumeration of the documented search space, "
              "independent of the search's code (small instances only).", ""]
    lines += ["## Instances", "", "| instance | model | GPUs | device types | description |",
              "|---|---|---:|---|---|"]
    for inst in instances:
        devs = ", ".join(f"{sum(g.num_gpus for g in inst.cluster.node_groups if g.device == d)}"
                         f" {d}" for d in inst.cluster.devices)
        desc = " ".join(inst.description.split())
        if len(desc) > 140:
            desc = desc[:137] + "..."
        lines.append(f"| {inst.name} | {inst.model.name} | {inst.cluster.num_gpus:,} | {devs} "
                     f"| {desc} |")
    # Summary: our plan against every baseline.
    lines += ["", "## Our plan against the baselines", "",
              "Iteration time in seconds (lower is better); speed-up = baseline time / haap "
              "time.", ""]
    head = ["instance", "GPUs", "haap s", "haap status", "haap gap"]
    targets = [t for m in methods if (t := m.removeprefix("haap-")) in PRICE_TARGET_RULES]
    for b in (m for m in methods if m not in ("haap",) and m.removeprefix("haap-") not in targets):
        head.append(f"{b} s")
    head += ["vs uniform", "vs proportional", "vs metis", "search s haap / metis"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    by = {(r["instance"], r["method"]): r for r in rows}
    speedups: dict[str, list[float]] = {b: [] for b in BASELINES}
    ratios: list[float] = []
    for inst in instances:
        h = by.get((inst.name, "haap"))
        if h is None:
            continue
        cells = [inst.name, f"{inst.cluster.num_gpus:,}", _fmt(h["iteration_time_s"], "time"),
                 h["status"], _fmt(h["gap"], "gap")]
        for b in (m for m in methods if m != "haap" and m.removeprefix("haap-") not in targets):
            r = by.get((inst.name, b))
            if r is None:
                cells.append("-")
            elif r["status"] == "skipped":
                cells.append("skipped (too big)")
            elif not math.isfinite(r["iteration_time_s"]):
                cells.append(r["status"])
            else:
                cells.append(_fmt(r["iteration_time_s"], "time")
                             + ("" if r["status"] in ("feasible", "optimal") else
                                f" ({r['status']})"))
        for b in BASELINES:
            r = by.get((inst.name, b))
            if r and math.isfinite(r["iteration_time_s"]) and math.isfinite(
                    h["iteration_time_s"]):
                s = r["iteration_time_s"] / h["iteration_time_s"]
                speedups[b].append(s)
                cells.append(_fmt(s, "x"))
            else:
                cells.append("-")
        mt = by.get((inst.name, "metis"))
        if mt and mt["search_s"] > 0:
            ratio = h["search_s"] / mt["search_s"]
            ratios.append(ratio)
            cells.append(f"{h['search_s']:.1f} / {mt['search_s']:.1f} = {ratio:.2f}")
        else:
            cells.append("-")
        lines.append("| " + " | ".join(cells) + " |")
    lines += [""]
    for b, vals in speedups.items():
        if vals:
            geo = math.exp(sum(math.log(v) for v in vals) / len(vals))
            lines.append(f"- haap vs {b}: geometric-mean speed-up {geo:.2f}x over {len(vals)} "
                         f"instances (min {min(vals):.2f}x, max {max(vals):.2f}x).")
    if ratios:
        geo = math.exp(sum(math.log(v) for v in ratios) / len(ratios))
        lines.append(f"- Search time haap / metis (same run, same machine): geometric mean "
                     f"{geo:.2f} (min {min(ratios):.2f}, max {max(ratios):.2f}).")
    slower = [inst.name for inst in instances
              if (h := by.get((inst.name, "haap"))) and any(
                  (r := by.get((inst.name, b))) and r["iteration_time_s"]
                  < h["iteration_time_s"] * (1 - 1e-9) for b in BASELINES)]
    if slower:
        lines.append("- A baseline beat haap's plan on: " + ", ".join(slower) + ". Where the "
                     "baseline's plan lies outside the exact search's space (mixed-device "
                     "stages, shapes that are not node-aligned) that is possible at optimum; "
                     "otherwise it means haap stopped at its time limit (see its status and "
                     "gap).")
    lines += price_section(rows, targets)
    if "haap-1pct" in methods:
        lines += gap_section(rows, instances)
    if "haap-single" in methods:
        lines += mixed_section(rows, instances, threads)
    lines += ["", "## Every method on every instance", "",
              "| instance | method | status | iteration s | tokens/s | MFU | vs uniform | gap "
              "| search s | plans costed | stages | note |",
              "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        note = " ".join(str(r.get("message", "")).split())
        if len(note) > 90:
            note = note[:87] + "..."
        lines.append(
            f"| {r['instance']} | {r['method']} | {r['status']} | "
            f"{_fmt(r['iteration_time_s'], 'time')} | {_fmt(r['tokens_per_s'], 'tok')} | "
            f"{_fmt(r['mfu'], 'pct')} | {_fmt(r['speedup_vs_uniform'], 'x')} | "
            f"{_fmt(r['gap'], 'gap')} | {r['search_s']:.2f} | {r['plans_costed']} | "
            f"{r['stages'] or '-'} | {note.replace('|', '/')} |")
    if plots:
        lines += ["", "## Plots", ""]
        rel = {k: os.path.relpath(v, output.parent) for k, v in plots.items()}
        if "throughput" in rel:
            lines += ["Throughput of each method relative to the best uniform grid:", "",
                      f"![throughput by method]({rel['throughput']})", ""]
        if "search_time" in rel:
            lines += ["Search time against cluster size (log-log):", "",
                      f"![search time]({rel['search_time']})", ""]
    return "\n".join(lines) + "\n"


def gap_section(rows: list[dict[str, Any]], instances: list[Instance]) -> list[str]:
    """Search time to a proof of the optimum (`haap`) and to a proven 1% gap (`haap-1pct`)
    side by side: what issue 3's aims are stated in."""
    by = {(r["instance"], r["method"]): r for r in rows}
    lines = ["", "## Time to a proof", "",
             "Search time of `haap` (to a proof of the optimum, or its time limit) and of "
             "`haap-1pct` (stopped once its plan is proven within 1% of the optimum), with the "
             "status and proven gap each ended at.", "",
             "| instance | GPUs | haap search s | status (gap) | haap-1pct search s | status (gap) "
             "| haap-1pct s | its plan / haap's |",
             "|---|---:|---:|---|---:|---|---:|---:|"]
    for inst in instances:
        h, g = by.get((inst.name, "haap")), by.get((inst.name, "haap-1pct"))
        if h is None or g is None:
            continue
        ratio = (g["iteration_time_s"] / h["iteration_time_s"]
                 if math.isfinite(g["iteration_time_s"]) and math.isfinite(h["iteration_time_s"])
                 else math.nan)
        lines.append(
            f"| {inst.name} | {inst.cluster.num_gpus:,} | {h['search_s']:.2f} "
            f"| {h['status']} ({_fmt(h['gap'], 'gap')}) | {g['search_s']:.2f} "
            f"| {g['status']} ({_fmt(g['gap'], 'gap')}) | {_fmt(g['iteration_time_s'], 'time')} "
            f"| {_fmt(ratio, 'x')} |")
    return lines


def mixed_section(rows: list[dict[str, Any]], instances: list[Instance],
                  threads: int = 1) -> list[str]:
    """Best plan with and without mixed-type stages on the instances with several device types,
    iteration and search time side by side, and where a mixed stage wins (issue 5)."""
    by = {(r["instance"], r["method"]): r for r in rows}
    order = ("With one thread it searches the single-type space first (up to 3/4 of the time "
             "limit), then the plans with a mixed stage from that incumbent, then the "
             "single-type sub-problems still open if time is left" if threads < 2 else
             f"With {threads} threads it searches the plans with a mixed stage in a second "
             "process beside the single-type search, the two sharing every better plan")
    lines = ["", "## Mixed-type stages", "",
             "`haap-single` searches single-type stages only; `haap` (the default) also lets a "
             "stage combine replica groups of two device types, each with its own TP degree and "
             "batch share (formulations/stage-assignment.md Sec. 1.1). " + order + "; its "
             "status and gap refer to the whole space. Instances with one device type have no "
             "mixed stage and are left out.", "",
             "| instance | GPUs | single-type s | status (gap) | search s | with mixed s | "
             "status (gap) | search s | search ratio | mixed stages in the plan |",
             "|---|---:|---:|---|---:|---:|---|---:|---:|---|"]
    wins: list[str] = []
    for inst in instances:
        h, m = by.get((inst.name, "haap-single")), by.get((inst.name, "haap"))
        if h is None or m is None or len(inst.cluster.devices) < 2:
            continue
        ratio = m["search_s"] / h["search_s"] if h["search_s"] > 0 else math.nan
        mixed_desc = "-"
        if m.get("mixed_stages") and m.get("plan"):
            parts = []
            for k, st in enumerate(m["plan"]["stages"]):
                reps = st["replicas"]
                if len({r["device"] for r in reps}) > 1:
                    parts.append(f"stage {k}: " + " + ".join(
                        f"{r['count']} {r['device']} tp{r['tp']} x{r['micro_batch_share']}"
                        for r in reps))
            mixed_desc = "; ".join(parts)
        if m["iteration_time_s"] < h["iteration_time_s"] * (1 - 1e-9) and m.get("mixed_stages"):
            wins.append(f"{inst.name} ({h['iteration_time_s'] / m['iteration_time_s']:.3f}x)")
        lines.append(
            f"| {inst.name} | {inst.cluster.num_gpus:,} | {_fmt(h['iteration_time_s'], 'time')} "
            f"| {h['status']} ({_fmt(h['gap'], 'gap')}) | {h['search_s']:.1f} "
            f"| {_fmt(m['iteration_time_s'], 'time')} | {m['status']} ({_fmt(m['gap'], 'gap')}) "
            f"| {m['search_s']:.1f} | {ratio:.2f} | {mixed_desc} |")
    lines += ["", "- A mixed stage wins on: " + (", ".join(wins) if wins else "none of these "
              "instances (the single-type optimum is also optimal with mixed stages, or the "
              "mixed search stopped at its limit; see the status).")]
    return lines


# -- plot ----------------------------------------------------------------------------------------
def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise HaapError("plots need matplotlib: pip install 'haap_solver[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


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
    from haap_solver.plan import load_plan
    from haap_solver.validate import check_plan

    if not args.gantt and not args.memory:
        raise HaapError("nothing to draw: give --gantt FILE.png and/or --memory FILE.png")
    check_option(args.micro_batches, "--micro-batches", Range(1, limits.MAX_BATCH))
    instance = load_instance(args.instance)
    plan = load_plan(args.plan)
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


def schedule_events(plan: Any, ev: Any, micro_batches: int) -> list[tuple[int, int, str, float,
                                                                          float]]:
    """(stage, micro-batch, 'F' or 'B', start, end) of a simulated pipeline schedule.

    Each stage runs its forwards and backwards in schedule order (1F1B: p - i warm-up forwards,
    then alternate; GPipe: all forwards, then all backwards); an operation starts when its stage is
    free and its input has arrived over the link (forward from the previous stage, backward from
    the next), with each stage's forward / backward time and each link's p2p time from evaluate().
    """
    p = len(ev.stages)
    m = micro_batches
    fwd = [s.fwd_s for s in ev.stages]
    bwd = [s.bwd_s for s in ev.stages]
    link = [s.p2p_next_s for s in ev.stages]
    orders: list[list[tuple[str, int]]] = []
    for i in range(p):
        if plan.schedule == "gpipe":
            orders.append([("F", j) for j in range(m)] + [("B", j) for j in range(m)])
            continue
        warm = min(p - i, m)
        seq = [("F", j) for j in range(warm)]
        nf, nb = warm, 0
        while nb < m:
            seq.append(("B", nb))
            nb += 1
            if nf < m:
                seq.append(("F", nf))
                nf += 1
        orders.append(seq)
    done: dict[tuple[str, int, int], float] = {}
    free = [0.0] * p
    pos = [0] * p
    events = []
    remaining = sum(len(o) for o in orders)
    while remaining:
        progressed = False
        for i in range(p):
            while pos[i] < len(orders[i]):
                kind, j = orders[i][pos[i]]
                if kind == "F":
                    dep = 0.0 if i == 0 else done.get(("F", i - 1, j))
                    if dep is not None and i > 0:
                        dep += link[i - 1]
                else:
                    dep = done.get(("F", i, j)) if i == p - 1 else done.get(("B", i + 1, j))
                    if dep is not None and i < p - 1:
                        dep += link[i]
                if dep is None:
                    break
                start = max(free[i], dep)
                end = start + (fwd[i] if kind == "F" else bwd[i])
                done[(kind, i, j)] = end
                free[i] = end
                events.append((i, j, kind, start, end))
                pos[i] += 1
                remaining -= 1
                progressed = True
        if not progressed:  # pragma: no cover - the orders above never deadlock
            raise HaapError("internal error: pipeline schedule deadlocked")
    return events


def plot_gantt(instance: Instance, plan: Any, ev: Any, path: Path, *,
               micro_batches: int | None = None) -> None:
    plt = _pyplot()
    m = micro_batches or min(plan.num_micro_batches, 32)
    m = min(m, plan.num_micro_batches)
    events = schedule_events(plan, ev, m)
    p = len(ev.stages)
    cmap = plt.get_cmap("tab20")
    fig, ax = plt.subplots(figsize=(12, 1.0 + 0.55 * p))
    for i, j, kind, start, end in events:
        color = cmap((2 * (j % 10)) + (1 if kind == "B" else 0))
        ax.barh(i, end - start, left=start, height=0.8, color=color,
                edgecolor="black", linewidth=0.3, hatch="//" if kind == "B" else None)
        if end - start > 0.02 * max(e[4] for e in events):
            ax.text((start + end) / 2, i, f"{kind}{j}", ha="center", va="center", fontsize=6)
    labels = []
    for k, st in enumerate(plan.stages):
        devs = "+".join(f"{r.count}x{r.device}/tp{r.tp}" for r in st.replicas)
        labels.append(f"stage {k}: {st.num_layers} layers\n{devs}")
    ax.set_yticks(range(p))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("time, s")
    shown = f"{m} micro-batches" if m == plan.num_micro_batches else \
        f"first {m} of {plan.num_micro_batches} micro-batches"
    ax.set_title(f"{instance.name}: {plan.schedule} schedule, {shown}; "
                 "F = forward, B = backward (hatched)", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_memory(instance: Instance, plan: Any, ev: Any, path: Path) -> None:
    plt = _pyplot()
    kinds = ("weights", "grads", "optimizer", "activations", "extras", "reserved")
    bars = []
    for k, sr in enumerate(ev.stages):
        for r in sr.replicas:
            g = r.memory.as_gib()
            bars.append((f"s{k} {r.device}\ntp{r.tp} x{r.count}", g))
    fig, ax = plt.subplots(figsize=(max(6, 0.8 * len(bars) + 2), 4.8))
    xs = range(len(bars))
    bottom = [0.0] * len(bars)
    for kind in kinds:
        vals = [b[1][f"{kind}_gib"] for b in bars]
        ax.bar(xs, vals, bottom=bottom, label=kind)
        bottom = [a + v for a, v in zip(bottom, vals, strict=True)]
    for x, (_, g) in zip(xs, bars, strict=True):
        ax.hlines(g["capacity_gib"], x - 0.45, x + 0.45, colors="black", linewidth=2)
    ax.plot([], [], color="black", linewidth=2, label="capacity")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([b[0] for b in bars], fontsize=7)
    ax.set_ylabel("GiB per GPU")
    ax.set_title(f"{instance.name}\npeak memory per GPU of each stage's replicas, by kind",
                 fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
