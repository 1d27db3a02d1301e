"""Named eigenvalue spectra of the token covariance Λ, as the papers and the sweeps use them."""

from __future__ import annotations

import numpy as np

SPECTRA = ("white", "identity", "linear", "inverse", "power:A", "repeated:K", "v1,v2,...")


def spectrum(spec: str, dim: int) -> np.ndarray:
    """Eigenvalues `[dim]`, descending. Named families are normalised to trace 1.

    - "white": all equal, Λ = I/D (the Zhang et al. code's white covariance).
    - "identity": all ones, Λ = I (not normalised: He et al. 2025's x ~ N(0, I_d)).
    - "linear": λ_d ∝ D + 1 − d (the Zhang et al. code's `gen_cov`; D=4 gives .4, .3, .2, .1).
    - "inverse": λ_d ∝ 1/d (the Zhang et al. captions of Figs. 4, 7, 12). "power:A": λ_d ∝ d^−A.
    - "repeated:K": linear spectrum over D/K distinct values, each repeated K times (Fig. 13 style).
    - "v1,v2,...": explicit eigenvalues, used as given (not normalised).
    """
    d = np.arange(1, dim + 1, dtype=np.float64)
    if spec == "identity":
        return np.ones(dim)
    if spec == "white":
        vals = np.ones(dim)
    elif spec == "linear":
        vals = dim + 1 - d
    elif spec == "inverse":
        vals = 1 / d
    elif spec.startswith("power:"):
        vals = d ** -float(spec.split(":", 1)[1])
    elif spec.startswith("repeated:"):
        k = int(spec.split(":", 1)[1])
        if k < 1 or dim % k:
            raise ValueError(f"spectrum 'repeated:K' needs K >= 1 dividing dim={dim}; got {spec!r}")
        vals = np.repeat(np.arange(dim // k, 0, -1, dtype=np.float64), k)
    else:
        try:
            vals = np.array([float(v) for v in spec.split(",")])
        except ValueError:
            raise ValueError(f"spectrum must be one of {SPECTRA}; got {spec!r}") from None
        if vals.shape != (dim,):
            raise ValueError(f"spectrum {spec!r} has {len(vals)} values; dim={dim} needs {dim}")
        return np.sort(vals)[::-1]
    return np.sort(vals / vals.sum())[::-1]


def toeplitz_cov(dim: int, rho: float = 0.5) -> np.ndarray:
    """The AR(1) covariance Σ_ij = ρ^|i−j| `[dim, dim]` (He et al. 2025's non-isotropic default,
    spec §2.2: ρ = 0.5). Positive definite for |ρ| < 1."""
    if not -1.0 < float(rho) < 1.0:
        raise ValueError(f"rho must be in (-1, 1) for a positive definite Toeplitz covariance; got {rho}")
    i = np.arange(dim)
    return float(rho) ** np.abs(i[:, None] - i[None, :])
