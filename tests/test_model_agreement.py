"""HiGHS and CP-SAT agree on every sub-problem's full model of random tiny instances, and the slot
dominance (2') changes no model's optimum.

The brute-force agreement (tests/test_bruteforce_agreement.py) checks the search's final answer;
a wrong answer of one model shows there only where it decides the optimum. Here every model of
a few seeds is solved by both backends, which must agree (tests/model_agreement.py). With CP-SAT
9.15's presolve step that benchmarks/model_agreement.py found wrong
(backends.CPSAT_DETECT_AT_LEAST_ONE_OF) switched back on, seeds 13023, 13024 and 13026 disagree.
"""

from __future__ import annotations

import pytest
from model_agreement import full_models, model_disagreements
from random_instances import random_instance

from haap_solver.search import formulation
from haap_solver.search.backends import SolveOptions, get_backend
from haap_solver.search.formulation import slot_layer_floors

SEEDS = range(13020, 13030)


@pytest.mark.parametrize("seed", SEEDS)
def test_highs_and_cpsat_agree_on_every_model(seed: int) -> None:
    instance = random_instance(seed)
    seen = 0
    for sub, lp, floor_s in full_models(instance):
        seen += 1
        bad = model_disagreements(lp, floor_s, ["highs", "cpsat"], time_limit_s=20.0)
        assert not bad, (sub, bad)
    assert seen > 0  # (the seed has models: the check is not vacuous)


SLOT_SEEDS = range(15000, 15012)


@pytest.mark.parametrize("mixed", [False, True])
@pytest.mark.parametrize("seed", SLOT_SEEDS)
def test_slot_dominance_keeps_every_model_optimum(seed: int, mixed: bool,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Every sub-problem's full model, with and without (2') (formulation.SLOT_DOMINANCE):
    HiGHS's optimum the same (1e-9 relative), or both infeasible; the models with it no larger."""
    instance = random_instance(seed)
    with_it = {sub: (lp, f) for sub, lp, f in full_models(instance, mixed=mixed, max_vars=3000)}
    monkeypatch.setattr(formulation, "SLOT_DOMINANCE", False)
    without = {sub: (lp, f) for sub, lp, f in full_models(instance, mixed=mixed, max_vars=3000)}
    assert set(with_it) == set(without)
    opts = SolveOptions(time_limit_s=20.0, threads=1, seed=0)
    for sub, (lp, floor_s) in without.items():
        cut, cut_floor_s = with_it[sub]
        assert len(cut.vars) <= len(lp.vars)
        full = get_backend("highs")(lp, opts, floor_s)
        fewer = get_backend("highs")(cut, opts, cut_floor_s)
        assert full.status == fewer.status, (sub, full.status, fewer.status)
        if full.status == "optimal":
            assert full.objective_s is not None and fewer.objective_s is not None
            assert abs(full.objective_s - fewer.objective_s) <= 1e-9 * full.objective_s, sub


def test_slot_dominance_reaches_the_seeds() -> None:
    """The seeds above exercise (2'): it drops candidates from some of their models."""
    dropped = 0
    for seed in SLOT_SEEDS:
        instance = random_instance(seed)
        sizes = {sub: len(lp.vars) for sub, lp, _ in full_models(instance, max_vars=3000)}
        formulation.SLOT_DOMINANCE = False
        try:
            dropped += sum(len(lp.vars) - sizes[sub]
                           for sub, lp, _ in full_models(instance, max_vars=3000))
        finally:
            formulation.SLOT_DOMINANCE = True
    assert dropped > 0


def test_slot_layer_floors_on_a_chain_and_a_tie() -> None:
    """a covers b covers c (a chain), d and e cover each other (a tie): b and c keep the counts
    above the largest bound covering them or go; of the tie, the first stands for both."""
    a, b, c, d, e = "abcde"
    dominators = {b: [a], c: [a, b], d: [e], e: [d]}
    cands = [a, b, c, d, e]
    bounds = [4, 6, 5, 3, 3]
    keep, floors = slot_layer_floors(cands, bounds, dominators, 1)  # type: ignore[arg-type]
    # a: nothing covers it; b: a covers counts <= 4; c: b's 6 >= 5, dropped; d first of the tie.
    assert [cands[k] for k in keep] == [a, b, d]
    assert floors == [1, 5, 1]
    # Interleaved (v = 2): bounds and floors in multiples of v.
    keep, floors = slot_layer_floors([a, b], [4, 8], {b: [a]}, 2)  # type: ignore[arg-type]
    assert keep == [0, 1] and floors == [2, 6]
