"""Samplers of (β, x_q, y_q): moments against the exact Gaussian moments, reproducibility."""

from __future__ import annotations

import pytest
import torch

from fastattn.triton_kernels.sampling import reference as R
from fastattn.triton_kernels.sampling.kernel import sample_icl_stats_kernel

D, N, SIGMA = 3, 5, 0.3


def _task():
    lmat = torch.tensor([[1.0, 0, 0], [0.3, 0.8, 0], [0.1, -0.2, 0.5]], dtype=torch.float64)
    mu = torch.tensor([0.5, -0.2, 0.1], dtype=torch.float64)
    f = torch.tensor([[0.7, 0, 0], [0.1, 0.5, 0], [0, 0.2, 0.6]], dtype=torch.float64)
    return lmat, mu, f


def _exact(context=N):
    """E β = Λμ; E ββᵀ = ΛSΛ + (ΛSΛ + tr(SΛ)Λ)/N + σ²Λ/N; E x_q x_qᵀ = Λ; E y_q² = tr(SΛ) + σ²;
    E y_q β x_qᵀ = ΛSΛ; E β y_q = 0 (x_q has mean zero), with S = Σ_w + μμᵀ."""
    lmat, mu, f = _task()
    lam, s = lmat @ lmat.T, f @ f.T + torch.outer(mu, mu)
    lsl, tr = lam @ s @ lam, torch.trace(s @ lam)
    return {"beta": lam @ mu,
            "beta_beta": lsl + (lsl + tr * lam) / context + SIGMA**2 * lam / context,
            "xq_xq": lam, "yy": tr + SIGMA**2, "zy": lsl,
            "beta_y": torch.zeros(D, dtype=torch.float64)}


def _check_moments(beta, x_q, y_q, context=N):
    beta, x_q, y_q = beta.double(), x_q.double(), y_q.double()
    samples = {"beta": beta, "beta_beta": beta[:, :, None] * beta[:, None, :],
               "xq_xq": x_q[:, :, None] * x_q[:, None, :], "yy": y_q * y_q,
               "zy": y_q[:, None, None] * beta[:, :, None] * x_q[:, None, :],
               "beta_y": beta * y_q[:, None]}
    for name, exact in _exact(context).items():
        v = samples[name]
        se = v.std(0) / v.shape[0] ** 0.5
        z = ((v.mean(0) - exact).abs() / se).max()
        assert z < 5.5, f"{name}: {float(z):.2f} standard errors from the exact moment"


@pytest.mark.parametrize("sampler", [R.sample_icl_stats_reference, R.sample_icl_stats_wishart],
                         ids=["literal", "wishart"])
def test_torch_samplers_moments_and_seeds(sampler, seed):
    lmat, mu, f = _task()
    out = sampler(seed, 3, 40000, N, lmat, mu, f, SIGMA)
    _check_moments(*out)
    again = sampler(seed, 3, 40000, N, lmat, mu, f, SIGMA)
    assert all(torch.equal(a, b) for a, b in zip(out, again, strict=True))
    other = sampler(seed, 4, 40000, N, lmat, mu, f, SIGMA)
    assert not torch.equal(out[0], other[0])


def test_mix_seed_separates_pairs():
    values = {R.mix_seed(s, t) for s in range(20) for t in range(20)}
    assert len(values) == 400 and all(0 <= v < 2**63 for v in values)


@pytest.mark.usefixtures("poison_empty")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize("batch,context", [(20000, N), pytest.param(400000, 257,
                                                                    marks=pytest.mark.cuda_only)],
                         ids=str)
def test_kernel_sampler_moments_and_reproducibility(batch, context, dtype, device, seed):
    lmat, mu, f = (t.to(device) for t in _task())
    out = sample_icl_stats_kernel(seed, 11, batch, context, lmat, mu, f, SIGMA, dtype=dtype)
    assert all(t.dtype == dtype and t.device.type == device.type and not torch.isnan(t).any()
               for t in out)
    _check_moments(*(t.cpu() for t in out), context=context)
    small = sample_icl_stats_kernel(seed, 11, 37, context, lmat, mu, f, SIGMA, dtype=dtype)
    again = sample_icl_stats_kernel(seed, 11, 37, context, lmat, mu, f, SIGMA, dtype=dtype)
    assert all(torch.equal(a, b) for a, b in zip(small, again, strict=True))
    # a batch is a pure function of (seed, step): the first rows do not depend on the batch size
    assert torch.equal(small[0], out[0][:37])
    other = sample_icl_stats_kernel(seed + 1, 11, 37, context, lmat, mu, f, SIGMA, dtype=dtype)
    assert not torch.equal(small[0], other[0])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["fp32", "fp64"])
def test_kernel_sampler_same_draws_compiled_and_interpreted(dtype, monkeypatch):
    """The Philox counters do not depend on the device or the block sizes (which differ between the
    interpreter and compiled code): the same (seed, step) gives the same batch up to the rounding
    of the normal transform (float32 log/cos on the GPU, numpy's on the CPU)."""
    if not torch.cuda.is_available():
        pytest.skip("compares compiled CUDA draws with the interpreter's; no CUDA device")
    lmat, mu, f = _task()
    args = (123, 4, 300, N)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    gpu = sample_icl_stats_kernel(*args, *(t.cuda() for t in (lmat, mu, f)), SIGMA, dtype=dtype)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    cpu = sample_icl_stats_kernel(*args, lmat, mu, f, SIGMA, dtype=dtype)
    for a, b in zip(gpu, cpu, strict=True):
        torch.testing.assert_close(a.cpu(), b, rtol=1e-4, atol=1e-5)
