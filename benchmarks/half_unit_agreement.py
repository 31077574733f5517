"""The exact search with the half-unit paths of formulations Sec. 4.9 *Mixed stages* forced on
small clusters, against the brute force, on many random tiny instances.

    python benchmarks/half_unit_agreement.py --seeds 200 [--start 0] [--walk]

For each seed, ``tests/random_instances.random_instance(seed)``: the brute force's optimum with
mixed stages, and the search (HiGHS, one thread) inside
``tests/test_half_unit_agreement.forced_half_units``: the pre-pass and the half-unit floor on
every cluster size, with ``--walk`` the tail-capacity walk in half-units too. Prints per seed
the agreement and how many sub-problems the pre-pass raised and closed where mixed-type stages
were candidates, then the disagreements (a search that says "feasible" at the brute force's
time has run out of time, not proven a wrong bound: rerun that seed alone).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from random_instances import disagreement, random_instance
from test_half_unit_agreement import forced_half_units

from haap_solver.baselines.bruteforce import bruteforce
from haap_solver.cost.evaluate import CostModel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--walk", action="store_true")
    parser.add_argument("--time-limit", type=float, default=60.0)
    args = parser.parse_args()
    failures = []
    closing = 0
    for seed in range(args.start, args.start + args.seeds):
        start = time.perf_counter()
        inst = random_instance(seed)
        truth = bruteforce(inst, cost_model=CostModel(inst), mixed=True)
        with forced_half_units(walk=args.walk) as record:
            why = disagreement(inst, truth, backend="highs", mixed=True,
                               time_limit_s=args.time_limit)
        closing += record.closed > 0
        if why is not None:
            failures.append(f"seed {seed}: {why}")
        print(f"{seed} {'DISAGREE ' + why if why else 'ok'} raised={record.raised} "
              f"closed={record.closed} {time.perf_counter() - start:.1f}s", flush=True)
    print(f"{args.seeds} seeds, the pre-pass closed sub-problems on {closing}; "
          f"{len(failures)} disagreements")
    for line in failures:
        print(line)


if __name__ == "__main__":
    main()
