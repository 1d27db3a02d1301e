"""Emergence time against context length N (spec §7.6, §11.2, §11.3; q = N, strict mask, orthonormal
data, the paper's time θ̇ = −∇L), for three models: the exact 3-parameter flow (N = 4 … 4096), the
exact 19-parameter Gram-space flow (N = 4 … 1024), and the full 28D² disentangled transformer trained by
sampled GD on random orthonormal batches (D = 2N, small N; a step with full-matrix learning rate λ
advances the paper's time by λ/D, spec §5.3). The asymptotes of spec §7.6 are drawn over them, and
emergence (t_ICL: α₃, β₂, γ₃ all ≥ ½, Def. 3) is set against the loss drop (loss ≤ ½), which comes
at ≈ 1.46 t_ICL, tending to 1/erf(1/√2) = 1.4648."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fastattn.analysis.pseudo_params import subspace_report
from fastattn.experiments.musat2025 import flows
from fastattn.experiments.musat2025.sgd import curves, sgd_spec
from fastattn.experiments.recipe import Recipe, Run, RunSpec
from fastattn.population import emergence
from fastattn.theory import musat2025 as th

#: t(loss ≤ ½)/t_ICL as N → ∞ (spec §7.6): √(2π) N² / (√(2π) erf(1/√2) N²)
LOSS_DROP_OVER_T_ICL = 1.0 / math.erf(1.0 / math.sqrt(2.0))
_KEYS = ("T_gamma", "T_beta", "T_alpha", "t_icl", "t_loss")


def _sizes(quick: bool) -> tuple[list[int], list[int], list[int], float, int]:
    """(N of the 3-parameter flows, of the 19-parameter flows, of the sampled runs, lr_eff, batch)."""
    three_Ns = [4 * 2**k for k in range(11)]
    if quick:
        return three_Ns, [4, 8, 16], [4], 0.1, 32
    return three_Ns, [4, 8, 16, 32, 64, 128, 256, 512, 1024], [4, 8, 16], 0.1, 64


def sampled_gd_spec(N: int, lr_eff: float, batch: int) -> RunSpec:
    """GD of the full disentangled model (zero init, strict mask, sum reduction) on fresh random
    orthonormal batches with q = N: full-matrix learning rate lr_eff·D, so each step is lr_eff of
    the paper's time; the loss and the pseudo-parameters at every step (of the weights only the
    final: N = 16 runs 4200 steps of 28D² = 28 672 weights). Its length is 1.3× the later of the
    19-parameter flow's t_ICL and loss drop (that exact flow, milliseconds at these N, sizes the
    run)."""
    D = 2 * N
    flow = emergence.gram19_emergence_times(N, loss_level=0.5)
    steps = math.ceil(1.3 * max(flow["t_icl"], flow["t_loss"]) / lr_eff) + 20
    return sgd_spec(f"sampled_gd_N{N}", task={"dim": D, "context": N},
                    train={"method": "sgd", "lr": lr_eff * D, "steps": steps, "batch_size": batch},
                    every=1, keep_weights=False,
                    group={"model": "disentangled", "N": N, "lr_eff": lr_eff})


def sampled_gd_times(run: Run, flow: dict[str, float], window: int = 10) -> dict[str, Any]:
    """Emergence and loss-drop times (paper time) of a finished `sampled_gd_spec` run: the first
    snapshots at which α₃, β₂, γ₃ (projected) reach ½, and the loss crossing read off the mean batch
    loss of the last `window` steps; `flow` is the 19-parameter flow's times it is set against."""
    lr_eff = run.spec.group["lr_eff"]
    r = curves(run)
    f = r["first_step"]
    # a single batch's loss is noisy near ½ (D = 2N is small): the mean of the last `window` steps
    smooth = np.convolve(r["loss"], np.ones(window) / window, mode="valid")
    below = np.nonzero(smooth <= 0.5)[0]
    hits = {"T_gamma": f["gamma3>=0.5"], "T_beta": f["beta2>=0.5"], "T_alpha": f["alpha3>=0.5"],
            "t_loss": int(below[0]) + window - 1 if below.size else None}
    out = {k: (None if v is None else v * lr_eff) for k, v in hits.items()}
    three = [out[k] for k in ("T_gamma", "T_beta", "T_alpha")]
    out["t_icl"] = None if None in three else max(three)
    rep = subspace_report(*(w.detach() for w in run.model.weights()))
    steps = run.spec.train.steps
    return {**out, "D": run.spec.model.dim, "batch": run.spec.train.batch_size, "lr_eff": lr_eff,
            "steps": steps, "loss_window": window, "rho_final": rep["rho"],
            "seconds": r["seconds_per_step"] * steps, "gram19_flow": flow}


def runs(quick: bool) -> list[RunSpec]:
    three_Ns, gram_Ns, gd_Ns, lr_eff, batch = _sizes(quick)
    return ([flows.flow_spec(f"three_param_N{N}", "three_param", N) for N in three_Ns]
            + [flows.flow_spec(f"gram19_N{N}", "gram19", N) for N in gram_Ns]
            + [sampled_gd_spec(N, lr_eff, batch) for N in gd_Ns])


def summarize(runs: list[Run], quick: bool = False) -> dict[str, Any]:
    three_Ns, gram_Ns, gd_Ns, lr_eff, batch = _sizes(quick)

    def times(kind: str, N: int) -> dict[str, float]:
        run = flows.by_group(runs, model=kind, N=N)
        return {**flows.emergence(run), "seconds": run.traj.wall_time}

    three = [times("three_param", N) for N in three_Ns]
    gram = [times("gram19", N) for N in gram_Ns]
    gd = [sampled_gd_times(flows.by_group(runs, model="disentangled", N=N),
                           {k: v for k, v in times("gram19", N).items() if k != "seconds"})
          for N in gd_Ns]
    asym = [th.asymptotic_times(N) for N in three_Ns]
    return {
        "three_param": {"N": three_Ns, "times": three,
                        "t_icl_over_N2": [r["t_icl"] / N**2 for r, N in zip(three, three_Ns, strict=True)],
                        "t_loss_over_t_icl": [r["t_loss"] / r["t_icl"] for r in three],
                        "asymptote": asym,
                        "asymptote_rel_error": {
                            k: [abs(r[k] - a[k]) / r[k] for r, a in zip(three, asym, strict=True)]
                            for k in ("T_gamma", "T_beta", "T_alpha")}},
        "gram19": {"N": gram_Ns, "times": gram,
                   "t_icl_over_N2": [r["t_icl"] / N**2 for r, N in zip(gram, gram_Ns, strict=True)],
                   "t_loss_over_t_icl": [r["t_loss"] / r["t_icl"] for r in gram]},
        "full_sampled_gd": {"N": gd_Ns, "lr_eff": lr_eff, "batch": batch, "runs": gd,
                            "rel_error_vs_gram19_flow": [
                                {k: (None if g[k] is None else g[k] / g["gram19_flow"][k] - 1)
                                 for k in ("T_gamma", "T_beta", "T_alpha", "t_loss")} for g in gd]},
        "loss_drop_over_t_icl_limit": LOSS_DROP_OVER_T_ICL,
    }


def plot(runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    fig, (a, b, c) = plt.subplots(1, 3, figsize=(17, 5.2), layout="constrained")
    s3, s19, gd = summary["three_param"], summary["gram19"], summary["full_sampled_gd"]
    N3, N19, Ngd = (np.asarray(s["N"], dtype=float) for s in (s3, s19, gd))
    grid = np.geomspace(2, N3.max(), 200)
    colors = {"T_gamma": "tab:green", "T_beta": "tab:blue", "t_icl": "tab:red", "t_loss": "k"}
    names = {"T_gamma": "T_γ", "T_beta": "T_β", "t_icl": "t_ICL = T_α", "t_loss": "loss ≤ ½"}
    asym = {"T_gamma": grid * math.log(2), "T_beta": 0.95985 * grid**2 + 0.790 * grid,
            "t_icl": 1.71125 * grid**2 + 0.682 * grid, "t_loss": th.loss_collapse_time(grid)}
    for key in ("T_gamma", "T_beta", "t_icl", "t_loss"):
        a.plot(N3, [r[key] for r in s3["times"]], "o", ms=4, color=colors[key], label=f"3-param {names[key]}")
        a.plot(grid, asym[key], "-", lw=0.8, color=colors[key])
        a.plot(N19, [r[key] for r in s19["times"]], "s", mfc="none", ms=7, color=colors[key])
        a.plot(Ngd, [np.nan if r[key] is None else r[key] for r in gd["runs"]], "x", ms=8, color=colors[key])
    a.plot([], [], "k-", lw=0.8, label="spec §7.6 asymptotes")
    a.plot([], [], "ks", mfc="none", label="19-param exact flow")
    a.plot([], [], "kx", label=f"full model, sampled GD (B={gd['batch']})")
    a.set(xscale="log", yscale="log", xlabel="N (pairs)", ylabel="time (θ̇ = −∇L)",
          title="(a) emergence and loss-drop times, q = N, strict")
    a.legend(fontsize=7)
    b.plot(N3, s3["t_icl_over_N2"], "o-", color="tab:red", ms=4, label="3-param t_ICL/N²")
    b.plot(N3, [r["t_loss"] / N**2 for r, N in zip(s3["times"], N3, strict=True)], "o-", color="k", ms=4,
           label="3-param t(loss ≤ ½)/N²")
    b.plot(N19, s19["t_icl_over_N2"], "s--", mfc="none", color="tab:red", label="19-param t_ICL/N²")
    b.plot(N19, [r["t_loss"] / N**2 for r, N in zip(s19["times"], N19, strict=True)], "s--", mfc="none",
           color="k", label="19-param t(loss ≤ ½)/N²")
    b.axhline(1.711249, color="tab:red", lw=0.8, ls=":", label="√(2π) erf(1/√2) = 1.7112")
    b.axhline(math.sqrt(2 * math.pi), color="k", lw=0.8, ls=":", label="√(2π) = 2.5066")
    b.set(xscale="log", xlabel="N (pairs)", ylabel="time / N²", title="(b) compensated: time / N²")
    b.set_ylim(top=3.5)                    # room for the legend above the curves
    b.legend(fontsize=7, ncol=2, loc="upper center")
    c.plot(N3, s3["t_loss_over_t_icl"], "o-", color="tab:red", ms=4, label="3-param flow")
    c.plot(N19, s19["t_loss_over_t_icl"], "s--", mfc="none", color="tab:purple", label="19-param flow")
    ratio = [np.nan if r["t_loss"] is None or r["t_icl"] is None else r["t_loss"] / r["t_icl"]
             for r in gd["runs"]]
    c.plot(Ngd, ratio, "x", ms=8, color="tab:purple", label="full model, sampled GD")
    c.axhline(LOSS_DROP_OVER_T_ICL, color="k", ls=":", lw=0.8, label="1/erf(1/√2) = 1.4648 (N → ∞)")
    c.set(xscale="log", xlabel="N (pairs)", ylabel="t(loss ≤ ½) / t_ICL",
          title="(c) emergence is not the loss drop")
    c.legend(fontsize=7)
    return fig


RECIPE = Recipe("Orthonormal data, q = N, strict mask, zero init; 3-parameter and 19-parameter times by "
                "exact gradient flow with event location; the full model by GD on sampled batches (D = 2N).",
                runs, summarize, plot)
