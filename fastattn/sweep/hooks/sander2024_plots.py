"""Sander et al. 2024's sweep plot: final loss and the rank of C over (d, H) (`fastattn plot
--kind rank`)."""

from __future__ import annotations

import numpy as np


def plot_rank(df, fig):
    """Left: final loss over H/d, one line per d; right: c_rank over H, with rank = min(H, d)."""
    d = df[(df["status"] != "error") & df["c_rank"].notna()]
    if d.empty:
        raise ValueError("no DIAG run with a measured c_rank (Sander et al.: --task autoregressive "
                         "--model diag)")
    ax1, ax2 = fig.subplots(1, 2)
    for dim, g in d.groupby("dim"):
        g = g.groupby("heads")[["final_loss", "c_rank"]].mean().reset_index()
        ratio = g["heads"] / dim
        ax1.plot(ratio, np.maximum(g["final_loss"], 1e-16), "o-", ms=4, label=f"d={dim}")
        ax2.plot(g["heads"], g["c_rank"], "o-", ms=4, label=f"d={dim}")
    ax1.axvline(1, color="k", lw=0.8, ls="--")
    ax1.set(yscale="log", xlabel="H / d", ylabel="final loss (floored at 1e-16)")
    ax1.legend(fontsize=7)
    h = np.sort(d["heads"].unique())
    ax2.set(xlabel="H", ylabel="numerical rank of C = BᵀA")
    ax2.set_xticks(h)
    ax2.legend(fontsize=7)
    fig.suptitle("Sander et al. 2024: DIAG loss and rank of C over d × H")
