"""E10: non-isotropic covariates x ~ N(0, Σ), Σ = Toeplitz(0.5) at d = 5 (spec §2.2, §5.6, §6 E10):
two-head softmax attention trained at L ∈ {20, 40, 80, 160}. Measured: the effective preconditioner
Γ = Σ_h μ_h A_h (M12) and its Frobenius cosine with Σ⁻¹, the OV last-entry ratio (M3), sign matching
and the Monte-Carlo risk. Theory: the risk-optimal linear preconditioner
Γ*(L) = L v ((n+1) v Σ + (v tr Σ + σ²) I)⁻¹ (`theory.he2025.optimal_preconditioner`) and its cosine
with Σ⁻¹, which rises to 1 with L (the text's "Ω ≈ Σ⁻¹, especially when L is large"); the exact
risks of preconditioned dGD with Γ*(L) and with the model's own Γ (`risk_linear`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn.analysis.patterns import pattern_metrics
from fastattn.analysis.risk import monte_carlo_risk
from fastattn.experiments.he2025.e13 import effective_preconditioner
from fastattn.experiments.he2025.settings import PAIR, SIGMA2, D, one_thread, task
from fastattn.experiments.recipe import Recipe, Run, RunSpec, preset_run
from fastattn.tasks.spectra import toeplitz_cov
from fastattn.theory import he2025 as th

#: the AR(1) covariance Λ_ij = ρ^|i−j| of spec §2.2 (the task option cov_rho)
RHO = 0.5
COV = toeplitz_cov(D, RHO)


def runs(quick: bool = False) -> list[RunSpec]:
    """H = 2, Adam (quick: L ∈ {20, 80}, 250 steps at lr 1e-2, batch 128; full: L ∈ {20, 40, 80,
    160}, 2·10⁴ steps at lr 2e-3, batch 256)."""
    lengths, steps, lr, batch = (((20, 80), 250, 1e-2, 128) if quick
                                 else ((20, 40, 80, 160), 20_000, 2e-3, 256))
    train = {"lr": lr, "steps": steps, "batch_size": batch, "n_records": 40, "n_snapshots": 2}
    return [preset_run(f"L{L}", *PAIR, group={"L": L},
                       task={"context": L, "cov_rho": RHO, "data_seed": L}, model={"init_seed": L},
                       train=train) for L in lengths]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Frobenius cosine ⟨a, b⟩ / (‖a‖ ‖b‖)."""
    return float(np.sum(a * b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def summarize(runs: list[Run], quick: bool = False) -> dict[str, Any]:
    n = 2000 if quick else 20_000
    inv = np.linalg.inv(COV)
    grid = np.unique(np.geomspace(10, 400, 30).round().astype(int))
    out: dict[str, Any] = {
        "cov": COV, "n_prompts": n, "L_grid": grid,
        "optimal_cosine_grid": [cosine(th.optimal_preconditioner(COV, int(L), SIGMA2, 1 / D), inv)
                                for L in grid], "models": {}}
    with one_thread():
        for run in runs:
            L = run.spec.group["L"]
            gamma = effective_preconditioner(run.model)
            best = th.optimal_preconditioner(COV, L, SIGMA2, 1 / D)
            m = pattern_metrics(run.model.extract_kq().detach().double().numpy(),
                                run.model.extract_ov().detach().double().numpy())
            r = monte_carlo_risk(run.model, task(context=L, cov_rho=RHO), n, seed=L + 1)
            out["models"][run.spec.label] = {
                "L": L, "Gamma": gamma, "cosine_to_inverse_cov": cosine(gamma, inv),
                "cosine_to_optimal": cosine(gamma, best),
                "optimal_cosine_to_inverse_cov": cosine(best, inv),
                "omega": m["omega"], "mu": m["mu"], "ov_last_ratio": m["ov_last_ratio"],
                "sign_match": m["sign_match"], "zero_sum": m["zero_sum"],
                "risk": r.mean, "risk_se": r.se,
                "linearised_closed_form": th.risk_linear(gamma, L, SIGMA2, cov=COV),
                "optimal_pdgd_closed_form": th.risk_linear(best, L, SIGMA2, cov=COV),
                "final_train_loss": run.traj.final_loss}
    by_L = sorted(out["models"].values(), key=lambda m: m["L"])
    # > 0: Γ is closer to Σ⁻¹ at the longest context than at the shortest
    out["cosine_longest_minus_shortest_L"] = (by_L[-1]["cosine_to_inverse_cov"]
                                              - by_L[0]["cosine_to_inverse_cov"])
    return out


def plot(runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    models = sorted(summary["models"].values(), key=lambda m: m["L"])
    lengths = [m["L"] for m in models]
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(9.5, 3.6), layout="constrained")
    ax0.plot(summary["L_grid"], summary["optimal_cosine_grid"], "k-", lw=1,
             label="optimal preconditioner Γ*(L) (closed form)")
    ax0.plot(lengths, [m["cosine_to_inverse_cov"] for m in models], "o", label="trained Γ = Σ μ_h A_h")
    ax0.set_xscale("log")
    ax0.set_xlabel("training context length L")
    ax0.set_ylabel("cosine(Γ, Σ⁻¹)")
    ax0.legend(fontsize=7)
    ax1.errorbar(lengths, [m["risk"] for m in models], yerr=[m["risk_se"] for m in models], fmt="o",
                 label="trained (MC)")
    ax1.plot(lengths, [m["linearised_closed_form"] for m in models], "x", color="k",
             label="its linearisation (closed form)")
    ax1.plot(lengths, [m["optimal_pdgd_closed_form"] for m in models], "k--", lw=1,
             label="preconditioned dGD with Γ*(L)")
    ax1.set_xscale("log")
    ax1.set_xlabel("context length L (train = test)")
    ax1.set_ylabel("MSE (σ² floor included)")
    ax1.legend(fontsize=7)
    return fig


RECIPE = Recipe("Σ = Toeplitz(0.5): the learned preconditioner Γ against Σ⁻¹ and the optimal Γ*(L); "
                "risks against preconditioned dGD.", runs, summarize, plot)
