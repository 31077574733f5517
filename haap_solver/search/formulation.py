"""The stage-assignment model of one sub-problem, as a backend-independent LinearProgram.

Mathematics and constraint numbers: formulations/stage-assignment.md. A sub-problem fixes the number
of stages p, the pipeline micro-batch b (so m = B / b micro-batches) and the schedule; the model
chooses one configuration and a layer count per stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from haap_solver.instance import Instance
from haap_solver.search.coefficients import CoefficientCache, StageCoefficients
from haap_solver.search.lp import LinearProgram
from haap_solver.search.space import StageConfig


@dataclass(frozen=True)
class SubProblem:
    num_stages: int
    micro_batch: int
    schedule: str

    def num_micro_batches(self, instance: Instance) -> int:
        return instance.training.global_batch_size // self.micro_batch


@dataclass
class Slot:
    """One pipeline position: its candidate configurations with their coefficients and bounds."""

    index: int
    first: bool
    last: bool
    in_flight: int
    candidates: list[StageConfig]
    coeffs: list[StageCoefficients]
    max_layers: list[int]


@dataclass
class StageModel:
    """The built model and the variable indices needed to read a solution back."""

    sub: SubProblem
    slots: list[Slot]
    lp: LinearProgram
    x: list[list[int]] = field(default_factory=list)
    y: list[list[int]] = field(default_factory=list)

    def extract(self, values: list[float]) -> tuple[list[StageConfig], list[int]]:
        """Map a solution back to the domain: the configuration and layer count of every stage."""
        configs, layers = [], []
        for slot, xs, ys in zip(self.slots, self.x, self.y, strict=True):
            k = max(range(len(xs)), key=lambda j: values[xs[j]])
            configs.append(slot.candidates[k])
            layers.append(round(values[ys[k]]))
        return configs, layers


def build_slots(instance: Instance, cache: CoefficientCache, sub: SubProblem,
                configs: list[StageConfig], *,
                stage_time_cap_s: float = float("inf")) -> list[Slot] | None:
    """Memory-aware initialization for one sub-problem (Sec. 2): per position, the configurations
    that hold at least one layer, with their layer bounds. None when some position has none, or the
    positions together cannot hold every layer.

    `stage_time_cap_s` is an upper bound on every stage's time per micro-batch in any plan still
    worth finding (from the best plan so far, Sec. 4.2): layer counts whose stage time exceeds it
    are cut as well, which tightens y <= bound * x where it matters most."""
    p, b = sub.num_stages, sub.micro_batch
    m = sub.num_micro_batches(instance)
    slots = []
    total = 0
    for i in range(p):
        first, last = i == 0, i == p - 1
        in_flight = cache.in_flight(sub.schedule, p - 1 - i, p, m)
        cands, coeffs, bounds = [], [], []
        for c in configs:
            n_max = cache.max_layers(c, b, first, last, p > 1, in_flight)
            if n_max < 1:
                continue
            co = cache.coefficients(c, b, first, last, p > 1)
            if stage_time_cap_s < float("inf"):
                n_max = min(n_max, _layers_within(co, stage_time_cap_s, n_max))
            if n_max >= 1:
                cands.append(c)
                coeffs.append(co)
                bounds.append(n_max)
        if not cands:
            return None
        total += max(bounds)
        slots.append(Slot(i, first, last, in_flight, cands, coeffs, bounds))
    if total < instance.model.num_layers:
        return None
    return slots


def _layers_within(co: StageCoefficients, cap_s: float, n_max: int) -> int:
    """Largest n <= n_max with stage time tau(n) <= cap (tau is non-decreasing in n); 0 if none."""
    if co.tau(1) > cap_s * (1 + 1e-12):
        return 0
    lo, hi = 1, n_max
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if co.tau(mid) <= cap_s * (1 + 1e-12):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _key_order(key: str | tuple[str, ...]) -> tuple[str, ...]:
    return (key,) if isinstance(key, str) else key


def _pieces(coeffs: list[StageCoefficients], attr: str, k: int):  # type: ignore[no-untyped-def]
    out = []
    for co in coeffs:
        pieces = getattr(co, attr)
        out.append(pieces[min(k, len(pieces) - 1)])
    return out


def build_model(instance: Instance, cache: CoefficientCache, sub: SubProblem, slots: list[Slot], *,
                time_upper_bound_s: float, load_balance_floor_s: float = 0.0,
                objective_cutoff_s: float | None = None,
                require_mixed: bool = False) -> StageModel:
    """Constraints (1)-(10) of formulations/stage-assignment.md for one sub-problem; with
    `require_mixed` also (M): some stage is a mixed-type one (Sec. 1.1)."""
    # Data.
    L = instance.model.num_layers
    p = sub.num_stages
    m = sub.num_micro_batches(instance)
    groups = {g.name: g for g in instance.cluster.node_groups}
    ub = time_upper_bound_s
    lp = LinearProgram()
    sm = StageModel(sub=sub, slots=slots, lp=lp)
    max_y = max(max(s.max_layers) for s in slots)
    weight = max_y + 1.0  # one config active per stage: its layer count and its binary

    # Model: choice variables.
    for s in slots:
        sm.x.append([lp.binary(f"x[{s.index},{c.label()}]") for c in s.candidates])
        sm.y.append([lp.var(f"y[{s.index},{c.label()}]", 0, n, integer=True)
                     for c, n in zip(s.candidates, s.max_layers, strict=True)])
    # (1) one configuration per stage.
    for s, xs in zip(slots, sm.x, strict=True):
        lp.add({x: 1 for x in xs}, "==", 1, f"one_config[{s.index}]")
    # (2) memory-aware layer bounds: y <= maxL(c, i) x, and every stage holds >= 1 layer.
    for s, xs, ys in zip(slots, sm.x, sm.y, strict=True):
        for x, y, n in zip(xs, ys, s.max_layers, strict=True):
            lp.add({y: 1, x: -n}, "<=", 0, f"mem[{s.index}]")
            lp.add({y: 1, x: -1}, ">=", 0, f"min_layer[{s.index}]")
    # (3) every layer exactly once.
    lp.add({y: 1 for ys in sm.y for y in ys}, "==", L, "layers")
    # (4) GPU budget of every node group.
    for gname, g in groups.items():
        # A mixed stage counts each replica group's GPUs in its own node group's row.
        row = {x: c.gpus_in(gname) for s, xs in zip(slots, sm.x, strict=True)
               for x, c in zip(xs, s.candidates, strict=True) if c.gpus_in(gname)}
        if row:
            lp.add(row, "<=", g.num_gpus, f"budget[{gname}]")

    def affine_row(var: int, xs: list[int], ys: list[int], pieces, name: str) -> None:  # type: ignore[no-untyped-def]
        coeffs: dict[int, float] = {var: 1.0}
        for x, y, a in zip(xs, ys, pieces, strict=True):
            coeffs[x] = coeffs.get(x, 0.0) - a.intercept
            coeffs[y] = coeffs.get(y, 0.0) - a.slope
        lp.add(coeffs, ">=", 0.0, name, time=True, active_weight=weight, defines=var)

    one_f_one_b = sub.schedule != "gpipe"
    tail = lp.var("tail", 0, ub, time=True)
    if one_f_one_b:
        T = lp.var("T", 0, ub, time=True)
        taus = []
        for s, xs, ys in zip(slots, sm.x, sm.y, strict=True):
            tau = lp.var(f"tau[{s.index}]", 0, ub, time=True)
            taus.append(tau)
            # (5) stage time per micro-batch: epigraph of its convex pieces.
            for k in range(max(len(c.tau_pieces) for c in s.coeffs)):
                affine_row(tau, xs, ys, _pieces(s.coeffs, "tau_pieces", k), f"tau[{s.index},{k}]")
            # (6) bottleneck.
            lp.add({T: 1, tau: -1}, ">=", 0, f"T>=tau[{s.index}]", time=True, defines=T)
    else:
        F = lp.var("F", 0, ub, time=True)
        B = lp.var("B", 0, ub, time=True)
        fs, bs = [], []
        for s, xs, ys in zip(slots, sm.x, sm.y, strict=True):
            f = lp.var(f"f[{s.index}]", 0, ub, time=True)
            bk = lp.var(f"b[{s.index}]", 0, ub, time=True)
            fs.append(f)
            bs.append(bk)
            for k in range(max(len(c.fwd_pieces) for c in s.coeffs)):
                affine_row(f, xs, ys, _pieces(s.coeffs, "fwd_pieces", k), f"f[{s.index},{k}]")
            for k in range(max(len(c.bwd_pieces) for c in s.coeffs)):
                affine_row(bk, xs, ys, _pieces(s.coeffs, "bwd_pieces", k), f"b[{s.index},{k}]")
            lp.add({F: 1, f: -1}, ">=", 0, f"F>=f[{s.index}]", time=True, defines=F)
            lp.add({B: 1, bk: -1}, ">=", 0, f"B>=b[{s.index}]", time=True, defines=B)
    # (7) tail: exposed data-parallel collective plus optimizer step, slowest stage.
    for s, xs, ys in zip(slots, sm.x, sm.y, strict=True):
        for k in range(max(len(c.tail_pieces) for c in s.coeffs)):
            affine_row(tail, xs, ys, _pieces(s.coeffs, "tail_pieces", k), f"tail[{s.index},{k}]")
    # (8) point-to-point time of each link, both sides, for the node group on the other side.
    links = []
    for j in range(p - 1):
        a, b = slots[j], slots[j + 1]
        cj = lp.var(f"c[{j}]", 0, ub, time=True)
        links.append(cj)
        for mine, my_x, other, other_x in ((a, sm.x[j], b, sm.x[j + 1]),
                                           (b, sm.x[j + 1], a, sm.x[j])):
            # Keyed by the node group(s) of the other side: the link depends on them only.
            for key in sorted({c.link_key for c in other.candidates}, key=_key_order):
                vals = [cache.p2p_side(c, sub.micro_batch, key) for c in mine.candidates]
                big = max(vals)
                coeffs = {cj: 1.0}
                for x, v in zip(my_x, vals, strict=True):
                    coeffs[x] = -v
                for x, c in zip(other_x, other.candidates, strict=True):
                    if c.link_key == key:
                        coeffs[x] = coeffs.get(x, 0.0) - big
                name = key if isinstance(key, str) else "+".join(key)
                lp.add(coeffs, ">=", -big, f"p2p[{j},{name}]", time=True, active_weight=2.0,
                       defines=cj)
        # (9) a link is a pipeline stage of its own in the steady state.
        if one_f_one_b:
            lp.add({T: 1, cj: -2}, ">=", 0, f"T>=2c[{j}]", time=True, defines=T)
        else:
            lp.add({F: 1, cj: -1}, ">=", 0, f"F>=c[{j}]", time=True, defines=F)
            lp.add({B: 1, cj: -1}, ">=", 0, f"B>=c[{j}]", time=True, defines=B)
    # (10) objective: pipeline makespan plus the tail.
    if one_f_one_b:
        lp.objective = {tau: 1.0 for tau in taus}
        lp.objective[T] = float(m - 1)
    else:
        lp.objective = {v: 1.0 for v in (*fs, *bs)}
        lp.objective[F] = float(m - 1)
        lp.objective[B] = float(m - 1)
    for cj in links:
        lp.objective[cj] = 2.0
    lp.objective[tail] = 1.0
    # Redundant: the load-balance lower bound on the bottleneck (Sec. 4), to tighten relaxations.
    if load_balance_floor_s > 0:
        if one_f_one_b:
            lp.add({T: 1}, ">=", load_balance_floor_s, "redundant_load_balance", time=True,
                   active_weight=0.0, defines=T)
        else:  # max_i (f_i + b_i) <= F + B
            lp.add({F: 1, B: 1}, ">=", load_balance_floor_s, "redundant_load_balance",
                   time=True)
    # (M) once the single-type space is proven, only plans with a mixed-type stage are left.
    if require_mixed:
        lp.add({x: 1 for s, xs in zip(slots, sm.x, strict=True)
                for x, c in zip(xs, s.candidates, strict=True) if c.mixed},
               ">=", 1, "some_mixed_stage")
    lp.objective_cutoff = objective_cutoff_s
    return sm
