"""Mutation check of the core: does the test suite notice a small wrong change? (Not run in CI.)

Each mutation below changes one expression of the package (a bound, a memory or pipeline-time
formula, the CP-SAT scaling, a validator rule, a baseline, a cost term) the way a plausible bug
would. The script copies the project to a temporary directory once, applies one mutation at a time
to the copy (the working tree is never touched), runs the tests chosen for it there, and reports
which mutations were killed (some test failed) and which survived. Survivors need a test that
kills them or a written reason why they are equivalent (docs/mutation-testing.md).

    python benchmarks/mutation_check.py                 # all mutations, table on stderr
    python benchmarks/mutation_check.py --only uniform-off-by-one --json
    python benchmarks/mutation_check.py --list

Machine output (--json) goes to stdout; progress and the table go to stderr. Expect minutes: each
mutation runs its tests (about 5-90 s on one core).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COPIED = ("haap_solver", "tests", "instances", "docs", "formulations", "README.md",
          "pyproject.toml")


@dataclass(frozen=True, kw_only=True)
class Mutation:
    """One small semantic change to one file of the package."""

    name: str
    """Short identifier (--only NAME)."""
    area: str
    """What it touches: bounds, memory, pipeline, scaling, validator, baselines, cost."""
    path: str
    """File, relative to the project root."""
    old: str
    """Exact text replaced; must occur exactly once in the file."""
    new: str
    """Replacement text."""
    tests: tuple[str, ...]
    """pytest arguments (files, node ids, -k expressions) that should kill it."""
    what: str
    """The bug it stands for, in words."""
    planted: bool = False
    """One of the four bugs issue 25's reviewer planted."""


MEMORY_TESTS = ("tests/test_memory_check.py", "tests/test_cost_formulas.py")
PIPELINE_TESTS = ("tests/test_cost_formulas.py", "tests/test_evaluate_regression.py")
COST_TESTS = ("tests/test_cost_formulas.py", "tests/test_evaluate_regression.py")
VALIDATOR_TESTS = ("tests/test_validator_edges.py", "tests/test_properties.py", "-k",
                   "validator or node or stages or memory")
BOUNDS_TESTS = ("tests/test_bounds.py", "-k",
                "fluid or never_exceed or stay_valid or of_plans_with or admits")

MUTATIONS: tuple[Mutation, ...] = (
    # -- the four bugs of issue 25 ---------------------------------------------------------------
    Mutation(
        name="load-balance-rate-min", area="bounds", planted=True,
        path="haap_solver/search/subproblem_bounds.py",
        old="rho[part.node_group] = max(rho.get(part.node_group, 0.0),",
        new="rho[part.node_group] = min(rho.get(part.node_group, 0.0),",
        tests=BOUNDS_TESTS,
        what="load-balance bound too high: the per-group rate takes min instead of max"),
    Mutation(
        name="scaling-drop-integrality", area="scaling", planted=True,
        path="haap_solver/search/scaling.py",
        old="err = (base + others) / abs(row.coeffs[target]) + 1.0",
        new="err = (base + others) / abs(row.coeffs[target])",
        tests=("tests/test_scaling_exhaustive.py",),
        what="CP-SAT rounding bound understated: the '+ 1.0' of the epigraph variable's "
             "integrality dropped"),
    Mutation(
        name="uniform-off-by-one", area="baselines", planted=True,
        path="haap_solver/baselines/uniform.py",
        old="if tp * pp * dp > n:", new="if tp * pp * dp >= n:",
        tests=("tests/test_uniform_grids.py",),
        what="uniform baseline skips every grid that uses all the GPUs ('>' to '>=')"),
    Mutation(
        name="activations-one-in-flight", area="memory", planted=True,
        path="haap_solver/cost/evaluate.py",
        old="acts = in_flight * num_layers * layer.activation_bytes",
        new="acts = num_layers * layer.activation_bytes",
        tests=MEMORY_TESTS,
        what="activation memory without the micro-batches in flight"),
    # -- memory -----------------------------------------------------------------------------------
    Mutation(
        name="zero2-shards-weights", area="memory",
        path="haap_solver/cost/memory.py",
        old="w = sb.weights / dp if z >= 3 else sb.weights",
        new="w = sb.weights / dp if z >= 2 else sb.weights",
        tests=MEMORY_TESTS, what="ZeRO-2 also shards the weights"),
    Mutation(
        name="in-flight-plus-one", area="memory",
        path="haap_solver/cost/memory.py",
        old="return min(num_stages - stage_index, num_micro_batches)",
        new="return min(num_stages - stage_index + 1, num_micro_batches)",
        tests=MEMORY_TESTS, what="1F1B holds one micro-batch more than p - i"),
    Mutation(
        name="flash-lse-halved", area="memory",
        path="haap_solver/cost/memory.py",
        old="core = 4.0 * a * s * batch  # fp32 log-sum-exp per query row",
        new="core = 2.0 * a * s * batch  # fp32 log-sum-exp per query row",
        tests=MEMORY_TESTS, what="fused attention's log-sum-exp counted in 16 bits"),
    Mutation(
        name="full-recompute-unsharded", area="memory",
        path="haap_solver/cost/memory.py",
        old="return 2.0 * sbh / rep * scale",
        new="return 2.0 * sbh * scale",
        tests=MEMORY_TESTS, what="full-recomputation checkpoint not sharded by SP"),
    Mutation(
        name="no-working-set-one-layer", area="memory",
        path="haap_solver/cost/evaluate.py",
        old="        if num_layers > 0:\n            acts += layer.working_bytes",
        new="        if num_layers > 1:\n            acts += layer.working_bytes",
        tests=MEMORY_TESTS, what="recomputation working set forgotten on one-layer stages"),
    Mutation(
        name="tied-copy-always", area="memory",
        path="haap_solver/cost/evaluate.py",
        old="if m.tied_embeddings and several_stages:",
        new="if m.tied_embeddings:",
        tests=MEMORY_TESTS,
        what="tied-embedding copy charged to a single-stage pipeline too"),
    Mutation(
        name="logits-not-vocab-parallel", area="memory",
        path="haap_solver/cost/memory.py",
        old="+ 4.0 * s * batch * model.vocab_size / tp)",
        new="+ 4.0 * s * batch * model.vocab_size)",
        tests=MEMORY_TESTS, what="fp32 logits not sharded over the TP ranks"),
    # -- pipeline time ----------------------------------------------------------------------------
    Mutation(
        name="1f1b-bubble-m", area="pipeline",
        path="haap_solver/cost/pipeline.py",
        old="total = sum(taus) + link_sum + (m - 1) * bottleneck",
        new="total = sum(taus) + link_sum + m * bottleneck",
        tests=PIPELINE_TESTS, what="1F1B steady state counts m bottlenecks instead of m - 1"),
    Mutation(
        name="1f1b-link-once", area="pipeline",
        path="haap_solver/cost/pipeline.py",
        old="else max(max_tau, 2 * link_max))",
        new="else max(max_tau, link_max))",
        tests=PIPELINE_TESTS, what="a link paces 1F1B at one direction's time, not two"),
    Mutation(
        name="gpipe-one-bottleneck", area="pipeline",
        path="haap_solver/cost/pipeline.py",
        old="total = sum(fwds) + sum(bwds) + link_sum + (m - 1) * (fmax + bmax)",
        new="total = sum(fwds) + sum(bwds) + link_sum + (m - 1) * max(fmax, bmax)",
        tests=PIPELINE_TESTS, what="GPipe paced by one bottleneck, not forward plus backward"),
    Mutation(
        name="p2p-one-way", area="pipeline",
        path="haap_solver/cost/pipeline.py",
        old="link_sum = 2 * sum(links)", new="link_sum = sum(links)",
        tests=PIPELINE_TESTS, what="pipeline fill counts the links in one direction only"),
    # -- cost terms -------------------------------------------------------------------------------
    Mutation(
        name="allreduce-half", area="cost",
        path="haap_solver/cost/comm.py",
        old="return 2 * (ranks - 1) / ranks * nbytes / (gb_s * 1e9) + 2 * (ranks - 1) * latency_s",
        new="return (ranks - 1) / ranks * nbytes / (gb_s * 1e9) + 2 * (ranks - 1) * latency_s",
        tests=COST_TESTS, what="ring all-reduce moves (p-1)/p n bytes instead of 2 (p-1)/p n"),
    Mutation(
        name="selective-free", area="cost",
        path="haap_solver/cost/flops.py",
        old="        return attention_core_forward_flops(model, batch)\n    return 0.0",
        new="        return 0.0\n    return 0.0",
        tests=COST_TESTS, what="selective recomputation costs no FLOPs"),
    Mutation(
        name="full-recompute-no-tp-comm", area="cost",
        path="haap_solver/cost/evaluate.py",
        old='tp_bwd = 2 * ar + (2 * ar if recompute == "full" else 0.0)',
        new="tp_bwd = 2 * ar",
        tests=COST_TESTS, what="full recomputation repeats no TP all-reduces"),
    Mutation(
        name="optimizer-unsharded", area="cost",
        path="haap_solver/cost/evaluate.py",
        old="opt_local = local / dp if t.zero_stage >= 1 else local",
        new="opt_local = local",
        tests=COST_TESTS, what="ZeRO-1 optimizer step over all local parameters"),
    Mutation(
        name="efficiency-width-tp-ignored", area="cost",
        path="haap_solver/cost/compute.py",
        old="(2.0 * n * h * h / tp, h / tp),", new="(2.0 * n * h * h / tp, h),",
        tests=COST_TESTS, what="the output projection's GEMM efficiency ignores the per-GPU "
                               "width h/t"),
    # -- validator ---------------------------------------------------------------------------------
    Mutation(
        name="validator-memory-off", area="validator",
        path="haap_solver/validate.py",
        old="if not mem.fits:", new="if mem.total_bytes > 2 * mem.capacity_bytes:",
        tests=("tests/test_memory_check.py", *VALIDATOR_TESTS),
        what="validator lets a GPU use twice its memory"),
    Mutation(
        name="validator-memory-from-cost-model", area="validator",
        path="haap_solver/validate.py",
        old="mem = gpu_memory(instance, plan, i, j, measured=measured)",
        new="mem = _from_cost_model(cm, plan, i, j)",
        tests=("tests/test_memory_check.py",),
        what="validator asks the cost model for memory again (no independent check)"),
    Mutation(
        name="validator-node-overbooked", area="validator",
        path="haap_solver/validate.py",
        old="        if n > cap:", new="        if n > cap + 1:",
        tests=VALIDATOR_TESTS,
        what="a node may be given one GPU more than it has"),
    Mutation(
        name="validator-tp-spans-nodes", area="validator",
        path="haap_solver/validate.py",
        old="if r.tp > group.gpus_per_node:", new="if r.tp > 2 * group.gpus_per_node:",
        tests=VALIDATOR_TESTS,
        what="TP may span two nodes"),
    Mutation(
        name="validator-layers-short", area="validator",
        path="haap_solver/validate.py",
        old="if expected_first != model.num_layers:",
        new="if expected_first > model.num_layers:",
        tests=VALIDATOR_TESTS,
        what="a plan may leave the last layers out"),
    Mutation(
        name="memory-check-in-flight", area="validator",
        path="haap_solver/memory_check.py",
        old="return min(num_stages - stage_index, num_micro_batches)",
        new="return min(num_stages - stage_index, num_micro_batches, 2)",
        tests=("tests/test_memory_check.py",),
        what="the validator's own memory holds at most two micro-batches in flight"),
    # -- scaling ----------------------------------------------------------------------------------
    Mutation(
        name="scaling-half-unit-less", area="scaling",
        path="haap_solver/search/scaling.py",
        old="base = 0.5 * weight + (1.0 if row.rhs else 0.0)",
        new="base = 0.25 * weight + (1.0 if row.rhs else 0.0)",
        tests=("tests/test_scaling_exhaustive.py",),
        what="rounding moves a coefficient by a quarter unit, not half"),
    Mutation(
        name="scaling-rhs-term", area="scaling",
        path="haap_solver/search/scaling.py",
        old="base = 0.5 * weight + (1.0 if row.rhs else 0.0)",
        new="base = 0.5 * weight",
        tests=("tests/test_scaling_exhaustive.py",),
        what="the outward rounding of a right-hand side not counted"),
    Mutation(
        name="scaling-chain-term", area="scaling",
        path="haap_solver/search/scaling.py",
        old="terms = [abs(row.coeffs[i]) * (errors.get(i, 0.0) + 1.0) for i in own if i != target]",
        new="terms = [abs(row.coeffs[i]) * errors.get(i, 0.0) for i in own if i != target]",
        tests=("tests/test_scaling_exhaustive.py",),
        what="a chained time variable passes on its error without the extra unit"),
    Mutation(
        name="scaling-exclusive-max", area="scaling",
        path="haap_solver/search/scaling.py",
        old="others = (max(terms, default=0.0) if row.exclusive else sum(terms))",
        new="others = max(terms, default=0.0)",
        tests=("tests/test_scaling_exhaustive.py",),
        what="errors of a non-exclusive row's time variables do not add up"),
    # -- baselines and bounds ---------------------------------------------------------------------
    Mutation(
        name="uniform-pp-off-by-one", area="baselines",
        path="haap_solver/baselines/uniform.py",
        old="if tp * pp > n:", new="if tp * pp >= n:",
        tests=("tests/test_uniform_grids.py",),
        what="uniform baseline skips pipelines with TP x PP = all the GPUs"),
    Mutation(
        name="uniform-one-share", area="baselines",
        path="haap_solver/baselines/uniform.py",
        old="for share in range(1, t.max_micro_batch_share + 1):",
        new="for share in range(1, t.max_micro_batch_share):",
        tests=("tests/test_uniform_grids.py",),
        what="uniform baseline never tries the largest micro-batch"),
    Mutation(
        name="proportional-repair-wrong-stage", area="baselines",
        path="haap_solver/baselines/common.py",
        old="k = min(room, key=lambda j: (n[j] + 1) / speeds[j])",
        new="k = max(room, key=lambda j: (n[j] + 1) / speeds[j])",
        tests=("tests/test_baselines.py", "tests/test_uniform_grids.py"),
        what="memory repair moves layers to the most loaded stage"),
    Mutation(
        name="bound-free-items-min", area="bounds",
        path="haap_solver/search/bounds.py",
        old="most = free_block.layers(t).max(axis=1, initial=0.0)",
        new="most = free_block.layers(t).min(axis=1, initial=0.0)",
        tests=BOUNDS_TESTS,
        what="capacity bound counts free items at their fewest layers (bound too high)"),
)

# Used by the validator-memory-from-cost-model mutation: the old validator's memory call.
_FROM_COST_MODEL = '''

def _from_cost_model(cm, plan, i, j):  # type: ignore[no-untyped-def]
    from haap_solver.cost.memory import in_flight_micro_batches
    from haap_solver.memory_check import GpuMemory
    p = len(plan.stages)
    stage = plan.stages[i]
    r = stage.replicas[j]
    mem = cm.replica_memory(
        device=r.device, tp=r.tp, share=r.micro_batch_share, dp=stage.dp,
        num_layers=stage.num_layers, recompute=stage.recompute,
        params=cm.stage_params(stage, i, p), is_first=i == 0, is_last=i == p - 1,
        in_flight=in_flight_micro_batches(plan.schedule, i, p, plan.num_micro_batches))
    return GpuMemory(weights_bytes=mem.weights, grads_bytes=mem.grads,
                     optimizer_bytes=mem.optimizer, activations_bytes=mem.activations,
                     extras_bytes=mem.extras, reserved_bytes=mem.reserved,
                     capacity_bytes=mem.capacity)
'''


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What the tests said about one mutation."""

    name: str
    """The mutation's name."""
    status: str
    """killed, survived, timeout, or stale (its text is no longer in the file)."""
    killed_by: tuple[str, ...]
    """Failing test ids (pytest's short summary), empty unless killed."""
    seconds: float
    """Wall time of the test run."""


def copy_project(dest: Path) -> None:
    for name in COPIED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns(
                "__pycache__", ".hypothesis", "*.pyc"))
        else:
            shutil.copy2(src, dest / name)


def pytest_command(args: tuple[str, ...]) -> list[str]:
    # -n 0: in one process, so that -x stops at the first failure (the mutants run side by side).
    return [sys.executable, "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:cacheprovider",
            "-rf", "--no-header", *args]


def run_tests(workdir: Path, args: tuple[str, ...], timeout_s: float) -> tuple[int | None, str,
                                                                                  float]:
    env = dict(os.environ, PYTHONPATH=str(workdir), PYTHONDONTWRITEBYTECODE="1")
    start = time.perf_counter()
    try:
        done = subprocess.run(pytest_command(args), cwd=workdir, env=env, capture_output=True,
                              text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, "", time.perf_counter() - start
    return done.returncode, done.stdout + done.stderr, time.perf_counter() - start


def failed_tests(output: str) -> tuple[str, ...]:
    return tuple(line.split(" ", 1)[1].split(" - ", 1)[0]
                 for line in output.splitlines() if line.startswith(("FAILED ", "ERROR ")))


def check_imports_copy(workdir: Path) -> None:
    """The copy, not the working tree (an editable install), must be what the tests import."""
    env = dict(os.environ, PYTHONPATH=str(workdir))
    out = subprocess.run([sys.executable, "-c", "import haap_solver; print(haap_solver.__file__)"],
                         cwd=workdir, env=env, capture_output=True, text=True, check=True)
    where = Path(out.stdout.strip()).resolve()
    if workdir.resolve() not in where.parents:
        raise SystemExit(f"mutation_check: the tests would import {where}, not the copy")


def apply(workdir: Path, mutation: Mutation) -> str | None:
    """Apply `mutation` to the copy; return the original text (None when the text is stale)."""
    path = workdir / mutation.path
    original = path.read_text()
    if original.count(mutation.old) != 1:
        return None
    mutated = original.replace(mutation.old, mutation.new)
    if mutation.name == "validator-memory-from-cost-model":
        mutated += _FROM_COST_MODEL
    path.write_text(mutated)
    return original


def run(mutations: list[Mutation], timeout_s: float) -> list[Outcome]:
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="haap-mutation-") as tmp:
        workdir = Path(tmp)
        copy_project(workdir)
        check_imports_copy(workdir)
        for k, mutation in enumerate(mutations, 1):
            original = apply(workdir, mutation)
            if original is None:
                outcome = Outcome(name=mutation.name, status="stale", killed_by=(), seconds=0.0)
            else:
                try:
                    code, output, seconds = run_tests(workdir, mutation.tests, timeout_s)
                finally:
                    (workdir / mutation.path).write_text(original)
                if code is None:
                    status = "timeout"
                elif code == 0:
                    status = "survived"
                elif code == 1:
                    status = "killed"
                else:  # collection errors, internal errors: the mutation broke the run itself
                    status = f"error (pytest exit {code})"
                outcome = Outcome(name=mutation.name, status=status, seconds=seconds,
                                  killed_by=failed_tests(output) if code else ())
            outcomes.append(outcome)
            print(f"[{k}/{len(mutations)}] {mutation.name}: {outcome.status} "
                  f"({outcome.seconds:.0f} s) {' '.join(outcome.killed_by[:1])}",
                  file=sys.stderr, flush=True)
    return outcomes


def summary(outcomes: list[Outcome]) -> str:
    killed = sum(o.status == "killed" for o in outcomes)
    counted = sum(o.status in ("killed", "survived", "timeout") for o in outcomes)
    return f"{killed} of {counted} mutations killed ({killed / max(counted, 1):.0%})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="run only this mutation (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--json", action="store_true", help="print the outcomes as JSON")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds per mutation's test run (default 900)")
    args = parser.parse_args(argv)
    names = {m.name for m in MUTATIONS}
    unknown = [n for n in args.only if n not in names]
    if unknown:
        parser.error(f"unknown mutation {', '.join(unknown)}; --list shows them")
    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only]
    if args.list:
        for m in chosen:
            print(f"{m.name:34} {m.area:10} {m.path}: {m.what}")
        return 0
    outcomes = run(chosen, args.timeout)
    print(summary(outcomes), file=sys.stderr)
    for o in outcomes:
        if o.status != "killed":
            print(f"  {o.status}: {o.name}", file=sys.stderr)
    if args.json:
        by_name = {m.name: m for m in chosen}
        print(json.dumps([{**asdict(o), "area": by_name[o.name].area,
                           "what": by_name[o.name].what, "planted": by_name[o.name].planted,
                           "tests": list(by_name[o.name].tests)} for o in outcomes], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
