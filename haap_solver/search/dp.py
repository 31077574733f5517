"""The exact optimal layer split of a fixed sequence of stage configurations.

`best_layer_split` is the inner problem of the stage-assignment model with the configuration of
every stage fixed: only the layer counts n_1..n_p remain. It serves heuristics (cost a sequence
exactly) and tests (an oracle independent of the MILP).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from operator import itemgetter
from typing import Any

from haap_solver.cost.pipeline import links_around
from haap_solver.instance import Instance
from haap_solver.search.coefficients import CoefficientCache
from haap_solver.search.space import StageConfig, canonical_placement

# A label is (sum, peak_a, peak_b, tail, layers of its last stage, parent label or None):
#   sum     the stage times so far (1F1B: tau_i; GPipe: f_i + b_i)
#   peak_a  1F1B: max(max tau_i, 2 max c_j); GPipe: max(max f_i, max c_j); 0 when m = 1
#   peak_b  GPipe: max(max b_i, max c_j); 0 for 1F1B or when m = 1
#   tail    max tail_i
Label = tuple[Any, ...]
_KEY = itemgetter(0, 1, 2, 3)
_INF = math.inf


def _pareto(labels: list[Label], two_d: bool) -> list[Label]:
    """The labels no other label dominates (<= in all four aggregates); ties keep the first.

    After sorting by the sum every kept label has a sum <= the current one, so the current label
    is dominated iff a kept label is <= in (peak_a, peak_b, tail). With peak_b constant (1F1B, or
    m = 1) that query runs on a 2-D staircase; otherwise it scans the kept labels."""
    labels.sort(key=_KEY)
    kept: list[Label] = []
    if two_d:
        # Staircase of the kept labels' (peak_a, tail): peak_a increasing, tail decreasing.
        st_a: list[float] = []
        st_t: list[float] = []
        for lab in labels:
            a, t = lab[1], lab[3]
            j = bisect_right(st_a, a) - 1
            if j >= 0 and st_t[j] <= t:
                continue
            kept.append(lab)
            lo = bisect_left(st_a, a)
            hi = lo
            while hi < len(st_a) and st_t[hi] >= t:
                hi += 1
            st_a[lo:hi] = [a]
            st_t[lo:hi] = [t]
        return kept
    for lab in labels:
        _, a, b, t = lab[:4]
        if any(k[1] <= a and k[2] <= b and k[3] <= t for k in kept):
            continue
        kept.append(lab)
    return kept


def _split(label: Label) -> list[int]:
    out = []
    node = label
    while node[5] is not None:  # the root label stands for no stage
        out.append(node[4])
        node = node[5]
    return out[::-1]


def best_layer_split(instance: Instance, cache: CoefficientCache, configs: list[StageConfig],
                     micro_batch: int, schedule: str) -> tuple[list[int], float] | None:
    """The layer counts minimising the iteration time of the stage sequence `configs`.

    Returns (layers, iteration time in seconds), or None when no split fits memory (or the
    sequence does not fit the node groups' GPUs with canonical placement). The objective is
    evaluate()'s iteration time of ``build_plan(instance, configs, layers, ...)`` expressed with
    the cached affine coefficients (p stages, m = B / b micro-batches, links c_j fixed by the
    configurations):

      1F1B:  sum_i tau_i + 2 sum_j c_j + (m - 1) max(max_i tau_i, 2 max_j c_j) + max_i tail_i
      GPipe: sum_i (f_i + b_i) + 2 sum_j c_j
             + (m - 1) (max(max_i f_i, max_j c_j) + max(max_i b_i, max_j c_j)) + max_i tail_i

    with overlapped sends; with blocking ones (training.pipeline_p2p) each stage's term in the
    maxima is its own plus its links on both sides, tau_i + c_{i-1} + c_i (f_i + ..., b_i + ...),
    and the link terms leave the maxima.

    subject to 1 <= n_i <= max_layers(c_i at position i) and sum_i n_i = L.

    Why this is exact. The objective is g(S, A, B, X) with S a sum of per-stage terms, A and B
    maxima of per-stage terms (each clamped from below by the fixed link term) and X a maximum of
    per-stage terms, and g is non-decreasing in each of S, A, B, X (all weights are >= 0). Each
    aggregate of a prefix of stages is updated from the prefix's aggregate and the next stage's
    own term alone (S + s_i, max(A, a_i), ...). The dynamic program runs over states (stages
    placed, layers used) and keeps at each state every label (S, A, B, X) that no other label of
    the same state dominates. A dominated label can be dropped: any completion of it is also a
    completion of its dominator (which stages and layer counts remain feasible depends only on
    the state), and by monotonicity of the updates and of g the dominator's completion costs no
    more. So the Pareto set at the final state (p, L) contains an optimal split, and the minimum
    of g over it is the optimum. Clamping A, B by the link term at the start (and dropping them
    when m = 1, where they carry weight 0) changes no objective value and only merges labels.
    Every layer count of every stage is tried, so no assumption on the shape of the per-stage
    terms (convexity, monotonicity) is needed.

    Bounding (for speed; also exact). Backward passes give, for every state, the least sum, the
    least max and the least max tail over all feasible completions, each minimised on its own:
    together a lower bound on g over the completions of a label. A label whose bound exceeds the
    cost of a known split (the splits that minimise the sum and the bottleneck alone) has no
    optimal completion and is dropped; a state with no feasible completion is never entered.
    """
    p = len(configs)
    if p == 0:
        raise ValueError("best_layer_split needs at least one stage")
    L = instance.model.num_layers
    b = micro_batch
    m = instance.training.global_batch_size // b
    if p > L or canonical_placement(instance, configs) is None:
        return None
    gpipe = schedule == "gpipe"
    multi = p > 1
    steady = m > 1
    w = float(m - 1)

    # Links: fixed by the configurations.
    links = [max(cache.p2p_side(configs[j], b, configs[j + 1].link_key),
                 cache.p2p_side(configs[j + 1], b, configs[j].link_key))
             for j in range(p - 1)]
    link_sum = 2 * sum(links)
    link_max = max(links, default=0.0)
    # Blocking sends (training.pipeline_p2p): each stage's steady-state term holds its links.
    blocking = instance.training.blocks_p2p(schedule)
    waits = instance.training.link_waits(schedule)  # (per link and micro-batch, blocking)
    if not steady or blocking:
        floor_a = floor_b = 0.0
    elif gpipe:
        floor_a = floor_b = link_max
    else:
        floor_a, floor_b = 2 * link_max, 0.0

    # Per stage, for every layer count that fits memory: (n, sum term, a, b, tail).
    per_stage: list[list[tuple[int, float, float, float, float]]] = []
    for i, c in enumerate(configs):
        first, last = i == 0, i == p - 1
        in_flight = cache.in_flight(schedule, p - 1 - i, p, m)
        n_max = min(cache.max_layers(c, b, first, last, multi, in_flight), L - (p - 1))
        if n_max < 1:
            return None
        co = cache.coefficients(c, b, first, last, multi)
        near = waits * links_around(links, i) if blocking else 0.0
        rows = []
        for n in range(1, n_max + 1):
            tail = co.tail(n)
            if gpipe:
                f, bw = co.fwd(n), co.bwd(n)
                rows.append((n, f + bw, f + near if steady else 0.0,
                             bw + near if steady else 0.0, tail))
            else:
                tau = co.tau(n)
                rows.append((n, tau, tau + near if steady else 0.0, 0.0, tail))
        per_stage.append(rows)

    def objective(total: float, a: float, bb: float, tail: float) -> float:
        pipe = total + link_sum + w * (a + bb if gpipe else a)
        return pipe + tail

    # Backward pass: per state (stages placed i, layers used k), the least sum / peak_a / peak_b
    # / tail over the feasible completions, and the completions minimising the sum and peak_a.
    suf_s = [[_INF] * (L + 1) for _ in range(p + 1)]
    suf_a = [[_INF] * (L + 1) for _ in range(p + 1)]
    suf_b = [[_INF] * (L + 1) for _ in range(p + 1)]
    suf_t = [[_INF] * (L + 1) for _ in range(p + 1)]
    arg_s = [[0] * (L + 1) for _ in range(p + 1)]
    arg_a = [[0] * (L + 1) for _ in range(p + 1)]
    suf_s[p][L] = 0.0
    suf_a[p][L] = suf_b[p][L] = suf_t[p][L] = -_INF
    for i in range(p - 1, -1, -1):
        nxt_s, nxt_a, nxt_b, nxt_t = suf_s[i + 1], suf_a[i + 1], suf_b[i + 1], suf_t[i + 1]
        cur_s, cur_a, cur_b, cur_t = suf_s[i], suf_a[i], suf_b[i], suf_t[i]
        for k in range(L):
            for n, s, a, bb, t in per_stage[i]:
                k2 = k + n
                if k2 > L:
                    break
                if nxt_s[k2] == _INF:
                    continue
                if s + nxt_s[k2] < cur_s[k]:
                    cur_s[k], arg_s[i][k] = s + nxt_s[k2], n
                va = max(a, nxt_a[k2])
                if va < cur_a[k]:
                    cur_a[k], arg_a[i][k] = va, n
                cur_b[k] = min(cur_b[k], max(bb, nxt_b[k2]))
                cur_t[k] = min(cur_t[k], max(t, nxt_t[k2]))
    if suf_s[0][0] == _INF:
        return None

    # An upper bound: the cost of the splits minimising the sum and the bottleneck alone.
    def cost_of(layers: list[int]) -> float:
        total, a, bb, tail = 0.0, floor_a, floor_b, 0.0
        for rows, n in zip(per_stage, layers, strict=True):
            _, s, ra, rb, t = rows[n - 1]
            total, a, bb, tail = total + s, max(a, ra), max(bb, rb), max(tail, t)
        return objective(total, a, bb, tail)

    upper = _INF
    for arg in (arg_s, arg_a):
        k, layers = 0, []
        for i in range(p):
            layers.append(arg[i][k])
            k += arg[i][k]
        upper = min(upper, cost_of(layers))
    cutoff = upper + 1e-12 * abs(upper)  # never drop a label whose completion may tie

    # Forward pass over states with Pareto labels; states[k] holds the labels of k layers used.
    two_d = not gpipe or not steady
    states: dict[int, list[Label]] = {0: [(0.0, floor_a, floor_b, 0.0, 0, None)]}
    for i, rows in enumerate(per_stage):
        s_next, a_next, b_next, t_next = suf_s[i + 1], suf_a[i + 1], suf_b[i + 1], suf_t[i + 1]
        nxt: dict[int, list[Label]] = {}
        for used, labels in states.items():
            for n, s, a, bb, t in rows:
                k = used + n
                if k > L:
                    break
                rest_s = s_next[k]
                if rest_s == _INF:
                    continue
                rest_a, rest_b, rest_t = a_next[k], b_next[k], t_next[k]
                bucket = nxt.get(k)
                if bucket is None:
                    bucket = nxt[k] = []
                for lab in labels:
                    total = lab[0] + s
                    na = a if a > lab[1] else lab[1]
                    nb = bb if bb > lab[2] else lab[2]
                    nt = t if t > lab[3] else lab[3]
                    bound = objective(total + rest_s, max(na, rest_a), max(nb, rest_b),
                                      max(nt, rest_t))
                    if bound > cutoff:
                        continue
                    bucket.append((total, na, nb, nt, n, lab))
        states = {k: _pareto(v, two_d) for k, v in nxt.items() if v}
        if not states:  # pragma: no cover - the upper bound's own split always survives
            return None

    final = states.get(L)
    if not final:  # pragma: no cover - as above
        return None
    best = min(final, key=lambda lab: objective(*lab[:4]))
    return _split(best), objective(*best[:4])
