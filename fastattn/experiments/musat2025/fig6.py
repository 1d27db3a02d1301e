"""Fig. 6: emergence times of the 3-parameter flow against N (T_γ, T_β, T_α at Fig. 6's thresholds
½/0.1/0.1; t_ICL at ½ with its two-term asymptote; the loss drop, which is not emergence), and the
discrete GD step counts at lr_eff = 100/256 (App. F, spec §7.7)."""

from __future__ import annotations

from typing import Any

from fastattn.experiments.recipe import Recipe, Run, RunSpec
from fastattn.population import emergence
from fastattn.theory import musat2025 as th

KEYS = ("T_gamma", "T_beta", "T_alpha")


def runs(quick: bool) -> list[RunSpec]:
    return []


def summarize(runs: list[Run], quick: bool = False) -> dict[str, Any]:
    Ns = [4 * 2**k for k in range(8 if quick else 11)]
    flow, fig6_thr = [], []
    for N in Ns:
        flow.append(emergence.emergence_times(N, loss_level=0.5))
        fig6_thr.append(emergence.emergence_times(N, thresholds=(0.5, 0.1, 0.1)))
    gd_Ns = [4, 8, 16, 32] if quick else [4, 8, 16, 32, 64, 96, 128]
    lr = 100 / 256
    gd = [{"half": emergence.emergence_steps_gd(N, lr),
           "fig6": emergence.emergence_steps_gd(N, lr, (0.5, 0.1, 0.1), loss_level=None)}
          for N in gd_Ns]
    asym = [th.asymptotic_times(N) for N in Ns]
    return {
        "N": Ns, "flow_half": flow, "flow_fig6_thresholds": fig6_thr, "asymptote": asym,
        "t_icl_over_N2": [r["t_icl"] / N**2 for r, N in zip(flow, Ns, strict=True)],
        "t_loss_over_t_icl": [r["t_loss"] / r["t_icl"] for r in flow],
        "asymptote_rel_error": [abs(r["t_icl"] - a["t_icl"]) / r["t_icl"]
                                for r, a in zip(flow, asym, strict=True)],
        "gd": {"lr_eff": lr, "N": gd_Ns, "steps": gd},
    }


def plot(runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    Ns = summary["N"]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6, 7))
    for key, label in zip(KEYS, ("T_γ (½)", "T_β (0.1)", "T_α (0.1)"), strict=True):
        top.plot(Ns, [r[key] for r in summary["flow_fig6_thresholds"]], "o-", label=label)
    top.set(xscale="log", yscale="log", xlabel="N", ylabel="gradient-flow time", title="3-parameter flow")
    top.legend()
    bottom.plot(Ns, [r["t_icl"] for r in summary["flow_half"]], "o-", label="t_ICL (exact flow)")
    bottom.plot(Ns, [a["t_icl"] for a in summary["asymptote"]], "k--", label="1.71125 N² + 0.682 N")
    bottom.plot(Ns, [r["t_loss"] for r in summary["flow_half"]], "s:", label="loss ≤ ½ (not emergence)")
    bottom.set(xscale="log", yscale="log", xlabel="N", ylabel="time")
    bottom.legend()
    return fig


RECIPE = Recipe("Exact gradient flow of the 3-parameter model, q = N, strict mask, orthonormal data; "
                "times in the paper's unit-learning-rate convention.", runs, summarize, plot)
