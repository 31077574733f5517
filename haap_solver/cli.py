"""The ``haap`` command. Machine output (JSON) goes to stdout; tables and progress to stderr."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from haap_solver.errors import HaapError, InputError

Handler = Callable[[argparse.Namespace], int]
_COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Handler]] = {}


def command(name: str, help_text: str,
            configure: Callable[[argparse.ArgumentParser], None]) -> Callable[[Handler], Handler]:
    """Register a subcommand (other modules add theirs the same way)."""

    def deco(fn: Handler) -> Handler:
        _COMMANDS[name] = (help_text, configure, fn)
        return fn

    return deco


def _console() -> Any:
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


# -- evaluate ----------------------------------------------------------------------------------
def _cfg_evaluate(p: argparse.ArgumentParser) -> None:
    p.add_argument("instance", help="instance .toml file")
    p.add_argument("plan", help="plan .json file")
    p.add_argument("--json", action="store_true", help="print the evaluation as JSON on stdout")


@command("evaluate", "cost a plan: iteration time, throughput, MFU, memory", _cfg_evaluate)
def cmd_evaluate(args: argparse.Namespace) -> int:
    from haap_solver.cost.evaluate import CostModel
    from haap_solver.instance import load_instance
    from haap_solver.plan import load_plan
    from haap_solver.report import render_evaluation
    from haap_solver.validate import check_plan

    instance = load_instance(args.instance)
    plan = load_plan(args.plan)
    cm = CostModel(instance)
    check_plan(instance, plan, cost_model=cm, source=args.plan)
    ev = cm.evaluate(plan)
    if args.json:
        print_json(ev.to_dict())
    else:
        render_evaluation(_console(), instance, plan, ev)
    return 0


# -- validate ----------------------------------------------------------------------------------
def _cfg_validate(p: argparse.ArgumentParser) -> None:
    p.add_argument("instance", help="instance .toml file")
    p.add_argument("plan", nargs="?", help="optional plan .json file to check against it")


@command("validate", "check an instance file, and a plan against it", _cfg_validate)
def cmd_validate(args: argparse.Namespace) -> int:
    from haap_solver.instance import load_instance
    from haap_solver.plan import load_plan
    from haap_solver.validate import check_plan

    instance = load_instance(args.instance)
    console = _console()
    console.print(f"[green]ok[/green] {args.instance}: {instance.model.name}, "
                  f"{instance.cluster.num_gpus} GPUs in {len(instance.cluster.node_groups)} "
                  f"node group(s)")
    if args.plan:
        plan = load_plan(args.plan)
        check_plan(instance, plan, source=args.plan)
        console.print(f"[green]ok[/green] {args.plan}: {plan.num_stages} stage(s), "
                      f"{plan.num_gpus} GPUs")
    return 0


def build_parser() -> argparse.ArgumentParser:
    _load_plugins()
    parser = argparse.ArgumentParser(
        prog="haap", description="Exact heterogeneity-aware parallelism planner for LLM training.")
    from haap_solver import __version__

    parser.add_argument("--version", action="version", version=f"haap_solver {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (help_text, configure, fn) in _COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        configure(p)
        p.set_defaults(handler=fn)
    return parser


# Modules that register further subcommands with @command when imported.
PLUGIN_MODULES: tuple[str, ...] = ("haap_solver.calibration",)


def _load_plugins() -> None:
    """Import the modules that register further subcommands."""
    import importlib

    for module in PLUGIN_MODULES:
        importlib.import_module(module)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.handler(args) or 0)
    except InputError as exc:
        sys.stderr.write(f"haap: error: {exc}\n")
        return 2
    except HaapError as exc:
        sys.stderr.write(f"haap: {exc}\n")
        return 1
    except BrokenPipeError:  # pragma: no cover
        return 0
    except KeyboardInterrupt:  # pragma: no cover
        sys.stderr.write("haap: interrupted\n")
        return 130


def existing_path(text: str) -> Path:
    path = Path(text)
    if not path.exists():
        raise InputError("file not found", source=text)
    return path


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
