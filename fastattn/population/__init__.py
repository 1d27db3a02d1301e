"""Exact population loss, gradients, Hessian and gradient-flow integrators of the zero-block models.

See fastattn.population.api for shapes and docs/theory.md for the closed form.
"""

from fastattn.population.api import (
    IntegrationResult,
    conserved_quantities,
    gamma,
    hessian,
    hvp,
    integrate,
    loss_and_grad,
    make_evaluator,
    n_params,
)
from fastattn.population.moments import Moments

__all__ = [
    "IntegrationResult",
    "Moments",
    "conserved_quantities",
    "gamma",
    "hessian",
    "hvp",
    "integrate",
    "loss_and_grad",
    "make_evaluator",
    "n_params",
]
