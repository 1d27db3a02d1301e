"""The disentangled two-layer attention-only transformer of Musat et al. 2025 (spec §3) and its
pseudo-parameter restrictions (Theorem 1's 19-dim subspace, Theorem 2's 3 parameters).

Rows of X `[B, L, 2D]` are tokens (L = 2N + 1; the query is the last row), X = [X1 | X2] with X1
content and X2 positions:

    T = σ(X W1 Xᵀ),  U = [X | T X] `[B, L, 4D]`,  Q = σ(U W2 Uᵀ),  V = [U | Q U] `[B, L, 8D]`,
    ỹ = V[:, L-1] W3 `[B, D]`,

σ the row-wise softmax under the causal mask ("strict": key j < query i, the paper's proofs;
"inclusive": j ≤ i); under "strict" the first row has no key and attends to nothing (T = 0 there).
No value/output projections, no scaling, no MLP, no normalisation. Only the query row of layer 2
reaches ỹ, so layer 2 is evaluated for that row alone (the literal full model is
`fastattn.models.reference.disentangled_transformer`).

Pseudo-parameters (spec §5.3): each basis matrix B_k is zero but for one D×D block equal to I or
M (the half swap); W = Σ_k θ_k B_k. `BASIS` lists them in the flat order of θ; `pseudo_weights`
builds (W1, W2, W3) from θ, `fastattn.analysis.pseudo_params` projects back.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from fastattn.models.base import ICLModel, register_family
from fastattn.population.induction import (  # noqa: F401  (the pseudo-parameters: the objective's)
    BASIS,
    NAMES,
    THREE_PARAM,
    THREE_PARAM_INDEX,
    BasisMatrix,
)

MASKS = ("strict", "inclusive")


def weight_shapes(D: int) -> tuple[tuple[int, ...], ...]:
    """Shapes of the full model's (W1, W2, W3): (2D, 2D), (4D, 4D), (8D, D), as its card lays them
    out (fastattn.configs)."""
    from fastattn.configs.base import param_shapes

    return tuple(shape for _, shape in param_shapes(DisentangledConfig(D)))


def half_swap(D: int, dtype=torch.float64, device=None) -> torch.Tensor:
    """M `[D, D]` = [[0, I], [I, 0]] (D even): symmetric, orthogonal, M² = I, tr M = 0."""
    if D < 2 or D % 2:
        raise ValueError(f"dim={D} must be even (M swaps the two halves of the positional code)")
    h = D // 2
    M = torch.zeros(D, D, dtype=dtype, device=device)
    M[:h, h:] = torch.eye(h, dtype=dtype, device=device)
    M[h:, :h] = torch.eye(h, dtype=dtype, device=device)
    return M


def check_mask(mask: str) -> str:
    if mask not in MASKS:
        raise ValueError(f"mask={mask!r} is unknown; use one of {list(MASKS)}")
    return mask


def causal_softmax(scores: torch.Tensor, mask: str) -> torch.Tensor:
    """Row-wise softmax of `[..., L, L]` scores (row = query) under the causal `mask`; a row without
    keys (row 0 under "strict") is all zeros, with zero gradient (no NaN)."""
    L = scores.shape[-1]
    i = torch.arange(L, device=scores.device)
    allowed = i[None, :] < i[:, None] if check_mask(mask) == "strict" else i[None, :] <= i[:, None]
    empty = ~allowed.any(-1)
    # an empty row softmaxes one placeholder key, then is zeroed: finite forward and backward
    allowed = allowed | (empty[:, None] & (i[None, :] == 0))
    w = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    return w * (~empty).to(w.dtype)[:, None]


def query_softmax(scores: torch.Tensor, mask: str) -> torch.Tensor:
    """Softmax of the last row's scores `[..., L]` over its causal keys (j < L-1 or j ≤ L-1)."""
    L = scores.shape[-1]
    n_keys = L - 1 if check_mask(mask) == "strict" else L
    w = torch.softmax(scores[..., :n_keys], dim=-1)
    return torch.nn.functional.pad(w, (0, L - n_keys))


def disentangled_forward(X: torch.Tensor, W1: torch.Tensor, W2: torch.Tensor, W3: torch.Tensor,
                         mask: str = "strict") -> torch.Tensor:
    """ỹ `[B, D]` for X `[B, L, 2D]`, W1 `[2D, 2D]`, W2 `[4D, 4D]`, W3 `[8D, D]`."""
    T = causal_softmax(X @ W1 @ X.transpose(-1, -2), mask)          # [B, L, L]
    U = torch.cat([X, T @ X], dim=-1)                                 # [B, L, 4D]
    u = U[:, -1]                                                      # [B, 4D] the query row
    Q = query_softmax(torch.einsum("bi,ij,blj->bl", u, W2, U), mask)  # [B, L]
    v = torch.cat([u, torch.einsum("bl,bld->bd", Q, U)], dim=-1)      # [B, 8D]
    return v @ W3


def pseudo_weights(theta: torch.Tensor, D: int, names: tuple[str, ...] = NAMES
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(W1, W2, W3) = Σ_k θ_k B_k for θ `[len(names)]` over the basis matrices `names` (differentiable)."""
    if theta.shape != (len(names),):
        raise ValueError(f"theta has shape {tuple(theta.shape)}; expected ({len(names)},) for {names}")
    eye = torch.eye(D, dtype=theta.dtype, device=theta.device)
    pattern = {"I": eye, "M": half_swap(D, theta.dtype, theta.device)}
    # each matrix as a grid of D × D blocks: its card shape in units of D
    blocks = [[[None] * (c // D) for _ in range(r // D)] for r, c in weight_shapes(D)]
    for value, name in zip(theta, names, strict=True):
        b = BASIS[NAMES.index(name)]
        term = value * pattern[b.pattern]
        cell = blocks[b.matrix][b.row][b.col]
        blocks[b.matrix][b.row][b.col] = term if cell is None else cell + term
    zero = torch.zeros(D, D, dtype=theta.dtype, device=theta.device)
    return tuple(torch.cat([torch.cat([zero if x is None else x for x in row], dim=1) for row in m], dim=0)
                 for m in blocks)


def basis_products(Ws, D: int) -> np.ndarray:
    """⟨W, B_k⟩ `[19]` (order `NAMES`) of numpy (W1 `[2D, 2D]`, W2 `[4D, 4D]`, W3 `[8D, D]`): the
    trace of B_k's block (pattern I) or its sum against M; θ_k is this over D."""
    M = half_swap(D).numpy()
    out = np.empty(len(BASIS))
    for k, b in enumerate(BASIS):
        block = Ws[b.matrix][b.row * D:(b.row + 1) * D, b.col * D:(b.col + 1) * D]
        out[k] = np.trace(block) if b.pattern == "I" else np.sum(block * M)
    return out


@dataclass(frozen=True)
class DisentangledConfig:
    """dim: D (even). mask: "strict" | "inclusive". params: "full" (W1, W2, W3: 28D² weights),
    "gram19" (the 19 pseudo-parameters) or "three_param" (α₃, β₂, γ₃). init_scale: standard
    deviation of a Gaussian initialisation (0: the paper's zero init); init_seed seeds it."""

    dim: int
    mask: str = "strict"
    params: str = "full"
    init_scale: float = 0.0
    init_seed: int = 0
    dtype: str = "float64"

    def __post_init__(self) -> None:
        if self.dim < 2 or self.dim % 2:        # half_swap's check, without building M `[D, D]`
            raise ValueError(f"dim={self.dim} must be even (M swaps the two halves of the positional code)")
        check_mask(self.mask)
        if self.params not in ("full", "gram19", "three_param"):
            raise ValueError(f"params={self.params!r} is unknown; use 'full', 'gram19' or 'three_param'")
        if not self.init_scale >= 0:
            raise ValueError(f"init_scale={self.init_scale} must be >= 0")
        if self.dtype not in ("float64", "float32"):
            raise ValueError(f"dtype={self.dtype!r} must be 'float64' or 'float32'")

    @property
    def kind(self) -> str:
        return "disentangled" if self.params == "full" else self.params

    @property
    def torch_dtype(self) -> torch.dtype:
        return getattr(torch, self.dtype)


class DisentangledTransformer(nn.Module):
    """The disentangled transformer with full weights (params "full": W1, W2, W3) or restricted to
    pseudo-parameters (params "gram19" / "three_param": `theta`). forward(X `[B, L, 2D]`) → ỹ `[B, D]`."""

    def __init__(self, config: DisentangledConfig | None = None, **fields):
        super().__init__()
        self.config = config if config is not None else DisentangledConfig(**fields)
        s = self.config.init_scale
        g = torch.Generator().manual_seed(int(self.config.init_seed))
        for name, shape in self.param_layout().items():     # W1, W2, W3 or theta
            w = s * torch.randn(shape, generator=g, dtype=torch.float64)
            setattr(self, name, nn.Parameter(w.to(self.config.torch_dtype)))

    # the flat float64 layout (the card's, row-major) that trainers and exact objectives read
    to_flat = ICLModel.to_flat
    load_flat = ICLModel.load_flat
    flat_size = ICLModel.flat_size
    param_layout = ICLModel.param_layout
    PARAM_ORDER = ICLModel.PARAM_ORDER

    @property
    def kind(self) -> str:
        return self.config.kind

    @property
    def names(self) -> tuple[str, ...]:
        """Names of the pseudo-parameters this model tracks (all 19 for the full model)."""
        return THREE_PARAM if self.config.params == "three_param" else NAMES

    def weights(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(W1, W2, W3) as full matrices."""
        if self.config.params == "full":
            return self.W1, self.W2, self.W3
        return pseudo_weights(self.theta, self.config.dim, self.names)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return disentangled_forward(X, *self.weights(), self.config.mask)

    def snapshot_series(self, params: np.ndarray) -> dict[str, np.ndarray]:
        """The pseudo-parameters `[S]` of flat snapshots `[S, P]`, by name (`names`): θ_k =
        ⟨W, B_k⟩/D of the full model's weights, the trained θ of a restricted model."""
        params = np.asarray(params, dtype=np.float64)
        if self.config.params != "full":
            return {name: params[:, k].copy() for k, name in enumerate(self.names)}
        from fastattn.configs.base import unflatten

        D = self.config.dim
        blocks = unflatten(self.config, params)
        theta = np.stack([basis_products([blocks[n][k] for n in ("W1", "W2", "W3")], D)
                          for k in range(len(params))]).reshape(len(params), len(NAMES)) / D
        return {name: theta[:, k] for k, name in enumerate(NAMES)}


for _kind in ("disentangled", "gram19", "three_param"):     # one class; the kind sets config.params
    register_family(_kind, DisentangledTransformer, DisentangledConfig)
