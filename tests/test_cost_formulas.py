"""The cost model's formulas against numbers printed in their sources.

- ZeRO (Rajbhandari et al., SC'20, arXiv:1910.02054), Figure 1: per-GPU model-state memory.
- Korthikanti et al. 2022 (arXiv:2205.05198), Sec. 4 / Table 2: per-layer activation memory, and
  the paper's headline savings of selective recomputation.
- Narayanan et al. SC'21 (arXiv:2104.04473), eq. 3: FLOPs per iteration, and every measured run of
  shared/reference/calibration_runs.csv.
- Ring collectives (Thakur et al. 2005) in the alpha-beta model, on a hand-computed example.
"""

from __future__ import annotations

import csv
from dataclasses import replace
from importlib import resources
from pathlib import Path

import pytest

from haap_solver.cluster import INTRA_NODE_LATENCY_US, NodeGroup
from haap_solver.cost import comm, flops, memory
from haap_solver.cost.efficiency import DEFAULT_CONSTANTS
from haap_solver.cost.evaluate import (
    CostModel,
    MemoryReport,
    ReplicaReport,
    StageReport,
    pipeline_time,
)
from haap_solver.instance import make_instance
from haap_solver.model import ModelSpec, model_preset
from haap_solver.plan import Placement, Plan, ReplicaGroup, Stage
from haap_solver.training import TrainingSpec

GPT3_175B = model_preset("gpt3-175b")  # a = 96, h = 12288, s = 2048, dropout
# MT-NLG 530B shape (Korthikanti et al. Table 3; Narayanan et al. Table 1): a = 128, h = 20480.
MT_NLG = ModelSpec(name="mt-nlg-530b", num_layers=105, hidden_size=20480,
                   ffn_hidden_size=4 * 20480, num_attention_heads=128, vocab_size=51200,
                   seq_length=2048, uses_dropout=True, learned_position_embeddings=True)


# -- ZeRO, Figure 1 -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("stage", "printed_gb"),
    [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)],
)
def test_zero_figure_1(stage: int, printed_gb: float) -> None:
    """Psi = 7.5B, N_d = 64, K = 12: baseline 120 GB, P_os 31.4, P_os+g 16.6, P_os+g+p 1.9 GB
    (fp16 mixed precision, 2-byte gradients, as the paper)."""
    training = TrainingSpec(global_batch_size=64, zero_stage=stage, dtype="fp16")
    w, g, o = memory.model_state_bytes_per_param(training, dp=64)
    assert memory.state_bytes(training).optimizer == 12  # K = 12
    per_gpu_gb = (w + g + o) * 7.5e9 / 1e9
    assert round(per_gpu_gb, 1) == printed_gb


@pytest.mark.parametrize(("dtype", "grad_dtype", "framework", "grad_bytes"), [
    ("bf16", "auto", "megatron", 4), ("fp8", "auto", "megatron", 4),
    ("fp16", "auto", "megatron", 2), ("bf16", "param", "megatron", 2),
    ("fp16", "fp32", "megatron", 4), ("bf16", "auto", "deepspeed", 2)])
def test_megatron_keeps_bf16_gradients_in_fp32(dtype: str, grad_dtype: str, framework: str,
                                                grad_bytes: int) -> None:
    """Megatron-LM: "bfloat16 requires gradient accumulation and all-reduce to be done in fp32"
    (megatron/training/arguments.py): 2 + 4 + 12 = 18 bytes per parameter, and the DP
    reduction moves 4-byte gradients."""
    training = TrainingSpec(global_batch_size=8, dtype=dtype,  # type: ignore[arg-type]
                            grad_dtype=grad_dtype, framework=framework)  # type: ignore[arg-type]
    assert memory.state_bytes(training).grads == grad_bytes
    w, g, o = memory.model_state_bytes_per_param(training, dp=1)
    assert w + g + o == 14 + grad_bytes


def test_zero_fp32_keeps_16_bytes() -> None:
    w, g, o = memory.model_state_bytes_per_param(TrainingSpec(global_batch_size=1, dtype="fp32"), 1)
    assert (w, g, o) == (4, 4, 8)


# -- Korthikanti et al. 2022, Sec. 4 --------------------------------------------------------------
def _acts(model: ModelSpec, *, batch: int, tp: int, recompute: str, sp: bool,
          flash: bool = False) -> float:
    training = TrainingSpec(global_batch_size=batch, flash_attention=flash, sequence_parallel=sp)
    return memory.layer_activation_bytes(model, training, batch, tp, recompute)


@pytest.mark.parametrize("model", [GPT3_175B, MT_NLG, model_preset("gpt3-1.3b")],
                         ids=lambda m: m.name)
@pytest.mark.parametrize("batch", [1, 4])
def test_korthikanti_no_parallelism(model: ModelSpec, batch: int) -> None:
    s, h, a = model.seq_length, model.hidden_size, model.num_attention_heads
    sbh = s * batch * h
    expected = sbh * (34 + 5 * a * s / h)  # eq. 1
    for sp in (False, True):  # SP changes nothing at t = 1
        assert _acts(model, batch=batch, tp=1, recompute="none", sp=sp) == pytest.approx(expected)


@pytest.mark.parametrize("model", [GPT3_175B, MT_NLG], ids=lambda m: m.name)
@pytest.mark.parametrize("tp", [2, 4, 8])
def test_korthikanti_tensor_and_sequence_parallel(model: ModelSpec, tp: int) -> None:
    s, h, a, b = model.seq_length, model.hidden_size, model.num_attention_heads, 2
    sbh = s * b * h
    # eq. 2: tensor parallel only.
    assert _acts(model, batch=b, tp=tp, recompute="none", sp=False) == pytest.approx(
        sbh * (10 + 24 / tp + 5 * a * s / (h * tp)))
    # eq. 4: tensor + sequence parallel.
    assert _acts(model, batch=b, tp=tp, recompute="none", sp=True) == pytest.approx(
        sbh / tp * (34 + 5 * a * s / h))
    # Sec. 5: selective recomputation drops the 5as/h term.
    assert _acts(model, batch=b, tp=tp, recompute="selective", sp=True) == pytest.approx(
        34 * sbh / tp)
    assert _acts(model, batch=b, tp=tp, recompute="selective", sp=False) == pytest.approx(
        sbh * (10 + 24 / tp))


@pytest.mark.parametrize("tp", [1, 2, 8])
def test_korthikanti_full_recompute_keeps_the_input(tp: int) -> None:
    """Table 2, full recomputation: 2 s b h per layer (the layer input only)."""
    s, h, b = GPT3_175B.seq_length, GPT3_175B.hidden_size, 3
    assert _acts(GPT3_175B, batch=b, tp=tp, recompute="full", sp=False) == pytest.approx(
        2 * s * b * h)
    # With sequence parallelism Megatron's layer input is already sequence-sharded (a deliberate
    # refinement of Table 2, see docs/cost-model.md Sec. 5.2).
    assert _acts(GPT3_175B, batch=b, tp=tp, recompute="full", sp=True) == pytest.approx(
        2 * s * b * h / tp)


def test_korthikanti_headline_selective_savings() -> None:
    """Sec. 5: for GPT-3 5as/h = 80 and selective recomputation saves 70% of the activation
    memory; for MT-NLG 5as/h = 64 and it saves 65%."""
    for model, five_as_h, saving in ((GPT3_175B, 80, 0.70), (MT_NLG, 64, 0.65)):
        a, s, h = model.num_attention_heads, model.seq_length, model.hidden_size
        assert 5 * a * s / h == five_as_h
        full = _acts(model, batch=1, tp=8, recompute="none", sp=True)
        sel = _acts(model, batch=1, tp=8, recompute="selective", sp=True)
        assert round(1 - sel / full, 2) == saving


def test_korthikanti_headline_5x() -> None:
    """Abstract: sequence parallelism + selective recomputation reduce activation memory by 5x
    against the tensor-parallel baseline (t = 8, the paper's 530B configuration)."""
    base = _acts(MT_NLG, batch=1, tp=8, recompute="none", sp=False)
    best = _acts(MT_NLG, batch=1, tp=8, recompute="selective", sp=True)
    assert round(base / best) == 5


def test_korthikanti_output_layer_extras() -> None:
    """Sec. 4.3: the last stage adds 4 s b h / t (1 + v / h) (with SP); the first stage adds the
    embedding dropout mask, s b h / t per micro-batch in flight."""
    m, b, t = GPT3_175B, 2, 8
    s, h, v = m.seq_length, m.hidden_size, m.vocab_size
    training = TrainingSpec(global_batch_size=8, flash_attention=False, sequence_parallel=True)
    assert memory.last_stage_extra_activation_bytes(m, training, b, t) == pytest.approx(
        4 * s * b * h / t * (1 + v / h))
    assert memory.first_stage_extra_activation_bytes(m, training, b, t) == pytest.approx(
        s * b * h / t)
    no_dropout = replace(m, uses_dropout=False)
    assert memory.first_stage_extra_activation_bytes(no_dropout, training, b, t) == 0.0


def test_generalised_activations_flash_gqa_gated() -> None:
    """The generalisation beyond the paper (docs/cost-model.md Sec. 5.2): Llama-3-8B, no dropout,
    GQA (kv = h/4), SwiGLU (f = 14336), flash attention (fp32 log-sum-exp instead of scores)."""
    m = model_preset("llama3-8b")
    s, h, kv, f, a = m.seq_length, m.hidden_size, m.kv_size, m.ffn_hidden_size, \
        m.num_attention_heads
    per_token = 8 * h + 2 * (h + kv) + 2 * kv + 2 * h + 3 * 2 * f + 4 * a
    assert _acts(m, batch=1, tp=1, recompute="none", sp=True, flash=True) == pytest.approx(
        s * per_token)
    # No dropout and no flash attention: sbh (32 + 2as/h) for a GPT-shaped layer.
    g = replace(GPT3_175B, uses_dropout=False)
    sbh = g.seq_length * g.hidden_size
    assert _acts(g, batch=1, tp=1, recompute="none", sp=False) == pytest.approx(
        sbh * (32 + 2 * g.num_attention_heads * g.seq_length / g.hidden_size))


def test_fp32_doubles_activations_but_not_dropout_masks() -> None:
    m, s, h, a = GPT3_175B, GPT3_175B.seq_length, GPT3_175B.hidden_size, \
        GPT3_175B.num_attention_heads
    t32 = TrainingSpec(global_batch_size=1, dtype="fp32", flash_attention=False,
                       sequence_parallel=False)
    # 16-bit terms double (34 - 2 masks = 32 -> 64 sbh; 4 a s^2 b -> 8 a s^2 b), masks stay 1 byte.
    expected = s * h * (64 + 2) + (8 + 1) * a * s * s
    assert memory.layer_activation_bytes(m, t32, 1, 1, "none") == pytest.approx(expected)


def test_in_flight_micro_batches() -> None:
    assert [memory.in_flight_micro_batches("1f1b", i, 4, 8) for i in range(4)] == [4, 3, 2, 1]
    assert [memory.in_flight_micro_batches("1f1b", i, 4, 2) for i in range(4)] == [2, 2, 2, 1]
    assert memory.in_flight_micro_batches("gpipe", 0, 4, 8) == 8


# -- Narayanan et al. SC'21 ------------------------------------------------------------------------
def _gpt(layers: int, hidden: int, heads: int, *, vocab: int = 51200, seq: int = 2048) -> ModelSpec:
    return ModelSpec(num_layers=layers, hidden_size=hidden, ffn_hidden_size=4 * hidden,
                     num_attention_heads=heads, vocab_size=vocab, seq_length=seq,
                     uses_dropout=True, learned_position_embeddings=True)


@pytest.mark.parametrize(("layers", "hidden", "heads", "batch"),
                         [(24, 2304, 24, 512), (96, 12288, 96, 1536), (2, 64, 4, 3)])
def test_narayanan_eq3_equals_per_layer_counts(layers: int, hidden: int, heads: int,
                                               batch: int) -> None:
    m = _gpt(layers, hidden, heads)
    s, h, v = m.seq_length, m.hidden_size, m.vocab_size
    # The per-layer term behind eq. 3: 24 B s h^2 (1 + s / 6h).
    assert flops.layer_forward_flops(m, batch) == pytest.approx(
        24 * batch * s * h * h * (1 + s / (6 * h)))
    assert flops.head_forward_flops(m, batch) == pytest.approx(2 * batch * s * h * v)
    # eq. 3 = forward + backward (3x) + recomputed forward (full recomputation) + 3 x LM head.
    per_layer = ((1 + flops.BACKWARD_TO_FORWARD) * flops.layer_forward_flops(m, batch)
                 + flops.recompute_forward_flops(m, batch, "full"))
    ours = layers * per_layer + 3 * flops.head_forward_flops(m, batch)
    assert ours == pytest.approx(4 * layers * 24 * batch * s * h * h * (1 + s / (6 * h))
                                 + 6 * batch * s * h * v)
    assert flops.narayanan_flops_per_iteration(m, batch) == pytest.approx(ours)
    # The MFU numerator is eq. 3 without the recomputed forward.
    assert flops.model_flops_per_iteration(m, batch) == pytest.approx(
        ours - layers * flops.layer_forward_flops(m, batch))


def test_recompute_flops_by_mode() -> None:
    m = _gpt(4, 1024, 16)
    assert flops.recompute_forward_flops(m, 2, "none") == 0.0
    assert flops.recompute_forward_flops(m, 2, "selective") == 4 * 2 * m.seq_length**2 * 1024
    assert flops.recompute_forward_flops(m, 2, "full") == flops.layer_forward_flops(m, 2)


def _calibration_rows() -> list[dict[str, str]]:
    shared = Path(__file__).resolve().parents[2] / "shared/reference/calibration_runs.csv"
    if shared.exists():
        text = shared.read_text()
    else:  # the copy shipped with the package
        text = resources.files("haap_solver").joinpath("data/calibration_runs.csv").read_text()
    return list(csv.DictReader(text.splitlines()))


CALIBRATION_ROWS = _calibration_rows()


@pytest.mark.parametrize("row", CALIBRATION_ROWS, ids=[r["id"] for r in CALIBRATION_ROWS])
def test_narayanan_runs_reproduce_derived_iteration_time(row: dict[str, str]) -> None:
    hidden = int(row["hidden"])
    m = ModelSpec(name=row["model"], num_layers=int(row["layers"]), hidden_size=hidden,
                  ffn_hidden_size=4 * hidden, num_attention_heads=int(row["heads"]),
                  vocab_size=51200, seq_length=2048)
    assert int(row["ffn"]) == 4 * hidden and int(row["vocab"]) == 51200
    f = flops.narayanan_flops_per_iteration(m, int(row["global_batch_seqs"]))
    time_s = f / (int(row["gpus"]) * float(row["measured_tflops_per_gpu"]) * 1e12)
    assert time_s == pytest.approx(float(row["derived_iteration_time_s"]), rel=0.015)


def test_calibration_file_has_every_row() -> None:
    assert len(CALIBRATION_ROWS) >= 22


# -- Ring collectives, alpha-beta --------------------------------------------------------------
def test_ring_collectives_hand_computed() -> None:
    # 1 GB over 4 ranks at 100 GB/s and 5 us per hop.
    # All-reduce: 2 (p-1)/p n / B + 2 (p-1) alpha = 1.5 * 0.01 + 6 * 5e-6 = 0.01503 s.
    assert comm.ring_allreduce_s(1e9, 4, 100.0, 5e-6) == pytest.approx(0.01503)
    # All-gather / reduce-scatter: (p-1)/p n / B + (p-1) alpha = 0.0075 + 1.5e-5.
    assert comm.ring_allgather_s(1e9, 4, 100.0, 5e-6) == pytest.approx(0.007515)
    # Point to point: n / B + alpha.
    assert comm.p2p_s(1e9, 100.0, 5e-6) == pytest.approx(0.010005)
    # An all-reduce is a reduce-scatter followed by an all-gather.
    assert comm.ring_allreduce_s(3e8, 8, 25.0, 1e-5) == pytest.approx(
        2 * comm.ring_allgather_s(3e8, 8, 25.0, 1e-5))


def test_ring_collectives_degenerate() -> None:
    assert comm.ring_allreduce_s(1e9, 1, 100.0, 5e-6) == 0.0
    assert comm.ring_allgather_s(1e9, 1, 100.0, 5e-6) == 0.0
    assert comm.ring_allreduce_s(0.0, 8, 100.0, 5e-6) == 0.0
    assert comm.p2p_s(0.0, 100.0, 5e-6) == 0.0


def test_tensor_parallel_communication_hand_computed() -> None:
    """Sec. 3: two all-reduces of b s h 16-bit values per layer and pass over NVLink."""
    m = model_preset("gpt3-1.3b")  # s = 2048, h = 2048
    inst = make_instance(
        model=m, training=TrainingSpec(global_batch_size=8),
        node_groups=[NodeGroup(name="g", device="A100-80G", num_nodes=1, gpus_per_node=8,
                               nic_gbit_s=200)])
    cm = CostModel(inst)
    nbytes = 1 * 2048 * 2048 * 2  # b s h x 2 bytes
    bw = 300e9 * DEFAULT_CONSTANTS.intra_node_efficiency  # A100 NVLink, per direction
    ar = 2 * (2 - 1) / 2 * nbytes / bw + 2 * (2 - 1) * INTRA_NODE_LATENCY_US * 1e-6
    cost = cm.layer_cost("A100-80G", 2, 1, "none")
    assert cost.tp_fwd_s == pytest.approx(2 * ar)
    assert cost.tp_bwd_s == pytest.approx(2 * ar)
    assert cm.layer_cost("A100-80G", 2, 1, "full").tp_bwd_s == pytest.approx(4 * ar)
    assert cm.layer_cost("A100-80G", 1, 1, "none").tp_fwd_s == 0.0


# -- Pipeline time (docs/cost-model.md Sec. 7) and its breakdown (Sec. 8) ----------------------
def _stage(i: int, fwd: float, bwd: float, link: float = 0.0) -> StageReport:
    mem = MemoryReport(weights=0, grads=0, optimizer=0, activations=0, extras=0, reserved=0,
                       capacity=1)
    rep = ReplicaReport(node_group="g", device="d", count=1, tp=1, micro_batch_share=1,
                        fwd_s=fwd, bwd_s=bwd, compute_s=fwd + bwd, tp_comm_s=0.0,
                        zero_comm_s=0.0, dp_comm_s=0.0, optimizer_s=0.0, memory=mem,
                        params_local=0.0)
    return StageReport(index=i, first_layer=0, num_layers=1, recompute="none", in_flight=1,
                       fwd_s=fwd, bwd_s=bwd, p2p_next_s=link, tail_s=0.0, replicas=[rep])


def test_pipeline_1f1b_hand_computed() -> None:
    """Overlapped sends (training.pipeline_p2p = "overlapped")."""
    stages = [_stage(0, 1.0, 1.0, link=0.1), _stage(1, 0.5, 3.0)]
    total, parts = pipeline_time("1f1b", stages, 10, blocking=False)
    # sum tau + 2 sum c + (m - 1) max(max tau, 2 max c) = 5.5 + 0.2 + 9 x 3.5
    assert total == pytest.approx(37.2)
    assert parts["compute_s"] == pytest.approx(10 * 3.5)
    assert parts["p2p_s"] == pytest.approx(0.2)
    assert parts["bubble_s"] == pytest.approx(2.0)  # the other stage's tau
    # A link slower than every stage becomes the bottleneck.
    total, parts = pipeline_time("1f1b", [_stage(0, 1.0, 1.0, link=2.0), _stage(1, 0.5, 3.0)], 10,
                                 blocking=False)
    assert total == pytest.approx(5.5 + 4.0 + 9 * 4.0)
    assert parts["p2p_s"] == pytest.approx(4.0 + 9 * 0.5)


def test_pipeline_1f1b_blocking_adds_each_stage_s_sends_to_its_period() -> None:
    """Blocking sends (Megatron-LM's 1F1B without interleaving, DeepSpeed): every micro-batch a
    stage waits for its exchanges with both neighbours, so the steady-state period is
    max_i (tau_i + c_{i-1} + c_i), not max(max tau, 2 max c)."""
    stages = [_stage(0, 1.0, 1.0, link=0.1), _stage(1, 0.5, 0.4, link=0.3), _stage(2, 0.2, 3.0)]
    total, parts = pipeline_time("1f1b", stages, 10, blocking=True)
    # taus 2.0, 0.9, 3.2; periods 2.0 + 0.1, 0.9 + 0.1 + 0.3, 3.2 + 0.3 -> 3.5
    assert total == pytest.approx(6.1 + 2 * 0.4 + 9 * 3.5)
    assert parts["p2p_s"] == pytest.approx(0.8 + 9 * 0.3)  # the sends in the period
    overlapped, _ = pipeline_time("1f1b", stages, 10, blocking=False)
    assert overlapped == pytest.approx(6.1 + 0.8 + 9 * 3.2)
    # A slow link no longer counts twice: 2c = 4 > the blocking period 1.0 + 2.0 ... 3.5 + 2.0.
    slow = [_stage(0, 1.0, 1.0, link=2.0), _stage(1, 0.5, 3.0)]
    total, _ = pipeline_time("1f1b", slow, 10, blocking=True)
    assert total == pytest.approx(5.5 + 4.0 + 9 * 5.5)


def test_pipeline_gpipe_blocking() -> None:
    stages = [_stage(0, 1.0, 1.0, link=0.5), _stage(1, 0.5, 3.0)]
    total, parts = pipeline_time("gpipe", stages, 10, blocking=True)
    # forward periods 1.5, 1.0; backward periods 1.5, 3.5
    assert total == pytest.approx(1.5 + 4.0 + 1.0 + 9 * (1.5 + 3.5))
    assert sum(parts.values()) == pytest.approx(total)


def test_pipeline_gpipe_hand_computed() -> None:
    """Forward maximum on stage 0, backward maximum on stage 1, no links: the (m-1) x 0.5 of
    imbalance is bubble, not point-to-point time."""
    stages = [_stage(0, 1.0, 1.0), _stage(1, 0.5, 3.0)]
    total, parts = pipeline_time("gpipe", stages, 10, blocking=False)
    # sum F + sum B + (m - 1)(max F + max B) = 1.5 + 4 + 9 x 4
    assert total == pytest.approx(41.5)
    assert parts["p2p_s"] == 0.0
    assert parts["compute_s"] == pytest.approx(35.0)
    assert parts["bubble_s"] == pytest.approx(6.5)
    assert sum(parts.values()) == pytest.approx(total)
    # One micro-batch: no steady state.
    total, _ = pipeline_time("gpipe", stages, 1)
    assert total == pytest.approx(5.5)


def test_gpipe_last_stage_holds_every_micro_batch_logits() -> None:
    """Sec. 5.4: the last stage's logits etc. are held for one micro-batch under 1F1B, for all m
    under GPipe (every forward runs before the first backward)."""
    m = model_preset("gpt3-350m")
    training = TrainingSpec(global_batch_size=8, schedules=("1f1b", "gpipe"))
    inst = make_instance(model=m, training=training, node_groups=[
        NodeGroup(name="g", device="A100-80G", num_nodes=1, gpus_per_node=8, nic_gbit_s=200)])
    rg = ReplicaGroup(node_group="g", device="A100-80G", count=1, tp=1, micro_batch_share=1,
                      placement=(Placement(node=0, replicas=1),))
    rg2 = replace(rg, placement=(Placement(node=0, replicas=1),))
    stages = (Stage(first_layer=0, num_layers=12, replicas=(rg,)),
              Stage(first_layer=12, num_layers=12, replicas=(rg2,)))
    extra = memory.last_stage_extra_activation_bytes(m, training, 1, 1)
    for schedule, held in (("1f1b", 1), ("gpipe", 8)):
        plan = Plan(schedule=schedule, micro_batch_size=1, num_micro_batches=8, stages=stages)
        ev = CostModel(inst).evaluate(plan)
        assert ev.stages[1].replicas[0].memory.extras == pytest.approx(held * extra)
