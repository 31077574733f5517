"""Every tuning constant of the search in one place, each with the measurement that set it.

None of them changes what the search proves: they set budgets, orders and thresholds, so they
change how soon it finds and proves a plan (and, where the time limit ends a search, how far it
got). Modules read them as ``tuning.NAME`` at the time of use, so a test or an experiment may set
one on this module (except DEFAULT_BACKEND, the default of `solve`'s signature, read once).
"""

from __future__ import annotations

FLUID_GRID = (1.02, 48)
"""Bottleneck grid of `bottleneck_costs`: ratio between neighbours and number of steps above the
floor (up to 2.6x the floor; above, only the fill without a bottleneck cap counts). With the 32
multipliers of `_FLUID_MULTIPLIERS`, the cheap bounds of all 1,920 sub-problems of
gpt3-175b-4types-x1024 take 0.18 s and the least is 10.70 s; (1.03, 32) with 16 multipliers:
0.15 s, 10.60 s."""

REFINE_SPLITS = 8
"""Splits of each bottleneck interval of the walk of Sec. 4.5 (refined_interval_cost). At
16,384 GPUs (8 micro-batches) the least strong bound went from 13.63 s to 14.24 s (a 30 s run's
gap from 5.7% to 1.5%); at 1,024 GPUs (128 micro-batches) it changed nothing and cost 9% more
strengthening time."""

TAIL_LP_WITHIN = 0.8
"""strong_lower_bound runs the tail-threshold LP walk only for sub-problems whose cheaper bound is
within this factor of the incumbent (a speed heuristic; every bound stays valid), outside
TAIL_LP_ALL_GPUS."""

TAIL_STAIRCASE_CUTS = True
"""Whether full models get the tail staircase cuts (R') of Sec. 5 (they change no optimum, only
how fast it is proven). On gpt3-6.7b-a100x128-v100x256-a10x128-4gpu the (8, 16) sub-problem
holds the optimum and only its model proves it; at the optimum's cutoff, one thread: HiGHS
141 s without, 3.2 s with, CP-SAT 74 s and 1.2 s (its relaxation's tail is under half the
plan's; the cuts give the plan's tail at the bottleneck floor); (7, 32) HiGHS over 120 s and
0.7 s; (7, 16) CP-SAT 10.8 s and 0.4 s. The instance went from a 0.56% gap at 30 s (two
threads) to a proof in about 23 s. On gpt3-2.7b-a100x32-v100x96-4gpu the open models' bottleneck
is off the floor and the cuts do not close them ((5, 16): HiGHS 9.2 s either way)."""

TAIL_CUT_MIN_SHARE = 0.02
"""A model gets the tail staircase cuts only where the least tail at its bottleneck floor is at
least this share of its cutoff (or floor): on llama3.2-1b-rtx4090-a10 the tails are 0.08% of
the objective, the cuts cannot move a bound, and CP-SAT's search on the (5, 4) model went from
0.27 s to 0.5 s unproven with them; on the clusters of 4-GPU nodes the tail is about a quarter
of the iteration."""

CPSAT_FIRST_WITH_TAIL_CUTS = True
"""Under `auto`, a sub-problem's first full model goes to CP-SAT where it has the tail staircase
cuts (R') of Sec. 5, whatever its size (elsewhere `auto` decides by size; the next model of a
sub-problem left open goes to the other backend, CPSAT_KEEPS_TAIL_CUT_MODELS_S aside). The
cuts' rows have integer coefficients on time variables, which CP-SAT propagates; on the models
that decide gpt3-6.7b-a100x128-v100x256-a10x128-4gpu's proof (888-1,268 variables, above
AUTO_CPSAT_MAX_VARS), at the optimum's cutoff, one thread: (7, 16) HiGHS 2.27 s / CP-SAT 0.92 s,
(8, 16) 2.60 / 1.57 s, (7, 32) 0.84 / 0.23 s. `haap solve --threads 2 --time-limit 30`
(2026-12-05, host otherwise idle), off / on, two runs each: that instance 12.85, 13.09 /
12.10, 12.07 s; gpt3-2.7b-a100x8-v100x8-4gpu 18.40, 18.66 / 18.09, 18.22 s;
gpt3-2.7b-a100x32-v100x96-4gpu gap 4.83% / 4.91% (both runs); gpt3-13b-a100x32-ib-roce and
gpt3-13b-h100x64 (one model with cuts each) unchanged; no other instance of the matrix has
models with cuts."""

CPSAT_KEEPS_TAIL_CUT_MODELS_S = 1.0
"""Under `auto`, a sub-problem's second full model with the tail staircase cuts goes to CP-SAT
again where CP-SAT's first, shorter than this, ended open; then the portfolio alternates
(`BranchAndBound.model_backend`; only once, so that a CP-SAT that cannot prove the model hands
it to HiGHS at the next pass). The first pass's 0.5 s is too short to judge the backend that
CPSAT_FIRST_WITH_TAIL_CUTS picked: on gpt3-2.7b-a100x8-v100x8-4gpu the optimum's sub-problem
(4, 8) went CP-SAT 0.53 s (open), HiGHS 2.01 s (open, bound 12.81 s against the 13.35 s
cutoff), CP-SAT 1.01 s (proven), and
gpt3-6.7b-a100x128-v100x256-a10x128-4gpu's (8, 16) CP-SAT 0.5 s, HiGHS 2 s, CP-SAT 1.6 s (both
open, then proven). 0 turns it off (strict alternation). `haap solve --threads 2 --time-limit
30` (2026-12-05), 0 / 1.0: gpt3-2.7b-a100x8-v100x8-4gpu 7.42 / 5.54 s (CP-SAT proves (4, 8) in
its 2 s pass, 1.01 s); gpt3-6.7b-a100x128-v100x256-a10x128-4gpu 9.68 / 9.42 s,
gpt3-2.7b-a100x32-v100x96-4gpu 10.73 / 10.88 s, llama3-8b-h100-a100-l40s 3.55 / 3.51 s,
llama3-70b-h100x32-a100x32 2.92 / 2.95 s (noise), the same optima. (Measured with
FIRST_PASS_BUDGET_S at 0.5 s; at 1.2 s a first model ends open under 1 s only where the deadline
cut its budget.)"""

TAIL_CUT_SHARE = 0.2
"""The most of a model's time budget its tail staircase may take (its LPs are mostly the
strengthening's, remembered: 0.06-0.15 s at 128-512 GPUs); cut short, the model goes without."""

TAIL_LP_ALL_GPUS = (128, 256)
"""On clusters of this many GPUs (inclusive) the walk runs wherever the cheaper bound is below the
incumbent. On clusters of many small nodes the data-parallel tail over the nodes' NICs is most of
the iteration, which the cheaper bounds do not see: on gpt3-2.7b-a100x32-v100x96-4gpu (128 GPUs,
single-type, one thread, 120 s on a loaded host, about 23 s of CPU either way) the least bound
of the open sub-problems was 2.23 s with the factor 0.8 and 3.54 s without it, against a plan of
3.68 s. Below 128 GPUs it changed no proof of the benchmark matrix, and it made the bound and
agreement tests' tiny instances take about three quarters more process time (409 s against
231 s for test_bounds, test_bruteforce_agreement and test_search_exact, on a loaded host)."""

LEVEL_STEP = 0.0
"""On clusters of LEVEL_GPUS the first pass strengthens a sub-problem against a level this share
of the threshold above the next least bound in its queue, not against the threshold at once
(`BranchAndBound.strengthening_level`, formulations Sec. 4.6 *Levels*); 0: never.

Off since 2026-12-05: with the incumbents that now come early on those clusters (the balanced
seed, the polish's reorder move, the tail cuts' proofs) the levels only cost the extra walks.
`haap solve`, 2 cores, host otherwise idle, 0.05 against 0: gpt3-6.7b-a100x128-v100x256-a10x128
-4gpu, two threads, proven in 13.7 s against 11.9 s (0.15: 12.0 s), one thread 26.1 s against
23.6 s, at a 10 s limit the same gap (28.95% / 28.74%: the search over plans with a mixed stage
sets it); gpt3-2.7b-a100x32-v100x96-4gpu at 30 s, two threads, gap 4.83% against 4.91% (0.15:
4.91%), one thread 4.91% against 4.82%, at 10 s 8.06% both (its bound is set by the open
sub-problems' models, not by strengthening). The measurement that put them on, with the plans
the search had then:

0.05 was the only step measured (2026-12-03, 2 cores, host otherwise idle). What it was for: the
search over plans with a mixed stage of gpt3-2.7b-a100x32-v100x96-4gpu alone, one thread, given
a plan of 4.659 s (then at once): without levels 10 of 165 strengthenings took 20 of 25 s of
CPU, and in 28 s its bound was 2.73, 2.96 and 2.79 s in three runs (the cheap sub-problems not
reached) and 4.21 s in a fourth (the pass ended in time, at 25-29 s); with levels 4.47 and 4.48
s in two runs, the pass over all of them taking about 1.4 times the CPU (LP answers remembered:
without that, a tenth more again)."""

LEVEL_GPUS = (128, 512)
"""Clusters (GPUs, inclusive) where both searches strengthen in levels (LEVEL_STEP). Measured
(2026-12-03, `haap solve --time-limit 30`): gpt3-2.7b-a100x32-v100x96-4gpu, two threads, gap
41.6% -> 10.8% (the mixed search's bound 2.72 s -> 4.48 s), one thread `--no-mixed` 13.0% and
16.9% -> 10.8% twice; gpt3-6.7b-a100x128-v100x256-a10x128-4gpu, two threads, 31.3% -> 19.1%.
Levels everywhere, two threads: below 128 GPUs proofs came later (gpt3-175b-a100x64 14.4 s ->
26.5 s, llama3.2-1b-h100x4-l40sx4 2.5 s -> 4.1 s, llama3.2-1b-rtx4090-a10 8.3 s -> 10.1 s; the
others of the matrix within a second), at 1,024 and 16,384 GPUs the plans found in 30 s were
worse (gpt3-175b-4types-x1024 16.05 s -> 16.32 s, llama3-405b-6types-x16384 14.69 s ->
16.72 s); in the search over plans with a mixed stage alone, no change there."""

TAIL_CAPACITY_PRUNE = True
"""strong_lower_bound tries to prune with the GPU-granular capacity with a tail threshold (Sec.
4.9, no LP) before the positional LPs, where it applies. Measured (2026-12-03, every
single-type sub-problem below a fixed plan strengthened, CPU on a shared 2-core host):
gpt3-2.7b-a100x32-v100x96-4gpu against 4.659 s: the prune test alone closes 140 of the 234
below the plan in 1.4-2.1 s (the granular step 70 in 0.7 s), but the LP walk closed those
cheaply too; the strong bound still closes 216 and leaves the same 18 open at the same bounds
(3.87-4.65 s). gpt3-6.7b-a100x128-v100x256-a10x128-4gpu against 4.043 s: strong bound without
it 140 of 179 closed (4.2-5.1 s), with prune and walk 176 of 179 (11.1 s), least open bound
2.71 s -> 4.00 s."""

TAIL_CAPACITY_WALK = True
"""Where the prune test of TAIL_CAPACITY_PRUNE fails, walk on for the bound (Sec. 4.5's walk
with the tail-threshold capacity as its question, no LP)."""

TAIL_CAPACITY_MIXED_WALK = False
"""In the search over plans with a mixed stage, the strong bound runs the tail-capacity prune
test and walk (in half-units, Sec. 4.9 *Mixed stages*) before its LPs, as the single-type
search does. Off: there the tables are rarely shared (every mixed part's layers key them), so
the walk costs several times the single-type one, and the LP walk closed the same
sub-problems anyway. Measured (2026-12-03, gpt3-2.7b-a100x32-v100x96-4gpu, every sub-problem
of the mixed search below a plan of 4.659 s strengthened against it, CPU on a loaded 2-core
host): on, 122 s and 8 of 194 left open, the least at 4.210 s; off (the half-unit floor only,
as the granular floor), 41 s and the same 8 open at the same bounds (before the half-unit
floor, whose granular step closes 37 of them without an LP: 47 s, the same 8). The walk
raised the least bound of all 194 to 3.23 s alone, so a faster table (they are rarely
shared: every mixed part's layers key one) would make it pay. The floor is taken either way
(`SearchState.granular_floor`)."""

LEVEL_MIN_TIME_LIMIT_S = 10.0
"""Searches with a shorter time limit strengthen against the threshold at once. With levels no
sub-problem closes until the queue has risen near the threshold; a short search (a target's
restricted spaces, `targets.solve_for_target`, share its limit in slices of about a second)
then ends with nothing closed. In the benchmark run of 2026-12-03 18:41 UTC (levels in every
search of 128-512 GPUs), the DeepSpeed target of gpt3-6.7b-a100x128-v100x256-a10x128-4gpu
returned a plan 36.8% slower than the unrestricted one (0.2% faster in the run before), and
the Megatron target of gpt3-2.7b-a100x32-v100x96-4gpu the same plan at a 60.4% gap (20.2%)."""

TAIL_CAPACITY_MIXED_WALK_GPUS = (257, 512)
"""Clusters (GPUs, inclusive) where TAIL_CAPACITY_MIXED_WALK is on whatever its value. There
the LP walk runs only within TAIL_LP_WITHIN of the incumbent (it runs everywhere on
TAIL_LP_ALL_GPUS), and the mixed search's strong bounds without the tail-capacity walk stayed
far below the plan. Measured (2026-12-03, gpt3-6.7b-a100x128-v100x256-a10x128-4gpu, the search
over plans with a mixed stage alone, one thread, given a plan of 4.043 s then at once; levels
on): without the walk it ended after 12-15 s with 26 sub-problems open, the least at 3.278 s
(nothing left to do: their models are too large); with it, 3.755 s at 28 s and all closed
(optimal) after 38-41 s. On gpt3-2.7b-a100x32-v100x96-4gpu (128 GPUs) the same walk left
3.60 s at 28 s against 4.39-4.48 s without it: not there."""

TAIL_CAPACITY_PASS_SHARE = 0.25
"""Share of the time limit the single-type search may spend before its first pass raising
every sub-problem's bound by the tail-threshold capacity (BranchAndBound.tail_capacity_pass);
0: no such pass. Measured (2026-12-03, `haap solve --threads 1 --time-limit 30`, host shared
with two niced probes), this pass with the strong bound's prune and walk against without:
gpt3-2.7b-a100x32-v100x96-4gpu --no-mixed gap 70.37% -> 27.09% (bound 1.380 -> 3.397 s; 19
-> 142 sub-problems closed by a bound); with mixed stages its single-type phase 69.57% ->
28.68%, the result unchanged at 71.17% (the mixed phase's cheap bounds, which this bound does
not cover, are the least); gpt3-6.7b-a100x128-v100x256-a10x128-4gpu 39.99% -> 31.30%
(single-type phase 26.77% -> 5.47%); llama3-8b-h100-a100-l40s proven optimal at 12.0592 s
both (39.6 s and 40.3 s); gpt3-2.7b-a100x8-v100x8-4gpu 13.3483 s at a 1.52% gap after 240 s
both."""

TAIL_CAPACITY_PASS_SHARE_MIXED = 0.5
"""The same share for the pass where mixed-type stages are candidates, which takes the
granular step of the half-unit tables (Sec. 4.9 *Mixed stages*) rather than the walk: cheap
enough to reach every sub-problem, and the least bound it leaves is the search's bound. With
one thread the search over plans with a mixed stage has what the single-type one left (a
quarter of the limit at most): on gpt3-2.7b-a100x32-v100x96-4gpu (30 s, loaded host) a quarter
of that reached 67 of its sub-problems (mixed-phase bound 1.31 s -> 1.72 s)."""

MIXED_HALF_UNIT_FLOOR_MAX_GPUS = 512
"""Clusters (GPUs, at most) where the search over plans with a mixed stage takes the half-unit
tables' floor as its granular floor (SearchState.granular_floor). Measured at 16 and 128 GPUs
(2026-12-03, one thread, 30 s, loaded host): gpt3-2.7b-a100x8-v100x8-4gpu's mixed-phase bound
unchanged at 8.166 s, gpt3-2.7b-a100x32-v100x96-4gpu's strong bounds of every mixed
sub-problem 47 s -> 41 s of CPU, the same left open. Above, unmeasured: with free items (three
groups or more) a table spans every GPU of its group, thousands at 1,024 GPUs."""

TAIL_CAPACITY_PASS_GPUS = (128, 512)
"""Clusters (GPUs, inclusive) where that pass runs: where it was measured to pay. Below, the
lazy strengthening reaches every sub-problem anyway (and the pass, closing a toy instance's
sub-problems before the first pass, took the Metis-style seed's turn away:
test_metis_seed_runs_only_where_the_search_has_not_beaten_the_grid); above, unmeasured."""

TAIL_CAPACITY_IN_LP_WALK = False
"""The LP walk of Sec. 4.5 asks the tail-threshold capacity before each LP (a necessary
condition too). Off: on gpt3-2.7b-a100x32-v100x96-4gpu against 4.659 s it closed no more of
the 234 sub-problems for about the same CPU, and two walks ran out of steps on its finer
staircase and returned lower bounds (3.871 -> 3.705 s, 4.603 -> 4.535 s)."""

WARM_START_SUBPROBLEMS = (16, 48)
"""Sub-problems (per schedule) the warm start tries: on clusters of up to WARM_START_LARGE_GPUS
GPUs, and above. On the smaller ones, the best of each micro-batch size by the cheap bound first,
then the rest in its order: the cheap bound favours small micro-batches (their bubble is small)
and ranked the sub-problem of llama3-8b-h100-a100-l40s's optimum (4 stages, micro-batch 8) 22nd,
past the 16 taken, so that only a dive found the optimum (1.2-1.4 s into a one-thread
single-type search; 0.5 s with the sizes' leads first, WARM_CONFIGS_PER_GROUP = 3). Where a
strong bound costs milliseconds, the dives of the first pass find the incumbent sooner than
more warm-start models do (gpt3-2.7b-a100-40gx8-v100x8: 2.4 s -> 1.6 s in all); on large
clusters every bound costs 0.1-1 s, and the better incumbent of more sub-problems pays
(llama3-405b-6types-x16384 at 30 s: 15.65 s with 16, 14.83 s with 32, then with restricted
models). There the warm start now runs seeds only (about 0.1 s a sub-problem, no model: their
models are too large), so it affords 48."""

WARM_START_LARGE_GPUS = 256
"""Where a cluster counts as large (more GPUs): the warm start, the baseline seeds and the mixed
search's dives change there (WARM_START_SUBPROBLEMS, WARM_RANK_POOL, SEED_AFTER_SHARE,
MIXED_DIVES_MAX_GPUS)."""

WARM_CONFIGS_PER_GROUP = 3
"""Configurations per node group in the warm start's restricted models: the best by
`_ranked_per_group`. With two, the restricted models of llama3-70b-h100x32-a100x32 could not
hold its optimum (three H100 configurations), which only a dive's full model found, 1.0 s into a
one-thread single-type search; with three the warm start finds it at 0.4 s. Four cost more than
they found (llama3-8b-h100-a100-l40s: the optimum at 1.7-1.9 s against 0.5 s)."""

WARM_RANK_POOL = 200
"""On clusters above WARM_START_LARGE_GPUS the warm start takes its sub-problems by
`granular_lower_bound` (no LP, milliseconds) among this many best by the cheap bound, ranked
within half of its time: the cheap bound ranks the sub-problem of gpt3-175b-4types-x1024's best
plan, (27, 12), 156th of 1,920, the granular one 34th. Its seed then comes at 6 s instead of
12-22 s, and a 30 s two-thread run ends at a 0.99% gap instead of 5-13% (two runs each)."""

DIVE_FIRST = 4
DIVE_EVERY = 32
"""In the first pass, after DIVE_FIRST strengthenings without a model, then after every
DIVE_EVERY, the sub-problem with the least strong bound so far is dived into for an early
incumbent (`DIVE_FULL_MAX_VARS`). With two processes the sooner the first search's optimum, the
sooner the second can use it (formulations Sec. 4.6)."""

FIRST_PASS_BUDGET_S = 1.2
"""The time budget of a sub-problem's model in the first pass (Sec. 4.6 Passes). A model cut
off there is solved again from scratch in a later pass, so a budget a little short of what the
model needs costs the whole first attempt: on gpt3-2.7b-a100x8-v100x8-4gpu the (4, 8) model
needs CP-SAT about 1.1 s (with CPSAT_ONE_WORKER_LINEARIZATION 2) and went 0.5 s open, then 1.1
s. `haap solve --threads 2 --time-limit 30`, 0.5 / 1.2 (2026-12-05, shared host): that instance
6.79, 6.73, 6.75 / 6.14, 5.82, 5.80 s; gpt3-2.7b-a100x32-v100x96-4gpu 9.37, 9.50, 9.07 / 9.09,
9.80, 9.08 s; gpt3-6.7b-a100x128-v100x256-a10x128-4gpu 8.90, 9.16, 8.60 / 9.07, 8.66, 8.87 s;
llama3-405b-6types-x16384 13.90, 14.24 / 14.38, 14.36 s (gap 0.15% each); seven other instances
within 0.07 s; gpt3-175b-4types-x1024 gap 27.40% / 27.38%. The same optima. At most
FIRST_PASS_SHARE of the time limit (`BranchAndBound.first_pass_budget`)."""

FIRST_PASS_SHARE = 0.25
"""The most of the time limit one first-pass model may take (FIRST_PASS_BUDGET_S): 0.5 s in a 2 s
re-plan, as before FIRST_PASS_BUDGET_S grew. benchmarks/quick_replans.py fleet-1024 --limit 2,
FIRST_PASS_BUDGET_S 0.5 / 1.2 uncapped: the plan after "16 new H100 nodes arrive as a new group"
1.6798 / 1.7213 s (the bench's re-plan in 2 s there 1.0000x / 1.0247x the cold plan); after
"third H100 node fails" 2.0057 / 1.9800 s; the other five the same."""

MIXED_DIVES_MAX_GPUS = 256
"""The search over plans with a mixed stage makes no dives on clusters above this many GPUs (the
same line as WARM_START_LARGE_GPUS): there its full models are too large for a dive, so a dive
only runs the warm-start seeds of the least strong bound, which never gave the plan in our runs
(at 1,024 and 16,384 GPUs every plan found is single-type, found by the first search) and took
about 1 s of the second process's 16 s at 1,024 GPUs. Without them, two threads with --gap 0.01
went from 18.1-18.4 s to 17.4-17.5 s there, and without a gap target llama3-405b-6types-x16384
from 18.7 s to 13.7 s (the same plan and gap: the second process answers sooner)."""

INCUMBENT_FIRST_BUDGET_S = 2.0
"""The first pass's budget for the model of the sub-problem the incumbent belongs to
(`BranchAndBound.holds_incumbent`), in place of FIRST_PASS_BUDGET_S: while the incumbent is its
optimum no bound can close it, and its model must reach that optimum, not only show that nothing
lies below a cutoff. On gpt3-6.7b-a100x128-v100x256-a10x128-4gpu the (8, 16) model went CP-SAT
0.5 s (open), HiGHS 2 s (open), CP-SAT 1.6 s (optimal), each from scratch. `haap solve --threads
2 --time-limit 30` (2026-12-05, host otherwise idle), 0.5 / 2.0: that instance 12.27, 12.34 /
9.68, 9.92 s (proven); llama3-8b-h100-a100-l40s 3.87 / 3.91 s, llama3-70b-h100x32-a100x32 2.88
/ 3.01, gpt3-2.7b-a100x8-v100x8-4gpu 18.09 / 18.55, gpt3-175b-a100x64 4.57 / 4.46,
llama3.2-1b-rtx4090-a10 2.07 / 2.08, gpt3-1.3b-t4x4-a100x12 1.28 / 1.25, gpt3-2.7b-a100-40gx8-
v100x8 1.30 / 1.28 s, gpt3-2.7b-a100x32-v100x96-4gpu gap 4.93% / 4.91% at 30 s."""

DIVE_BUDGET_S = 2.0
"""The time budget of a dive's full model in the single-type search (Sec. 4.6 Passes): the dived
sub-problem is where the optimum tends to be, and a model cut off at FIRST_PASS_BUDGET_S is
solved again from scratch in the next pass (llama3-8b-h100-a100-l40s: 0.5 s, then 0.6 s more,
against one model of 0.74 s). The search over plans with a mixed stage keeps the first pass's
budget: its dived models rarely hold a better plan."""

MODEL_DEADLINE_MARGIN_S = 0.05
MODEL_DEADLINE_MARGIN_SHARE = 0.1
"""A model whose time limit is the search's deadline (not its own budget) is given the time left
less the larger of these two (seconds, share of the time left): a solver returns some time after
its limit (HiGHS checks it between nodes and between the cut rounds of its root: 0.02-0.11 s
past limits of 0.16-1.1 s on the fleet-1024 and spot-a100-v100 models, in models it solves
alone too), which put 2 s re-plans of those traces at 2.01-2.03 s wall. Only the last model of
a search meets it; a model's own budget (FIRST_PASS_BUDGET_S, DIVE_BUDGET_S, the passes') is
given whole."""

DIVE_FULL_MAX_VARS = 2000
"""A dive solves the sub-problem's full model (its first-pass model, 0.5 s) where that model has
at most this many variables and goes to HiGHS or CP-SAT under `auto`; elsewhere it runs the
warm-start step (restricted model, the sub-problem stays queued). On the 500-variable models of
llama3-70b-h100x32-a100x32 the full model finds the optimum where the restricted one (two
configurations per node group) cannot: the optimum uses three H100 configurations. At 1,024
GPUs and above the full models have 3,600 variables or more and HiGHS finds no plan in 0.5 s;
with `cpsat` alone a full-model dive found poor plans (Sec. 4.6).

Nor is a model this large solved anywhere else: the seed and the strong bound of the integer
capacity program (Sec. 4.4-4.6) stand in for it, and the sub-problem stays open with its bound
where they do not close it. On gpt3-175b-4types-x1024 and llama3-405b-6types-x16384 these models
never found a plan (0.5 s each: 25 of them took 12 s of a 30 s run; 60 s on one found none
either), and HiGHS's root heuristics on them do not look at the clock: a 5,600-variable model
given 2 s returned after 6.3 s, an 18,002-variable one (plans with a mixed stage) given 38 s
after 147 s, so that a 120 s run with two threads lost its second process's answer. No model of
the instances up to 64 GPUs is that large."""

LAST_RESORT_MAX_GPUS = 256
LAST_RESORT_MAX_VARS = 8000
LAST_RESORT_MIN_S = 2.0
"""After the follow-up passes, on clusters of at most LAST_RESORT_MAX_GPUS GPUs, a sub-problem
left open only because its full model has more than DIVE_FULL_MAX_VARS variables gets that model
(HiGHS under `auto`, at most LAST_RESORT_MAX_VARS variables) with the time left, where at least
LAST_RESORT_MIN_S is (`BranchAndBound.last_resort`). On small clusters such models come from the
rich space (uneven shares, the full mixed space), not from the cluster's size: on the 40-GPU
cluster of spot-a100-v100's fifth event (three A100 nodes, one slowed, two V100 nodes) the search
over plans with a mixed stage ended at 13.5 s of a 60 s limit, 0.03% from a proof, its last
sub-problem's 5,096-variable model never solved; HiGHS proves it in 12.9 s (one thread) and
returned 0.04 s past a 3 s limit. Above LAST_RESORT_MAX_GPUS the models are large because the
cluster is (DIVE_FULL_MAX_VARS: none found a plan, and HiGHS overran its limits there, by
seconds at 5,600 variables and by minutes at 18,002, which lost a second process's answer):
LAST_RESORT_MAX_VARS stays near the size measured here."""

BALANCED_SEED_EARLY_GPUS = 64
"""From this many GPUs (up to WARM_START_LARGE_GPUS) the balanced-grids seed
(haap_solver/baselines/balanced.py, 20% of the time limit at most) runs right after the uniform
one, before the first pass; below, where the passes usually prove the optimum in about a second,
it waits for SEED_AFTER_SHARE like the Metis-style seed (it costs 0.05-0.4 s there). Measured
(2026-12-02, 30 s, two threads): on gpt3-2.7b-a100x32-v100x96-4gpu the search returned the
uniform grid's 5.128 s without it and 4.663 s with it (the best plan known); on
gpt3-6.7b-a100x128-v100x256-a10x128-4gpu (large: after SEED_AFTER_SHARE) 4.719 s -> 4.077 s.
Below this many GPUs it is skipped, like the Metis-style seed, where the search's own plan
already beats the uniform grid's: on llama3-8b-h100-a100-l40s (40 GPUs) it cost 1.4 s at its
turn for a plan 8% slower than the search's, and the benchmark's proof there (27.6 s before)
ran past 30 s."""

SEEDS_BEFORE_WARM_START = True
"""The first seeds (uniform grids; balanced grids from BALANCED_SEED_EARLY_GPUS) run before the
warm start, not after it (`BranchAndBound.run_first_seeds`): the warm start's restricted models
then aim below the seeds' plan, and most end infeasible at once. On
gpt3-2.7b-a100x32-v100x96-4gpu (two threads) the balanced grids' 4.4111 s, the optimum, came at
2.0 s instead of 4.1 s, after the warm start's 3 s of models against 5.07 s; the search
16.5 s -> 14.9 s."""

SEED_AFTER_SHARE = 0.5
"""The Metis-style seed costs seconds on 64 GPUs, more than the exact passes need where they close
quickly: it runs only once this share of the time limit has passed without a proof, and only if
the search's own incumbent does not already beat the uniform-grid seed (or that seed found no
plan). Where it does, Metis has not been seen to help: on gpt3-175b-4types-x1024 (30 s) the
search had 15.119 s when Metis ran and Metis returned 15.266 s after 7.5 s; on
llama3-405b-6types-x16384 the search ends at 14.7 s and Metis at 17.3 s.

On clusters above WARM_START_LARGE_GPUS the uniform-grid seed waits for this share too (elsewhere
it runs right after the warm start): there it enumerates grids of thousands of GPUs (1.8 s at
1,024 GPUs) and its plan was never the incumbent, the warm start's seeds being better by then
(gpt3-175b-4types-x1024: 14.537 s at 5.8 s)."""

EARLY_SEED_SHARE = 0.4
EARLY_SEED_MAX_S = 1.0
"""On clusters above WARM_START_LARGE_GPUS the single-type search starts with the uniform grids and
the proportional split on the best of them (`BranchAndBound.early_seed`), for this share of the
seed time base (the time limit) and at most EARLY_SEED_MAX_S, before its set-up: the set-up of
every micro-batch size's configurations takes 2-5 s there (2 cores, shared), so that with a 3 s
limit gpt3-175b-4types-x1024 returned no plan, and with 5 s only uniform's first grid (36.5 s).
The grids go largest TP first (uniform(largest_tp_first=True)): in their default order, TP 1
first, the plans came slowly there (1,024 GPUs: 36.5 s at 0.5 s, 27.4 s at 2 s, 26.3 s once all
3,153 are done, 4.8 s); largest TP first, 26.6 s at 0.3 s, and the proportional split on that
grid (a few plans, milliseconds) 18.4 s; 16,384 GPUs: 16.7 s, the best grid of all, at 0.5 s.
The cap is short: once the set-up is done the search's own seeds are better (16.25 s there with
a 15 s limit), and with the default order a 3 s cap cost llama3-405b-6types-x16384 its 14.7 s
plan at 15 s (20.0 s; one run each on 2 shared cores)."""

MIXED_SINGLE_SHARE = 0.75
"""With mixed-type stages, the share of the time limit the single-type space may take first. It
only binds where that search is not proven sooner: on large clusters, where a mixed stage (one
node per part at most) is least likely to pay and the single-type plan improves until late
(llama3-405b-6types-x16384: 17.21 s at 15 s, 14.83 s at 22.5 s)."""

SINGLE_FROM_THE_TOP = True
"""With two processes, whether the second, once its search over the plans with a mixed stage
has answered, bounds the first's single-type sub-problems from the other end while the first
searches on (second_process._bound_single_from_the_top)."""

MIXED_FOLLOW_UP_SHARE = 0.25
"""With mixed-type stages, the share of the time limit the single-type search may spend after its
first pass (the passes that solve what stayed open with budgets of 2 s, 15 s, ...); it also
yields at the first of those models that neither closes its sub-problem nor improves the plan,
and resumes after the search over plans with a mixed stage. Where those models close, they do so
in a second or two (llama3-8b-h100-a100-l40s); where they do not (gpt3-175b-4types-x1024: 24
sub-problems HiGHS does not close in minutes; llama3-405b-6types-x16384, whose plans with a
mixed stage take 6.5-7 s of the 7.5 s left at a 30 s limit), the time goes to bounding the
plans with a mixed stage, without which the whole space has no useful bound."""

POLISH_SHARE = 0.03
"""The local search around an improved incumbent (`BranchAndBound.polish_incumbent`) runs for
at most this share of the time limit a call (0.9 s at 30 s; it usually ends much sooner, where
no move improves the plan: 0.05 s on gpt3-2.7b-a100x32-v100x96-4gpu)."""

POLISH_TOTAL_SHARE = 0.1
"""... and for at most this share of the time limit in all."""

POLISH_MIN_S = 0.25
"""... but at least this long (a call, and in all) where the shares give less: at a 2 s limit
the shares left 0.06 s a call, short of one round at 1,024 GPUs, and the Planner's 2 s
re-plans of fleet-1024 kept plans up to 5% slower than the ones this floor lets it reach
(2.099 -> 1.999 s after its fourth event); gpt3-2.7b-a100x32-v100x96-4gpu at 0.5 s: 4.659 ->
4.411 s."""

DEFAULT_BACKEND = "auto"
"""CP-SAT for small models, HiGHS for large ones (backends.AUTO_CPSAT_MAX_VARS): each closes its
kind faster in our measurements (docs/benchmarks.md)."""

CPSAT_ONE_WORKER_LINEARIZATION = 2
"""CP-SAT's ``linearization_level`` where a model gets one worker (its portfolio search,
`backends._solve_cpsat`): 2 puts every constraint's linear relaxation into its LP, 1 (OR-Tools'
default) only some. On the 24 models of the matrix that took CP-SAT over 0.05 s or either backend
over 0.3 s (`solve(threads=1, time_limit_s=40)` on 11 instances), each solved again alone on one
worker: 13.2 s in all at level 1, 9.3 s at 2 (the optimum's own sub-problem (8, 16) of
gpt3-6.7b-a100x128-v100x256-a10x128-4gpu 2.74 -> 0.98 s, the (4, 8) of
gpt3-2.7b-a100x8-v100x8-4gpu 1.41 -> 1.06 s, the slowest at level 2 0.16 s behind level 1). The
single default strategy was faster still (7.7 s) but stalls on
tests/test_search_exact.py's six-split model, as OR-Tools 9.15 still does. `haap solve
--threads 2 --time-limit 30`, level 1 / 2, two runs each (2026-12-05, idle host): that 512-GPU
instance 9.86, 9.87 / 8.33, 8.46 s; gpt3-2.7b-a100x8-v100x8-4gpu 6.98, 6.93 / 6.58, 6.54 s;
gpt3-2.7b-a100x32-v100x96-4gpu 9.39, 9.28 / 9.24, 9.59 s; llama3.2-1b-rtx4090-a10 1.72, 1.68 /
1.87, 1.83 s; ten other instances within 0.07 s; gpt3-175b-4types-x1024 gap 27.39% / 27.38%.
One thread, 60 s: the 512-GPU instance 16.2 / 14.1 s. The same optima. With two workers or
more the level changes nothing measurable (9.51 / 9.52 s over the 24 models). On random tiny
instances (benchmarks/bruteforce_agreement.py --backends cpsat --mixed both, seeds 97000-97149)
0 disagreements either way, the searches 15.7 + 46.3 s / 15.6 + 46.1 s."""

PAUSE_COLLECTOR = True
"""`solve` (and its second process) runs with Python's cyclic garbage collector off
(`collector_paused`)."""

PARALLEL_MIXED = True
"""With threads >= 2, `solve` searches the plans with a mixed stage in a second process beside
the single-type search (`_solve_beside`), instead of after it."""

HELPER_SHARES_WINDOWS = True
"""Whether the second process, bounding the first's single-type sub-problems from the other end
(`second_process._bound_single_from_the_top`), sends a sub-problem its walk leaves open with
the threshold it was strengthened against and the window of bottlenecks of its path walk
("single_strengthened"), which the first takes as its own strengthening
(`BranchAndBound.absorb`): the sub-problem goes to its model with that window instead of being
walked again there. Without it the first got only the bound and walked the same sub-problem
again (on gpt3-2.7b-a100x32-v100x96-4gpu (5, 8), the optimum's, 0.39 s in the second, then
0.38 s in the first). Marking it strengthened without the window cost more than it saved (its
model then searched every bottleneck: 2.1 + 3.2 s against 0.19 s, stop 48). `haap solve
--threads 2 --time-limit 30`, off / on, two runs each (2026-12-05, idle host):
gpt3-2.7b-a100x32-v100x96-4gpu 9.38, 9.17 / 8.80, 8.80 s; gpt3-2.7b-a100x8-v100x8-4gpu 6.57,
6.52 / 6.57, 6.53 s; gpt3-6.7b-a100x128-v100x256-a10x128-4gpu 8.33, 8.29 / 8.25, 8.23 s; five
other instances within 0.04 s (one run); gpt3-175b-4types-x1024 27.38% either way. The same
optima."""

HELPER_GRACE_S = 5.0
"""How long past the time limit `_solve_beside` waits for the second process's answer before it
stops it and bounds the plans with a mixed stage in its own process."""


LINK_SIDES_WITHIN = 0.9
"""strong_lower_bound walks again with the LPs per set of link sides (formulations Sec. 4.4
*Link sides*) only where the walk without them ends within this share of the incumbent: they
cost up to 2^sides LPs a question. On gpt3-2.7b-a100x32-v100x96-4gpu, strengthening all 320
single-type sub-problems: against a plan of 5.1277 s 35 s of CPU with the gate, 45 s without,
17 s without the side LPs (194, 194, 192 closed); against the best plan known, 4.5772 s, 25 s
either way (219 closed, 214 without the side LPs)."""

PATH_SKIPS_LINK_SIDES = True
"""Where the path walk of Sec. 4.10 follows (the path capacity applies), strong_lower_bound does
not walk again with the LPs per set of link sides (LINK_SIDES_WITHIN): the path question
charges every stage the links to its neighbours' node groups with the GPU budgets exact, and
on gpt3-2.7b-a100x32-v100x96-4gpu (one thread, single-type search) the side LPs' walk never
raised a bound the path walk then did not raise as far (the nine sub-problems that need the
path walk against the optimum, 4.4111 s: the same bounds, 4.3744-4.4111 s, either way), while
it cost 0.25-0.45 s of each (the search 14.8 s -> 12.3 s)."""

PATH_CAPACITY = True
"""Whether the strong bound also walks the path capacity of Sec. 4.10 (exact GPU budgets, links
by the neighbours' node groups) where the LP walks leave a sub-problem open, and whether a
sub-problem's model is confined to the window of bottlenecks that walk leaves open."""

PATH_CAPACITY_MAX_CELLS = 20_000
"""The most states of GPU use (the product over node groups of their GPUs plus one) for which
the path capacity is asked: each question shifts an array of that size once per position,
neighbouring node groups and distinct GPU use of a configuration."""

LP_WINDOWS = True
"""Whether a sub-problem the path capacity does not apply to (mixed stages, larger clusters)
gets the window of bottlenecks of its LP walk's question (Sec. 4.10) for its model."""

PATH_EXACT_LINKS_MIN_GPUS = 64
"""A sub-problem the path walk leaves open is walked again inside its window with the links
between node groups charged exactly (Sec. 4.10, `PathCapacity.holds_exact`) on clusters of at
least this many GPUs. On gpt3-2.7b-a100x32-v100x96-4gpu (128 GPUs) it closed two of the four
sub-problems the path walk left open and narrowed the window of a third to a tenth of its width,
for 0.2-1.1 s a sub-problem: one thread 32.1 -> 21.2 s, two 24.7 -> 16.6 s. On the 16- and
40-GPU clusters of the matrix the models close those sub-problems in a fraction of a second,
and the walks cost more than they saved (one thread: gpt3-2.7b-a100x8-v100x8-4gpu 10.5 ->
11.1 s, llama3-8b-h100-a100-l40s 5.2 -> 5.8 s)."""
