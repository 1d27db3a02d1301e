"""The reduced (ω, μ) flow on He et al.'s approximate loss through the shared integrators."""

import numpy as np

from fastattn.population import integrate
from fastattn.population.kernel_regressors import ApproxLossObjective
from fastattn.theory import he2025 as th


def test_reduced_flow_reaches_the_solution_manifold():
    d, L, s2 = 5, 40, 0.1
    obj = ApproxLossObjective(2, d, L, s2)
    res = integrate(obj, np.array([1e-3, -1e-3, 1e-3, -1e-3]), method="rk45", t_end=200.0,
                    rtol=1e-8, atol=1e-10)
    w, m = res.final_params[:2], res.final_params[2:]
    gamma = float(np.abs(w).mean())
    # Stage I: sign matching and zero-sum OV; Stage II: homogeneous |ω| and μ on μ_γ
    assert np.all(np.sign(w) == np.sign(m)) and abs(m.sum()) < 1e-6
    assert abs(abs(w[0]) - abs(w[1])) < 1e-6
    # μ tracks μ_γ while γ drifts slowly down (t = 200: γ ≈ 0.27; t = 2·10⁴: γ ≈ 0.124)
    assert abs(m[0] / float(th.mu_gamma(gamma, d, L, s2)) - 1) < 0.01
    assert abs(float(m @ w) / th.eta_star(d, L, s2) - 1) < 0.01
