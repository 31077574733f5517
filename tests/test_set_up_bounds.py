"""The set-up before the search stays within what a time limit can bound (found by fuzzing the
command line, 2026-12-04): a global batch of 16,384 on one node, or 24 one-GPU node groups, kept
`haap solve --time-limit 2` busy for a minute before the search began."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiny_instances import tiny_instance

from haap_solver.instance import Instance
from haap_solver.search.solve import _mixed_stages_exist
from haap_solver.search.space import _full_mixed_shapes, _parts_within, mixed_shapes
from haap_solver.search.state import SearchState


def _one_gpu_groups(n: int, batch: int) -> Instance:
    """n node groups of one one-GPU node each, alternately A100 and H100."""
    return tiny_instance(devices=[("A100-80G", None), ("H100", None)],
                         groups=[(k % 2, 1, 1) for k in range(n)], layers=4, hidden=256,
                         heads=4, seq=128, batch=batch, recompute=("none",))


def test_no_mixed_shape_on_one_node_group_at_any_micro_batch() -> None:
    """One node group (above SAME_GROUP_MAX_GPUS, where two replica groups on one node group are
    not searched) has no mixed stage: none at any micro-batch size, without the count whose
    cost grows with the square of the micro-batch."""
    instance = tiny_instance(devices=[("H100", None)], groups=[(0, 2, 8)], layers=4,
                             hidden=256, heads=4, seq=128, batch=16384, recompute=("none",))
    assert all(mixed_shapes(instance, b) == [] for b in (1, 64, 16384))


def test_no_mixed_shape_needing_more_replicas_than_gpus() -> None:
    instance = _one_gpu_groups(4, 64)
    cap = instance.training.max_micro_batch_share
    assert mixed_shapes(instance, 4 * cap + 1) == []
    assert mixed_shapes(instance, 4) != []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(1, 5), min_size=1, max_size=4), min_size=1, max_size=4),
       st.integers(1, 10), st.integers(0, 10))
def test_parts_within_is_the_filtered_product(counts: list[list[int]], lo: int,
                                              extra: int) -> None:
    """`_parts_within` returns what filtering itertools.product by the replica total would, in
    the same order."""
    hi = lo + extra
    options = tuple([(f"g{i}", 1, c) for c in cs] for i, cs in enumerate(counts))
    want = [p for p in itertools.product(*options) if lo <= sum(x[2] for x in p) <= hi]
    assert _parts_within(options, lo, hi) == want


def test_full_mixed_shapes_take_at_most_b_parts() -> None:
    """Over 24 one-GPU node groups at micro-batch 2 the full space has the pairs only (each part
    holds at least one of the b sequences), found without walking every subset of groups."""
    instance = _one_gpu_groups(24, 8)
    shapes = _full_mixed_shapes(instance, 2)
    assert len(shapes) == math.comb(24, 2)
    assert all(len(s) == 2 for s in shapes)


def test_mixed_check_past_its_deadline_assumes_mixed_stages() -> None:
    """Where the candidates cannot be built in time, the search with mixed stages (whose set-up
    runs under the search's deadline) is taken, not the single-type one alone."""
    state = SearchState(_one_gpu_groups(4, 8))
    assert _mixed_stages_exist(state, -math.inf) is True
    assert _mixed_stages_exist(SearchState(_one_gpu_groups(4, 8)), math.inf) is True


def test_saturated_fft_count_decides_the_budget_as_the_exact_count(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`full_mixed_count` above FFT_COUNT_ABOVE (saturated counts, FFT): it passes the budget
    exactly where the exact count does, and equals it where it does not."""
    from haap_solver.search import space

    for devices, groups in (([("A100-80G", None), ("H100", None)], [(0, 1, 4), (1, 2, 2)]),
                            ([("A100-80G", None), ("H100", None), ("L40S", None)],
                             [(0, 1, 2), (1, 1, 2), (2, 1, 4)])):
        instance = tiny_instance(devices=devices, groups=groups, layers=4, hidden=256,
                                 heads=4, seq=128, batch=960, recompute=("none",))
        for b in (2, 3, 5, 8, 12, 24, 40, 60, 96, 120):
            for budget in (10, 200, 1000):
                monkeypatch.setattr(space, "FFT_COUNT_ABOVE", 10**9)
                exact = space.full_mixed_count(instance, b)
                monkeypatch.setattr(space, "FFT_COUNT_ABOVE", 0)
                fast = space.full_mixed_count(instance, b, stop_above=budget)
                assert (fast > budget) == (exact > budget), (b, budget, exact, fast)
                if exact <= budget:
                    assert fast == exact, (b, budget)
