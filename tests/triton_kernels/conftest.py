"""Fixtures for the kernel tests: interpreter mode, NaN-poisoned allocations, error metrics."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture
def seed() -> int:
    """Fresh random inputs on every run; the seed is printed so a failure can be replayed."""
    value = int(torch.seed() % (2**31))
    print(f"torch seed = {value}")
    return value


@pytest.fixture
def interpret(monkeypatch):
    """Run Triton kernels under the CPU interpreter (read at launch by TritonKernel)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")


@pytest.fixture
def poison_empty(monkeypatch):
    """torch.empty / empty_like return NaN-filled floating tensors, so unwritten outputs fail."""
    empty, empty_like = torch.empty, torch.empty_like

    def _poison(t):
        if t.is_floating_point():
            t.fill_(float("nan"))
        return t

    monkeypatch.setattr(torch, "empty", lambda *a, **k: _poison(empty(*a, **k)))
    monkeypatch.setattr(torch, "empty_like", lambda *a, **k: _poison(empty_like(*a, **k)))


@pytest.fixture
def rms_close():
    """The :func:`assert_rms_close` check, as a fixture (conftest modules are not importable)."""
    return assert_rms_close


def assert_rms_close(name: str, ref: torch.Tensor, tri: torch.Tensor, dtype: torch.dtype) -> None:
    """Relative RMS error against the float64 reference below 1e-5 (float32) or 1e-12 (float64),
    and no NaN (flash-linear-attention's metric)."""
    assert tri.shape == ref.shape, f"{name}: shape {tuple(tri.shape)} != {tuple(ref.shape)}"
    assert not torch.isnan(tri).any(), f"{name}: NaN in output (unwritten element?)"
    ratio = 1e-5 if dtype == torch.float32 else 1e-12
    ref64, tri64 = ref.double(), tri.double()
    err = (ref64 - tri64).pow(2).mean().sqrt()
    scale = ref64.pow(2).mean().sqrt().clamp_min(1e-30)
    assert err <= ratio * scale or (ref64 - tri64).abs().max() <= ratio, \
        f"{name}: relative RMS error {float(err / scale):.3e} > {ratio:.0e}"
