"""The settings of Zhang et al. 2025's figures: spectra, context length, tasks and trainer configs.

Defaults follow the paper's *text* (1/N context normalisation, App. C.2 initialisation, the
captions' spectra); where the public code differs, a recipe offers the code's choice as an option
(docs/zhang2025.md lists them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fastattn.experiments.recipe import RunSpec, preset_run
from fastattn.models import build_model
from fastattn.tasks import LinearRegression
from fastattn.theory import zhang2025 as theory

#: the task of every figure here; D = 4, λ ∝ (4, 3, 2, 1) rotated, N = 31 and the models' heads,
#: inits and trainers are the pairs' presets (`fastattn.configs.zhang2025`): a recipe states only
#: what its figure changes
TASK = "linear_regression"
SPECTRUM_D8 = {"text": "inverse", "code": "linear"}   # Fig. 4/12 captions vs the code's gen_cov
SCHEMES = {"text": "paper", "code": "code"}           # option init=text|code → the model config's init_scheme


def run(label: str, model: str, group: dict[str, Any] | None = None, /, **given: Any) -> RunSpec:
    """The run `label` of (linear_regression, `model`)'s preset overridden by `given` (task=,
    model=, train= dicts, `init=`): `fastattn.experiments.recipe.preset_run`."""
    return preset_run(label, TASK, model, group=group, **given)


def fig3_setting(init_scale: float = 1e-2, seed: int = 0, heads: int = 5):
    """The Fig. 3 setting as (task, model), the benchmarks' reference problem: separate rank 1,
    the (linear_regression, separate) preset (D=4, λ=(.4,.3,.2,.1) in a random eigenbasis, here
    drawn from `seed`, N=31, App. C.2 init)."""
    spec = run("fig3", "separate", task={"rotation_seed": seed},
               model={"heads": heads, "init_scale": init_scale, "init_seed": seed})
    return spec.task, build_model(spec.model)


def eq19_levels(task: LinearRegression) -> np.ndarray:
    """The plateau levels L(M_0..M_D) of Eq. 19 for `task`."""
    return theory.fixed_point_losses(task.eigvals, task.inv_context_mean())


#: gradient norm at which an RK45 flow counts as converged. The plateaus of the D ≤ 8 figures lie
#: above it (during the m-th plateau ‖∇L‖ ≈ λ_m² v² with v ≳ the init scale 1e-2, ≳ 2e-8 for the
#: D = 8, λ ∝ 1/d spectrum), and at the minimum the loss excess ≈ ‖∇L‖²/(2h) is far below the
#: claims' tolerances (fig4 quick R8: 0.2100688834 vs Eq. 19's 0.2100688834).
#: A rule that does not know L*: a bug that moves the minimum moves the measured final loss.
GRAD_TOL = 1e-8

#: the integrator's relative tolerance over the stop's gradient norm. At a stiff minimum explicit
#: RK45 runs at its stability limit and holds the stiff components at its local error bound, so
#: the gradient jitters at ‖∇L‖ ≈ ‖H‖·rtol·‖θ‖ and never falls further: at rtol 1e-8 the D = 8
#: runs of rank ≥ 5 sat at 2e-8 … 8e-8 from t ≈ 6e3 to the horizon 1e6 (2 million evaluations,
#: the loss unchanged in 10 digits). 100× below the stop, the floor lies under it.
RTOL_PER_GRAD_TOL = 1e-2


def rk45(t_end: float, grad_tol: float = GRAD_TOL, **train: Any) -> dict[str, Any]:
    """Explicit RK45 flow (the stiff integrator's Hessian makes rank R > 1 runs slow), stopped at
    the horizon `t_end` or once the gradient norm falls below `grad_tol` (at the minimum the flow
    is stiff for an explicit method, and the converged tail carries no information), with rtol
    (and atol, 100× smaller) `RTOL_PER_GRAD_TOL`·grad_tol so that the integrator's error floor lies
    below the stop. Flatter plateaus (smaller inits, longer contexts) need a smaller `grad_tol`.
    The trainer overrides (train=) of an exact-flow preset, with the trainer values `train`."""
    rtol = RTOL_PER_GRAD_TOL * grad_tol
    return {"t_end": t_end, "integrator": "rk45", "grad_tol": grad_tol, "rtol": rtol,
            "atol": rtol * 1e-2, **train}
