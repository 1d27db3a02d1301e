"""Objectives: an exact loss L(θ) with its gradient (and optionally Hessian, Hessian-vector products,
a stage preconditioner, a cost hint, a working basis) that the C++ integrators follow.

- `Objective` is the compiled core's interface; subclass it in Python (call ``super().__init__()``,
  define ``size()`` and ``loss_grad(params) -> (loss, grad)``, optionally ``hvp(params, u)``,
  ``hessian(params)`` and ``cost_hint()``) and the integrators drive your numpy model.
- `LinearAttentionObjective` is the closed-form population loss of the zero-block linear attention
  models on a task with Gaussian moments (docs/theory.md §1–3); registered for
  (linear_regression, merged | cubic_mlp | separate).

Families and flat float64 layouts (docs/conventions.md), dims = (D, H, R) (R is ignored by merged):

- ``"merged"`` (ATTN_M): ``v [H]``, ``U [H, D, D]``, Γ = Σ_i v_i U_i, P = H(1 + D²).
- ``"cubic_mlp"``: ``w2 [H]``, ``W1 [H, D·D]``; same layout and Γ as merged.
- ``"separate"`` (ATTN_S, rank R): ``v [H]``, ``K [H, R, D]``, ``Q [H, R, D]``, Γ = Σ_i v_i K_iᵀ Q_i,
  P = H(1 + 2RD).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fastattn._core_loader import CORE_ERROR, core
from fastattn.population.moments import Moments
from fastattn.population.registry import register_objective

FAMILIES = ("merged", "cubic_mlp", "separate")
# merged and cubic_mlp share the flat layout and the closed form (w2 ≡ v, W1[h] ≡ vec U_h)
_MERGED_LIKE = ("merged", "cubic_mlp")

Objective = core.Objective if core is not None else object


def family_dims(family: str, dims) -> tuple[int, int, int]:
    """(D, H, R) of a linear attention family (R = 1 for merged / cubic_mlp; dims may be (D, H) then)."""
    if family not in FAMILIES:
        raise ValueError(f"family={family!r} is unknown; use one of {sorted(FAMILIES)}")
    try:
        t = tuple(int(x) for x in dims)
    except TypeError as exc:
        raise ValueError(f"dims={dims!r} must be a tuple (D, H, R) of positive ints") from exc
    if len(t) == 2 and family in _MERGED_LIKE:
        t = (*t, 1)
    if len(t) != 3 or min(t) < 1:
        raise ValueError(f"dims={dims!r} must be a tuple (D, H, R) of positive ints")
    D, H, R = t
    return (D, H, 1) if family in _MERGED_LIKE else (D, H, R)


def layout_family(family: str) -> str:
    """The flat layout's name in the model cards (cubic_mlp reads as merged: w2 ≡ v, W1 ≡ U)."""
    return "merged" if family in _MERGED_LIKE else "separate"


def moment_arrays(moments: Moments | Sequence[Moments], D: int, K: int):
    """(cov [Km, D, D], w_second [Km, D, D], noise [Km], inv_n [Km]) with Km ∈ {1, K}, validated."""
    ms = [moments] if isinstance(moments, Moments) else list(moments)
    if not ms or not all(isinstance(m, Moments) for m in ms):
        raise ValueError("moments must be a Moments or a sequence of K Moments")
    if len(ms) not in (1, K):
        raise ValueError(f"moments: got {len(ms)} sets for K={K} models; pass 1 shared set or K")
    cov = np.stack([np.asarray(m.cov, dtype=np.float64) for m in ms])
    ws = np.stack([np.asarray(m.w_second, dtype=np.float64) for m in ms])
    if cov.shape[1:] != (D, D) or ws.shape[1:] != (D, D):
        raise ValueError(
            f"moments: cov/w_second have shape {cov.shape[1:]}/{ws.shape[1:]}, but dims give D={D}; "
            "build the Moments for the same token dimension"
        )
    noise = np.array([float(m.noise) for m in ms])
    inv_n = np.array([float(m.inv_n) for m in ms])
    if not (np.all(np.isfinite(cov)) and np.all(np.isfinite(ws)) and np.all(np.isfinite(noise))
            and np.all(np.isfinite(inv_n))):
        raise ValueError("moments contain non-finite entries")
    return cov, ws, noise, inv_n


class LinearAttentionObjective(core.LinearAttention if core is not None else object):
    """The exact population loss of a zero-block linear attention model (`family` at `dims`) on a
    task with `moments`, in C++ (float64). The integrators work in Λ's eigenbasis.

    Methods (parameters in the caller's basis, `[P]`, or `[K, P]` where noted):
        loss_grad(params [P] | [K, P], eigen=False) -> (loss, grad): batch over K models;
            eigen=True takes and returns Λ's eigenbasis.
        hessian(params) -> [P, P]; hessian_diag(params) -> [P]; hvp(params, u) -> [P].
        stage_preconditioner(params, c, r) -> [P]: (I + c·Hb)⁻¹ r, Hb the Hessian's Gauss–Newton
            blocks of each head (the Hessian-free Rodas4's preconditioner; docs/theory.md).
        to_eigen(params) / from_eigen(params) (= to_working / from_working), eigvecs() -> [D, D].
    Attributes: family, dims (D, H, R), moments, P.
    """

    def __init__(self, family: str, dims, moments: Moments):
        if core is None:
            raise ValueError(f"LinearAttentionObjective needs the compiled core ({CORE_ERROR}); rebuild "
                             "fastattn (pip install -e .)")
        D, H, R = family_dims(family, dims)
        cov, ws, noise, inv_n = moment_arrays(moments, D, 1)
        super().__init__(family, D, H, R, cov[0], ws[0], float(noise[0]), float(inv_n[0]))
        self.family, self.dims, self.moments = family, (D, H, R), moments

    def __repr__(self) -> str:
        return f"LinearAttentionObjective({self.family!r}, dims={self.dims})"


def _linear_attention(task, model) -> LinearAttentionObjective:
    return LinearAttentionObjective(model.kind, model.dims, task.moments())


for _family in FAMILIES:
    register_objective("linear_regression", _family)(_linear_attention)
