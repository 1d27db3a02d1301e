"""He et al. 2025's sweep plot: the trained models' risk against debiased GD at η* and the
single-head predictor, over L and H (`fastattn plot --kind risk`)."""

from __future__ import annotations

import numpy as np

from fastattn.sweep.plots import log_ticks


def plot_risk(df, fig):
    """Left: risk at the training L over L, one line per (H, σ²), with R_dGD(η*) dashed; right:
    risk at the evaluation lengths (½L, L, 2L, 4L) of each H, averaged over the other axes."""
    d = df[(df["status"] != "error") & df["risk"].notna()] if "risk" in df else df.iloc[:0]
    if d.empty:
        raise ValueError("no run with a measured risk (He et al.: --model multihead_softmax, "
                         "sampled training)")
    ax1, ax2 = fig.subplots(1, 2)
    noise = d["noise"] if "noise" in d else 0.0
    for (h, s2), g in d.assign(noise=noise).groupby(["heads", "noise"]):
        g = g.groupby("context")[["risk", "risk_se", "theory_risk_dgd"]].mean().reset_index()
        line = ax1.errorbar(g["context"], g["risk"], yerr=2 * g["risk_se"], marker="o", ms=3,
                            capsize=2, label=f"H={h}, σ²={s2:g}")
        ax1.plot(g["context"], g["theory_risk_dgd"], "--", lw=0.9, color=line[0].get_color())
    ax1.set(xscale="log", yscale="log", xlabel="training L", ylabel="risk (MC ± 2 s.e.); dGD(η*) dashed")
    log_ticks(ax1, "x", d["context"])
    ax1.legend(fontsize=7)
    factors = [("risk_half_L", 0.5), ("risk", 1.0), ("risk_2L", 2.0), ("risk_4L", 4.0)]
    for h, g in d.groupby("heads"):
        ax2.plot([f for _, f in factors], [g[c].mean() for c, _ in factors], "o-", label=f"H={h}")
    dgd = [d[c.replace("risk", "theory_risk_dgd")].mean() for c, _ in factors]
    ax2.plot([f for _, f in factors], dgd, "k--", lw=0.9, label="dGD at η*(L_eval)")
    ax2.set(xscale="log", xlabel="evaluation L / training L", ylabel="risk (mean over the other axes)")
    log_ticks(ax2, "x", np.array([f for _, f in factors]))
    ax2.legend(fontsize=7)
    fig.suptitle("He et al. 2025: multi-head attention risk vs debiased GD")
