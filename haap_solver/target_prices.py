"""The price of each engine target: its plan's iteration time over the unrestricted optimum.

`haap bench` (and benchmarks/target_prices.py over every shipped instance) runs the exact search
once unrestricted (method ``haap``) and once per target (``haap-megatron``, ...; targets.py),
each with the same time limit. This module turns those rows into the price table and checks the
claims issue 24 makes of them: every target plan is one the target runs (its own validator,
`target_violations`), and none is faster than a proven unrestricted optimum (a target's space
lies inside the unrestricted one, so that would be a bug in one of the two searches).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from haap_solver.instance import Instance
from haap_solver.plan import plan_from_dict
from haap_solver.target_rules import RULES
from haap_solver.targets import target_violations

PRICE_TARGETS = ("megatron", "deepspeed")
"""The targets `haap bench` prices by default (`--targets`): the two engines with one TP and one
DP degree for the whole pipeline, whose price is the largest."""
TOLERANCE = 1e-9
"""Relative slack of the 'not faster than the unrestricted optimum' check (float rounding)."""


def method_of(target: str) -> str:
    """The method name of `target`'s search in `haap compare` / `haap bench`."""
    return f"haap-{target}"


def targets_in(methods: Sequence[str]) -> list[str]:
    """The targets whose searches are among `methods`, in their order (method_of inverted)."""
    return [t for m in methods for t in RULES if m == method_of(t)]


@dataclass(frozen=True, kw_only=True)
class Price:
    """One target's price on one instance, from the two rows of the same run."""

    instance: str
    """Instance name."""
    target: str
    """Target name (training.target)."""
    any_s: float
    """Iteration time of the unrestricted search's plan (inf: none)."""
    any_proven: bool
    """The unrestricted plan is proven optimal."""
    target_s: float
    """Iteration time of the target's plan (inf: none)."""
    target_status: str
    """The target search's status: optimal, feasible (time limit; see `target_gap`),
    infeasible (no plan of the instance can run on the target), unknown (no plan in time)."""
    target_gap: float
    """The target search's proven gap (nan where it has no plan)."""

    @property
    def price(self) -> float:
        """target time / unrestricted time - 1 (nan where either has no plan)."""
        if not (math.isfinite(self.any_s) and math.isfinite(self.target_s)):
            return math.nan
        return self.target_s / self.any_s - 1.0

    @property
    def proven(self) -> bool:
        """Both plans proven optimal: the price is exact."""
        return self.any_proven and self.target_status == "optimal"

    def faster_than_optimum(self) -> bool:
        """The target's plan beats a proven unrestricted optimum (a search bug)."""
        return (self.any_proven and math.isfinite(self.target_s)
                and self.target_s < self.any_s * (1 - TOLERANCE))

    def cell(self) -> str:
        """The table cell: +x.x% with its status, or why there is none."""
        if not math.isfinite(self.target_s):
            return self.target_status
        text = f"{self.price:+.1%}"
        if self.target_status == "optimal":
            return text + (" opt" if self.any_proven else " (unrestricted unproven)")
        return f"{text} gap {self.target_gap:.1%}"


def prices(rows: Sequence[Mapping[str, Any]], targets: Sequence[str]) -> list[Price]:
    """One Price per (instance, target) with both an unrestricted (``haap``) and a target row,
    in the rows' instance order."""
    by = {(r["instance"], r["method"]): r for r in rows}
    out: list[Price] = []
    for name in dict.fromkeys(r["instance"] for r in rows):
        base = by.get((name, "haap"))
        if base is None:
            continue
        for t in targets:
            r = by.get((name, method_of(t)))
            if r is None:
                continue
            out.append(Price(instance=name, target=t, any_s=_num(base["iteration_time_s"]),
                             any_proven=base["status"] == "optimal",
                             target_s=_num(r["iteration_time_s"]), target_status=r["status"],
                             target_gap=_num(r.get("gap"))))
    return out


def _num(v: Any) -> float:
    """A row's number (benchmarks.json writes inf and nan as strings)."""
    return float(v) if isinstance(v, (int, float, str)) and v is not None else math.nan


def row_violations(instance: Instance, row: Mapping[str, Any], target: str) -> list[str]:
    """What `target` cannot run of the plan in a target row (empty where it has none)."""
    if row.get("plan") is None:
        return []
    return target_violations(instance, plan_from_dict(row["plan"]), target)


LEGEND = ("Iteration time of the plan each engine can run (`haap solve --target ENGINE`, the "
          "exact search over that engine's space, docs/targets.md) over the unrestricted "
          "search's plan (`haap`), same time limit: `opt` both proven optimal, `gap x%` the "
          "target search's proven gap where its time limit came first, `infeasible` no plan "
          "of the instance runs on the engine (e.g. ZeRO-2), `unknown` none found in time.")


def price_section(rows: Sequence[Mapping[str, Any]], targets: Sequence[str]) -> list[str]:
    """The Markdown section of the price of each target (empty without target rows)."""
    table = price_table(rows, targets)
    return ["", "## The price of each target", "", LEGEND, "", *table] if table else []


def price_table(rows: Sequence[Mapping[str, Any]], targets: Sequence[str]) -> list[str]:
    """The Markdown table of the price of each target, one instance a line (empty without
    target rows), and the instances where a target beat a proven optimum, if any."""
    table = prices(rows, targets)
    if not table:
        return []
    shown = [t for t in targets if any(p.target == t for p in table)]
    by = {(p.instance, p.target): p for p in table}
    base = {(r["instance"]): r for r in rows if r["method"] == "haap"}
    lines = ["| instance | haap s | " + " | ".join(shown) + " |",
             "|---|---:|" + "---:|" * len(shown)]
    for name in dict.fromkeys(p.instance for p in table):
        b = base[name]
        t = _num(b["iteration_time_s"])
        cells = [name, (f"{t:.3f} {'opt' if b['status'] == 'optimal' else b['status']}"
                        if math.isfinite(t) else b["status"])]
        cells += [by[(name, tg)].cell() if (name, tg) in by else "-" for tg in shown]
        lines.append("| " + " | ".join(cells) + " |")
    bad = [p for p in table if p.faster_than_optimum()]
    if bad:
        lines += ["", "**Faster than the proven unrestricted optimum (a search bug):** "
                  + ", ".join(f"{p.instance} {p.target}" for p in bad) + "."]
    return lines


__all__ = ["LEGEND", "PRICE_TARGETS", "Price", "method_of", "price_section", "price_table",
           "prices", "row_violations"]
