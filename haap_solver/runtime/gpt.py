"""One small GPT in PyTorch for the runtime (`haap run`) and the profiler (`haap profile`).

Pre-norm decoder layers with real causal self-attention and an MLP (GELU, or SwiGLU for a gated
model), learned or no position embeddings, an untied LM head (tied weights would tie the first
and last stage's parameters across processes; the cost model's tied head is one matrix fewer).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F


@dataclass(frozen=True, kw_only=True)
class GPTShape:
    """The dimensions of the GPT that is built."""

    num_layers: int
    """Decoder layers."""
    hidden_size: int
    """Model width."""
    ffn_hidden_size: int
    """MLP width."""
    num_heads: int
    """Attention heads."""
    vocab_size: int
    """Vocabulary."""
    seq_length: int
    """Tokens per sequence."""
    gated_mlp: bool = False
    """SwiGLU MLP (Llama) instead of GELU (GPT)."""


class Layer(nn.Module):
    """One pre-norm decoder layer: causal self-attention and an MLP, each with a residual."""

    def __init__(self, shape: GPTShape):
        super().__init__()
        h, f = shape.hidden_size, shape.ffn_hidden_size
        self.heads = shape.num_heads
        self.norm1 = nn.LayerNorm(h)
        self.qkv = nn.Linear(h, 3 * h)
        self.proj = nn.Linear(h, h)
        self.norm2 = nn.LayerNorm(h)
        self.gated = shape.gated_mlp
        self.up = nn.Linear(h, 2 * f if self.gated else f)
        self.down = nn.Linear(f, h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(h, dim=-1)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, s, h))
        u = self.up(self.norm2(x))
        if self.gated:
            a, g = u.chunk(2, dim=-1)
            u = F.silu(a) * g
        else:
            u = F.gelu(u)
        return x + self.down(u)


class Embedding(nn.Module):
    """Token (and learned position) embedding."""

    def __init__(self, shape: GPTShape, learned_positions: bool = True):
        super().__init__()
        self.tok = nn.Embedding(shape.vocab_size, shape.hidden_size)
        self.pos = (nn.Embedding(shape.seq_length, shape.hidden_size) if learned_positions
                    else None)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.tok(tokens)
        if self.pos is not None:
            x = x + self.pos(torch.arange(tokens.shape[1], device=tokens.device))
        return x


class Head(nn.Module):
    """Final norm, LM head and the summed cross-entropy (the caller divides)."""

    def __init__(self, shape: GPTShape):
        super().__init__()
        self.norm = nn.LayerNorm(shape.hidden_size)
        self.out = nn.Linear(shape.hidden_size, shape.vocab_size, bias=False)

    def forward(self, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = self.out(self.norm(x))
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")


def build_parts(shape: GPTShape, seed: int, dtype: torch.dtype) -> tuple[
        Embedding, list[Layer], Head]:
    """The whole model, initialised from `seed` in a fixed order, so every process builds the
    same weights and keeps the parts it runs."""
    torch.manual_seed(seed)
    emb = Embedding(shape).to(dtype)
    layers = [Layer(shape).to(dtype) for _ in range(shape.num_layers)]
    head = Head(shape).to(dtype)
    for m in (emb, *layers, head):
        for p in m.parameters():
            if p.dim() > 1:
                nn.init.normal_(p, std=1.0 / math.sqrt(p.shape[-1]))
    return emb, layers, head


def batch(shape: GPTShape, sequences: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Token inputs and next-token targets of `sequences` random sequences."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, shape.vocab_size, (sequences, shape.seq_length + 1), generator=g)
    return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
