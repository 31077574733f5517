"""The ``haap`` command. Machine output (JSON) goes to stdout; tables and progress to stderr.

Exit codes: 0 success, 1 an invalid plan, an infeasible instance or an internal error, 2 a usage
error or a bad input file. Errors are one ``haap: error: ...`` message on stderr, never a traceback
(set ``HAAP_DEBUG=1`` to see the traceback of an internal error).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from haap_solver._fields import Range
from haap_solver.errors import HaapError, InputError
from haap_solver.report.tables import styled

# Rich wraps tables to the terminal; without one (a pipe, a file, a CI log) it would assume 80
# columns and squeeze them, so it gets at least this many.
MIN_CONSOLE_WIDTH = 120

Handler = Callable[[argparse.Namespace], int]
_COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Handler]] = {}


def command(name: str, help_text: str,
            configure: Callable[[argparse.ArgumentParser], None]) -> Callable[[Handler], Handler]:
    """Register a subcommand (other modules add theirs the same way)."""

    def deco(fn: Handler) -> Handler:
        _COMMANDS[name] = (help_text, configure, fn)
        return fn

    return deco


def _console(min_width: int = MIN_CONSOLE_WIDTH) -> Any:
    """A rich console on stderr, at least `min_width` columns wide when stderr is no terminal.

    It never reads strings as markup or emoji codes: what it prints is full of user text (instance,
    model, node-group and device names, file paths, messages), and a name such as ``[/bold]x``
    would be a markup error, ``:smile:`` an emoji. Styled words go through `styled`.
    """
    from rich.console import Console

    options: dict[str, Any] = {"stderr": True, "highlight": False, "markup": False,
                               "emoji": False}
    console = Console(**options)
    if not console.is_terminal and console.width < min_width:
        console = Console(**options, width=min_width)
    return console


# What the numeric options of every command allow. NaN and infinities never pass a Range (a NaN
# passes `<= 0` and would change the result); the upper limits only keep absurd values out.
TIME_LIMIT_S = Range(0, 1e7, min_exclusive=True)  # about 116 days
THREADS = Range(1, 256)  # each thread is a solver worker with its own memory
SEED = Range(0, 2**31 - 2)  # the solvers take a 32-bit seed (CBC gets seed + 1)


def check_option(value: float | None, option: str, allowed: Range) -> None:
    """Raise an InputError naming the command-line `option` unless `value` is allowed."""
    message = allowed.error(value) if value is not None else None
    if message:
        raise InputError(message, field=option)


def json_safe(data: Any) -> Any:
    """JSON has no infinity or NaN: write null instead."""
    if isinstance(data, float) and not math.isfinite(data):
        return None
    if isinstance(data, dict):
        return {k: json_safe(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [json_safe(v) for v in data]
    return data


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(json_safe(data), indent=2, default=str) + "\n")


def add_target_option(p: argparse.ArgumentParser) -> None:
    """``--target ENGINE``: overrides the instance's ``training.target`` (docs/targets.md)."""
    from haap_solver.training import TARGETS

    p.add_argument("--target", choices=TARGETS, default=None, metavar="ENGINE",
                   help="the training engine the plan must run on: " + ", ".join(TARGETS)
                        + " (default: the instance's "
                        "training.target, itself 'any' by default); see docs/targets.md")


def add_profile_option(p: argparse.ArgumentParser) -> None:
    """``--profile FILE``: a measured profile (``haap profile``) in place of the instance's."""
    p.add_argument("--profile", metavar="FILE", default=None,
                   help="measured profile .toml (haap profile) replacing the analytical compute "
                        "times of the device types it covers; overrides the instance's profile")


def check_output_not_input(args: argparse.Namespace, *inputs: str) -> None:
    """Refuse ``--output`` where it names one of the command's input files (``args``'
    attributes `inputs`, where set): the plan or export written there would replace the file
    it was made from."""
    from pathlib import Path

    from haap_solver.errors import InputError

    output = getattr(args, "output", None)
    if not output:
        return
    target = Path(output).resolve()
    for name in inputs:
        given = getattr(args, name, None)
        if given and Path(given).resolve() == target:
            raise InputError(f"is the {name} file read by this command ({given}); writing "
                             "there would overwrite it: give another path", field="--output")


def load_with_options(args: argparse.Namespace) -> Any:
    """The instance of ``args.instance`` with ``--target`` and ``--profile`` applied."""
    import dataclasses
    from pathlib import Path

    from haap_solver.instance import load_instance
    from haap_solver.targets import with_target

    instance = load_instance(args.instance)
    if getattr(args, "target", None):
        instance = with_target(instance, args.target)
    if getattr(args, "profile", None):
        if not Path(args.profile).exists():  # (a directory or /dev/zero: load_profile says)
            raise InputError(f"{args.profile}: profile file not found", field="--profile")
        from haap_solver.stragglers import PROFILE_BESIDE_STRAGGLERS, is_slowed

        if any(is_slowed(d) for d in instance.cluster.devices.values()):
            # (as the instance loader refuses a file's profile beside its stragglers)
            raise InputError(f"{PROFILE_BESIDE_STRAGGLERS}; {args.instance} has stragglers: "
                             "give the stragglers or the profile, not both", field="--profile")
        instance = dataclasses.replace(instance, profile=str(args.profile))
    if instance.profile:
        _check_profile_devices(instance)
    return instance


def load_plan_for(instance: Any, path: str) -> Any:
    """The plan file `path`, for `instance`. A plan made for an instance of another name is
    read (the validator decides whether it fits: same layers, batch, node groups, devices), with
    a note on stderr: a plan file mixed up with another instance's is then seen at once."""
    from haap_solver.plan import load_plan

    plan = load_plan(path)
    if plan.instance and plan.instance != instance.name:
        sys.stderr.write(f"note: {path}: the plan was made for instance {plan.instance!r}; "
                         f"checked against {instance.name!r}\n")
    return plan


def _check_profile_devices(instance: Any) -> None:
    """A profile whose entries name no device of the cluster replaces nothing: refused. Entries
    for devices the cluster does not have (a profile shared by several clusters) are ignored,
    and said so on stderr (a misspelt or aliased device name would otherwise go unnoticed)."""
    from haap_solver.cost.profile import load_profile
    from haap_solver.errors import did_you_mean

    profile = load_profile(instance.profile)
    used = sorted({g.device for g in instance.cluster.node_groups})
    unknown = [d for d in profile.devices if d not in used]
    if not unknown:
        return
    hints = "".join(did_you_mean(d, used) for d in unknown)
    if len(unknown) == len(profile.devices):
        raise InputError(f"its entries are for {', '.join(unknown)}, no device of the cluster "
                         f"({', '.join(used)}){hints}; the profile would replace nothing",
                         source=instance.profile, field="entry.device")
    _console().print(f"note: {instance.profile}: entries for {', '.join(unknown)} are ignored: "
                     f"the cluster's devices are {', '.join(used)}{hints}")


# -- evaluate ----------------------------------------------------------------------------------
def _cfg_evaluate(p: argparse.ArgumentParser) -> None:
    p.add_argument("instance", help="instance .toml file")
    p.add_argument("plan", help="plan .json file")
    p.add_argument("--json", action="store_true", help="print the evaluation as JSON on stdout")
    add_target_option(p)
    add_profile_option(p)


@command("evaluate", "cost a plan: iteration time, throughput, MFU, memory", _cfg_evaluate)
def cmd_evaluate(args: argparse.Namespace) -> int:
    from haap_solver.cost.evaluate import CostModel
    from haap_solver.report.tables import render_evaluation
    from haap_solver.validate import check_plan

    instance = load_with_options(args)
    plan = load_plan_for(instance, args.plan)
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
    add_target_option(p)


@command("validate", "check an instance file, and a plan against it", _cfg_validate)
def cmd_validate(args: argparse.Namespace) -> int:
    from haap_solver.cost.evaluate import CostModel
    from haap_solver.validate import check_plan

    # Check everything first (the cost model reads the instance's profile file, if it names
    # one), so that a failure prints only its error, then report: stdout stays empty.
    instance = load_with_options(args)
    cm = CostModel(instance)
    plan = load_plan_for(instance, args.plan) if args.plan else None
    if plan is not None:
        check_plan(instance, plan, cost_model=cm, source=args.plan)
    console = _console()
    console.print(styled(("ok", "green"), f" {args.instance}: {instance.model.name}, "
                         f"{instance.cluster.num_gpus} GPUs in "
                         f"{len(instance.cluster.node_groups)} node group(s)"))
    if plan is not None:
        console.print(styled(("ok", "green"), f" {args.plan}: {plan.num_stages} stage(s), "
                             f"{plan.num_gpus} GPUs"))
    return 0


def build_parser() -> argparse.ArgumentParser:
    _load_plugins()
    parser = argparse.ArgumentParser(
        prog="haap", description="Exact heterogeneity-aware parallelism planner for LLM training.",
        epilog="Set HAAP_DEBUG=1 to see the traceback of an internal error.")
    from haap_solver import __version__

    parser.add_argument("--version", action="version", version=f"haap_solver {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (help_text, configure, fn) in _COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        configure(p)
        p.set_defaults(handler=fn)
    return parser


# Modules that register further subcommands with @command when imported.
PLUGIN_MODULES: tuple[str, ...] = ("haap_solver.calibrate", "haap_solver.search.cli",
                                   "haap_solver.compare", "haap_solver.export",
                                   "haap_solver.runtime.cli", "haap_solver.replan_cli")


def _load_plugins() -> None:
    """Import the modules that register further subcommands."""
    import importlib

    for module in PLUGIN_MODULES:
        importlib.import_module(module)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``haap`` command; returns the exit code (see the module docstring)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # usage errors (argparse printed usage and message), --help
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.handler(args) or 0)
    except InputError as exc:
        _error(str(exc))
        return 2
    except HaapError as exc:
        # PlanValidationError: "<file>: plan is invalid (N violation(s)):" and one line each.
        _error(str(exc))
        return 1
    except BrokenPipeError:  # pragma: no cover
        return 0
    except KeyboardInterrupt:  # pragma: no cover
        sys.stderr.write("haap: interrupted\n")
        return 130
    except OSError as exc:  # a file the loaders do not read themselves
        where = f"{exc.filename}: " if exc.filename else ""
        _error(f"{where}{exc.strerror or exc}")
        return 2
    except Exception as exc:  # a bug: one line rather than a traceback, unless debugging
        if os.environ.get("HAAP_DEBUG"):
            raise
        _error(f"internal error: {type(exc).__name__}: {exc} (set HAAP_DEBUG=1 for the "
               "traceback)")
        return 1


def _error(message: str) -> None:
    sys.stderr.write(f"haap: error: {message}\n")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
