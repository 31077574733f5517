"""FLOP counts (2 per multiply-accumulate) of a decoder-only transformer.

For a GPT layer (kv heads = heads, ffn = 4h) the forward count reduces to the per-layer term of
Narayanan et al. (SC'21) Sec. 5.1, 24 b s h^2 (1 + s / 6h), from which their eq. 3 is built;
backward is twice the forward. docs/cost-model.md, Sec. 2.
"""

from __future__ import annotations

from haap_solver.model import ModelSpec

BACKWARD_TO_FORWARD = 2.0


def layer_forward_flops(model: ModelSpec, batch: int) -> float:
    """Forward matmul FLOPs of one decoder layer for `batch` sequences (GQA and gated MLP aware)."""
    s, h, f, kv = model.seq_length, model.hidden_size, model.ffn_hidden_size, model.kv_size
    tokens = batch * s
    qkv = 2 * tokens * h * (h + 2 * kv)
    attention_core = attention_core_forward_flops(model, batch)
    out_proj = 2 * tokens * h * h
    mlp = 2 * tokens * h * f * (3 if model.gated_mlp else 2)
    return float(qkv + attention_core + out_proj + mlp)


def attention_core_forward_flops(model: ModelSpec, batch: int) -> float:
    """Q K^T and (scores) V: 4 b s^2 h.

    Causal masking is not credited (as in Narayanan's formula).
    """
    return float(4 * batch * model.seq_length**2 * model.hidden_size)


def head_forward_flops(model: ModelSpec, batch: int) -> float:
    """LM head projection: 2 b s h V."""
    return float(2 * batch * model.seq_length * model.hidden_size * model.vocab_size)


def recompute_forward_flops(model: ModelSpec, batch: int, mode: str) -> float:
    """Extra forward FLOPs of one layer in the backward pass, by recomputation mode."""
    if mode == "full":
        return layer_forward_flops(model, batch)
    if mode == "selective":
        return attention_core_forward_flops(model, batch)
    return 0.0


def model_flops_per_iteration(model: ModelSpec, global_batch: int) -> float:
    """Useful FLOPs of one iteration (forward + backward, no recomputation): the MFU numerator."""
    per_seq = model.num_layers * layer_forward_flops(model, 1) + head_forward_flops(model, 1)
    return (1 + BACKWARD_TO_FORWARD) * per_seq * global_batch


def narayanan_flops_per_iteration(model: ModelSpec, global_batch: int) -> float:
    """Narayanan et al. SC'21 eq. 3: 96 B s l h^2 (1 + s/6h + V/16lh), full recompute included."""
    b, s, h, v = global_batch, model.seq_length, model.hidden_size, model.vocab_size
    layers = model.num_layers
    return 96.0 * b * s * layers * h * h * (1 + s / (6 * h) + v / (16 * layers * h))
