"""The tail staircase cuts (R') of formulations/stage-assignment.md Sec. 5: redundant rows
`tail >= R_min(T)`'s convex minorant that the search adds to its full models.

Checked three ways: on synthetic staircases (every point a plan may take satisfies every row,
and the rows are not vacuous), on every sub-problem model of random tiny instances (the
optimum is the same with and without them, under no cutoff and under a cutoff at the
sub-problem's own optimum, the tightest place for the stage-time cap the staircase stops at;
and the model's optimum without them, under several objectives along the staircase, satisfies
every row), and the seeds are checked to exercise them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from model_agreement import cut_rows, full_models, tail_cut_violations
from random_instances import random_instance

from haap_solver.search.backends import SolveOptions, get_backend
from haap_solver.search.bounds import staircase_cuts, tail_staircase
from haap_solver.search.formulation import StageModel, SubProblem, add_tail_cuts
from haap_solver.search.lp import LinearProgram


def _staircase(data: st.DataObject) -> tuple[list[float], np.ndarray, list[float]]:
    """A grid of bottlenecks, the sorted tail candidates, and R_min on the grid: infinite
    (no plan) up to a first index, then non-increasing tail candidates."""
    n_t = data.draw(st.integers(1, 30))
    t_values = sorted(set(data.draw(st.lists(st.floats(0.01, 10.0), min_size=n_t,
                                             max_size=n_t))))
    r_values = np.unique(np.array(data.draw(st.lists(st.floats(0.0, 5.0), min_size=1,
                                                     max_size=20))))
    first = data.draw(st.integers(0, len(t_values)))
    r_min, level = [], len(r_values) - 1
    for i in range(len(t_values)):
        if i < first:
            r_min.append(math.inf)
            continue
        level = data.draw(st.integers(0, level))
        r_min.append(float(r_values[level]))
    return t_values, r_values, r_min


def _model_with(rows_for: list) -> tuple[LinearProgram, int, int]:
    lp = LinearProgram()
    t = lp.var("T", 0, 100.0, time=True)
    tail = lp.var("tail", 0, 100.0, time=True)
    lp.objective = {t: 7.0, tail: 1.0}
    sm = StageModel(sub=SubProblem(num_stages=2, micro_batch=1, schedule="1f1b"), slots=[],
                    lp=lp)
    add_tail_cuts(sm, rows_for)
    return lp, t, tail


@settings(max_examples=300, deadline=None)
@given(st.data(), st.floats(0.0, 12.0), st.integers(1, 48))
def test_cuts_hold_at_every_point_of_the_staircase(data: st.DataObject, cap: float,
                                                   max_steps: int) -> None:
    """With `holds(T, R)` = R >= R_min(T) on a grid, every plan (T a grid value up to the
    cap, R >= R_min(T)) satisfies every edge's inequality and every row `add_tail_cuts` writes
    (its slopes rounded to a multiple of 1/D); the first corner is a point of the staircase,
    so the rows through it are not vacuous."""
    t_values, r_values, r_min = _staircase(data)

    def holds(p: int, t: float, r: float) -> bool:
        i = int(np.searchsorted(t_values, t * (1 + 1e-12), side="right")) - 1
        return i >= 0 and r >= r_min[i]

    t_floor = data.draw(st.floats(0.0, 10.0))
    corners = tail_staircase(holds, 2, t_values, r_values, t_floor, cap, max_steps)
    edges = staircase_cuts(corners)
    lp, t_var, tail_var = _model_with(edges)
    points = [(t, r) for t, r in zip(t_values, r_min, strict=True)
              if t_floor * (1 - 1e-12) <= t <= cap * (1 + 1e-12) and math.isfinite(r)]
    for t, r in points:
        for e in edges:
            assert r >= e.r - e.slope * (t - e.t) - 1e-9 * max(1.0, abs(e.r)), (t, r, e)
        for row in lp.rows:
            lhs = row.coeffs.get(tail_var, 0.0) * r + row.coeffs.get(t_var, 0.0) * t
            assert lhs >= row.rhs - 1e-9 * max(1.0, abs(row.rhs)), (t, r, row)
    if points:
        assert corners, "a staircase with plans has corners"
        # The first corner is a plan's point: the rows are tight there where exact.
        assert corners[0][1] in r_min


def test_edges_of_a_known_staircase() -> None:
    """Corners (1, 4), (2, 2), (3, 1.5), (4, 0.5): (3, 1.5) lies above the edge from (2, 2) to
    (4, 0.5), so the hull is (1, 4) -> (2, 2) -> (4, 0.5) and the ray tail >= 0.5."""
    edges = staircase_cuts([(1.0, 4.0), (2.0, 2.0), (3.0, 1.5), (4.0, 0.5)])
    assert [(e.t, e.r, e.slope) for e in edges] == [(1.0, 4.0, 2.0), (2.0, 2.0, 0.75),
                                                    (4.0, 0.5, 0.0)]
    assert [e.steeper for e in edges] == [math.inf, 2.0, 0.75]
    lp, t, tail = _model_with(edges)
    # Slopes 2 and 0 are integers; 0.75 is 3/4 (D = 4).
    assert [(r.coeffs[tail], r.coeffs.get(t, 0.0)) for r in lp.rows] == [(1.0, 2.0), (4.0, 3.0),
                                                                         (1.0, 0.0)]
    assert all(r.defines == tail and r.time for r in lp.rows)


SEEDS = range(13040, 13052)


@pytest.mark.parametrize("mixed", [False, True])
@pytest.mark.parametrize("seed", SEEDS)
def test_tail_cuts_keep_every_model_optimum(seed: int, mixed: bool) -> None:
    """Every sub-problem's full model with and without the cuts: HiGHS's optimum the same
    (1e-9 relative) or both infeasible; and the optimum without them, under the model's
    objective and under `tail + w T` for several w, satisfies every cut."""
    instance = random_instance(seed)
    plain = {sub: (lp, f) for sub, lp, f in full_models(instance, mixed=mixed, max_vars=3000)}
    opts = SolveOptions(time_limit_s=20.0, threads=1, seed=0)
    for sub, lp, floor_s in full_models(instance, mixed=mixed, max_vars=3000, tail_cuts=True):
        if not cut_rows(lp):
            continue
        without = get_backend("highs")(plain[sub][0], opts, plain[sub][1])
        with_cuts = get_backend("highs")(lp, opts, floor_s)
        assert without.status == with_cuts.status, (sub, without.status, with_cuts.status)
        if without.status == "optimal":
            assert without.objective_s is not None and with_cuts.objective_s is not None
            assert abs(without.objective_s - with_cuts.objective_s) <= \
                1e-9 * without.objective_s, sub
        assert not tail_cut_violations(lp, floor_s, 20.0), sub


def test_tail_cut_seeds_reach_the_cuts() -> None:
    """The seeds above put cuts into some of their models (the check is not vacuous)."""
    assert sum(len(cut_rows(lp)) for seed in SEEDS
               for _, lp, _ in full_models(random_instance(seed), max_vars=3000,
                                           tail_cuts=True)) > 0
