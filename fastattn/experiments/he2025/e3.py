"""E3: training dynamics of the circuits (spec §6 E3, text Fig. 2.5): per head ω_h(t) and μ_h(t),
μ_+(t) = Σ_{H+} μ_h, η_eff(t) = Σ_h μ_h ω_h, and the pattern metrics M1 (KQ diagonal), M3 (OV last
entry), M6 (sign matching) at log-spaced snapshots of Adam runs from PyTorch's default init.

Theory drawn over the simulation: μ_γ(γ̂(t)), the OV mass the solution manifold S_γ (§5.2) assigns
to the measured KQ scale γ̂(t) (the run tracks it once Stage I is over), and η* (Theorem 1)."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn.analysis.patterns import pattern_metrics
from fastattn.experiments.claims import seed_summary
from fastattn.experiments.he2025.settings import L_TRAIN, PAIR, SIGMA2, D
from fastattn.experiments.recipe import Recipe, Run, RunSpec, preset_run
from fastattn.models import build_model
from fastattn.theory import he2025 as th


def runs(quick: bool = False) -> list[RunSpec]:
    """H = 2 (quick: one seed, 400 steps at lr 1e-2; full: H ∈ {2, 4}, seeds 0–1, 2·10⁴ steps at
    lr 2e-3), batch 256, 40 log-spaced snapshots."""
    groups = [(2, 0)] if quick else [(2, 0), (2, 1), (4, 0), (4, 1)]
    steps, lr = (400, 1e-2) if quick else (20_000, 2e-3)
    train = {"lr": lr, "steps": steps, "n_records": 60}
    return [preset_run(f"H{h}_seed{s}", *PAIR, group={"heads": h, "seed": s},
                       task={"data_seed": 10 * h + s}, model={"heads": h, "init_seed": 10 * h + s},
                       train=train) for h, s in groups]


def snapshot_metrics(run: Run) -> dict[str, np.ndarray]:
    """`pattern_metrics` of every parameter snapshot (leading dim `[S]`), and "step" `[S]`."""
    model = build_model(run.spec.model)
    kq, ov = [], []
    for flat in run.traj.params:
        model.load_flat(flat)
        kq.append(model.extract_kq().detach().double().numpy())
        ov.append(model.extract_ov().detach().double().numpy())
    out = pattern_metrics(np.stack(kq), np.stack(ov))
    # Adam's trajectory time is 2·lr·step (docs/conventions.md)
    out["step"] = np.rint(run.traj.snapshot_time / (2 * run.spec.train.lr)).astype(int)
    return out


def _first(step: np.ndarray, ok: np.ndarray) -> int | None:
    """The first snapshot step from which `ok` holds to the end, or None."""
    bad = np.flatnonzero(~ok)
    if len(bad) == 0:
        return int(step[0])
    return int(step[bad[-1] + 1]) if bad[-1] + 1 < len(step) else None


def summarize(runs: list[Run]) -> dict[str, Any]:
    out: dict[str, Any] = {"eta_star": th.eta_star(D, L_TRAIN, SIGMA2), "runs": {}}
    for run in runs:
        m = snapshot_metrics(run)
        live = ~m["dummy"]
        m1 = np.where(live, m["diag_ratio"], np.inf).min(-1)
        m3 = np.where(live, m["ov_last_ratio"], np.inf).min(-1)
        out["runs"][run.spec.label] = {
            **run.spec.group, "step": m["step"], "omega": m["omega"], "mu": m["mu"],
            "mu_plus": m["mu_plus"], "mu_minus": m["mu_minus"], "gamma": m["gamma"],
            "eta_eff": m["eta_eff"], "intercept": m["intercept"], "sign_match": m["sign_match"],
            "min_diag_ratio": m1, "min_ov_last_ratio": m3,
            "mu_gamma_of_gamma": th.mu_gamma(m["gamma"], D, L_TRAIN, SIGMA2),
            "first_step_M1_above_0.99": _first(m["step"], m1 > 0.99),
            "first_step_M6_equals_1": _first(m["step"], m["sign_match"] == 1),
            "max_abs_omega_step": int(m["step"][np.argmax(np.abs(m["omega"]).max(-1))]),
            "final_loss": run.traj.final_loss,
            **_shape(m, live)}
    out["pooled"] = {key: seed_summary([float(r[key]) for r in out["runs"].values()])
                     for key in ("omega_peak_over_final", "mu_plus_rising_fraction",
                                 "final_mu_plus_over_mu_gamma", "final_eta_eff")}
    return out


def _shape(m: dict[str, np.ndarray], live: np.ndarray) -> dict[str, float]:
    """Key Finding 4 in numbers: the peak of max_h |ω_h(t)| over its final value (> 1: it rose,
    then fell); the fraction of snapshot steps where μ₊ does not fall by more than 2 % of its
    largest value ("increases steadily"); at the end, μ₊ over μ_γ(γ̂) of the solution manifold
    and η_eff = Σ_h μ_h ω_h."""
    omega = np.abs(np.where(live, m["omega"], 0.0)).max(-1)
    mu_plus = np.asarray(m["mu_plus"])
    rising = np.diff(mu_plus) >= -0.02 * np.abs(mu_plus).max()
    return {"omega_peak_over_final": float(omega.max() / omega[-1]),
            "mu_plus_rising_fraction": float(rising.mean()),
            "final_mu_plus_over_mu_gamma": float(
                mu_plus[-1] / th.mu_gamma(float(m["gamma"][-1]), D, L_TRAIN, SIGMA2)),
            "final_eta_eff": float(m["eta_eff"][-1])}


def plot(runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(11, 3.6), layout="constrained")
    for i, (label, r) in enumerate(summary["runs"].items()):
        c = f"C{i}"
        label = f"H = {r['heads']}, seed {r['seed']}"
        step = np.maximum(np.asarray(r["step"]), 1)
        omega, mu = np.asarray(r["omega"]), np.asarray(r["mu"])
        for h in range(omega.shape[1]):
            axes[0].plot(step, omega[:, h], color=c, lw=1, label=label if h == 0 else None)
            axes[1].plot(step, mu[:, h], color=c, lw=0.6, alpha=0.6)
        axes[1].plot(step, r["mu_plus"], color=c, lw=1.6, label=f"{label}: μ₊")
        axes[1].plot(step, r["mu_gamma_of_gamma"], color=c, ls="--", lw=1,
                     label=f"{label}: μ_γ(γ̂) (S_γ)")
        axes[2].plot(step, r["eta_eff"], color=c, lw=1.4, label=f"{label}: η_eff = Σμω")
        axes[2].plot(step, r["min_diag_ratio"], color=c, ls=":", lw=1, label=f"{label}: min M1")
    for y in (0.13, -0.13):
        axes[0].axhline(y, color="0.5", ls="--", lw=0.8)
    axes[1].axhline(3.5, color="0.5", ls="--", lw=0.8)
    axes[1].set_ylim(-6, 6)
    axes[2].axhline(summary["eta_star"], color="k", ls="--", lw=1, label="η* (Theorem 1)")
    axes[2].set_ylim(-0.1, 1.1)
    for ax, ylabel in zip(axes, ("ω_h (KQ scale; ±0.13: the text's limit)",
                                 "μ_h (thin), μ₊ (thick)", "η_eff and M1"), strict=True):
        ax.set_xscale("log")
        ax.set_xlabel("Adam step")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
    return fig


RECIPE = Recipe("Circuits during training: ω_h, μ_h, μ₊ against the manifold's μ_γ(γ̂), η_eff "
                "against η*, KQ diagonal ratio M1.", runs, summarize, plot)
