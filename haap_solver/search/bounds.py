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

import math

import numpy as np

from haap_solver.instance import Instance
from haap_solver.search.coefficients import CoefficientCache
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
                 configs: list[StageConfig], p_max: int):
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
        values: set[float] = set()
        for c in configs:
            per_role = []
            for first, last, multi in ROLES:
                per_role.append(self._taus(cache, c, micro_batch, first, last, multi))
            self.items[c.node_group].append((c.gpus, per_role))
            self.item_configs[c.node_group].append(c)
            only = self._taus(cache, c, micro_batch, True, True, False)
            self.only.append((c.gpus, only))
            self.only_configs.append(c)
            for taus in (*per_role, only):
                values.update(taus.tolist())
        self.t_values = sorted(values)
        self._cap: dict[int, np.ndarray] = {}

    @staticmethod
    def _taus(cache: CoefficientCache, c: StageConfig, b: int, first: bool, last: bool,
              multi: bool) -> np.ndarray:
        n_max = cache.max_layers(c, b, first, last, multi, 1)
        if n_max < 1:
            return np.zeros(0)
        co = cache.coefficients(c, b, first, last, multi)
        taus = np.array([co.tau(n) for n in range(1, n_max + 1)])
        return np.maximum.accumulate(taus)  # capacity must be monotone in T

    def capacity(self, t_index: int) -> np.ndarray:
        """Most layers placeable by exactly-one-first, exactly-one-last plans of at most k stages
        (k = 0..p_max) at T = t_values[t_index]; entry 1 is the single-stage case."""
        hit = self._cap.get(t_index)
        if hit is not None:
            return hit
        t = self.t_values[t_index] * (1 + 1e-12)
        total: np.ndarray | None = None
        for g, items in self.items.items():
            budget = self.budget[g]
            gains = []
            for gpus, per_role in items:
                if gpus > budget:
                    continue
                n = [int(np.searchsorted(taus, t, side="right")) for taus in per_role]
                if any(n):
                    gains.append((gpus, n))
            best = _group_capacity(gains, budget, self.p_max)
            total = best if total is None else _combine(total, best)
        assert total is not None
        out = total[:, FIRST | LAST].copy()
        out[1] = max([int(np.searchsorted(taus, t, side="right")) for gpus, taus in self.only
                      if len(taus)] or [0])
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
            gains, cfgs = [], []
            for c, (gpus, per_role) in zip(self.item_configs[g], items, strict=True):
                if gpus > budget:
                    continue
                n = [int(np.searchsorted(taus, t, side="right")) for taus in per_role]
                if any(n):
                    gains.append((gpus, n))
                    cfgs.append(c)
            hist, unit = _group_history(gains, budget, p)
            best = hist[:, :, -1].copy() if hist.shape[2] else np.full((p + 1, 4), NEG)
            groups.append((cfgs, gains, unit, hist, best))
            running.append(best if not running else _combine(running[-1], best))
        if not running or running[-1][p, FIRST | LAST] < self.L:
            return None
        out: list[tuple[StageConfig, int, int]] = []
        k, f = p, FIRST | LAST
        for gi in range(len(groups) - 1, -1, -1):
            cfgs, gains, unit, hist, best = groups[gi]
            target = running[gi][k, f]
            split = (k, f) if gi == 0 else None
            if gi > 0:
                for kg in range(k + 1):
                    for fg in (fg for fg in range(4) if not fg & ~f):
                        if (best[kg, fg] > NEG / 2
                                and running[gi - 1][k - kg, f & ~fg] + best[kg, fg] == target):
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
        lo, hi = 0, len(self.t_values) - 1
        if self.capacity(hi)[min(p, self.p_max)] < self.L:
            return float("inf")
        while lo < hi:
            mid = (lo + hi) // 2
            if self.capacity(mid)[min(p, self.p_max)] >= self.L:
                hi = mid
            else:
                lo = mid + 1
        return self.t_values[lo]


NEG = -1e18


def _group_capacity(gains: list[tuple[int, list[int]]], budget: int, p_max: int) -> np.ndarray:
    """best[k, f] = max layers of at most k stages on at most `budget` GPUs, where the bit set f
    says whether the first (1) and the last (2) stage are among them."""
    hist, _ = _group_history(gains, budget, p_max)
    return hist[:, :, -1].copy()


def _group_history(gains: list[tuple[int, list[int]]], budget: int,
                   p_max: int) -> tuple[np.ndarray, int]:
    """The dynamic program behind the capacity bound: hist[k, f, w] = max layers of at most k
    stages on at most w GPU units (the gcd of the stage sizes), with roles f (bit 1: the first
    stage is among them, bit 2: the last). Monotone in w by construction (hist[0] is 0 for every
    w, and shifts of a monotone array are monotone)."""
    unit = 0
    for w, _ in gains:
        unit = math.gcd(unit, w)
    unit = unit or 1
    width = budget // unit + 1
    hist = np.full((p_max + 1, 4, width), NEG)
    hist[0, 0, :] = 0.0
    for k in range(1, p_max + 1):
        dp = hist[k - 1]
        new = dp.copy()
        for w, (n_mid, n_first, n_last) in gains:
            w //= unit
            for f in range(4):
                src = dp[f, : width - w]
                if n_mid:
                    np.maximum(new[f, w:], src + n_mid, out=new[f, w:])
                if n_first and not f & FIRST:
                    np.maximum(new[f | FIRST, w:], src + n_first, out=new[f | FIRST, w:])
                if n_last and not f & LAST:
                    np.maximum(new[f | LAST, w:], src + n_last, out=new[f | LAST, w:])
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
    """c[k, f] = max over k1 + k2 <= k and disjoint f1 | f2 = f of a[k1, f1] + b[k2, f2]."""
    n = a.shape[0]
    out = np.full_like(a, NEG)
    for f1 in range(4):
        for f2 in range(4):
            if f1 & f2:
                continue
            for i in range(n):
                np.maximum(out[i:, f1 | f2], a[i, f1] + b[: n - i, f2], out=out[i:, f1 | f2])
    return out
