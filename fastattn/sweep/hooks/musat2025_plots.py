"""Musat et al. 2025's sweep plot: measured t_ICL (and T_γ, T_β, T_α) over N against the two-term
asymptotes (`fastattn plot --kind t_icl`)."""

from __future__ import annotations

import numpy as np

from fastattn.sweep.plots import log_ticks


def plot_t_icl(df, fig):
    """Emergence times over N (log-log) with the asymptotes; right: t_ICL / (0.95985... N²)."""
    d = df[(df["status"] != "error") & df["t_icl"].notna()].sort_values("context")
    if d.empty:
        raise ValueError("no run with a measured t_icl (Musat et al.: --task induction, exact flow)")
    ax1, ax2 = fig.subplots(1, 2)
    n = d["context"].astype(float).to_numpy()
    for col, label, marker in (("t_gamma", "T_γ", "v"), ("t_beta", "T_β", "s"), ("t_alpha", "T_α", "o"),
                               ("t_loss_drop", "loss drop (L = ½)", "x")):
        ax1.scatter(n, d[col], marker=marker, s=18, label=f"{label} (flow events)")
    for col, label in (("theory_t_beta", "0.95985 N² + 0.790 N"),
                       ("theory_t_alpha", "1.71125 N² + 0.682 N")):
        if d[col].notna().any():
            ax1.plot(n, d[col], "--", lw=0.9, label=label)
    ax1.set(xscale="log", yscale="log", xlabel="N (pairs)", ylabel="paper time")
    log_ticks(ax1, "x", n)
    ax1.legend(fontsize=7)
    ratio = d["t_icl"].to_numpy() / d["theory_t_icl"].to_numpy()
    ax2.plot(n, ratio, "o-")
    ax2.axhline(1, color="k", lw=0.8, ls="--")
    ax2.set(xscale="log", xlabel="N (pairs)", ylabel="t_ICL measured / asymptote")
    log_ticks(ax2, "x", n)
    finite = ratio[np.isfinite(ratio)]
    if finite.size:
        ax2.set_title(f"max |ratio − 1| = {np.max(np.abs(finite - 1)):.2e}", fontsize=9)
    fig.suptitle("Musat et al. 2025: induction-head emergence over N")
