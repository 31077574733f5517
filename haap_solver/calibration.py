"""Calibrate the cost model's efficiency constants on published, measured Megatron-LM runs.

The runs are Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
Using Megatron-LM" (SC'21, arXiv:2104.04473), Table 1 (weak scaling, 3D parallelism) and Table 2
(ZeRO-3 vs 3D parallelism), shipped as ``haap_solver/data/calibration_runs.csv``. Each row is turned
into an instance (GPT model, 2021 training set-up, DGX A100 nodes) and the plan the authors ran;
the cost model predicts its iteration time, and `fit` adjusts four constants of
``haap_solver.cost.efficiency.CostConstants`` so that log(predicted / measured) is as small as
possible over all rows at once (one set of constants, never a per-row fit).

`haap calibrate` (``haap_solver.calibrate``) prints predicted vs measured for every row, refits
(``--fit``) and regenerates docs/validation.md (``--write``, rendered by
``haap_solver.report.calibration``).
"""

from __future__ import annotations

import csv
import io
import math
import statistics
from dataclasses import dataclass, fields, replace
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

from haap_solver import limits
from haap_solver.cluster import NodeGroup
from haap_solver.cost import flops
from haap_solver.cost.efficiency import DEFAULT_CONSTANTS, CostConstants
from haap_solver.cost.evaluate import CostModel, Evaluation
from haap_solver.errors import InputError, read_text
from haap_solver.instance import Instance, make_instance
from haap_solver.model import ModelSpec
from haap_solver.plan import Placement, Plan, ReplicaGroup, Stage
from haap_solver.training import Schedule, TrainingSpec
from haap_solver.validate import plan_violations

DATA_FILE = "calibration_runs.csv"
DEVICE = "A100-80G"
GPUS_PER_NODE = 8
NICS_PER_NODE = 8
NIC_GBIT_S = 200.0
MAX_CHOSEN_MICRO_BATCH = 8

FITTED: tuple[str, ...] = ("max_efficiency", "network_efficiency", "zero3_overlap")
"""The constants `fit` adjusts, in the order of the parameter vector: one set for every device
(the devices differ by their measured matmul ceilings, `DeviceType.matmul_efficiency`). A
separate Hopper `max_efficiency` was fitted before the ceilings were modelled: 0.671 against
the Ampere 0.728 (0.922 of it; the measured ceilings' ratio is 0.924). A Hopper flash-attention
efficiency was tried as well: the fit ran it to 0.13 of peak, a trade of two constants against
the H100 rows' trend with width, not a physical value (FlashAttention-2 reaches about 0.35 of
H100 peak, FlashAttention-3 0.75), so it is not fitted."""
FAMILY_FITTED: dict[str, tuple[str, str]] = {}
"""Fitted names that stand for one device family's constant, as (family, constant); none
(`FITTED`)."""
BOUNDS: dict[str, tuple[float, float]] = {
    "max_efficiency": (0.05, 0.95),
    "width_half": (1.0, 20000.0),
    "network_efficiency": (0.05, 0.95),
    "zero3_overlap": (0.0, 1.0),
}
X0: dict[str, float] = {
    "max_efficiency": 0.6,
    "width_half": 150.0,
    "network_efficiency": 0.7,
    "zero3_overlap": 0.8,
}
"""Fixed starting point of the fit (the fit is deterministic)."""
SIGNIFICANT_DIGITS = 3


# -- The runs ----------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class CalibrationRun:
    """One measured run (a row of the CSV), with the fields the calibration uses."""

    id: str
    model: str
    layers: int
    hidden: int
    heads: int
    ffn: int
    vocab: int
    seq: int
    global_batch: int
    micro_batch: int | None
    """Sequences per micro-batch; None where the paper does not report it (Table 1)."""
    gpus: int
    tp: int
    pp: int
    dp: int
    zero3: bool
    measured_tflops: float
    """TFLOP/s per GPU as the paper counts them (eq. 3, recomputation included)."""
    measured_s: float
    """Iteration time derived from the paper's TFLOP/s and its eq. 3 FLOP count."""
    source_locator: str
    notes: str
    source: str = "SC'21"
    """Short name of the publication: the unit left out by the cross-validation."""
    device: str = DEVICE
    nics_per_node: int = NICS_PER_NODE
    nic_gbit_s: float = NIC_GBIT_S
    nic: str = "infiniband"
    """NIC class of the nodes (`NodeGroup.nic`): InfiniBand on DGX clusters, RoCE on
    MegaScale's Ethernet fabric."""
    dtype: str = "fp16"
    sequence_parallel: bool = False
    flash_attention: bool = False
    overlap_grad_reduce: bool = False
    tp_comm_overlap: bool = False
    """TP communication overlapped with the GEMMs (the README's "DP/TP/PP comm overlap")."""
    pipeline_exchange: str = "auto"
    """`TrainingSpec.pipeline_exchange`: "sequential" for DeepSpeed's pipeline engine (MT-NLG)."""
    zero_stage: int | None = None
    """ZeRO stage; None: 3 for ZeRO-3 rows, else 0."""
    recompute: tuple[str, ...] = ("full",)
    """Recomputation modes tried (the fastest that fits is taken where several are given)."""
    gated_mlp: bool = False
    learned_positions: bool = True
    dropout: bool = True
    per_layer: bool = False
    """The measurement is one layer's forward + backward, not an iteration ([K22] Table 4)."""
    virtual_stages: int = 1
    """Model chunks per pipeline stage: > 1 runs Megatron's interleaved 1F1B with that v."""
    assumptions: str = ""
    """What the encoding assumes beyond the row (docs/validation.md lists it)."""

    @property
    def table(self) -> str:
        if self.source != "SC'21":
            return self.source
        return "Table 2" if self.source_locator.startswith("Table 2") else "Table 1"

    @property
    def zero(self) -> int:
        return self.zero_stage if self.zero_stage is not None else (3 if self.zero3 else 0)


SC21_SCRIPT = ("NVIDIA/Megatron-LM examples/sc21/run_table_1.sh (commit 79a3bb6b), the "
               "authors' script for Table 1")
SC21_TABLE1_SETTINGS: dict[str, tuple[int, int]] = {
    "r001": (16, 1), "r002": (16, 1), "r003": (16, 1), "r004": (8, 1), "r005": (4, 1),
    "r006": (2, 3), "r007": (2, 2), "r008": (1, 2), "r009": (1, 3), "r010": (1, 1),
}
"""(micro-batch, virtual stages v) of each Table 1 run from `SC21_SCRIPT`, which the paper
does not print: MBS and ``--num-layers-per-virtual-pipeline-stage`` (5 of 15 layers per stage
for 76B: v = 3; 5 of 10 for 145B, 3 of 6 for 310B: v = 2; 1 of 3 for 530B: v = 3). The 39B
(PP 2) and 1T runs set no virtual stages: plain 1F1B."""


_INT_COLUMNS: dict[str, int] = {
    "layers": limits.MAX_LAYERS, "hidden": limits.MAX_HIDDEN_SIZE, "heads": limits.MAX_HEADS,
    "ffn": limits.MAX_FFN_HIDDEN_SIZE, "vocab": limits.MAX_VOCAB_SIZE,
    "seq": limits.MAX_SEQ_LENGTH, "global_batch_seqs": limits.MAX_BATCH,
    "gpus": limits.MAX_GPUS, "tp": limits.MAX_TP, "pp": limits.MAX_LAYERS,
    "dp": limits.MAX_GPUS}
"""The whole-number columns of a calibration CSV and their largest values (the instance
limits: a run is built into an instance and a plan, whose loader would refuse more)."""


_MODEL_COLUMNS = {"num_layers": "layers", "hidden_size": "hidden", "num_attention_heads": "heads",
                  "num_kv_heads": "kv_heads", "ffn_hidden_size": "ffn", "vocab_size": "vocab",
                  "seq_length": "seq", "global_batch_size": "global_batch_seqs"}
"""The CSV column of each field a run's model and training set-up take from it."""


class _Cell:
    """Reads one row's cells, each error naming its line, the run's id and the column."""

    def __init__(self, row: dict[str, str], line: int):
        self.row = row
        self.where = f"line {line} ({row.get('id') or 'no id'})"

    def fail(self, column: str, what: str) -> ValueError:
        return ValueError(f"{self.where}: {column}: {what}")

    def whole(self, column: str, low: int = 1, high: int | None = None) -> int:
        text = self.row[column].strip()
        if len(text) > 20:  # (no column needs more digits; int() of 4,300 or more refuses)
            raise self.fail(column, f"expected a whole number, got {len(text):,} characters")
        try:
            value = int(text)
        except ValueError:
            raise self.fail(column, f"expected a whole number, got {text!r}") from None
        high = _INT_COLUMNS[column] if high is None else high
        if not low <= value <= high:
            raise self.fail(column, f"must be in [{low}, {high}], got {value}")
        return value

    def positive(self, column: str) -> float:
        text = self.row[column].strip()
        try:
            value = float(text)
        except ValueError:
            raise self.fail(column, f"expected a number, got {text!r}") from None
        if not (math.isfinite(value) and 0 < value <= limits.MAX_SECONDS):
            raise self.fail(column, f"must be a positive finite number, got {text}")
        return value


def parse_runs(text: str) -> list[CalibrationRun]:
    """Parse the calibration CSV (Table 1's micro-batch and v from `SC21_TABLE1_SETTINGS`).
    A bad cell is a ValueError naming its line, the run's id and the column."""
    runs = []
    seen: dict[str, int] = {}
    reader = csv.DictReader(io.StringIO(text))
    for row in reader:
        if None in row.values():
            raise ValueError(f"line {reader.line_num} has fewer fields than the header")
        cell = _Cell(row, reader.line_num)
        run_id = row["id"].strip()
        if not run_id:
            raise cell.fail("id", "empty; every run needs an id")
        if run_id in seen:
            raise cell.fail("id", f"{run_id!r} is also the id of line {seen[run_id]}")
        seen[run_id] = reader.line_num
        micro_batch = (SC21_TABLE1_SETTINGS[run_id][0] if run_id in SC21_TABLE1_SETTINGS
                       else cell.whole("micro_batch", high=limits.MAX_MICRO_BATCH)
                       if row["micro_batch"].strip() else None)
        gpus, tp, pp, dp = (cell.whole(c) for c in ("gpus", "tp", "pp", "dp"))
        if tp * pp * dp != gpus:
            raise cell.fail("gpus", f"tp x pp x dp = {tp} x {pp} x {dp} = {tp * pp * dp}, "
                                    f"not the {gpus} GPUs of the run")
        runs.append(CalibrationRun(
            id=run_id, model=row["model"], layers=cell.whole("layers"),
            hidden=cell.whole("hidden"), heads=cell.whole("heads"), ffn=cell.whole("ffn"),
            vocab=cell.whole("vocab"), seq=cell.whole("seq"),
            global_batch=cell.whole("global_batch_seqs"),
            micro_batch=micro_batch,
            virtual_stages=SC21_TABLE1_SETTINGS.get(run_id, (0, 1))[1],
            gpus=gpus, tp=tp, pp=pp, dp=dp,
            zero3="zero-3" in row["zero_or_sharding"].lower(),
            measured_tflops=cell.positive("measured_tflops_per_gpu"),
            measured_s=cell.positive("derived_iteration_time_s"),
            source_locator=row["source_locator"], notes=row["notes"],
        ))
    return runs


def load_runs(path: str | Path | None = None) -> list[CalibrationRun]:
    """The runs of `path`, or of the CSV shipped in the package."""
    if path is not None:
        source = str(path)
        # (at most MAX_FILE_BYTES: /dev/zero is an error, not a hang; a spreadsheet's UTF-8
        # byte order mark is no part of the first column's name)
        text = read_text(Path(path), "a calibration runs .csv file").removeprefix("\ufeff")
        try:
            runs = parse_runs(text)
        except KeyError as exc:
            raise InputError(f"not a calibration runs CSV: missing column {exc}",
                             source=source) from None
        except (ValueError, TypeError, csv.Error) as exc:
            raise InputError(f"not a calibration runs CSV: {exc}", source=source) from None
        if not runs:
            raise InputError("no runs (expected a header line and one line per run)",
                             source=source)
        for run in runs:  # (each run must make an instance and a plan the validator takes)
            try:
                prepare(run)
            except (InputError, ValueError) as exc:
                why = str(getattr(exc, "message", exc)).removeprefix(f"{run.id}: ")
                field = getattr(exc, "field", None)
                if field:  # a rule of the model the run makes: named by the CSV's column
                    why = f"{_MODEL_COLUMNS.get(field, field)}: {why}"
                if len(why) > 300:  # (every rejected plan's violations, at every micro-batch)
                    why = why[:300] + " ..."
                raise InputError(f"run {run.id}: {why}", source=source) from None
        return runs
    return parse_runs(resources.files("haap_solver").joinpath("data").joinpath(DATA_FILE)
                      .read_text())


MORE_RUNS_FILE = "more_runs.csv"

EXCLUDED_MORE_RUNS: dict[str, str] = {
    **{f"r{i:03d}": "Llama 3: context parallelism and FSDP-style sharding are not modelled; "
                    "no micro-batch" for i in range(45, 48)},
    **{rid: "MegaScale's own engine: a different layer (parallel attention and MLP, "
            "sliding-window attention) and optimizer (LAMB); its Megatron-LM baseline rows are "
            "predicted out of the fit (docs/validation.md)"
       for rid in ("r052", "r053", "r054", "r055", "r060", "r061", "r062", "r063", "r065",
                   "r067", "r069", "r071", "r072", "r073", "r074", "r075", "r076", "r077",
                   "r078")},
    "r079": "GPT-3 on V100: no model shape, layout or GPU count",
    "r080": "Gopher on TPU v3: not a GPU, no layout",
    "r081": "PaLM on TPU v4: not a GPU, no layout",
    "r085": "OPT-175B: FSDP, TP degree unverified, no layout",
    "r086": "LLaMA-65B: no parallel layout",
    "r110": "BLOOM candidate: inconsistent row (DP x TP x PP = 640 GPUs on 320 as printed)",
    "r153": "Megatron-LM README strong-scaling text: no parallel layout",
    "r154": "Megatron-LM README strong-scaling text: no parallel layout",
}
"""Rows of more_runs.csv kept out of the calibration, with the reason."""

_K22 = "Korthikanti et al. 2022 (MLSys'23) Table 4"
_README = "Megatron-LM README (H100)"
_MTNLG = "MT-NLG (Smith et al. 2022)"


def _more_run(row: dict[str, str]) -> CalibrationRun:
    """Encode one kept row of more_runs.csv (assumptions in the run's `assumptions`)."""
    rid = row["id"]
    common: dict[str, Any] = dict(
        id=rid, model=row["model"], layers=int(row["layers"]), hidden=int(row["hidden"]),
        heads=int(row["heads"]), seq=int(row["seq"]), gpus=int(row["gpus"]),
        tp=int(row["tp"]), pp=int(row["pp"]), dp=int(row["dp"]), zero3=False,
        source_locator=row["source_locator"], notes=row["notes"])
    if row["source"].startswith("Korthikanti"):
        mode = row["recompute"].strip()
        return CalibrationRun(
            **common, ffn=int(row["ffn"]), vocab=51200, global_batch=int(row["micro_batch"]),
            micro_batch=int(row["micro_batch"]), measured_tflops=float("nan"),
            measured_s=float(row["iteration_time_s"]), source=_K22,
            sequence_parallel=row["seq_parallel"].strip() == "yes", recompute=(mode,),
            per_layer=True,
            assumptions="fp16, unfused attention (2022 Megatron-LM); vocabulary irrelevant "
                        "(one layer)")
    if row["source"].startswith("NVIDIA/Megatron-LM"):
        model = ModelSpec(
            name=row["model"], num_layers=int(row["layers"]), hidden_size=int(row["hidden"]),
            ffn_hidden_size=4 * int(row["hidden"]), num_attention_heads=int(row["heads"]),
            vocab_size=int(row["vocab"]), seq_length=int(row["seq"]),
            learned_position_embeddings=True, uses_dropout=True)
        tflops = float(row["measured_tflops_per_gpu"])
        batch = int(row["global_batch_seqs"])
        measured = (flops.model_flops_per_iteration(model, batch)
                    / (tflops * 1e12 * int(row["gpus"])))
        return CalibrationRun(
            **common, ffn=4 * int(row["hidden"]), vocab=int(row["vocab"]), global_batch=batch,
            micro_batch=None, measured_tflops=tflops, measured_s=measured, source=_README,
            device="H100", nic_gbit_s=400.0, dtype="bf16", sequence_parallel=True,
            flash_attention=True, overlap_grad_reduce=True, tp_comm_overlap=True, zero_stage=1,
            recompute=("none", "selective", "full"),
            assumptions="ffn 4h, GPT layers (learned positions, dropout), bf16, sequence "
                        "parallelism, flash attention, distributed optimizer (ZeRO-1), "
                        "overlapped gradient reduction and TP communication (the README's "
                        "\"DP/TP/PP comm overlap\"), fp32 gradients (Megatron's bf16 "
                        "default), the least recomputation that fits, "
                        "DGX H100 (8 x 400 Gbit/s); micro-batch chosen; plain 1F1B although "
                        "the README's pipelined runs likely interleave; time = model FLOPs / "
                        "measured TFLOP/s")
    return CalibrationRun(
        **common, ffn=int(row["ffn"]), vocab=int(row["vocab"]),
        global_batch=int(row["global_batch_seqs"]), micro_batch=None,
        measured_tflops=float(row["measured_tflops_per_gpu"]),
        measured_s=float(row["iteration_time_s"]), source=_MTNLG, zero_stage=1,
        pipeline_exchange="sequential",
        assumptions="SECONDARY row; fp16, full recomputation, ZeRO-1 (DeepSpeed), no sequence "
                    "parallelism or flash attention (2021), plain 1F1B on DeepSpeed's pipeline "
                    "engine (a link's receive and send waited for in turn), Megatron's kernels, "
                    "micro-batch chosen")


OUT_OF_FIT_MORE_RUNS: tuple[str, ...] = (
    "r048", "r049", "r050", "r051", "r056", "r057", "r058", "r059", "r064", "r066", "r068",
    "r070")
"""Rows of more_runs.csv predicted with the shipped constants but not fitted on: MegaScale's
(Jiang et al., NSDI'24) Megatron-LM baseline, whose GPU is stated only as "NVIDIA Ampere" and
whose micro-batch and engine settings are not stated (`_megascale_run` lists what is
assumed). They check the model on runs it never saw; fitting on them would fit the
assumptions."""

_MEGASCALE = "MegaScale (Jiang et al. 2024), Megatron-LM baseline"


def _megascale_run(row: dict[str, str]) -> CalibrationRun:
    """Encode a Megatron-LM row of MegaScale's Table 2, Figure 9 or Table 3 (assumptions in
    the run's `assumptions`). Table 2 prints the iteration time; Figure 9 and Table 3 only the
    MFU, turned into a time with the model FLOPs against A100's 312 TFLOP/s (the same count
    reproduces Table 2's MFU from its times: r048 0.530 against 0.53)."""
    model = ModelSpec(
        name=row["model"], num_layers=int(row["layers"]), hidden_size=int(row["hidden"]),
        ffn_hidden_size=4 * int(row["hidden"]), num_attention_heads=int(row["heads"]),
        vocab_size=int(row["vocab"]), seq_length=int(row["seq"]),
        learned_position_embeddings=True, uses_dropout=True)
    batch, gpus = int(row["global_batch_seqs"]), int(row["gpus"])
    if row["iteration_time_s"].strip():
        measured = float(row["iteration_time_s"])
    else:
        measured = (flops.model_flops_per_iteration(model, batch)
                    / (float(row["mfu"]) * 312e12 * gpus))
    return CalibrationRun(
        id=row["id"], model=row["model"], layers=model.num_layers, hidden=model.hidden_size,
        heads=model.num_attention_heads, ffn=model.ffn_hidden_size, vocab=model.vocab_size,
        seq=model.seq_length, global_batch=batch, micro_batch=None, gpus=gpus,
        tp=int(row["tp"]), pp=int(row["pp"]), dp=int(row["dp"]), zero3=False,
        measured_tflops=float("nan"), measured_s=measured, source_locator=row["source_locator"],
        notes=row["notes"], source=_MEGASCALE, nic="roce", dtype="bf16",
        sequence_parallel=True, flash_attention=True, overlap_grad_reduce=False,
        tp_comm_overlap=False, zero_stage=1, recompute=("none", "selective", "full"),
        virtual_stages=int(row["vpp_interleave"]),
        assumptions="GPU 'NVIDIA Ampere' taken as A100-SXM4-80GB (312 TFLOP/s bf16), 8 per "
                    "node with 8 x 200 Gbit/s RoCE; Megatron-LM (commit 285068c8) with bf16 "
                    "and its fp32 gradients, sequence parallelism, flash attention, the "
                    "distributed optimizer (ZeRO-1), GPT layers (ffn 4h, learned positions, "
                    "dropout), the least recomputation that fits; no TP, PP or DP "
                    "communication overlap (MegaScale lists each as its own addition to "
                    "Megatron-LM, Table 3), so blocking pipeline sends; interleaved 1F1B with "
                    "the row's v; micro-batch chosen as for the README rows; Figure 9 and "
                    "Table 3 rows: time from the MFU")


def load_out_of_fit_runs(path: str | Path | None = None) -> list[CalibrationRun]:
    """The rows of more_runs.csv in `OUT_OF_FIT_MORE_RUNS`, encoded (never fitted on)."""
    text = (Path(path).read_text(encoding="utf-8") if path is not None else
            resources.files("haap_solver").joinpath("data").joinpath(MORE_RUNS_FILE).read_text())
    return [_megascale_run(row) for row in csv.DictReader(io.StringIO(text))
            if row["id"] in OUT_OF_FIT_MORE_RUNS]


def load_more_runs(path: str | Path | None = None) -> list[CalibrationRun]:
    """The kept rows of more_runs.csv (the shipped copy by default); `EXCLUDED_MORE_RUNS` says
    why the others are left out."""
    text = (Path(path).read_text(encoding="utf-8") if path is not None else
            resources.files("haap_solver").joinpath("data").joinpath(MORE_RUNS_FILE).read_text())
    return [_more_run(row) for row in csv.DictReader(io.StringIO(text))
            if row["id"] not in EXCLUDED_MORE_RUNS and row["id"] not in OUT_OF_FIT_MORE_RUNS]


def all_runs() -> list[CalibrationRun]:
    """Every calibration run: the SC'21 runs and the kept rows of more_runs.csv."""
    return load_runs() + load_more_runs()


# -- Instances and plans -----------------------------------------------------------------------
def run_model(run: CalibrationRun) -> ModelSpec:
    """The GPT model of a run (Megatron GPT: learned positions, tied embeddings, dropout)."""
    return ModelSpec(
        name=run.model, num_layers=run.layers, hidden_size=run.hidden, ffn_hidden_size=run.ffn,
        num_attention_heads=run.heads, vocab_size=run.vocab, seq_length=run.seq,
        gated_mlp=run.gated_mlp, tied_embeddings=True,
        learned_position_embeddings=run.learned_positions, uses_dropout=run.dropout,
    )


def run_instance(run: CalibrationRun) -> Instance:
    """Model, 2021 Megatron/DeepSpeed training set-up and a cluster of exactly gpus/8 DGX A100s."""
    if run.gpus % GPUS_PER_NODE:
        raise ValueError(f"{run.id}: {run.gpus} GPUs is not a whole number of DGX nodes")
    training = TrainingSpec(
        global_batch_size=run.global_batch, dtype=run.dtype,  # type: ignore[arg-type]
        zero_stage=run.zero, recompute=run.recompute,  # type: ignore[arg-type]
        schedules=(run_schedule(run),), sequence_parallel=run.sequence_parallel,
        virtual_stages=max(run.virtual_stages, 2),
        flash_attention=run.flash_attention, overlap_grad_reduce=run.overlap_grad_reduce,
        tp_comm_overlap=run.tp_comm_overlap,
        # Every engine of these runs waited for its pipeline sends: 2021 Megatron-LM (the SC'21
        # interleaved rows too: p2p overlap came in 2023, Megatron-LM commit f9283c5a8a),
        # DeepSpeed's pipeline engine (MT-NLG) and today's Megatron-LM in plain 1F1B.
        pipeline_p2p="blocking",
        pipeline_exchange=run.pipeline_exchange,  # type: ignore[arg-type]
    )
    group = NodeGroup(name="dgx-a100" if run.device == DEVICE else "dgx", device=run.device,
                      num_nodes=run.gpus // GPUS_PER_NODE, gpus_per_node=GPUS_PER_NODE,
                      nic=run.nic, nic_gbit_s=run.nic_gbit_s,  # type: ignore[arg-type]
                      nics_per_node=run.nics_per_node)
    return make_instance(model=run_model(run), training=training, node_groups=[group],
                         name=f"calibration-{run.id}")


def run_schedule(run: CalibrationRun) -> Schedule:
    """Megatron's interleaved 1F1B where the run sets virtual stages, else plain 1F1B."""
    return "interleaved-1f1b" if run.virtual_stages > 1 else "1f1b"


def layer_split(num_layers: int, num_stages: int) -> list[int]:
    """Even split; the first stages take one more layer each when it does not divide."""
    base, extra = divmod(num_layers, num_stages)
    return [base + (1 if i < extra else 0) for i in range(num_stages)]


def run_plan(run: CalibrationRun, micro_batch: int, instance: Instance,
             recompute: str = "full") -> Plan:
    """The run's plan: pp stages of dp replicas at TP tp, placed the way Megatron orders ranks.

    TP is innermost, then DP, then PP: replicas are packed onto consecutive nodes and every stage
    starts on a node of its own.
    """
    group = instance.cluster.node_groups[0]
    per_node = group.gpus_per_node // run.tp
    if per_node < 1 or group.gpus_per_node % run.tp:
        raise ValueError(f"{run.id}: TP {run.tp} does not pack into "
                         f"{group.gpus_per_node}-GPU nodes")
    per_dp = run.global_batch // run.dp
    if per_dp * run.dp != run.global_batch or per_dp % micro_batch:
        raise ValueError(f"{run.id}: global batch {run.global_batch} is not a multiple of "
                         f"dp x micro-batch = {run.dp} x {micro_batch}")
    stages = []
    first, node = 0, 0
    for n_layers in layer_split(run.layers, run.pp):
        placement = []
        left = run.dp
        while left:
            here = min(per_node, left)
            placement.append(Placement(node=node, replicas=here))
            left -= here
            node += 1
        replicas = ReplicaGroup(node_group=group.name, device=group.device, count=run.dp,
                                tp=run.tp, micro_batch_share=micro_batch,
                                placement=tuple(placement))
        stages.append(Stage(first_layer=first, num_layers=n_layers,
                            recompute=recompute,  # type: ignore[arg-type]
                            replicas=(replicas,)))
        first += n_layers
    return Plan(instance=instance.name, schedule=run_schedule(run),
                micro_batch_size=micro_batch * run.dp,
                num_micro_batches=per_dp // micro_batch, stages=tuple(stages),
                note=f"calibration run {run.id} ({run.model}, tp {run.tp} pp {run.pp} dp {run.dp})")


def micro_batch_candidates(run: CalibrationRun) -> list[int]:
    """The reported micro-batch, or every divisor of global_batch / dp up to 8."""
    if run.micro_batch is not None:
        return [run.micro_batch]
    per_dp = run.global_batch // run.dp
    return [b for b in range(1, MAX_CHOSEN_MICRO_BATCH + 1) if per_dp % b == 0]


@dataclass
class PreparedRun:
    """A run with its instance and the plans of every micro-batch that fits in memory."""

    run: CalibrationRun
    instance: Instance
    plans: dict[int, Plan]
    """Memory-feasible plans by micro-batch (the reported one only, where the paper gives it)."""
    rejected: dict[int, list[str]]
    """Micro-batches that do not validate, with the violations."""

    @property
    def chosen(self) -> bool:
        return self.run.micro_batch is None


def prepare(run: CalibrationRun) -> PreparedRun:
    instance = run_instance(run)
    plans: dict[int, Plan] = {}
    rejected: dict[int, list[str]] = {}
    for b in micro_batch_candidates(run):
        # The least recomputation that fits (the order of run.recompute), as a user would.
        for mode in run.recompute:
            plan = run_plan(run, b, instance, mode)
            violations = plan_violations(instance, plan)
            if not violations:
                plans[b] = plan
                rejected.pop(b, None)
                break
            rejected[b] = violations
    if not plans:
        raise ValueError(f"{run.id}: no micro-batch gives a valid plan: {rejected}")
    return PreparedRun(run=run, instance=instance, plans=plans, rejected=rejected)


# -- Prediction --------------------------------------------------------------------------------
@dataclass
class RowResult:
    """Predicted vs measured for one run."""

    prepared: PreparedRun
    micro_batch: int
    evaluation: Evaluation
    constants: CostConstants = DEFAULT_CONSTANTS

    @property
    def run(self) -> CalibrationRun:
        return self.prepared.run

    @property
    def plan(self) -> Plan:
        return self.prepared.plans[self.micro_batch]

    @property
    def predicted_s(self) -> float:
        if self.run.per_layer:
            # [K22] Table 4: one layer's forward + backward (TP communication included).
            stage = self.evaluation.stages[0]
            rep = stage.replicas[0]
            cm = CostModel(self.prepared.instance, constants=self.constants)
            lc = cm.layer_cost(rep.device, rep.tp, rep.micro_batch_share, stage.recompute)
            return lc.fwd_s + lc.bwd_s + lc.tp_fwd_s + lc.tp_bwd_s
        return self.evaluation.iteration_time_s

    @property
    def measured_s(self) -> float:
        return self.run.measured_s

    @property
    def error(self) -> float:
        """Relative error of the prediction, (predicted - measured) / measured."""
        return self.predicted_s / self.measured_s - 1.0

    @property
    def log_ratio(self) -> float:
        return math.log(self.predicted_s / self.measured_s)

    @cached_property
    def paper_flops(self) -> float:
        """FLOPs of one iteration by the paper's eq. 3 (recomputation included)."""
        return flops.narayanan_flops_per_iteration(self.prepared.instance.model,
                                                   self.run.global_batch)

    @property
    def predicted_tflops(self) -> float:
        """TFLOP/s per GPU the prediction implies, counted as the paper counts them."""
        return self.paper_flops / (self.predicted_s * self.run.gpus) / 1e12

    def to_dict(self) -> dict[str, Any]:
        r = self.run
        return {
            "id": r.id, "table": r.table, "model": r.model, "gpus": r.gpus, "tp": r.tp,
            "pp": r.pp, "dp": r.dp, "zero_stage": 3 if r.zero3 else 0,
            "micro_batch": self.micro_batch, "micro_batch_chosen": self.prepared.chosen,
            "num_micro_batches": self.plan.num_micro_batches,
            "measured_s": r.measured_s, "predicted_s": self.predicted_s, "error": self.error,
            "measured_tflops_per_gpu": r.measured_tflops,
            "predicted_tflops_per_gpu": self.predicted_tflops,
            "peak_memory_fraction": self.evaluation.peak_memory_fraction,
            "breakdown": dict(self.evaluation.breakdown),
        }


def predict(prepared: PreparedRun, constants: CostConstants) -> RowResult:
    """Cost the run's plan; where the micro-batch is not reported, the fastest one that fits."""
    cm = CostModel(prepared.instance, constants=constants)
    best: RowResult | None = None
    for b, plan in sorted(prepared.plans.items()):
        row = RowResult(prepared=prepared, micro_batch=b, evaluation=cm.evaluate(plan),
                        constants=constants)
        if best is None or row.predicted_s < best.predicted_s:
            best = row
    assert best is not None
    return best


def prepare_all(runs: list[CalibrationRun] | None = None) -> list[PreparedRun]:
    return [prepare(r) for r in (runs if runs is not None else all_runs())]


def predict_all(constants: CostConstants = DEFAULT_CONSTANTS,
                prepared: list[PreparedRun] | None = None) -> list[RowResult]:
    return [predict(p, constants) for p in (prepared if prepared is not None else prepare_all())]


@dataclass(frozen=True)
class Summary:
    median_abs_error: float
    max_abs_error: float
    worst: str
    rms_log_error: float


def summarize(rows: list[RowResult]) -> Summary:
    errors = [abs(r.error) for r in rows]
    worst = max(rows, key=lambda r: abs(r.error))
    return Summary(median_abs_error=statistics.median(errors), max_abs_error=max(errors),
                   worst=worst.run.id,
                   rms_log_error=math.sqrt(sum(r.log_ratio**2 for r in rows) / len(rows)))


# -- Fit ---------------------------------------------------------------------------------------
def round_significant(x: float, digits: int = SIGNIFICANT_DIGITS) -> float:
    if x == 0 or not math.isfinite(x):
        return x
    return round(x, digits - 1 - math.floor(math.log10(abs(x))))


@dataclass(frozen=True)
class FitResult:
    constants: CostConstants
    """The fitted constants, exactly as the optimizer left them."""
    rounded: CostConstants
    """The same, each fitted value rounded to 3 significant digits (what the package ships)."""
    cost: float
    """Half the sum of squared log errors at the optimum."""
    nfev: int
    success: bool
    message: str
    at_bound: tuple[str, ...]
    """Fitted constants that ended on (within 1e-6 relative of) a bound."""


def constant_value(constants: CostConstants, name: str) -> float:
    """A fitted constant's value (a `FAMILY_FITTED` name: the family's own, else the default)."""
    if name in FAMILY_FITTED:
        family, constant = FAMILY_FITTED[name]
        return float(getattr(constants.for_family(family), constant))
    return float(getattr(constants, name))


def _with(base: CostConstants, x: Any, names: tuple[str, ...] = FITTED) -> CostConstants:
    changes = {name: float(v) for name, v in zip(names, x, strict=True)}
    family = {FAMILY_FITTED[n]: changes.pop(n) for n in list(changes) if n in FAMILY_FITTED}
    out = base.with_(**changes)
    if family:
        kept = tuple(e for e in base.family_constants if (e[0], e[1]) not in family)
        out = replace(out, family_constants=(*kept, *((f, c, v) for (f, c), v in family.items())))
    return out


def fit(prepared: list[PreparedRun] | None = None, *, base: CostConstants = DEFAULT_CONSTANTS,
        max_nfev: int | None = None, fixed: dict[str, float] | None = None) -> FitResult:
    """Least-squares fit of `FITTED` on log(predicted / measured) over all runs jointly.

    Starts from the fixed `X0` within `BOUNDS`; the constants that are not fitted stay as in
    `base`. `fixed` pins some of the `FITTED` constants instead (for sensitivity studies).
    """
    import numpy as np
    from scipy.optimize import least_squares

    prepared = prepared if prepared is not None else prepare_all()
    fixed = fixed or {}
    base = _with(base, list(fixed.values()), tuple(fixed))
    names = tuple(n for n in FITTED if n not in fixed)
    lo = np.array([BOUNDS[n][0] for n in names])
    hi = np.array([BOUNDS[n][1] for n in names])
    x0 = np.array([X0[n] for n in names])

    def residuals(x: Any) -> Any:
        constants = _with(base, x, names)
        return np.array([predict(p, constants).log_ratio for p in prepared])

    sol = least_squares(residuals, x0, bounds=(lo, hi), x_scale=np.maximum(np.abs(x0), 0.1),
                        max_nfev=max_nfev, method="trf")
    fitted = _with(base, sol.x, names)
    rounded = _with(base, [round_significant(float(v)) for v in sol.x], names)
    at_bound = tuple(n for n, v, a, b in zip(names, sol.x, lo, hi, strict=True)
                     if abs(v - a) <= 1e-6 * max(abs(a), 1.0) or abs(v - b) <= 1e-6 * abs(b))
    return FitResult(constants=fitted, rounded=rounded, cost=float(sol.cost), nfev=int(sol.nfev),
                     success=bool(sol.success), message=str(sol.message), at_bound=at_bound)


def sources(prepared: list[PreparedRun]) -> list[str]:
    """The publications of the runs, in order of first appearance."""
    return list(dict.fromkeys(p.run.source for p in prepared))


def cross_validate(prepared: list[PreparedRun], *, base: CostConstants = DEFAULT_CONSTANTS
                   ) -> tuple[list[RowResult], dict[str, CostConstants]]:
    """Leave one source out: for each publication, fit on the others and predict its runs.

    When the left-out source holds a device's only runs (the H100 rows), that device is
    predicted from constants fitted on other devices, through its measured matmul ceiling: the
    same extrapolation every device without calibration runs gets. Returns every run's
    held-out prediction and, per source, the constants that predicted it.
    """
    rows: dict[str, RowResult] = {}
    fits: dict[str, CostConstants] = {}
    for source in sources(prepared):
        train = [p for p in prepared if p.run.source != source]
        test = [p for p in prepared if p.run.source == source]
        constants = fit(train, base=base).constants
        fits[source] = constants
        for p in test:
            rows[p.run.id] = predict(p, constants)
    return [rows[p.run.id] for p in prepared], fits


def fitted_values(constants: CostConstants) -> dict[str, float]:
    return {n: constant_value(constants, n) for n in FITTED}


def other_values(constants: CostConstants) -> dict[str, float]:
    return {f.name: getattr(constants, f.name) for f in fields(constants)
            if f.name not in FITTED and f.name != "family_constants"}


def uncertainty(constants: CostConstants,
                prepared: list[PreparedRun] | None = None) -> dict[str, float]:
    """Approximate one-sigma uncertainty of each fitted constant at `constants`.

    From the linearised least-squares problem: covariance = s^2 (J^T J)^-1, with J the Jacobian of
    the log errors (central differences) and s^2 their residual variance over n - 4 degrees of
    freedom. Only meaningful near the optimum.
    """
    import numpy as np

    prepared = prepared if prepared is not None else prepare_all()
    x = np.array([constant_value(constants, n) for n in FITTED], dtype=float)

    def residuals(v: Any) -> Any:
        c = _with(constants, v)
        return np.array([predict(p, c).log_ratio for p in prepared])

    r0 = residuals(x)
    jac = np.zeros((len(r0), len(x)))
    for k in range(len(x)):
        step = np.zeros_like(x)
        step[k] = 1e-4 * max(abs(x[k]), 1e-3)
        jac[:, k] = (residuals(x + step) - residuals(x - step)) / (2 * step[k])
    dof = max(len(r0) - len(x), 1)
    cov = float(r0 @ r0) / dof * np.linalg.pinv(jac.T @ jac)
    return {n: float(math.sqrt(max(cov[k, k], 0.0))) for k, n in enumerate(FITTED)}


__all__ = [
    "BOUNDS", "FITTED", "X0", "CalibrationRun", "FitResult", "PreparedRun", "RowResult",
    "Summary", "fit", "layer_split", "load_runs", "micro_batch_candidates", "parse_runs",
    "predict", "predict_all", "prepare", "prepare_all",
    "round_significant", "run_instance", "run_model", "run_plan", "summarize", "uncertainty",
]
