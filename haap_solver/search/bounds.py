"""The heterogeneity-aware load-balance bound with GPU granularity (formulations Sec. 4.3).

For a bottleneck candidate T, a stage of configuration c can hold at most N_c(T) layers: the
largest n with stage time tau_c(n) <= T and memory within capacity (taken at its most optimistic:
one micro-batch in flight, no embedding or head). Node group g can then host at most
H_g(k, T) = max sum of N_c(T) over k stages of its configurations whose GPUs fit its budget G_g
(a knapsack with a cardinality limit, solved exactly by dynamic programming). If the best split of
p stages over the groups hosts fewer than L layers, no plan with p stages has bottleneck <= T.
The smallest T that passes is a valid lower bound T_LB(p) on the bottleneck; unlike the fluid
bound it sees that GPUs come in node-aligned blocks and that each stage pays fixed costs.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import numpy as np

from haap_solver.instance import Instance
from haap_solver.search.coefficients import (
    CoefficientCache,
    hull_candidates,
    pieces_below_pairs,
    pieces_max_rows,
)
from haap_solver.search.deadline import DeadlineReached, check_deadline, time_left
from haap_solver.search.space import StageConfig

ROLES = ((False, False, True), (True, False, True), (False, True, True))  # middle, first, last
FIRST, LAST = 1, 2


class CapacityBound:
    """T_LB(p) for one micro-batch size; capacity curves are cached by T.

    Stages play roles: exactly one first stage (embedding) and one last stage (LM head and loss)
    when p >= 2, the rest middle; a single stage holds both ends. Each role has its own time and
    memory coefficients, so the head's cost (about two Llama-3 8B layers) is not forgotten.
    """

    def __init__(self, instance: Instance, cache: CoefficientCache, micro_batch: int,
                 configs: list[StageConfig], p_max: int, *, blocking: bool | None = None):
        check_deadline()  # (a table of 0.1-0.6 s at 1,024 GPUs: not begun past the deadline)
        self.L = instance.model.num_layers
        self.p_max = p_max
        self.budget = {g.name: g.num_gpus for g in instance.cluster.node_groups}
        # items[group] = list of (gpus, [taus for middle, first, last])
        self.items: dict[str, list[tuple[int, list[np.ndarray]]]] = {
            g.name: [] for g in instance.cluster.node_groups}
        self.item_configs: dict[str, list[StageConfig]] = {
            g.name: [] for g in instance.cluster.node_groups}
        self.only: list[tuple[int, np.ndarray]] = []
        self.only_configs: list[StageConfig] = []
        self.mixed_configs: list[tuple[StageConfig, list[np.ndarray]]] = []
        """The mixed-type configurations with their periods per role (TailCapacity's
        half-units, Sec. 4.9)."""
        # Mixed stages (Sec. 4.3, last paragraph): a relaxation charges each node group its own
        # GPUs and its own share of the stage's layers (in proportion to GPUs); the stage counts
        # (and takes its role) in one group only, in the others it is a free item.
        self.mixed_items: dict[str, list[tuple[int, list[np.ndarray], float]]] = {
            g.name: [] for g in instance.cluster.node_groups}
        self.free_items: dict[str, list[tuple[int, list[np.ndarray], float]]] = {
            g.name: [] for g in instance.cluster.node_groups}
        values: list[np.ndarray] = []
        by_role = [cache.stage_times_many(configs, micro_batch, *role) for role in ROLES]
        # (the stage's period, Sec. 4.3; 1F1B and GPipe resolve training.pipeline_p2p alike, the
        # interleaved schedule may not: `blocking` is its sub-problems', Sec. 1.4)
        if blocking is None:
            blocking = instance.training.blocks_p2p("1f1b")
        if blocking:
            floor = link_floors(cache, configs, micro_batch, self.budget)
            by_role = [[row + _links_of(role) * pi for row, pi in zip(rows, floor, strict=True)]
                       for rows, role in zip(by_role, ROLES, strict=True)]
        else:  # overlapped sends: T >= 2 c_j >= 2 pi(c) beside a link (Sec. 4.3)
            floor = link_floors(cache, configs, micro_batch, self.budget)
            by_role = [[np.maximum(row, 2.0 * pi) if _links_of(role) else row
                        for row, pi in zip(rows, floor, strict=True)]
                       for rows, role in zip(by_role, ROLES, strict=True)]
        only_times = cache.stage_times_many(configs, micro_batch, True, True, False)
        for k, c in enumerate(configs):
            per_role = [times[k] for times in by_role]
            if c.mixed:
                self.mixed_configs.append((c, per_role))
                anchor = max(c.groups, key=lambda g: (c.gpus_in(g), g))
                for g in c.groups:
                    item = (c.gpus_in(g), per_role, c.gpus_in(g) / c.gpus)
                    (self.mixed_items if g == anchor else self.free_items)[g].append(item)
            else:
                self.items[c.node_group].append((c.gpus, per_role))
                self.item_configs[c.node_group].append(c)
            only = only_times[k]
            self.only.append((c.gpus, only))
            self.only_configs.append(c)
            values.extend((*per_role, only))
        self.t_values: list[float] = (np.unique(np.concatenate(values)).tolist() if values
                                      else [])
        self._cap: dict[int, np.ndarray] = {}
        self._blocks: dict[str, tuple[_TauBlock, _TauBlock]] | None = None
        self._only_block = _TauBlock([(gpus, [taus], 1.0) for gpus, taus in self.only])

    def capacity(self, t_index: int) -> np.ndarray:
        """Most layers placeable by exactly-one-first, exactly-one-last plans of at most k stages
        (k = 0..p_max) at T = t_values[t_index]; entry 1 is the single-stage case."""
        hit = self._cap.get(t_index)
        if hit is not None:
            return hit
        # (Each T costs the knapsack of every node group, 0.01-0.04 s at 1,024 GPUs; a bisection
        # over T in a strong bound ran 0.2-0.3 s of CPU past a 2 s re-plan's deadline there.
        # Nothing of a T is kept until it is done.)
        check_deadline()
        t = self.t_values[t_index] * (1 + 1e-12)
        if self._blocks is None:
            self._blocks = {g: (_TauBlock([(gpus, per_role, 1.0) for gpus, per_role in items
                                           if gpus <= self.budget[g]] + self.mixed_items[g]),
                                _TauBlock(self.free_items[g]))
                            for g, items in self.items.items()}
        total: np.ndarray | None = None
        for g, (staged, free_block) in self._blocks.items():
            n = staged.layers(t)  # (items, roles)
            keep = n.any(axis=1)
            gains = list(zip(staged.gpus[keep].tolist(), n[keep].tolist(), strict=True))
            most = free_block.layers(t).max(axis=1, initial=0.0)
            free = [(w, v) for w, v in zip(free_block.gpus.tolist(), most.tolist(), strict=True)
                    if v > 0]
            best = _group_capacity(gains, self.budget[g], self.p_max, free)
            total = best if total is None else _combine(total, best)
        assert total is not None
        out = total[:, FIRST | LAST].copy()
        out[1] = self._only_block.layers(t).max(initial=0.0)
        self._cap[t_index] = out
        return out
    def selection(self, t: float, p: int) -> list[tuple[StageConfig, int, int]] | None:
        """The stages of one best capacity solution at bottleneck `t` with at most `p` stages:
        (configuration, role 0/1/2 = middle/first/last, layers it may hold). A warm-start seed,
        reconstructed from the same dynamic programs as the bound."""
        t = t * (1 + 1e-12)
        if p == 1:
            best, pick = 0, None
            for c, (_, taus) in zip(self.only_configs, self.only, strict=True):
                n = int(np.searchsorted(taus, t, side="right"))
                if n > best:
                    best, pick = n, c
            return [(pick, 1, best)] if pick is not None else None
        groups = []
        running: list[np.ndarray] = []
        for g, items in self.items.items():
            budget = self.budget[g]
            gains: list[tuple[int, list[int]]] = []
            cfgs: list[StageConfig] = []
            for c, (gpus, per_role) in zip(self.item_configs[g], items, strict=True):
                if gpus > budget:
                    continue
                held = [int(np.searchsorted(taus, t, side="right")) for taus in per_role]
                if any(held):
                    gains.append((gpus, held))
                    cfgs.append(c)
            hist, unit = _group_history(gains, budget, p)  # type: ignore[arg-type]  # int <= float
            top = hist[:, :, -1].copy() if hist.shape[2] else np.full((p + 1, 4), NEG)
            groups.append((cfgs, gains, unit, hist, top))
            running.append(top if not running else _combine(running[-1], top))
        if not running or running[-1][p, FIRST | LAST] < self.L:
            return None
        out: list[tuple[StageConfig, int, int]] = []
        k, f = p, FIRST | LAST
        for gi in range(len(groups) - 1, -1, -1):
            cfgs, gains, unit, hist, top = groups[gi]
            target = running[gi][k, f]
            split = (k, f) if gi == 0 else None
            if gi > 0:
                for kg in range(k + 1):
                    for fg in (fg for fg in range(4) if not fg & ~f):
                        if (top[kg, fg] > NEG / 2
                                and running[gi - 1][k - kg, f & ~fg] + top[kg, fg] == target):
                            split = (kg, fg)
                            break
                    if split:
                        break
            if split is None:
                return None
            kg, fg = split
            out.extend(_backtrack(hist, gains, cfgs, unit, kg, fg))
            k, f = k - kg, f & ~fg
        return out

    def bottleneck_floor(self, p: int) -> float:
        """Smallest candidate T at which p stages can hold every layer (inf if none)."""
        if not self.t_values:
            return float("inf")
        k = min(p, self.p_max)
        top = len(self.t_values) - 1
        if self.capacity(top)[k] < self.L - 1e-9:
            return float("inf")
        return self.t_values[first_true(lambda i: self.capacity(i)[k] >= self.L - 1e-9, 0, top)]


NEG = -1e18


class _TauBlock:
    """Items (GPUs, stage times per role at n = 1.. (non-decreasing), share of the layers) as
    padded arrays, so that the layers each holds at a bottleneck T are one vectorised count."""

    def __init__(self, items: list[tuple[int, list[np.ndarray], float]]):
        self.gpus = np.array([w for w, _, _ in items], dtype=int)
        self.share = np.array([f for _, _, f in items], dtype=float)
        width = max([len(taus) for _, per_role, _ in items for taus in per_role] + [1])
        roles = max([len(per_role) for _, per_role, _ in items] + [1])
        self.taus = np.full((len(items), roles, width), np.inf)
        for i, (_, per_role, _) in enumerate(items):
            for r, taus in enumerate(per_role):
                self.taus[i, r, : len(taus)] = taus

    def layers(self, t: float) -> np.ndarray:
        """(items, roles): share x the most layers with stage time <= t (searchsorted 'right'
        on each non-decreasing row)."""
        return self.share[:, None] * (self.taus <= t).sum(axis=2)


def _group_capacity(gains: list[tuple[int, list[float]]], budget: int, p_max: int,
                    free: list[tuple[int, float]] = ()) -> np.ndarray:  # type: ignore[assignment]
    """best[k, f] = max layers of at most k stages on at most `budget` GPUs, where the bit set f
    says whether the first (1) and the last (2) stage are among them; `free` items (GPUs,
    layers) may be added any number of times without counting as stages."""
    unit = 0
    for w, _ in (*gains, *free):
        unit = math.gcd(unit, w)
    if gains and not free:
        # At most p_max stages of at most the largest size: GPUs beyond that cannot be used, and
        # hist is monotone in w, so its value at the cap is its value at the budget. Exact, and
        # the table no longer grows with the cluster (2^21 GPUs in a group: minutes, not ms).
        budget = min(budget, p_max * max(w for w, _ in gains))
    hist, unit = _group_history(gains, budget, p_max, unit or 1)
    if not free:
        return hist[:, :, -1].copy()
    width = hist.shape[2]
    extra = np.zeros(width)  # unbounded knapsack of the free items
    sizes = np.array([w // unit for w, _ in free])
    values = np.array([n for _, n in free])
    for w in range(1, width):
        fit = sizes <= w
        if fit.any():
            extra[w] = max(extra[w - 1], float((extra[w - sizes[fit]] + values[fit]).max()))
        else:
            extra[w] = extra[w - 1]
    # best[k, f] = max over w0 of hist[k, f, W - w0] + extra[w0]
    return (hist[:, :, ::-1] + extra[None, None, :]).max(axis=2)


def _group_history(gains: list[tuple[int, list[float]]], budget: int, p_max: int,
                   unit: int = 0) -> tuple[np.ndarray, int]:
    """The dynamic program behind the capacity bound: hist[k, f, w] = max layers of at most k
    stages on at most w GPU units (the gcd of the stage sizes), with roles f (bit 1: the first
    stage is among them, bit 2: the last). Monotone in w by construction (hist[0] is 0 for every
    w, and shifts of a monotone array are monotone). `unit` (0: the gcd of the stage sizes) must
    divide every size."""
    if not unit:
        for w, _ in gains:
            unit = math.gcd(unit, w)
    unit = unit or 1
    width = budget // unit + 1
    hist = np.full((p_max + 1, 4, width), NEG)
    hist[0, 0, :] = 0.0
    if not gains:
        hist[1:] = hist[0]
        return hist, unit
    # All items at once: shifted[i, w] = dp[w - w_i] (NEG where w < w_i), plus the item's layers
    # in each role (NEG where the item cannot take that role).
    ws = np.array([w // unit for w, _ in gains])
    idx = np.arange(width)[None, :] - ws[:, None]
    valid = idx >= 0
    idx = np.where(valid, idx, 0)
    add = np.array([n for _, n in gains], dtype=float)  # (items, 3): middle, first, last
    add = np.where(add > 0, add, NEG)
    role_bits = ((0, 0), (1, FIRST), (2, LAST))
    for k in range(1, p_max + 1):
        dp = hist[k - 1]
        new = dp.copy()
        for f in range(4):
            shifted = np.where(valid, dp[f][idx], NEG)
            for role, bit in role_bits:
                if bit and f & bit:
                    continue
                best = (shifted + add[:, role][:, None]).max(axis=0)
                np.maximum(new[f | bit], best, out=new[f | bit])
        np.maximum(new, NEG, out=new)
        hist[k] = new
        if np.array_equal(new, dp):  # more stages cannot add anything
            hist[k + 1:] = new
            break
    return hist, unit


def _backtrack(hist: np.ndarray, gains: list[tuple[int, list[int]]], cfgs: list[StageConfig],
               unit: int, k: int, f: int) -> list[tuple[StageConfig, int, int]]:
    out: list[tuple[StageConfig, int, int]] = []
    w = hist.shape[2] - 1
    while k > 0:
        value = hist[k, f, w]
        if value == hist[k - 1, f, w]:
            k -= 1
            continue
        found = False
        for (gw, n), c in zip(gains, cfgs, strict=True):
            gw //= unit
            if gw > w:
                continue
            for role, bit in ((0, 0), (1, FIRST), (2, LAST)):
                if not n[role] or (bit and not f & bit):
                    continue
                prev_f = f & ~bit
                if hist[k - 1, prev_f, w - gw] + n[role] == value:
                    out.append((c, role, n[role]))
                    k, f, w = k - 1, prev_f, w - gw
                    found = True
                    break
            if found:
                break
        if not found:  # cannot happen for a value the DP produced
            break
    return out


def _combine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """c[k, f] = max over k1 + k2 = k and disjoint f1 | f2 = f of a[k1, f1] + b[k2, f2]."""
    n = a.shape[0]
    lag = np.arange(n)[None, :] - np.arange(n)[:, None]  # [k1, k] -> k2 = k - k1
    ok = lag >= 0
    lag = np.where(ok, lag, 0)
    shifted = [np.where(ok, b[lag, f2], NEG) for f2 in range(4)]  # [k1, k] -> b[k - k1, f2]
    out = np.full_like(a, NEG)
    for f1 in range(4):
        for f2 in range(4):
            if not f1 & f2:
                best = (a[:, f1][:, None] + shifted[f2]).max(axis=0)
                np.maximum(out[:, f1 | f2], best, out=out[:, f1 | f2])
    return out


def role_tables(sizes: np.ndarray, values: np.ndarray, width: int, p_max: int) -> np.ndarray:
    """best[k, f] = most layers of at most k stages of one node group within `width` GPU units,
    with role set f (bit 1: the first stage is among them, bit 2: the last), stages drawn with
    repetition from items of `sizes` units holding `values[i, role]` layers (roles middle,
    first, last; 0: the item cannot take that role). The same answer as `_group_history`'s last
    column, computed apart: the middle stages by a dynamic program over stage counts, then the
    one first and the one last stage as max-plus steps over every stage count at once. That is
    a few numpy operations per stage count instead of twelve, and the tail-threshold capacity of
    Sec. 4.3 (`TailCapacity`) asks for hundreds of these tables per micro-batch size."""
    add = np.where(values > 0, values.astype(float), NEG)
    span = width + 1
    sizes = np.asarray(sizes)
    idx = np.arange(span)[None, :] - sizes[:, None]
    valid = idx >= 0
    idx = np.where(valid, idx, 0)
    mid = np.zeros((p_max + 1, span))  # at most k middle stages within w units
    middle = add[:, 0][:, None]
    settled = p_max  # mid[k] = mid[settled] for every k >= settled
    for k in range(1, p_max + 1):
        prev = mid[k - 1]
        step = np.where(valid, prev[idx] + middle, NEG).max(axis=0, initial=NEG)
        new = np.maximum(prev, step)
        if np.array_equal(new, prev):  # more stages cannot add anything
            settled = k - 1
            mid[k:] = prev
            break
        mid[k] = new
    # The first and the last stage add one stage each: two more counts can still change.
    rows = min(settled + 3, p_max + 1)
    mid = mid[:rows]
    top = width - sizes  # the column each item leaves at the full budget (< 0: does not fit)
    fits = top >= 0
    top = np.where(fits, top, 0)

    def one_more_at_top(table: np.ndarray, gain: np.ndarray) -> np.ndarray:
        """out[k] = max over items of table[k - 1][width - size] + gain (k >= 1)."""
        out = np.full(rows, NEG)
        if len(gain):
            out[1:] = np.maximum(np.where(fits[None], table[:-1, top] + gain[None], NEG)
                                 .max(axis=1), NEG)
        return out

    first = np.full((rows, span), NEG)  # the first stage among at most k, within w units
    if len(sizes):
        shifted = np.where(valid[None], mid[:-1, idx], NEG) + add[:, 1][None, :, None]
        first[1:] = np.maximum(shifted.max(axis=1), NEG)
    table = np.stack([mid[:, -1], first[:, -1], one_more_at_top(mid, add[:, 2]),
                      one_more_at_top(first, add[:, 2])], axis=1)
    if rows < p_max + 1:  # (repeat the last row: nothing changes past it)
        table = np.concatenate([table, np.repeat(table[-1:], p_max + 1 - rows, axis=0)])
    return table


def half_unit_tables(sizes: np.ndarray, halves: np.ndarray, values: np.ndarray, width: int,
                     u_max: int) -> np.ndarray:
    """best[u, f] = most layers of items of one node group within `width` GPU units whose
    half-units sum to at most u (u = 0..u_max), with role set f (as in role_tables), items
    drawn with repetition: `halves[i]` is 2 for a single-type stage, 1 for a part of a
    mixed-type stage that counts (Sec. 4.9, *Mixed stages*) and 0 for one that does not (a free
    item: any number of them, its layers `values[i, 0]`); `values[i, role]` as in role_tables.
    As there, the middle items by a dynamic program over half-units (`_middle_items`), then the
    one first and the one last item as max-plus steps over every count at once (these tables
    are asked thousands of times per micro-batch size); the free items fill the GPUs the others
    leave (an unbounded knapsack over GPUs, then a max-plus convolution, as CapacityBound's
    `_group_capacity`). Without free items only the whole width's column is wanted, so the
    first and last steps are taken at the columns they read (`_ends_at_width`): the same
    numbers for about half the time."""
    sizes, halves = np.asarray(sizes), np.asarray(halves)
    add = np.where(values > 0, values.astype(float), NEG)
    span = width + 1
    idx = np.arange(span)[None, :] - sizes[:, None]
    valid = idx >= 0
    idx = np.where(valid, idx, 0)
    counted = np.nonzero(halves > 0)[0]
    mid = _middle_items(halves[counted], idx[counted], np.where(valid[counted],
                                                                add[counted, :1], NEG), u_max)
    free = np.nonzero(halves == 0)[0]
    if not len(free):
        return _ends_at_width(mid, sizes, halves, add, width)
    h, s, gain = halves[counted], sizes[counted], add[counted]
    every = np.arange(span)
    first = _one_more(mid, h, s, gain[:, 1], every)
    table = np.stack([mid, first, _one_more(mid, h, s, gain[:, 2], every),
                      _one_more(first, h, s, gain[:, 2], every)], axis=1)  # (u, f, w)
    extra = np.zeros(span)  # unbounded knapsack of the free items
    free_sizes, free_values = sizes[free], values[free, 0].astype(float)
    for w in range(1, span):
        fit = (free_sizes <= w) & (free_values > 0)
        extra[w] = extra[w - 1]
        if fit.any():
            extra[w] = max(extra[w], float((extra[w - free_sizes[fit]] + free_values[fit]).max()))
    return np.maximum((table[:, :, ::-1] + extra[None, None, :]).max(axis=2), NEG)


def _middle_items(halves: np.ndarray, idx: np.ndarray, gain: np.ndarray,
                  u_max: int) -> np.ndarray:
    """mid[u, w] = most layers of middle items (half-units `halves` 1 or 2) of at most u
    half-units within w GPU units; `idx[i, w]` = w - size_i (clipped at 0) and `gain[i, w]`
    the item's layers where it fits in w, NEG where not. Row u depends on rows u - 1 and
    u - 2 only, so three equal rows in a row end it (every later row is the same)."""
    mid = np.zeros((u_max + 1, idx.shape[1]))
    if not len(halves):
        return mid
    singles = halves == 1
    unchanged = 0
    for u in range(1, u_max + 1):
        if u >= 2:
            step = mid[(u - halves)[:, None], idx] + gain
        elif singles.any():
            step = mid[0][idx[singles]] + gain[singles]
        else:
            mid[u] = mid[u - 1]
            unchanged += 1
            continue
        new = np.maximum(mid[u - 1], step.max(axis=0))
        unchanged = unchanged + 1 if np.array_equal(new, mid[u - 1]) else 0
        mid[u] = new
        if unchanged >= 2:
            mid[u + 1:] = new
            break
    return mid


def _one_more(table: np.ndarray, halves: np.ndarray, sizes: np.ndarray, gain: np.ndarray,
              cols: np.ndarray) -> np.ndarray:
    """out[u, c] = max over items i of table[u - halves[i], cols[c] - sizes[i]] + gain[i] (one
    more item, in the role `gain` holds the layers of), NEG where none fits; taken at the
    columns `cols` only (any integers: a negative one fits nothing)."""
    n = len(table)
    out = np.full((n, len(cols)), NEG)
    src = np.asarray(cols)[:, None] - sizes[None, :]  # (c, i)
    for h in np.unique(halves):
        if h >= n:
            continue
        sel = halves == h
        held = table[: n - h][:, np.maximum(src[:, sel], 0)] + gain[sel]  # (u - h, c, i)
        held = np.where(src[:, sel] >= 0, held, NEG).max(axis=2, initial=NEG)
        np.maximum(out[h:], held, out=out[h:])
    return np.maximum(out, NEG)


def _ends_at_width(mid: np.ndarray, sizes: np.ndarray, halves: np.ndarray, add: np.ndarray,
                   width: int) -> np.ndarray:
    """half_unit_tables' four role tables at the whole width from the middle items' table:
    one more item first (role 1), last (role 2), or both, each at the columns it reads
    (W for one item; for a first item j before a last item i, the first step at W - size_i)."""
    at_width = np.array([width])
    first = _one_more(mid, halves, sizes, add[:, 1], at_width)[:, 0]
    last = _one_more(mid, halves, sizes, add[:, 2], at_width)[:, 0]
    cols = width - sizes
    first_at = _one_more(mid, halves, sizes, add[:, 1], cols)  # (u, i): first at W - size_i
    rows = np.arange(len(mid))[:, None] - halves[None, :]  # (u, i)
    fits = (rows >= 0) & (cols >= 0)[None, :]
    held = first_at[np.maximum(rows, 0), np.arange(len(sizes))[None, :]] + add[None, :, 2]
    both = np.maximum(np.where(fits, held, NEG).max(axis=1, initial=NEG), NEG)
    return np.stack([mid[:, -1], first, last, both], axis=1)


class TailCapacity:
    """The GPU-granular capacity of Sec. 4.3 with a tail threshold (Sec. 4.9).

    A stage of configuration c in role r holds at most N_{c,r}(T, R) layers: the most n with
    stage time (its period, links included as in CapacityBound) <= T and tail (the data-parallel
    gradient sync and optimizer step after the pipeline, (3.4)) <= R, within memory at one
    micro-batch in flight. Every plan with bottleneck <= T and largest tail <= R is a selection
    of its stages that keeps every node group's GPU budget, one first and one last stage, and
    holds L layers; so where the best selection of p stages (a knapsack per node group,
    combined by max-plus over stage counts and roles) holds fewer than L, no plan of p stages
    has both. One table answers every stage count at once, so the tail walks of the ~p_max
    sub-problems of a micro-batch size share its answers (cached by (T, R)).

    Why: on clusters of many small nodes behind slow NICs (gpt3-2.7b-a100x32-v100x96-4gpu) the
    iteration is mostly the all-reduce tail of wide stages or the sends of deep pipelines, and
    the tail staircase of Sec. 4.5 charges only the most loaded stage's tail; here every
    stage's tail counts, with GPUs in node-aligned blocks, and no LP.

    Mixed-type stages (Sec. 4.9, *Mixed stages*): the tables count half-units, two a stage. A
    mixed stage is an item in each of its two largest parts' node groups (one half-unit each,
    its role with the part of the most GPUs) and a free item in any other, each holding its
    GPUs' share of the stage's layers; a plan of p stages is then a selection of 2p half-units.
    Without mixed-type configurations every item is a whole stage and the tables are those of
    stage counts.
    """

    def __init__(self, capacity: CapacityBound, cache: CoefficientCache, micro_batch: int):
        self.L = capacity.L
        self.p_max = capacity.p_max
        self.t_values = capacity.t_values
        self.halves = bool(capacity.mixed_configs)
        """Whether the tables count half-units (mixed-type configurations among the items)."""
        # Per node group: (GPUs, half-units, share of the layers, takes the stage's role,
        # periods per role, configuration) of every item.
        entries: dict[str, list[tuple[int, int, float, bool, list[np.ndarray], StageConfig]]] = {
            g: [] for g in capacity.items}
        for g, items in capacity.items.items():
            for (size, per_role), c in zip(items, capacity.item_configs[g], strict=True):
                if size <= capacity.budget[g]:
                    entries[g].append((size, 2, 1.0, True, per_role, c))
        for c, per_role in capacity.mixed_configs:
            if any(c.gpus_in(g) > capacity.budget[g] for g in c.groups):
                continue  # (in no plan)
            order = sorted(c.groups, key=lambda g: (c.gpus_in(g), g), reverse=True)
            if len(order) == 1:  # (two replica groups on one node group: one stage there)
                entries[order[0]].append((c.gpus, 2, 1.0, True, per_role, c))
                continue
            for rank, g in enumerate(order):
                entries[g].append((c.gpus_in(g), 1 if rank < 2 else 0, c.gpus_in(g) / c.gpus,
                                   rank == 0, per_role, c))
        self._groups: list[tuple[np.ndarray, np.ndarray, np.ndarray, int, int,
                                 tuple[np.ndarray, np.ndarray, np.ndarray]]] = []
        tails: list[np.ndarray] = []
        for g, kept in entries.items():
            if not kept:
                continue
            budget = capacity.budget[g]
            width = max(max(len(t) for t in e[4]) for e in kept)
            taus = np.full((len(kept), len(ROLES), max(width, 1)), np.inf)
            tail = np.full(taus.shape, np.inf)
            for r, role in enumerate(ROLES):
                widths = [len(e[4][r]) for e in kept]
                pieces = [cache.coefficients(e[5], micro_batch, *role).tail_pieces for e in kept]
                tail[:, r, :] = pieces_max_rows(pieces, widths, width=taus.shape[2],
                                                beyond=np.inf)
                for i, e in enumerate(kept):
                    taus[i, r, : widths[i]] = e[4][r]
            tails.append(tail[np.isfinite(tail)])
            gpus = np.array([e[0] for e in kept], dtype=int)
            unit = math.gcd(*gpus.tolist())
            shape = (np.array([e[1] for e in kept], dtype=int),
                     np.array([e[2] for e in kept], dtype=float),
                     np.array([e[3] for e in kept], dtype=bool))
            self._groups.append((gpus, taus, tail, budget, unit, shape))
        only_w = max([len(t) for _, t in capacity.only] + [1])
        self._only_tau = np.full((len(capacity.only), only_w), np.inf)
        self._only_tail = np.full(self._only_tau.shape, np.inf)
        only_pieces = [cache.coefficients(c, micro_batch, True, True, False).tail_pieces
                       for c in capacity.only_configs]
        for i, (_, taus_only) in enumerate(capacity.only):
            self._only_tau[i, : len(taus_only)] = taus_only
        if capacity.only:
            self._only_tail[:] = pieces_max_rows(
                only_pieces, [len(t) for _, t in capacity.only], width=only_w, beyond=np.inf)
            tails.append(self._only_tail[np.isfinite(self._only_tail)])
        self.r_values: np.ndarray = np.unique(np.concatenate(tails)) if tails else np.empty(0)
        """Every tail a stage can have, sorted: the candidates for R (a plan's largest tail is
        one of them)."""
        self._memo: dict[tuple[float, float], np.ndarray] = {}
        self._by_values: dict[tuple[bytes, ...], np.ndarray] = {}
        self._tables: dict[tuple[int, bytes], np.ndarray] = {}
        self.tables = 0
        """Node-group tables computed (role_tables, half_unit_tables)."""

    @staticmethod
    def _most(taus: np.ndarray, tails: np.ndarray, t: float, r: float) -> np.ndarray:
        """The most layers n with stage time <= t and tail <= r (0: none), along the last
        axis. The largest qualifying n, not a prefix count: a tail need not grow with n."""
        ok = (taus <= t) & (tails <= r)
        span = ok.shape[-1]
        return np.where(ok.any(axis=-1), span - np.argmax(ok[..., ::-1], axis=-1),
                        0).astype(np.int64)

    def capacity(self, t: float, r: float) -> np.ndarray:
        """Most layers of at most k stages (k = 0..p_max; exactly one first and one last for
        k >= 2, entry 1 the only stage) with stage times <= t and tails <= r.

        Cached three ways, as the walks of a micro-batch size's sub-problems ask the same
        questions in other words: by (t, r); r taken down to the largest candidate tail not
        above it (the same items qualify); and each node group's table by the layers its items
        hold, which many (t, r) share."""
        need = self.p_max  # (tables for a few stages only were rebuilt too often to pay)
        at = int(np.searchsorted(self.r_values, r * (1 + 1e-12), side="right")) - 1
        r = float(self.r_values[at]) if at >= 0 else -math.inf
        key = (t, r)
        hit = self._memo.get(key)
        if hit is not None and len(hit) > need:
            return hit
        check_deadline()
        t, r = t * (1 + 1e-12), r * (1 + 1e-12)
        keys = [self._most(taus, tails, t, r).tobytes()
                for _, taus, tails, _, _, _ in self._groups]
        joint = tuple(keys)
        out = self._by_values.get(joint)
        if out is None or len(out) <= need:
            total: np.ndarray | None = None
            u_max = 2 * need if self.halves else self.p_max
            for g, ((gpus, _, _, budget, unit, shape), held) in enumerate(
                    zip(self._groups, keys, strict=True)):
                best = self._tables.get((g, held))
                if best is None or len(best) <= u_max:
                    best = self._group_table(gpus, shape, np.frombuffer(held, dtype=np.int64)
                                             .reshape(len(gpus), len(ROLES)), budget, unit,
                                             u_max)
                    self._tables[(g, held)] = best
                best = best[: u_max + 1]
                total = best if total is None else _combine(total, best)
            if total is None:
                out = np.full(self.p_max + 1, NEG)
            else:  # (half-units: a stage count k is 2k of them)
                out = total[:: 2 if self.halves else 1, FIRST | LAST][: self.p_max + 1].copy()
            self._by_values[joint] = out
        if len(self._only_tau) and len(out) > 1:
            out = out.copy()
            out[1] = float(self._most(self._only_tau, self._only_tail, t, r).max())
        self._memo[key] = out
        return out

    def _group_table(self, gpus: np.ndarray,
                     shape: tuple[np.ndarray, np.ndarray, np.ndarray], most: np.ndarray,
                     budget: int, unit: int, u_max: int) -> np.ndarray:
        """One node group's table with its items holding `most` layers per role: per GPU count
        (and half-units) only the best item per role matters. In stage counts (role_tables,
        all p_max + 1 of them) without mixed-type configurations, else in half-units up to
        `u_max` (half_unit_tables; a single-type group's stage table, repeated)."""
        self.tables += 1
        halves, share, anchor = shape
        if not self.halves or (halves == 2).all():
            sizes, at = np.unique(gpus, return_inverse=True)
            values = np.zeros((len(sizes), len(ROLES)), dtype=np.int64)
            np.maximum.at(values, at.reshape(-1), most)
            use = values.any(axis=1)
            if not use.any():
                best = np.full((self.p_max + 1, 4), NEG)
                best[:, 0] = 0.0
            else:
                units = sizes[use] // unit
                width = min(budget // unit, self.p_max * int(units.max()))
                best = role_tables(units, values[use], width, self.p_max)
            return best[np.arange(2 * self.p_max + 1) // 2] if self.halves else best
        # A part that does not take its stage's role holds its share of the stage's layers in
        # whatever role the stage has: the most of them, as a middle item.
        part = most * share[:, None]
        held = np.where(anchor[:, None], part,
                        np.stack([part.max(axis=1), np.zeros(len(part)), np.zeros(len(part))],
                                 axis=1))
        kinds, at = np.unique(np.stack([gpus, halves], axis=1), axis=0, return_inverse=True)
        layers = np.zeros((len(kinds), len(ROLES)))
        np.maximum.at(layers, at.reshape(-1), held)
        use = layers.any(axis=1)
        if not use.any():
            best = np.full((u_max + 1, 4), NEG)
            best[:, 0] = 0.0
            return best
        units, kind_halves = kinds[use, 0] // unit, kinds[use, 1]
        width = budget // unit
        if (kind_halves > 0).all():  # (at most u_max items: GPUs beyond cannot be used)
            width = min(width, u_max * int(units.max()))
        return half_unit_tables(units, kind_halves, layers[use], width, u_max)

    def holds_all_layers(self, p: int, t: float, r: float = math.inf) -> bool:
        """Whether some selection of p stages with stage times <= t and tails <= r holds L."""
        return bool(self.capacity(t, r)[min(p, self.p_max)] >= self.L - 1e-9)

    def bottleneck_floor(self, p: int) -> float:
        """The least candidate T at which some selection of p stages holds every layer, tails
        unbounded (inf where none): the floor of Sec. 4.3 by these tables. The search over
        plans with a mixed stage takes it for the granular floor (`SearchState.granular_floor`),
        and the walk of Sec. 4.5 starts there: below it, `holds` is false at every R."""
        if not self.t_values or not self.holds_all_layers(p, self.t_values[-1]):
            return math.inf
        return self.t_values[first_true(lambda i: self.holds_all_layers(p, self.t_values[i]),
                                        0, len(self.t_values) - 1)]


class PositionalBound:
    """T_pos(p): the bottleneck floor that knows where each stage sits in the pipeline (Sec. 4.4).

    The capacity bound above gives every stage the memory of one micro-batch in flight; under 1F1B
    the stage at position i holds min(p - i, m), so on large models the front stages hold far fewer
    layers than it assumes and the fast, roomy devices cannot all sit at the back. Here every
    position keeps its own role and in-flight count, and the GPU budgets are relaxed to their
    linear-programming form: at a bottleneck candidate T,

        max  sum_{k,c} N_{c,k}(T) z_kc
        s.t. sum_c z_kc = mult_k                    (every position class gets its stages)
             sum_{k, c in g} gpus(c) z_kc <= G_g    (GPU budget of node group g)
             z >= 0,  z_kc = 0 where N_{c,k}(T) = 0 (every stage holds at least one layer)

    where a position class k groups the positions with the same role and in-flight count, and
    N_{c,k}(T) is the most layers configuration c holds there with stage time <= T and memory
    within capacity. Any plan with p stages and bottleneck <= T is a feasible integer point, so an
    optimum below L proves the bottleneck exceeds T; the optimum grows with T, and binary search
    over the capacity bound's candidate values gives T_pos(p).
    """

    def __init__(self, instance: Instance, cache: CoefficientCache, micro_batch: int,
                 configs: list[StageConfig], schedule: str, *, require_mixed: bool = False):
        self.instance = instance
        self.require_mixed = require_mixed
        """Only plans with a mixed-type stage count (Sec. 1.1, once the single-type space is
        proven): both LPs get the row sum of z over mixed configurations >= 1."""
        check_deadline()  # (as CapacityBound's)
        self.is_mixed = np.array([c.mixed for c in configs], dtype=bool)
        self.cache = cache
        self.b = micro_batch
        self.configs = configs
        self.schedule = schedule
        self.L = instance.model.num_layers
        self.m = instance.training.global_batch_size // micro_batch
        self.groups = [g.name for g in instance.cluster.node_groups]
        self.budget = np.array([g.num_gpus for g in instance.cluster.node_groups], dtype=float)
        # use[c, g]: GPUs configuration c takes in node group g (two groups for a mixed stage).
        self.use = np.array([[c.gpus_in(g) for g in self.groups] for c in configs],
                            dtype=float).reshape(len(configs), len(self.groups))
        self._rows: dict[tuple[bool, bool, bool], tuple[np.ndarray, np.ndarray]] = {}
        self._tail_values: np.ndarray | None = None
        self._sums: dict[tuple[int, float], float] = {}
        self._hull: dict[tuple[bool, bool, bool], tuple[np.ndarray, np.ndarray]] = {}
        self._lp_solver: Any = None  # one HiGHS object for all its LPs (new_bound_lp_solver)
        self._ip_solver: Any = None  # and one for its integer programs (new_bound_ip_solver)
        self._counts: dict[tuple[tuple[bool, bool, bool], float, str], np.ndarray] = {}
        self._by_role: dict[int, list[tuple[tuple[bool, bool, bool], list[int], np.ndarray,
                                            np.ndarray]]] = {}
        self._faster: dict[tuple[bool, bool, bool],
                           tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        # _leaner[a, b]: a uses no more GPUs than b in every node group (a != b).
        self._leaner = ((self.use[:, None, :] <= self.use[None, :, :]).all(axis=2)
                        & ~np.eye(len(configs), dtype=bool))
        if require_mixed:  # a single-type stage cannot stand in for the required mixed one
            self._leaner &= ~(~self.is_mixed[:, None] & self.is_mixed[None, :])
        # The same relation between the use classes (the distinct GPU-use vectors, single-type
        # and mixed apart: a one-group mixed stage, Sec. 1.1, may use the GPUs a single-type
        # one does): _class_leaner[u, v], u leaner than v, u != v; of two classes of one use
        # vector, only the lower one is leaner (ties: the lower stays, as within a class).
        keyed, use_class = np.unique(np.column_stack([self.use, self.is_mixed]), axis=0,
                                     return_inverse=True)
        uses = keyed[:, :-1]
        self._use_class = use_class.reshape(-1).astype(np.int64)
        class_mixed = keyed[:, -1].astype(bool)
        same_use = (uses[:, None, :] == uses[None, :, :]).all(axis=2)
        order = np.arange(len(uses))
        self._class_leaner = ((uses[:, None, :] <= uses[None, :, :]).all(axis=2)
                              & ~np.eye(len(uses), dtype=bool)
                              & ~(same_use & (order[:, None] > order[None, :])))
        if require_mixed:
            self._class_leaner &= ~(~class_mixed[:, None] & class_mixed[None, :])
        self._mem: dict[tuple[bool, bool, bool, int], np.ndarray] = {}
        self._bilinear: dict[tuple[bool, bool, bool], np.ndarray] = {}
        self._bracket: dict[int, tuple[int, int]] = {}
        self._link_floor: np.ndarray | None = None
        self._sides: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | tuple[()] | None \
            = None  # _link_sides (() where none apply)
        self.link_sides_on = True
        """Whether holds_all_layers also asks the LPs per set of link sides (strong_lower_bound
        walks without them first; either way the answers are valid)."""
        self._grid: list[float] | None = None
        """The candidate bottlenecks of the last bisection (bottleneck_floor, objective_floor:
        the capacity bound's t_values); holds_all_layers asks the LPs per set of link sides
        just below the candidate after its t."""
        self._side_rows: dict[tuple[tuple[bool, bool, bool], str],
                              tuple[np.ndarray, np.ndarray]] = {}
        self._answers: dict[tuple[str, int, float, float], float] = {}
        """The LPs' answers by (program, p, t, r) (`_remembered`): a walk asks many of the
        questions the walks before it on this bound asked."""

    def _remembered(self, program: str, p: int, t: float, r: float,
                    solve: Callable[[int, float, float], float]) -> float:
        """`solve(p, t, r)`, answered once per (program, p, t, r): the programs are fixed by
        this bound's configurations, so an answer never changes. Cleared past ANSWERS_KEPT
        answers (memory: a walk at 16,384 GPUs asks thousands)."""
        key = (program, p, t, r)
        hit = self._answers.get(key)
        if hit is None:
            hit = solve(p, t, r)
            if len(self._answers) >= ANSWERS_KEPT:
                self._answers.clear()
            self._answers[key] = hit
        return hit

    def link_floor(self) -> np.ndarray:
        """pi(c) of every configuration (`link_floors`): the objective's 2 sum_j c_j >=
        sum_i deg_i pi(c_i), deg_i the stage's neighbours (Sec. 4.6)."""
        if self._link_floor is None:
            self._link_floor = link_floors(self.cache, self.configs, self.b, self.groups)
        return self._link_floor

    def _classes(self, p: int) -> list[tuple[tuple[bool, bool, bool], int, int]]:
        """(role, in-flight, multiplicity) of the positions of a p-stage pipeline."""
        counts: dict[tuple[tuple[bool, bool, bool], int], int] = {}
        for i in range(p):
            role = (i == 0, i == p - 1, p > 1)
            f = self.cache.in_flight(self.schedule, p - 1 - i, p, self.m)
            counts[(role, f)] = counts.get((role, f), 0) + 1
        return [(role, f, k) for (role, f), k in counts.items()]

    def _merged(self, p: int, t: float, r: float) -> list[
            tuple[tuple[bool, bool, bool], tuple[int, ...], int, tuple[np.ndarray, np.ndarray]]]:
        """The position classes of a p-stage pipeline with their layer ranges at (t, r), classes
        of one role whose ranges coincide merged into one (their in-flight counts no longer
        matter: memory does not bind there), which keeps the LPs small on long pipelines. Each
        entry: role, the in-flight counts it merges, its multiplicity, (most, fewest)."""
        out: list[tuple[tuple[bool, bool, bool], tuple[int, ...], int,
                        tuple[np.ndarray, np.ndarray]]] = []
        for role, flights, mults, room in self._role_classes(p):
            most, fewest = self._layers(room, self._layer_table(role, t, r))
            merged: dict[bytes, int] = {}  # row of (most, fewest) -> index in out
            for k in range(len(flights)):
                key = most[k].tobytes() + fewest[k].tobytes()
                at = merged.get(key)
                if at is None:
                    merged[key] = len(out)
                    out.append((role, (flights[k],), int(mults[k]), (most[k], fewest[k])))
                else:
                    hit = out[at]
                    out[at] = (hit[0], (*hit[1], flights[k]), hit[2] + int(mults[k]), hit[3])
        return out

    def _role_classes(self, p: int) -> list[
            tuple[tuple[bool, bool, bool], list[int], np.ndarray, np.ndarray]]:
        """The position classes of a p-stage pipeline grouped by role (in pipeline order): the
        role, its classes' in-flight counts and multiplicities, and the layers each
        configuration's memory allows at each (rows: classes)."""
        hit = self._by_role.get(p)
        if hit is None:
            roles: dict[tuple[bool, bool, bool], list[tuple[int, int]]] = {}
            for role, f, mult in self._classes(p):
                roles.setdefault(role, []).append((f, mult))
            hit = []
            for role, items in roles.items():
                flights = [f for f, _ in items]
                room = np.stack([self._room(role, f) for f in flights])
                hit.append((role, flights, np.array([k for _, k in items]), room))
            self._by_role[p] = hit
        return hit

    def _undominated_by_room(self, most: np.ndarray, fewest: np.ndarray) -> np.ndarray:
        """Configurations usable at a position that no other one dominates for the capacity LP:
        no more GPUs in any node group, room for no fewer layers, needing no more (ties: the
        lower index stays). Dropping them leaves the LP's optimum unchanged.

        Computed per use class (configurations with the same GPUs in every group): its Pareto
        front in (most, fewest) by one sort, then the fronts against each other through
        _class_leaner; the same set as the pairwise test, without a configurations-squared
        matrix per call."""
        idx = np.nonzero(most >= 1)[0]
        if len(idx) == 0:
            return idx
        cls = self._use_class[idx]
        order = np.lexsort((idx, fewest[idx], -most[idx], cls))
        idx, cls = idx[order], cls[order]
        # Within a class (most descending), a configuration is on the front iff it needs
        # strictly fewer layers than every one before it. The shift makes the values fall at each
        # new class, so one running minimum restarts there.
        shifted = fewest[idx].astype(np.int64) - cls * (self.L + 2)
        before = np.minimum.accumulate(np.concatenate([[np.iinfo(np.int64).max], shifted[:-1]]))
        front = idx[shifted < before]
        fc = self._use_class[front]
        beats = (self._class_leaner[fc[:, None], fc[None, :]]
                 & (most[front][:, None] >= most[front][None, :])
                 & (fewest[front][:, None] <= fewest[front][None, :]))
        return np.sort(front[~beats.any(axis=0)])

    def _undominated_at(self, role: tuple[bool, bool, bool], most: np.ndarray) -> np.ndarray:
        """Configurations usable at a position (most >= 1) that no other usable one dominates
        for S: same node group, no more GPUs, room for no fewer layers, stage time no larger at
        any layer count, and where the stage has links no slower least link side (ties: the
        lower index stays). Dropping them leaves S unchanged: any LP solution moves a dominated
        configuration's share onto its dominator."""
        pairs = self._faster.get(role)
        if pairs is None:  # (a, b): _leaner[a, b] and a's stage time <= b's on [1, L]
            L = self.L
            pieces = [self.cache.coefficients(c, self.b, *role).tau_pieces
                      for c in self.configs]
            first, second = np.nonzero(self._leaner)
            # Necessary for pieces_below: no slower at 1 and at L layers (the maxima of the
            # pieces); it turns most pairs away before the exact test, which costs pieces^2.
            ends = pieces_max_rows(pieces, [L] * len(pieces))[:, [0, L - 1]]
            ends = ends.reshape(len(pieces), 2)
            maybe = ((ends[first, 0] <= ends[second, 0] + 1e-15)
                     & (ends[first, 1] <= ends[second, 1] + 1e-15))
            if _links_of(role):  # and no slower link side (stage_sum_floor charges it)
                pi = self.link_floor()
                maybe &= pi[first] <= pi[second]
            first, second = first[maybe], second[maybe]
            exact = pieces_below_pairs(pieces, first, second, L)
            first, second = first[exact], second[exact]
            # Kept as a list of pairs (a few per configuration, where a matrix per call would
            # cost configurations squared: thousands with mixed stages), each with whether its
            # reverse is a pair too.
            n = len(self.configs)
            codes = first.astype(np.int64) * n + second
            mutual = np.isin(second.astype(np.int64) * n + first, codes) & (first > second)
            pairs = (first, second, mutual)
            self._faster[role] = pairs
        first, second, mutual = pairs
        usable = most >= 1
        # a beats b where a holds no fewer layers; of two that beat each other (equal rooms),
        # the lower index stays.
        beats = (usable[first] & usable[second] & (most[first] >= most[second])
                 & ~(mutual & (most[first] == most[second])))
        dominated = np.zeros(len(most), dtype=bool)
        dominated[second[beats]] = True
        return np.nonzero(usable & ~dominated)[0]

    def _matrices(self, role: tuple[bool, bool, bool],
                  variant: str = "any") -> tuple[np.ndarray, np.ndarray]:
        """Stage time (running max) and tail of every configuration at n = 1..W layers, one row
        per configuration, inf beyond what fits with one micro-batch in flight. The stage time
        charges the links of the `variant` (Sec. 4.4, *Link sides*): "any", each link at its
        least side time towards any neighbour (link_floor); "inner", every neighbour on the
        stage's own side; "edge", at least one neighbour on another side."""
        if variant != "any":
            return self._side_matrices(role, variant)
        hit = self._rows.get(role)
        if hit is None:
            taus = self.cache.stage_times_many(self.configs, self.b, *role)
            widths = [len(r) for r in taus]
            width = max([*widths, 1])
            tau_m = np.full((len(taus), width), np.inf)
            for k, r in enumerate(taus):
                tau_m[k, : len(r)] = r
            if self.instance.training.blocks_p2p(self.schedule) and _links_of(role):
                # A stage's period with blocking sends is tau_i + c_{i-1} + c_i (Sec. 4.3).
                tau_m += _links_of(role) * self.link_floor()[:, None]
            elif _links_of(role):  # overlapped sends: T >= 2 c_j >= 2 pi(c) (Sec. 4.3)
                tau_m = np.maximum(tau_m, 2.0 * self.link_floor()[:, None])
            tail_m = pieces_max_rows([self.cache.coefficients(c, self.b, *role).tail_pieces
                                      for c in self.configs], widths, width=width,
                                     beyond=np.inf)
            hit = (tau_m, tail_m)
            self._rows[role] = hit
        return hit

    def _room(self, role: tuple[bool, bool, bool], in_flight: int) -> np.ndarray:
        """Layers each configuration's memory allows at a position (CoefficientCache.max_layers),
        for all configurations at once from the bilinear memory form (Sec. 2), rounded up at
        floating-point ties: a bound may over-estimate room, never under-estimate it. Cached
        per (role, in-flight count)."""
        key = (*role, in_flight)
        hit = self._mem.get(key)
        if hit is not None:
            return hit
        coef = self._bilinear.get(role)
        if coef is None:  # (configs, parts, 4); a padding part (all zero) never binds
            forms = [self.cache.memory_bilinear(c, self.b, *role) for c in self.configs]
            width = max([len(f) for f in forms] + [1])
            coef = np.zeros((len(forms), width, 4))
            for k, f in enumerate(forms):
                coef[k, : len(f)] = f
            self._bilinear[role] = coef
        a, b, c, d = (coef[:, :, i] for i in range(4))
        flight = float(in_flight)
        one = a + b + c * flight + d * flight
        slope = b + d * flight
        with np.errstate(divide="ignore", invalid="ignore"):
            most = np.where(slope > 0, np.floor((1 - a - c * flight) / slope + 1e-9), np.inf)
        most = np.where(one > 1 + 1e-9, 0.0, most)
        hit = np.clip(most.min(axis=1), 0, self.L).astype(int)
        self._mem[key] = hit
        return hit

    def _layer_table(self, role: tuple[bool, bool, bool], t: float,
                     r: float, variant: str = "any") -> tuple[np.ndarray, np.ndarray]:
        """What every position of one role shares at (t, r), whatever its micro-batches in
        flight: per configuration and layer count n, the largest n' <= n whose stage time is
        <= t and tail <= r (-1: none), and the smallest such n' at all (width: none); 0-based.
        With r = inf the qualifying counts are a prefix, and the table is their number per
        configuration (cached per (role, t): the bisections probe the same t for many p) and an
        empty array. `variant`: which links the stage time charges (_matrices)."""
        tau_m, tail_m = self._matrices(role, variant)
        width = tau_m.shape[1]
        if math.isinf(r):  # rows do not decrease
            counts = self._counts.get((role, t, variant))
            if counts is None:
                counts = (tau_m <= t).sum(axis=1)
                self._counts[(role, t, variant)] = counts
            return counts, np.empty(0)
        ok = (tau_m <= t) & (tail_m <= r)
        index = np.arange(width)[None, :]
        last = np.maximum.accumulate(np.where(ok, index, -1), axis=1)
        first = np.where(ok.any(axis=1), np.argmax(ok, axis=1), width)
        return last, first

    @staticmethod
    def _layers(room: np.ndarray, table: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray,
                                                                              np.ndarray]:
        """(most, fewest) layers each configuration (columns) may hold at each position class of
        one role (rows, whose memory allows `room` layers) with stage time <= t, tail <= r and
        memory within capacity (0, 0 where no count qualifies), from the role's _layer_table at
        (t, r)."""
        last, first = table
        if last.ndim == 1:  # r = inf: the counts of the prefix
            most = np.minimum(last[None, :], room)
            return most, np.minimum(most, 1)
        top = np.minimum(room, last.shape[1]) - 1  # largest 0-based count memory allows
        columns = np.arange(room.shape[1])[None, :]
        most = np.where(top >= 0, last[columns, np.maximum(top, 0)] + 1, 0)
        fewest = np.where(most > 0, first[None, :] + 1, 0)
        return most, fewest

    def capacity(self, p: int, t: float, r: float = math.inf) -> float:
        """The LP optimum above (-inf when some position class has no configuration at all).

        With a finite tail threshold `r` (Sec. 4.5) a configuration may only take layer counts
        whose tail is <= r as well, and the fewest layers the chosen stages must hold may not
        exceed L (a further valid row)."""
        return self._remembered("capacity", p, t, r, self._capacity)

    def _capacity(self, p: int, t: float, r: float) -> float:
        """capacity, solved."""
        columns = self._capacity_columns(p, t, r)
        if columns is None:
            return -math.inf
        merged, col_class, col_cfg, most, fewest = columns
        status, value = self._assignment_lp(
            [mult for _, _, mult, _ in merged], col_class, col_cfg, fewest, -most,
            layers_lo=-math.inf, layers_hi=float(self.L))
        if status == "infeasible":
            return -math.inf
        if status != "optimal":
            return math.inf  # no proof either way: claim nothing
        return -value

    def _capacity_columns(self, p: int, t: float, r: float) -> tuple[
            list[tuple[tuple[bool, bool, bool], tuple[int, ...], int,
                       tuple[np.ndarray, np.ndarray]]],
            np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """The columns of the capacity programs at (t, r), LP and integer alike: the merged
        position classes (_merged), and per undominated configuration of each class its class,
        configuration index, and the most and fewest layers it holds there. None where some
        class has no configuration at all."""
        t = t * (1 + 1e-12)
        r = r * (1 + 1e-12)
        merged = self._merged(p, t, r)
        cols_most: list[float] = []
        cols_low: list[float] = []
        cols_class: list[int] = []
        cols_cfg: list[int] = []
        for k, (_, _, _, (most, fewest)) in enumerate(merged):
            usable = self._undominated_by_room(most, fewest)  # (keeps an integer optimum too)
            if len(usable) == 0:
                return None
            cols_most.extend(most[usable].tolist())
            cols_low.extend(fewest[usable].tolist())
            cols_class.extend([k] * len(usable))
            cols_cfg.extend(usable.tolist())
        return (merged, np.array(cols_class, dtype=int), np.array(cols_cfg, dtype=int),
                np.array(cols_most, dtype=float), np.array(cols_low, dtype=float))

    def holds_all_layers(self, p: int, t: float, r: float = math.inf) -> bool:
        """Whether some p-stage plan with bottleneck <= t and tail <= r may hold every layer:
        the capacity LP holds L, and so does the LP of some set of link sides the plan may use
        (_holds_on_some_sides, Sec. 4.4 *Link sides*)."""
        if self.capacity(p, t, r) < self.L - 1e-6:
            return False
        if p == 1 or not self.link_sides_on or self._grid is None or self._link_sides() is None:
            return True
        # The callers' bisections treat a candidate t as every bottleneck up to the next one
        # (the capacity LP does not change in between); the LPs per set of sides do, so they are
        # asked just below the next candidate.
        at = bisect.bisect_right(self._grid, t * (1 + 1e-12))
        if at >= len(self._grid):
            return True
        return bool(self._remembered("sides", p, self._grid[at] * (1 - 1e-9), r,
                                     self._holds_on_some_sides))

    def _link_sides(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """link_sides of this bound's configurations (cached; None where they do not apply)."""
        if self._sides is None:
            self._sides = link_sides(self.cache, self.configs, self.b) or ()
        return self._sides or None

    def _side_matrices(self, role: tuple[bool, bool, bool],
                       variant: str) -> tuple[np.ndarray, np.ndarray]:
        """_matrices for the "inner" and "edge" variants: the stage time without links, plus
        (blocking sends: tau + c_{i-1} + c_i) or at least (overlapped: T >= 2 c_j) the links of
        a stage whose neighbours are all on its side (inner), or one of them on another side
        (edge: that link at least edge(c), any other at least any(c))."""
        key = (role, variant)
        hit = self._side_rows.get(key)
        if hit is None:
            sides = self._link_sides()
            assert sides is not None
            taus = self.cache.stage_times_many(self.configs, self.b, *role)
            tau_m, tail_m = self._matrices(role)
            bare = np.full(tau_m.shape, np.inf)
            for k, row in enumerate(taus):
                bare[k, : len(row)] = row
            bare = side_stage_times(bare, role, variant, sides,
                                    self.instance.training.blocks_p2p(self.schedule))
            hit = (bare, tail_m)
            self._side_rows[key] = hit
        return hit

    def _holds_on_some_sides(self, p: int, t: float, r: float) -> bool:
        """Sec. 4.4 *Link sides*: whether, for some non-empty set S of link sides, the capacity
        LP of the plans whose stages use exactly the sides of S holds every layer. Such a plan's
        stages are on S's sides only; with one side, every link is inner; with two or more,
        every side of S has a stage next to a stage of another side (an edge stage), and every
        other stage has inner links only. So each stage is a column of its variant (inner or
        edge), and each side of S gets the row: its edge columns >= 1."""
        sides = self._link_sides()
        assert sides is not None
        side = sides[0]
        t = t * (1 + 1e-12)
        r = r * (1 + 1e-12)
        classes = self._merged_sides(p, t, r)
        if classes is None:
            return False
        mult = [count for count, _ in classes]
        cols: list[tuple[int, int, int, float, float]] = []  # class, config, edge, most, fewest
        n_sides = int(side.max()) + 1
        for k, (_, per_variant) in enumerate(classes):
            for edge, (most, fewest) in enumerate(per_variant):
                # Dominance side by side: a mixed configuration's dominator may be on another
                # side (a single-type one using fewer GPUs), absent from some sets S.
                for g in range(n_sides):
                    usable = self._undominated_by_room(np.where(side == g, most, 0), fewest)
                    cols.extend((k, int(j), edge, float(most[j]), float(fewest[j]))
                                for j in usable)
        if not cols:
            return False
        arr = np.array(cols, dtype=float)
        col_class, col_cfg = arr[:, 0].astype(int), arr[:, 1].astype(int)
        col_edge, most, fewest = arr[:, 2] > 0, arr[:, 3], arr[:, 4]
        col_side = side[col_cfg]
        subsets = sorted((s for size in range(1, n_sides + 1)
                          for s in itertools.combinations(range(n_sides), size)),
                         key=lambda s: -len(s))
        for subset in subsets:
            keep = np.isin(col_side, subset)
            if len(subset) == 1:
                keep &= ~col_edge
            if not keep.any():
                continue
            idx = np.nonzero(keep)[0]
            edge_rows = [((col_edge[idx] & (col_side[idx] == g)).astype(float), 1.0,
                          math.inf) for g in subset] if len(subset) > 1 else []
            lower, upper, starts, rows_idx, vals = self._assignment_matrix(
                mult, col_class[idx], col_cfg[idx],
                [(fewest[idx], -math.inf, float(self.L)), *edge_rows])
            if self._lp_solver is None:
                self._lp_solver = new_bound_lp_solver()
            status, value = _solve_lp(lower, upper, -most[idx], starts, rows_idx, vals,
                                      self._lp_solver)
            if status == "unknown" or (status == "optimal" and -value >= self.L - 1e-6):
                return True  # (unknown: no proof either way, claim nothing)
        return False

    def _merged_sides(self, p: int, t: float, r: float) -> list[
            tuple[int, tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]]] \
            | None:
        """The position classes of a p-stage pipeline for _holds_on_some_sides: per class its
        multiplicity and (most, fewest) of the inner and of the edge variant at (t, r), classes
        of one role whose four rows coincide merged (as _merged). None where a class has no
        configuration in either variant."""
        out: list[tuple[int, tuple[tuple[np.ndarray, np.ndarray],
                                   tuple[np.ndarray, np.ndarray]]]] = []
        for role, flights, mults, room in self._role_classes(p):
            inner = self._layers(room, self._layer_table(role, t, r, "inner"))
            edge = self._layers(room, self._layer_table(role, t, r, "edge"))
            merged: dict[bytes, int] = {}
            for k in range(len(flights)):
                rows = ((inner[0][k], inner[1][k]), (edge[0][k], edge[1][k]))
                if not (rows[0][0] >= 1).any() and not (rows[1][0] >= 1).any():
                    return None
                key = b"".join(a.tobytes() for pair in rows for a in pair)
                at = merged.get(key)
                if at is None:
                    merged[key] = len(out)
                    out.append((int(mults[k]), rows))
                else:
                    out[at] = (out[at][0] + int(mults[k]), out[at][1])
        return out

    def integer_sequence(self, p: int, t: float, r: float = math.inf, *,
                         most_layers: bool = True) -> list[StageConfig] | None:
        """A p-stage sequence of configurations (pipeline order) that the capacity model with
        integer stage counts admits at (t, r): every position class gets its stages, the GPU
        budgets hold, and the layers fit between what the chosen stages hold at the least and
        at the most (Sec. 4.4 with z integer; the LP drops the second row, which its objective
        stands for). Every plan with bottleneck <= t and tail <= r has such a sequence, so this
        is the exact question the LP relaxes; the sequence still needs its layer split, which the
        caller finds (a seed, proving nothing). None where there is none, or where the search
        for one stopped at POSITIONAL_IP_NODES. With `most_layers`, the sequence holding the
        most layers at (t, r) (the most slack); without, the first one found (a feasibility
        test)."""
        return self._integer_point(p, t, r, most_layers)[1]

    def _integer_point(self, p: int, t: float, r: float, most_layers: bool) -> tuple[
            str, list[StageConfig] | None]:
        """integer_sequence with the program's status: "optimal" (with the sequence),
        "infeasible" or "unknown" (stopped at its node limit)."""
        columns = self._capacity_columns(p, t, r)
        if columns is None:
            return "infeasible", None
        merged, col_class, col_cfg, most, fewest = columns
        status, counts = self._assignment_ip(
            [mult for _, _, mult, _ in merged], col_class, col_cfg, fewest, most,
            -most if most_layers else np.zeros(len(most)))
        if counts is None:
            return status, None
        # Each merged class's stages, same node group together (cheap links between them), go
        # to its positions in pipeline order.
        stages: list[list[StageConfig]] = [[] for _ in merged]
        for j in np.nonzero(counts)[0]:
            stages[col_class[j]].extend([self.configs[col_cfg[j]]] * int(counts[j]))
        for group in stages:
            group.sort(key=lambda c: (str(c.link_key), -c.gpus))
        where = {(role, f): k for k, (role, flights, _, _) in enumerate(merged) for f in flights}
        sequence: list[StageConfig] = []
        for i in range(p):
            role = (i == 0, i == p - 1, p > 1)
            f = self.cache.in_flight(self.schedule, p - 1 - i, p, self.m)
            sequence.append(stages[where[(role, f)]].pop(0))
        return status, sequence

    def _assignment_ip(self, mult: list[int], col_class: np.ndarray, col_cfg: np.ndarray,
                       col_fewest: np.ndarray, col_most: np.ndarray,
                       costs: np.ndarray) -> tuple[str, np.ndarray | None]:
        """The integer stage counts per column minimising costs . z with, per position class,
        its columns summing to its multiplicity; the GPU budgets; fewest . z <= L <= most . z;
        with require_mixed, a mixed column. ("optimal", counts), ("infeasible", None), or
        ("unknown", None): not solved within POSITIONAL_IP_NODES branch-and-bound nodes.

        Inside a deadline (`deadline.until`) its time limit is at most the time left, and a
        program the deadline cut short raises DeadlineReached (no answer) rather than answer
        "unknown" (which its callers would read as "may hold", a weaker but different answer
        from the one the same program gives without the deadline)."""
        import highspy

        from haap_solver.search.backends import run_highs

        check_deadline()
        inf = highspy.kHighsInf
        lower, upper, starts, rows_idx, vals = self._assignment_matrix(
            mult, col_class, col_cfg, [(col_fewest, -inf, float(self.L)),
                                       (col_most, float(self.L), inf)])
        if self._ip_solver is None:
            self._ip_solver = new_bound_ip_solver()
        h = self._ip_solver
        _load_nonnegative(h, lower, upper, costs, starts, rows_idx, vals)
        nc = len(costs)
        h.changeColsIntegrality(nc, np.arange(nc, dtype=np.int32),
                                np.full(nc, highspy.HighsVarType.kInteger))
        left = time_left()
        capped = left < POSITIONAL_IP_TIME_S
        # (the option stays on the reused object: set on every call; HiGHS times each run anew)
        h.setOptionValue("time_limit", max(left, 1e-3) if capped else POSITIONAL_IP_TIME_S)
        run_highs(h)
        if capped and h.getModelStatus() == highspy.HighsModelStatus.kTimeLimit:
            raise DeadlineReached
        status = _status_name(h)
        if status != "optimal":
            return status, None
        return status, np.rint(np.array(h.getSolution().col_value)).astype(int)

    def holds_all_layers_integer(self, p: int, t: float, r: float = math.inf) -> bool:
        """holds_all_layers with integer stage counts (integer_sequence): False only where the
        integer program is proven infeasible, so a bound built on it stays valid when the
        program is cut short. On gpt3-175b-4types-x1024, (p, b) = (26, 12), the least tail
        threshold at the positional floor is 0.388 s by the LP and 0.908 s with integers."""
        if not self.holds_all_layers(p, t, r):  # (the LP relaxes it, and costs less)
            return False
        return self._integer_point(p, t, r, most_layers=False)[0] != "infeasible"

    def tail_values(self) -> np.ndarray:
        """Every tail any configuration can have, sorted: the candidates for R."""
        if self._tail_values is None:
            vals = [m[1][np.isfinite(m[1])] for m in
                    (self._matrices(role) for role in (*ROLES, (True, True, False)))]
            self._tail_values = np.unique(np.concatenate(vals))
        return self._tail_values

    def _hull_points(self, role: tuple[bool, bool, bool]) -> tuple[np.ndarray, np.ndarray]:
        """(tau, vertex): every configuration's stage time at n = 1..W layers (inf beyond what
        fits with one micro-batch in flight) and which n may be a vertex of the lower convex hull
        of its integer points (hull_candidates)."""
        hit = self._hull.get(role)
        if hit is None:
            tau_m, _ = self._matrices(role)
            vertex = np.zeros(tau_m.shape, dtype=bool)
            fits = np.isfinite(tau_m).sum(axis=1).tolist()
            pieces = [self.cache.coefficients(c, self.b, *role).tau_pieces
                      for c in self.configs]
            tau = pieces_max_rows(pieces, fits, width=tau_m.shape[1], beyond=np.inf)
            for k, (ps, count) in enumerate(zip(pieces, fits, strict=True)):
                if count:
                    vertex[k, :count] = hull_candidates(ps, count)
            hit = (tau, vertex)
            self._hull[role] = hit
        return hit

    def stage_sum_floor(self, p: int, t: float) -> float:
        """S(T): least sum of stage times and pipeline links (sum_i tau_i + 2 sum_j c_j) over the
        LP relaxation of the plans whose stage times are at most T (Sec. 4.6); 0 when the LP
        cannot be solved (no claim), inf when infeasible.

        A stage of configuration c in class k with n layers is the point (1, n, tau_c(n)); the LP
        takes convex combinations of those points, one weight per vertex of their lower convex
        hull (n integer in [1, N_{c,k}(T)]), and charges each stage deg_k pi(c) for its links
        (link_floor; deg_k its neighbours: 2 in the middle, 1 at an end, 0 alone):

            min  sum_{k,c,n} (tau_c(n) + deg_k pi(c)) l_kcn
            s.t. sum_{c,n} l_kcn = mult_k,   sum_{k,c,n} n l_kcn = L,
                 sum_{k,c,n} gpus_g(c) l_kcn <= G_g,   l >= 0
        """
        key = (p, t)
        hit = self._sums.get(key)
        if hit is not None:
            return hit
        t = t * (1 + 1e-12)
        mult: list[int] = []
        cols_class, cols_cfg, cols_n, cols_cost = [], [], [], []
        for k, (role, _, count, (most, _)) in enumerate(self._merged(p, t, math.inf)):
            mult.append(count)
            usable = self._undominated_at(role, most)
            if len(usable) == 0:
                self._sums[key] = math.inf
                return math.inf
            tau, vertex = self._hull_points(role)
            top = most[usable][:, None] - 1  # index of N_{c,k}(T)
            idx = np.arange(tau.shape[1])[None, :]
            rows, cols = np.nonzero((vertex[usable] & (idx < top)) | (idx == top))
            cols_class.append(np.full(len(rows), k))
            cols_cfg.append(usable[rows])
            cols_n.append(cols + 1.0)
            cost = tau[usable[rows], cols]
            if _links_of(role):
                cost = cost + _links_of(role) * self.link_floor()[usable[rows]]
            cols_cost.append(cost)
        # A lower bound in seconds: solved in units and rounded outwards (lp_minimum_floor).
        status, objective = self._assignment_lp(
            mult, np.concatenate(cols_class), np.concatenate(cols_cfg), np.concatenate(cols_n),
            np.concatenate(cols_cost), layers_lo=float(self.L), layers_hi=float(self.L),
            floor_weight=2 * sum(mult) + self.L + float(np.sum(self.budget)))
        if status == "infeasible":
            value = math.inf
        elif status == "optimal":
            value = max(0.0, objective)
        else:
            value = 0.0  # no proof either way: claim nothing
        self._sums[key] = value
        return value

    def _assignment_matrix(self, mult: list[int], col_class: np.ndarray, col_cfg: np.ndarray,
                           layer_rows: list[tuple[np.ndarray, float, float]]) -> tuple[
            np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The rows both assignment programs share, column-wise: per position class, its
        columns summing to its multiplicity; per node group, the GPUs of the columns'
        configurations within its budget; each (coefficients, lower, upper) of `layer_rows`;
        with require_mixed, at least one mixed column. Returns (row lower, row upper, column
        starts, row indices, values)."""
        import highspy

        nc, n_class, n_groups = len(col_class), len(mult), len(self.groups)
        use = self.use[col_cfg]
        use_col, use_group = np.nonzero(use)
        first_layer_row = n_class + n_groups
        mixed_cols = np.nonzero(self.is_mixed[col_cfg])[0] if self.require_mixed else \
            np.zeros(0, dtype=int)
        rows_idx = np.concatenate([col_class, n_class + use_group,
                                   *(np.full(nc, first_layer_row + k)
                                     for k in range(len(layer_rows))),
                                   np.full(len(mixed_cols), first_layer_row + len(layer_rows))])
        cols_idx = np.concatenate([np.arange(nc), use_col,
                                   *(np.arange(nc) for _ in layer_rows), mixed_cols])
        vals = np.concatenate([np.ones(nc), use[use_col, use_group],
                               *(coefficients for coefficients, _, _ in layer_rows),
                               np.ones(len(mixed_cols))])
        order = np.lexsort((rows_idx, cols_idx))  # column-wise
        rows_idx, cols_idx, vals = rows_idx[order], cols_idx[order], vals[order]
        starts = np.searchsorted(cols_idx, np.arange(nc)).astype(np.int32)
        inf = highspy.kHighsInf
        counts = np.array(mult, dtype=float)
        lower = np.concatenate([counts, np.full(n_groups, -inf),
                                [lo for _, lo, _ in layer_rows]])
        upper = np.concatenate([counts, self.budget, [hi for _, _, hi in layer_rows]])
        if self.require_mixed:
            lower = np.append(lower, 1.0)
            upper = np.append(upper, inf)
        return lower, upper, starts, rows_idx, vals

    def _assignment_lp(self, mult: list[int], col_class: np.ndarray, col_cfg: np.ndarray,
                       col_layers: np.ndarray, costs: np.ndarray, *, layers_lo: float,
                       layers_hi: float, floor_weight: float | None = None) -> tuple[str, float]:
        """min costs . x over x >= 0 with, per position class k, sum of its columns = mult_k;
        per node group, the GPUs of the columns' configurations <= its budget; the columns'
        layers within [layers_lo, layers_hi]; with require_mixed, at least one mixed column.
        With `floor_weight`, the optimum is a lower bound rounded outwards (lp_minimum_floor)."""
        lower, upper, starts, rows_idx, vals = self._assignment_matrix(
            mult, col_class, col_cfg, [(col_layers, layers_lo, layers_hi)])
        if self._lp_solver is None:
            self._lp_solver = new_bound_lp_solver()
        if floor_weight is not None:
            return lp_minimum_floor(lower, upper, costs.astype(float), starts, rows_idx, vals,
                                    self._lp_solver, floor_weight)
        return _solve_lp(lower, upper, costs.astype(float), starts, rows_idx, vals,
                         self._lp_solver)

    def objective_floor(self, p: int, cost_of_interval: Callable[[float, float], float],
                        t_values: list[float], t_floor: float, stop: float = math.inf,
                        max_steps: int = 24, integer: bool = False,
                        also: Callable[[int, float, float], bool] | None = None) -> float:
        """min over T >= t_floor of (a lower bound on the cost without the tail at bottleneck T)
        + R_min(T), where R_min(T) is the least tail threshold at which the LP holds every layer
        with bottleneck T (Sec. 4.5): `tail_walk` with the LP as its question.

        With `integer`, "holds every layer" is asked of the program with integer stage counts
        (holds_all_layers_integer): the same walk, a larger R_min, integer programs instead of
        LPs where the LP holds. `also`, another necessary condition for a plan with bottleneck
        <= T and tail <= R that does not grow harder with T or R (TailCapacity's), is asked
        first: where it fails no LP is solved, and the walk's R_min can only rise."""
        self._grid = t_values
        lp = self.holds_all_layers_integer if integer else self.holds_all_layers
        holds = lp if also is None else (
            lambda q, t, r: also(q, t, r) and lp(q, t, r))  # type: ignore[misc]
        return tail_walk(holds, p, cost_of_interval, t_values, self.tail_values(), t_floor,
                         stop, max_steps)

    def bottleneck_floor(self, p: int, t_values: list[float], start: float = 0.0,
                         stop: float = math.inf) -> float:
        """Smallest candidate T >= `start` at which the LP holds every layer (inf if none).

        Valid when every bottleneck below `start` is already known infeasible (the capacity bound
        says so) and the stage time of every plan is among `t_values` (the capacity bound's
        candidates: every stage time any configuration can take). With a finite `stop` the search
        may end early: when the LP fails at `stop`, the candidate just above `stop` is returned, a
        valid bound that is all a caller pruning at `stop` needs. What each test showed is kept,
        so later calls resume the bisection."""
        self._grid = t_values
        n = len(t_values)
        lo, hi = self._bracket.get(p, (0, n))  # infeasible below lo; feasible at hi (n: unknown)
        lo = max(lo, int(np.searchsorted(t_values, start * (1 - 1e-12), side="left")))
        if lo >= hi:
            return t_values[hi] if hi < n else math.inf
        if math.isfinite(stop):
            s_idx = int(np.searchsorted(t_values, stop * (1 + 1e-12), side="right")) - 1
            if lo <= s_idx < hi:
                if self.holds_all_layers(p, t_values[s_idx]):
                    hi = s_idx
                else:
                    lo = s_idx + 1
                    self._bracket[p] = (lo, hi)
                    return t_values[lo] if lo < n else math.inf
            elif s_idx < lo:
                self._bracket[p] = (lo, hi)
                return t_values[lo]
        if hi == n:  # gallop up from lo (the answer is usually close), then bisect
            step, probe = 1, lo
            while not self.holds_all_layers(p, t_values[probe]):
                lo = probe + 1
                if probe == n - 1:
                    self._bracket[p] = (n, n)
                    return math.inf
                probe = min(probe + step, n - 1)
                step *= 2
            hi = probe
        lo = hi = first_true(lambda i: self.holds_all_layers(p, t_values[i]), lo, hi)
        self._bracket[p] = (lo, hi)
        return t_values[lo]


def cannot_beat(holds: Callable[[int, float, float], bool], p: int,
                cost_of_interval: Callable[[float, float], float], t_values: list[float],
                t_idx: int, stop: float, depth: int = 4) -> bool:
    """A prune test cheaper than the walk: with t_top the largest candidate whose cost alone
    stays below `stop`, a plan beating `stop` has T in some interval [a, b] of
    [t_floor, t_top] and a tail below r* = stop - cost_of_interval(a, b); if `holds` fails at
    (b, r*), no plan of that interval beats `stop` (R_min does not grow with T). Intervals that
    pass are halved, `depth` times at most."""
    if cost_of_interval(t_values[t_idx], math.inf) >= stop:
        return True
    todo = [(t_idx, _last_below(cost_of_interval, t_values, t_idx, stop), 0)]
    while todo:
        a, b, level = todo.pop()
        r_star = stop - cost_of_interval(t_values[a], t_values[b])
        if r_star < 0 or not holds(p, t_values[b], r_star):
            continue  # no plan with T in [t_a, t_b] beats stop
        if level >= depth or a == b:
            return False
        mid = (a + b) // 2
        todo.append((mid + 1, b, level + 1))
        todo.append((a, mid, level + 1))
    return True


def tail_walk(holds: Callable[[int, float, float], bool], p: int,
              cost_of_interval: Callable[[float, float], float], t_values: list[float],
              r_values: np.ndarray, t_floor: float, stop: float = math.inf,
              max_steps: int = 24) -> float:
    """min over T >= t_floor of (a lower bound on the cost without the tail at bottleneck T)
    + R_min(T), where R_min(T) is the least tail threshold (among the sorted candidates
    `r_values`) at which `holds(p, T, R)` (some p-stage plan with bottleneck <= T and tail <= R
    may hold every layer) is true (Sec. 4.5). `holds` must not turn false as T or R grow.

    `cost_of_interval(a, b)` bounds that cost for every T in [a, b] (b = inf: any T >= a) and
    must not decrease in `a` nor increase in `b`. R_min does not grow with T, so the walk goes
    up its steps from t_floor, alternating a bisection for R_min(T) with one for the next T
    where it drops, and ends once the cost reaches the best value found or `stop` (nothing
    further can be lower, or matter). With a finite `stop`, `cannot_beat` first."""
    if len(r_values) == 0 or not math.isfinite(t_floor):
        return cost_of_interval(t_floor, math.inf)
    n_t = len(t_values)
    t_idx = int(np.searchsorted(t_values, t_floor * (1 - 1e-12), side="left"))
    if t_idx >= n_t:
        return cost_of_interval(t_floor, math.inf)
    if math.isfinite(stop) and cannot_beat(holds, p, cost_of_interval, t_values, t_idx, stop):
        return stop
    best = math.inf
    r_known = len(r_values) - 1  # `holds` is known true at (t, r_values[r_known])
    for _ in range(max_steps):
        t = t_values[t_idx]
        base = cost_of_interval(t, math.inf)
        if base >= min(best, stop):
            return min(best, base + float(r_values[0]))
        if r_known == len(r_values) - 1 and not holds(p, t, r_values[-1]):
            return min(best, base + float(r_values[0]))  # (not at or above the floor)
        lo = first_true(lambda i, t=t: holds(  # type: ignore[misc]
            p, t, float(r_values[i])), 0, r_known)
        r_here = float(r_values[lo])
        if lo == 0:
            return min(best, base + r_here)
        # Next T at which R_min drops below r_here: only T whose cost can still be below
        # `best` and `stop` matter.
        r_below = r_values[lo - 1]
        limit = min(best, stop)
        top = _last_below(cost_of_interval, t_values, t_idx, limit)
        if top <= t_idx or not holds(p, t_values[top], r_below):
            # R_min stays r_here up to `top`; beyond, the cost alone reaches the limit.
            return min(limit, cost_of_interval(t, t_values[top]) + r_here)
        a = first_true(lambda i, r=r_below: holds(  # type: ignore[misc]
            p, t_values[i], float(r)), t_idx + 1, top)
        best = min(best, cost_of_interval(t, t_values[a - 1]) + r_here)
        t_idx = a
        r_known = lo - 1  # the bisection ended where `holds` is true at r_below
    # Out of steps. The T from here on whose cost alone stays below the limit end at `top`;
    # their tail is at least R_min there (R_min does not grow with T), and every larger T
    # costs the limit alone (before 2026-12-02: the smallest tail of any configuration,
    # which the finer steps of the LPs per set of link sides, Sec. 4.4, reached often).
    limit = min(best, stop)
    t = t_values[t_idx]
    base = cost_of_interval(t, math.inf)
    if base >= limit:
        return min(best, base + float(r_values[0]))
    top = _last_below(cost_of_interval, t_values, t_idx, limit)
    r_top = float(r_values[first_true(lambda i: holds(p, t_values[top], float(r_values[i])),
                                      0, r_known)])
    return min(limit, cost_of_interval(t, t_values[top]) + r_top)


def tail_staircase(holds: Callable[[int, float, float], bool], p: int, t_values: list[float],
                   r_values: np.ndarray, t_floor: float, t_cap: float,
                   max_steps: int = 48) -> list[tuple[float, float]]:
    """The corners (T_k, R_k) of R_min(T), the least tail threshold at which `holds(p, T, R)`
    is true (Sec. 4.5), walked up from `t_floor` to the candidate at or below `t_cap`: every
    plan with bottleneck T <= t_cap (a candidate stands for every T up to the next one) and
    tail R lies in the union of the quadrants {T >= T_k, R >= R_k}. `t_cap` must bound the
    bottleneck of every plan that matters (the stage-time cap of Sec. 4.2 under the model's
    cutoff, inf without one). Where `max_steps` ends the walk before t_cap, the union is
    closed by (T, r_values[0]) at the candidate where R_min drops to what is not known
    (r_values[0], the least tail of any configuration, bounds every tail). Empty where `holds`
    is false at every R up to `t_cap`. `holds` must not turn false as T or R grow (as for
    `tail_walk`)."""
    n_t = len(t_values)
    if len(r_values) == 0 or n_t == 0 or not math.isfinite(t_floor):
        return []
    t_idx = int(np.searchsorted(t_values, t_floor * (1 - 1e-12), side="left"))
    top = int(np.searchsorted(t_values, t_cap * (1 + 1e-12), side="right")) - 1
    if t_idx > top or not holds(p, t_values[top], float(r_values[-1])):
        return []
    if not holds(p, t_values[t_idx], float(r_values[-1])):
        t_idx = first_true(lambda i: holds(p, t_values[i], float(r_values[-1])), t_idx, top)
    corners: list[tuple[float, float]] = []
    r_known = len(r_values) - 1  # `holds` is known true at (t_values[t_idx], r_values[r_known])
    for _ in range(max_steps):
        t = t_values[t_idx]
        lo = first_true(lambda i, t=t: holds(  # type: ignore[misc]
            p, t, float(r_values[i])), 0, r_known)
        corners.append((t, float(r_values[lo])))
        if lo == 0:
            return corners  # (the least tail of any configuration: no lower step)
        below = float(r_values[lo - 1])
        if t_idx == top or not holds(p, t_values[top], below):
            break  # R_min stays R_k up to t_cap
        t_idx = first_true(lambda i, r=below: holds(  # type: ignore[misc]
            p, t_values[i], r), t_idx + 1, top)
        r_known = lo - 1
    else:
        # Out of steps: R_min is known to be the last corner's up to the candidate before
        # t_idx, where it drops (to what is not known).
        corners.append((t_values[t_idx], float(r_values[0])))
    return corners


class StaircaseEdge(NamedTuple):
    """An edge of the lower convex hull of `tail_staircase`'s corners: from the corner
    (t, r) rightwards with `slope` (the tail falls by `slope` per second of bottleneck);
    `steeper` is the slope of the edge before it (inf for the first). Any line through (t, r)
    with a slope in [slope, steeper] lies below every corner: a valid cut with that slope."""

    t: float
    r: float
    slope: float
    steeper: float


def staircase_cuts(corners: list[tuple[float, float]]) -> list[StaircaseEdge]:
    """The edges of the lower convex hull of the corners of `tail_staircase` (slopes >= 0, as
    R_min does not grow with T), and its closing ray at the last corner (slope 0: no corner's
    tail is below the last one's). Each gives the inequality `tail >= r - slope (T - t)`,
    valid on the union of the quadrants {T >= T_k, tail >= R_k} given that no plan has T below
    the first corner's (its line supports the hull). A corner on or above the edge between its
    neighbours is left out."""
    hull: list[tuple[float, float]] = []
    for t, r in corners:
        while len(hull) >= 2:
            (t1, r1), (t2, r2) = hull[-2], hull[-1]
            # Drop the middle corner where it lies on or above the edge from t1 to t.
            if (t2 - t1) * (r - r1) - (r2 - r1) * (t - t1) <= 0.0:
                hull.pop()
            else:
                break
        hull.append((t, r))
    edges = []
    steeper = math.inf
    for (t1, r1), (t2, r2) in itertools.pairwise(hull):
        if t2 <= t1 or r2 >= r1:
            continue
        slope = (r1 - r2) / (t2 - t1)
        edges.append(StaircaseEdge(t1, r1, slope, steeper))
        steeper = slope
    if hull and hull[-1][1] > 0.0:
        edges.append(StaircaseEdge(hull[-1][0], hull[-1][1], 0.0, steeper))
    return edges


def link_floors(cache: CoefficientCache, configs: list[StageConfig], micro_batch: int,
                groups: Iterable[str]) -> np.ndarray:
    """pi(c): the least point-to-point side time of each configuration c towards any neighbour
    (any node group, or the node-group set of any mixed candidate among `configs`). A pipeline
    link c_j is at least either side's time, so c_j >= pi of each stage it joins: a stage with
    deg neighbours sends and receives for at least deg pi(c) per micro-batch (its period with
    blocking sends is at least tau_c(n) + deg pi(c); the fill's 2 sum_j c_j at least
    sum_i deg_i pi(c_i))."""
    sides = sorted({*groups, *(c.link_key for c in configs)}, key=str)
    return np.array([min(cache.p2p_side(c, micro_batch, h) for h in sides) for c in configs],
                    dtype=float).reshape(len(configs))


def link_sides(cache: CoefficientCache, configs: list[StageConfig],
               micro_batch: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """The link sides of Sec. 4.4 *Link sides*, where they apply (two to MAX_LINK_SIDES link
    keys, a mixed configuration's being its node-group set; else None): per configuration its
    side (index into the link keys sorted by name), and its least time of a link to a neighbour
    on its own side (inner), on another side (edge), and on any side (the smaller of the two).

    A link between c on side g and c' on side h is at least max(P(c, h), P(c', g)) (Sec. 5,
    (8)), so at least Q[c, h] = max(P(c, h), min over the configurations c'' of side h of
    P(c'', g)): inner(c) = Q[c, g], edge(c) = min over h != g of Q[c, h]."""
    keys = sorted({c.link_key for c in configs}, key=str)
    if not 2 <= len(keys) <= MAX_LINK_SIDES:
        return None
    side, _, q = link_matrices(cache, configs, micro_batch, keys)
    own = np.zeros(q.shape, dtype=bool)
    own[np.arange(len(side)), side] = True
    inner = q[own]
    edge = np.where(own, np.inf, q).min(axis=1)
    return side, inner, edge, np.minimum(inner, edge)


def link_matrices(cache: CoefficientCache, configs: list[StageConfig], micro_batch: int,
                  keys: list[str | tuple[str, ...]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(side, p2p, q) over the link sides `keys` (node groups, or mixed stages' node-group
    sets): per configuration the index of its own link key among them (-1: none of them), its
    side time towards each, P[c, h], and Q[c, h] = max(P(c, h), min over the configurations c''
    of side h of P(c'', side of c)), at least any link between c and a stage on side h (Sec.
    4.4 *Link sides*; inf towards a side no configuration is on)."""
    where = {key: k for k, key in enumerate(keys)}
    side = np.array([where.get(c.link_key, -1) for c in configs], dtype=int)
    p2p = np.array([[cache.p2p_side(c, micro_batch, h) for h in keys] for c in configs],
                   dtype=float).reshape(len(configs), len(keys))
    # towards[h, g]: the least side time of a configuration of side h towards side g.
    towards = np.full((len(keys), len(keys)), np.inf)
    for h in range(len(keys)):
        on_h = side == h
        if on_h.any():
            towards[h] = p2p[on_h].min(axis=0)
    q = np.maximum(p2p, towards[:, np.maximum(side, 0)].T)
    return side, p2p, q


def side_stage_times(bare: np.ndarray, role: tuple[bool, bool, bool], variant: str,
                     sides: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                     blocking: bool) -> np.ndarray:
    """Stage times `bare` (rows: configurations; no links) with the links of a stage in `role`
    whose neighbours are all on its side ("inner") or one of them on another side ("edge":
    that link at least edge(c), any other at least the least of inner and edge): added (blocking
    sends, tau + c_{i-1} + c_i) or as a floor (overlapped, T >= 2 c_j). Sec. 4.4 *Link sides*."""
    _, inner, edge, anyside = sides
    deg = _links_of(role)
    if deg == 0:
        return bare
    if variant == "inner":
        links = deg * inner if blocking else inner
    else:
        links = edge + (deg - 1) * anyside if blocking else edge
    if blocking:
        return bare + links[:, None]
    return np.maximum(bare, 2.0 * links[:, None])


def _links_of(role: tuple[bool, bool, bool]) -> int:
    """Pipeline links of a stage in `role` (first, last, multi-stage): 2 in the middle, 1 at an
    end, 0 for the only stage."""
    first, last, multi = role
    return 0 if not multi else 2 - first - last


def _last_below(cost_of_interval: Callable[[float, float], float], t_values: list[float],
                start: int, limit: float) -> int:
    """Largest index i >= start whose cost cost_of_interval(t_values[i], inf) is below `limit`
    (the cost does not decrease with T; the cost at `start` is below `limit`)."""
    n = len(t_values)
    first_at_limit = first_true(
        lambda i: i == n or cost_of_interval(t_values[i], math.inf) >= limit, start, n)
    return max(start, first_at_limit - 1)


def first_true(pred: Callable[[int], bool], lo: int, hi: int) -> int:
    """Smallest i in [lo, hi] with pred(i), for a pred that stays true once true and holds at hi
    (hi itself is not tested)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


ANSWERS_KEPT = 200_000
"""The most LP answers a PositionalBound remembers (`_remembered`) before it forgets them all:
a few tens of megabytes."""

MAX_LINK_SIDES = 4
"""The most link sides (node groups) for which the capacity LP is also asked per set of sides
(PositionalBound._holds_on_some_sides: up to 2^sides - 1 more LPs a question)."""


BOUND_LP_PRESOLVE = "off"
"""HiGHS presolve for the bound LPs (a few rows, up to thousands of columns): off halves their
time (1,630 LPs of a gpt3-175b-4types-x1024 search: 1.27 s -> 0.68 s, the same statuses,
objectives within 1e-13). Reusing one HiGHS object for them (new_bound_lp_solver) takes that to
0.43 s, with identical results."""


def new_bound_lp_solver() -> Any:
    """A HiGHS object for the bound LPs (one thread, seed 0, BOUND_LP_PRESOLVE), reused across
    calls by `_solve_lp`: building one costs more than solving a small LP."""
    from haap_solver.search.backends import new_highs

    h = new_highs(seed=0)
    h.setOptionValue("presolve", BOUND_LP_PRESOLVE)
    return h


POSITIONAL_IP_NODES = 2000
"""Branch-and-bound nodes an integer capacity program (PositionalBound.integer_sequence) may
take; a deterministic limit (a time limit would make seeds depend on the machine's load). On
gpt3-175b-4types-x1024 they end at the root or within a few dozen nodes."""

POSITIONAL_IP_TIME_S = 2.0
"""A safety net for POSITIONAL_IP_NODES (a node of a large program can take long)."""


def new_bound_ip_solver() -> Any:
    """A HiGHS object for the small integer capacity programs (one thread, seed 0, node limit,
    MIP_PRESOLVE like every MIP of the package), reused across calls."""
    from haap_solver.search.backends import new_highs

    h = new_highs(seed=0, time_limit_s=POSITIONAL_IP_TIME_S, mip=True)
    h.setOptionValue("mip_max_nodes", POSITIONAL_IP_NODES)
    h.setOptionValue("mip_rel_gap", 0.0)
    return h


def _solve_lp(row_lo: np.ndarray, row_hi: np.ndarray, costs: np.ndarray, col_starts: np.ndarray,
              row_index: np.ndarray, values: np.ndarray, solver: Any = None) -> tuple[str, float]:
    """Minimise costs . x over x >= 0 with row_lo <= A x <= row_hi, A given column-wise, with
    `solver` (new_bound_lp_solver(); its model is replaced) or a new one. Returns
    ("optimal" | "infeasible" | "unknown", objective)."""

    from haap_solver.search.backends import run_highs

    check_deadline()  # (each LP takes a millisecond or less: the walks of Sec. 4.5 stop here)
    h = new_bound_lp_solver() if solver is None else solver
    _load_nonnegative(h, row_lo, row_hi, costs, col_starts, row_index, values)
    run_highs(h)
    status = _status_name(h)
    if status == "infeasible":
        return status, math.inf
    if status == "optimal":
        return status, float(h.getInfo().objective_function_value)
    return status, math.nan


def lp_minimum_floor(row_lo: np.ndarray, row_hi: np.ndarray, costs: np.ndarray,
                     col_starts: np.ndarray, row_index: np.ndarray, values: np.ndarray,
                     solver: Any, weight: float) -> tuple[str, float]:
    """_solve_lp where its optimum serves as a lower bound (costs in seconds): ("optimal", a
    value at most the LP's minimum), ("infeasible", inf) or ("unknown", nan).

    HiGHS stops once no reduced cost (nor the sign of a row's dual) is wrong by more than its
    dual feasibility tolerance `tol`, absolute in the costs' units; at such a basis, every
    feasible x has costs . x >= objective - tol (sum of x plus the slack x leaves in each
    inequality row). `weight` bounds that sum (the assignment LPs: the stages, twice with the
    mixed row, the layers and the GPU budgets). With costs in seconds, HiGHS called optimal an
    LP value 6% above the minimum at costs of 1e-6 s and 7e-5 above at 1e-4 s (tests/
    test_bounds.py, near-tie LP), so the LP is solved in units of a millionth of its largest
    cost, where the margin is about 1e-13 of that cost per unit of `weight`."""
    top = float(np.max(np.abs(costs))) if len(costs) else 0.0
    unit = top * 1e-6 if top > 0 and math.isfinite(top) else 1.0
    status, objective = _solve_lp(row_lo, row_hi, costs / unit, col_starts, row_index, values,
                                  solver)
    if status != "optimal":
        return status, objective
    tol = float(solver.getOptions().dual_feasibility_tolerance)
    return status, (objective - tol * weight) * unit


def _load_nonnegative(h: Any, row_lo: np.ndarray, row_hi: np.ndarray, costs: np.ndarray,
                      col_starts: np.ndarray, row_index: np.ndarray, values: np.ndarray) -> None:
    """Replace `h`'s model (its options stay; the model, solution and basis go) with
    min costs . x over x >= 0, row_lo <= A x <= row_hi, A given column-wise."""
    import highspy

    h.clearModel()
    empty_i, empty_f = np.array([], dtype=np.int32), np.array([], dtype=np.float64)
    h.addRows(len(row_lo), row_lo.astype(float), row_hi.astype(float), 0, empty_i, empty_i,
              empty_f)
    n = len(costs)
    h.addCols(n, costs.astype(float), np.zeros(n), np.full(n, highspy.kHighsInf), len(values),
              col_starts.astype(np.int32), row_index.astype(np.int32), values.astype(float))


def _status_name(h: Any) -> str:
    """"optimal", "infeasible" or "unknown" (anything else: no proof either way)."""
    import highspy

    status = h.getModelStatus()
    if status == highspy.HighsModelStatus.kInfeasible:
        return "infeasible"
    if status == highspy.HighsModelStatus.kOptimal:
        return "optimal"
    return "unknown"

