"""Multi-head linear attention for in-context regression (Zhang et al. 2025, §2.3–2.4).

Both models are evaluated in the fast β-form: with zero blocks, the query read-out of
ATTN(X) = X + Σ_i (1/N) W^V_i X Xᵀ W^KQ_i X is ŷ_q = βᵀ Γ x_q, β = (1/N) Σ_n y_n x_n, so a forward
pass costs O(B N D + B D²) however many heads there are. The literal formula lives in
`fastattn.models.reference` and the tests check the two agree.

Families (config → model, kind): `MergedConfig` → `MergedKQ` ("merged"), `MergedFullConfig` →
`MergedKQFull` ("merged_full", every block of Eq. 91), `SeparateConfig` → `SeparateKQ` ("separate").
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

import torch

from fastattn import _validate as check
from fastattn import ops
from fastattn.models.base import BaseModelConfig, ICLModel, register_model


def context_mean(values: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
    """(1/N) Σ_n over dim 1 of `values` `[B, N, ...]`, each sequence divided by its own length."""
    total = values.sum(1)
    if lengths is None:
        return total / values.shape[1]
    return total / lengths.to(values.dtype).reshape(-1, *([1] * (total.ndim - 1)))


def beta(x: torch.Tensor, y: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
    """β = (1/N) Σ_n y_n x_n `[B, D]` from x `[B, N, D]`, y `[B, N]` (padding rows must be zero)."""
    return context_mean(y[..., None] * x, lengths)


class _BilinearReadout(ICLModel):
    """A model whose prediction is ŷ_q = βᵀ Γ x_q; subclasses define the per-head Γ_h."""

    def head_gammas(self) -> torch.Tensor:
        """Γ_h `[H, D, D]`, so that head h contributes βᵀ Γ_h x_q."""
        raise NotImplementedError

    def gamma(self) -> torch.Tensor:
        """The effective matrix Γ = Σ_h Γ_h `[D, D]`: ŷ_q = βᵀ Γ x_q."""
        return self.head_gammas().sum(0)

    def forward(self, x: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor,
                lengths: torch.Tensor | None = None, per_head: bool = False) -> torch.Tensor:
        """Prediction at the query.

        Args:
            x: `[B, N, D]` context tokens. y: `[B, N]` labels. x_q: `[B, D]` query.
            lengths: `[B]` context lengths when padded (default: all N).
            per_head: return each head's contribution `[B, H]` instead of the sum `[B]`.
        """
        self.check_inputs(x=x, y=y, x_q=x_q, lengths=lengths)
        out = ops.icl_readout(x, y, x_q, self.head_gammas())                    # [B, H]
        if lengths is not None:
            # padding rows are zero, so the op's β = Σ/N_max; ŷ is linear in β
            out = out * (x.shape[1] / lengths.to(out.dtype))[:, None]
        return out if per_head else out.sum(-1)

    def forward_stats(self, b: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        """Prediction βᵀ Γ x_q `[B]` from precomputed statistics β `[B, D]`, x_q `[B, D]`
        (what `LinearRegression.sample_stats` draws without building the tokens)."""
        self.check_inputs(b=b, x_q=x_q)
        return torch.einsum("bd,de,be->b", b, self.gamma(), x_q)

    def predict_next_token(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Predictions at positions 2..T, each from the tokens before it (Eq. 23). `[B, T-1]`.

        Args: x `[B, T, D]`, y `[B, T]`: a fully labelled sequence.
        """
        self.check_inputs(x=x, y=y)
        return ops.icl_readout_next_token(x, y, self.head_gammas()).sum(-1)


INIT_SCHEMES = ("paper", "code")


@dataclass(frozen=True)
class ZhangInitConfig(BaseModelConfig):
    """The fields of Zhang et al.'s families beyond `BaseModelConfig`.

    Attributes:
        init_scheme: "paper" (App. C.2: layer norms O(w_init)) or "code" (the public code's
            per-entry N(0, w_init²); see docs/conventions.md).
    """

    _: KW_ONLY
    init_scheme: str = "paper"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.init_scheme not in INIT_SCHEMES:
            raise ValueError(f"init_scheme must be one of {INIT_SCHEMES}; got {self.init_scheme!r}")


@dataclass(frozen=True)
class MergedConfig(ZhangInitConfig):
    """ATTN_M with zero blocks (Eq. 6 (M)): fields of `ZhangInitConfig` only."""

    kind = "merged"


@dataclass(frozen=True)
class MergedFullConfig(ZhangInitConfig):
    """ATTN_M keeping every block of W^V and W^KQ (Eq. 91): fields of `ZhangInitConfig` only."""

    kind = "merged_full"


@dataclass(frozen=True)
class SeparateConfig(ZhangInitConfig):
    """ATTN_S (Eq. 12, 84). rank: key/query rank 1 <= R <= D (positional after heads)."""

    kind = "separate"
    rank: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        check.key_query_rank(self.rank, self.dim)


def merged_variances(c: ZhangInitConfig) -> tuple[float, float]:
    """(var v_i, var of each U_i entry): App. C.2 Eq. 34 ("paper") or N(0, w_init²) ("code")."""
    d, h, s2 = c.dim, c.heads, c.init_scale ** 2
    return (s2 / h, s2 / (h * d * d)) if c.init_scheme == "paper" else (s2, s2)


@register_model
class MergedKQ(_BilinearReadout):
    """ATTN_M: H heads with merged key-query matrices (Eq. 6 (M)); parameters v `[H]`, U `[H, D, D]`.

    Γ = Σ_i v_i U_i. `MergedKQ(MergedConfig(dim, heads, ...))` or `MergedKQ(dim, heads, ...)`.
    """

    config_class = MergedConfig

    @classmethod
    def init_variances(cls, config: BaseModelConfig) -> dict[str, float]:
        var_v, var_u = merged_variances(config)
        return {"v": var_v, "U": var_u}

    def head_gammas(self) -> torch.Tensor:
        return self.v[:, None, None] * self.U

    def full_weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(W^V `[H, D+1, D+1]`, W^KQ `[H, D+1, D+1]`) of the literal formula, zero-filled `*`
        blocks."""
        h, d = self.config.heads, self.config.dim
        wv = self.v.new_zeros(h, d + 1, d + 1)
        wkq = self.v.new_zeros(h, d + 1, d + 1)
        wv[:, d, d] = self.v
        wkq[:, :d, :d] = self.U
        return wv, wkq


@register_model
class MergedKQFull(_BilinearReadout):
    """ATTN_M keeping every block of W^V_i and W^KQ_i `[H, D+1, D+1]` (parameters `value`, `kq`):
    the general read-out of Eq. 91, needed when the zero blocks v⃗_i = W^V_i[D, :D] and
    u_i = W^KQ_i[D, :D] are not zero (e.g. in-weight learning). Initialised with those blocks zero,
    v_i = W^V_i[D, D] and U_i = W^KQ_i[:D, :D] distributed as in `MergedKQ`. No closed-form
    population loss.
    """

    config_class = MergedFullConfig

    def _init_parameters(self, g: torch.Generator) -> None:
        d, h = self.config.dim, self.config.heads
        var_v, var_u = merged_variances(self.config)
        layout = self.param_layout()
        value = self._normal(g, layout["value"], var_u)         # [H, D+1, D+1]
        kq = self._normal(g, layout["kq"], var_u)               # [H, D+1, D+1]
        with torch.no_grad():
            value[:, d, d] = self._normal(g, (h,), var_v)         # v_i
            value[:, d, :d] = 0                                   # v⃗_i: zero block
            kq[:, d, :d] = 0                                      # u_i: zero block
        self.value, self.kq = value, kq

    def head_gammas(self) -> torch.Tensor:
        d = self.config.dim
        v, U = self.value[:, d, d], self.kq[:, :d, :d]
        v_vec, u = self.value[:, d, :d], self.kq[:, d, :d]
        # Γ_eff of the spec §4.6: exact for the prediction only while v⃗ = u = 0.
        return v[:, None, None] * U + v_vec[:, :, None] * u[:, None, :]

    def forward(self, x: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor,
                lengths: torch.Tensor | None = None, per_head: bool = False) -> torch.Tensor:
        # Eq. 91: ŷ_q = Σ_i W^V_i[D, :] S W^KQ_i[:, :D] x_q, S = (1/N) X Xᵀ with the query column.
        self.check_inputs(x=x, y=y, x_q=x_q, lengths=lengths)
        z = torch.cat([x, y[..., None]], -1)                                     # [B, N, D+1]
        z_q = torch.cat([x_q, torch.zeros_like(x_q[:, :1])], -1)                 # [B, D+1]
        outer = z[..., :, None] * z[..., None, :]                                # [B, N, D+1, D+1]
        n = x.shape[1] if lengths is None else lengths.to(x.dtype)[:, None, None]
        s = outer.sum(1) / n + z_q[:, :, None] * z_q[:, None, :] / n            # [B, D+1, D+1]
        d = self.config.dim
        out = torch.einsum("hi,bij,hjk,bk->bh", self.value[:, d, :], s, self.kq[:, :, :d], x_q)
        return out if per_head else out.sum(-1)

    def forward_stats(self, b: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        raise ValueError("merged_full reads Λ̂ and Σ y_n², not only (β, x_q): train it with "
                         "sampler='tokens'")

    def predict_next_token(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        self.check_inputs(x=x, y=y)
        z = torch.cat([x, y[..., None]], -1)                                     # [B, T, D+1]
        zx = torch.cat([x, torch.zeros_like(y[..., None])], -1)                  # [B, T, D+1]
        outer = torch.cumsum(z[..., :, None] * z[..., None, :], 1)[:, :-1]      # [B, T-1, D+1, D+1]
        own = zx[:, 1:, :, None] * zx[:, 1:, None, :]                            # [B, T-1, D+1, D+1]
        n = torch.arange(1, x.shape[1], dtype=x.dtype, device=x.device)[None, :, None, None]
        d = self.config.dim
        return torch.einsum("hi,btij,hjk,btk->bt", self.value[:, d, :], (outer + own) / n,
                            self.kq[:, :, :d], x[:, 1:])

    def full_weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(W^V `[H, D+1, D+1]`, W^KQ `[H, D+1, D+1]`) of the literal formula."""
        return self.value, self.kq




@register_model
class SeparateKQ(_BilinearReadout):
    """ATTN_S: H heads with separate rank-R keys and queries (Eq. 12, 84).

    Parameters v `[H]`, K `[H, R, D]` (rows k_{i,r}), Q `[H, R, D]` (rows q_{i,r});
    Γ = Σ_i v_i K_iᵀ Q_i. `SeparateKQ(SeparateConfig(dim, heads, rank, ...))` or
    `SeparateKQ(dim=4, heads=5, rank=1, init_scale=1e-2, init_seed=0)`.
    """

    config_class = SeparateConfig

    @classmethod
    def init_variances(cls, config: BaseModelConfig) -> dict[str, float]:
        """App. C.2 Eq. 36 ("paper") or the Feb-May 2025 public code (spec §3.8, "code")."""
        d, h, r, s2 = config.dim, config.heads, config.rank, config.init_scale ** 2
        var_v, var_kq = (s2 / h, s2 / (h * r * d)) if config.init_scheme == "paper" else \
            (s2, s2 / (r * (d + 1)))
        return {"v": var_v, "K": var_kq, "Q": var_kq}

    def head_gammas(self) -> torch.Tensor:
        return self.v[:, None, None] * torch.einsum("hrd,hre->hde", self.K, self.Q)

    def full_weights(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(W^V `[H, D+1, D+1]`, W^K `[H, R, D+1]`, W^Q `[H, R, D+1]`) of the literal formula."""
        h, r, d = self.config.heads, self.config.rank, self.config.dim
        wv = self.v.new_zeros(h, d + 1, d + 1)
        wv[:, d, d] = self.v
        pad = self.v.new_zeros(h, r, 1)
        return wv, torch.cat([self.K, pad], -1), torch.cat([self.Q, pad], -1)
