"""Linear attention models of in-context autoregressive learning (Sander et al. 2024, spec §3).

Each reads the tokens e_1..e_{T_max} `[N, T_max, E]` of `fastattn.tasks.AutoRegressive` and
`predict`s s_{T+1} for every context length T = 2..T_max at once, `[N, T_max−1, d]` (complex tokens
give complex predictions). The literal formulas live in `fastattn.models.reference`
(`ar_diag_heads`, `ar_augmented`, `ar_augmented_layers`); the tests check the fast forms against them.

Families (config → model, kind):

- `ARDiagConfig` → `ARDiag` ("diag", Eq. 6 with Assumption 3): H heads with diagonal A^h, B^h
  (the rows of A, B `[H, d]`) and a positional matrix P `[T_max, T_max]`; the query is e_{T−1}, the
  keys e_1..e_T (the one-step look-ahead mask), no residual. Lemma 2: the heads enter only through
  C = BᵀA, out_i = Σ_t P_{T−1,t} e_{t,i} Σ_j C_ij conj(e_{T−1,j}) e_{t,j}.
- `ARPEOnlyConfig` → `ARPEOnly` ("pe_only", Eq. 7): the same with C = I fixed; only P is trained.
- `ARAugmentedConfig` → `ARAugmented` ("aug", Eq. 4 with Assumption 2): one head on augmented
  tokens e_t = (0, s_t, s_{t−1}), A = [[0,0,0],[0,a1,a2],[0,a3,a4]] ⊗ I_d,
  B = [[0,b1,b2],[0,0,0],[0,0,0]] ⊗ I_d, read-out at τ = T, keys e_1..e_T (conj on the key).
- `ARAugmentedLayersConfig` → `ARAugmentedLayers` ("aug_layers", spec §3.3, Fig. 5): the authors'
  L-layer real augmented linear transformer with layer norm on the residual branch and a linear
  read-out (`layers` L); `softmax=True` puts a causal softmax on the scores (App. B).
- `NonAugmentedConfig` → `NonAugmented` ("non_aug", spec §3.6, Figs. 7–8): the authors' §6
  non-augmented model: H heads of full Q, K, V maps, a positional softmax multiplying the token
  scores, a shared W_O, layer norm and a linear read-out; tokens duplicated k = `duplicate` times.
- `ARTransformerConfig` → `ARTransformer` ("aug_transformer", spec §3.7, Figs. 9–10): AUG-L with
  softmax attention (by default) and a ReLU MLP of hidden width m = heads after each attention
  block (`layers` L).
- `Eq6Config` → `Eq6` ("eq6", App. B, Fig. 9): model (6) with full A^h, B^h `[H, d, d]` and P, its
  scores linear or softmaxed over the keys each query reads, optionally followed by a residual
  ReLU MLP (its flat order is its own: the MLP's width is no field of the layout).

The attention of DIAG / PE-only on real tokens and of NonAugmented runs through
`fastattn.ops.pe_attention` (causal linear attention with a multiplicative T×T positional matrix,
a Triton kernel on CUDA).

The flat layouts are the family cards' `shapes(config)` (fastattn.configs), read off each
config's fields (dim, heads, context, layers, ...).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from fastattn import _validate as check
from fastattn.models.base import BaseModelConfig, ICLModel, layer_norm, register_model
from fastattn.ops import pe_attention


def lookahead_mask(tmax: int, device: str | torch.device = "cpu") -> torch.Tensor:
    """M `[T_max−1, T_max]` bool: query row q (context length T = q + 2, query e_{T−1}) reads the
    keys t ≤ q + 1 (0-based), i.e. e_1..e_T: `tril(ones, k=1)` without its last row."""
    return torch.ones(tmax, tmax, dtype=torch.bool, device=device).tril(1)[:-1]


def diag_forward(tokens: torch.Tensor, C: torch.Tensor, P: torch.Tensor) -> torch.Tensor:
    """Lemma 2's reduced form of Eq. 6 for every T at once.

    Real tokens go through `fastattn.ops.pe_attention` (the Triton kernel on CUDA) with the
    look-ahead mask and one head per output coordinate i: query C_i ⊙ e_{T−1}, keys e_t, value
    e_{t,i}. Complex tokens (the theory's eigenbasis; Triton has no complex type) are contracted
    by einsum.

    Args:
        tokens: e_1..e_{T_max} `[N, T_max, d]` (real or complex). C: `[d, d]` real. P: `[T_max, T_max]`.
    Returns:
        `[N, T_max−1, d]`: row q is the prediction of s_{q+3} from e_1..e_{q+2} (T = q + 2).
    """
    n, tmax, d = tokens.shape
    if not tokens.is_complex():
        C, P = C.to(tokens.dtype), P.to(tokens.dtype)
        q = C[None, :, None, :] * tokens[:, None, :-1, :]                       # [N, d, T−1, d]
        k = tokens[:, None].expand(n, d, tmax, d)
        v = tokens.transpose(1, 2)[..., None]                                   # [N, d, T, 1]
        out = pe_attention(q, k, v, P[:-1].expand(d, tmax - 1, tmax), lookahead=1)
        return out[..., 0].transpose(1, 2)
    q = tokens[:, :-1].conj()                                                  # queries e_{T−1}
    scores = torch.einsum("nqj,ntj,ij->nqti", q, tokens, C.to(tokens.dtype))  # Σ_j C_ij ē_qj e_tj
    weights = (P[:-1] * lookahead_mask(tmax, P.device)).to(tokens.dtype)       # [T_max−1, T_max]
    return torch.einsum("qt,nqti,nti->nqi", weights, scores, tokens)


@dataclass(frozen=True)
class _PositionalConfig(BaseModelConfig):
    """A model with a positional matrix P `[T_max, T_max]`: context is T_max (at least 2)."""

    context: int = 20

    def __post_init__(self) -> None:
        super().__post_init__()
        check.positive_int("context", self.context)
        if self.context < 2:
            raise ValueError(f"context (T_max) must be at least 2; got {self.context}")


@dataclass(frozen=True)
class ARDiagConfig(_PositionalConfig):
    """DIAG (Eq. 6): dim d, heads H, context T_max (positional after heads; P is T_max × T_max).
    Initialisation (the authors' Fig. 3 code): A, B, P ~ init_scale · N(0, 1) per entry."""

    kind = "diag"


@register_model
class ARDiag(ICLModel):
    """Multi-head diagonal linear attention with a positional matrix (Eq. 6). Parameters: A, B
    `[H, d]` (row h: the diagonals a_h, b_h), P `[T_max, T_max]`."""

    config_class = ARDiagConfig

    @classmethod
    def init_variances(cls, config: BaseModelConfig) -> dict[str, float]:
        return dict.fromkeys(("A", "B", "P"), config.init_scale ** 2)

    def merged(self) -> torch.Tensor:
        """C = BᵀA `[d, d]` (Lemma 2)."""
        return self.B.T @ self.A

    def predict(self, tokens: torch.Tensor) -> torch.Tensor:
        """`[N, T_max−1, d]` predictions of s_{T+1}, T = 2..T_max, from tokens `[N, T_max, d]`."""
        return diag_forward(tokens, self.merged(), self.P)

    forward = predict


@dataclass(frozen=True)
class ARPEOnlyConfig(_PositionalConfig):
    """PE-only attention (Eq. 7): C = I fixed, only P `[T_max, T_max]` is trained (heads unused).
    The authors' Fig. 6 code starts from P = 0 (init_scale=0)."""

    kind = "pe_only"


@register_model
class ARPEOnly(ICLModel):
    """Positional-attention-only model (Eq. 7). Parameter: P `[T_max, T_max]`."""

    config_class = ARPEOnlyConfig

    @classmethod
    def init_variances(cls, config: BaseModelConfig) -> dict[str, float]:
        return {"P": config.init_scale ** 2}

    def predict(self, tokens: torch.Tensor) -> torch.Tensor:
        """`[N, T_max−1, d]` predictions of s_{T+1}, T = 2..T_max."""
        eye = torch.eye(self.config.dim, dtype=self.P.dtype, device=self.P.device)
        return diag_forward(tokens, eye, self.P)

    forward = predict


@dataclass(frozen=True)
class ARAugmentedConfig(BaseModelConfig):
    """AUG-1 (Eq. 4, Assumption 2): six scalars a1..a4, b1, b2 (heads unused, 1 head).
    Initialisation: each ~ init_scale · N(0, 1)."""

    kind = "aug"


@register_model
class ARAugmented(ICLModel):
    """One-layer augmented linear attention. Parameters: a = (a1, a2, a3, a4) `[4]`,
    b = (b1, b2) `[2]` (Assumption 2's block scalars)."""

    config_class = ARAugmentedConfig

    @classmethod
    def init_variances(cls, config: BaseModelConfig) -> dict[str, float]:
        return {"a": config.init_scale ** 2, "b": config.init_scale ** 2}

    def predict(self, tokens: torch.Tensor) -> torch.Tensor:
        """`[N, T_max−1, d]` predictions of s_{T+1}, T = 2..T_max, from augmented tokens
        `[N, T_max, 3d]`: Σ_{t≤T} (e_t* A e_T) (B e_t)_{1:d}."""
        d = self.config.dim
        s, sp = tokens[..., d:2 * d], tokens[..., 2 * d:]                       # s_t, s_{t−1}
        a, b = self.a.to(tokens.dtype), self.b.to(tokens.dtype)
        q1 = a[0] * s + a[1] * sp                                               # A e_T, block 2
        q2 = a[2] * s + a[3] * sp                                               # A e_T, block 3
        scores = torch.einsum("ntj,nqj->nqt", s.conj(), q1) + \
            torch.einsum("ntj,nqj->nqt", sp.conj(), q2)                         # e_t* A e_q
        values = b[0] * s + b[1] * sp                                           # (B e_t)_{1:d}
        causal = torch.ones(s.shape[1], s.shape[1], dtype=torch.bool, device=s.device).tril()
        out = torch.einsum("nqt,ntj->nqj", scores * causal.to(scores.dtype), values)
        return out[:, 1:]                                                       # T = 2..T_max

    forward = predict


@dataclass(frozen=True)
class ARAugmentedLayersConfig(BaseModelConfig):
    """AUG-L (spec §3.3, the authors' augmented.py): `layers` L (positional after heads) of
    x ← x + LayerNorm(Attn(x)) on augmented tokens (E = 3d), Attn(x)_t = W_O Σ_{t'≤t} (q_t·k_{t'}/√E)
    v_{t'} + b_O with biased q, k, v (one head, causal), then a linear read-out whose first d
    outputs predict s_{t+1}. `softmax` (App. B, Fig. 9): the causal scores go through a softmax over
    t' ≤ t instead (default False: linear attention, the paper's model). heads is unused (1).
    Initialisation: PyTorch's nn.Linear default, U(±1/√fan_in) for weights and biases; LayerNorm
    γ = 1, β = 0 (init_scale unused)."""

    kind = "aug_layers"
    layers: int = 1
    softmax: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        check.positive_int("layers", self.layers)
        if not isinstance(self.softmax, bool):
            raise ValueError(f"softmax must be True or False; got {self.softmax!r}")


@register_model
class ARAugmentedLayers(ICLModel):
    """The multi-layer augmented linear transformer of §6 (Fig. 5). Parameters, for L layers and
    E = 3d: Wq, Wk, Wv, Wo `[L, E, E]` (rows: outputs), bq, bk, bv, bo `[L, E]`, ln_w, ln_b `[L, E]`,
    fc_w `[E, E]`, fc_b `[E]`."""

    config_class = ARAugmentedLayersConfig

    def _uniform(self, g: torch.Generator, fan_in: int, name: str) -> nn.Parameter:
        """Block `name` (its card shape) by nn.Linear's default init, U(±1/√fan_in), drawn in
        float64 from `g`."""
        shape = self.param_layout()[name]
        t = (torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1) / math.sqrt(fan_in)
        return nn.Parameter(t.to(self.config.torch_dtype))

    def _constant(self, name: str, value: float) -> nn.Parameter:
        """Block `name` (its card shape) filled with `value` (a layer norm's weight or bias)."""
        shape = self.param_layout()[name]
        return nn.Parameter(torch.full(shape, value, dtype=self.config.torch_dtype))

    def _init_parameters(self, g: torch.Generator) -> None:
        E = 3 * self.config.dim
        for name in ("q", "k", "v", "o"):
            setattr(self, f"W{name}", self._uniform(g, E, f"W{name}"))
            setattr(self, f"b{name}", self._uniform(g, E, f"b{name}"))
        self.ln_w, self.ln_b = self._constant("ln_w", 1.0), self._constant("ln_b", 0.0)
        self._init_mlp(g)
        self.fc_w, self.fc_b = self._uniform(g, E, "fc_w"), self._uniform(g, E, "fc_b")

    def _init_mlp(self, g: torch.Generator) -> None:
        """No MLP in AUG-L (`ARTransformer` adds one per layer)."""

    def _attention(self, x: torch.Tensor, layer: int, causal: torch.Tensor) -> torch.Tensor:
        """Attn_layer(x) `[N, T, E]`: causal scores q·k/√E, linear (masked to 0) or softmax."""
        q = x @ self.Wq[layer].T + self.bq[layer]
        k = x @ self.Wk[layer].T + self.bk[layer]
        v = x @ self.Wv[layer].T + self.bv[layer]
        scores = (q @ k.transpose(1, 2)) / math.sqrt(x.shape[-1])
        if self.config.softmax:
            scores = scores.masked_fill(~causal, -math.inf).softmax(-1)
        else:
            scores = scores * causal
        return (scores @ v) @ self.Wo[layer].T + self.bo[layer]

    def _block(self, x: torch.Tensor, layer: int, causal: torch.Tensor) -> torch.Tensor:
        attn = self._attention(x, layer, causal)
        return x + layer_norm(attn, self.ln_w[layer], self.ln_b[layer])

    def outputs(self, tokens: torch.Tensor) -> torch.Tensor:
        """The read-out W_fc x^L + b_fc at every position t = 1..T, `[N, T, E]` (its first d
        coordinates predict s_{t+1}; the authors' MSE reads them all)."""
        causal = torch.ones(tokens.shape[1], tokens.shape[1], dtype=torch.bool,
                            device=tokens.device).tril()
        x = tokens
        for layer in range(self.config.layers):
            x = self._block(x, layer, causal)
        return x @ self.fc_w.T + self.fc_b

    def predict(self, tokens: torch.Tensor) -> torch.Tensor:
        """`[N, T_max−1, d]` predictions of s_{T+1}, T = 2..T_max, from real augmented tokens
        `[N, T_max, 3d]` (every position t predicts s_{t+1}; the task's loss reads t ≥ 2)."""
        return self.outputs(tokens)[:, 1:, :self.config.dim]

    forward = predict


@dataclass(frozen=True)
class NonAugmentedConfig(BaseModelConfig):
    """NONAUG-§6 (spec §3.6, the authors' non_augmented.py; Figs. 7–8): dim d, heads H,
    `duplicate` k copies of s_t per token (E = k·d; 2 is §6's e_t = (s_t, s_t)), `lookahead`
    False (the code's standard causal mask: position t reads t' ≤ t and predicts s_{t+1}) or True
    (Eq. 6's one-step look-ahead: the query e_{T−1} reads e_1..e_T), `init_same` (Fig. 8: every
    head's Q, K, V = head 0's + 0.05·N(0, 1)). Initialisation: PyTorch's defaults as in the
    code: nn.Linear U(±1/√E) for weights and biases, positions N(0, 1), LayerNorm γ = 1, β = 0
    (init_scale unused)."""

    kind = "non_aug"
    duplicate: int = 1
    lookahead: bool = False
    init_same: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        check.positive_int("duplicate", self.duplicate)
        if not isinstance(self.lookahead, bool):
            raise ValueError(f"lookahead must be True (Eq. 6) or False (the code's causal mask); "
                             f"got {self.lookahead!r}")


@register_model
class NonAugmented(ICLModel):
    """The non-augmented multi-head linear attention with positional softmax that §6 trains
    (spec §3.6), for E = k·d:

        q, k, v = W^h e + b^h (h = 1..H, head dim E); qp, kp = W_Q^h pos_t + b_Q^h, W_K^h pos_t + b_K^h
        Ppos^h_{t,t'} = softmax_{t' ≤ t + L}(qp_t · kp_t' / √E)   (L = 1 with lookahead, else 0)
        o_t = W_O Σ_h Σ_{t' ≤ t + L} Ppos^h_{t,t'} (q_t · k_t' / √E) v_t' + b_O    (W_O shared)
        ŝ_{t+1} = W_fc LayerNorm(o_t) + b_fc                                  (no residual)

    The positional softmax is batch-independent: computed once per call and handed to
    `fastattn.ops.pe_attention` as the multiplicative P. Parameters: Wq, Wk, Wv `[H, E, E]` (rows:
    outputs), bq, bk, bv `[H, E]`, pos `[100, E]`, Wo `[E, E]`, bo `[E]`, ln_w, ln_b `[E]`,
    fc_w `[d, E]`, fc_b `[d]`. Real tokens only (the §6 data are Haar O(d))."""

    config_class = NonAugmentedConfig

    def _init_parameters(self, g: torch.Generator) -> None:
        c = self.config
        bound = 1 / math.sqrt(c.duplicate * c.dim)
        layout = self.param_layout()

        def uniform(name: str) -> torch.Tensor:
            return (torch.rand(layout[name], generator=g, dtype=torch.float64) * 2 - 1) * bound

        def normal(name: str) -> torch.Tensor:
            return torch.randn(layout[name], generator=g, dtype=torch.float64)

        def param(t: torch.Tensor) -> nn.Parameter:
            return nn.Parameter(t.to(c.torch_dtype))

        for name in ("q", "k", "v"):
            W, b = uniform(f"W{name}"), uniform(f"b{name}")
            if c.init_same:               # the authors' init_same: head 0's values + 0.05·N(0, 1)
                W = W[:1] + 0.05 * normal(f"W{name}")
                b = b[:1] + 0.05 * normal(f"b{name}")
            setattr(self, f"W{name}", param(W))
            setattr(self, f"b{name}", param(b))
        self.pos = param(normal("pos"))
        self.Wo, self.bo = param(uniform("Wo")), param(uniform("bo"))
        self.ln_w = param(torch.ones(layout["ln_w"], dtype=torch.float64))
        self.ln_b = param(torch.zeros(layout["ln_b"], dtype=torch.float64))
        self.fc_w, self.fc_b = param(uniform("fc_w")), param(uniform("fc_b"))

    def positional(self, tmax: int) -> torch.Tensor:
        """Ppos `[H, T_max, T_max]`: the causal (or look-ahead) softmax of the positions' scores."""
        E = self.pos.shape[1]
        pos = self.pos[:tmax]
        qp = torch.einsum("te,hfe->htf", pos, self.Wq) + self.bq[:, None]
        kp = torch.einsum("te,hfe->htf", pos, self.Wk) + self.bk[:, None]
        allowed = torch.ones(tmax, tmax, dtype=torch.bool, device=pos.device).tril(
            int(self.config.lookahead))
        logits = (qp @ kp.transpose(1, 2) / math.sqrt(E)).masked_fill(~allowed, -math.inf)
        return torch.softmax(logits, dim=-1)

    def head_maps(self) -> torch.Tensor:
        """B_h = W_O W_V^h `[H, E, E]` (Fig. 8; the output map is shared by the heads)."""
        return self.Wo @ self.Wv

    def predict(self, tokens: torch.Tensor) -> torch.Tensor:
        """`[N, T_max−1, k·d]` predictions of s_{T+1}, T = 2..T_max, from real tokens
        `[N, T_max, E]` (the d read-out values repeated k times, as the task's duplicated targets
        are; the task's loss is then k × the squared error on s_{T+1})."""
        c = self.config
        tmax, E = tokens.shape[1:]
        if tokens.is_complex():
            raise ValueError("non_aug reads real tokens (the §6 Haar data); use "
                             "representation='real'")
        if E != c.duplicate * c.dim:
            raise ValueError(f"tokens have E = {E}; non_aug with dim={c.dim}, duplicate="
                             f"{c.duplicate} reads E = {c.duplicate * c.dim}: set the task's "
                             "duplicate to the model's")
        if tmax > self.pos.shape[0]:
            raise ValueError(f"T_max = {tmax} exceeds the {self.pos.shape[0]} learned positions")
        q = torch.einsum("nte,hfe->nhtf", tokens, self.Wq) + self.bq[:, None]
        k = torch.einsum("nte,hfe->nhtf", tokens, self.Wk) + self.bk[:, None]
        v = torch.einsum("nte,hfe->nhtf", tokens, self.Wv) + self.bv[:, None]
        P = self.positional(tmax) / math.sqrt(E)                 # the token scores' 1/√E folded in
        # the scored query rows, each reading one key past its own row index here: look-ahead,
        # the queries e_{T−1} (0-based 0..T_max−2); causal, e_T for T = 2..T_max (row 1 unscored)
        rows = slice(0, -1) if self.config.lookahead else slice(1, None)
        out = pe_attention(q[:, :, rows], k, v, P[:, rows].contiguous(), lookahead=1)
        o = out.sum(1) @ self.Wo.T + self.bo
        y = layer_norm(o, self.ln_w, self.ln_b) @ self.fc_w.T + self.fc_b
        return y.repeat(1, 1, c.duplicate)

    forward = predict
@dataclass(frozen=True)
class ARTransformerConfig(ARAugmentedLayersConfig):
    """The "full transformer" of App. B (spec §3.7, Figs. 9–10): AUG-L with softmax attention
    (`softmax`, default True here) and, after each attention block, a position-wise MLP of hidden
    width `heads` (m) with ReLU, on the residual stream the way the authors' block treats
    attention: x ← x + LayerNorm₂(W₂ ReLU(W₁ x + b₁) + b₂). The paper gives no code for it; this
    is the MLP their augmented.py builds (nn.Linear, ReLU, nn.Linear) and never calls, with its
    unused norm2 on the branch. Initialisation as AUG-L (PyTorch defaults)."""

    kind = "aug_transformer"
    softmax: bool = True


@register_model
class ARTransformer(ARAugmentedLayers):
    """AUG-L plus one MLP per layer (App. B). Parameters: AUG-L's, and for the MLPs (hidden m)
    W1 `[L, m, E]`, b1 `[L, m]`, W2 `[L, E, m]`, b2 `[L, E]`, ln2_w, ln2_b `[L, E]`."""

    config_class = ARTransformerConfig

    def _init_mlp(self, g: torch.Generator) -> None:
        E, m = 3 * self.config.dim, self.config.heads
        self.W1, self.b1 = self._uniform(g, E, "W1"), self._uniform(g, E, "b1")
        self.W2, self.b2 = self._uniform(g, m, "W2"), self._uniform(g, m, "b2")
        self.ln2_w, self.ln2_b = self._constant("ln2_w", 1.0), self._constant("ln2_b", 0.0)

    def _block(self, x: torch.Tensor, layer: int, causal: torch.Tensor) -> torch.Tensor:
        x = super()._block(x, layer, causal)
        h = torch.relu(x @ self.W1[layer].T + self.b1[layer]) @ self.W2[layer].T + self.b2[layer]
        return x + layer_norm(h, self.ln2_w[layer], self.ln2_b[layer])


@dataclass(frozen=True)
class Eq6Config(_PositionalConfig):
    """Model (6) of App. B (Fig. 9): dim d, heads H, context T_max; `softmax`: softmax the scores
    over the keys each query reads (else linear attention); `mlp_width`: hidden width of the
    residual ReLU MLP after the attention (0: none). Initialisation (the authors' Fig. 3 init):
    A, B, P ~ init_scale · N(0, 1) per entry; the MLP as nn.Linear, U(±1/√fan_in)."""

    kind = "eq6"
    softmax: bool = False
    mlp_width: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.softmax, bool):
            raise ValueError(f"softmax must be True or False; got {self.softmax!r}")
        if isinstance(self.mlp_width, bool) or not isinstance(self.mlp_width, int) \
                or self.mlp_width < 0:
            raise ValueError(f"mlp_width must be a non-negative integer (0: no MLP); got "
                             f"{self.mlp_width!r}")


@register_model
class Eq6(ICLModel):
    """ŝ = Σ_h Σ_{t≤T} P_{T−1,t} σ(e_tᵀ A^h e_{T−1}) B^h e_t (σ the identity, or the softmax over
    t ≤ T), then ŝ ← ŝ + W₂ ReLU(W₁ ŝ + b₁) + b₂ with an MLP. Parameters: A, B `[H, d, d]`,
    P `[T_max, T_max]`, W1 `[m, d]`, b1 `[m]`, W2 `[d, m]`, b2 `[d]` (m = mlp_width; all four
    empty without an MLP). Real tokens."""

    config_class = Eq6Config
    PARAM_ORDER = ("A", "B", "P", "W1", "b1", "W2", "b2")

    def _init_parameters(self, g: torch.Generator) -> None:
        c = self.config

        def normal(*shape: int) -> nn.Parameter:
            t = c.init_scale * torch.randn(*shape, generator=g, dtype=torch.float64)
            return nn.Parameter(t.to(c.torch_dtype))

        def uniform(fan_in: int, *shape: int) -> nn.Parameter:
            t = (torch.rand(*shape, generator=g, dtype=torch.float64) * 2 - 1) / math.sqrt(fan_in)
            return nn.Parameter(t.to(c.torch_dtype))

        d, h, m = c.dim, c.heads, c.mlp_width
        self.A, self.B, self.P = normal(h, d, d), normal(h, d, d), normal(c.context, c.context)
        self.W1, self.b1 = uniform(d, m, d), uniform(d, m)
        self.W2, self.b2 = uniform(max(m, 1), d, m), uniform(max(m, 1), d if m else 0)
        self.register_buffer("mask", lookahead_mask(c.context))

    def predict(self, tokens: torch.Tensor) -> torch.Tensor:
        """`[N, T_max−1, d]` predictions of s_{T+1}, T = 2..T_max, from real tokens `[N, T_max, d]`."""
        if tokens.is_complex():
            raise ValueError("eq6 reads real tokens; use representation='real'")
        scores = torch.einsum("nte,hef,nqf->nhqt", tokens, self.A, tokens[:, :-1])
        if self.config.softmax:
            scores = torch.softmax(scores.masked_fill(~self.mask, -math.inf), dim=-1)
        out = torch.einsum("nhqt,hfe,nte->nqf", scores * (self.P[:-1] * self.mask), self.B, tokens)
        if self.config.mlp_width:
            out = out + torch.relu(out @ self.W1.T + self.b1) @ self.W2.T + self.b2
        return out

    forward = predict
