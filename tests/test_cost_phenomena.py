"""One test per phenomenon of the compute and network model (docs/cost-model.md Sec. 4, 6).

Each test fails when its phenomenon is taken out of the model (checked by planting the bug).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from haap_solver.cluster import NodeGroup
from haap_solver.cost import comm, compute
from haap_solver.cost.evaluate import CostModel
from haap_solver.devices import DEVICE_PRESETS, UNMEASURED_MATMUL_EFFICIENCY
from haap_solver.instance import Instance, load_instance, make_instance
from haap_solver.model import ModelSpec
from haap_solver.plan import Placement, Plan, ReplicaGroup, Stage
from haap_solver.training import TrainingSpec
from haap_solver.validate import check_plan

ROOT = Path(__file__).resolve().parent.parent

GPT = ModelSpec(name="gpt-2.7b", num_layers=32, hidden_size=2560, ffn_hidden_size=10240,
                num_attention_heads=32, vocab_size=51200, seq_length=2048,
                learned_position_embeddings=True, uses_dropout=True)


def _instance(model: ModelSpec = GPT, *, nics: int = 8, **training: object) -> Instance:
    t = TrainingSpec(global_batch_size=64, **training)  # type: ignore[arg-type]
    group = NodeGroup(name="a100", device="A100-80G", num_nodes=2, gpus_per_node=8,
                      nic_gbit_s=200, nics_per_node=nics)
    return make_instance(model=model, training=t, node_groups=[group])


def _layer_s(inst: Instance, tp: int = 1, batch: int = 1, recompute: str = "none") -> float:
    lc = CostModel(inst).layer_cost("A100-80G", tp, batch, recompute)
    return lc.fwd_s + lc.bwd_s + lc.tp_fwd_s + lc.tp_bwd_s


def test_fp32_is_slower_than_bf16_on_a_tensor_core_gpu() -> None:
    bf16 = _layer_s(_instance(dtype="bf16"))
    tf32 = _layer_s(_instance(dtype="fp32", fp32_matmul_precision="high"))
    fp32 = _layer_s(_instance(dtype="fp32"))
    # A100: 312 TF bf16, 156 TF TF32, 19.5 TF fp32. The GEMMs dominate this layer.
    assert tf32 > 1.5 * bf16
    assert fp32 > 8 * bf16
    assert fp32 > 4 * tf32


def test_mfu_counts_against_the_peak_of_the_training_precision() -> None:
    inst = _instance(dtype="fp32")
    assert CostModel(inst).peak_flops("A100-80G") == pytest.approx(19.5e12)
    assert CostModel(_instance()).peak_flops("A100-80G") == pytest.approx(312e12)


def test_a_narrow_layer_has_a_floor() -> None:
    """As the width shrinks or TP grows, a layer's time stops at its kernels' launch cost."""
    tiny = replace(GPT, hidden_size=256, ffn_hidden_size=1024, num_attention_heads=4)
    inst = _instance(tiny)
    cm = CostModel(inst)
    launches = compute.kernels_per_layer(tiny, inst.training, 4) * cm.constants.kernel_launch_s
    assert _layer_s(inst, tp=4) >= 3 * launches * (1 - 1e-12)
    tinier = replace(tiny, hidden_size=128, ffn_hidden_size=512, num_attention_heads=2)
    assert _layer_s(_instance(tinier), tp=4) == pytest.approx(_layer_s(inst, tp=4), rel=0.05)
    # The floor does not shrink with TP the way GPU work does.
    wide = _instance()
    assert _layer_s(wide, tp=8) > 0.2 * _layer_s(wide, tp=1) / 1


def test_a_half_used_nodes_gpus_get_more_nic_bandwidth() -> None:
    """A stage on 2 of a node's 8 GPUs shares the node's one NIC by 2, not by 8."""
    inst = _instance(nics=1)
    cm = CostModel(inst)

    def stage(count: int) -> tuple[ReplicaGroup, ...]:
        return (ReplicaGroup(node_group="a100", device="A100-80G", count=count, tp=1,
                             micro_batch_share=1,
                             placement=(Placement(node=0, replicas=count),)),)

    other = (ReplicaGroup(node_group="a100", device="A100-80G", count=1, tp=1,
                          micro_batch_share=1, placement=(Placement(node=1, replicas=1),)),)
    full, half = cm.p2p_side_s(stage(8), other), cm.p2p_side_s(stage(2), other)
    latency = inst.cluster.node_groups[0].latency_s
    assert (full - latency) == pytest.approx(4 * (half - latency))
    group = inst.cluster.node_groups[0]
    assert group.nic_gb_s_per_gpu_among(2) == pytest.approx(4 * group.nic_gb_s_per_gpu)
    # Rail-optimised nodes (one NIC per GPU): an idle GPU's NIC does not help another GPU.
    rails = _instance(nics=8).cluster.node_groups[0]
    assert rails.nic_gb_s_per_gpu_among(2) == pytest.approx(rails.nic_gb_s_per_gpu)


@pytest.mark.parametrize("flash", [True, False])
def test_attention_cost_moves_with_head_count(flash: bool) -> None:
    """Same width, more (narrower) heads: the attention core runs less efficiently."""
    few = _layer_s(_instance(replace(GPT, num_attention_heads=20), flash_attention=flash))
    many = _layer_s(_instance(replace(GPT, num_attention_heads=80), flash_attention=flash))
    assert many > 1.03 * few


def test_bubble_is_never_negative_on_single_stage_plans() -> None:
    from haap_solver import calibration as cal

    for run in cal.load_runs():
        if run.pp != 1:
            continue
        prepared = cal.prepare(run)
        cm = CostModel(prepared.instance)
        for plan in prepared.plans.values():
            assert cm.evaluate(plan).breakdown["bubble_s"] >= 0.0, run.id


def test_single_stage_plan_has_no_p2p_and_the_breakdown_adds_up() -> None:
    inst = _instance()
    plan = Plan(micro_batch_size=8, num_micro_batches=8, stages=(
        Stage(first_layer=0, num_layers=32, recompute="selective",
              replicas=(ReplicaGroup(node_group="a100", device="A100-80G", count=8, tp=1,
                                     micro_batch_share=1,
                                     placement=(Placement(node=0, replicas=8),)),)),))
    ev = CostModel(inst).evaluate(plan)
    assert ev.breakdown["bubble_s"] >= 0.0
    assert sum(ev.breakdown.values()) == pytest.approx(ev.iteration_time_s, rel=1e-12)


def _two_node_data_parallel_plan() -> Plan:
    """One stage of the 32 layers, data-parallel over two nodes of 8 A100 (TP 1, 4 sequences
    per replica): its gradient ring crosses the network."""
    return Plan(micro_batch_size=64, num_micro_batches=1, stages=(
        Stage(first_layer=0, num_layers=32, recompute="selective",
              replicas=(ReplicaGroup(node_group="a100", device="A100-80G", count=16, tp=1,
                                     micro_batch_share=4,
                                     placement=(Placement(node=0, replicas=8),
                                                Placement(node=1, replicas=8))),)),))


def test_fp32_gradients_double_the_data_parallel_reduction() -> None:
    """Megatron-LM reduces bf16 training's gradients in fp32: twice the bytes of the ring, and
    2 more bytes per parameter of memory, than with --grad-reduce-in-bf16."""
    plan = _two_node_data_parallel_plan()
    fp32 = CostModel(_instance(overlap_grad_reduce=False)).evaluate(plan)
    bf16 = CostModel(_instance(overlap_grad_reduce=False, grad_dtype="param")).evaluate(plan)
    a, b = fp32.stages[0].replicas[0], bf16.stages[0].replicas[0]
    assert a.dp_comm_s == pytest.approx(2 * b.dp_comm_s, rel=0.01)  # latency terms are equal
    assert a.memory.grads == pytest.approx(2 * b.memory.grads)
    assert a.memory.grads == pytest.approx(4 * a.params_local)


def test_the_embedding_tables_gradients_are_reduced_after_the_backward() -> None:
    """With the gradient reduction overlapped, the first stage's last bucket holds the embedding
    table (its gradient comes last; no engine splits a parameter between buckets), so its
    ring is exposed whole, not a 40M-parameter bucket's: a 256k-token vocabulary at h 2560 is a
    655M-parameter table. Here the backward is long enough to hide everything else."""
    model = replace(GPT, name="big-vocab", num_layers=4, vocab_size=256_000)
    inst = _instance(model)
    cm = CostModel(inst)
    plan = _two_node_data_parallel_plan()
    plan = replace(plan, stages=(replace(plan.stages[0], num_layers=4),))
    ev = cm.evaluate(plan)
    rep = ev.stages[0].replicas[0]
    gb_s, latency_s = cm.dp_link(plan.stages[0].replicas)
    table_grads = model.embedding_params * 4  # fp32 gradients (bf16 training), TP 1
    ring = comm.ring_allreduce_s(table_grads, 16, gb_s, latency_s)
    bucket = comm.ring_allreduce_s(cm.constants.grad_bucket_params * 4, 16, gb_s, latency_s)
    all_grads = comm.ring_allreduce_s(rep.params_local * 4, 16, gb_s, latency_s)
    assert all_grads - rep.dp_comm_s >= 0.2 * all_grads  # (the backward hides the rest)
    assert rep.dp_comm_s == pytest.approx(ring, rel=1e-9)
    assert rep.dp_comm_s > 10 * bucket


def test_distributed_optimizer_parameter_gather_is_exposed_unless_overlapped() -> None:
    """ZeRO-1 without overlap_param_gather: the parameters' all-gather follows the step (here
    the last backward is long enough to hide the whole collective when it may overlap)."""
    plan = _two_node_data_parallel_plan()
    inst = _instance(zero_stage=1, grad_dtype="param")  # bf16 gradients: a shorter reduction
    hidden = CostModel(inst).evaluate(plan)
    exposed = CostModel(replace(inst, training=replace(inst.training,
                                                       overlap_param_gather=False))).evaluate(plan)
    rep = exposed.stages[0].replicas[0]
    local = rep.params_local * 2  # bf16 parameters, bytes
    gb_s = (inst.cluster.node_groups[0].nic_gb_s_per_gpu
            * CostModel(inst).constants.network_efficiency)
    gather = 15 / 16 * local / (gb_s * 1e9) + 15 * inst.cluster.node_groups[0].latency_s
    assert exposed.breakdown["dp_comm_s"] >= gather
    assert exposed.iteration_time_s > hidden.iteration_time_s + 0.5 * gather
    assert sum(exposed.breakdown.values()) == pytest.approx(exposed.iteration_time_s, rel=1e-12)


def test_tp_communication_overlap_hides_behind_the_gemms() -> None:
    """Megatron-LM + Transformer Engine's --tp-comm-overlap: each pass's TP collectives are
    pipelined with the layer's weight GEMMs; only what exceeds them is exposed. (At micro-batch
    8: a GPU-bound layer, not at the launch floor, where hiding communication gains nothing.)"""
    plain = CostModel(_instance())
    hidden = CostModel(_instance(tp_comm_overlap=True))
    a = plain.layer_cost("A100-80G", 8, 8, "none")
    b = hidden.layer_cost("A100-80G", 8, 8, "none")
    gemm = compute.weight_gemms_s(GPT, hidden.training, hidden.instance.device("A100-80G"),
                                  hidden.constants, 8, 8)
    assert a.tp_fwd_s > 0
    assert b.tp_fwd_s == pytest.approx(max(a.tp_fwd_s - gemm.fwd_s, 0.0))
    assert b.tp_bwd_s == pytest.approx(max(a.tp_bwd_s - gemm.bwd_s, 0.0))
    assert b.tp_fwd_s < a.tp_fwd_s and b.fwd_s == a.fwd_s
    # Full recomputation repeats the forward's collectives behind the forward's GEMMs again.
    c = hidden.layer_cost("A100-80G", 8, 8, "full")
    assert c.tp_bwd_s == pytest.approx(max(plain.layer_cost("A100-80G", 8, 8, "full").tp_bwd_s
                                           - gemm.bwd_s - gemm.fwd_s, 0.0))
    # Without TP there is nothing to hide.
    assert hidden.layer_cost("A100-80G", 1, 1, "none") == plain.layer_cost("A100-80G", 1, 1,
                                                                            "none")


def _two_stage_plan(schedule: str = "1f1b") -> Plan:
    """16 layers on each node of the two (TP 8, DP 1): the pipeline link crosses the network."""
    def stage(node: int) -> Stage:
        return Stage(first_layer=16 * node, num_layers=16, recompute="selective",
                     replicas=(ReplicaGroup(node_group="a100", device="A100-80G", count=1, tp=8,
                                            micro_batch_share=1,
                                            placement=(Placement(node=node, replicas=1),)),))
    return Plan(micro_batch_size=1, num_micro_batches=64, schedule=schedule,  # type: ignore[arg-type]
                stages=(stage(0), stage(1)))


def test_pipeline_sends_block_by_default_as_in_megatron_and_deepspeed() -> None:
    """Megatron-LM's 1F1B without interleaving waits for its batched sends (its schedule raises
    on overlap_p2p_comm), its interleaved schedule overlaps them by default, DeepSpeed's
    pipeline engine blocks: "auto" (the default) resolves to that, and evaluate() charges each
    stage its sends every micro-batch under it."""
    megatron, deepspeed = TrainingSpec(global_batch_size=64), TrainingSpec(
        global_batch_size=64, framework="deepspeed")
    assert megatron.pipeline_p2p == "auto"
    assert [megatron.blocks_p2p(s) for s in ("1f1b", "gpipe", "interleaved-1f1b")] == [
        True, True, False]
    assert [deepspeed.blocks_p2p(s) for s in ("1f1b", "gpipe", "interleaved-1f1b")] == [
        True, True, True]
    for mode, blocks in (("blocking", True), ("overlapped", False)):
        explicit = replace(megatron, pipeline_p2p=mode)
        assert [explicit.blocks_p2p(s) for s in ("1f1b", "interleaved-1f1b")] == [blocks] * 2
    plan = _two_stage_plan()
    default = CostModel(_instance()).evaluate(plan)
    blocking = CostModel(_instance(pipeline_p2p="blocking")).evaluate(plan)
    overlapped = CostModel(_instance(pipeline_p2p="overlapped")).evaluate(plan)
    assert default.iteration_time_s == blocking.iteration_time_s
    # The bottleneck stage's period holds its one link: (m - 1) c more than overlapped.
    link = default.stages[0].p2p_next_s
    assert link > 0.0
    assert default.iteration_time_s - overlapped.iteration_time_s == pytest.approx(63 * link,
                                                                                   rel=1e-9)


PIPELINES = [
    # (per stage forward and backward seconds, per link seconds): equal stages over slow and
    # fast links, and unequal ones
    ([1 / 3] * 3, [2 / 3] * 3, [1.0, 1.0]),
    ([1 / 3] * 4, [2 / 3] * 4, [0.5, 0.5, 0.5]),
    ([0.3, 0.5, 0.2], [0.6, 1.0, 0.4], [0.8, 0.2]),
    ([0.2, 0.4], [0.5, 0.9], [0.05]),
]


@pytest.mark.parametrize(("fwd", "bwd", "links"), PIPELINES)
def test_blocking_period_is_the_simulated_one_and_overlapped_a_lower_bound(
        fwd: list[float], bwd: list[float], links: list[float]) -> None:
    """The steady-state period of pipeline_makespan against an independent event simulation of
    1F1B (report.plots.schedule_events: each operation waits for its stage and its input's
    arrival over the link). Blocking sends: equal. Overlapped: the formula's
    max(max tau, 2 max c) never exceeds the simulated period, and over slow links falls short
    of it, because 1F1B keeps only p - i micro-batches in flight on stage i
    (docs/cost-model.md Sec. 7)."""
    from types import SimpleNamespace

    from haap_solver.cost.pipeline import pipeline_makespan
    from haap_solver.report.plots import schedule_events

    stages = [SimpleNamespace(fwd_s=f, bwd_s=b, p2p_next_s=c)
              for f, b, c in zip(fwd, bwd, [*links, 0.0], strict=True)]
    reps = [SimpleNamespace(replicas=[SimpleNamespace(fwd_s=f, bwd_s=b, compute_s=f + b,
                                                      tp_comm_s=0.0, zero_comm_s=0.0)])
            for f, b in zip(fwd, bwd, strict=True)]

    def simulated(m: int, blocking: bool) -> float:
        events = schedule_events(SimpleNamespace(schedule="1f1b"),
                                 SimpleNamespace(stages=stages), m, blocking=blocking)
        return max(e[4] for e in events)

    def formula(m: int, blocking: bool) -> float:
        return pipeline_makespan("1f1b", fwd, bwd, links, reps, m, blocking=blocking)[0]

    for blocking in (True, False):
        sim = simulated(120, blocking) - simulated(60, blocking)
        model = formula(120, blocking) - formula(60, blocking)
        if blocking:
            assert model == pytest.approx(sim, rel=1e-9)
        else:
            assert model <= sim * (1 + 1e-9)
    overlapped_gap = (simulated(120, False) - simulated(60, False)) - (
        formula(120, False) - formula(60, False))
    slow = sum(links) > 0.5
    assert (overlapped_gap > 1.0) == slow


def _deepspeed_train_schedule_s(fwd: list[float], bwd: list[float], links: list[float],
                                m: int) -> float:
    """Makespan of DeepSpeed's pipeline engine, simulated from its schedule's definition
    (deepspeed/runtime/pipe/schedule.py, TrainSchedule): 2 (m + p - 1) steps; in each, stage s
    runs a forward (on steps of its own parity) or a backward, of the micro-batch its step maps
    to; a forward step first receives the activation from s - 1 and sends the previous step's
    gradient back to it, which s - 1 meets in its backward step (sending its previous
    activation, receiving the gradient): each of those is its own blocking operation, taking
    the link's time on both stages once both have reached it."""
    p = len(fwd)

    def step_work(step: int, s: int) -> tuple[int, bool]:
        if step % 2 == s % 2:
            return (step - s % 2) // 2 - s // 2, True
        if step % 2 == 0:
            return step // 2 - p + (s + 1) // 2, False
        return (step - 1) // 2 - p + 1 + s // 2, False

    def valid(j: int) -> bool:
        return 0 <= j < m

    ready, previous = [0.0] * p, [-1] * p
    for step in range(2 * (m + p - 1)):
        work = [step_work(step, s) for s in range(p)]
        after = list(ready)
        for s in range(1, p):
            j, forward = work[s]
            operations = valid(j) + valid(previous[s]) if forward else 0
            if operations:
                after[s] = after[s - 1] = max(ready[s], ready[s - 1]) + operations * links[s - 1]
        ready = after
        for s, (j, forward) in enumerate(work):
            if valid(j):
                ready[s] += fwd[s] if forward else bwd[s]
            previous[s] = j
    return max(ready)


@pytest.mark.parametrize(("fwd", "bwd", "links"), PIPELINES)
def test_deepspeed_waits_for_each_link_twice_a_micro_batch(
        fwd: list[float], bwd: list[float], links: list[float]) -> None:
    """DeepSpeed's pipeline engine receives the activation and sends the gradient as two
    blocking operations (Megatron-LM batches them into one exchange): the steady-state period
    of its simulated schedule is max_i (tau_i + 2 (c_{i-1} + c_i)), which pipeline_makespan
    gives with `link_waits` 2 (training.link_waits under framework "deepspeed"); the
    formula's whole makespan is never below the simulated one. With one wait per link (the
    bug this guards against) the period falls short of the simulation."""
    from types import SimpleNamespace

    from haap_solver.cost.pipeline import pipeline_makespan

    reps = [SimpleNamespace(replicas=[SimpleNamespace(fwd_s=f, bwd_s=b, compute_s=f + b,
                                                      tp_comm_s=0.0, zero_comm_s=0.0)])
            for f, b in zip(fwd, bwd, strict=True)]

    def formula(m: int, waits: int) -> float:
        return pipeline_makespan("1f1b", fwd, bwd, links, reps, m, blocking=True,
                                 link_waits=waits)[0]

    simulated = (_deepspeed_train_schedule_s(fwd, bwd, links, 120)
                 - _deepspeed_train_schedule_s(fwd, bwd, links, 60))
    assert formula(120, 2) - formula(60, 2) == pytest.approx(simulated, rel=1e-9)
    assert formula(120, 1) - formula(60, 1) < simulated * (1 - 1e-3)
    for m in (1, 2, 5, 60):
        assert _deepspeed_train_schedule_s(fwd, bwd, links, m) <= formula(m, 2) * (1 + 1e-9)
    assert TrainingSpec(global_batch_size=8, framework="deepspeed").link_waits("1f1b") == 2
    assert [TrainingSpec(global_batch_size=8).link_waits(s)
            for s in ("1f1b", "gpipe", "interleaved-1f1b")] == [1, 1, 1]
    assert TrainingSpec(global_batch_size=8, framework="deepspeed",
                        pipeline_p2p="overlapped").link_waits("1f1b") == 1
    # (pipeline_exchange sets it apart from the framework: Megatron-DeepSpeed's runs)
    assert TrainingSpec(global_batch_size=8, pipeline_exchange="sequential").link_waits(
        "1f1b") == 2
    assert TrainingSpec(global_batch_size=8, framework="deepspeed",
                        pipeline_exchange="batched").link_waits("1f1b") == 1


def test_evaluate_charges_deepspeed_each_link_twice_a_micro_batch() -> None:
    """A two-stage plan under DeepSpeed: blocking sends cost 2 (m - 1) c more than overlapped
    ones (each stage waits for the link's receive and its send), twice Megatron-LM's (m - 1)
    c (test_pipeline_sends_block_by_default_as_in_megatron_and_deepspeed)."""
    plan = _two_stage_plan()
    default = CostModel(_instance(framework="deepspeed")).evaluate(plan)
    overlapped = CostModel(_instance(framework="deepspeed",
                                     pipeline_p2p="overlapped")).evaluate(plan)
    link = default.stages[0].p2p_next_s
    assert link > 0.0
    assert default.iteration_time_s - overlapped.iteration_time_s == pytest.approx(
        2 * 63 * link, rel=1e-9)
    # Megatron's kernels with DeepSpeed's pipeline engine (pipeline_exchange "sequential"):
    # the same two waits beside Megatron-LM's own costs.
    megatron = CostModel(_instance()).evaluate(plan)
    sequential = CostModel(_instance(pipeline_exchange="sequential")).evaluate(plan)
    assert sequential.iteration_time_s - megatron.iteration_time_s == pytest.approx(
        63 * link, rel=1e-9)


def test_a_stage_split_into_identical_replica_groups_costs_the_same() -> None:
    """The NICs of a node are shared by every GPU of the stage on it, however the plan writes
    the stage: four H100 replicas as one replica group or as two identical groups of two share
    the node's one NIC four ways. Counted per replica group, the split bought each half a NIC
    share twice as large, and the written-as-two plan was 0.7% faster (9.652 s against 9.717 s):
    a plan an enumeration over what the validator accepts would have found beating the
    search, which never writes a stage that way."""
    inst = load_instance(ROOT / "instances" / "llama3.2-1b-h100x4-l40sx4.toml")
    groups = tuple(replace(g, nics_per_node=1 if g.name == "hgx-h100x4" else 8)
                   for g in inst.cluster.node_groups)
    inst = replace(inst, cluster=replace(inst.cluster, node_groups=groups))
    half = inst.model.num_layers // 2

    def replicas(group: str, device: str, count: int) -> ReplicaGroup:
        return ReplicaGroup(node_group=group, device=device, count=count, tp=1,
                            micro_batch_share=2, placement=(Placement(node=0, replicas=count),))

    last = Stage(first_layer=half, num_layers=inst.model.num_layers - half,
                 replicas=(replicas("l40s-server", "L40S", 4),))
    whole = Plan(micro_batch_size=8, num_micro_batches=16, stages=(
        Stage(first_layer=0, num_layers=half, replicas=(replicas("hgx-h100x4", "H100", 4),)),
        last))
    split = replace(whole, stages=(replace(whole.stages[0], replicas=(
        replicas("hgx-h100x4", "H100", 2), replicas("hgx-h100x4", "H100", 2))), last))
    times = []
    for plan in (whole, split):
        check_plan(inst, plan)
        times.append(CostModel(inst).evaluate(plan).iteration_time_s)
    assert times[1] == pytest.approx(times[0], rel=1e-12)


def test_a_device_whose_matmuls_reach_less_of_its_peak_runs_its_gemms_slower() -> None:
    """Two devices with the same spec peak: the one whose best matmul reaches less of it (its
    measured ceiling, `matmul_efficiency`) takes longer for the same GEMMs, by the ratio of the
    ceilings, while its memory-bound work (same HBM) costs the same."""
    inst = _instance()
    a100 = DEVICE_PRESETS["A100-80G"]
    weak = replace(a100, name="weak", matmul_efficiency=0.5)
    model, training = inst.model, inst.training
    c = CostModel(inst).constants
    strong_gemm = compute.weight_gemms_s(model, training, a100, c, 1, 2)
    weak_gemm = compute.weight_gemms_s(model, training, weak, c, 1, 2)
    assert weak_gemm.fwd_s / strong_gemm.fwd_s == pytest.approx(a100.matmul_efficiency / 0.5)
    assert compute.elementwise_bytes(model, training, 1, 2) > 0
    assert compute.optimizer_step_s(1e9, weak, c) == compute.optimizer_step_s(1e9, a100, c)


def test_the_matmul_ceilings_are_the_published_measurements() -> None:
    """Each preset's ceiling is its measured matmul TFLOP/s over the spec peak as the sources
    print them (ml-engineering's MAMF table; the T4's from NVIDIA's developer forum)."""
    printed = {  # device: (16-bit MAMF, theory, fp8 MAMF, fp8 theory)
        "A100-80G": (271.2, 312, None, None), "A100-40G": (271.2, 312, None, None),
        "H100": (794.5, 989, 1402.6, 1979), "H200": (794.5, 989, 1453.4, 1979),
        "MI300X": (668.4, 1300, None, None), "MI250X": (147.0, 191.5, None, None),
        "T4": (24.0, 65, None, None),  # (NVIDIA's forum: "about 24T" of 65, power-capped)
    }
    for name, (mamf, theory, mamf8, theory8) in printed.items():
        device = DEVICE_PRESETS[name]
        assert device.matmul_ceiling("bf16") == pytest.approx(mamf / theory, abs=6e-4), name
        if mamf8 is not None:
            assert device.matmul_ceiling("fp8") == pytest.approx(mamf8 / theory8, abs=6e-4)
        else:
            assert device.matmul_ceiling("fp8") == device.matmul_ceiling("bf16")
    assert DEVICE_PRESETS["V100-32G"].matmul_ceiling("fp16") == UNMEASURED_MATMUL_EFFICIENCY
    assert DEVICE_PRESETS["A100-80G"].matmul_ceiling("bf16") == UNMEASURED_MATMUL_EFFICIENCY


def test_a_custom_device_reads_its_matmul_ceiling(tmp_path: Path) -> None:
    """`matmul_efficiency` in a [devices.NAME] table reaches the cost model."""
    text = (ROOT / "instances" / "gpt3-1.3b-a100x8.toml").read_text()
    assert "[devices." not in text
    slow = text + '\n[devices.A100-80G-capped]\nbase = "A100-80G"\nmatmul_efficiency = 0.4\n'
    slow = slow.replace('device = "A100-80G"', 'device = "A100-80G-capped"')
    path = tmp_path / "capped.toml"
    path.write_text(slow)
    capped = load_instance(path)
    assert capped.device("A100-80G-capped").matmul_efficiency == 0.4
    base = load_instance(ROOT / "instances" / "gpt3-1.3b-a100x8.toml")
    fast = CostModel(base).layer_cost("A100-80G", 1, 1, "none")
    slowed = CostModel(capped).layer_cost("A100-80G-capped", 1, 1, "none")
    assert slowed.fwd_s > 1.5 * fast.fwd_s


def _bridged(tmp_path: Path, domain: int | None, cross: float = 32.0) -> Instance:
    """gpt3-1.3b-a100x8 on one 8-GPU node whose A100s form NVLink domains of `domain` GPUs
    joined by PCIe 4.0 x16 (32 GB/s per direction); None: the preset's NVSwitch node."""
    text = (ROOT / "instances" / "gpt3-1.3b-a100x8.toml").read_text()
    if domain is not None:
        text = text.replace('device = "A100-80G"', 'device = "A100-bridged"')
        text += (f'\n[devices.A100-bridged]\nbase = "A100-80G"\nnvlink_domain_gpus = {domain}\n'
                 f'cross_domain_gb_s = {cross}\n')
    path = tmp_path / f"bridged-{domain}.toml"
    path.write_text(text)
    return load_instance(path)


def test_tp_and_rings_across_nvlink_domains_take_the_pcie_links(tmp_path: Path) -> None:
    """A node of two 4-GPU NVLink domains (two HGX boards, or NVLink-bridged PCIe cards): a TP
    group within a domain all-reduces at NVLink speed, one across both at the PCIe links the
    ring crosses (4 per domain x 32 GB/s, below NVLink's 300); so does a data-parallel ring
    over the whole node, while one within a domain keeps NVLink; sends between stages of the
    node take one GPU's PCIe link. A node of one domain is costed as before."""
    plain, two = _bridged(tmp_path, None), _bridged(tmp_path, 4)
    device = two.cluster.node_groups[0].device
    dev = two.device(device)
    assert dev.link_gb_s(4) == 300.0 and dev.link_gb_s(8) == 4 * 32.0
    assert dev.link_gb_s(8, ring=2) == 32.0  # (a ring of one rank per domain)
    assert dev.send_gb_s(8) == 32.0 and dev.send_gb_s(4) == 300.0

    def tp_s(inst: Instance, tp: int) -> float:
        lc = CostModel(inst).layer_cost(inst.cluster.node_groups[0].device, tp, 4, "none")
        return lc.tp_fwd_s + lc.tp_bwd_s

    assert tp_s(two, 4) == pytest.approx(tp_s(plain, 4), rel=1e-12)
    latency = 2 * 2 * (8 - 1) * 5e-6  # (two all-reduces a pass, 2 (t-1) hops each)
    assert (tp_s(two, 8) - 2 * latency) == pytest.approx(
        (tp_s(plain, 8) - 2 * latency) * 300.0 / 128.0, rel=1e-9)

    def ring(inst: Instance, count: int) -> float:
        group = inst.cluster.node_groups[0]
        replicas = (ReplicaGroup(node_group=group.name, device=group.device, count=count, tp=1,
                                 micro_batch_share=1, placement=(Placement(node=0,
                                                                           replicas=count),)),)
        return CostModel(inst).dp_link(replicas)[0]

    assert ring(two, 4) == pytest.approx(ring(plain, 4))
    assert ring(two, 8) == pytest.approx(ring(plain, 8) * 128.0 / 300.0)


def test_nvlink_domains_need_their_cross_bandwidth(tmp_path: Path) -> None:
    """`nvlink_domain_gpus` and `cross_domain_gb_s` go together; a clear error names the field
    that is missing."""
    from haap_solver.errors import InputError

    text = (ROOT / "instances" / "gpt3-1.3b-a100x8.toml").read_text()
    text = text.replace('device = "A100-80G"', 'device = "A100-bridged"')
    for extra, field in (("nvlink_domain_gpus = 4", "cross_domain_gb_s"),
                         ("cross_domain_gb_s = 32", "nvlink_domain_gpus"),
                         ("nvlink_domain_gpus = 0\ncross_domain_gb_s = 32", "nvlink_domain_gpus")):
        path = tmp_path / "bad.toml"
        path.write_text(text + f'\n[devices.A100-bridged]\nbase = "A100-80G"\n{extra}\n')
        with pytest.raises(InputError, match=field):
            load_instance(path)


def test_the_search_on_bridged_nodes_equals_the_brute_force() -> None:
    """The exact search on nodes of several NVLink domains proves the brute force's optimum
    (every cost it uses is the one evaluate() gives: the TP ring by degree, the data-parallel
    ring by the stage's GPUs on the node, a send on one node by its node), with and without
    mixed-type stages."""
    from tiny_instances import tiny_instance

    from haap_solver.baselines.bruteforce import bruteforce
    from haap_solver.search.solve import solve

    base = tiny_instance(devices=[("A100-80G", 4.0), ("V100-32G", 2.0)],
                         groups=[(0, 1, 4), (1, 1, 4)], layers=6, hidden=512, heads=8,
                         seq=512, batch=8, recompute=("none", "full"))
    devices = {name: replace(dev, nvlink_domain_gpus=2, cross_domain_gb_s=4.0)
               for name, dev in base.cluster.devices.items()}
    inst = replace(base, cluster=replace(base.cluster, devices=devices))
    assert any(d.nvlink_domain_gpus == 2 for d in inst.cluster.devices.values())
    for mixed in (False, True):
        truth = bruteforce(inst, cost_model=CostModel(inst), mixed=mixed)
        got = solve(inst, time_limit_s=60, threads=1, mixed=mixed)
        assert got.status == "optimal"
        assert got.iteration_time_s == pytest.approx(truth.iteration_time_s, rel=1e-9)


@pytest.mark.parametrize("seed", [21, 0, 6])
def test_the_search_on_random_bridged_clusters_equals_the_brute_force(seed: int) -> None:
    """Random tiny instances (tests/random_instances.py) whose devices pair their node's GPUs
    into NVLink domains of half a node, joined at a tenth of NVLink's bandwidth: the exact
    search proves the brute force's optimum, with and without mixed-type stages. Seed 21 caught
    the coefficient cache keying a one-node data-parallel ring by its node groups alone (its
    bandwidth was the node's whatever the ring's size; with domains it depends on the ring's
    GPUs and replicas): the search said "optimal" 3.2% above the brute force."""
    import dataclasses

    from random_instances import random_instance

    from haap_solver.baselines.bruteforce import bruteforce
    from haap_solver.search.solve import solve

    base = random_instance(seed)
    per_node = {g.device: g.gpus_per_node for g in base.cluster.node_groups}
    devices = {name: dataclasses.replace(
        dev, nvlink_domain_gpus=max(1, per_node.get(name, 1) // 2),
        cross_domain_gb_s=max(1.0, dev.intra_node_gb_s / 10))
        for name, dev in base.cluster.devices.items()}
    inst = dataclasses.replace(base, cluster=dataclasses.replace(base.cluster, devices=devices))
    for mixed in (False, True):
        truth = bruteforce(inst, cost_model=CostModel(inst), mixed=mixed)
        got = solve(inst, time_limit_s=60, threads=1, mixed=mixed, seed_with_baselines=False)
        assert got.status == "optimal", (seed, mixed)
        assert got.iteration_time_s == pytest.approx(truth.iteration_time_s, rel=1e-9), \
            (seed, mixed)
