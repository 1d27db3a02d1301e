"""Tests of fastattn.theory.zhang2025 against independent computations.

Every check recomputes the quantity another way: numerical ODE integration, direct evaluation of the
closed-form population loss, numerical minimisation, torch autograd, or Monte-Carlo.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import torch
from scipy.integrate import solve_ivp
from scipy.optimize import minimize

from fastattn.theory import zhang2025 as z

LAM4 = np.array([0.4, 0.3, 0.2, 0.1])


# ----------------------------------------------------------------------------- independent helpers


def pop_loss(gamma: np.ndarray, cov: np.ndarray, inv_n: float) -> float:
    """L(Γ) = tr Λ − 2 tr(Γ Λ²) + tr(Γᵀ B Γ Λ), B = Λ² + inv_n (Λ + tr Λ I) Λ."""
    b = cov @ cov + inv_n * (cov + np.trace(cov) * np.eye(len(cov))) @ cov
    return float(
        np.trace(cov) - 2 * np.trace(gamma @ cov @ cov) + np.trace(gamma.T @ b @ gamma @ cov)
    )


def pop_g(gamma: np.ndarray, cov: np.ndarray, inv_n: float) -> np.ndarray:
    """G = −½ ∂L/∂Γ = Λ² − B Γ Λ (by differentiating pop_loss)."""
    b = cov @ cov + inv_n * (cov + np.trace(cov) * np.eye(len(cov))) @ cov
    return cov @ cov - b @ gamma @ cov


def random_rotation(dim: int, seed: int) -> np.ndarray:
    q, r = np.linalg.qr(np.random.default_rng(seed).standard_normal((dim, dim)))
    return q * np.sign(np.diag(r))


def cov_from(lam: np.ndarray, e: np.ndarray) -> np.ndarray:
    return (e * lam) @ e.T


# ----------------------------------------------------------------------------- E(1/N), moments


@pytest.mark.parametrize("n_max", [1, 2, 7, 31, 100])
def test_expected_inv_n_uniform_exact(n_max: int) -> None:
    exact = sum(Fraction(1, n) for n in range(1, n_max + 1)) / n_max
    assert z.expected_inv_n_uniform(n_max) == pytest.approx(float(exact), rel=1e-14)


def test_b_eigenvalues_match_monte_carlo_with_random_context_length() -> None:
    """E(Λ̂²) over x ~ N(0, Λ) and N ~ U{1..n_max} has eigenvalues a_d with inv_n = E(1/N)."""
    rng = np.random.default_rng(0)
    lam, n_max, n_seq = np.array([0.5, 0.3, 0.2]), 6, 200_000
    ns = rng.integers(1, n_max + 1, size=n_seq)
    acc = np.zeros((3, 3))
    for n in range(1, n_max + 1):
        k = int(np.sum(ns == n))
        x = rng.standard_normal((k, n, 3)) * np.sqrt(lam)
        lh = np.einsum("knd,kne->kde", x, x) / n
        acc += np.einsum("kde,kef->df", lh, lh)
    mc = acc / n_seq
    a = z.b_eigenvalues(lam, z.expected_inv_n_uniform(n_max))
    np.testing.assert_allclose(np.diag(mc), a, rtol=0.02)
    assert np.max(np.abs(mc - np.diag(np.diag(mc)))) < 0.01 * a.max()


def test_rejects_ascending_eigenvalues() -> None:
    with pytest.raises(ValueError):
        z.fixed_point_losses(LAM4[::-1], 1 / 31)


# ----------------------------------------------------------------------------- white merged model


@pytest.mark.parametrize(
    ("dim", "c", "inv_n", "s0"),
    [(4, 1.0, 1 / 31, 1e-6), (4, 0.25, 1 / 31, 1e-4), (3, 2.0, 0.1, 1e-8)],
)
def test_white_s_matches_ode_48(dim: int, c: float, inv_n: float, s0: float) -> None:
    cov = c * np.eye(dim)
    b = cov @ cov + inv_n * (cov + np.trace(cov) * np.eye(dim)) @ cov
    ezz = np.kron(cov, b)  # E(z zᵀ) = Λ ⊗ B (Eq. 44); white → multiple of identity
    alpha = ezz[0, 0]
    assert np.allclose(ezz, alpha * np.eye(dim * dim))
    gamma = np.linalg.norm(cov @ cov)  # ‖vec Λ²‖ (Eq. 43)
    assert z.white_merged_alpha_gamma(dim, inv_n, c) == pytest.approx((alpha, gamma), rel=1e-14)
    t_end = 3 * math.log(1 / s0) / (2 * gamma)
    t = np.linspace(0, t_end, 200)
    sol = solve_ivp(
        lambda _t, s: 2 * s * (gamma - alpha * s),
        (0, t_end),
        [s0],
        t_eval=t,
        rtol=1e-12,
        atol=1e-15,
        method="DOP853",
    )
    np.testing.assert_allclose(
        z.white_merged_s(t, s0, dim, inv_n, c), sol.y[0], rtol=1e-7, atol=1e-12
    )


@pytest.mark.parametrize(("c", "n_heads"), [(1.0, 3), (0.25, 5)])
def test_white_loss_matches_full_merged_gradient_flow(c: float, n_heads: int) -> None:
    """Integrate τ v̇_i = ⟨U_i, G⟩, τ U̇_i = v_i G from aligned balanced init; compare Eq. 10/51."""
    dim, inv_n, s0 = 4, 1 / 31, 1e-6
    cov = c * np.eye(dim)
    u = np.random.default_rng(1).standard_normal(n_heads)
    u /= np.linalg.norm(u)
    v0 = math.sqrt(s0) * u
    big_u0 = v0[:, None, None] * np.eye(dim) / math.sqrt(dim)  # W_1 = w_2 mᵀ, m = vec I/√D

    def rhs(_t: float, y: np.ndarray) -> np.ndarray:
        v, uu = y[:n_heads], y[n_heads:].reshape(n_heads, dim, dim)
        g = pop_g(np.einsum("h,hij->ij", v, uu), cov, inv_n)
        return np.concatenate([np.einsum("hij,ij->h", uu, g), (v[:, None, None] * g).ravel()])

    _, gamma = z.white_merged_alpha_gamma(dim, inv_n, c)
    t = np.linspace(0, 2.5 * math.log(1 / s0) / (2 * gamma), 120)
    sol = solve_ivp(
        rhs,
        (0, t[-1]),
        np.concatenate([v0, big_u0.ravel()]),
        t_eval=t,
        rtol=1e-11,
        atol=1e-14,
        method="DOP853",
    )
    sig = z.white_merged_gamma(t, s0, dim, inv_n, c)
    loss = z.white_merged_loss(t, s0, dim, inv_n, c)
    for k in range(t.size):
        y = sol.y[:, k]
        gam = np.einsum("h,hij->ij", y[:n_heads], y[n_heads:].reshape(n_heads, dim, dim))
        np.testing.assert_allclose(gam, sig[k] * np.eye(dim), atol=1e-7)
        assert loss[k] == pytest.approx(pop_loss(gam, cov, inv_n), abs=1e-7)
    assert loss[0] == pytest.approx(dim * c, rel=1e-5)
    # converged: Γ* = (Λ + inv_n (Λ + tr Λ I))⁻¹
    assert sig[-1] == pytest.approx(1 / (c * (1 + (1 + dim) * inv_n)), rel=1e-6)


def test_merged_plateau_time_is_the_log_init_slope_of_the_true_flow() -> None:
    """t_half(s0) − merged_plateau_time(s0) is s0-independent for the true merged flow (Eq. 52)."""
    lam, inv_n, n_heads, dim = LAM4, 1 / 31, 3, 4
    cov = cov_from(lam, random_rotation(dim, 3))
    rng = np.random.default_rng(4)
    a0, b0 = rng.standard_normal(n_heads), rng.standard_normal((n_heads, dim, dim))
    l0, lstar = np.trace(cov), z.minimum_loss(lam, inv_n)

    def t_half(eps: float) -> tuple[float, float]:
        def rhs(_t: float, y: np.ndarray) -> np.ndarray:
            v, uu = y[:n_heads], y[n_heads:].reshape(n_heads, dim, dim)
            g = pop_g(np.einsum("h,hij->ij", v, uu), cov, inv_n)
            return np.concatenate([np.einsum("hij,ij->h", uu, g), (v[:, None, None] * g).ravel()])

        def half(_t: float, y: np.ndarray) -> float:
            v, uu = y[:n_heads], y[n_heads:].reshape(n_heads, dim, dim)
            return pop_loss(np.einsum("h,hij->ij", v, uu), cov, inv_n) - 0.5 * (l0 + lstar)

        half.terminal = True  # type: ignore[attr-defined]
        y0 = eps * np.concatenate([a0, b0.ravel()])
        sol = solve_ivp(rhs, (0, 1e4), y0, events=half, rtol=1e-10, atol=1e-30, method="DOP853")
        return float(sol.t_events[0][0]), float(eps**2 * a0 @ a0)

    (t1, s1), (t2, s2) = t_half(1e-4), t_half(1e-8)
    p1, p2 = z.merged_plateau_time(lam, s1), z.merged_plateau_time(lam, s2)
    assert (t2 - t1) == pytest.approx(p2 - p1, rel=2e-3)
    gamma_direct = np.linalg.norm(cov @ cov)
    assert p1 == pytest.approx(math.log(1 / s1) / (2 * gamma_direct), rel=1e-12)


# ----------------------------------------------------------------------------- fixed points


def gamma_eq18(lam: np.ndarray, e: np.ndarray, subset: list[int], inv_n: float) -> np.ndarray:
    tr = lam.sum()
    return sum(
        (1 / lam[d]) / (1 + (1 + tr / lam[d]) * inv_n) * np.outer(e[:, d], e[:, d]) for d in subset
    ) + np.zeros((len(lam), len(lam)))


@pytest.mark.parametrize("inv_n", [1 / 31, z.expected_inv_n_uniform(31), 0.0, 0.5])
def test_fixed_point_levels_equal_loss_at_eq18_gamma(inv_n: float) -> None:
    rng = np.random.default_rng(5)
    for dim, seed in [(4, 0), (6, 1)]:
        lam = np.sort(rng.uniform(0.05, 1.0, dim))[::-1]
        e = random_rotation(dim, seed)
        cov = cov_from(lam, e)
        levels = z.fixed_point_losses(lam, inv_n)
        for m in range(dim + 1):
            assert levels[m] == pytest.approx(
                pop_loss(gamma_eq18(lam, e, list(range(m)), inv_n), cov, inv_n), abs=1e-12
            )
        for _ in range(5):
            subset = sorted(rng.choice(dim, size=rng.integers(0, dim + 1), replace=False).tolist())
            direct = pop_loss(gamma_eq18(lam, e, subset, inv_n), cov, inv_n)
            assert z.fixed_point_loss(lam, subset, inv_n) == pytest.approx(direct, abs=1e-12)
            np.testing.assert_allclose(
                z.fixed_point_gamma(lam, e, subset, inv_n),
                gamma_eq18(lam, e, subset, inv_n),
                atol=1e-12,
            )
            # M(S) is the best Γ restricted to span{e_d e_dᵀ : d ∈ S}: perturbing the gains raises L
            if subset:
                g = gamma_eq18(lam, e, subset, inv_n)
                d = subset[0]
                for h in (1e-3, -1e-3):
                    pert = g + h * np.outer(e[:, d], e[:, d])
                    assert pop_loss(pert, cov, inv_n) > direct


def test_spec_table_section6() -> None:
    """Regression against the spec §6 table (computed independently by the spec author)."""
    inv31 = 1 / 31
    d8 = 1 / np.arange(1, 9)
    cases = [
        (LAM4, inv31, [1.00000, 0.64058, 0.37737, 0.20980, 0.13600]),
        (LAM4, 0.0, [1, 0.6, 0.3, 0.1, 0]),
        (
            d8 / d8.sum(),
            inv31,
            [1.00000, 0.67146, 0.51912, 0.42444, 0.35792, 0.30788, 0.26853, 0.23660, 0.21007],
        ),
        (
            np.arange(8, 0, -1) / 36,
            inv31,
            [1.00000, 0.81126, 0.64898, 0.51301, 0.40318, 0.31917, 0.26045, 0.22601, 0.21335],
        ),
        (np.array([0.35, 0.35, 0.15, 0.15]), inv31, [1.00000, 0.68873, 0.37746, 0.25720, 0.13694]),
        (LAM4, z.expected_inv_n_uniform(31), [1.00000, 0.72503, 0.53308, 0.42069, 0.37952]),
        (np.full(4, 0.25), inv31, [1, 0.78472, 0.56944, 0.35417, 0.13889]),
    ]
    for lam, inv_n, table in cases:
        np.testing.assert_allclose(z.fixed_point_losses(lam, inv_n), table, atol=6e-6)
    for dim, lstar in zip([8, 16, 32, 64], [0.06453, 0.11012, 0.17711, 0.25933], strict=True):
        lam = 1 / np.arange(1, dim + 1)
        assert z.minimum_loss(lam / lam.sum(), 1 / 127) == pytest.approx(lstar, abs=6e-6)
    a = z.b_eigenvalues(LAM4, inv31)
    np.testing.assert_allclose(a, [0.17806, 0.10258, 0.04774, 0.01355], atol=6e-6)
    np.testing.assert_allclose((LAM4 / a) ** (1 / 3), [1.3097, 1.4301, 1.6120, 1.9470], atol=6e-5)


@pytest.mark.parametrize("inv_n", [1 / 31, 0.2])
def test_optimal_gamma_minimises_population_loss(inv_n: float) -> None:
    dim = 4
    e = random_rotation(dim, 7)
    cov = cov_from(LAM4, e)

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        g = x.reshape(dim, dim)
        return pop_loss(g, cov, inv_n), (-2 * pop_g(g, cov, inv_n)).ravel()

    res = minimize(
        fun,
        np.zeros(dim * dim),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-13, "ftol": 1e-16, "maxiter": 10_000},
    )
    gstar = z.optimal_gamma(LAM4, e, inv_n)
    np.testing.assert_allclose(gstar, res.x.reshape(dim, dim), atol=1e-6)
    assert z.minimum_loss(LAM4, inv_n) == pytest.approx(res.fun, abs=1e-10)
    # (Λ + inv_n (Λ + tr Λ I))⁻¹ literally
    np.testing.assert_allclose(
        gstar, np.linalg.inv(cov + inv_n * (cov + np.trace(cov) * np.eye(dim))), atol=1e-12
    )


def test_pcr_gamma_limit_is_projection() -> None:
    dim, m = 5, 3
    lam = np.array([1.0, 0.7, 0.4, 0.2, 0.1])
    e = random_rotation(dim, 8)
    cov = cov_from(lam, e)
    w, vec = np.linalg.eigh(cov)  # independent eigendecomposition (ascending)
    proj = vec[:, -m:] @ vec[:, -m:].T
    errs = []
    for n in [10, 100, 1000, 10_000]:
        errs.append(np.linalg.norm(cov @ z.pcr_gamma(lam, e, m, 1 / n) - proj))
    assert all(b < a / 5 for a, b in itertools.pairwise(errs))
    np.testing.assert_allclose(cov @ z.pcr_gamma(lam, e, m, 0.0), proj, atol=1e-12)
    # Monte-Carlo: with N large, the m-PCR predictor ŷ = βᵀ Γ x_q ≈ wᵀ P_m x_q
    rng = np.random.default_rng(9)
    n, n_seq = 4000, 200
    x = rng.standard_normal((n_seq, n, dim)) * np.sqrt(w) @ vec.T
    wt = rng.standard_normal((n_seq, dim))
    beta = np.einsum("snd,sn->sd", x, np.einsum("snd,sd->sn", x, wt)) / n
    xq = rng.standard_normal((n_seq, dim))
    pred = np.einsum("sd,de,se->s", beta, z.pcr_gamma(lam, e, m, 1 / n), xq)
    target = np.einsum("sd,de,se->s", wt, proj, xq)
    assert np.sqrt(np.mean((pred - target) ** 2)) < 0.1 * np.sqrt(np.mean(target**2))


# ----------------------------------------------------------------------------- drop ODE (Eq. 21/71)

DROP_CASES = [(0.4, 1 / 31, 1e-2), (0.1, 1 / 31, 5e-2), (0.3, 0.0, 1e-3), (0.2, 0.13, 3.0)]


@pytest.mark.parametrize(("lam", "inv_n", "v0"), DROP_CASES)
def test_closed_form_eq71_matches_numerical_ode(lam: float, inv_n: float, v0: float) -> None:
    tr = 1.0
    a = lam**2 * (1 + (1 + tr / lam) * inv_n)
    assert z.drop_coefficient(lam, tr, inv_n) == pytest.approx(a, rel=1e-15)
    vstar = (lam / a) ** (1 / 3)
    t_scale = 1 / (lam**2 * min(v0, vstar))
    t = np.concatenate([[0.0], np.geomspace(1e-3 * t_scale, 5 * t_scale, 60)])
    sol = solve_ivp(
        lambda _t, v: lam**2 * v**2 - lam * a * v**5,
        (0, t[-1]),
        [v0],
        t_eval=t,
        method="DOP853",
        rtol=1e-13,
        atol=1e-16,
    )
    v_ivp = sol.y[0]
    v_cf = z.drop_trajectory(t, v0, lam, a)
    np.testing.assert_allclose(v_cf, v_ivp, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(z.drop_ode_solve(t, v0, lam, a), v_ivp, rtol=1e-8, atol=1e-10)
    # forward direction: the closed-form time of the numerically integrated v is t
    mask = np.abs(v_ivp - vstar) > 1e-6 * vstar
    np.testing.assert_allclose(
        z.drop_time(v_ivp[mask], v0, lam, a), t[mask], rtol=1e-8, atol=1e-8 * t_scale
    )
    np.testing.assert_allclose(
        z.drop_ode_rhs(v_ivp, lam, a), lam**2 * v_ivp**2 - lam * a * v_ivp**5
    )
    assert z.drop_stable_value(lam, a) == pytest.approx(vstar, rel=1e-14)


def test_eq71_derivative_is_corrected_integrand() -> None:
    lam, a, v0 = 0.3, z.drop_coefficient(0.3, 1.0, 1 / 31), 1e-2
    v = np.linspace(0.05, 1.2, 20)
    h = 1e-6
    dt = (z.drop_time(v + h, v0, lam, a) - z.drop_time(v - h, v0, lam, a)) / (2 * h)
    np.testing.assert_allclose(dt, 1 / (lam**2 * v**2 - lam * a * v**5), rtol=1e-6)


def test_drop_trajectory_far_past_the_drop_returns_stable_value() -> None:
    lam, a = 0.4, z.drop_coefficient(0.4, 1.0, 1 / 31)
    v = z.drop_trajectory(np.array([1e6, 1e9]), 1e-2, lam, a)
    np.testing.assert_allclose(v, z.drop_stable_value(lam, a), rtol=1e-15)


@pytest.mark.parametrize("lam", [0.4, 0.1])
def test_plateau_duration_eq72_is_small_init_limit(lam: float) -> None:
    a = z.drop_coefficient(lam, 1.0, 1 / 31)
    vstar = z.drop_stable_value(lam, a)
    for v0, tol in [(1e-3, 0.01), (1e-5, 1e-4)]:
        t_mid = float(z.drop_time(0.5 * vstar, v0, lam, a))
        assert t_mid / z.plateau_duration(lam, v0) == pytest.approx(1.0, abs=tol)


# ----------------------------------------------------------------------------- ansatz (Eq. 20)


def torch_grads(v: np.ndarray, k: np.ndarray, q: np.ndarray, cov: np.ndarray, inv_n: float):
    tv = torch.tensor(v, dtype=torch.float64, requires_grad=True)
    tk = torch.tensor(k, dtype=torch.float64, requires_grad=True)
    tq = torch.tensor(q, dtype=torch.float64, requires_grad=True)
    c = torch.tensor(cov, dtype=torch.float64)
    eye = torch.eye(len(cov), dtype=torch.float64)
    b = c @ c + inv_n * (c + torch.trace(c) * eye) @ c
    gam = torch.einsum("h,hrd,hre->de", tv, tk, tq)  # Γ = Σ_i v_i K_iᵀ Q_i
    loss = torch.trace(c) - 2 * torch.trace(gam @ c @ c) + torch.trace(gam.T @ b @ gam @ c)
    loss.backward()
    return float(loss.detach()), tv.grad.numpy(), tk.grad.numpy(), tq.grad.numpy()


@pytest.mark.parametrize("inv_n", [1 / 31, 0.0])
def test_ansatz_weights_gamma_loss_and_stationarity(inv_n: float) -> None:
    dim, n_heads = 4, 6
    e = random_rotation(dim, 11)
    cov = cov_from(LAM4, e)
    a = z.b_eigenvalues(LAM4, inv_n)
    levels = z.fixed_point_losses(LAM4, inv_n)
    for m in range(dim + 1):
        v, k, q = z.separate_ansatz_weights(LAM4, e, m, inv_n, v_next=0.0, n_heads=n_heads)
        assert v.shape == (n_heads,) and k.shape == (n_heads, 1, dim) and q.shape == k.shape
        gam = np.einsum("h,hrd,hre->de", v, k, q)
        np.testing.assert_allclose(gam, gamma_eq18(LAM4, e, list(range(m)), inv_n), atol=1e-12)
        loss, gv, gk, gq = torch_grads(v, k, q, cov, inv_n)
        assert loss == pytest.approx(levels[m], abs=1e-12)
        assert max(np.abs(gv).max(), np.abs(gk).max(), np.abs(gq).max()) < 1e-12
        # balanced norms |v_i| = ‖k_i‖ = ‖q_i‖
        np.testing.assert_allclose(np.linalg.norm(k[:, 0], axis=1), np.abs(v), atol=1e-14)
        if m == dim:
            continue
        # mid-drop: not stationary; the escaping head follows Eq. 21 exactly
        vstar = z.drop_stable_value(LAM4[m], a[m])
        for vn in (0.1 * vstar, 0.7 * vstar):
            v, k, q = z.separate_ansatz_weights(LAM4, e, m, inv_n, v_next=vn, n_heads=n_heads)
            loss, gv, gk, gq = torch_grads(v, k, q, cov, inv_n)
            rate = float(z.drop_ode_rhs(vn, LAM4[m], a[m]))
            assert -0.5 * gv[m] == pytest.approx(rate, rel=1e-10)
            np.testing.assert_allclose(-0.5 * gk[m, 0], rate * e[:, m], atol=1e-12)
            np.testing.assert_allclose(-0.5 * gq[m, 0], rate * e[:, m], atol=1e-12)
            others = [i for i in range(n_heads) if i != m]
            assert np.abs(gv[others]).max() < 1e-12 and np.abs(gk[others]).max() < 1e-12
            assert loss == pytest.approx(
                float(z.drop_loss(vn, levels[m], LAM4[m], a[m])), abs=1e-12
            )
        # v_next = v* lands on M_{m+1}
        v, k, q = z.separate_ansatz_weights(LAM4, e, m, inv_n, v_next=vstar, n_heads=n_heads)
        loss, gv, gk, gq = torch_grads(v, k, q, cov, inv_n)
        assert loss == pytest.approx(levels[m + 1], abs=1e-12)
        assert float(z.drop_loss(vstar, levels[m], LAM4[m], a[m])) == pytest.approx(levels[m + 1])
        assert np.abs(gv).max() < 1e-12


def test_perturbed_ansatz_is_not_stationary() -> None:
    """Guard: the stationarity check above can fail."""
    e = random_rotation(4, 12)
    v, k, q = z.separate_ansatz_weights(LAM4, e, 2, 1 / 31)
    v[0] *= 1.05
    _, gv, _, _ = torch_grads(v, k, q, cov_from(LAM4, e), 1 / 31)
    assert np.abs(gv).max() > 1e-3


# ----------------------------------------------------------------------------- rank-R rule


def test_rank_r_rule() -> None:
    assert z.conspicuous_plateau_ms(8, 1) == list(range(8))
    assert z.conspicuous_plateau_ms(8, 2) == [0, 2, 4, 6]
    assert z.conspicuous_plateau_ms(8, 4) == [0, 4]
    assert z.conspicuous_plateau_ms(8, 8) == [0]
    for dim in range(1, 13):
        for rank in range(1, dim + 1):
            ms = z.conspicuous_plateau_ms(dim, rank)
            assert all(m % rank == 0 and 0 <= m < dim for m in ms)
            assert z.n_conspicuous_plateaus(dim, rank) == -(-dim // rank)
