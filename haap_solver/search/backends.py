"""Solver backends for a LinearProgram, in one registry, each imported lazily.

build -> solve -> extract: every backend returns values in the LinearProgram's own variables (true
seconds), the status read from the solver itself, and a proven lower bound in seconds.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from haap_solver.errors import HaapError
from haap_solver.search import tuning
from haap_solver.search.lp import LinearProgram
from haap_solver.search.scaling import choose_scaling

Status = Literal["optimal", "feasible", "infeasible", "unknown"]


@dataclass
class BackendResult:
    status: Status
    """From the solver: optimal (proven), feasible (time limit, incumbent kept), infeasible (proven,
    including 'nothing better than the cutoff'), unknown (time limit before any solution)."""
    values: list[float] | None
    objective_s: float | None
    """The LinearProgram's objective at `values`, in true (unscaled) seconds."""
    bound_s: float
    """Proven lower bound on the optimum of this model (true seconds; -inf if none)."""
    wall_s: float


@dataclass(frozen=True)
class SolveOptions:
    time_limit_s: float = 60.0
    threads: int = 1
    seed: int = 0
    relative_gap: float = 1e-9
    """The solver stops at a solution proven within this share of the model's optimum (HiGHS
    mip_rel_gap, CP-SAT relative_gap_limit, CBC gapRel); the search passes the gap its caller
    accepts, 1e-9 where that is none."""
    on_solution: Callable[[list[float]], None] | None = None
    """Called with the values of every improving solution as the solver finds it (HiGHS only:
    its MIP callback), cleaned like a returned solution; the search shares such plans with the
    search running beside it before the model ends. An exception it raises is raised again
    once the solver has returned."""


BackendFn = Callable[[LinearProgram, SolveOptions, float], BackendResult]
BACKENDS: dict[str, tuple[str, tuple[str, ...]]] = {
    # name: (function, packages that provide it)
    "auto": ("_solve_auto", ("ortools", "highspy")),
    "cpsat": ("_solve_cpsat", ("ortools",)),
    "highs": ("_solve_highs", ("highspy",)),
    "cbc": ("_solve_cbc", ("pulp",)),
}
_MODULES = {"ortools": "ortools.sat.python.cp_model", "highspy": "highspy", "pulp": "pulp"}


def get_backend(name: str) -> BackendFn:
    if name not in BACKENDS:
        raise HaapError(f"unknown backend {name!r}; available: {', '.join(BACKENDS)}")
    fn_name, packages = BACKENDS[name]
    fn = globals()[fn_name]
    for package in packages:
        # Found, not imported: the backend imports it at its first model (OR-Tools with pandas
        # takes 0.3 s, which `auto` spares where no model goes to CP-SAT).
        try:
            found = importlib.util.find_spec(_MODULES[package]) is not None
        except ImportError:
            found = False
        if not found:
            raise HaapError(f"backend {name!r} needs the package {package!r}: "
                            f"pip install {package}")
    return fn  # type: ignore[no-any-return]


AUTO_CPSAT_MAX_VARS = 400
"""`auto` hands models of at most this many variables to CP-SAT and larger ones to HiGHS. In our
measurements (docs/benchmarks.md) CP-SAT proves the small models of homogeneous clusters faster
(a 217-variable model near its cutoff: HiGHS 1.5 s), HiGHS the 500-800-variable models of
heterogeneous ones (CP-SAT was 2.5x slower on llama3-70b-h100x32-a100x32)."""


def auto_choice(num_vars: int) -> str:
    """The backend `auto` gives a model of `num_vars` variables (AUTO_CPSAT_MAX_VARS)."""
    return "cpsat" if num_vars <= AUTO_CPSAT_MAX_VARS else "highs"


def _solve_auto(lp: LinearProgram, opts: SolveOptions, objective_floor_s: float) -> BackendResult:
    """CP-SAT for small models, HiGHS for large ones (AUTO_CPSAT_MAX_VARS)."""
    if auto_choice(len(lp.vars)) == "cpsat":
        return _solve_cpsat(lp, opts, objective_floor_s)
    return _solve_highs(lp, opts, objective_floor_s)


# -- CP-SAT ---------------------------------------------------------------------------------------
CPSAT_PRESOLVE_INCLUSION_WORK_LIMIT = 0
"""CP-SAT's presolve step on rows whose terms are a subset of another's, or beside an at-most-one
(its ``presolve_inclusion_work_limit``; 0 turns the step off, the rest of presolve stays on).
In OR-Tools 9.15 that step reaches a check that sums a row's Boolean coefficients in a 32-bit
int (OR-Tools issue 5293: past 2^31 the sum wraps, the check passes on an empty domain, and an
enforced row becomes unconditional, cutting solutions off). Our scaled time rows hold Boolean
coefficients of 1e9-1e10 units (the unit of scaling.RELATIVE_ERROR), so their sums pass 2^31
on most sub-problems: on a 23-variable one CP-SAT said "optimal" 5.3% slower than HiGHS, CBC
and the brute force (two pipeline-send rows of one stage boundary; tests/data/cpsat-inclusion-
presolve.*, benchmarks/feature_probe.py --multi-node seed 1154). Right with the step off, with
presolve off, or with a unit 4x coarser (too coarse for RELATIVE_ERROR). Cost, CPU of `solve
(threads=1)` with the step on -> off (2026-12-03, 2 shared cores with other jobs, so the wall
clock and with it the proofs within a limit were noisy): --backend cpsat, 120 s limit:
toy-gpt-6l-a100x2-t4x2 1.0 -> 0.9 s, llama3.2-1b-h100x4-l40sx4 3.6 -> 3.5 s,
gpt3-1.3b-t4x4-a100x12 3.7 -> 3.3 s, llama3-8b-h100-a100-l40s 76.9 -> 43.3 s,
llama3-70b-h100x32-a100x32 14.6 -> 14.5 s, gpt3-2.7b-a100x8-v100x8-4gpu 81.3 s proven -> not
proven (94 s CPU, the same plan, gap 1.1%), at a 400 s limit 99.3 -> 121.5 s, both proven;
the default backend (auto), 400 s limit: llama3-8b-h100-a100-l40s 40.6 -> 33.0 s,
gpt3-2.7b-a100x8-v100x8-4gpu 233 s proven -> not proven at 232 s (gap 1.1%). The one
instance that proved slower, by up to a fifth, is the price of not trusting a wrong proof."""


CPSAT_DETECT_AT_LEAST_ONE_OF = False
"""CP-SAT's presolve step that detects "x >= one of several values" implied by a linear row over
Booleans (its ``auto_detect_greater_than_at_least_one_of``, on by default), off for our models.
Our stage-time rows are exactly of that shape (tau_i >= the chosen configuration's time, one
binary per configuration), with coefficients of 1e9-1e10 units; there, in OR-Tools 9.15, the step
removes solutions: on random tiny instances (tests/random_instances.py, seeds 13000-13099, every
single-type sub-problem's full model without a cutoff) CP-SAT's optimum lay 2-268% above HiGHS's
on 24 of 2,884 models, and 3 models HiGHS solved were "infeasible" to CP-SAT; on seed 13064 the
search with `--backend cpsat` said "optimal" 0.93% above the brute force's optimum
(tests/data/cpsat-at-least-one-of.*). Right with this step off (0 of 2,884 there, 0 of 5,797 on
seeds 13100-13299), with presolve off, and with a unit 3x coarser (the coefficients below about
6e9). Cost, on -> off (2026-12-04, one process, 2 shared cores): `solve(backend="cpsat",
threads=1)` toy-gpt-6l-a100x2-t4x2 0.33 -> 0.34 s, llama3.2-1b-h100x4-l40sx4 1.13 -> 1.14 s,
gpt3-1.3b-t4x4-a100x12 1.16 -> 1.19 s, llama3-70b-h100x32-a100x32 4.88 -> 4.81 s,
llama3-8b-h100-a100-l40s 18.7 -> 14.2 s, the same optima; the (5, 8) model of
gpt3-2.7b-a100x8-v100x8-4gpu 2.84 -> 2.88 s: noise."""

def _solve_cpsat(lp: LinearProgram, opts: SolveOptions, objective_floor_s: float) -> BackendResult:
    start = time.perf_counter()  # (the import and the model's build count against its limit)
    from ortools.sat.python import cp_model

    scaling = choose_scaling(lp, objective_floor_s=max(objective_floor_s, 1e-9))
    u = scaling.unit_s
    model = cp_model.CpModel()
    xs = []
    for v in lp.vars:
        if v.time:
            xs.append(model.new_int_var(0, math.ceil(v.ub / u) + 1, v.name))
        else:
            xs.append(model.new_int_var(math.ceil(v.lb - 1e-9), math.floor(v.ub + 1e-9), v.name))
    for r in lp.rows:
        terms = []
        for i, c in r.coeffs.items():
            if r.time and not lp.vars[i].time:
                k = round(c / u)
            else:
                k = round(c)
                if abs(k - c) > 1e-9:
                    raise HaapError(f"row {r.name}: coefficient {c} of {lp.vars[i].name} is not "
                                    "an integer")
            if k:
                terms.append(k * xs[i])
        if r.time:  # round the bound outwards so the scaled row never cuts a true solution
            q = r.rhs / u
            if r.sense == ">=":
                rhs = math.floor(q)
            elif r.sense == "<=":
                rhs = math.ceil(q)
            else:
                rhs = round(q)
        else:
            rhs = round(r.rhs)
        expr = sum(terms)
        if r.sense == "<=":
            model.add(expr <= rhs)
        elif r.sense == ">=":
            model.add(expr >= rhs)
        else:
            model.add(expr == rhs)
    obj_terms = []
    for i, w in lp.objective.items():
        k = round(w)
        if abs(k - w) > 1e-9 or not lp.vars[i].time:
            raise HaapError("CP-SAT objective weights must be integers on time variables")
        obj_terms.append(k * xs[i])
    objective = sum(obj_terms)
    if lp.objective_cutoff is not None:
        model.add(objective <= math.floor((lp.objective_cutoff + scaling.bound_s) / u))
    model.minimize(objective)
    solver = cp_model.CpSolver()
    # The limit less the import and the build so far: the first CP-SAT model of a process loads
    # OR-Tools (0.3-0.5 s), which a dive's model in a 2 s re-plan overran its limit by
    # (spot-a100-v100, 09:30 event, 2026-12-03: 2.43-2.50 s wall for a 2 s Planner solve).
    solver.parameters.max_time_in_seconds = max(
        opts.time_limit_s - (time.perf_counter() - start), 0.01)
    solver.parameters.num_workers = opts.threads
    solver.parameters.random_seed = opts.seed
    solver.parameters.relative_gap_limit = opts.relative_gap
    solver.parameters.presolve_inclusion_work_limit = CPSAT_PRESOLVE_INCLUSION_WORK_LIMIT
    solver.parameters.auto_detect_greater_than_at_least_one_of = \
        CPSAT_DETECT_AT_LEAST_ONE_OF
    if opts.threads == 1:
        # One worker runs a single strategy by default, which can stall on tiny models (seen:
        # two stages, six splits, no proof within the limit); a portfolio interleaves several.
        solver.parameters.search_branching = cp_model.PORTFOLIO_SEARCH
        solver.parameters.linearization_level = tuning.CPSAT_ONE_WORKER_LINEARIZATION
    status = solver.solve(model)
    wall = time.perf_counter() - start
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raw = [float(solver.value(x)) for x in xs]
        values = _true_time_values(lp, raw)
        bound = solver.best_objective_bound * u - scaling.bound_s
        st: Status = "optimal" if status == cp_model.OPTIMAL else "feasible"
        return BackendResult(st, values, lp.value(values), bound, wall)
    if status == cp_model.INFEASIBLE:
        return BackendResult("infeasible", None, None, math.inf, wall)
    return BackendResult("unknown", None, None, -math.inf, wall)


def _true_time_values(lp: LinearProgram, raw: list[float]) -> list[float]:
    """Recompute the time variables in true seconds from the integer choices (exact epigraphs).

    Time variables are defined as maxima of their rows; evaluating the rows with the unrounded
    coefficients in dependency order gives the true objective of the chosen assignment.
    """
    values = list(raw)
    for i, v in enumerate(lp.vars):
        if v.time:
            values[i] = 0.0
    rows = [r for r in lp.rows if r.time and r.defines is not None]
    for _ in range(len(lp.vars) + 1):
        changed = False
        for r in rows:
            d = r.defines
            assert d is not None
            rest = sum(c * values[i] for i, c in r.coeffs.items() if i != d)
            need = (r.rhs - rest) / r.coeffs[d]
            if need > values[d] + 1e-15:
                values[d] = need
                changed = True
        if not changed:
            break
    return values


@contextlib.contextmanager
def stdout_silenced() -> Iterator[None]:
    """Send file descriptor 1 to /dev/null (C libraries write there directly)."""
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


MIP_PRESOLVE = "off"
"""HiGHS's MIP presolve is off for our models. In HiGHS 1.16 it can loop in
HPresolve::strengthenInequalities without looking at its clock or at cancelSolve(). Two of our
stage-assignment models do this (tests/data/highs-presolve-hang-*.mps.xz): presolve ran past 13
minutes on a 0.5 s limit. Switching presolve rules off only moves the loop: with rule 14
(Sparsify) off, the first model stops and the second hangs. Without presolve, both stop at their
limit, and search times change by a few percent (docs/benchmarks.md)."""


SUB_MIP_HEURISTICS = ("mip_heuristic_run_rens", "mip_heuristic_run_rins",
                      "mip_heuristic_run_root_reduced_cost")
"""HiGHS's heuristics that solve a sub-MIP, off for our models: a sub-MIP runs HiGHS's presolve
whatever MIP_PRESOLVE says, and there the same loop in HPresolve::strengthenInequalities
ignores the clock (seen 2026-12-02 on gpt3-2.7b-a100x8-v100x8-4gpu with uneven shares: a MIP
given 0.05-30 s ran for over five minutes inside RENS -> rootReducedCost -> presolve, in about
half of the runs). Without them that instance's 30-60 s solves stop at their limit every time."""


HIGHS_THREADS = 1
"""Every HiGHS model of the package runs with this many threads, whatever `threads` asks. HiGHS's
thread scheduler is one per process, set by the first model solved (a bound LP, one thread):
a later model asking for another count fails at once ("the scheduler has already been
initialized"), which until 2026-11-30 made every MIP of `threads=2` an 'unknown' answer and the
search end unproven. HiGHS's MIP gains little from more threads; `threads` goes to CP-SAT and
CBC, and to the second process of `solve` (Sec. 1.1)."""


def new_highs(*, seed: int, time_limit_s: float | None = None, mip: bool = False) -> Any:
    """A silent highspy.Highs with our fixed options (HIGHS_THREADS, seed, a time limit, and for
    a `mip` MIP_PRESOLVE): every HiGHS model of the package, MIP or LP, is solved by one."""
    import highspy

    with stdout_silenced():  # HiGHS prints a banner on stdout, which is ours (JSON output)
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", HIGHS_THREADS)
    h.setOptionValue("random_seed", seed)
    if time_limit_s is not None:
        h.setOptionValue("time_limit", time_limit_s)
    if mip:
        h.setOptionValue("presolve", MIP_PRESOLVE)
        for heuristic in SUB_MIP_HEURISTICS:
            h.setOptionValue(heuristic, False)
    return h


def run_highs(h: Any) -> None:
    """h.run(), where HiGHS refusing to run at all (an error and no model status: a bad option,
    say) is an error, never a model answer of 'unknown'. A solve that fails (numerical trouble)
    still answers 'unknown', which claims nothing."""
    import highspy

    if (h.run() == highspy.HighsStatus.kError
            and h.getModelStatus() == highspy.HighsModelStatus.kNotset):
        raise HaapError("internal error: HiGHS refused to run a model (HighsStatus.kError, no "
                        "model status); solve it with output_flag on to see why")


def _clean(lp: LinearProgram, raw: list[float]) -> list[float]:
    """Round integer variables and recompute the epigraph (time) variables exactly."""
    rounded = [float(round(x)) if v.integer else x for v, x in zip(lp.vars, raw, strict=True)]
    return _true_time_values(lp, rounded)


# -- HiGHS ----------------------------------------------------------------------------------------
def _highs_time_unit(lp: LinearProgram, objective_floor_s: float) -> float:
    """The unit of time of a HiGHS model: a millionth of the objective's floor, or where the
    caller gives none (0) or one far below the model's times, of a thousandth of its largest
    time (so the values stay within 1e3-1e9 units, where HiGHS's absolute tolerances are
    negligible and its arithmetic exact enough)."""
    largest = max((abs(x) for r in lp.rows if r.time
                    for x in (r.rhs, *(c for i, c in r.coeffs.items() if not lp.vars[i].time))),
                   default=0.0)
    reference = max(objective_floor_s, 1e-3 * largest)
    return (reference if reference > 0 and math.isfinite(reference) else 1.0) * 1e-6


HIGHS_BOUND_ROUNDING = 1e-12
"""A HiGHS model's bound is lowered by this share of itself: the bound is computed in units of a
millionth of the floor (_highs_time_unit) and within HiGHS's tolerances there (about 1e-13 of
the objective), and converting it back rounds too; a bound 4e-16 above HiGHS's own optimum was
seen at 1e4 s (tests/test_search_exact.py, near ties). The search closes a sub-problem at
(1 - 1e-12) x the threshold, so a bound at the incumbent still closes it."""


def _solve_highs(lp: LinearProgram, opts: SolveOptions, objective_floor_s: float) -> BackendResult:
    import highspy
    import numpy as np

    start = time.perf_counter()
    h = new_highs(seed=opts.seed, time_limit_s=max(opts.time_limit_s, 0.01), mip=True)
    h.setOptionValue("mip_rel_gap", opts.relative_gap)
    h.setOptionValue("mip_abs_gap", 0.0)
    n = len(lp.vars)
    inf = highspy.kHighsInf
    # HiGHS's tolerances are absolute (a node whose bound is within about 1e-6 of the
    # incumbent is pruned; a row may be violated by 1e-7): on times of milliseconds that is
    # 1e-4 relative and more (a plan 1.6e-4 faster was missed on an 8-GPU random instance,
    # benchmarks/gap_probe.py fast_nic seed 9012). So the model is solved in units of `u`, a
    # millionth of the objective's floor: time variables T = u T', time rows divided by u.
    u = _highs_time_unit(lp, objective_floor_s)
    unit = [u if v.time else 1.0 for v in lp.vars]
    costs = np.array([lp.objective.get(i, 0.0) * unit[i] / u for i in range(n)],
                     dtype=np.float64)
    lower = np.array([v.lb / k for v, k in zip(lp.vars, unit, strict=True)], dtype=np.float64)
    upper = np.array([v.ub / k for v, k in zip(lp.vars, unit, strict=True)], dtype=np.float64)
    h.addCols(n, costs, lower, upper, 0, np.array([], dtype=np.int32),
              np.array([], dtype=np.int32), np.array([], dtype=np.float64))
    ints = np.array([i for i, v in enumerate(lp.vars) if v.integer], dtype=np.int32)
    if len(ints):
        h.changeColsIntegrality(len(ints), ints,
                                np.array([highspy.HighsVarType.kInteger] * len(ints)))
    rows = list(lp.rows)
    if lp.objective_cutoff is not None:
        from haap_solver.search.lp import Row

        rows.append(Row(dict(lp.objective), "<=", lp.objective_cutoff * (1 + 1e-9), "cutoff",
                        time=True))
    lo: list[float] = []
    hi: list[float] = []
    starts: list[int] = []
    idx: list[int] = []
    vals: list[float] = []
    for r in rows:
        starts.append(len(idx))
        per = u if r.time else 1.0
        for i, c in r.coeffs.items():
            idx.append(i)
            vals.append(c * unit[i] / per)
        lo.append(r.rhs / per if r.sense in (">=", "==") else -inf)
        hi.append(r.rhs / per if r.sense in ("<=", "==") else inf)
    h.addRows(len(rows), np.array(lo), np.array(hi), len(idx), np.array(starts, dtype=np.int32),
              np.array(idx, dtype=np.int32), np.array(vals, dtype=np.float64))
    failed: list[BaseException] = []
    if opts.on_solution is not None and len(ints):
        on_solution = opts.on_solution

        def improving(event: Any) -> None:
            if failed:
                return
            try:
                on_solution(_clean(lp, list(event.data_out.mip_solution)))
            except BaseException as exc:  # (raised again below, not inside HiGHS)
                failed.append(exc)

        h.cbMipImprovingSolution.subscribe(improving)
    # (the limit less the model's build so far, as CP-SAT's)
    h.setOptionValue("time_limit", max(opts.time_limit_s - (time.perf_counter() - start), 0.01))
    run_highs(h)
    if failed:
        raise failed[0]
    wall = time.perf_counter() - start
    status = h.getModelStatus()
    info = h.getInfo()
    ms = highspy.HighsModelStatus
    has_solution = info.primal_solution_status == 2  # kSolutionStatusFeasible
    # The bound comes back from units of `u`, rounded outwards (HIGHS_BOUND_ROUNDING); it never
    # exceeds the true objective of a solution in hand.
    bound = (float(info.mip_dual_bound) if len(ints)
             else float(info.objective_function_value)) * u
    bound -= HIGHS_BOUND_ROUNDING * abs(bound)
    if status == ms.kOptimal:
        values = _clean(lp, list(h.getSolution().col_value))
        objective = lp.value(values)
        return BackendResult("optimal", values, objective, min(bound, objective), wall)
    if status == ms.kInfeasible:
        return BackendResult("infeasible", None, None, math.inf, wall)
    if has_solution:
        values = _clean(lp, list(h.getSolution().col_value))
        objective = lp.value(values)
        return BackendResult("feasible", values, objective, min(bound, objective), wall)
    return BackendResult("unknown", None, None, bound if math.isfinite(bound) else -math.inf,
                         wall)


# -- CBC through PuLP -----------------------------------------------------------------------------
def _solve_cbc(lp: LinearProgram, opts: SolveOptions, objective_floor_s: float) -> BackendResult:
    import pulp

    start = time.perf_counter()
    prob = pulp.LpProblem("stage_assignment", pulp.LpMinimize)
    xs = [pulp.LpVariable(f"v{i}", lowBound=v.lb, upBound=v.ub,
                          cat=pulp.LpInteger if v.integer else pulp.LpContinuous)
          for i, v in enumerate(lp.vars)]
    # CBC's absolute tolerances (cutoff increment, integrality of the objective) are about 1e-5:
    # scale the objective to about 1e6 so they are negligible (1e-11 relative). The unit is
    # HiGHS's (a millionth of the floor, or of a thousandth of the model's largest time where
    # the floor is below that): with a floor of 0 (until 2026-12-02, 1e-12 s then), a model of
    # hours had an objective of 1e22, and CBC called it infeasible.
    scale = 1.0 / _highs_time_unit(lp, objective_floor_s)
    objective = pulp.lpSum(scale * w * xs[i] for i, w in lp.objective.items())
    prob += objective
    for k, r in enumerate(lp.rows):
        expr = pulp.lpSum(c * xs[i] for i, c in r.coeffs.items())
        if r.sense == "<=":
            prob += expr <= r.rhs, f"r{k}"
        elif r.sense == ">=":
            prob += expr >= r.rhs, f"r{k}"
        else:
            prob += expr == r.rhs, f"r{k}"
    if lp.objective_cutoff is not None:
        prob += objective <= scale * lp.objective_cutoff * (1 + 1e-9), "cutoff"
    solver = pulp.PULP_CBC_CMD(msg=False, timeLimit=max(opts.time_limit_s, 0.01),
                               threads=opts.threads, gapRel=opts.relative_gap,
                               options=[f"randomSeed {opts.seed + 1}"])
    solve_start = time.perf_counter()
    prob.solve(solver)
    wall = time.perf_counter() - start
    # CBC 2.10 says "Pre-processing says infeasible" when its time limit falls inside
    # preprocessing: measured on gpt3-175b-4types-x1024 models of 5,000-6,000 variables that hold
    # the incumbent, "infeasible" at limits of 0.5-0.7 s and "unknown" at 0.3 s and at 5-30 s.
    # So an infeasibility verdict counts only when the whole run (writing the model, CBC, reading
    # its answer) ended before the limit; otherwise nothing is proven.
    timed_out = time.perf_counter() - solve_start >= opts.time_limit_s
    # PuLP's status can read "Optimal" after a time limit: the solution status tells them apart.
    if prob.status == pulp.LpStatusInfeasible:
        if timed_out:
            return BackendResult("unknown", None, None, -math.inf, wall)
        return BackendResult("infeasible", None, None, math.inf, wall)
    if prob.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        values = _clean(lp, [float(x.value() or 0.0) for x in xs])
        if prob.sol_status == pulp.LpSolutionOptimal:  # (optimal within gapRel)
            objective = lp.value(values)
            bound = objective - opts.relative_gap * abs(objective)
            return BackendResult("optimal", values, objective, bound, wall)
        return BackendResult("feasible", values, lp.value(values), -math.inf, wall)
    if prob.sol_status == pulp.LpSolutionInfeasible and not timed_out:
        return BackendResult("infeasible", None, None, math.inf, wall)
    return BackendResult("unknown", None, None, -math.inf, wall)
