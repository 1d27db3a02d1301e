"""fastattn.ops.he_adam_step(s): the C++ backend and the Triton kernel's steps against the float64
reference, and the dispatch's errors (one kernel step: tests/triton_kernels/
test_kernel_he_train_step.py)."""

from __future__ import annotations

import pytest
import torch

from fastattn.ops import BackendUnavailableError, he_adam_step, he_adam_steps


def _inputs(runs=2, heads=2, d=3):
    g = torch.Generator().manual_seed(0)
    dd = d + 1
    theta = torch.rand(runs, 3 * heads * dd * dd + heads * dd, generator=g, dtype=torch.float64) - 0.5
    law = dict(seeds=torch.tensor([3, 2**35 + 1]), lr=torch.tensor([1e-3, 3e-3], dtype=torch.float64),
               x_factor=torch.eye(d, dtype=torch.float64).repeat(runs, 1, 1),
               w_factor=torch.eye(d, dtype=torch.float64).repeat(runs, 1, 1) / d ** 0.5,
               noise_std=torch.tensor([0.3, 0.1], dtype=torch.float64))
    return theta, law


def test_cpp_backend_equals_the_reference():
    theta, law = _inputs()
    out = {}
    for backend in ("cpp", "reference"):
        state = [theta.clone(), torch.zeros_like(theta), torch.zeros_like(theta)]
        losses = [he_adam_step(*state, **law, heads=2, context=9, batch=33, step=k,
                               backend=backend) for k in range(3)]
        out[backend] = (torch.stack(losses), state)
    # the core's normals are float32 (the reference's float64): equal to ~1e-6
    torch.testing.assert_close(out["cpp"][0], out["reference"][0], rtol=1e-5, atol=0)
    for a, b in zip(out["cpp"][1], out["reference"][1], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-7)


def test_bad_inputs_and_unavailable_backends_are_named():
    theta, law = _inputs()
    m = torch.zeros_like(theta)
    with pytest.raises(ValueError, match="theta must be"):
        he_adam_step(theta[:, 1:], m[:, 1:], m[:, 1:], **law, heads=3, context=9, batch=8, step=0)
    with pytest.raises(ValueError, match="m must match theta"):
        he_adam_step(theta, m.float(), m, **law, heads=2, context=9, batch=8, step=0)
    if not torch.cuda.is_available():
        with pytest.raises(BackendUnavailableError, match="TRITON_INTERPRET"):
            he_adam_step(theta, m, m.clone(), **law, heads=2, context=9, batch=8, step=0,
                         backend="triton")


@pytest.mark.parametrize("backend", ["cpp", pytest.param("triton", marks=pytest.mark.interpreter)])
def test_several_steps_in_one_call_equal_the_reference(backend, monkeypatch):
    """Four steps in one call (batches 2³² − 2 .. 2³² + 1: the counter's high word turns over),
    against four steps of the float64 reference: every step's loss and the final state (the
    kernels draw float32 normals, the reference float64: equal to ~1e-6)."""
    if backend == "triton":
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    theta, law = _inputs()
    step0 = 2**32 - 2
    out = {}
    for name in (backend, "reference"):
        state = [theta.clone(), torch.zeros_like(theta), torch.zeros_like(theta)]
        losses = he_adam_steps(*state, **law, heads=2, context=9, batch=33, step0=step0,
                               n_steps=4, backend=name)
        out[name] = (losses, state)
    assert out[backend][0].shape == (2, 4)
    torch.testing.assert_close(out[backend][0], out["reference"][0], rtol=1e-5, atol=0)
    for a, b in zip(out[backend][1], out["reference"][1], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-7)
