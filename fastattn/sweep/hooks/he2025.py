"""He et al. 2025's theory in a sweep (linear_regression × multihead_softmax / multihead_linear,
sampled training): the trained model's risk E(y_q − ŷ_q)² at the training context length L and at
EVAL_FACTORS × L (Monte Carlo on fresh prompts of the eval seed, with its standard error), its
effective GD step η_eff = Σ_h μ_h ω_h and head signs (`analysis.patterns`), beside the closed forms
at the same L: debiased GD at η* (Theorem 1's predictor, exact finite-L risk), vanilla GD at its
best step, and the single-head reference predictor (Chen et al. 2024a, §1.6; approximate loss L̃).

The closed forms assume He's setting: x ~ N(0, I_d), β ~ N(0, I_d/d) (`--spectrum 1/1/1/1/1
--w-var 0.2` at d = 5: the named spectra are normalised to trace 1), label noise σ² = --noise;
elsewhere they are NaN.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from fastattn.analysis.patterns import pattern_metrics
from fastattn.sweep.hooks.base import Columns, Hooks
from fastattn.sweep.horizon import Horizon
from fastattn.theory import he2025 as th
from fastattn.training import Trajectory

#: evaluation context lengths as multiples of the training L (besides L itself)
EVAL_FACTORS = {"half_L": 0.5, "2L": 2.0, "4L": 4.0}
#: Monte Carlo prompts per risk estimate
MC_PROMPTS = 10_000
_CHUNK = 2_000


def he_setting(task) -> bool:
    d = task.dim
    return (np.allclose(task.cov_matrix, np.eye(d)) and np.allclose(task.w_second_moment(), np.eye(d) / d)
            and task.fixed_task_fraction == 0 and len(task.context_lengths) == 1)


def _lengths(L: int) -> dict[str, int]:
    return {"": L} | {f"_{k}": max(2, round(f * L)) for k, f in EVAL_FACTORS.items()}


def predictions(task, model: Mapping[str, Any], params0, horizon: Horizon) -> Columns:
    """η*, and at each evaluation L: R_dGD(η*), R_GD at its best step, the single-head risk L̃."""
    nan = float("nan")
    L = int(task.max_context)
    out: Columns = {"theory_eta_star": nan}
    ok = he_setting(task)
    d, s2 = task.dim, float(task.noise)
    if ok:
        out["theory_eta_star"] = th.eta_star(d, L, s2)
    for suffix, n in _lengths(L).items():
        if ok:
            eta = th.eta_star(d, n, s2)
            out[f"theory_risk_dgd{suffix}"] = float(th.risk_dgd(eta, d, n, s2))
            out[f"theory_risk_gd{suffix}"] = float(th.risk_gd(th.eta_gd_opt(d, n, s2), d, n, s2))
            w, m = th.single_head_nw(d, n, s2)
            out[f"theory_risk_single_head{suffix}"] = th.approx_loss([w], [m], d, n, s2)
        else:
            for k in ("dgd", "gd", "single_head"):
                out[f"theory_risk_{k}{suffix}"] = nan
    return out


def flow_horizon(theory: Columns, horizon: Horizon) -> tuple[float | None, float | None]:
    """He et al.'s models train with sampled methods: no flow horizon (give --t-end for a flow)."""
    return None, None


def mc_risk(model, task, L: int, n: int = MC_PROMPTS) -> tuple[float, float]:
    """(mean, standard error) of (y_q − ŷ_q)² over n fresh prompts of length L, drawn from the
    task's data stream re-seeded with its eval seed (`task.data_seed` is replaced by the caller)."""
    t = dataclasses.replace(task, context=L)
    dtype = next(model.parameters()).dtype
    errs = []
    with torch.no_grad():
        for k, m in enumerate(_chunks(n)):
            b = t.sample(m, k, dtype=dtype)
            pred = model(b.x, b.y, b.x_q)
            errs.append(((b.y_q - pred.reshape(b.y_q.shape)) ** 2).double().numpy())
    e = np.concatenate(errs)
    return float(e.mean()), float(e.std(ddof=1) / math.sqrt(e.size))


def _chunks(n: int) -> list[int]:
    return [min(_CHUNK, n - i) for i in range(0, n, _CHUNK)]


def measurements(traj: Trajectory, theory: Columns, measured: Columns) -> Columns:
    """risk (+ _se) at L and EVAL_FACTORS × L, η_eff, head signs, sign match, and risk − R_dGD."""
    task, model = measured["_task"], measured.get("_model")
    out: Columns = {}
    if model is None or not len(traj.params):
        return out
    model.load_flat(np.asarray(traj.params[-1], dtype=np.float64))
    eval_task = dataclasses.replace(task, data_seed=int(traj.config.get("train", {}).get("eval_seed", 1)))
    for suffix, n in _lengths(int(task.max_context)).items():
        out[f"risk{suffix}"], out[f"risk{suffix}_se"] = mc_risk(model, eval_task, n)
    out["risk_minus_dgd"] = out["risk"] - theory.get("theory_risk_dgd", float("nan"))
    kq = model.extract_kq().detach().double().numpy()
    ov = model.extract_ov().detach().double().numpy()
    m = pattern_metrics(kq, ov)
    out["eta_eff"] = float(m["eta_eff"])
    out["head_signs"] = "".join({1: "+", -1: "-", 0: "0"}[int(s)] for s in m["sign"])
    out["sign_match"] = float(m["sign_match"])
    out["n_dummy_heads"] = int(m["n_dummy"])
    return out


HOOKS = Hooks(
    "he2025", frozenset(("linear_regression", m) for m in ("multihead_softmax", "multihead_linear")),
    predictions, flow_horizon, measurements,
    plots={"risk": f"{__package__}.he2025_plots:plot_risk"})
