"""E11: multi-task in-context regression with H ∈ {1, 2, 3, 4} heads (spec §2.3, §5.8, §6 E11):
N = 2 tasks on d = 6, S_1 = {1,2,3,4}, S_2 = {3,4,5,6}, L = 40, σ² = 0.1, shared β ~ N(0, I/6).

Per trained model: the per-head circuits ω^(h) = diag(KQ_11^(h)) `[d]` and μ^(h) = diag(OV_22^(h))
`[N]` (M13), the off-pattern ratios, the per-task intercepts ι_n = Σ_h μ_hn and steps
g_n = Σ_h μ_hn ω^(h) (M14), and its Monte-Carlo risk (mean over tasks). Theory: the exact risk
(`theory.he2025.multitask_risk`) of each model's linearisation ŷ_n = (1/L) Σ y_ℓn x̄_ℓᵀ diag(g_n) x_q,
of the best N separate dGDs on the supports (the H ≥ 2N predictor), of the best single weighted dGD
(η* on S*, η^c on S^c: the H = 2 predictor), and the Bayes risk (pooled ridge, Monte Carlo)."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn import plots
from fastattn.analysis.risk import monte_carlo_risk
from fastattn.experiments.he2025.settings import D_MT, L_TRAIN, MULTITASK, SIGMA2, multitask_task, one_thread
from fastattn.experiments.recipe import Recipe, Run, RunSpec, preset_run
from fastattn.models.predictors import MultiTaskKernel, MultiTaskRidge
from fastattn.theory import he2025 as th

N_TASKS = 2


def runs(quick: bool = False) -> list[RunSpec]:
    """Adam on the multi-output model, batch 256 (quick: H ∈ {2, 4}, 250 steps at lr 1e-2; full:
    H ∈ {1, 2, 3, 4}, 2·10⁴ steps at lr 2e-3; the paper: 5·10⁵ at 1e-3)."""
    heads, steps, lr = ((2, 4), 250, 1e-2) if quick else ((1, 2, 3, 4), 20_000, 2e-3)
    train = {"lr": lr, "steps": steps, "n_records": 40, "n_snapshots": 2}
    return [preset_run(f"H{h}", *MULTITASK, group={"heads": h}, task={"data_seed": h},
                       model={"heads": h, "init_seed": h}, train=train) for h in heads]


def circuits(model) -> dict[str, np.ndarray]:
    """ω `[H, d]`, μ `[H, N]` and the off-pattern ratios of spec M13 (each `[H]`)."""
    d = D_MT
    kq = model.extract_kq().detach().double().numpy()              # [H, D, D]
    ov = model.extract_ov().detach().double().numpy()              # [H, N, D]
    a, ov22 = kq[:, :d, :d], ov[:, :, d:]
    omega, mu = np.diagonal(a, axis1=1, axis2=2).copy(), np.diagonal(ov22, axis1=1, axis2=2).copy()
    fro_a = np.linalg.norm(a, axis=(1, 2))
    return {"omega": omega, "mu": mu,
            "kq11_offdiag_ratio": np.linalg.norm(a - omega[:, :, None] * np.eye(d), axis=(1, 2)) / fro_a,
            "kq21_ratio": np.linalg.norm(kq[:, d:, :d], axis=(1, 2)) / fro_a,
            "ov21_ratio": np.linalg.norm(ov[:, :, :d], axis=(1, 2)) / np.linalg.norm(ov, axis=(1, 2)),
            "ov22_offdiag_ratio": (np.linalg.norm(ov22 - mu[:, :, None] * np.eye(N_TASKS), axis=(1, 2))
                                   / np.linalg.norm(ov22, axis=(1, 2)))}


def reference_predictors(mask: np.ndarray) -> dict[str, Any]:
    """The best separate dGDs and the best weighted shared dGD (exact risks), by `best_combination`."""
    v = 1.0 / D_MT

    def risk(g):
        return th.multitask_risk(g, mask, L_TRAIN, SIGMA2, v).mean()

    separate = np.stack([np.diag(r) for r in mask])[None]
    overlap = mask.prod(0)
    shared = np.stack([np.repeat(np.diag(w)[None], N_TASKS, 0) for w in (overlap, 1 - overlap)])
    (eta_sep,), r_sep = th.best_combination(separate, risk)
    (eta_star, eta_c), r_shared = th.best_combination(shared, risk)
    return {"separate_dgd": {"eta": eta_sep, "risk": r_sep},
            "weighted_dgd": {"eta_overlap": eta_star, "eta_rest": eta_c, "risk": r_shared}}


def _summarize(runs: list[Run], quick: bool = False) -> dict[str, Any]:
    n = 2000 if quick else 20_000
    t = multitask_task()
    mask = t.support_mask
    out: dict[str, Any] = {"n_prompts": n, "supports_1based": [[i + 1 for i in s] for s in t.supports],
                           "noise_floor_included": True, **reference_predictors(mask)}
    out["bayes_ridge"] = monte_carlo_risk(MultiTaskRidge(mask, SIGMA2 * D_MT), t, n, seed=7)._asdict()
    out["models"] = {}
    for run in runs:
        c = circuits(run.model)
        g = np.einsum("hn,hd->nd", c["mu"], c["omega"])                     # g_n [N, d]
        linear = th.multitask_risk(np.stack([np.diag(r) for r in g]), mask, L_TRAIN, SIGMA2,
                                   1.0 / D_MT)
        out["models"][run.spec.label] = {
            "heads": run.spec.group["heads"], **c,
            "intercept": c["mu"].sum(0), "g": g,
            "risk": monte_carlo_risk(run.model, t, n, seed=3)._asdict(),
            "patterned_kernel_risk": monte_carlo_risk(MultiTaskKernel(c["omega"], c["mu"]), t, n,
                                                      seed=3)._asdict(),
            "linearised_closed_form": float(linear.mean()),
            "final_train_loss": run.traj.final_loss, **_local_pattern(c, mask)}
    return out


def _local_pattern(c: dict[str, np.ndarray], mask: np.ndarray) -> dict[str, Any]:
    """The text's local patterns in numbers: mean |ω_j| of the live heads on the shared features
    S* over that on the rest S^c (H = 1, 2: ω̆* > ω̆^c), the number of heads whose μ^(h) has both
    signs across tasks (H = 3: superposition), and the largest off-pattern ratio of KQ_21 and
    OV_21 over the heads (the global pattern: both zero)."""
    mu, omega = np.asarray(c["mu"]), np.asarray(c["omega"])
    live = np.abs(mu).max(-1) >= 0.1 * np.abs(mu).max()
    shared = mask.prod(0).astype(bool)
    w = np.abs(omega[live])
    return {"shared_over_rest_omega": float(w[:, shared].mean() / w[:, ~shared].mean()),
            "n_superposed_heads": int(((mu[live] > 0).any(-1) & (mu[live] < 0).any(-1)).sum()),
            "max_off_pattern_ratio": float(max(np.max(c["kq21_ratio"]), np.max(c["ov21_ratio"])))}


def summarize(runs: list[Run], quick: bool = False) -> dict[str, Any]:
    with one_thread():
        return _summarize(runs, quick)


def plot(runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    models = summary["models"]
    # the heat maps show H = 3 (the text's superposition case, Fig. 3.5) when it was trained
    big = next((m for m in models.values() if m["heads"] == 3),
               max(models.values(), key=lambda m: m["heads"]))
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.6), layout="constrained",
                             gridspec_kw={"width_ratios": [1.4, 1.2, 0.6]})
    ax = axes[0]
    heads = [m["heads"] for m in models.values()]
    ax.errorbar(heads, [m["risk"]["mean"] for m in models.values()],
                yerr=[m["risk"]["se"] for m in models.values()], fmt="o", label="trained (MC)")
    ax.plot(heads, [m["patterned_kernel_risk"]["mean"] for m in models.values()], "s", mfc="none",
            label="its (ω, μ) pattern only (MC)")
    ax.plot(heads, [m["linearised_closed_form"] for m in models.values()], "x", color="k",
            label="its linearisation (closed form)")
    for key, style, label in (("separate_dgd", "--", "N separate dGDs (H ≥ 2N)"),
                              ("weighted_dgd", ":", "one weighted dGD (H = 2)")):
        ax.axhline(summary[key]["risk"], color="k", ls=style, lw=1, label=label)
    ax.axhline(summary["bayes_ridge"]["mean"], color="C2", lw=1, label="Bayes (pooled ridge, MC)")
    ax.set_xticks(sorted(set(heads)))
    ax.set_xlabel("heads H")
    ax.set_ylabel("MSE per task (σ² floor included)")
    ax.legend(fontsize=7)
    for axis, key, xlabel in ((axes[1], "omega", "coordinate j of ω^(h) = diag KQ₁₁"),
                              (axes[2], "mu", "task n of μ^(h) = diag OV₂₂")):
        a = np.asarray(big[key], dtype=float)
        lim = float(np.abs(a).max()) or 1.0
        plots.heatmap(axis, a, colorbar={"omega": "ω", "mu": "μ"}[key], cmap="RdBu_r", vmin=-lim,
                      vmax=lim, xlabel=xlabel, ylabel="head h")
        # the paper's heat maps are of H = 3; a run list without it (--quick) shows its largest H
        axis.set_title(f"H = {big['heads']}" + ("" if big["heads"] == 3 else
                                                " (no H = 3 run: the largest shown)"), fontsize=9)
    return fig


RECIPE = Recipe("Multi-task regression: risk vs H against the separate / weighted dGD closed forms; "
                "per-head ω (diag KQ_11) and μ (diag OV_22) of H = 3 (else the largest model).",
                runs, summarize, plot)
