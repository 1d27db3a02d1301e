"""Figs. 5, 18, 19 (App. D, spec §6, §11.5): the pseudo-parameters and the loss during online SGD of
the full disentangled transformer (top) and of its restriction to α₃, β₂, γ₃ (bottom; learning rate
λ/D, the full-matrix step masked to the 3 directions), Gaussian data, λ = 1, B = 256, mean reduction,
inclusive mask, uniform query, zero init. Fig. 5 at App. D's D = 32, N = 16 (Fig. 4 is its top row;
`musat2025-fig4` runs App. C's D = 16, N = 4); Fig. 18 at its caption's D = 16, N = 32 (App. D's text
says D = 32, N = 16: spec §12.5), Fig. 19 at D = 32, N = 8. The paper gives no step counts: 600 here.
Hypothesis 2's "strikingly similar, even slightly accelerated" is read off the first steps at which
α₃, β₂, γ₃ reach 0.1 / 0.5 and the loss ½ / 0.2, in the JSON's summary; Fig. 5 runs 3 data seeds
and its summary's `across_seeds` gives, over them, the loss drop of the 3-parameter run over the
full one's (Hypothesis 2), the full model's loss drop over its t_ICL (Hypothesis 1), the order
γ₃, β₂, α₃ and whether α₃, β₂, γ₃ are the largest (median, range, fraction of seeds meeting it).

`--quick` runs a smaller size of each figure's own shape (seconds of CPU): Fig. 5's D = 2N as
D = 16, N = 8; Fig. 18's N = 2D as D = 8, N = 16; Fig. 19's D = 4N as D = 16, N = 4, with the step
counts and batches at which the full model still crosses all three ½ thresholds and the loss ½."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn.analysis.pseudo_params import subspace_report
from fastattn.experiments.claims import seed_summary
from fastattn.experiments.musat2025.sgd import curves, sgd_spec
from fastattn.experiments.recipe import Recipe, Run, RunSpec
from fastattn.models.disentangled import NAMES, THREE_PARAM

_COLORS = {"alpha3": "tab:red", "beta2": "tab:blue", "gamma3": "tab:green"}
_GREEK = {"alpha3": "α₃", "beta2": "β₂", "gamma3": "γ₃"}


def _label(name: str, seed: int) -> str:
    return name if seed == 0 else f"{name}_s{seed}"


def _runs(D: int, N: int, B: int, steps: int, seeds: int = 1) -> list[RunSpec]:
    """Per data seed (batch k a function of (seed, k)), the full model and the 3-parameter one."""
    train = {"batch_size": B, "steps": steps}
    out = []
    for seed in range(seeds):
        task = {"data": "gaussian", "dim": D, "context": N} | ({"data_seed": seed} if seed else {})
        out += [sgd_spec(_label("full", seed), task=task, train=train, keep_weights=False),
                sgd_spec(_label("three_param", seed), "three_param", task=task, train=train)]
    return out


def _seed_measures(full: dict[str, Any], three: dict[str, Any], final: np.ndarray) -> dict[str, Any]:
    """One seed's Hypotheses 1–2 as numbers, from the `curves` of its two runs and the full model's
    final pseudo-parameters `[19]`: the loss drop (first step with batch loss ≤ ½) of the
    3-parameter run over the full one's; the full model's t_ICL (Def. 3: first snapshot with
    min(α₃, β₂, γ₃) ≥ ½) and its loss drop over it; whether γ₃, β₂, α₃ reach 0.1 in that order
    (ties allowed: snapshots every 5 steps); whether its three largest |θ| are α₃, β₂, γ₃."""
    first_f, first_3 = full["first_step"], three["first_step"]
    cols = [list(full["names"]).index(k) for k in THREE_PARAM]
    above = np.nonzero(np.asarray(full["theta"])[:, cols].min(1) >= 0.5)[0]
    t_icl = int(full["steps"][above[0]]) if above.size else None
    drop = first_f["loss<=0.5"]
    hits = [first_f[f"{k}>=0.1"] for k in ("gamma3", "beta2", "alpha3")]
    return {"loss_drop_full": drop, "loss_drop_three_param": first_3["loss<=0.5"],
            "loss_drop_ratio": None if None in (drop, first_3["loss<=0.5"])
            else first_3["loss<=0.5"] / drop,
            "t_icl_full": t_icl,
            "loss_drop_over_t_icl": None if None in (drop, t_icl) else drop / t_icl,
            "order_gamma_beta_alpha": float(None not in hits and hits[0] <= hits[1] <= hits[2]),
            "top3_is_induction_head": float(set(np.asarray(NAMES)[np.argsort(-np.abs(final))[:3]])
                                            == set(THREE_PARAM))}


def _across_seeds(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Median, range and the fraction of seeds meeting each claim (ratio ≤ 1: the 3-parameter run
    drops no later; 0.7 ≤ loss drop / t_ICL ≤ 1.3: they coincide)."""
    def stats(key: str, meets) -> dict[str, Any]:
        return seed_summary([r[key] for r in rows], meets)

    return {"seeds": len(rows),
            "loss_drop_ratio": stats("loss_drop_ratio", lambda x: x <= 1),
            "loss_drop_over_t_icl": stats("loss_drop_over_t_icl", lambda x: 0.7 <= x <= 1.3),
            "order_gamma_beta_alpha": stats("order_gamma_beta_alpha", lambda x: x == 1),
            "top3_is_induction_head": stats("top3_is_induction_head", lambda x: x == 1)}


def _summarize(runs: list[Run], D: int, N: int, B: int, steps: int, seeds: int = 1) -> dict[str, Any]:
    by = {r.spec.label: r for r in runs}
    spec = by["full"].spec
    task = spec.task
    out = {"settings": {"D": D, "N": N, "batch": B, "steps": steps, "lr": spec.train.lr,
                        "lr_three_param": by["three_param"].spec.train.lr, "data": task.data,
                        "query": task.query, "mask": spec.model.mask, "reduction": task.reduction,
                        "data_seed": task.data_seed, "seeds": seeds}, "runs": {}, "curves": {}}
    per_seed = []
    for seed in range(seeds):
        full = by[_label("full", seed)]
        final = subspace_report(*(w.detach() for w in full.model.weights()))["theta"]
        per_seed.append(_seed_measures(curves(full), curves(by[_label("three_param", seed)]), final))
    out["per_seed"] = per_seed
    out["across_seeds"] = _across_seeds(per_seed)
    for name in ("full", "three_param"):
        r = curves(by[name])
        tail = r["loss"][-max(1, steps // 10):]
        out["runs"][name] = {"first_step": r["first_step"], "final_loss": r["loss"][-1],
                             "mean_loss_last_tenth": float(np.mean(tail)),
                             "final_theta": dict(zip(r["names"], r["theta"][-1].tolist(), strict=True)),
                             "seconds_per_step": r["seconds_per_step"]}
        out["curves"][name] = {k: r[k] for k in ("steps", "names", "theta", "loss")}
    rep = subspace_report(*(w.detach() for w in by["full"].model.weights()))
    final = rep["theta"]
    out["runs"]["full"]["rho"] = dict(zip(("W1", "W2", "W3"), rep["rho"], strict=True))
    out["runs"]["full"]["largest_final"] = [[NAMES[k], float(final[k])]
                                            for k in np.argsort(-np.abs(final))[:5]]
    return out


def _plot(runs: list[Run], summary: dict[str, Any]):
    import matplotlib.pyplot as plt

    s = summary["settings"]
    fig, axes = plt.subplots(2, 2, figsize=(12, 7), sharex=True, layout="constrained",
                             gridspec_kw={"width_ratios": [1.4, 1]})
    size = f"D = {s['D']}, N = {s['N']}"
    for row, (name, title) in enumerate((("full", f"{size}, all 28D² weights"),
                                         ("three_param", f"{size}, only α₃, β₂, γ₃ (lr λ/D)"))):
        r, first = summary["curves"][name], summary["runs"][name]["first_step"]
        theta = np.asarray(r["theta"])
        for k, pname in enumerate(r["names"]):
            if pname in THREE_PARAM:
                axes[row, 0].plot(r["steps"], theta[:, k], lw=2, color=_COLORS[pname], label=_GREEK[pname])
            else:
                axes[row, 0].plot(r["steps"], theta[:, k], lw=0.8, alpha=0.5, color="grey",
                                  label="other 16" if k == 0 else None)
        for pname in THREE_PARAM:
            if first[f"{pname}>=0.5"] is not None:
                axes[row, 0].axvline(first[f"{pname}>=0.5"], color=_COLORS[pname], ls=":", lw=1)
        axes[row, 0].axhline(0.5, color="k", ls="--", lw=0.6, label="½ (Def. 1)")
        axes[row, 0].set(title=f"{title}: pseudo-parameters θ_k = ⟨W, B_k⟩/D", ylabel="θ")
        axes[row, 0].legend(fontsize=7, ncol=2)
        axes[row, 1].plot(r["loss"], lw=0.8, color="k", label="batch loss")
        if first["loss<=0.5"] is not None:
            axes[row, 1].axvline(first["loss<=0.5"], color="k", ls=":", lw=1,
                                 label=f"loss ≤ ½ at step {first['loss<=0.5']}")
        axes[row, 1].set(title=f"{title}: loss", ylabel="loss (mean over D)")
        axes[row, 1].set_ylim(bottom=0)
        axes[row, 1].legend(fontsize=7)
    for ax in axes[1]:
        ax.set_xlabel(f"SGD step (D = {s['D']}, N = {s['N']}, B = {s['batch']})")
    return fig


def _recipe(full: tuple[int, int, int, int], small: tuple[int, int, int, int], what: str,
            seeds: int = 1) -> Recipe:
    """A figure at `full` = (D, N, batch, steps), and at `small` under --quick; `seeds` data seeds."""
    def runs(quick: bool) -> list[RunSpec]:
        return _runs(*(small if quick else full), seeds=seeds)

    def summarize(runs: list[Run], quick: bool = False) -> dict[str, Any]:
        return _summarize(runs, *(small if quick else full), seeds=seeds)

    (D, N, B, steps), (qD, qN, qB, qsteps) = full, small
    caption = (f"{what} D = {D}, N = {N}, B = {B}, {steps} steps (--quick: D = {qD}, N = {qN}, B = {qB}, "
               f"{qsteps} steps; each panel names the size that ran), λ = 1, Gaussian data, uniform query, "
               "inclusive mask, loss averaged over D. Dotted: first step each of α₃, β₂, γ₃ reaches ½, "
               "and the loss ½.")
    return Recipe(caption, runs, summarize, _plot)


FIG5 = _recipe((32, 16, 256, 600), (16, 8, 128, 150), "App. D (Fig. 4 top, Fig. 5 bottom), 3 data "
               "seeds (panels: seed 0):", seeds=3)
FIG18 = _recipe((16, 32, 256, 600), (8, 16, 128, 300), "Fig. 18's caption:")
FIG19 = _recipe((32, 8, 256, 600), (16, 4, 64, 100), "Fig. 19:")
