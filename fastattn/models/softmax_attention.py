"""Softmax versions of the merged and separate models (Zhang et al. 2025, Fig. 5 and §7).

ŷ_q = Σ_i v_i Σ_m softmax_m(scale · x_mᵀ W_i x_q) y_m, the softmax running over the N context tokens
*and the query* (whose label slot is 0), as ATTN(X) = X + Σ_i W^V_i X smax(Xᵀ W^KQ_i X / ρ) reads with
zero blocks; W_i = U_i (merged) or K_iᵀ Q_i (separate). `scale` is the paper's 1/ρ (code: 1). There
is no closed-form population loss for these models.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fastattn import _validate as check
from fastattn import ops
from fastattn.models.base import ICLModel, register_model
from fastattn.models.linear_attention import MergedKQ, SeparateKQ, ZhangInitConfig


@dataclass(frozen=True)
class SoftmaxMergedConfig(ZhangInitConfig):
    """Softmax ATTN_M. scale: scores are scale · x_mᵀ W x_q (the paper's 1/ρ; code: 1)."""

    kind = "softmax_merged"
    scale: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check.positive_float("scale", self.scale)


@dataclass(frozen=True)
class SoftmaxSeparateConfig(ZhangInitConfig):
    """Softmax ATTN_S. rank: key/query rank 1 <= R <= D (positional after heads); scale as
    `SoftmaxMergedConfig`."""

    kind = "softmax_separate"
    rank: int = 1
    scale: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check.key_query_rank(self.rank, self.dim)
        check.positive_float("scale", self.scale)


def _attend(qvec: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, mask: torch.Tensor,
            scale: float) -> torch.Tensor:
    """Σ_m softmax_m(scale q_h·k_m) v_m: qvec `[B, H, D]`, keys `[B, M, D]`, values `[B, M]`,
    mask `[B, M]` (True = attend) → `[B, H]`."""
    scores = scale * torch.einsum("bhd,bmd->bhm", qvec, keys)                  # [B, H, M]
    scores = scores.masked_fill(~mask[:, None, :], float("-inf"))
    return torch.einsum("bhm,bm->bh", torch.softmax(scores, -1), values)


class _SoftmaxReadout(ICLModel):
    def query_weights(self) -> torch.Tensor:
        """W_h `[H, D, D]`: head h scores token m by x_mᵀ W_h x_q."""
        raise NotImplementedError

    def forward(self, x: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor,
                lengths: torch.Tensor | None = None, per_head: bool = False) -> torch.Tensor:
        """Prediction at the query from x `[B, N, D]`, y `[B, N]`, x_q `[B, D]` → `[B]` (or `[B, H]`)."""
        self.check_inputs(x=x, y=y, x_q=x_q, lengths=lengths)
        b, n = y.shape
        qvec = torch.einsum("hde,be->bhd", self.query_weights(), x_q)           # [B, H, D]
        keys = torch.cat([x, x_q[:, None]], 1)                                  # [B, N+1, D]
        values = torch.cat([y, y.new_zeros(b, 1)], 1)                           # [B, N+1]
        if lengths is None:
            attended = ops.single_query_attention(qvec, keys, values[..., None],
                                                  self.config.scale)[..., 0]    # [B, H]
        else:  # ragged contexts: the fused op has no mask, so mask the padding here
            idx = torch.arange(n + 1, device=x.device)
            mask = (idx[None] < lengths[:, None]) | (idx[None] == n)            # [B, N+1]
            attended = _attend(qvec, keys, values, mask, self.config.scale)
        out = self.v * attended                                                 # [B, H]
        return out if per_head else out.sum(-1)

    def predict_next_token(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Predictions at positions 2..T from the tokens before each and the position itself
        (label hidden), causally. x `[B, T, D]`, y `[B, T]` → `[B, T-1]`."""
        self.check_inputs(x=x, y=y)
        t = x.shape[1]
        w = self.query_weights()
        scores = self.config.scale * torch.einsum("bsd,hde,bte->bhts", x, w, x)   # [B, H, T, T]
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        p = torch.softmax(scores, -1)
        # the position's own label is hidden: only earlier tokens carry values
        values = y[:, None, None, :] * (~torch.eye(t, dtype=torch.bool, device=x.device))
        out = (p * values).sum(-1)                                                 # [B, H, T]
        return torch.einsum("h,bht->bt", self.v, out)[:, 1:]


@register_model
class SoftmaxMergedKQ(_SoftmaxReadout):
    """Softmax ATTN_M: parameters v `[H]`, U `[H, D, D]`, initialised as `MergedKQ` (the same draws)."""

    config_class = SoftmaxMergedConfig
    init_variances = MergedKQ.init_variances

    def query_weights(self) -> torch.Tensor:
        return self.U


@register_model
class SoftmaxSeparateKQ(_SoftmaxReadout):
    """Softmax ATTN_S: parameters v `[H]`, K, Q `[H, R, D]`, initialised as `SeparateKQ`."""

    config_class = SoftmaxSeparateConfig
    init_variances = SeparateKQ.init_variances

    def query_weights(self) -> torch.Tensor:
        return torch.einsum("hrd,hre->hde", self.K, self.Q)
