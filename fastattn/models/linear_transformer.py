"""One-layer, one-head linear transformer f(Z) = Z + W^P (Z Zᵀ/N) W^Q Z for vector in-context
regression (Mainali & Teixeira 2025, Eq. 1; spec §3).

Z = [[x_1 … x_N x_q], [y_1 … y_N 0]] `[2d, N+1]`; the Gram matrix includes the query column and is
divided by N. Only the bottom d rows of W^P, pᵀ = [p1 p2], and the first d columns of W^Q,
q = [q1; q2], reach the query prediction ŷ = pᵀ Γ̂ q x_q (Γ̂ = Z Zᵀ/N); the other blocks have an
identically zero gradient, so the model holds only p1, p2, q1, q2 (each `[d, d]`). The forward pass
never forms Γ̂: Γ̂ v = Z (Zᵀ v)/N costs O(N d) (spec §10 K2). `query_loss_grad` is the same
computation with its hand-written backward, for the task-centric SGD inner loop; the literal formula
is `fastattn.models.reference.linear_transformer`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from fastattn import _validate as check
from fastattn.models.base import BaseModelConfig, ICLModel, register_model

INIT_MODES = ("aligned", "gaussian")


@dataclass(frozen=True)
class LinearTransformerConfig(BaseModelConfig):
    """f(Z) = Z + W^P (ZZᵀ/N) W^Q Z with its relevant blocks p1, p2, q1, q2 `[d, d]`.

    Attributes (beyond `BaseModelConfig`; heads must be 1):
        init_mode: "aligned": p2 = q1 = init_scale·I, p1 = q2 = 0 (the paper's symmetric aligned
            init, a_α(0) = init_scale²; U-invariant); "gaussian": every block N(0, init_scale²).
        init_noise: standard deviation of N(0, ·) noise added to every trainable block.
        reduced: freeze the null blocks p1 = q2 = 0 (the paper's reduced model ŷ = p2 W Σ̂ q1 x_q).
    """

    kind = "linear_transformer"
    heads: int = 1
    init_mode: str = "aligned"
    init_noise: float = 0.0
    reduced: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.heads != 1:
            raise ValueError(f"linear_transformer has one head; got heads={self.heads}")
        if self.init_mode not in INIT_MODES:
            raise ValueError(f"init_mode must be one of {INIT_MODES}; got {self.init_mode!r}")
        check.nonnegative_float("init_noise", self.init_noise)


def gram_apply(x: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor, v_top: torch.Tensor,
               v_bot: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Γ̂ v = Z (Zᵀ v)/N without forming Γ̂, for v = [v_top; v_bot].

    x, y `[B, N, d]`, x_q, v_top, v_bot `[B, d]` → (top, bottom) halves of Γ̂ v, each `[B, d]`.
    """
    n = x.shape[1]
    u = torch.einsum("bnd,bd->bn", x, v_top) + torch.einsum("bnd,bd->bn", y, v_bot)   # Zᵀv context
    u_q = (x_q * v_top).sum(-1, keepdim=True)                                        # query column
    top = (torch.einsum("bn,bnd->bd", u, x) + u_q * x_q) / n
    bot = torch.einsum("bn,bnd->bd", u, y) / n
    return top, bot


@register_model
class LinearTransformer(ICLModel):
    """The paper's linear transformer (kind "linear_transformer"); parameters p1, p2, q1, q2."""

    config_class = LinearTransformerConfig
    def _init_parameters(self, g: torch.Generator) -> None:
        c = self.config
        d, scale = c.dim, float(c.init_scale)
        layout = self.param_layout()
        if c.init_mode == "aligned":
            eye = torch.eye(d, dtype=torch.float64)
            blocks = {"p1": 0 * eye, "p2": scale * eye, "q1": scale * eye, "q2": 0 * eye}
        else:
            blocks = {k: scale * torch.randn(shape, generator=g, dtype=torch.float64)
                      for k, shape in layout.items()}
        for name, shape in layout.items():
            t = blocks[name]
            null = name in ("p1", "q2")
            if c.reduced and null:
                t = torch.zeros(shape, dtype=torch.float64)
            elif c.init_noise:
                t = t + c.init_noise * torch.randn(shape, generator=g, dtype=torch.float64)
            # copy=True: each block owns its storage (a shared one would get every block's update)
            p = torch.nn.Parameter(t.to(c.torch_dtype, copy=True), requires_grad=not (c.reduced and null))
            setattr(self, name, p)

    def forward(self, x: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        """ŷ = pᵀ Γ̂ q x_q `[B, d]` from x, y `[B, N, d]` and x_q `[B, d]` (query term included)."""
        top, bot = gram_apply(x, y, x_q, x_q @ self.q1.T, x_q @ self.q2.T)
        return top @ self.p1.T + bot @ self.p2.T

    def query_loss_grad(self, x: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor,
                        y_q: torch.Tensor) -> tuple[float, dict[str, torch.Tensor]]:
        """The batch-mean loss ½‖ŷ − y_q‖² and its gradients {p1, p2, q1, q2: `[d, d]`}, by the
        hand-written backward of spec §10 K2 (no autograd):
        h = Γ̂ q x_q, r = pᵀh − y_q, ∇pᵀ = r hᵀ, ∇q = Γ̂ p r x_qᵀ (Γ̂ symmetric), each batch-averaged."""
        with torch.no_grad():
            h_top, h_bot = gram_apply(x, y, x_q, x_q @ self.q1.T, x_q @ self.q2.T)
            r = h_top @ self.p1.T + h_bot @ self.p2.T - y_q
            g_top, g_bot = gram_apply(x, y, x_q, r @ self.p1, r @ self.p2)          # Γ̂ (p r)
            b = x.shape[0]
            grads = {"p1": r.T @ h_top / b, "p2": r.T @ h_bot / b, "q1": g_top.T @ x_q / b,
                     "q2": g_bot.T @ x_q / b}
            loss = 0.5 * float((r * r).sum()) / b
        return loss, grads

    def snapshot_series(self, params: np.ndarray) -> dict[str, np.ndarray]:
        """‖p1‖_F and ‖q2‖_F `[S]` of flat parameter snapshots `[S, 4d²]` (layout p1, p2, q1, q2):
        the null blocks every run records (spec §6.7), under "norm_p1", "norm_q2"."""
        d2 = self.config.dim ** 2
        blocks = np.asarray(params, dtype=np.float64).reshape(len(params), 4, d2)
        return {"norm_p1": np.linalg.norm(blocks[:, 0], axis=1),
                "norm_q2": np.linalg.norm(blocks[:, 3], axis=1)}

    def blocks_in_basis(self, u: torch.Tensor) -> dict[str, torch.Tensor]:
        """Each block conjugated into the basis U `[d, d]` (columns): B̄ = Uᵀ B U."""
        u = u.to(self.p2.dtype)
        return {k: u.T @ getattr(self, k).detach() @ u for k in self.PARAM_ORDER}
