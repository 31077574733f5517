"""The set-up before the search stays within what a time limit can bound (found by fuzzing the
command line, 2026-12-04): a global batch of 16,384 on one node, or 24 one-GPU node groups, kept
`haap solve --time-limit 2` busy for a minute before the search began."""

from __future__ import annotations

import dataclasses
import itertools
import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiny_instances import tiny_instance

from haap_solver.cost.evaluate import CostModel
from haap_solver.instance import Instance
from haap_solver.search.solve import _mixed_stages_exist
from haap_solver.search.space import (
    _full_mixed_shapes,
    _parts_within,
    mixed_shapes,
    share_splits,
    tp_candidates,
)
from haap_solver.search.state import SearchState
from haap_solver.search.subproblem_bounds import (
    EXACT_RATE_SHARES,
    RATE_SHARE_GRID,
    peak_layer_rates,
    rate_shares,
)


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


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.integers(1, 30),
       st.integers(1, 12))
def test_share_splits_are_every_split(counts: list[int], total: int, cap: int) -> None:
    """`share_splits` returns every tuple of shares in [1, cap] with sum(count x share) ==
    total, in lexicographic order (its lower bound on the first share skips only branches
    without a split)."""
    want = [s for s in itertools.product(range(1, cap + 1), repeat=len(counts))
            if sum(c * x for c, x in zip(counts, s, strict=True)) == total]
    assert share_splits(counts, total, cap) == want


def test_same_group_count_with_a_share_cap_near_the_micro_batch() -> None:
    """Found by fuzzing `haap solve`: a global batch of 2^20 with max_micro_batch_share 65,536
    on two 2-GPU nodes (at most 10 GPUs: two replica groups on one node group are searched).
    At micro-batch 262,144 the full mixed space has one candidate, so the same-group count ran,
    and its split of three parts walked 65,536^2 first shares that left the others more than
    their cap: `haap solve --time-limit 3` ran for minutes. Checked in a subprocess with a
    timeout, so that the old walk fails rather than hangs."""
    code = (
        "import dataclasses, sys\n"
        "sys.path.insert(0, 'tests')\n"
        "from tiny_instances import tiny_instance\n"
        "from haap_solver.search.space import mixed_space_full, same_group_count, "
        "share_splits\n"
        "assert share_splits([1, 1, 2], 4 * 65_536, 65_536) == [(65_536,) * 3]\n"
        "base = tiny_instance(devices=[('A100-80G', None), ('T4', None)],\n"
        "                     groups=[(0, 1, 2), (1, 1, 2)], layers=4, hidden=256, heads=4,\n"
        "                     seq=128, batch=1 << 20, recompute=('none',))\n"
        "inst = dataclasses.replace(base, training=dataclasses.replace(\n"
        "    base.training, max_micro_batch_share=65_536))\n"
        "b = 4 * 65_536\n"
        "assert mixed_space_full(inst, b)\n"
        "print(same_group_count(inst, b, stop_above=200))\n")
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) <= 200


def _big_share_instance(**training: object) -> Instance:
    base = tiny_instance(devices=[("A100-80G", None), ("V100-32G", None)],
                         groups=[(0, 1, 8), (1, 1, 4)], layers=4, hidden=256, heads=4, seq=128,
                         batch=1 << 20, recompute=("none", "selective", "full"))
    t = dataclasses.replace(base.training, max_micro_batch_share=65_536, **training)
    return dataclasses.replace(base, training=t)


@pytest.mark.parametrize("training", [{}, {"tp_comm_overlap": True, "sequence_parallel": True},
                                      {"flash_attention": False, "framework": "deepspeed"}])
def test_analytical_layer_time_never_falls_as_the_share_grows(training: dict) -> None:
    """`peak_layer_rates` costs a grid of shares above EXACT_RATE_SHARES, valid only because
    the analytical per-layer time is non-decreasing in the share: checked on every share up to
    3,000 and on a sparse sweep to 65,536, for every TP degree and recomputation mode."""
    instance = _big_share_instance(**training)
    cm = CostModel(instance)
    shares = list(range(1, 3001)) + list(range(3001, 65_537, 97)) + [65_536]
    for g in instance.cluster.node_groups:
        for tp in tp_candidates(instance, g):
            for recompute in instance.training.recompute:
                times = []
                for share in shares:
                    lc = cm.layer_cost(g.device, tp, share, recompute)
                    times.append(lc.fwd_s + lc.bwd_s + lc.tp_fwd_s + lc.tp_bwd_s)
                falls = [(shares[i], shares[i + 1]) for i in range(len(times) - 1)
                         if times[i + 1] < times[i] * (1 - 1e-12)]
                assert not falls, (g.name, tp, recompute, falls[:3])


def test_share_grid_bounds_every_share() -> None:
    """The grid's rate (each grid share's time, credited up to the next grid share) is at least
    the best rate of every share, and costs a few hundred shares, not 65,536."""
    instance = _big_share_instance()
    state = SearchState(instance)
    cm = state.cost_model
    rates = peak_layer_rates(state)
    shares = rate_shares(65_536, monotone=True)
    assert len(shares) < EXACT_RATE_SHARES + 400
    assert shares[-1] == 65_536 and shares == sorted(set(shares))
    for g in instance.cluster.node_groups:
        exact = max(share / (tp * sum((lc.fwd_s, lc.bwd_s, lc.tp_fwd_s, lc.tp_bwd_s)))
                    for tp in tp_candidates(instance, g)
                    for recompute in instance.training.recompute
                    for share in range(1, 65_537, 7)
                    for lc in [cm.layer_cost(g.device, tp, share, recompute)])
        assert exact <= rates[g.name] <= exact * RATE_SHARE_GRID * (1 + 1e-9)
