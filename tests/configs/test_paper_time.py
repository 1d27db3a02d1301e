"""Every model family declares its paper's time (`ModelCard.time`), and the declared conversion is
right: the record's flow dθ/dt = −½∇L, sped up by the declared divisor, is the flow each paper
prints, in the paper's own time (its loss, its rate, its parameters). The printed flows are typed
here from the papers (or from `fastattn.theory`, which types them as printed), independently of
the objectives whose gradients they are compared with."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fastattn.configs import MODEL_CARDS, PaperTime
from fastattn.models import MODELS


def test_every_model_family_declares_its_papers_time():
    missing = [kind for kind in MODELS if kind not in MODEL_CARDS
               or not isinstance(MODEL_CARDS[kind].time, PaperTime)]
    assert not missing, f"model families without a declared paper time (ModelCard.time): {missing}"


def _zhang(rng):
    """Eq. 5, τ dθ/dt = −½ ∂L/∂θ (τ = 1), of the merged model at D = 1 (Γ = γ = Σ_h v_h u_h) on
    x ~ N(0, λ), w ~ N(0, 1): L = E(w x_q − γ λ̂ w x_q)² = λ(1 − 2γλ + γ²λ²(1 + 2/N)), as
    λ̂ = (1/N) Σ x_n² has E λ̂² = λ²(1 + 2/N)."""
    from fastattn.models import MergedKQ
    from fastattn.population import objective_for
    from fastattn.tasks import LinearRegression

    lam, n = 1.7, 5
    theta = rng.normal(0, 0.7, 4)
    v, u = theta[:2], theta[2:]
    dl_dgamma = lam * (-2 * lam + 2 * (v @ u) * lam**2 * (1 + 2 / n))
    printed = -0.5 * np.concatenate([u * dl_dgamma, v * dl_dgamma])
    obj = objective_for(LinearRegression(dim=1, context=n, spectrum=[lam]), MergedKQ(dim=1, heads=2))
    return "merged", {"dim": 1}, {}, obj.loss_grad(theta)[1], printed


def _sander(rng):
    """Prop. 5: the gradient flow (ȧ, ḃ, ṗ) = −∇(pab − 1)² of DIAG at d = H = 1, T_max = 2 with
    P_{1,1} = 0, where Eq. 3's loss is (pab − 1)² (flat: A, B, then P's row T = 2, (P_{1,1}, p))."""
    from fastattn.models import MODELS
    from fastattn.population import objective_for
    from fastattn.tasks import get_task

    a, b, p = rng.uniform(0.3, 1.5, 3) * rng.choice([-1, 1], 3)
    r = p * a * b - 1
    printed = np.array([-2 * r * p * b, -2 * r * p * a, 0.0, -2 * r * a * b, 0.0, 0.0])
    cls, config = MODELS["diag"]
    obj = objective_for(get_task("autoregressive")(dim=1, context=2, context_dist="unitary"),
                        cls(config(dim=1, heads=1, context=2)))
    return "diag", {"dim": 1}, {}, obj.loss_grad(np.array([a, b, 0.0, p, 0.0, 0.0]))[1], printed


def _he(rng):
    """§3.4's printed GD on L̃ per unit of the paper's step η (μ_{t+1} − μ_t)/η, (ω_{t+1} − ω_t)/η:
    2(1 − (1 + (1+σ²)d/L)⟨μ,ω⟩)·(ω, μ) − 2(1+σ²)/L·(⟨μ,1⟩1 + Σ_{k≥2} dᵏ/k! ⟨μ,ωᵏ⟩ωᵏ,
    Σ_{k≥2} dᵏ/(k−1)! ⟨μ,ωᵏ⟩ μ⊙ωᵏ⁻¹), the series summed to k = 60."""
    from fastattn.population.kernel_regressors import ApproxLossObjective

    heads, d, big_l, s2 = 3, 5, 40.0, 0.1
    w, m = rng.normal(0, 0.3, heads), rng.normal(0, 0.5, heads)
    c, match = (1 + s2) / big_l, 1 - (1 + (1 + s2) * d / big_l) * (m @ w)
    ks = range(2, 61)
    mu_dot = 2 * match * w - 2 * c * (m.sum() * np.ones(heads) + sum(
        d**k / math.factorial(k) * (m @ w**k) * w**k for k in ks))
    omega_dot = 2 * match * m - 2 * c * sum(d**k / math.factorial(k - 1) * (m @ w**k) * m * w**(k - 1)
                                            for k in ks)
    grad = ApproxLossObjective(heads, d, big_l, s2).loss_grad(np.concatenate([w, m]))[1]
    return "kernel_regressors", {"dim": d}, {}, grad, np.concatenate([omega_dot, mu_dot])


def _musat(rng):
    """App. B.5's ODE (α̇, β̇, γ̇) = −∇L of the three-parameter model, as printed."""
    from fastattn.population.induction import InductionThreeParamObjective
    from fastattn.theory.musat2025 import three_param_rhs

    n, theta = 6, rng.normal(0, 0.8, 3)
    grad = InductionThreeParamObjective(n).loss_grad(theta)[1]
    return "three_param", {"dim": 2 * n, "reduction": "sum"}, {}, grad, np.array(
        three_param_rhs(*theta, n))


def _musat_full(rng):
    """The full weights W = Eθ on θ̇ = −∇_θ L19 of the pseudo-parameters θ = EᵀW/D (App. B.5)."""
    from fastattn.population.induction import InductionGram19Objective
    from fastattn.population.induction_full import DisentangledFullObjective

    dim, n = 4, 2
    theta = rng.normal(0, 0.3, 19)
    full = DisentangledFullObjective(dim, n)
    grad_w = full.loss_grad(full.E @ theta)[1]
    printed = -InductionGram19Objective.orthonormal(n).loss_grad(theta)[1]
    return "disentangled", {"dim": dim, "reduction": "sum"}, {}, full.E.T @ grad_w / dim, printed


def _mainali(rng):
    """Eqs. 9–10 in epochs, τ_α ṗ_α = q_α(1 − p_α q_α s^∞_α) with 1/τ_α = ηP s_α²
    (`theory.mainali2025.paper_ode_rhs`), near the origin, where Eq. 14 is the aligned loss."""
    from fastattn.population import WishartAlignedObjective
    from fastattn.theory.mainali2025 import paper_ode_rhs

    s, n, lr, tasks = np.array([2.0, 1.0, 0.5]), 8, 0.01, 64
    p, q = rng.uniform(1e-5, 1e-4, (2, 3))
    grad = WishartAlignedObjective(s, n).loss_grad(np.concatenate([p, q]))[1]
    return "linear_transformer", {"tasks": tasks}, {"lr": lr}, grad, np.concatenate(
        paper_ode_rhs(p, q, s, n, lr * tasks))


PRINTED_FLOWS = {"zhang2025": _zhang, "sander2024": _sander, "he2025": _he, "musat2025": _musat,
                 "musat2025 full weights": _musat_full, "mainali2025": _mainali}


@pytest.mark.parametrize("paper", PRINTED_FLOWS)
def test_the_declared_time_turns_the_record_flow_into_the_papers_printed_flow(paper, rng):
    kind, task, train, grad, printed = PRINTED_FLOWS[paper](rng)
    divisor = MODEL_CARDS[kind].time.divisor(task, train)
    # dθ/d(paper time) = divisor · dθ/dt, and the record's flow is dθ/dt = −½∇L
    np.testing.assert_allclose(divisor * -0.5 * grad, printed, rtol=1e-6,
                               atol=1e-12 * np.abs(printed).max())


#: families checked above, and those that train on the same loss, so declare the same time
CHECKED = {"merged": ("merged_full", "separate", "cubic_mlp", "softmax_merged", "softmax_separate"),
           "diag": ("pe_only", "aug", "aug_layers", "aug_transformer", "non_aug", "eq6"),
           "kernel_regressors": ("multihead_softmax", "multihead_linear", "multioutput_softmax",
                                 "multilayer_softmax"),
           "three_param": ("gram19",), "disentangled": (), "linear_transformer": ()}
#: token models whose papers print no flow: they count optimiser steps (the declared time's why)
UNCHECKED = ("transformer", "standard_transformer")


def test_families_on_a_checked_loss_declare_its_time_and_every_family_is_placed():
    placed = [*CHECKED, *(k for same in CHECKED.values() for k in same), *UNCHECKED]
    assert sorted(placed) == sorted(MODELS), "place a new family in CHECKED (with a printed flow of " \
        "its paper in PRINTED_FLOWS, or beside a family on its loss) or in UNCHECKED"
    for ref, same in CHECKED.items():
        for kind in same:
            assert MODEL_CARDS[kind].time == MODEL_CARDS[ref].time, kind


@pytest.mark.parametrize(("task", "train", "label"), [
    ({"dim": 16, "reduction": "sum"}, {}, "paper time t/(2D) = t/32"),
    ({"dim": 16, "reduction": "mean"}, {}, "paper time t/(2D²) = t/512"),
    ({}, {}, "paper time t/(2D)")])
def test_a_label_prints_the_formula_and_the_runs_divisor(task, train, label):
    assert MODEL_CARDS["disentangled"].time.describe(task, train) == label
