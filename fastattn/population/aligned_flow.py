"""The exact population flow of Mainali & Teixeira 2025's aligned model on a time grid in epochs
(spec §6.3–6.5, docs/mainali2025.md): `WishartAlignedObjective` integrated from (p0, q0), with the
per-mode products a = pq and their half times. The paper's approximate theory it is compared with is
`fastattn.theory.mainali2025`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from fastattn.population.api import integrate
from fastattn.population.options import FlowOptions
from fastattn.population.wishart_tasks import WishartAlignedObjective
from fastattn.theory.mainali2025 import _spectrum, half_times

__all__ = ["ExactFlow", "exact_flow"]


@dataclass(frozen=True)
class ExactFlow:
    """The exact aligned flow dθ/dt = −ηP ∇L (epochs) on a grid: t `[T]`, p, q, a = pq `[T, d]`,
    loss `[T]`, and its integration counts."""

    t: np.ndarray
    p: np.ndarray
    q: np.ndarray
    loss: np.ndarray
    n_evals: int

    @property
    def a(self) -> np.ndarray:
        return self.p * self.q

    def conserved(self) -> np.ndarray:
        """C = Σ_α (p_α² − q_α²) `[T]` (conserved by the exact flow)."""
        return (self.p**2 - self.q**2).sum(-1)

    def t_half(self) -> np.ndarray:
        """Per mode, the first time a_α reaches half its final value `[d]` (linear interpolation)."""
        return half_times(self.t, self.a)


def exact_flow(s: ArrayLike, n: float, eta_p: float, p0: ArrayLike, q0: ArrayLike, t: ArrayLike,
               omega: ArrayLike | None = None, rtol: float = 1e-10, atol: float = 1e-14,
               method: str = "rk45") -> ExactFlow:
    """Integrate the exact aligned flow (C++ `WishartAlignedObjective`) from (p0, q0) `[d]` and
    record at epochs t `[T]` (increasing, from 0). The core integrates dθ/dτ = −½∇L; τ = 2ηP t."""
    s = _spectrum(s)
    t = np.asarray(t, dtype=np.float64)
    obj = WishartAlignedObjective(s, n, omega)
    theta0 = np.concatenate([np.broadcast_to(p0, s.shape), np.broadcast_to(q0, s.shape)])
    tau = 2 * eta_p * t
    res = integrate(obj, theta0, FlowOptions(method=method, t_end=float(tau[-1]),
                                             record_times=tuple(tau), record_params=True,
                                             rtol=rtol, atol=atol))
    d = s.size
    params = np.asarray(res.params)
    return ExactFlow(t=np.asarray(res.times) / (2 * eta_p), p=params[:, :d], q=params[:, d:],
                     loss=np.asarray(res.loss), n_evals=int(res.n_evals))
