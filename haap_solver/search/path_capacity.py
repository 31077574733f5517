"""The path capacity (formulations/stage-assignment.md Sec. 4.10): "can some p-stage plan with
bottleneck <= T and tail <= R hold every layer?" asked of the pipeline as a path of positions,
with every node group's GPU budget counted exactly and each stage's links charged by the node
groups of its actual neighbours; and the walk over T that turns it into a lower bound and a
window of bottlenecks for the sub-problem's model.

The positional LP (Sec. 4.4) relaxes the budgets and charges each stage its least link side
towards any neighbour (or, per set of link sides, only one stage next to another side). On
clusters of small nodes behind slow NICs a stage next to another node group pays that group's
NIC on each such link, and a plan of two groups may have several such stages: the LP's
answers at (T, R) hold where no plan does, and its bounds lie several percent below the
optimum. A dynamic program over the positions, with the GPUs used so far in every node group
and the node groups of the neighbours in its state, asks the question exactly in all but two
respects: a link is charged `Q(c, h)` (at least either side's time, Sec. 4.4 *Link sides*), not
the slower of the two actual sides, and the fewest layers a stage must hold are not counted.
Both relax it, so its "no" is a proof. `holds_exact` charges every link between two node groups
its actual value (the link's value in the state), at several times the cost of a question.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable

import numpy as np

from haap_solver.instance import Instance
from haap_solver.search import tuning
from haap_solver.search.bounds import PositionalBound, _last_below, first_true, link_matrices
from haap_solver.search.coefficients import CoefficientCache
from haap_solver.search.deadline import check_deadline

_NONE = -1  # the node group of the missing neighbour of an end stage
_UNSET = -(1 << 24)  # layers held by an unreachable state: stays negative after any additions


class PathCapacity:
    """The path question of Sec. 4.10 for the sub-problems of one micro-batch size and
    schedule (1F1B, not interleaved), single-type configurations only, on clusters whose GPU
    budgets span at most PATH_CAPACITY_MAX_CELLS states (`applies`)."""

    def __init__(self, instance: Instance, cache: CoefficientCache, positional: PositionalBound,
                 t_values: list[float]):
        self.instance = instance
        self.t_values = t_values
        """The capacity bound's candidate bottlenecks: a question at t stands for every
        bottleneck below the next candidate (`holds`)."""
        self.cache = cache
        self.positional = positional
        self.b = positional.b
        self.schedule = positional.schedule
        self.configs = positional.configs
        self.L = instance.model.num_layers
        self.m = positional.m
        groups = [g.name for g in instance.cluster.node_groups]
        self.shape = tuple(g.num_gpus + 1 for g in instance.cluster.node_groups)
        self.blocking = instance.training.blocks_p2p(self.schedule)
        self.waits = instance.training.link_waits(self.schedule)
        """Times a stage waits for each link per micro-batch with blocking sends (2: DeepSpeed)."""
        self.use = np.array([[c.gpus_in(g) for g in groups] for c in self.configs],
                            dtype=int).reshape(len(self.configs), len(groups))
        # Each configuration's node group (single-type: its link key), its side times towards
        # each node group, and q[c, h], the least a link between c and a stage on node group h
        # may take (Sec. 4.4 *Link sides*).
        self.group, p2p, self.q = link_matrices(cache, self.configs, self.b, list(groups))
        # The configurations of each node group by distinct GPU use: one shift of the state per
        # use (the most layers of its configurations), not per configuration.
        self._uses: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._shifts: list[list[tuple[tuple[slice, ...], tuple[slice, ...]] | None]] = []
        for g in range(len(groups)):
            idx = np.nonzero(self.group == g)[0]
            uses, inverse = np.unique(self.use[idx].reshape(len(idx), len(groups)), axis=0,
                                      return_inverse=True)
            self._uses.append((idx, inverse.reshape(-1), uses))
            # (destination, source) slices of the state array for each use (None: over budget)
            self._shifts.append([
                None if (use > np.array(self.shape) - 1).any() else (
                    tuple(slice(int(s), None) for s in use),
                    tuple(slice(0, n - int(s)) for n, s in zip(self.shape, use, strict=True)))
                for use in uses])
        self._rows: dict[tuple[bool, bool, bool], tuple[np.ndarray, np.ndarray]] = {}
        self._answers: dict[tuple[int, float, float, bool], bool] = {}
        self._known: dict[tuple[int, bool], tuple[list[tuple[float, float]],
                                                  list[tuple[float, float]]]] = {}
        """The (t, r) of the answers computed, "yes" and "no", by (p, exact links)."""
        self.p2p = p2p
        # The values a link between node groups g != h can take: the sides of either group's
        # configurations towards the other (exact links).
        self._link_values: dict[tuple[int, int], list[float]] = {}
        for g in range(len(groups)):
            for h in range(len(groups)):
                if g != h:
                    self._link_values[(g, h)] = sorted(set(
                        p2p[self.group == g, h].tolist() + p2p[self.group == h, g].tolist()))

    @staticmethod
    def applies(instance: Instance, positional: PositionalBound) -> bool:
        """Whether the path question can be asked: 1F1B (interleaving's chunks and GPipe's two
        passes are not modelled here), single-type configurations (a mixed one spans two node
        groups and its links go to a node-group set), and GPU budgets of at most
        PATH_CAPACITY_MAX_CELLS states in all."""
        if positional.schedule != "1f1b" or positional.require_mixed \
                or positional.is_mixed.any() or not tuning.PATH_CAPACITY:
            return False
        cells = math.prod(g.num_gpus + 1 for g in instance.cluster.node_groups)
        return cells <= tuning.PATH_CAPACITY_MAX_CELLS

    def _stage_rows(self, role: tuple[bool, bool, bool]) -> tuple[np.ndarray, np.ndarray]:
        """(stage time without links, tail) of every configuration at n = 1..W layers in
        `role`, inf where it does not fit with one micro-batch in flight."""
        hit = self._rows.get(role)
        if hit is None:
            taus = self.cache.stage_times_many(self.configs, self.b, *role)
            _, tail_m = self.positional._matrices(role)
            bare = np.full(tail_m.shape, np.inf)
            for k, row in enumerate(taus):
                bare[k, : len(row)] = row
            hit = (bare, tail_m)
            self._rows[role] = hit
        return hit

    def _most_by_room(self, i: int, p: int, t: float, r: float,
                      sides: tuple[tuple[int, float | None], ...]) -> np.ndarray:
        """Per configuration and layer count n (0-based columns), the largest count <= n whose
        stage time plus links is within t and tail within r, for position i of p (-1: none).
        `sides`: per neighbour, its node group and the link's value where the state fixes it
        (exact links: only configurations whose own side is at most that value may take it),
        else None (the link is charged Q)."""
        role = (i == 0, i == p - 1, p > 1)
        bare, tail_m = self._stage_rows(role)
        links = np.zeros(len(self.configs))
        for side, value in sides:
            if value is None:
                charge = self.q[:, side]
            else:  # the actual link, at least this stage's own side
                charge = np.where(self.p2p[:, side] <= value * (1 + 1e-12), value, np.inf)
            if self.blocking:  # the period holds both exchanges (Sec. 5, (6b))
                links = links + self.waits * charge
            else:  # overlapped: T >= 2 c_j (Sec. 5, (9))
                links = np.maximum(links, np.where(2.0 * charge <= t, 0.0, np.inf))
        ok = (bare + links[:, None] <= t) & (tail_m <= r)
        return np.maximum.accumulate(np.where(ok, np.arange(ok.shape[1])[None, :], -1), axis=1)

    def holds(self, p: int, t: float, r: float = math.inf, exact_links: bool = False) -> bool:
        """Whether some p-stage sequence of configurations, node-group budgets kept, may hold
        every layer with each stage's time plus its links (by its neighbours' node groups)
        within t, its tail within r and its memory at its position: False proves that no plan
        of p stages has bottleneck <= t and tail <= r."""
        # As the LPs per set of link sides (PositionalBound.holds_all_layers): the walks step
        # over the candidate bottlenecks, each standing for every bottleneck up to the next one,
        # while a stage's period with its neighbours' links lies in between; so the question is
        # asked just below the next candidate.
        at = bisect.bisect_right(self.t_values, t * (1 + 1e-12))
        below_next = self.t_values[at] * (1 - 1e-9) if at < len(self.t_values) else math.inf
        key = (p, max(t, below_next), r, exact_links)
        hit = self._answers.get(key)
        if hit is None:
            hit = self._implied(p, key[1], r, exact_links)
            if hit is None:
                hit = self._holds(p, key[1] * (1 + 1e-12), r * (1 + 1e-12), exact_links)
                yes, no = self._known.setdefault((p, exact_links), ([], []))
                (yes if hit else no).append((key[1], r))
            self._answers[key] = hit
        return hit

    def _implied(self, p: int, t: float, r: float, exact_links: bool) -> bool | None:
        """The answer at (t, r) where an answer already computed implies it, else None: the
        question does not turn false as t or r grow, so a "yes" at (t', r') <= (t, r) and a
        "no" at (t', r') >= (t, r) decide it (about one question in nine of a walk's)."""
        yes, no = self._known.get((p, exact_links), ((), ()))
        if any(t0 <= t and r0 <= r for t0, r0 in yes):
            return True
        if any(t0 >= t and r0 >= r for t0, r0 in no):
            return False
        return None

    def holds_exact(self, p: int, t: float, r: float = math.inf) -> bool:
        """`holds` with every link between two node groups charged its actual value, the
        slower of the two neighbours' sides (the value a state fixes, both neighbours' own
        sides at most it), not Q: a stronger question at about (links per pair) times the
        cost."""
        return self.holds(p, t, r, exact_links=True)

    def _holds(self, p: int, t: float, r: float, exact_links: bool) -> bool:
        check_deadline()
        n_groups = len(self.shape)
        rows = np.arange(len(self.configs))
        tables: dict[tuple[object, ...], np.ndarray] = {}
        # states[(left, here, value)]: the most layers positions < i hold, per GPU use of every
        # group (UNSET where unreachable), with position i-1 on `left` and position i on `here`
        # (the state of position 0 has left = _NONE); with exact links, `value` is the link
        # between them where the groups differ (else None: charged Q).
        states: dict[tuple[int, int, float | None], np.ndarray] = {}
        for g in range(n_groups):
            start = np.full(self.shape, _UNSET, dtype=np.int32)
            start[(0,) * n_groups] = 0
            states[(_NONE, g, None)] = start
        for i in range(p):
            role = (i == 0, i == p - 1, p > 1)
            room = self.positional._room(role, self.cache.in_flight(self.schedule, p - 1 - i, p,
                                                                    self.m))
            nexts = [_NONE] if i == p - 1 else list(range(n_groups))
            new: dict[tuple[int, int, float | None], np.ndarray] = {}
            for (left, here, value_in), held in states.items():
                idx, inverse, uses = self._uses[here]
                if len(idx) == 0:
                    continue
                for right in nexts:
                    values: list[float | None] = [None]
                    if exact_links and right not in (_NONE, here):
                        values = list(self._link_values[(here, right)])
                    for value_out in values:
                        sides = tuple((side, value) for side, value in
                                      ((left, value_in), (right, value_out)) if side != _NONE)
                        key = (role, sides)
                        last = tables.get(key)
                        if last is None:
                            last = tables[key] = self._most_by_room(i, p, t, r, sides)
                        top = np.minimum(room, last.shape[1]) - 1
                        most = np.where(top >= 0, last[rows, np.maximum(top, 0)] + 1, 0)[idx]
                        best = np.zeros(len(uses), dtype=np.int32)
                        np.maximum.at(best, inverse, most.astype(np.int32))
                        if not (best >= 1).any():
                            continue
                        out = new.get((here, right, value_out))
                        if out is None:
                            out = new[(here, right, value_out)] = np.full(self.shape, _UNSET,
                                                                          dtype=np.int32)
                        for u in np.nonzero(best >= 1)[0]:
                            shift = self._shifts[here][u]
                            if shift is None:
                                continue
                            dst, src = shift
                            np.maximum(out[dst], held[src] + best[u], out=out[dst])
            states = {key: held for key, held in new.items() if held.max() >= 0}
            if not states:
                return False
        return max(int(held.max()) for held in states.values()) >= self.L


def window_walk(holds: Callable[[int, float, float], bool], p: int,
                cost_of_interval: Callable[[float, float], float], t_values: list[float],
                r_values: np.ndarray, t_floor: float, stop: float,
                max_steps: int = 64) -> tuple[float, float, float]:
    """(bound, t_lo, t_hi): the walk of Sec. 4.5 (`bounds.tail_walk`: min over T >= t_floor of
    the cost at T plus R_min(T), the least tail at which `holds` at T), and the window of
    bottlenecks in which a plan may cost below `stop`: every plan of the sub-problem cheaper
    than `stop` has its bottleneck in [t_lo, t_hi). Where none may (the bound reaches `stop`),
    (stop, inf, -inf). A question at a candidate `t_values[k]` stands for every bottleneck
    below the next candidate (PathCapacity.holds), so t_hi is a candidate after the last open
    one (inf past the last). `holds` must not turn false as T or R grow; `cost_of_interval` as in
    tail_walk (its value at (T, inf) does not decrease with T)."""
    n_t, n_r = len(t_values), len(r_values)

    def after(k: int) -> float:
        return t_values[k + 1] if k + 1 < n_t else math.inf

    closed = (stop, math.inf, -math.inf)
    if n_r == 0 or not math.isfinite(t_floor) or not math.isfinite(stop):
        return cost_of_interval(t_floor, math.inf), t_floor, math.inf
    idx = int(np.searchsorted(t_values, t_floor * (1 - 1e-12), side="left"))
    if idx >= n_t or cost_of_interval(t_values[idx], math.inf) >= stop:
        return closed
    best, t_lo, t_hi = math.inf, math.inf, -math.inf
    top = _last_below(cost_of_interval, t_values, idx, stop)  # beyond it, the cost alone
    r_top = n_r - 1
    for _ in range(max_steps):
        if not holds(p, t_values[idx], float(r_values[r_top])):
            # No plan with bottleneck <= this T: on to the first T where one may be.
            if idx >= top or not holds(p, t_values[top], float(r_values[r_top])):
                break
            idx = _first_t(holds, p, t_values, float(r_values[r_top]), idx + 1, top)
        t = t_values[idx]
        r_idx = _first_r(holds, p, t, r_values, r_top)
        r_here = float(r_values[r_idx])
        # The next T at which R_min drops below r_here (none up to `top`: the step ends there).
        if r_idx > 0 and idx < top and holds(p, t_values[top], float(r_values[r_idx - 1])):
            nxt = _first_t(holds, p, t_values, float(r_values[r_idx - 1]), idx + 1, top)
        else:
            nxt = top + 1
        piece = cost_of_interval(t, t_values[nxt - 1]) + r_here
        if piece < stop:
            best = min(best, piece)
            t_lo = min(t_lo, t)
            # (a plan with bottleneck T in this step costs at least cost(T, inf) + r_here)
            last = _last_below(_plus(cost_of_interval, r_here), t_values, idx, stop)
            t_hi = max(t_hi, after(min(last, nxt - 1)))
        if nxt > top:
            return (best, t_lo, t_hi) if best < stop else closed
        idx, r_top = nxt, r_idx - 1
    else:  # out of steps: every T from here to `top` stays open
        t = t_values[idx]
        piece = cost_of_interval(t, t_values[top]) + float(r_values[0])
        if piece < stop:
            return min(best, piece), min(t_lo, t), max(t_hi, after(top))
    return (best, t_lo, t_hi) if best < stop else closed


def _first_t(holds: Callable[[int, float, float], bool], p: int, t_values: list[float],
             r: float, lo: int, hi: int) -> int:
    """The least index k in [lo, hi] with holds(p, t_values[k], r) (it holds at hi)."""
    def at(k: int) -> bool:
        return holds(p, t_values[k], r)
    return first_true(at, lo, hi)


def _first_r(holds: Callable[[int, float, float], bool], p: int, t: float,
             r_values: np.ndarray, hi: int) -> int:
    """The least index k in [0, hi] with holds(p, t, r_values[k]) (it holds at hi)."""
    def at(k: int) -> bool:
        return holds(p, t, float(r_values[k]))
    return first_true(at, 0, hi)


def _plus(cost_of_interval: Callable[[float, float], float],
          tail: float) -> Callable[[float, float], float]:
    """cost_of_interval plus a tail."""
    def cost(a: float, b: float) -> float:
        return cost_of_interval(a, b) + tail
    return cost
