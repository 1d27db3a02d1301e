"""The AutoRegressive task (Sander et al. 2024): batches are pure functions of (seed, step), every
context distribution produces s_{t+1} = W s_t with norm-preserving W of the right family, and the
token encodings follow spec §2.4."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fastattn.tasks import TASKS, AutoRegressive, build_task
from fastattn.tasks.autoregressive import complexify, realify
from fastattn.training.records import to_jsonable

CASES = [("unitary", "complex", 4), ("orthogonal", "complex", 4), ("positional", "complex", 1),
         ("unitary", "real", 4), ("orthogonal", "real", 4), ("positional", "real", 2),
         ("haar", "real", 3), ("haar", "real", 1)]


@pytest.mark.parametrize("dist,rep,d", CASES)
def test_states_follow_the_ar_process(dist, rep, d):
    task = AutoRegressive(dim=d, context=7, context_dist=dist, representation=rep, mu=3.0)
    b = task.sample(16, 2)
    assert b.states.shape == (16, 8, d) and b.tokens.shape == (16, 7, d)
    assert b.targets.shape == (16, 6, d)
    assert b.states.is_complex() == (rep == "complex")
    nxt = torch.einsum("nij,ntj->nti", b.W, b.states[:, :-1])
    torch.testing.assert_close(nxt, b.states[:, 1:], rtol=0, atol=1e-12)
    eye = torch.eye(d, dtype=b.W.dtype).expand_as(b.W)
    torch.testing.assert_close(b.W.mH @ b.W, eye, rtol=0, atol=1e-12)       # unitary / orthogonal
    torch.testing.assert_close(b.states[:, 0], torch.ones(16, d, dtype=b.states.dtype))
    again = task.sample(16, 2)
    assert torch.equal(again.states, b.states) and not torch.equal(task.sample(16, 3).states, b.states)


def test_context_families():
    b = AutoRegressive(dim=4, context=3, context_dist="orthogonal").sample(32, 0)
    lam = torch.diagonal(b.W, dim1=-2, dim2=-1)
    torch.testing.assert_close(lam[:, 1::2], lam[:, ::2].conj())               # conjugate pairs
    b = AutoRegressive(dim=1, context=3, context_dist="positional", mu=50.0).sample(256, 0)
    phase = torch.angle(b.W[:, 0, 0]) % (2 * math.pi)
    assert float(phase.max()) < 2 * math.pi / 50
    det = torch.linalg.det(AutoRegressive(dim=3, context=3, context_dist="haar",
                                          representation="real").sample(256, 0).W)
    assert (det > 0).any() and (det < 0).any()                                # Haar on O(d)


def test_real_unitary_is_the_realified_complex_process():
    z = AutoRegressive(dim=3, context=5).sample(8, 0)
    x = AutoRegressive(dim=6, context=5, representation="real").sample(8, 0)
    # same phases; the real start (1, …, 1) is the complex start (1 + i)·1
    torch.testing.assert_close(complexify(x.states), z.states * (1 + 1j), rtol=0, atol=1e-12)
    torch.testing.assert_close(complexify(realify(z.states)), z.states)


def test_encodings_and_conventions():
    d, tmax = 2, 5
    plain = AutoRegressive(dim=d, context=tmax, duplicate=2).sample(4, 0)
    assert plain.tokens.shape == (4, tmax, 2 * d)
    torch.testing.assert_close(plain.tokens, plain.states[:, :tmax].repeat(1, 1, 2))
    torch.testing.assert_close(plain.targets, plain.states[:, 2:].repeat(1, 1, 2))
    for s0 in ("zero", "backward"):
        b = AutoRegressive(dim=d, context=tmax, encoding="augmented", s0=s0).sample(4, 0)
        e = b.tokens
        assert e.shape == (4, tmax, 3 * d) and torch.all(e[..., :d] == 0)
        torch.testing.assert_close(e[:, :, d:2 * d], b.states[:, :tmax])
        torch.testing.assert_close(e[:, 1:, 2 * d:], b.states[:, :tmax - 1])
        first = e[:, 0, 2 * d:]
        if s0 == "zero":
            assert torch.all(first == 0)
        else:                                                                   # W s_0 = s_1
            torch.testing.assert_close(torch.einsum("nij,nj->ni", b.W, first), b.states[:, 0])
    unit = AutoRegressive(dim=4, context=3, s1="unit").sample(2, 0)
    np.testing.assert_allclose(unit.states.abs().square().sum(-1).numpy(), 1.0, atol=1e-14)


def test_zero_model_loss_is_d_times_tmax_minus_one():
    """Spec §4.1: ℓ(0) = d(T_max − 1) (190 for d = 10, T_max = 20)."""

    class Zero(torch.nn.Module):
        def predict(self, tokens):
            return torch.zeros_like(tokens[:, 1:])

    task = AutoRegressive(dim=10, context=20)
    assert float(task.loss(Zero(), task.sample(8, 0))) == pytest.approx(190.0)
    assert task.zero_loss() == 190.0


def test_registry_record_and_errors():
    assert TASKS["autoregressive"] is AutoRegressive
    task = AutoRegressive(dim=4, context=6, context_dist="orthogonal", s0="backward", data_seed=3)
    again = build_task({"kind": task.kind, **to_jsonable(task)})
    assert again == task
    with pytest.raises(ValueError, match="context_dist must be one of"):
        AutoRegressive(context_dist="rotation")
    with pytest.raises(ValueError, match="representation='real'"):
        AutoRegressive(context_dist="haar")
    with pytest.raises(ValueError, match="dim=3 must be even"):
        AutoRegressive(dim=3, context_dist="orthogonal")
    with pytest.raises(ValueError, match="mu must be at least 1"):
        AutoRegressive(dim=1, context_dist="positional", mu=0.5)
    with pytest.raises(ValueError, match="at least 2"):
        AutoRegressive(context=1)
