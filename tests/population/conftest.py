"""Random moment and parameter generators for the population tests (drawn from the `rng` fixture of
tests/conftest.py: fresh per run, replayed with `--fastattn-seed N`)."""

from __future__ import annotations

import numpy as np

from fastattn.experiments import zhang2025
from fastattn.models.cubic_mlp import CubicMLPConfig
from fastattn.models.linear_attention import MergedConfig, SeparateConfig
from fastattn.population import Moments, n_params
from fastattn.theory.zhang2025 import minimum_loss


def random_moments(rng, D: int, *, s_identity: bool = False, inv_n: float | None = None,
                   noise: float | None = None) -> tuple[Moments, np.ndarray, np.ndarray]:
    """Λ = O diag(λ) Oᵀ with a random rotation O; S = Σ_w + μμᵀ. Returns (moments, mu, Sigma_w)."""
    rot, _ = np.linalg.qr(rng.standard_normal((D, D)))
    lam = rng.uniform(0.1, 1.0, D)
    cov = rot @ np.diag(lam) @ rot.T
    if s_identity:
        mu, sig = np.zeros(D), np.eye(D)
    else:
        A = rng.standard_normal((D, D))
        sig = A @ A.T / D + 0.1 * np.eye(D)
        mu = 0.5 * rng.standard_normal(D)
    m = Moments(
        cov=cov,
        w_second=sig + np.outer(mu, mu),
        noise=float(rng.uniform(0.0, 0.5)) if noise is None else noise,
        inv_n=float(1.0 / rng.integers(2, 40)) if inv_n is None else inv_n,
    )
    return m, mu, sig


def random_params(rng, config, scale: float = 0.5) -> np.ndarray:
    """Flat parameters `[P]` of the linear attention model `config`, N(0, scale²) per entry."""
    return scale * rng.standard_normal(n_params(config))


#: small configs of each linear attention family
LINEAR_CONFIGS = [
    MergedConfig(1, 2), MergedConfig(3, 4), MergedConfig(5, 3),
    CubicMLPConfig(3, 2), CubicMLPConfig(5, 4),
    SeparateConfig(1, 3, rank=1), SeparateConfig(3, 4, rank=2), SeparateConfig(5, 3, rank=3),
    SeparateConfig(5, 5, rank=1),
]


def fig3_setting(rng, init: float):
    """Zhang Fig. 3: separate, D=4, H=5, R=1, λ=(.4,.3,.2,.1) rotated, N=31, S=I, σ²=0."""
    task, model = zhang2025.fig3_setting(init, seed=int(rng.integers(2**31)))
    lstar = minimum_loss(task.eigvals, task.inv_context_mean())
    return model.config, task.moments(), model.to_flat(), lstar
