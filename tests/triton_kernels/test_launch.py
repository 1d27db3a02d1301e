"""Launch helpers (fastattn.triton_kernels._launch): the tl.dot precision every tiled launcher
plans follows torch's float32 matmul setting when compiled (launches recorded for a GPU, with meta
tensors: nothing runs)."""

from __future__ import annotations

import pytest
import torch
import triton.language as tl

from fastattn.triton_kernels import _launch
from fastattn.triton_kernels.cubic.kernel import bilinear_forward
from fastattn.triton_kernels.linear_attention.kernel import causal_linear_attention_forward
from fastattn.triton_kernels.pe_attention.kernel import pe_attention_forward
from fastattn.triton_kernels.single_query_attention.kernel import single_query_attention_forward


def _launch_tiled_kernels() -> None:
    """One forward of each op with tl.dot kernels, float32, at sizes that take them."""
    def m(*shape):
        return torch.empty(*shape, device="meta")

    causal_linear_attention_forward(m(2, 40, 2, 16), m(2, 40, 2, 16), m(2, 40, 2, 16), 1.0, False)
    bilinear_forward(m(8, 32), m(8, 32), m(2, 32, 32), tiled=True)
    single_query_attention_forward(m(2, 4, 64), m(2, 40, 64), m(2, 40, 16), 0.5, tiled=True)
    pe_attention_forward(m(2, 2, 20, 16), m(2, 2, 20, 16), m(2, 2, 20, 16), m(2, 20, 20), 0,
                         tiled=True)


@pytest.mark.parametrize("setting,expected", [("highest", "tf32x3"), ("high", "tf32"),
                                              ("medium", "tf32")])
def test_tiled_kernels_follow_torchs_float32_matmul_precision(setting, expected):
    """"highest" (torch's default) keeps float32's accuracy with three TF32 products; "high" and
    "medium", where torch's own matmuls take TF32, take one (a launcher that fixed its precision
    fails here)."""
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(setting)
    try:
        with _launch.recording_launches(sms=132) as launches:
            _launch_tiled_kernels()
    finally:
        torch.set_float32_matmul_precision(before)
    kernels = {launch.kernel.fn.__module__.split(".")[-2] for launch in launches}
    assert kernels == {"linear_attention", "cubic", "single_query_attention", "pe_attention"}
    assert {launch.kwargs["PRECISION"] for launch in launches} == {expected}


def test_the_interpreter_multiplies_in_ieee_whatever_the_setting(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("medium")
    try:
        assert _launch.dot_precision(torch.float32, torch.device("cpu")) == "ieee"
    finally:
        torch.set_float32_matmul_precision(before)


def _store_one(x_ptr):
    tl.store(x_ptr, 1.0)


def test_a_compiled_launch_passes_the_compile_options(monkeypatch):
    """A compiled launch reaches `JITFunction.run` with `COMPILE_OPTIONS` (FMA contraction, whatever
    Triton's default), and a launcher's own option of that name still wins."""
    from triton.runtime.jit import JITFunction

    seen = []
    monkeypatch.setattr(JITFunction, "run", lambda self, *args, **kwargs: seen.append(kwargs))
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    kernel = _launch.TritonKernel(_store_one)
    kernel[(1,)](num_warps=4)
    kernel[(1,)](enable_fp_fusion=False)
    assert seen[0]["enable_fp_fusion"] is True and seen[0]["num_warps"] == 4
    assert seen[1]["enable_fp_fusion"] is False
