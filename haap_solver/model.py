"""Transformer model description, presets (GPT-3, Llama-3), Hugging Face ``config.json`` loader."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from haap_solver import limits
from haap_solver._fields import Range, check_ranges, require, require_name, show
from haap_solver._parse import loads_json
from haap_solver.errors import InputError, did_you_mean, read_text


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """A decoder-only transformer, as far as the cost model needs it."""

    name: str = "custom"
    """Display name (a preset name, or free text)."""
    num_layers: Annotated[int, Range(1, limits.MAX_LAYERS)]
    """Number of decoder layers."""
    hidden_size: Annotated[int, Range(1, limits.MAX_HIDDEN_SIZE)]
    """Model width h."""
    ffn_hidden_size: Annotated[int, Range(1, limits.MAX_FFN_HIDDEN_SIZE)]
    """Width of the MLP's inner projection (4h for GPT-3; 3.5h for Llama-3 8B with SwiGLU)."""
    num_attention_heads: Annotated[int, Range(1, limits.MAX_HEADS)]
    """Query heads a."""
    num_kv_heads: Annotated[int | None, Range(1, limits.MAX_HEADS)] = None
    """Key/value heads for grouped-query attention; None means equal to the query heads (MHA)."""
    vocab_size: Annotated[int, Range(1, limits.MAX_VOCAB_SIZE)]
    """Vocabulary size V."""
    seq_length: Annotated[int, Range(1, limits.MAX_SEQ_LENGTH)]
    """Training sequence length s (tokens per sequence)."""
    gated_mlp: bool = False
    """True for SwiGLU/GeGLU MLPs (three weight matrices), false for a plain two-matrix MLP."""
    tied_embeddings: bool = True
    """Whether the LM head shares the input embedding matrix."""
    learned_position_embeddings: bool = False
    """True for GPT-style learned absolute positions (s*h extra parameters); false for RoPE."""
    uses_dropout: bool = False
    """Whether the layers apply dropout (stores 1-byte masks; GPT-3 yes, Llama-3 no)."""

    def __post_init__(self) -> None:
        require_name(self.name, "name")
        check_ranges(self)
        require(
            self.hidden_size % self.num_attention_heads == 0,
            "num_attention_heads",
            f"must divide hidden_size ({self.hidden_size}); got {self.num_attention_heads}",
        )
        if self.num_kv_heads is not None:
            require(
                self.num_attention_heads % self.num_kv_heads == 0,
                "num_kv_heads",
                f"must divide num_attention_heads ({self.num_attention_heads}); "
                f"got {self.num_kv_heads}",
            )

    # Derived sizes -------------------------------------------------------------------------
    @property
    def kv_heads(self) -> int:
        return self.num_kv_heads if self.num_kv_heads is not None else self.num_attention_heads

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def kv_size(self) -> int:
        """Width of the K (and of the V) projection: kv_heads * head_dim."""
        return self.kv_heads * self.head_dim

    @property
    def params_per_layer(self) -> int:
        """Weights and biases of one decoder layer (biases and norms included, GPT-style)."""
        h, f, kv = self.hidden_size, self.ffn_hidden_size, self.kv_size
        attention = h * (h + 2 * kv) + h * h  # QKV and output projection
        mlp = (3 if self.gated_mlp else 2) * h * f
        norms = 2 * h if self.gated_mlp else 4 * h  # RMSNorm (weight) vs LayerNorm (weight+bias)
        biases = 0 if self.gated_mlp else (h + 2 * kv) + h + f + h  # Llama has no biases
        return attention + mlp + norms + biases

    @property
    def embedding_params(self) -> int:
        """Input embedding (and learned positions)."""
        pos = self.seq_length * self.hidden_size if self.learned_position_embeddings else 0
        return self.vocab_size * self.hidden_size + pos

    @property
    def head_params(self) -> int:
        """Final norm plus the LM head's own matrix (zero when tied to the embedding)."""
        norm = self.hidden_size if self.gated_mlp else 2 * self.hidden_size
        return norm + (0 if self.tied_embeddings else self.vocab_size * self.hidden_size)

    @property
    def total_params(self) -> int:
        return self.num_layers * self.params_per_layer + self.embedding_params + self.head_params


def _gpt3(name: str, layers: int, hidden: int, heads: int) -> ModelSpec:
    return ModelSpec(
        name=name, num_layers=layers, hidden_size=hidden, ffn_hidden_size=4 * hidden,
        num_attention_heads=heads, vocab_size=50257, seq_length=2048, gated_mlp=False,
        tied_embeddings=True, learned_position_embeddings=True, uses_dropout=True,
    )


def _llama(name: str, layers: int, hidden: int, ffn: int, heads: int, tied: bool) -> ModelSpec:
    return ModelSpec(
        name=name, num_layers=layers, hidden_size=hidden, ffn_hidden_size=ffn,
        num_attention_heads=heads, num_kv_heads=8, vocab_size=128256, seq_length=8192,
        gated_mlp=True, tied_embeddings=tied, learned_position_embeddings=False, uses_dropout=False,
    )


# GPT-3: Brown et al. 2020, Table 2.1 (n_layers, d_model, n_heads; ffn = 4 d_model, context 2048,
# GPT-2 BPE vocabulary of 50257). Two entries of that table are not self-consistent and are
# corrected as Megatron-LM does: 1.3B uses 16 heads of 128 (the table's 24 x 128 != 2048), and
# 13B uses d_model 5120 = 40 x 128 (the table prints 5140).
# Llama-3: the released config.json files (Meta, 2024): Llama-3-8B / 3.1-8B / 3-70B / 3.1-405B
# and Llama-3.2-1B / 3B. Sequence length is the 8192-token pre-training context.
PRESETS: dict[str, ModelSpec] = {
    m.name: m
    for m in (
        _gpt3("gpt3-125m", 12, 768, 12),
        _gpt3("gpt3-350m", 24, 1024, 16),
        _gpt3("gpt3-760m", 24, 1536, 16),
        _gpt3("gpt3-1.3b", 24, 2048, 16),
        _gpt3("gpt3-2.7b", 32, 2560, 32),
        _gpt3("gpt3-6.7b", 32, 4096, 32),
        _gpt3("gpt3-13b", 40, 5120, 40),
        _gpt3("gpt3-175b", 96, 12288, 96),
        _llama("llama3.2-1b", 16, 2048, 8192, 32, tied=True),
        _llama("llama3.2-3b", 28, 3072, 8192, 24, tied=True),
        _llama("llama3-8b", 32, 4096, 14336, 32, tied=False),
        _llama("llama3.1-8b", 32, 4096, 14336, 32, tied=False),
        _llama("llama3-70b", 80, 8192, 28672, 64, tied=False),
        _llama("llama3.1-70b", 80, 8192, 28672, 64, tied=False),
        _llama("llama3.1-405b", 126, 16384, 53248, 128, tied=False),
    )
}


def model_preset(name: str, *, field: str = "model.preset") -> ModelSpec:
    """Look up a preset by name (case-insensitive)."""
    key = name.lower()
    if key not in PRESETS:
        raise InputError(
            f"unknown model preset {name!r}{did_you_mean(key, PRESETS)}; "
            "known presets: " + ", ".join(PRESETS),
            field=field,
        )
    return PRESETS[key]


# Hugging Face config.json ---------------------------------------------------------------------
_GATED_ACTS = ("silu", "swiglu", "swish", "gelu_glu", "geglu")
# Our field -> the config.json key it is read from.
_LLAMA_KEYS = {"num_layers": "num_hidden_layers", "ffn_hidden_size": "intermediate_size",
               "num_kv_heads": "num_key_value_heads", "seq_length": "max_position_embeddings"}
_GPT2_KEYS = {"num_layers": "n_layer", "hidden_size": "n_embd", "ffn_hidden_size": "n_inner",
              "num_attention_heads": "n_head", "seq_length": "n_positions"}


def _read_hf_json(path: Path) -> dict[str, Any]:
    source = str(path)
    text = read_text(path, "a Hugging Face config.json file")
    if not text.strip():
        raise InputError("file is empty (expected a JSON object)", source=source)
    raw = loads_json(text, source)
    if not isinstance(raw, dict):
        raise InputError("expected a JSON object at the top level", source=source)
    return raw


def model_from_hf_config(path: str | Path, *, seq_length: int | None = None) -> ModelSpec:
    """Read a Hugging Face ``config.json`` (Llama or GPT-2 keys), without network or transformers.

    `seq_length` overrides the context length read from the file (``max_position_embeddings`` or
    ``n_positions``), which for long-context models is far above the training sequence length.
    Errors name the file and the config.json key.
    """
    path = Path(path)
    source = str(path)
    raw = _read_hf_json(path)
    gpt2_style = "n_embd" in raw or "n_layer" in raw

    def positive_int(key: str, *, needed_for: str, default: int | None = None) -> int:
        if raw.get(key) is None:
            if default is not None:
                return default
            raise InputError(f"required key is missing (needed for {needed_for})", field=key,
                             source=source)
        value = raw[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"expected a positive integer, got {show(value)}", field=key,
                             source=source)
        return value

    def boolean(key: str, default: bool) -> bool:
        value = raw.get(key, default)
        if not isinstance(value, bool):
            raise InputError(f"expected true or false, got {show(value)}", field=key, source=source)
        return value

    def probability(key: str, default: float) -> float:
        value = raw.get(key, default)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise InputError(f"expected a probability from 0 to 1, got {show(value)}", field=key,
                             source=source)
        return float(value)

    name = raw.get("_name_or_path")
    if not isinstance(name, str) or not name:
        name = path.parent.name if path.stem == "config" and path.parent.name else path.stem
    try:
        if gpt2_style:
            hidden = positive_int("n_embd", needed_for="hidden_size")
            seq = seq_length or positive_int(
                "n_positions", needed_for="seq_length",
                default=positive_int("n_ctx", needed_for="seq_length", default=1024))
            return ModelSpec(
                name=name, num_layers=positive_int("n_layer", needed_for="num_layers"),
                hidden_size=hidden,
                ffn_hidden_size=positive_int("n_inner", needed_for="ffn_hidden_size",
                                             default=4 * hidden),
                num_attention_heads=positive_int("n_head", needed_for="num_attention_heads"),
                vocab_size=positive_int("vocab_size", needed_for="vocab_size"),
                seq_length=seq, gated_mlp=False,
                tied_embeddings=boolean("tie_word_embeddings", True),
                learned_position_embeddings=True,
                uses_dropout=probability("resid_pdrop", 0.1) > 0,
            )
        act = raw.get("hidden_act", "silu")
        if not isinstance(act, str):
            raise InputError(f"expected a string, got {show(act)}", field="hidden_act")
        heads = positive_int("num_attention_heads", needed_for="num_attention_heads")
        seq = seq_length or positive_int("max_position_embeddings", needed_for="seq_length",
                                         default=4096)
        return ModelSpec(
            name=name, num_layers=positive_int("num_hidden_layers", needed_for="num_layers"),
            hidden_size=positive_int("hidden_size", needed_for="hidden_size"),
            ffn_hidden_size=positive_int("intermediate_size", needed_for="ffn_hidden_size"),
            num_attention_heads=heads,
            num_kv_heads=(positive_int("num_key_value_heads", needed_for="num_kv_heads")
                          if raw.get("num_key_value_heads") is not None else None),
            vocab_size=positive_int("vocab_size", needed_for="vocab_size"),
            seq_length=seq, gated_mlp=act.lower() in _GATED_ACTS,
            tied_embeddings=boolean("tie_word_embeddings", False),
            learned_position_embeddings=False,
            uses_dropout=probability("attention_dropout", 0.0) > 0,
        )
    except InputError as exc:
        # Rules checked by ModelSpec name our fields; point at the config.json key instead.
        keys = _GPT2_KEYS if gpt2_style else _LLAMA_KEYS
        if exc.field in keys:
            exc = InputError(exc.message, field=keys[exc.field], source=exc.source)
        raise exc.within(source=source) from None
