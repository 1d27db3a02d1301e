"""The fused He et al. 2025 Adam step (spec §7.2 K1) against its float64 reference: the kernel's
batch against the fast stream's reference generator and the C++ core's, its loss and updated
parameters and Adam moments against autograd + Adam on that batch; small odd shapes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fastattn._core_loader import core as _core
from fastattn.triton_kernels.he_train_step.kernel import he_adam_step_triton, he_adam_steps_triton
from fastattn.triton_kernels.he_train_step.reference import adam_step_reference, sample_reference

DTYPES = [torch.float32, torch.float64]
CASES = [(2, 2, 2, 5, 19), (1, 3, 3, 4, 7),
         *(pytest.param(*c, marks=pytest.mark.cuda_only) for c in [(20, 8, 5, 40, 256),
                                                                   (3, 1, 7, 100, 1000)])]


def _runs(runs, heads, d, seed, device, dtype):
    g = torch.Generator().manual_seed(seed)
    dd = d + 1
    p = 3 * heads * dd * dd + heads * dd
    theta = (torch.rand(runs, p, generator=g, dtype=torch.float64) - 0.5)
    m = 1e-3 * torch.randn(runs, p, generator=g, dtype=torch.float64)
    v = 1e-6 * torch.rand(runs, p, generator=g, dtype=torch.float64)
    a = torch.randn(runs, d, d, generator=g, dtype=torch.float64)
    x_factor = torch.linalg.cholesky(a @ a.transpose(1, 2) / d + torch.eye(d))
    w_factor = torch.eye(d, dtype=torch.float64).expand(runs, d, d) / d ** 0.5
    law = dict(seeds=torch.randint(0, 2**40, (runs,), generator=g), lr=torch.rand(runs, generator=g,
               dtype=torch.float64) * 1e-2, x_factor=x_factor, w_factor=w_factor.contiguous(),
               noise_std=torch.rand(runs, generator=g, dtype=torch.float64))
    to = {"device": device, "dtype": dtype}
    state = tuple(t.to(**to).contiguous() for t in (theta, m, v))
    return state, {k: t.to(device) for k, t in law.items()}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("runs", "heads", "d", "context", "batch"), CASES)
def test_kernel_step_equals_the_reference(device, dtype, seed, runs, heads, d, context, batch,
                                          rms_close):
    (theta, m, v), law = _runs(runs, heads, d, seed, device, dtype)
    step = 2**33 + 5 if heads == 3 else 3  # a step past 2³² uses the counter's high word
    before = [t.double().cpu().clone() for t in (theta, m, v)]  # the kernel updates in place
    loss, batches = he_adam_step_triton(theta, m, v, law["seeds"], law["lr"], law["x_factor"],
                                        law["w_factor"], law["noise_std"], heads, context, batch,
                                        step, write_batch=True)
    got = [b.double().cpu() for b in batches]
    for r in range(runs):
        seed_r, xf, wf = int(law["seeds"][r]), law["x_factor"][r].cpu(), law["w_factor"][r].cpu()
        ref = sample_reference(seed_r, step, batch, context, xf, wf, float(law["noise_std"][r]))
        for a, b in zip((g[r] for g in got), ref, strict=True):  # float32 normals in the kernel
            torch.testing.assert_close(a, b, rtol=0, atol=1e-4)
        core = _core.he_sample(seed_r, step, dim=d, context=context, batch=batch,
                               x_factor=xf.numpy(), w_factor=wf.numpy(),
                               noise_std=float(law["noise_std"][r]), float64=True)
        for a, b in zip((g[r] for g in got), core, strict=True):
            torch.testing.assert_close(a, torch.from_numpy(b), rtol=0, atol=1e-4)
    want = adam_step_reference(*before, heads, [tuple(g[r] for g in got) for r in range(runs)],
                               step, law["lr"].cpu())
    for name, w, t in zip(("theta", "m", "v", "loss"), want, (theta, m, v, loss), strict=True):
        rms_close(name, w, t, dtype)


@pytest.mark.parametrize("n_steps", [3, pytest.param(2 * 64 + 3, marks=pytest.mark.cuda_only)])
def test_steps_in_one_call_equal_steps_one_at_a_time(device, seed, n_steps):
    """n steps in one call (on CUDA past 64 steps: replays of a captured graph) are bit for bit the
    kernel's single steps taken one after another (each checked against the reference above), the
    counter's high word turning over on the way."""
    (theta, m, v), law = _runs(2, 2, 3, seed, device, torch.float32)
    args = (law["seeds"], law["lr"], law["x_factor"], law["w_factor"], law["noise_std"], 2, 6, 9)
    step0 = 2**32 - 2
    alone = [t.clone() for t in (theta, m, v)]
    losses = he_adam_steps_triton(theta, m, v, *args, step0, n_steps)
    one = torch.stack([he_adam_step_triton(*alone, *args, step0 + k) for k in range(n_steps)], 1)
    assert torch.equal(losses, one)
    for a, b in zip((theta, m, v), alone, strict=True):
        assert torch.equal(a, b)


def test_reference_generator_matches_the_core(seed):
    """The torch reference and the C++ core draw the same normals (independent codes)."""
    from fastattn.triton_kernels.he_train_step.reference import normals_reference

    rng = np.random.default_rng(seed)
    for _ in range(3):
        s, k, b = int(rng.integers(0, 2**63)), int(rng.integers(0, 2**40)), int(rng.integers(0, 999))
        got = _core.he_normals(s, k, b, dim=4, context=7)
        want = normals_reference(s, k, torch.tensor([b]), len(got))[0].numpy()
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-5)
