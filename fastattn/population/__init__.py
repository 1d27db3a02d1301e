"""Exact objectives and their gradient flows.

- objectives: `Objective` (the core's interface; subclass it in Python), `LinearAttentionObjective`
  (the zero-block linear attention models' closed form, docs/theory.md §1–3), and the registry
  `objective_for(task, model)` / `register_objective` / `registered_objectives` (each paper's
  manifest lists the modules that register its objectives: `fastattn.papers`);
- flows: `integrate(objective, params0, FlowOptions(...))` → `FlowResult` (docs/theory.md §4), the
  one integrator entry for every objective;
- the linear attention models by family name: `loss_and_grad`, `hessian`, `hvp`, `make_evaluator`,
  `gamma`, `n_params`, `conserved_quantities`.
"""

from fastattn.population.api import EventHit, FlowResult, IntegrationResult, integrate
from fastattn.population.autoregressive import AutoRegressiveObjective, PEOnlyObjective
from fastattn.population.moments import Moments
from fastattn.population.objectives import (
    FAMILIES,
    LinearAttentionObjective,
    Objective,
    conserved_quantities,
    gamma,
    hessian,
    hvp,
    linear_dims,
    loss_and_grad,
    make_evaluator,
    n_params,
)
from fastattn.population.options import METHODS, CoordinateEvent, FlowOptions, LossEvent
from fastattn.population.registry import objective_for, register_objective, registered_objectives
from fastattn.population.wishart_tasks import (
    FullModelObjective,
    WishartAlignedObjective,
    WishartReducedObjective,
)

__all__ = [
    "FAMILIES",
    "METHODS",
    "AutoRegressiveObjective",
    "CoordinateEvent",
    "EventHit",
    "FlowOptions",
    "FlowResult",
    "FullModelObjective",
    "IntegrationResult",
    "LinearAttentionObjective",
    "LossEvent",
    "Moments",
    "Objective",
    "PEOnlyObjective",
    "WishartAlignedObjective",
    "WishartReducedObjective",
    "conserved_quantities",
    "gamma",
    "hessian",
    "hvp",
    "integrate",
    "linear_dims",
    "loss_and_grad",
    "make_evaluator",
    "n_params",
    "objective_for",
    "register_objective",
    "registered_objectives",
]
