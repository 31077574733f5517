"""Hunt for wrong optima and wrong bounds caused by solver tolerances far from "seconds": the
random agreement instances (tests/random_instances.py) with every device, link and latency made
`factor` times faster (tiny iteration times: microseconds to milliseconds) or slower (hours),
each backend against the brute force, mixed on and off; a reported lower bound
(``best_bound_s``) above the brute force's optimum is a disagreement too.

    python benchmarks/scale_probe.py --factor 1000 --start 0 --seeds 20 [--backends highs,cbc]

Kernel launch floors (40 us a kernel) and the intra-node latency do not scale, so x1000 gives
iterations of 1.2-27 ms (launch-bound: many near ties between plans) and x1e-6 of 163 s to 17
hours. Measured on 2026-12-02, highs, cpsat and cbc, mixed on and off, one thread:

* x1000, seeds 100-249 (main at 9bf5582): 0 disagreements, no bound above the brute force's
  optimum (12 seeds without any plan, both sides agreeing);
* x1e-6, seeds 100-249 (main at 9bf5582): the same (12 without a plan);
* x1000, seeds 250-349 (with the CP-SAT, HiGHS, CBC and LP-floor changes of that day): the same
  (6 without a plan).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import random_instances
from random_instances import disagreement, random_instance

from haap_solver.baselines.bruteforce import bruteforce
from haap_solver.cluster import DEFAULT_NIC_LATENCY_US
from haap_solver.instance import Instance, make_instance
from haap_solver.result import SolveResult
from haap_solver.search.solve import solve

LAST: list[SolveResult] = []


def _solve(*args: object, **kwargs: object) -> SolveResult:
    """solve(), keeping its answer for the bound check."""
    res = solve(*args, **kwargs)  # type: ignore[arg-type]
    LAST.append(res)
    return res


random_instances.solve = _solve  # type: ignore[assignment]


def scaled(instance: Instance, factor: float) -> Instance:
    """`instance` with every device's throughputs and bandwidths, and every NIC's rate, times
    `factor`, and NIC latencies divided by it (the intra-node latency is a constant)."""
    devices = {name: replace(d, peak_tflops=d.peak_tflops * factor,
                             peak_fp32_tflops=None if d.peak_fp32_tflops is None
                             else d.peak_fp32_tflops * factor,
                             peak_tf32_tflops=None if d.peak_tf32_tflops is None
                             else d.peak_tf32_tflops * factor,
                             peak_fp8_tflops=None,
                             hbm_gb_s=d.hbm_gb_s * factor,
                             intra_node_gb_s=d.intra_node_gb_s * factor)
               for name, d in instance.cluster.devices.items()
               if any(g.device == name for g in instance.cluster.node_groups)}
    groups = [replace(g, nic_gbit_s=g.nic_gbit_s * factor,
                      nic_latency_us=min(1e6, (g.nic_latency_us if g.nic_latency_us is not None
                                      else DEFAULT_NIC_LATENCY_US[g.nic]) / factor))
              for g in instance.cluster.node_groups]
    return make_instance(model=instance.model, training=instance.training, node_groups=groups,
                         extra_devices=devices, name=f"{instance.name}-x{factor:g}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--factor", type=float, required=True)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--backends", default="highs,cpsat,cbc")
    args = ap.parse_args()
    bad = 0
    for seed in range(args.start, args.start + args.seeds):
        inst = scaled(random_instance(seed), args.factor)
        t0 = time.perf_counter()
        truth = bruteforce(inst, mixed=True)
        truth_off = bruteforce(inst, mixed=False)
        msgs = []
        for backend in args.backends.split(","):
            for mixed, tr in ((True, truth), (False, truth_off)):
                LAST.clear()
                why = disagreement(inst, tr, backend=backend, mixed=mixed)
                if why:
                    msgs.append(f"mixed={mixed} {why}")
                if not LAST:
                    continue
                res = LAST[0]
                if tr.plan is not None and res.best_bound_s > tr.iteration_time_s * (1 + 1e-12):
                    msgs.append(f"mixed={mixed} {backend}: bound {res.best_bound_s!r} above "
                                f"brute force {tr.iteration_time_s!r}")
        t = truth.iteration_time_s if truth.plan is not None else math.nan
        print(f"seed {seed} x{args.factor:g} opt {t:.6g} s ({time.perf_counter() - t0:.1f} s)"
              + ("" if not msgs else "\n  " + "\n  ".join(msgs)), flush=True)
        bad += bool(msgs)
    print(f"done: {bad} of {args.seeds} seeds disagree", flush=True)


if __name__ == "__main__":
    main()
