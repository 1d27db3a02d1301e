"""Theorem 1's pseudo-parameters of the disentangled transformer (Musat et al. 2025, spec §5.3–5.4):
projection of (W1, W2, W3) onto the 19 basis matrices, the residual, the in-subspace fraction, and
the dead directions.

The basis matrices (`fastattn.models.disentangled.BASIS`) are mutually Frobenius-orthogonal with
‖B_k‖² = D, so θ_k = ⟨W, B_k⟩/D is the coefficient (what the scores see; the default) and
⟨W, B_k⟩/√D = √D θ_k the component along the unit basis vector (`unit=True`).
"""

from __future__ import annotations

import numpy as np
import torch

from fastattn.models.disentangled import (
    NAMES,
    basis_products,
    pseudo_weights,
    weight_shapes,
)

#: β3..β6 read the query's positional code, which is zero: their gradient vanishes for every data
#: distribution and mask (spec §5.4); with orthonormal data and the strict mask α2 is dead as well.
DEAD = ("beta3", "beta4", "beta5", "beta6")
DEAD_ORTHONORMAL_STRICT = ("alpha2", *DEAD)


def _weights(W1, W2, W3, D: int) -> list[np.ndarray]:
    Ws = [np.asarray(w.detach().cpu() if isinstance(w, torch.Tensor) else w, dtype=np.float64)
          for w in (W1, W2, W3)]
    for name, w, shape in zip(("W1", "W2", "W3"), Ws, weight_shapes(D), strict=True):
        if w.shape != shape:
            raise ValueError(f"{name} has shape {w.shape}; expected {shape} for dim D={D}")
    return Ws


def project(W1, W2, W3, *, unit: bool = False) -> np.ndarray:
    """θ `[19]` (order `NAMES`) of (W1 `[2D, 2D]`, W2 `[4D, 4D]`, W3 `[8D, D]`): ⟨W, B_k⟩/D, or
    ⟨W, B_k⟩/√D with unit=True."""
    D = int(W3.shape[1])
    return basis_products(_weights(W1, W2, W3, D), D) / (np.sqrt(D) if unit else D)


def embed(theta, D: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(W1, W2, W3) = Σ_k θ_k B_k for θ `[19]` (the inverse of `project` on the subspace)."""
    t = torch.as_tensor(np.asarray(theta, dtype=np.float64))
    return tuple(w.numpy() for w in pseudo_weights(t, D, NAMES))


def subspace_report(W1, W2, W3) -> dict[str, object]:
    """θ `[19]`, the residual norms ‖W − Σ θ_k B_k‖_F per matrix, and the in-subspace fractions
    ρ = Σ D θ_k² / ‖W‖_F² per matrix and overall (1: exactly in the subspace; NaN for W = 0)."""
    D = int(W3.shape[1])
    Ws = _weights(W1, W2, W3, D)
    theta = project(*Ws)
    proj = embed(theta, D)
    residual = [float(np.linalg.norm(w - p)) for w, p in zip(Ws, proj, strict=True)]
    norms2 = [float(np.sum(w * w)) for w in Ws]
    inside = [float(np.sum(p * p)) for p in proj]
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = [i / n if n > 0 else float("nan") for i, n in zip(inside, norms2, strict=True)]
        total = sum(inside) / sum(norms2) if sum(norms2) > 0 else float("nan")
    return {"theta": theta, "names": NAMES, "residual": residual, "rho": rho, "rho_total": total}
