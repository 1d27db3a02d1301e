"""Multi-head softmax attention on in-context regression (He, Pan, Chen & Yang 2025), its linear
counterpart, and the reduced sum-of-kernel-regressors model.

Layout (spec §1.1–1.3): token z_ℓ = [x_ℓ; y_ℓ] ∈ R^{D}, D = d+1, query z_q = [x_q; 0]. The query
attends to the L context tokens only (not to itself). Per head h, with factors W_Q^h, W_K^h, W_V^h
`[D, D]` and W_O^h `[1, D]` (the blocks of the authors' nn.Linear(D, H·D) and nn.Linear(H·D, 1)):

    KQ^(h) = W_K^hᵀ W_Q^h / √D        OV^(h) = W_O^h W_V^h  (the row of OV that reaches ŷ)
    ŷ_q = Σ_h OV^(h) Σ_ℓ smax_ℓ(z_ℓᵀ KQ^(h) z_q) z_ℓ

The forward runs through `fastattn.ops.single_query_attention` (Triton on CUDA, reference on CPU)
with the tokens as both keys and values; the literal formula on the (d+1)×(L+1) matrix is
`fastattn.models.reference.multihead_softmax_attention`, and the tests check the two agree.

Families (config → model, kind): `MultiHeadSoftmaxConfig` → `MultiHeadSoftmax`
("multihead_softmax"), `MultiHeadLinearConfig` → `MultiHeadLinear` ("multihead_linear", §1.8),
`KernelRegressorsConfig` → `KernelRegressors` ("kernel_regressors", §1.5),
`MultiOutputSoftmaxConfig` → `MultiOutputSoftmax` ("multioutput_softmax", §1.9, N outputs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from fastattn import _validate as check
from fastattn import ops
from fastattn.models.base import BaseModelConfig, ICLModel, register_model

INITS = ("torch", "small_id", "small_id_qk", "oppo_small_id")
ACTIVATIONS = ("exp", "linear", "square", "tanh")
OMEGA_FORMS = ("scalar", "diagonal", "full")


def normalized_activation(scores: torch.Tensor, activation: str, c: float) -> torch.Tensor:
    """σ_f(ν)_i = f(ν_i) / Σ_j f(ν_j) over the last dim (spec §1.7): f = exp (softmax),
    1 + c·x ("linear"), (1 + c·x)² ("square") or 1 + tanh x ("tanh"). A zero denominator (possible
    for "linear") gives inf/NaN, which the trainers report as a divergence."""
    if activation == "exp":
        return torch.softmax(scores, -1)
    if activation == "linear":
        f = 1 + c * scores
    elif activation == "square":
        f = (1 + c * scores) ** 2
    else:
        f = 1 + torch.tanh(scores)
    return f / f.sum(-1, keepdim=True)


def _context_mask(lengths: torch.Tensor | None, n: int) -> torch.Tensor | None:
    """`[B, n]` True on real context rows, or None when every sequence has all n."""
    if lengths is None or bool((lengths == n).all()):
        return None
    return torch.arange(n, device=lengths.device)[None] < lengths[:, None]


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
            activation: str, c: float) -> torch.Tensor:
    """Σ_ℓ σ_f(q_h·k_ℓ)_ℓ v_ℓ: q `[B, H, K]`, k `[B, L, K]`, v `[B, L, V]` → `[B, H, V]`.

    Softmax over full contexts goes through the single-query op; padded contexts and the other
    activations through the same formula in torch."""
    if activation == "exp" and mask is None:
        return ops.single_query_attention(q, k, v, 1.0)
    scores = torch.einsum("bhk,blk->bhl", q, k)
    if mask is not None:
        scores = scores.masked_fill(~mask[:, None], float("-inf") if activation == "exp" else 0.0)
    p = normalized_activation(scores, activation, c)
    if mask is not None and activation != "exp":
        p = p * mask[:, None]
        p = p / p.sum(-1, keepdim=True)
    return torch.einsum("bhl,blv->bhv", p, v)


def tokens(x: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(Z `[B, L, D]` with rows z_ℓ = [x_ℓ, y_ℓ], z_q `[B, D]` = [x_q, 0]) from x `[B, L, d]`,
    y `[B, L]`, x_q `[B, d]`."""
    return torch.cat([x, y[..., None]], -1), torch.cat([x_q, torch.zeros_like(x_q[:, :1])], -1)


# ------------------------------------------------------------------------------- full models
def _check_init(init_mode: str, heads: int) -> None:
    if init_mode not in INITS:
        raise ValueError(f"init_mode must be one of {INITS}; got {init_mode!r}")
    if init_mode == "oppo_small_id" and heads % 2:     # the heads come in pairs of opposite sign
        raise ValueError(f"init_mode='oppo_small_id' needs an even number of heads; got {heads}")


@dataclass(frozen=True)
class MultiHeadSoftmaxConfig(BaseModelConfig):
    """One-layer H-head softmax attention (spec §1.2–1.4); `dim` is the covariate dimension d.

    Attributes:
        init_mode: "torch" (nn.Linear's default U(±1/√fan_in), the paper's), "small_id" (W_Q, W_K,
            W_V = 1e-6·I), "small_id_qk" (W_Q, W_K = 1e-4·I) or "oppo_small_id" (W_Q = +1e-6·I on
            the first H/2 heads and −1e-6·I on the rest, W_K = 1e-6·I), the other factors drawn as
            "torch" (the authors' code, spec §1.4). `init_scale` of the base config is not used.
        activation: "exp" (softmax), "linear" (1 + Cx), "square" ((1 + Cx)²), "tanh" (1 + tanh x).
        activation_c: the constant C of "linear" and "square" (the text leaves it open).
    """

    kind = "multihead_softmax"
    init_mode: str = "torch"
    activation: str = "exp"
    activation_c: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_init(self.init_mode, self.heads)
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}; got {self.activation!r}")
        check.positive_float("activation_c", self.activation_c)


class _FactorisedHeads(ICLModel):
    """Per-head factors wq, wk, wv `[H, D, D]` and wo `[H, D]`, and their circuits."""

    @property
    def token_dim(self) -> int:
        """D: the covariates and the response(s), d + 1 here."""
        return self.config.dim + 1

    def _init_parameters(self, g: torch.Generator) -> None:
        cfg = self.config
        h, dd = cfg.heads, self.token_dim

        def uniform(shape: tuple[int, ...], fan_in: int) -> torch.Tensor:
            bound = 1.0 / math.sqrt(fan_in)
            return (torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1) * bound

        layout = self.param_layout()
        w = {n: uniform(layout[n], dd) for n in ("wq", "wk", "wv")}
        w["wo"] = uniform(layout["wo"], h * dd)
        eye = torch.eye(dd, dtype=torch.float64).expand(h, dd, dd)
        if cfg.init_mode == "small_id":
            w |= {n: 1e-6 * eye for n in ("wq", "wk", "wv")}
        elif cfg.init_mode == "small_id_qk":
            w |= {n: 1e-4 * eye for n in ("wq", "wk")}
        elif cfg.init_mode == "oppo_small_id":
            sign = torch.tensor([1.0] * (h // 2) + [-1.0] * (h // 2),
                                dtype=torch.float64)[:, None, None]
            w |= {"wq": 1e-6 * sign * eye, "wk": 1e-6 * eye}
        for name, t in w.items():
            setattr(self, name, nn.Parameter(t.contiguous().to(cfg.torch_dtype)))

    def extract_kq(self) -> torch.Tensor:
        """KQ^(h) = W_K^hᵀ W_Q^h / √(d+1) `[H, D, D]`: head h scores z_ℓ by z_ℓᵀ KQ^(h) z_q."""
        return self.wk.transpose(1, 2) @ self.wq / math.sqrt(self.token_dim)

    def extract_ov(self) -> torch.Tensor:
        """The last row of OV^(h) = W_O^h W_V^h `[H, D]`: (c_hᵀ, μ_h), the only row reaching ŷ
        (`[H, N, D]`, the last N rows, for N outputs)."""
        return torch.einsum("h...i,hij->h...j", self.wo, self.wv)


@register_model
class MultiHeadSoftmax(_FactorisedHeads):
    """ŷ_q = Σ_h OV^(h) Σ_ℓ σ_f(z_ℓᵀ KQ^(h) z_q)_ℓ z_ℓ over the L context tokens (spec §1.2)."""

    config_class = MultiHeadSoftmaxConfig

    def forward(self, x: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor,
                lengths: torch.Tensor | None = None, per_head: bool = False) -> torch.Tensor:
        """Prediction at the query from x `[B, L, d]`, y `[B, L]`, x_q `[B, d]` → `[B]` (or each
        head's term `[B, H]`); `lengths` `[B]` for zero-padded contexts."""
        self.check_inputs(x=x, y=y, x_q=x_q, lengths=lengths)
        z, z_q = tokens(x, y, x_q)
        q = torch.einsum("hij,bj->bhi", self.extract_kq(), z_q)                 # [B, H, D]
        cfg = self.config
        attended = _attend(q, z, z, _context_mask(lengths, y.shape[1]), cfg.activation,
                           cfg.activation_c)                                    # [B, H, D]
        out = torch.einsum("hd,bhd->bh", self.extract_ov(), attended)
        return out if per_head else out.sum(-1)


@dataclass(frozen=True)
class MultiHeadLinearConfig(BaseModelConfig):
    """H-head linear attention LinTF (spec §1.8), factorised as `MultiHeadSoftmaxConfig`.

    Attributes:
        norm_context: the hard-coded 1/L of LinTF (the training length); None: the actual length.
        init_mode: as `MultiHeadSoftmaxConfig.init_mode`.
    """

    kind = "multihead_linear"
    norm_context: int | None = None
    init_mode: str = "torch"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.norm_context is not None:
            check.positive_int("norm_context", self.norm_context)
        _check_init(self.init_mode, self.heads)


@register_model
class MultiHeadLinear(_FactorisedHeads):
    """ŷ_q = (1/L_norm) Σ_h OV^(h) (Σ_{ℓ ≤ L} z_ℓ z_ℓᵀ + z_q z_qᵀ) KQ^(h) z_q: no softmax, no
    mask, the query column included (spec §1.8)."""

    config_class = MultiHeadLinearConfig

    def forward(self, x: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor,
                lengths: torch.Tensor | None = None, per_head: bool = False) -> torch.Tensor:
        """As `MultiHeadSoftmax.forward` (padded rows are zero, so they add nothing)."""
        self.check_inputs(x=x, y=y, x_q=x_q, lengths=lengths)
        z, z_q = tokens(x, y, x_q)
        second = torch.einsum("bli,blj->bij", z, z) + z_q[:, :, None] * z_q[:, None, :]
        kq_zq = torch.einsum("hij,bj->bhi", self.extract_kq(), z_q)             # [B, H, D]
        out = torch.einsum("hi,bij,bhj->bh", self.extract_ov(), second, kq_zq)
        if self.config.norm_context is not None:
            out = out / self.config.norm_context
        elif lengths is not None:
            out = out / lengths.to(out.dtype)[:, None]
        else:
            out = out / y.shape[1]
        return out if per_head else out.sum(-1)


@dataclass(frozen=True)
class MultiOutputSoftmaxConfig(MultiHeadSoftmaxConfig):
    """H-head softmax attention on (d+N)-dim tokens [x; y], y ∈ R^N (spec §1.9, multi-task
    regression): `dim` is d, `outputs` is N; the prediction is the last N entries of the query
    column. Other fields as `MultiHeadSoftmaxConfig`; the logit scale is 1/√(d+N)."""

    kind = "multioutput_softmax"
    outputs: int = 2

    def __post_init__(self) -> None:
        super().__post_init__()
        check.positive_int("outputs", self.outputs)


@register_model
class MultiOutputSoftmax(_FactorisedHeads):
    """ŷ_q = Σ_h OV^(h)_{-N:} Σ_ℓ σ_f(z_ℓᵀ KQ^(h) z_q)_ℓ z_ℓ ∈ R^N, z_ℓ = [x_ℓ; y_ℓ], z_q = [x_q; 0_N]
    (spec §1.9); W_O^h `[N, D]` is head h's block of the authors' nn.Linear(H·D, N)."""

    config_class = MultiOutputSoftmaxConfig

    @property
    def token_dim(self) -> int:
        return self.config.dim + self.config.outputs

    def forward(self, x: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor,
                lengths: torch.Tensor | None = None, per_head: bool = False) -> torch.Tensor:
        """Predictions from x `[B, L, d]`, y `[B, L, N]`, x_q `[B, d]` → `[B, N]` (each head's
        term `[B, H, N]` with `per_head`)."""
        n_out = self.config.outputs
        if y.ndim != 3 or y.shape[-1] != n_out:
            raise ValueError(f"{self.kind}: y has shape {list(y.shape)}; it must be [B, L, "
                             f"N={n_out}] (N = the model's outputs)")
        self.check_inputs(x=x, y=y[..., 0], x_q=x_q, lengths=lengths)
        z = torch.cat([x, y], -1)
        z_q = torch.cat([x_q, x_q.new_zeros(x_q.shape[0], n_out)], -1)
        q = torch.einsum("hij,bj->bhi", self.extract_kq(), z_q)
        cfg = self.config
        attended = _attend(q, z, z, _context_mask(lengths, y.shape[1]), cfg.activation,
                           cfg.activation_c)                                    # [B, H, D]
        out = torch.einsum("hnd,bhd->bhn", self.extract_ov(), attended)
        return out if per_head else out.sum(1)


@dataclass(frozen=True)
class MultiLayerSoftmaxConfig(BaseModelConfig):
    """A stack of `layers` full-sequence H-head softmax attention layers with residuals, optionally
    weight-tied, and a final linear read-out of the query position (the authors' multi-layer
    variant, spec §1.3; not used by the text). Init: nn.Linear's U(±1/√fan_in) for every factor.

    Attributes:
        layers: number of attention layers. tied: one set of layer weights applied `layers` times.
    """

    kind = "multilayer_softmax"
    layers: int = 2
    tied: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        check.positive_int("layers", self.layers)


@register_model
class MultiLayerSoftmax(ICLModel):
    """Z ← Z + Σ_h OV^(h) Z smax∘msk(Zᵀ KQ^(h) Z) per layer on all L+1 tokens (strictly causal:
    token j attends to the tokens before it), then ŷ = W_R z_q at the query position. Per layer
    (one if tied): wq, wk, wv, wo `[S, H, D, D]` with KQ^(h) = W_Kᵀ W_Q/√D and OV^(h) = W_O W_V;
    readout `[1, D]` (the authors' final Linear(D → 1))."""

    config_class = MultiLayerSoftmaxConfig
    def _init_parameters(self, g: torch.Generator) -> None:
        cfg = self.config
        h, dd = cfg.heads, cfg.dim + 1
        layout = self.param_layout()

        def uniform(name: str, fan_in: int) -> nn.Parameter:
            t = (torch.rand(layout[name], generator=g, dtype=torch.float64) * 2 - 1) / math.sqrt(fan_in)
            return nn.Parameter(t.to(cfg.torch_dtype))

        self.wq, self.wk, self.wv = (uniform(name, dd) for name in ("wq", "wk", "wv"))
        self.wo = uniform("wo", h * dd)
        self.readout = uniform("readout", dd)

    def circuits(self, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(KQ `[H, D, D]`, OV `[H, D, D]`) of `layer` (0-based)."""
        i = 0 if self.config.tied else layer
        kq = self.wk[i].transpose(1, 2) @ self.wq[i] / math.sqrt(self.config.dim + 1)
        return kq, self.wo[i] @ self.wv[i]

    def forward(self, x: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor,
                lengths: torch.Tensor | None = None) -> torch.Tensor:
        """Prediction from x `[B, L, d]`, y `[B, L]`, x_q `[B, d]` → `[B]`. Full contexts only
        (`lengths` must be None or all L)."""
        self.check_inputs(x=x, y=y, x_q=x_q, lengths=lengths)
        if _context_mask(lengths, y.shape[1]) is not None:
            raise ValueError(f"{self.kind} takes full contexts only; got padded lengths")
        z_ctx, z_q = tokens(x, y, x_q)
        z = torch.cat([z_ctx, z_q[:, None]], 1)                                   # [B, L+1, D]
        n = z.shape[1]
        earlier = torch.ones(n, n, dtype=torch.bool, device=z.device).tril(-1)    # key i < query j
        for layer in range(self.config.layers):
            kq, ov = self.circuits(layer)
            scores = torch.einsum("bjd,hde,bie->bhji", z, kq.transpose(1, 2), z)  # query j, key i
            # query 0 has no earlier key: its row is zero, set here rather than by nan_to_num on an
            # all-masked softmax, whose forward-mode tangent stays NaN (torch.func.jvp, hessian)
            p = torch.softmax(scores[:, :, 1:].masked_fill(~earlier[1:], float("-inf")), -1)
            p = torch.cat([torch.zeros_like(p[:, :, :1]), p], 2)
            z = z + torch.einsum("hde,bhji,bie->bjd", ov, p, z)
        return (z[:, -1] @ self.readout.T)[:, 0]


# ----------------------------------------------------------------------------- reduced model
@dataclass(frozen=True)
class KernelRegressorsConfig(BaseModelConfig):
    """The reduced model ŷ_q = Σ_h μ_h Σ_ℓ y_ℓ σ_f(x_ℓᵀ Ω_h x_q)_ℓ (spec §1.5).

    Attributes:
        omega_form: "scalar" (Ω_h = ω_h I, the paper's (ω, μ) model), "diagonal" (Ω_h = diag ω_h)
            or "full" (Ω_h `[d, d]`, non-isotropic covariates).
        activation, activation_c: as `MultiHeadSoftmaxConfig`.
        ω and μ start i.i.d. N(0, init_scale²) from `init_seed` (the repo's 4-head run: 0.1).
    """

    kind = "kernel_regressors"
    omega_form: str = "scalar"
    activation: str = "exp"
    activation_c: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.omega_form not in OMEGA_FORMS:
            raise ValueError(f"omega_form must be one of {OMEGA_FORMS}; got {self.omega_form!r}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}; got {self.activation!r}")
        check.positive_float("activation_c", self.activation_c)


@register_model
class KernelRegressors(ICLModel):
    """A sum of H Nadaraya–Watson regressors: parameters omega (`[H]`, `[H, d]` or `[H, d, d]`)
    and mu `[H]`."""

    config_class = KernelRegressorsConfig
    @classmethod
    def init_variances(cls, config: BaseModelConfig) -> dict[str, float]:
        return {"omega": config.init_scale ** 2, "mu": config.init_scale ** 2}

    def omega_matrices(self) -> torch.Tensor:
        """Ω_h `[H, d, d]`."""
        form, d = self.config.omega_form, self.config.dim
        if form == "scalar":
            return self.omega[:, None, None] * torch.eye(d, dtype=self.omega.dtype)
        return torch.diag_embed(self.omega) if form == "diagonal" else self.omega

    def forward(self, x: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor,
                lengths: torch.Tensor | None = None, per_head: bool = False) -> torch.Tensor:
        """Prediction at the query from x `[B, L, d]`, y `[B, L]`, x_q `[B, d]` → `[B]` (or
        `[B, H]`). The scalar form scores with s_ℓ = x_ℓᵀ x_q once for all heads (O(Ld + HL))."""
        self.check_inputs(x=x, y=y, x_q=x_q, lengths=lengths)
        cfg = self.config
        mask = _context_mask(lengths, y.shape[1])
        if cfg.omega_form == "scalar":
            s = torch.einsum("bld,bd->bl", x, x_q)[..., None]                   # [B, L, 1]
            q = self.omega[None, :, None].expand(x.shape[0], -1, 1)              # [B, H, 1]
            attended = _attend(q, s, y[..., None], mask, cfg.activation, cfg.activation_c)
        else:
            q = torch.einsum("hde,be->bhd", self.omega_matrices(), x_q)
            attended = _attend(q, x, y[..., None], mask, cfg.activation, cfg.activation_c)
        out = self.mu * attended[..., 0]                                        # [B, H]
        return out if per_head else out.sum(-1)
