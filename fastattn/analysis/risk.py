"""Monte-Carlo risk E(y_q − ŷ_q)² of any predictor or trained model on any task, at any context length.

Prompts come from `task.sample` with the evaluation seed as the data seed (so the prompts are a
pure function of (seed, chunk)); squared errors are summed in float64 chunk by chunk in a fixed order,
so the result does not depend on threads. Change the context length with `task.with_context(L)`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import NamedTuple

import torch

from fastattn import _validate as check


class Risk(NamedTuple):
    """Mean squared error with its standard error over `n` prompts."""

    mean: float
    se: float
    n: int


def monte_carlo_risk(predictor: Callable[..., torch.Tensor], task, n: int, seed: int = 0,
                     chunk: int = 10_000, dtype: torch.dtype | None = None) -> Risk:
    """E(y_q − ŷ_q)² over `n` fresh prompts of `task` (a LinearRegression-like task).

    Args:
        predictor: ŷ_q = predictor(x, y, x_q, lengths=...) `[B]`: a model or a
            `fastattn.models.predictors` predictor.
        n: number of prompts. seed: evaluation seed (the training stream's seed is not used).
        chunk: prompts per sampled batch; the prompts drawn depend on it, so keep it fixed to
            reproduce a number.
        dtype: dtype of the prompts the predictor sees (default: the predictor's parameters', else
            float64); the errors are accumulated in float64.
    """
    check.positive_int("n", n)
    check.positive_int("chunk", chunk)
    if dtype is None:
        params = list(predictor.parameters()) if isinstance(predictor, torch.nn.Module) else []
        dtype = params[0].dtype if params else torch.float64
    stream = dataclasses.replace(task, data_seed=int(seed))
    total = total_sq = 0.0
    done, step = 0, 0
    with torch.no_grad():
        while done < n:
            m = min(chunk, n - done)
            batch = stream.sample(m, step, dtype=dtype)
            pred = predictor(batch.x, batch.y, batch.x_q, lengths=batch.lengths)
            # several outputs (multi-task): the mean over them, as the authors' nn.MSELoss
            err = ((batch.y_q.double() - pred.double()) ** 2).reshape(m, -1).mean(-1)
            total += float(err.sum())
            total_sq += float((err ** 2).sum())
            done, step = done + m, step + 1
    mean = total / n
    var = max(total_sq / n - mean ** 2, 0.0) * n / max(n - 1, 1)
    return Risk(mean, math.sqrt(var / n), n)
