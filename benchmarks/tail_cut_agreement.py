"""The tail staircase cuts (R') against the models without them, on random tiny instances.

    python benchmarks/tail_cut_agreement.py --seeds 300 [--start 0] [--mixed]
        [--draw random|feature|feature-multi] [--max-vars 3000] [--time-limit 20]

For each seed and each sub-problem whose full model (formulations/stage-assignment.md Sec. 5)
HiGHS solves to optimality without the cuts: (1) the model without a cutoff, with the cuts
(wherever the staircase has a corner, not only where the search deems them worth it), must
have the same optimum (1e-9 relative), and the optimum without the cuts, under the model's
objective and under `tail + w T` for several w, must satisfy every cut
(``model_agreement.tail_cut_violations``); (2) the model under a cutoff at the sub-problem's own
optimum (the tightest place for the stage-time cap the staircase stops at) and 3% above, with
the cuts, must still reach that optimum. Prints each difference, then the counts.

Run on 2026-12-05 (seeds 30000-31199 over the draws, mixed off and on): 3,403 models with cuts
under (1) and 6,548 under (2), no difference. tests/test_tail_cuts.py runs (1) on 12 seeds.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from feature_instances import feature_instance
from model_agreement import RELATIVE_TOLERANCE, cut_rows, full_models, tail_cut_violations
from random_instances import random_instance

from haap_solver.errors import InputError
from haap_solver.instance import Instance
from haap_solver.search.backends import SolveOptions, get_backend
from haap_solver.search.branch_and_bound import BranchAndBound, _stage_time_cap, _time_ub
from haap_solver.search.formulation import StageModel, SubProblem, build_model, build_slots


def _draw(seed: int, kind: str, profile_dir: Path) -> Instance | None:
    if kind == "random":
        return random_instance(seed)
    try:
        return feature_instance(seed, profile_dir, multi_node=kind == "feature-multi").instance
    except InputError:
        return None


def _model_under(search: BranchAndBound, sub: SubProblem, cutoff: float) -> StageModel | None:
    """The sub-problem's full model under `cutoff`, with the tail cuts, as `attempt` builds it
    (stage-time cap, bottleneck floor), the cuts wherever the staircase has a corner."""
    state, cache, instance = search.state, search.cache, search.instance
    floors = search.floors_by_b[sub.micro_batch]
    cap = _stage_time_cap(state, sub, floors, cutoff)
    slots = build_slots(instance, cache, sub, state.configs(sub.micro_batch),
                        stage_time_cap_s=cap, end_configs=state.end_configs(sub.micro_batch))
    t_lb = state.bottleneck_floor(sub, search.p_cap)
    if slots is None or not math.isfinite(t_lb):
        return None
    sm = build_model(instance, cache, sub, slots,
                     time_upper_bound_s=_time_ub(slots, sub, instance, cache),
                     load_balance_floor_s=max(t_lb, floors[0]), objective_cutoff_s=cutoff,
                     require_mixed=state.require_mixed)
    search.tail_cuts(sm, max(t_lb, floors[0]), cap, math.inf, 0.0)
    return sm


def check_seed(instance: Instance, mixed: bool, max_vars: int, time_limit_s: float
               ) -> tuple[int, int, list[str]]:
    """(models with cuts without a cutoff, models with cuts under a cutoff, differences)."""
    opts = SolveOptions(time_limit_s=time_limit_s, threads=1, seed=0)
    plain = {sub: (lp, f) for sub, lp, f in full_models(instance, mixed=mixed,
                                                          max_vars=max_vars)}
    optima = {}
    free = capped = 0
    out = []
    for sub, lp, floor_s in full_models(instance, mixed=mixed, max_vars=max_vars,
                                        tail_cuts=True):
        without = get_backend("highs")(plain[sub][0], opts, plain[sub][1])
        if without.status == "optimal" and without.objective_s is not None:
            optima[sub] = (without.objective_s, floor_s)
        if not cut_rows(lp):
            continue
        free += 1
        with_cuts = get_backend("highs")(lp, opts, floor_s)
        if without.status != with_cuts.status or (
                without.status == "optimal" and without.objective_s is not None
                and with_cuts.objective_s is not None
                and abs(without.objective_s - with_cuts.objective_s)
                > RELATIVE_TOLERANCE * without.objective_s):
            out.append(f"{sub}: without {without.status} {without.objective_s!r}, with "
                       f"{with_cuts.status} {with_cuts.objective_s!r}")
        out.extend(f"{sub}: {line}" for line in tail_cut_violations(lp, floor_s, time_limit_s))
    search = BranchAndBound(instance, backend="highs", time_limit_s=1e9, threads=1, seed=0,
                            state=None, max_stages=None, progress=None,
                            seed_with_baselines=False, mixed=mixed)
    for sub, (optimum, floor_s) in optima.items():
        for factor in (1.0, 1.03):
            sm = _model_under(search, sub, optimum * factor)
            if sm is None:
                out.append(f"{sub}: no model under the cutoff {factor} x its optimum")
                continue
            if not cut_rows(sm.lp):
                continue
            capped += 1
            res = get_backend("highs")(sm.lp, opts, floor_s)
            if res.status != "optimal" or res.objective_s is None or \
                    abs(res.objective_s - optimum) > RELATIVE_TOLERANCE * optimum:
                out.append(f"{sub}: cutoff {factor} x {optimum!r}: {res.status} "
                           f"{res.objective_s!r}")
    return free, capped, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--mixed", action="store_true")
    ap.add_argument("--draw", choices=("random", "feature", "feature-multi"), default="random")
    ap.add_argument("--max-vars", type=int, default=3000)
    ap.add_argument("--time-limit", type=float, default=20.0)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    free = capped = bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.start, args.start + args.seeds):
            instance = _draw(seed, args.draw, Path(tmp))
            if instance is None:
                continue
            f, c, lines = check_seed(instance, args.mixed, args.max_vars, args.time_limit)
            free, capped, bad = free + f, capped + c, bad + len(lines)
            for line in lines:
                print(f"seed {seed} {line}", flush=True)
    print(f"seeds {args.start}-{args.start + args.seeds - 1} {args.draw} mixed={args.mixed}: "
          f"{free} models with cuts, {capped} under a cutoff, {bad} differences, "
          f"{time.perf_counter() - t0:.0f} s", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
