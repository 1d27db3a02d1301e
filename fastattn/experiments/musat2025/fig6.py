"""Fig. 6: emergence times of the 3-parameter flow against N (T_γ, T_β, T_α at Fig. 6's thresholds
½/0.1/0.1; t_ICL at ½ with its two-term asymptote; the loss drop, which is not emergence), and the
discrete GD step counts at lr_eff = 100/256 (App. F, spec §7.7)."""

from __future__ import annotations

import math
from typing import Any

from fastattn.experiments.musat2025 import flows
from fastattn.experiments.recipe import Recipe, Run, RunSpec
from fastattn.theory import musat2025 as th

KEYS = ("T_gamma", "T_beta", "T_alpha")


LR = 100 / 256


def _sizes(quick: bool) -> tuple[list[int], list[int]]:
    """(N of the flows, N of the GD runs)."""
    return ([4 * 2**k for k in range(8 if quick else 11)],
            [4, 8, 16, 32] if quick else [4, 8, 16, 32, 64, 96, 128])


def runs(quick: bool) -> list[RunSpec]:
    Ns, gd_Ns = _sizes(quick)
    return ([flows.flow_spec(f"flow_N{N}", "three_param", N) for N in Ns]
            + [flows.gd_spec(f"gd_N{N}", N, LR) for N in gd_Ns])


def summarize(runs: list[Run], quick: bool = False) -> dict[str, Any]:
    Ns, gd_Ns = _sizes(quick)
    flow, fig6_thr = [], []
    for N in Ns:
        run = flows.by_group(runs, N=N, model="three_param", lr=None)
        flow.append(flows.emergence(run))
        fig6_thr.append(flows.emergence(run, (0.5, 0.1, 0.1), loss=False))
    gd = []
    for N in gd_Ns:
        run = flows.by_group(runs, N=N, lr=LR)
        gd.append({"half": flows.emergence_steps(run),
                   "fig6": flows.emergence_steps(run, (0.5, 0.1, 0.1), loss=False)})
    asym = [th.asymptotic_times(N) for N in Ns]
    return {
        "N": Ns, "flow_half": flow, "flow_fig6_thresholds": fig6_thr, "asymptote": asym,
        "t_icl_over_N2": [r["t_icl"] / N**2 for r, N in zip(flow, Ns, strict=True)],
        "t_loss_over_t_icl": [r["t_loss"] / r["t_icl"] for r in flow],
        "asymptote_rel_error": [abs(r["t_icl"] - a["t_icl"]) / r["t_icl"]
                                for r, a in zip(flow, asym, strict=True)],
        "gd": {"lr_eff": LR, "N": gd_Ns, "steps": gd},
        "theorem2": theorem2(Ns, flow),
    }


def theorem2(Ns: list[int], times: list[dict[str, float]]) -> dict[str, Any]:
    """Theorem 2 as numbers on the flows' ½-threshold times: the fraction of the N at which
    T_γ < T_β < T_α, and the local log-log slope of each time (and t_ICL) between the two largest N
    (Θ(N): 1, Θ(N²): 2)."""
    order = [r["T_gamma"] < r["T_beta"] < r["T_alpha"] for r in times]
    ratio = math.log(Ns[-1] / Ns[-2])
    return {"order_holds": order, "order_fraction": sum(order) / len(order),
            "exponent_largest_N": {k: math.log(times[-1][k] / times[-2][k]) / ratio
                                   for k in (*KEYS, "t_icl")}}


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
