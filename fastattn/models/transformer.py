"""A small decoder-only transformer on token sequences (nanoGPT-style, one file), for the
applications that train real transformers: the grokking model of Nanda et al. 2023 and the
attention-only models of Mainali & Teixeira 2025 §4 (spec §9.8), the standard two-layer
attention-only transformer of Musat et al. 2025 (their spec §9).

Weights are stored in TransformerLens' row-vector layout and names, so that the per-head QK and OV
matrices (`fastattn.analysis.heads`) read the same from this model and from a `HookedTransformer`:

    embed.W_E [V, d]      pos_embed.W_pos [n_ctx, d]      unembed.W_U [d, V_out]
    blocks.{l}.attn.W_Q, W_K, W_V [H, d, d_head]      blocks.{l}.attn.W_O [H, d_head, d]
    blocks.{l}.mlp.W_in [d, d_mlp], b_in [d_mlp], W_out [d_mlp, d], b_out [d]
    blocks.{l}.ln1.w, ln1.b, ln2.w, ln2.b, ln_final.w, ln_final.b [d]

A residual-stream vector is a row x [d]; head h writes softmax(x W_Q (X W_K)ᵀ / √d_head) X W_V W_O,
so QK = W_Q W_Kᵀ and OV = W_V W_O, both [d, d] of rank ≤ d_head. Attention has no biases; the MLP
(ReLU) has. Layer norm is pre-norm (and a final norm before the unembedding) when enabled.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from fastattn import _validate as check
from fastattn.models.base import layer_norm, register_family

POS_EMBEDS = ("learned", "none")
DTYPES = ("float32", "float64")


@dataclass(frozen=True)
class TransformerConfig:
    """Architecture and initialisation of a `Transformer`.

    Attributes:
        vocab: input vocabulary size V. vocab_out: output classes (default V).
        n_ctx: maximum sequence length (rows of the learned positional embedding).
        d_model: residual width d. n_layers: number of blocks. n_heads: heads per block H.
        d_head: width of a head (default d_model // n_heads).
        d_mlp: hidden width of each block's MLP; 0: attention-only.
        causal: mask attention to earlier positions (and the position itself).
        pos_embed: "learned" (absolute, added to the token embedding) or "none".
        layer_norm: pre-norm LayerNorm in every block and before the unembedding.
        attn_scale: divide the attention scores by √d_head (False: raw scores, as in Musat et
            al.'s Eq. 19).
        init_std: every weight matrix ~ N(0, init_std²) (None: 1/√fan_in, each matrix's input
            width); biases and layer-norm shifts 0, layer-norm gains 1.
        init_seed: seed of the initialisation. dtype: "float32" or "float64".

    Registered in `MODELS` as "transformer"; it pairs with the token tasks (`fastattn.tasks.tokens`),
    whose card gives vocab, vocab_out and n_ctx from the task.
    """

    kind: ClassVar[str] = "transformer"
    vocab: int
    n_ctx: int
    d_model: int = 128
    n_layers: int = 1
    n_heads: int = 4
    d_head: int | None = None
    d_mlp: int = 0
    vocab_out: int | None = None
    causal: bool = True
    pos_embed: str = "learned"
    layer_norm: bool = False
    attn_scale: bool = True
    init_std: float | None = None
    init_seed: int = 0
    dtype: str = "float32"

    def __post_init__(self) -> None:
        for name in ("vocab", "n_ctx", "d_model", "n_layers", "n_heads"):
            check.positive_int(name, getattr(self, name))
        if self.d_head is None:
            if self.d_model % self.n_heads:
                raise ValueError(f"d_model={self.d_model} is not divisible by n_heads="
                                 f"{self.n_heads}; give d_head explicitly")
            object.__setattr__(self, "d_head", self.d_model // self.n_heads)
        check.positive_int("d_head", self.d_head)
        if self.vocab_out is None:
            object.__setattr__(self, "vocab_out", self.vocab)
        check.positive_int("vocab_out", self.vocab_out)
        if self.d_mlp < 0:
            raise ValueError(f"d_mlp must be >= 0 (0: attention-only); got {self.d_mlp}")
        if self.pos_embed not in POS_EMBEDS:
            raise ValueError(f"pos_embed must be one of {POS_EMBEDS}; got {self.pos_embed!r}")
        if self.init_std is not None:
            check.positive_float("init_std", self.init_std)
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}; got {self.dtype!r}")

    @property
    def attention_only(self) -> bool:
        return self.d_mlp == 0

    @property
    def dim(self) -> int:
        """The input vocabulary (the trainers match it with the task's `dim`)."""
        return self.vocab

    @property
    def torch_dtype(self) -> torch.dtype:
        return getattr(torch, self.dtype)


class LayerNorm(nn.Module):
    """LayerNorm with TransformerLens' parameter names (w, b), composing with torch.func
    (`fastattn.models.base.layer_norm`)."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.ones(d))
        self.b = nn.Parameter(torch.zeros(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return layer_norm(x, self.w, self.b)


class Attention(nn.Module):
    """Multi-head attention in the row-vector layout: W_Q, W_K, W_V [H, d, d_head], W_O [H, d_head, d]."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        h, d, dh = cfg.n_heads, cfg.d_model, cfg.d_head
        self.W_Q = nn.Parameter(torch.empty(h, d, dh))
        self.W_K = nn.Parameter(torch.empty(h, d, dh))
        self.W_V = nn.Parameter(torch.empty(h, d, dh))
        self.W_O = nn.Parameter(torch.empty(h, dh, d))
        self.causal, self.scale = cfg.causal, (1 / math.sqrt(dh) if cfg.attn_scale else 1.0)

    def forward(self, x: torch.Tensor, last_only: bool = False) -> torch.Tensor:
        """x `[B, T, d]` → `[B, T, d]` (`[B, 1, d]`: only the last position's query, `last_only`)."""
        xq = x[:, -1:] if last_only else x
        q = torch.einsum("btd,hde->bhte", xq, self.W_Q)          # [B, H, Tq, dh]
        k = torch.einsum("btd,hde->bhte", x, self.W_K)           # [B, H, T, dh]
        v = torch.einsum("btd,hde->bhte", x, self.W_V)           # [B, H, T, dh]
        scores = q @ k.transpose(-1, -2) * self.scale             # [B, H, Tq, T]
        if self.causal and not last_only:                        # the last query sees every key
            t = x.shape[1]
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
            scores = scores.masked_fill(~mask, float("-inf"))
        z = scores.softmax(-1) @ v                                # [B, H, Tq, dh]
        return torch.einsum("bhte,hed->btd", z, self.W_O)


class MLP(nn.Module):
    """ReLU MLP: x W_in + b_in → ReLU → · W_out + b_out."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.W_in = nn.Parameter(torch.empty(cfg.d_model, cfg.d_mlp))
        self.b_in = nn.Parameter(torch.zeros(cfg.d_mlp))
        self.W_out = nn.Parameter(torch.empty(cfg.d_mlp, cfg.d_model))
        self.b_out = nn.Parameter(torch.zeros(cfg.d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ self.W_in + self.b_in) @ self.W_out + self.b_out


class Block(nn.Module):
    """x + attn(ln1(x)), then + mlp(ln2(·)) unless attention-only (ln: identity without layer norm)."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.attn = Attention(cfg)
        self.mlp = None if cfg.attention_only else MLP(cfg)
        self.ln1 = LayerNorm(cfg.d_model) if cfg.layer_norm else nn.Identity()
        self.ln2 = LayerNorm(cfg.d_model) if cfg.layer_norm and self.mlp is not None else nn.Identity()

    def forward(self, x: torch.Tensor, last_only: bool = False) -> torch.Tensor:
        x = (x[:, -1:] if last_only else x) + self.attn(self.ln1(x), last_only)
        return x if self.mlp is None else x + self.mlp(self.ln2(x))


class Embed(nn.Module):
    def __init__(self, vocab: int, d: int) -> None:
        super().__init__()
        self.W_E = nn.Parameter(torch.empty(vocab, d))


class PosEmbed(nn.Module):
    def __init__(self, n_ctx: int, d: int) -> None:
        super().__init__()
        self.W_pos = nn.Parameter(torch.empty(n_ctx, d))


class Unembed(nn.Module):
    def __init__(self, d: int, vocab_out: int) -> None:
        super().__init__()
        self.W_U = nn.Parameter(torch.empty(d, vocab_out))


class Transformer(nn.Module):
    """Decoder-only transformer: tokens `[B, T]` (ints < vocab, T ≤ n_ctx) → logits `[B, T, V_out]`.

    `Transformer(TransformerConfig(vocab=114, n_ctx=3, d_model=128, n_heads=4, d_mlp=512))`, or the
    config's fields as keywords: `Transformer(vocab=32, n_ctx=32, n_layers=2, d_model=64)`.
    """

    def __init__(self, config: TransformerConfig | None = None, **fields) -> None:
        super().__init__()
        if (config is None) == (not fields):
            raise TypeError("Transformer takes a TransformerConfig or its fields as keywords")
        self.config = cfg = config if config is not None else TransformerConfig(**fields)
        self.embed = Embed(cfg.vocab, cfg.d_model)
        self.pos_embed = PosEmbed(cfg.n_ctx, cfg.d_model) if cfg.pos_embed == "learned" else None
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_final = LayerNorm(cfg.d_model) if cfg.layer_norm else nn.Identity()
        self.unembed = Unembed(cfg.d_model, cfg.vocab_out)
        self._init(torch.Generator().manual_seed(cfg.init_seed))
        self.to(getattr(torch, cfg.dtype))

    def _init(self, g: torch.Generator) -> None:
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith(("ln1.w", "ln2.w", "ln_final.w")):
                    continue                                           # gains stay 1
                if name.rsplit(".", 1)[-1].startswith("b"):
                    p.zero_()
                    continue
                fan_in = p.shape[-2] if p.ndim > 1 else p.shape[-1]
                if name.endswith(("W_E", "W_pos")):
                    fan_in = p.shape[-1]                               # a lookup table: rows of norm ≈ 1
                std = self.config.init_std or 1 / math.sqrt(fan_in)
                p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) * std)

    def forward(self, tokens: torch.Tensor, last_only: bool = False,
                positions: torch.Tensor | None = None) -> torch.Tensor:
        """tokens `[B, T]` → logits `[B, T, V_out]`; `last_only`: the last position's logits `[B, 1,
        V_out]`, computing the final block's queries, MLP and the unembedding there only (the cheap
        path when only the last token is read out). `positions` `[B, T]` or `[T]`: the rows of
        W_pos to add (default 0..T−1), e.g. a sequence placed at a random offset in the block."""
        cfg = self.config
        if tokens.ndim != 2 or tokens.shape[1] > cfg.n_ctx:
            raise ValueError(f"tokens must be [B, T] with T <= n_ctx={cfg.n_ctx}; got shape "
                             f"{list(tokens.shape)}")
        x = self.embed.W_E[tokens]                                     # [B, T, d]
        if self.pos_embed is not None and positions is None:
            x = x + self.pos_embed.W_pos[: tokens.shape[1]]
        elif self.pos_embed is not None:
            if positions.shape[-1] != tokens.shape[1] or int(positions.max()) >= cfg.n_ctx:
                raise ValueError(f"positions must be [B, T] or [T] with T={tokens.shape[1]} and "
                                 f"entries < n_ctx={cfg.n_ctx}; got shape {list(positions.shape)}, "
                                 f"max {int(positions.max())}")
            x = x + self.pos_embed.W_pos[positions]
        for i, block in enumerate(self.blocks):
            x = block(x, last_only and i == len(self.blocks) - 1)
        return self.ln_final(x) @ self.unembed.W_U

    @property
    def kind(self) -> str:
        return self.config.kind

    # ------------------------------------------------ the flat float64 layout the trainers record
    def to_flat(self) -> np.ndarray:
        """Every parameter, in `named_parameters` order, as one float64 vector `[P]`."""
        return torch.nn.utils.parameters_to_vector(self.parameters()).detach().double().cpu().numpy()

    def load_flat(self, flat: np.ndarray) -> Transformer:
        """Set the parameters from `to_flat`'s vector; returns self."""
        flat = np.asarray(flat, dtype=np.float64)
        check.finite_vector("flat", flat, self.flat_size())
        vec = torch.from_numpy(flat).to(self.config.torch_dtype)
        with torch.no_grad():
            torch.nn.utils.vector_to_parameters(vec, self.parameters())
        return self

    def flat_size(self) -> int:
        return sum(p.numel() for p in self.parameters())


register_family(TransformerConfig.kind, Transformer, TransformerConfig)


def _weights(model: torch.nn.Module | Mapping[str, Any], name: str) -> np.ndarray:
    """The stacked `blocks.{l}.attn.<name>` of every layer, float64 `[L, H, ...]`."""
    state = model.state_dict() if isinstance(model, torch.nn.Module) else model
    out, layer = [], 0
    while f"blocks.{layer}.attn.{name}" in state:
        out.append(torch.as_tensor(state[f"blocks.{layer}.attn.{name}"]).detach().cpu().double().numpy())
        layer += 1
    if not out:
        raise ValueError(f"no parameter 'blocks.0.attn.{name}' found: extract_qk / extract_ov need "
                         "TransformerLens' names and layout (W_Q, W_K, W_V [H, d, d_head], W_O "
                         "[H, d_head, d]), as fastattn.models.Transformer has")
    return np.stack(out)


def qk_factors(model: torch.nn.Module | Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(W_Q, W_K), each `[L, H, d, d_head]`: QK = W_Q W_Kᵀ."""
    return _weights(model, "W_Q"), _weights(model, "W_K")


def ov_factors(model: torch.nn.Module | Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(W_V, W_Oᵀ), each `[L, H, d, d_head]`: OV = W_V (W_Oᵀ)ᵀ."""
    return _weights(model, "W_V"), np.swapaxes(_weights(model, "W_O"), -1, -2)
