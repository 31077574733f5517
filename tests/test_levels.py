"""Strengthening in levels (formulations Sec. 4.6 *Levels*, BranchAndBound.strengthening_level):
a sub-problem's strong bound computed against a level below the threshold is a valid bound, so
the search proves the same optima; and the LP answers a PositionalBound remembers for the next
walk are the answers."""

from __future__ import annotations

import math

import pytest
from random_instances import disagreement, random_instance
from test_bruteforce_agreement import _truth

from haap_solver.search import tuning
from haap_solver.search.solve import solve
from haap_solver.search.state import SearchState

LEVEL_SEEDS = (4, 5, 9, 29, 52)
"""CI seeds of the agreement tests (mixed-stage optima 4 and 9; several stages on several
device types 5, 29, 52) on which the first pass strengthens against levels once they are on
whatever the cluster's size (checked below)."""


@pytest.fixture
def levels_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """Levels on every cluster, in small steps (many levels per sub-problem)."""
    monkeypatch.setattr(tuning, "LEVEL_GPUS", (1, 10**9))
    monkeypatch.setattr(tuning, "LEVEL_STEP", 0.01)


@pytest.mark.parametrize("mixed", [False, True])
@pytest.mark.parametrize("seed", LEVEL_SEEDS)
def test_search_in_levels_equals_bruteforce(seed: int, mixed: bool,
                                            levels_everywhere: None) -> None:
    d = disagreement(random_instance(seed), _truth(seed, mixed), backend="highs", mixed=mixed)
    assert d is None, f"seed {seed}: {d}"


def test_levels_are_used_where_they_are_on(levels_everywhere: None) -> None:
    """The agreement above means something only if the search did strengthen against levels:
    on most of those seeds it does (counted in the result's search space)."""
    used = 0
    for seed in LEVEL_SEEDS:
        res = solve(random_instance(seed), backend="highs", threads=1, seed=0,
                    time_limit_s=60.0, seed_with_baselines=False, mixed=True)
        used += res.search_space.get("strengthenings_against_a_level", 0) > 0
    assert used >= 3, f"levels used on {used} of {len(LEVEL_SEEDS)} seeds"


def test_levels_stay_off_outside_their_clusters(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below LEVEL_GPUS (the agreement seeds' clusters) the pass strengthens against the
    threshold at once: no level is counted."""
    monkeypatch.setattr(tuning, "LEVEL_GPUS", (10**8, 10**9))
    res = solve(random_instance(LEVEL_SEEDS[0]), backend="highs", threads=1, seed=0,
                time_limit_s=60.0, seed_with_baselines=False, mixed=True)
    assert "strengthenings_against_a_level" not in res.search_space


def test_levels_stay_off_in_short_searches(levels_everywhere: None) -> None:
    """A search shorter than LEVEL_MIN_TIME_LIMIT_S (a target's restricted spaces get slices of
    about a second) strengthens against the threshold at once, on a seed where a longer one
    uses levels."""
    seed = next(s for s in LEVEL_SEEDS if solve(
        random_instance(s), backend="highs", threads=1, seed=0, time_limit_s=60.0,
        seed_with_baselines=False, mixed=True).search_space.get(
            "strengthenings_against_a_level", 0) > 0)
    res = solve(random_instance(seed), backend="highs", threads=1, seed=0,
                time_limit_s=0.9 * tuning.LEVEL_MIN_TIME_LIMIT_S, seed_with_baselines=False,
                mixed=True)
    assert "strengthenings_against_a_level" not in res.search_space


def test_remembered_answers_are_the_answers() -> None:
    """PositionalBound._remembered keys its answers by (program, p, t, r): every answer it
    gives back equals the same question put to a bound that has never been asked anything,
    with questions that differ in one argument only asked side by side."""
    inst = random_instance(5)
    asked = SearchState(inst)
    compared = 0
    for b in asked.micro_batches():
        bound = asked.positional_bound(b, "1f1b")
        t_values = asked.capacity_bound(b, inst.model.num_layers, "1f1b").t_values
        if not t_values:
            continue
        ts = t_values[:: max(1, len(t_values) // 4)][:4]
        questions = [(p, t, r) for p in (1, 2, 3) for t in ts for r in (math.inf, 2 * t, t)]
        first = [bound.capacity(*q) for q in questions]
        again = [bound.capacity(*q) for q in reversed(questions)][::-1]
        fresh_state = SearchState(inst)
        fresh = [fresh_state.positional_bound(b, "1f1b").capacity(*q) for q in questions]
        assert first == again == fresh
        compared += len(questions)
    assert compared > 0
