"""The figures of Musat et al. 2025 that fastattn reproduces (spec §6.1, §7.7, §11), each a function
`(quick) -> (doc, figure)`; `run_figure` times it and writes NAME.png and NAME.json.

- musat2025-fig6: emergence times of the 3-parameter flow vs N (T_γ, T_β, T_α at Fig. 6's
  thresholds 0.5/0.1/0.1, t_ICL at ½ with its asymptote, the loss drop), and the discrete GD step
  counts at lr_eff = 100/256 (App. F, spec §7.7).
- musat2025-gram19: exact flows of the 19-parameter model vs the 3-parameter model (spec §11.3).
- musat2025-uniform: uniform query position, t_ICL ≈ N²/(0.622 ln N + 0.143) (spec §11.4).
- musat2025-fig4: sampled SGD of the full disentangled transformer and of the 3-parameter
  restriction on Gaussian data (Figs. 4/5, App. C/D; spec §11.5), with the time per step against the
  literal torch model.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from fastattn.analysis.pseudo_params import project, subspace_report
from fastattn.models.disentangled import NAMES, THREE_PARAM, DisentangledTransformer
from fastattn.models.reference import disentangled_transformer
from fastattn.tasks import InductionPairs
from fastattn.theory import musat2025 as th
from fastattn.training.records import to_jsonable

KEYS = ("T_gamma", "T_beta", "T_alpha")


def fig6(quick: bool):
    import matplotlib.pyplot as plt

    Ns = [4 * 2**k for k in range(8 if quick else 11)]
    flow, fig6_thr = [], []
    for N in Ns:
        flow.append(th.emergence_times(N, loss_level=0.5))
        fig6_thr.append(th.emergence_times(N, thresholds=(0.5, 0.1, 0.1)))
    gd_Ns = [4, 8, 16, 32] if quick else [4, 8, 16, 32, 64, 96, 128]
    lr = 100 / 256
    gd = [{"half": th.emergence_steps_gd(N, lr), "fig6": th.emergence_steps_gd(N, lr, (0.5, 0.1, 0.1),
                                                                              loss_level=None)}
          for N in gd_Ns]
    asym = [th.asymptotic_times(N) for N in Ns]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6, 7))
    for key, label in zip(KEYS, ("T_γ (½)", "T_β (0.1)", "T_α (0.1)"), strict=True):
        top.plot(Ns, [r[key] for r in fig6_thr], "o-", label=label)
    top.set(xscale="log", yscale="log", xlabel="N", ylabel="gradient-flow time", title="3-parameter flow")
    top.legend()
    bottom.plot(Ns, [r["t_icl"] for r in flow], "o-", label="t_ICL (exact flow)")
    bottom.plot(Ns, [a["t_icl"] for a in asym], "k--", label="1.71125 N² + 0.682 N")
    bottom.plot(Ns, [r["t_loss"] for r in flow], "s:", label="loss ≤ ½ (not emergence)")
    bottom.set(xscale="log", yscale="log", xlabel="N", ylabel="time")
    bottom.legend()
    fig.tight_layout()
    doc = {
        "N": Ns, "flow_half": flow, "flow_fig6_thresholds": fig6_thr, "asymptote": asym,
        "t_icl_over_N2": [r["t_icl"] / N**2 for r, N in zip(flow, Ns, strict=True)],
        "t_loss_over_t_icl": [r["t_loss"] / r["t_icl"] for r in flow],
        "asymptote_rel_error": [abs(r["t_icl"] - a["t_icl"]) / r["t_icl"]
                                for r, a in zip(flow, asym, strict=True)],
        "gd": {"lr_eff": lr, "N": gd_Ns, "steps": gd},
    }
    return doc, fig


def gram19(quick: bool):
    import matplotlib.pyplot as plt

    Ns = [4, 8] if quick else [4, 8, 16]
    rows = []
    for query in ("last", "uniform"):
        for mask in ("strict", "inclusive"):
            for N in Ns:
                row = {"query": query, "mask": mask, "N": N}
                for name, fn in (("three_param", th.emergence_times), ("gram19", th.gram19_emergence_times)):
                    r = fn(N, query, mask=mask, loss_level=0.5)
                    r01 = fn(N, query, (0.5, 0.1, 0.1), mask=mask)
                    row[name] = {**r, "T_beta_0.1": r01["T_beta"], "T_alpha_0.1": r01["T_alpha"]}
                rows.append(row)
    fig, ax = plt.subplots(figsize=(7, 4))
    labels = [f"{r['query'][0]}/{r['mask'][:3]}/{r['N']}" for r in rows]
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r["three_param"]["t_loss"] for r in rows], 0.4, label="3-param: loss ≤ ½")
    ax.bar(x + 0.2, [r["gram19"]["t_loss"] for r in rows], 0.4, label="19-param: loss ≤ ½")
    ax.set_xticks(x, labels, rotation=60, fontsize=7)
    ax.set(yscale="log", ylabel="gradient-flow time", title="exact flows, orthonormal data")
    ax.legend()
    fig.tight_layout()
    return {"rows": rows}, fig


def uniform(quick: bool):
    import matplotlib.pyplot as plt

    Ns = [4 * 2**k for k in range(6 if quick else 8)]
    res = [th.emergence_times(N, "uniform") for N in Ns]
    fit = th.uniform_query_t_icl(np.array(Ns, dtype=float))
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(Ns, [r["t_icl"] for r in res], "o-", label="t_ICL, q ~ Unif (exact flow)")
    ax.plot(Ns, fit, "k--", label="N²/(0.622 ln N + 0.143)")
    ax.plot(Ns, [th.emergence_times(N)["t_icl"] for N in Ns], "s:", label="t_ICL, q = N")
    ax.set(xscale="log", yscale="log", xlabel="N", ylabel="time")
    ax.legend()
    fig.tight_layout()
    slope = np.diff(np.log([r["t_icl"] for r in res])) / np.diff(np.log(Ns))
    return {"N": Ns, "times": res, "fit": fit.tolist(), "local_exponent": slope.tolist(),
            "fit_rel_error": [abs(r["t_icl"] - f) / r["t_icl"] for r, f in zip(res, fit, strict=True)]}, fig


def _sgd(model, task, lr: float, steps: int, batch: int) -> dict[str, Any]:
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    names = model.names
    theta, loss, t0 = [], [], time.perf_counter()
    for step in range(steps + 1):
        b = task.sample(batch, step)
        value = task.loss(model, b)
        loss.append(value.item())
        if model.config.params == "full":
            theta.append(project(model.W1, model.W2, model.W3) if step % 5 == 0 else None)
        else:
            theta.append(model.theta.detach().numpy().copy())
        if step < steps:
            opt.zero_grad()
            value.backward()
            opt.step()
    wall = time.perf_counter() - t0
    idx = [i for i, t in enumerate(theta) if t is not None]
    traj = np.array([theta[i] for i in idx])
    first = {}
    for name in THREE_PARAM:
        col = traj[:, names.index(name)]
        for level in (0.1, 0.5):
            hit = np.nonzero(col >= level)[0]
            first[f"{name}>={level}"] = int(idx[hit[0]]) if hit.size else None
    for level in (0.5, 0.2):
        hit = np.nonzero(np.array(loss) <= level)[0]
        first[f"loss<={level}"] = int(hit[0]) if hit.size else None
    return {"steps": idx, "theta": traj, "names": names, "loss": loss, "first_step": first,
            "seconds_per_step": wall / steps}


def _time_reference(task, model, batch: int, repeats: int = 5) -> float:
    """Seconds per SGD step of the literal model (every layer on every row) at the same weights."""
    W = [w.detach().clone().requires_grad_(True) for w in (model.W1, model.W2, model.W3)]
    t0 = time.perf_counter()
    for step in range(repeats):
        b = task.sample(batch, step)
        err = ((disentangled_transformer(b.X, *W, model.config.mask) - b.y) ** 2).sum(-1)
        loss = (err / task.dim).mean()
        loss.backward()
        with torch.no_grad():
            for w in W:
                w -= w.grad
                w.grad = None
    return (time.perf_counter() - t0) / repeats


def fig4(quick: bool):
    import matplotlib.pyplot as plt

    D, N, B, steps = (16, 4, 256, 80) if quick else (16, 4, 512, 400)
    torch.set_num_threads(1)
    task = InductionPairs(D, N, data="gaussian", query="uniform", reduction="mean", data_seed=0)
    full = DisentangledTransformer(dim=D, mask="inclusive")
    three = DisentangledTransformer(dim=D, mask="inclusive", params="three_param")
    runs = {"full": _sgd(full, task, 1.0, steps, B), "three_param": _sgd(three, task, 1.0 / D, steps, B)}
    report = subspace_report(full.W1.detach(), full.W2.detach(), full.W3.detach())
    ref_seconds = _time_reference(task, full, B)
    fig, axes = plt.subplots(2, 2, figsize=(10, 6), sharex=True)
    for col, (name, r) in enumerate(runs.items()):
        for k, pname in enumerate(r["names"]):
            lw, alpha = (2, 1) if pname in THREE_PARAM else (0.8, 0.5)
            axes[0, col].plot(r["steps"], r["theta"][:, k], lw=lw, alpha=alpha,
                              label=pname if pname in THREE_PARAM else None)
        axes[0, col].set(title=f"{name}: pseudo-parameters (D={D}, N={N}, B={B})")
        axes[0, col].legend(fontsize=7)
        axes[1, col].plot(r["loss"])
        axes[1, col].set(xlabel="SGD step", ylabel="loss (mean over D)")
    fig.tight_layout()
    doc = {"settings": {"D": D, "N": N, "batch": B, "steps": steps, "lr": 1.0, "lr_three_param": 1.0 / D,
                        "data": "gaussian", "mask": "inclusive", "reduction": "mean"},
           "runs": {k: {"first_step": v["first_step"], "final_loss": v["loss"][-1],
                        "final_theta": dict(zip(v["names"], v["theta"][-1].tolist(), strict=True)),
                        "seconds_per_step": v["seconds_per_step"]} for k, v in runs.items()},
           "full_subspace": {"rho": report["rho"], "residual": report["residual"]},
           "literal_reference_seconds_per_step": ref_seconds,
           "largest_final": sorted(zip(NAMES, runs["full"]["theta"][-1].tolist(), strict=True),
                                   key=lambda kv: -abs(kv[1]))[:5]}
    return doc, fig


FIGURES: dict[str, Callable[[bool], tuple[dict, Any]]] = {
    "musat2025-fig6": fig6,
    "musat2025-gram19": gram19,
    "musat2025-uniform": uniform,
    "musat2025-fig4": fig4,
}


def run_figure(name: str, out: str | Path, quick: bool = False) -> dict[str, Any]:
    """Run figure `name`; write out/NAME.png and out/NAME.json; return the JSON document."""
    from fastattn import plots

    if name not in FIGURES:
        raise ValueError(f"unknown figure {name!r}; choose one of {sorted(FIGURES)}")
    t0 = time.perf_counter()
    doc, fig = FIGURES[name](quick)
    doc = {"name": name, "quick": quick, **doc, "wall_time": time.perf_counter() - t0}
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    plots.save(fig, out / f"{name}.png")
    (out / f"{name}.json").write_text(json.dumps(to_jsonable(doc), indent=1))
    return doc
