"""``haap calibrate``: predicted against measured iteration time on the published runs, a refit
of the constants (``--fit``), the validation page (``--write``) and the rows as JSON
(``--json``). The runs, prediction and fit are in ``haap_solver.calibration``; the tables and the
page in ``haap_solver.report.calibration``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from haap_solver.calibration import (
    FITTED,
    FitResult,
    RowResult,
    constant_value,
    fit,
    fitted_values,
    load_runs,
    predict,
    prepare_all,
    summarize,
)
from haap_solver.cli import _console, command, print_json
from haap_solver.cost.efficiency import DEFAULT_CONSTANTS, CostConstants
from haap_solver.errors import InputError
from haap_solver.report.calibration import _fmt_const, _pct, _rich_table, write_validation_doc
from haap_solver.report.tables import styled


def _result_json(rows: list[RowResult], constants: CostConstants, fit_result: FitResult | None
                 ) -> dict[str, Any]:
    s = summarize(rows)
    out: dict[str, Any] = {
        "constants": fitted_values(constants),
        "summary": {"median_abs_error": s.median_abs_error, "max_abs_error": s.max_abs_error,
                    "worst": s.worst, "rms_log_error": s.rms_log_error},
        "rows": [r.to_dict() for r in rows],
    }
    if fit_result is not None:
        out["fit"] = {"unrounded": fitted_values(fit_result.constants), "cost": fit_result.cost,
                      "nfev": fit_result.nfev, "success": fit_result.success,
                      "message": fit_result.message, "at_bound": list(fit_result.at_bound)}
    return out


def _cfg_calibrate(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fit", action="store_true",
                   help="refit the constants on the runs and use the refitted (rounded) values")
    p.add_argument("--write", metavar="PATH",
                   help="regenerate the validation page (e.g. docs/validation.md)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON on stdout")
    p.add_argument("--runs", metavar="CSV",
                   help="calibration runs CSV (default: the one shipped in the package)")


def _refuse_unwritable(path: str) -> None:
    """Fail before the calibration's work (~15 s) where `--write PATH` cannot be written: a
    directory, or a parent that is a file or not writable."""
    target = Path(path)
    if target.is_dir():
        raise InputError("cannot write: Is a directory", source=path)
    parent = next((p for p in target.parents if p.exists()), Path("."))
    if not parent.is_dir():
        raise InputError(f"cannot write: {parent} is not a directory", source=path)
    if not os.access(parent if not target.exists() else target, os.W_OK):
        raise InputError("cannot write: Permission denied", source=path)


@command("calibrate", "predicted vs measured iteration time on published runs; refit constants",
         _cfg_calibrate)
def cmd_calibrate(args: argparse.Namespace) -> int:
    if args.write:
        _refuse_unwritable(args.write)
    console = _console(min_width=160)
    prepared = prepare_all(load_runs(args.runs) if args.runs else None)
    constants = DEFAULT_CONSTANTS
    fit_result = None
    if args.fit:
        fit_result = fit(prepared)
        constants = fit_result.rounded
        from rich.table import Table

        table = Table(title=f"fit: {fit_result.nfev} evaluations, {fit_result.message}",
                      title_justify="left")
        for col in ("constant", "fitted", "rounded", "shipped default"):
            table.add_column(col, justify="left" if col == "constant" else "right")
        for n in FITTED:
            table.add_row(n, f"{constant_value(fit_result.constants, n):.6g}",
                          _fmt_const(n, constant_value(constants, n)),
                          _fmt_const(n, constant_value(DEFAULT_CONSTANTS, n)))
        console.print(table)
        if fit_result.at_bound:
            console.print(styled(("at a bound:", "yellow"), " " + ", ".join(fit_result.at_bound)))
        if fitted_values(constants) != fitted_values(DEFAULT_CONSTANTS):
            console.print(styled(("the refit differs from the shipped defaults: update "
                                  "haap_solver/cost/efficiency.py", "yellow")))
    rows = [predict(p, constants) for p in prepared]
    s = summarize(rows)
    console.print(_rich_table(rows, "predicted vs measured iteration time ("
                              + ("refitted" if fit_result else "shipped") + " constants)"))
    console.print(f"median abs error {_pct(s.median_abs_error)}, max {_pct(s.max_abs_error)} "
                  f"({s.worst}); unreported micro-batches chosen by lowest predicted time")
    if args.write:
        try:
            path = write_validation_doc(args.write, constants, prepared)
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror or exc}", source=args.write) from None
        console.print(styled(("wrote", "green"), f" {path}"))
    if args.json:
        print_json(_result_json(rows, constants, fit_result))
    return 0
