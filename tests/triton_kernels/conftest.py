"""Fixtures for the kernel tests: the device a kernel runs on, NaN-poisoned allocations, error
metrics.

Every test that takes ``device`` runs twice: "interpreter" (Triton's CPU interpreter,
TRITON_INTERPRET=1, small shapes; what CI runs) and "cuda" (the kernels compiled by Triton on the
GPU; skipped without one). A case marked ``cuda_only`` (large or odd shapes, too slow for the
interpreter) is collected for CUDA only.
"""

from __future__ import annotations

import pytest
import torch

from helpers import triton_device

DEVICES = [pytest.param("interpreter", marks=pytest.mark.interpreter), "cuda"]


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda_only: kernel test case run compiled on CUDA only")


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", DEVICES, indirect=True)


def pytest_collection_modifyitems(config, items):
    drop = [item for item in items if item.get_closest_marker("cuda_only")
            and getattr(item, "callspec", None) is not None
            and item.callspec.params.get("device") == "interpreter"]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = [item for item in items if item not in drop]


@pytest.fixture
def device(request, monkeypatch) -> torch.device:
    """The device the kernels run on; sets TRITON_INTERPRET (read at launch by TritonKernel)."""
    return triton_device(request.param, monkeypatch)


@pytest.fixture
def seed(fastattn_seed: int) -> int:
    """The test's printed seed (tests/conftest.py), as a torch generator seed: replayed by
    `pytest --fastattn-seed N`."""
    return fastattn_seed % (2**31)


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
    and no NaN (flash-linear-attention's metric). ``ref`` and ``tri`` may be on different
    devices."""
    assert tri.shape == ref.shape, f"{name}: shape {tuple(tri.shape)} != {tuple(ref.shape)}"
    assert not torch.isnan(tri).any(), f"{name}: NaN in output (unwritten element?)"
    ratio = 1e-5 if dtype == torch.float32 else 1e-12
    ref64, tri64 = ref.double(), tri.double().to(ref.device)
    err = (ref64 - tri64).pow(2).mean().sqrt()
    scale = ref64.pow(2).mean().sqrt().clamp_min(1e-30)
    assert err <= ratio * scale or (ref64 - tri64).abs().max() <= ratio, \
        f"{name}: relative RMS error {float(err / scale):.3e} > {ratio:.0e}"
