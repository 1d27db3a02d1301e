"""The standard two-layer attention-only transformer of Musat et al. 2025 §4 (Eq. 17–19; spec
§9.1), a configuration of the library's decoder-only `Transformer` (fastattn.models.transformer):

    H0 = T X_T + P X_P,   S_l = (W_K^l H)ᵀ (W_Q^l H),   H_l = H_{l−1} + W_O^l W_V^l H_{l−1} σ(S_l),
    logits = W_o H_2 at the query (last) position,

two layers of one head each (D_H = D), additive residuals, causal attention (key ≤ query), no
MLP, no layer norm, no biases, no weight tying, learned absolute positions. What this module adds
to `Transformer`: positions are an input (the task places each sequence at a random offset in the
block, App. E), only the query position is read out, and the weights convert to and from the
paper's matrices (`circuit_weights`, `load_circuit`) for `fastattn.analysis.induction_circuit`.

Decisions on spec §12.9: no 1/√D_H score scaling by default (Eq. 19; `attn_scale=True` adds it);
every weight matrix ~ N(0, 1/fan_in) (embedding rows of norm ≈ 1) unless `init_std` is given;
float32.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np
import torch
from torch import nn

from fastattn.models.base import register_family
from fastattn.models.transformer import Transformer, TransformerConfig


class CircuitWeights(NamedTuple):
    """The paper's matrices (column convention): T `[D, N_T]`, P `[D, N_P]`, WQ1, WK1, WV1, WQ2,
    WK2, WV2 `[D_H, D]`, WO1, WO2 `[D, D_H]`, Wo `[N_T, D]`."""

    T: torch.Tensor
    P: torch.Tensor
    WQ1: torch.Tensor
    WK1: torch.Tensor
    WV1: torch.Tensor
    WO1: torch.Tensor
    WQ2: torch.Tensor
    WK2: torch.Tensor
    WV2: torch.Tensor
    WO2: torch.Tensor
    Wo: torch.Tensor


@dataclass(frozen=True)
class StandardConfig:
    """vocab: N_T; block: N_P (positions); d_model: D = D_H; attn_scale: divide scores by √D;
    init_std: std of every weight (None: 1/√fan_in); init_seed; dtype.

    Defaults: App. E's small configuration but for D (2048 there: `StandardConfig(d_model=2048)`);
    the large one is `StandardConfig(64, 64, 4096)`.
    """

    kind: ClassVar[str] = "standard_transformer"
    vocab: int = 32
    block: int = 32
    d_model: int = 64
    attn_scale: bool = False
    init_std: float | None = None
    init_seed: int = 0
    dtype: str = "float32"

    def __post_init__(self) -> None:
        self.transformer_config()            # checks every field

    @property
    def dim(self) -> int:
        """The one-hot input dimension N_T (the trainers match it with the task's `dim`)."""
        return self.vocab

    @property
    def torch_dtype(self) -> torch.dtype:
        return getattr(torch, self.dtype)

    def transformer_config(self) -> TransformerConfig:
        return TransformerConfig(vocab=self.vocab, n_ctx=self.block, d_model=self.d_model, n_layers=2,
                                 n_heads=1, d_mlp=0, causal=True, pos_embed="learned", layer_norm=False,
                                 attn_scale=self.attn_scale, init_std=self.init_std,
                                 init_seed=self.init_seed, dtype=self.dtype)


class StandardTransformer(nn.Module):
    """forward(tokens `[B, L]`, positions `[B, L]`) → the last position's logits `[B, N_T]`.

    `StandardTransformer(StandardConfig(...))` or `StandardTransformer(vocab=32, d_model=64)`.
    """

    def __init__(self, config: StandardConfig | None = None, **fields) -> None:
        super().__init__()
        if (config is None) == (not fields):
            raise TypeError("StandardTransformer takes a StandardConfig or its fields as keywords")
        self.config = config if config is not None else StandardConfig(**fields)
        self.net = Transformer(self.config.transformer_config())

    @property
    def kind(self) -> str:
        return self.config.kind

    def forward(self, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        cfg = self.config
        if tokens.ndim != 2 or positions.shape != tokens.shape:
            raise ValueError(f"tokens and positions must both be [B, L]; got {list(tokens.shape)} and "
                             f"{list(positions.shape)}")
        if int(positions.max()) >= cfg.block or int(positions.min()) < 0:
            raise ValueError(f"positions must lie in 0..block-1 = 0..{cfg.block - 1}; got "
                             f"{int(positions.min())}..{int(positions.max())}")
        net = self.net
        x = net.embed.W_E[tokens] + net.pos_embed.W_pos[positions]          # [B, L, D]: H0ᵀ
        x = net.blocks[0](x)
        x = net.blocks[1](x, last_only=True)                                 # [B, 1, D]
        return (x @ net.unembed.W_U)[:, 0]

    # ------------------------------------------------------------------ the paper's matrices
    def _heads(self):
        return [b.attn for b in self.net.blocks]

    def _score_scale(self) -> float:
        return 1 / math.sqrt(self.config.d_model) if self.config.attn_scale else 1.0

    def circuit_weights(self) -> CircuitWeights:
        """The weights as the paper's matrices (column convention, Eq. 17–19; shapes in
        `CircuitWeights`), the score scale folded into W_Q so that S = (W_K H)ᵀ (W_Q H)."""
        net, (a1, a2), s = self.net, self._heads(), self._score_scale()
        return CircuitWeights(
            net.embed.W_E.detach().T, net.pos_embed.W_pos.detach().T,
            s * a1.W_Q.detach()[0].T, a1.W_K.detach()[0].T, a1.W_V.detach()[0].T, a1.W_O.detach()[0].T,
            s * a2.W_Q.detach()[0].T, a2.W_K.detach()[0].T, a2.W_V.detach()[0].T, a2.W_O.detach()[0].T,
            net.unembed.W_U.detach().T)

    def load_circuit(self, w: CircuitWeights) -> StandardTransformer:
        """Set the weights from the paper's matrices (the inverse of `circuit_weights`); returns self."""
        net, (a1, a2), s = self.net, self._heads(), self._score_scale()
        targets = [(net.embed.W_E, w.T.T), (net.pos_embed.W_pos, w.P.T),
                   (a1.W_Q, w.WQ1.T[None] / s), (a1.W_K, w.WK1.T[None]), (a1.W_V, w.WV1.T[None]),
                   (a1.W_O, w.WO1.T[None]),
                   (a2.W_Q, w.WQ2.T[None] / s), (a2.W_K, w.WK2.T[None]), (a2.W_V, w.WV2.T[None]),
                   (a2.W_O, w.WO2.T[None]), (net.unembed.W_U, w.Wo.T)]
        with torch.no_grad():
            for p, value in targets:
                value = torch.as_tensor(value)
                if value.shape != p.shape:
                    raise ValueError(f"circuit weights of shape {list(value.shape)} do not fit a "
                                     f"parameter of shape {list(p.shape)} ({self.config})")
                p.copy_(value)
        return self

    # ------------------------------------------------ the flat float64 layout the trainers record
    def to_flat(self) -> np.ndarray:
        """Every parameter, in `named_parameters` order, as one float64 vector `[P]`."""
        return self.net.to_flat()

    def load_flat(self, flat: np.ndarray) -> StandardTransformer:
        """Set the parameters from `to_flat`'s vector; returns self."""
        self.net.load_flat(flat)
        return self

    def flat_size(self) -> int:
        return self.net.flat_size()


register_family(StandardConfig.kind, StandardTransformer, StandardConfig)
