"""`haap profile`: measured costs of the instance's layer, embedding and head on the local device.

Times the GPT of `gpt.py` at the instance's dimensions, TP 1, at each micro-batch size asked for
(median of `repeats` timed runs after one warm-up): a decoder layer's forward and backward, the
embedding's and the head's (final norm, LM head, loss), one Adam step over a layer's parameters,
and the bytes a layer's forward saves for its backward (saved-tensor hooks). Written in the
profile format of ``haap_solver.cost.profile`` (docs/cost-model.md Sec. 9), one entry per
micro-batch size for each device type the measurement stands for.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from haap_solver.model import ModelSpec
from haap_solver.runtime.gpt import Embedding, GPTShape, Head, Layer, batch


def shape_of(model: ModelSpec) -> GPTShape:
    """The GPT of `gpt.py` at the instance model's dimensions."""
    return GPTShape(num_layers=model.num_layers, hidden_size=model.hidden_size,
                    ffn_hidden_size=model.ffn_hidden_size,
                    num_heads=model.num_attention_heads, vocab_size=model.vocab_size,
                    seq_length=model.seq_length, gated_mlp=model.gated_mlp)


def _median_s(fn: Callable[[], Any], repeats: int, sync: Callable[[], None]) -> float:
    fn()
    sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(shape: GPTShape, micro_batch: int, *, device: str = "cpu",
            dtype: torch.dtype = torch.float32, repeats: int = 5) -> dict[str, float]:
    """One profile entry's numbers (seconds, bytes) at `micro_batch` sequences."""
    dev = torch.device(device)
    sync: Callable[[], None] = (torch.cuda.synchronize if dev.type == "cuda"
                                else (lambda: None))
    torch.manual_seed(0)
    emb = Embedding(shape).to(dev, dtype)
    layer = Layer(shape).to(dev, dtype)
    head = Head(shape).to(dev, dtype)
    tokens, targets = (t.to(dev) for t in batch(shape, micro_batch, seed=0))
    x = torch.randn(micro_batch, shape.seq_length, shape.hidden_size, device=dev, dtype=dtype,
                    requires_grad=True)
    out: dict[str, float] = {}
    out["layer_fwd_s"] = _median_s(lambda: layer(x), repeats, sync)
    y = layer(x)
    g = torch.randn_like(y)
    out["layer_bwd_s"] = _median_s(
        lambda: torch.autograd.grad(layer(x), [x, *layer.parameters()], g), repeats, sync
    ) - out["layer_fwd_s"]
    out["embedding_fwd_s"] = _median_s(lambda: emb(tokens), repeats, sync)
    ge = torch.randn(micro_batch, shape.seq_length, shape.hidden_size, device=dev, dtype=dtype)
    out["embedding_bwd_s"] = max(0.0, _median_s(
        lambda: torch.autograd.backward(emb(tokens), ge), repeats, sync) - out["embedding_fwd_s"])
    xh = x.detach().requires_grad_(True)
    out["head_fwd_s"] = _median_s(lambda: head(xh, targets), repeats, sync)
    out["head_bwd_s"] = max(0.0, _median_s(
        lambda: head(xh, targets).backward(), repeats, sync) - out["head_fwd_s"])
    opt = torch.optim.Adam(layer.parameters(), lr=1e-4)
    for p in layer.parameters():
        p.grad = torch.zeros_like(p)
    out["layer_optimizer_s"] = _median_s(opt.step, repeats, sync)
    saved = [0]

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved[0] += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        layer(x)
    out["layer_activation_bytes"] = float(saved[0])
    out["layer_bwd_s"] = max(out["layer_bwd_s"], 1e-9)
    return out


def profile_toml(model: ModelSpec, devices: list[str], micro_batches: list[int], *,
                 device: str = "cpu", dtype: torch.dtype = torch.float32,
                 repeats: int = 5) -> str:
    """The profile file's text: the measurements at each micro-batch, for each device type."""
    shape = shape_of(model)
    where = (torch.cuda.get_device_name(0) if device == "cuda"
             else f"CPU, {torch.get_num_threads()} thread(s)")
    lines = [f'description = "haap profile: {model.name} layer (h={shape.hidden_size}, '
             f's={shape.seq_length}) measured on {where}, {dtype}, TP 1, torch '
             f'{torch.__version__}; stands for {", ".join(devices)}"', ""]
    for b in micro_batches:
        values = measure(shape, b, device=device, dtype=dtype, repeats=repeats)
        for name in devices:
            lines += ["[[entry]]", f'device = "{name}"', "tp = 1", f"micro_batch = {b}"]
            lines += [f"{k} = {v!r}" for k, v in values.items()]
            lines.append("")
    return "\n".join(lines)
