"""The rows of ``haap compare`` and ``haap bench`` (one per instance and method, from
``compare.compare_instance``) as a rich table (stderr) and as CSV (stdout).
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any

ROW_FIELDS = ("instance", "gpus", "device_types", "method", "status", "iteration_time_s",
              "tokens_per_s", "mfu", "speedup_vs_uniform", "speedup_vs_metis", "gap",
              "search_s", "plans_costed", "subproblems_solved", "stages", "mixed_stages",
              "message")


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
