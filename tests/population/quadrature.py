"""Tensor Gauss–Hermite rules: the expectation of a polynomial of degree ≤ 2n − 1 in standard
normal coordinates, exact to rounding (tests/population/test_*_quadrature.py)."""

from __future__ import annotations

import itertools

import numpy as np
import torch


def hermite_rule(n: int, dims: int) -> tuple[torch.Tensor, torch.Tensor]:
    """n nodes per coordinate for N(0, I_dims): nodes `[n^dims, dims]`, weights `[n^dims]` summing
    to 1 (float64)."""
    x, w = np.polynomial.hermite_e.hermegauss(n)
    w = w / w.sum()
    nodes = np.array(list(itertools.product(x, repeat=dims))).reshape(-1, dims)
    weights = np.prod(np.array(list(itertools.product(w, repeat=dims))).reshape(-1, dims), axis=1)
    return torch.as_tensor(nodes), torch.as_tensor(weights)


def normal_draws(monkeypatch, blocks: list[torch.Tensor]) -> None:
    """Make the next len(blocks) calls of `torch.randn` return `blocks` in order (each call's
    shape checked), so that a task's own sampling code builds a batch at quadrature nodes."""
    queue = list(blocks)

    def randn(*shape, **kw):
        block = queue.pop(0)
        assert tuple(shape[0] if len(shape) == 1 and isinstance(shape[0], tuple | list)
                     else shape) == tuple(block.shape), (shape, block.shape)
        return block.clone()

    monkeypatch.setattr(torch, "randn", randn)
