"""InductionPairs (Musat et al. 2025, spec §2): the sequence layout, orthonormal constraints,
batches as pure functions of (seed, step), bad input."""

from __future__ import annotations

import pytest
import torch

from fastattn.models.disentangled import half_swap
from fastattn.tasks import TASKS, InductionPairs


def test_layout_and_targets():
    task = InductionPairs(4, 3, data="gaussian", query="uniform", data_seed=5)
    b = task.sample(6, step=1)
    D, N = 4, 3
    assert b.X.shape == (6, 2 * N + 1, 2 * D) and b.y.shape == (6, D)
    M = half_swap(D)
    items, labels = b.X[:, 0:2 * N:2], b.X[:, 1:2 * N:2]
    torch.testing.assert_close(labels[..., D:], items[..., D:] @ M, rtol=0, atol=0)
    rows = torch.arange(6)
    torch.testing.assert_close(b.X[:, -1, :D], items[rows, b.q - 1, :D], rtol=0, atol=0)
    assert torch.all(b.X[:, -1, D:] == 0)
    torch.testing.assert_close(b.y, labels[rows, b.q - 1, :D], rtol=0, atol=0)
    assert TASKS["induction"] is InductionPairs


def test_orthonormal_constraints_and_last_query():
    D, N = 8, 4
    b = InductionPairs(D, N, data="orthonormal", query="last").sample(5, step=3)
    X1 = b.X[:, :2 * N, :D]
    P = b.X[:, 0:2 * N:2, D:]
    eye = torch.eye(2 * N, dtype=torch.float64).expand(5, -1, -1)
    torch.testing.assert_close(X1 @ X1.transpose(1, 2), eye, rtol=0, atol=1e-13)
    torch.testing.assert_close(P @ P.transpose(1, 2), torch.eye(N, dtype=torch.float64).expand(5, -1, -1),
                               rtol=0, atol=1e-13)
    assert (P @ half_swap(D) @ P.transpose(1, 2)).abs().max() < 1e-13
    assert torch.all(b.q == N)


def test_batches_are_pure_functions_of_seed_and_step():
    t = InductionPairs(4, 2, data="orthonormal")
    a, b, c = t.sample(3, step=7), t.sample(3, step=7), t.sample(3, step=8)
    assert torch.equal(a.X, b.X) and not torch.equal(a.X, c.X)
    assert not torch.equal(a.X, InductionPairs(4, 2, data="orthonormal", data_seed=1).sample(3, step=7).X)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="even"):
        InductionPairs(5)
    with pytest.raises(ValueError, match="dim >= 2\\*context"):
        InductionPairs(4, 3, data="orthonormal")
    with pytest.raises(ValueError, match="query"):
        InductionPairs(4, 2, query="first")
