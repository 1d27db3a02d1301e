"""Two-layer linear network on the cubic feature z = vec(β x_qᵀ) (Zhang et al. 2025, Eq. 7).

ŷ_q = w2ᵀ W1 z. With z flattened row-major (docs/conventions.md), W1[h].reshape(D, D) is the merged
model's U_h and w2 its v: the two models compute the same function of the same flat parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fastattn import ops
from fastattn.models.base import BaseModelConfig, register_model
from fastattn.models.linear_attention import ZhangInitConfig, _BilinearReadout, beta, merged_variances


def cubic_feature(b: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
    """z = (β x_qᵀ).flatten(), z[i·D + j] = β_i x_q,j. `[B, D²]` from β `[B, D]`, x_q `[B, D]`."""
    return (b[:, :, None] * x_q[:, None, :]).flatten(1)


@dataclass(frozen=True)
class CubicMLPConfig(ZhangInitConfig):
    """The two-layer linear MLP on z (Eq. 7): `heads` is its hidden width H."""

    kind = "cubic_mlp"


@register_model
class CubicMLP(_BilinearReadout):
    """ŷ_q = w2ᵀ W1 z with w2 `[H]`, W1 `[H, D²]`; initialised like ATTN_M (App. C.2, Eq. 34).

    `CubicMLP(CubicMLPConfig(dim, hidden, ...))` or `CubicMLP(dim, hidden, ...)`.
    """

    config_class = CubicMLPConfig

    @classmethod
    def init_variances(cls, config: BaseModelConfig) -> dict[str, float]:
        var_2, var_1 = merged_variances(config)
        return {"w2": var_2, "W1": var_1}

    def head_gammas(self) -> torch.Tensor:
        d = self.config.dim
        return self.w2[:, None, None] * self.W1.reshape(-1, d, d)

    def forward_stats(self, b: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        self.check_inputs(b=b, x_q=x_q)
        return ops.cubic_hidden(b, x_q, self.W1) @ self.w2

    def forward(self, x: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor,
                lengths: torch.Tensor | None = None, per_head: bool = False) -> torch.Tensor:
        self.check_inputs(x=x, y=y, x_q=x_q, lengths=lengths)
        hidden = ops.cubic_hidden(beta(x, y, lengths), x_q, self.W1)    # [B, H], z never built
        out = hidden * self.w2                                          # [B, H]
        return out if per_head else out.sum(-1)
