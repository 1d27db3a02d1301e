"""fastattn.ops: autograd through the custom ops, opcheck, shape validation and dispatch errors."""

from __future__ import annotations

import importlib

import pytest
import torch

import fastattn.ops as ops
from fastattn.ops import _dispatch as dispatch
from fastattn.ops._dispatch import BACKENDS, backend_reason, cuda_timings, select_backend
from fastattn.triton_kernels._launch import triton_available
from fastattn.triton_kernels.icl_readout.reference import (
    icl_readout_next_token_reference,
    icl_readout_reference,
)
from helpers import triton_device


@pytest.fixture
def no_interpret(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)


@pytest.fixture
def interpret(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


@pytest.fixture(params=[pytest.param("interpreter", marks=pytest.mark.interpreter), "cuda"])
def device(request, monkeypatch) -> torch.device:
    """Where the Triton backend runs: the CPU interpreter, or compiled on CUDA (skipped without)."""
    return triton_device(request.param, monkeypatch)


def _cases(dtype=torch.float64, device="cpu"):
    g = torch.Generator().manual_seed(0)

    def r(*s):
        return torch.randn(*s, generator=g, dtype=dtype).to(device).requires_grad_()

    b, n, d, h = 3, 5, 3, 2
    return {
        "icl_readout": (ops.icl_readout, torch.ops.fastattn.icl_readout.default,
                        (r(b, n, d), r(b, n), r(b, d), r(h, d, d))),
        "icl_readout_next_token": (ops.icl_readout_next_token,
                                   torch.ops.fastattn.icl_readout_next_token.default,
                                   (r(b, n, d), r(b, n), r(h, d, d))),
        "cubic_hidden": (ops.cubic_hidden, torch.ops.fastattn.cubic_hidden.default,
                         (r(b, d), r(b, d), r(h, d * d))),
        "single_query_attention": (
            lambda q, k, v, backend: ops.single_query_attention(q, k, v, 0.5, backend=backend),
            torch.ops.fastattn.single_query_attention.default, (r(b, h, d), r(b, n, d), r(b, n, 2))),
    }


@pytest.mark.parametrize("op", list(_cases()))
def test_reference_backend_gradcheck_and_opcheck(op, no_interpret):
    fn, raw, args = _cases()[op]
    assert torch.autograd.gradcheck(lambda *a: fn(*a, backend="reference"), args)
    extra = (0.5,) if op == "single_query_attention" else ()
    torch.library.opcheck(raw, (*args, *extra, "reference"))


@pytest.mark.parametrize("op", list(_cases()))
def test_triton_backend_matches_reference_through_autograd(op, device):
    fn, raw, args = _cases(device=device)[op]
    out_t, out_r = fn(*args, backend="triton"), fn(*args, backend="reference")
    dout = torch.randn_like(out_r)
    g_t = torch.autograd.grad(out_t, args, dout)
    g_r = torch.autograd.grad(out_r, args, dout)
    torch.testing.assert_close(out_t, out_r)
    for a, b in zip(g_t, g_r, strict=True):
        torch.testing.assert_close(a, b)
    extra = (0.5,) if op == "single_query_attention" else ()
    torch.library.opcheck(raw, (*args, *extra, "triton"))


def test_ops_match_pure_references(no_interpret):
    _, _, (x, y, x_q, gamma) = _cases()["icl_readout"]
    torch.testing.assert_close(ops.icl_readout(x, y, x_q, gamma),
                               icl_readout_reference(x, y, x_q, gamma))
    torch.testing.assert_close(ops.icl_readout_next_token(x, y, gamma),
                               icl_readout_next_token_reference(x, y, gamma))
    # per-head keys
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 3, 4, generator=g), torch.randn(2, 3, 5, 4, generator=g),
               torch.randn(2, 5, 1, generator=g))
    s = torch.softmax(torch.einsum("bhk,bhmk->bhm", q, k) * 0.3, -1)
    torch.testing.assert_close(ops.single_query_attention(q, k, v, 0.3),
                               torch.einsum("bhm,bmv->bhv", s, v))


def test_shape_errors_name_the_argument():
    x, y, xq, g = torch.randn(2, 3, 4), torch.randn(2, 3), torch.randn(2, 4), torch.randn(1, 4, 4)
    with pytest.raises(ValueError, match=r"x must be \[B, N, D\]; got \[2, 3\]"):
        ops.icl_readout(y, y, xq, g)
    with pytest.raises(ValueError, match=r"y must be \[B, N\]"):
        ops.icl_readout(x, y[:, :2], xq, g)
    with pytest.raises(ValueError, match=r"gamma must be \[H, D, D\]"):
        ops.icl_readout(x, y, xq, g[:, :3])
    with pytest.raises(ValueError, match="gamma must have the dtype of x"):
        ops.icl_readout(x, y, xq, g.double())
    with pytest.raises(ValueError, match=r"w1 must be \[H, D\*D\]"):
        ops.cubic_hidden(xq, xq, g)
    with pytest.raises(ValueError, match=r"k must be \[B, M, K\] or \[B, H, M, K\]"):
        ops.single_query_attention(torch.randn(2, 1, 4), xq, x, 1.0)
    with pytest.raises(ValueError, match="backend must be one of"):
        ops.icl_readout(x, y, xq, g, backend="cuda")


def test_triton_on_cpu_without_interpreter_lists_every_reason(no_interpret):
    d = 80
    x = torch.randn(2, 3, d, dtype=torch.float16)
    with pytest.raises(ops.BackendUnavailableError) as err:
        ops.icl_readout(x, torch.randn(2, 3, dtype=torch.float16),
                        torch.randn(2, d, dtype=torch.float16),
                        torch.randn(1, d, d, dtype=torch.float16), backend="triton")
    msg = str(err.value)
    assert "TRITON_INTERPRET=1 is not set" in msg
    assert "dtype float16 is not supported" in msg
    assert "D=80 exceeds the maximum 64" in msg
    assert "What would work: backend='reference'" in msg


def test_triton_reasons_under_interpreter(interpret):
    x = torch.randn(2, 3, 4, dtype=torch.bfloat16)
    with pytest.raises(ops.BackendUnavailableError, match="dtype bfloat16") as err:
        ops.cubic_hidden(x[:, 0], x[:, 0], torch.randn(1, 16, dtype=torch.bfloat16),
                         backend="triton")
    assert "TRITON_INTERPRET=1 is not set" not in str(err.value)
    lmat = torch.eye(70)
    with pytest.raises(ops.BackendUnavailableError, match="D=70 exceeds") as err:
        ops.sample_icl_stats(0, 0, 4, 3, lmat, torch.zeros(70), lmat, 0.1, backend="triton")
    assert "backend='wishart'" in str(err.value) and "backend='reference'" in str(err.value)
    # auto never fails: falls back to the reference
    out = ops.cubic_hidden(x[:, 0], x[:, 0], torch.randn(1, 16, dtype=torch.bfloat16))
    assert out.dtype == torch.bfloat16


def test_available_backends_report(no_interpret):
    report = ops.available_backends()
    assert set(report) == {"icl_readout", "icl_readout_next_token", "cubic_hidden",
                           "sample_icl_stats", "single_query_attention", "pe_attention",
                           "he_adam_step", "causal_linear_attention"}
    for table in report.values():
        assert table["reference"] == {"available": True, "why_not": None,
                                      "requires": table["reference"]["requires"]}
        if not torch.cuda.is_available():
            assert not table["triton"]["available"] and table["triton"]["why_not"]
    assert report["sample_icl_stats"]["wishart"]["available"]


def test_sampling_backends_are_reproducible(no_interpret):
    lmat = torch.eye(3, dtype=torch.float64)
    for backend in ("reference", "wishart"):
        a = ops.sample_icl_stats(5, 2, 8, 4, lmat, torch.ones(3, dtype=torch.float64), lmat, 0.1,
                                 torch.float64,
                                 backend=backend)
        b = ops.sample_icl_stats(5, 2, 8, 4, lmat, torch.ones(3, dtype=torch.float64), lmat, 0.1,
                                 torch.float64,
                                 backend=backend)
        assert all(torch.equal(u, v) for u, v in zip(a, b, strict=True))
        assert a[0].shape == (8, 3) and a[1].shape == (8, 3) and a[2].shape == (8,)


@pytest.mark.parametrize("op", list(_cases()))
def test_triton_backend_takes_non_contiguous_inputs(op, device):
    """Transposed, sliced and expanded views give the reference's values and gradients."""
    fn, _, args = _cases(device=device)[op]
    views = []
    for i, a in enumerate(args):
        a = a.detach()
        if i % 2:  # same values, the first two dimensions swapped in memory
            views.append(a.transpose(0, 1).contiguous().transpose(0, 1).requires_grad_())
        else:  # a slice with a gap after each row
            views.append(torch.cat([a, a], 1)[:, :a.shape[1]].requires_grad_())
    assert all(not v.is_contiguous() for v in views)
    out_t, out_r = fn(*views, backend="triton"), fn(*args, backend="reference")
    dout = torch.randn_like(out_r[:1]).expand_as(out_r)  # batch stride 0
    torch.testing.assert_close(out_t, out_r)
    for a, b in zip(torch.autograd.grad(out_t, views, dout), torch.autograd.grad(out_r, args, dout),
                    strict=True):
        torch.testing.assert_close(a, b)


_KERNEL_ENTRY = {
    "icl_readout": ("icl_readout", "icl_readout_forward"),
    "icl_readout_next_token": ("icl_readout", "icl_readout_next_token_forward"),
    "cubic_hidden": ("cubic", "cubic_hidden_forward"),
    "single_query_attention": ("single_query_attention", "single_query_attention_forward"),
    "sample_icl_stats": ("sampling", "sample_icl_stats_kernel"),
}


def _spy(monkeypatch, op) -> list:
    """Record every call of ``op``'s Triton kernel entry point (still running it)."""
    package, name = _KERNEL_ENTRY[op]
    module = importlib.import_module(f"fastattn.triton_kernels.{package}.kernel")
    calls, original = [], getattr(module, name)

    def spy(*a, **k):
        calls.append(name)
        return original(*a, **k)

    monkeypatch.setattr(module, name, spy)
    return calls


@pytest.mark.parametrize("op", list(_KERNEL_ENTRY))
def test_auto_picks_triton_on_cuda(op, monkeypatch):
    if not torch.cuda.is_available():
        pytest.skip("checks the dispatch on a CUDA device; none is visible")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    report = ops.available_backends()[op]["triton"]
    assert report == {"available": True, "why_not": None, "requires": report["requires"]}
    calls = _spy(monkeypatch, op)
    if op == "sample_icl_stats":  # auto prefers the Wishart sampler on CUDA (measured)
        lmat = torch.eye(3, device="cuda")
        out = ops.sample_icl_stats(0, 1, 64, 8, lmat, torch.zeros(3, device="cuda"), lmat, 0.1)
        assert out[0].device.type == "cuda" and calls == []
        return
    fn, _, args = _cases(torch.float32, "cuda")[op]
    out = fn(*args, backend="auto")
    assert out.device.type == "cuda" and calls == [_KERNEL_ENTRY[op][1]]
    # too wide for the kernel: auto falls back to the reference, an explicit "triton" explains why
    wide = {"single_query_attention": (2, 1, 130), "cubic_hidden": (2, 65)}.get(op, (2, 3, 65))
    x = torch.randn(*wide, device="cuda")
    if op == "icl_readout":
        wide_args = (x, x[..., 0], x[:, 0], torch.randn(1, 65, 65, device="cuda"))
    elif op == "icl_readout_next_token":
        wide_args = (x, x[..., 0], torch.randn(1, 65, 65, device="cuda"))
    elif op == "cubic_hidden":
        wide_args = (x, x, torch.randn(1, 65 * 65, device="cuda"))
    else:
        wide_args = (x, x, x)
    calls.clear()
    assert fn(*wide_args, backend="auto").device.type == "cuda" and calls == []
    with pytest.raises(ops.BackendUnavailableError, match="exceeds the maximum"):
        fn(*wide_args, backend="triton")


def test_auto_on_cuda_prefers_the_backend_measured_faster():
    """The measured preferences (fastattn/ops/cuda_timings.json), checked on a CUDA device object
    (no GPU needed: the choice reads only the device type, dtype and sizes)."""
    if not triton_available():
        pytest.skip("the preference applies where the Triton kernel could run")
    cuda, f32 = torch.device("cuda"), torch.float32
    assert select_backend("sample_icl_stats", "auto", cuda, f32, {"D": 4}) == "wishart"
    assert select_backend("pe_attention", "auto", cuda, f32, {"K": 10, "V": 10}) == "reference"
    assert select_backend("single_query_attention", "auto", cuda, f32, {"K": 16, "V": 16}) == "triton"
    assert select_backend("single_query_attention", "auto", cuda, f32,
                          {"K": 64, "V": 64}) == "reference"
    assert select_backend("cubic_hidden", "auto", cuda, f32, {"D": 16}) == "triton"
    assert select_backend("cubic_hidden", "auto", cuda, f32, {"D": 64}) == "reference"
    assert select_backend("icl_readout", "auto", cuda, f32, {"D": 64}) == "triton"
    assert select_backend("icl_readout_next_token", "auto", cuda, f32, {"D": 4}) == "triton"
    why = backend_reason("pe_attention", "reference", cuda, f32, {"K": 10, "V": 10})
    assert "chosen by auto on CUDA because" in why and "measured faster" in why
    # an explicit request still runs the kernel
    assert select_backend("pe_attention", "triton", cuda, f32, {"K": 10, "V": 10}) == "triton"


def test_auto_under_the_interpreter_still_runs_triton(interpret):
    """The preferences are for compiled CUDA runs; the interpreter tests exercise the kernels."""
    cpu = torch.device("cpu")
    assert select_backend("pe_attention", "auto", cpu, torch.float32, {"K": 4, "V": 4}) == "triton"
    assert select_backend("sample_icl_stats", "auto", cpu, torch.float32, {"D": 4}) == "triton"


def test_the_shipped_timings_name_real_backends_and_dispatch_sizes():
    """Every row of fastattn/ops/cuda_timings.json names an op, its backends and the sizes the op
    dispatches on (a typo would silently never match)."""
    timings = cuda_timings()
    assert timings["device"] and timings["date"]
    dispatch_sizes = {"icl_readout": {"D"}, "icl_readout_next_token": {"D"}, "cubic_hidden": {"D"},
                      "sample_icl_stats": {"D"}, "single_query_attention": {"K", "V"},
                      "pe_attention": {"K", "V"}, "causal_linear_attention": {"K", "V"}}
    for op, rows in timings["ops"].items():
        for row in rows:
            assert set(row["ms"]) <= set(BACKENDS[op]) and len(row["ms"]) >= 2, (op, row)
            assert set(row["dims"]) == dispatch_sizes[op], (op, row)


def test_auto_follows_the_nearest_measured_shape_among_measured_backends(monkeypatch):
    """With a stand-in table: the nearest row decides; a first kernel that was not measured there
    does not beat a measured one; an op with no row runs its first kernel."""
    rows = [{"shape": {"D": d}, "dims": {"D": d}, "pass": "fwd+bwd", "ms": ms} for d, ms in
            [(4, {"triton": 1.0, "reference": 2.0}), (64, {"triton": 3.0, "reference": 2.0})]]
    table = {"device": "stand-in", "date": "today", "ops": {
        "cubic_hidden": rows, "icl_readout_next_token": rows,
        "icl_readout": [dict(rows[0], ms={"triton": 2.0, "reference": 3.0, "chunked": 1.0})]}}
    monkeypatch.setattr(dispatch, "cuda_timings", lambda: table)
    cuda, f32 = torch.device("cuda"), torch.float32
    assert select_backend("cubic_hidden", "auto", cuda, f32, {"D": 8}) == "triton"
    assert select_backend("cubic_hidden", "auto", cuda, f32, {"D": 40}) == "reference"
    assert "2 ms against triton's 3 ms (fwd+bwd) at the nearest measured shape (D=64)" in \
        backend_reason("cubic_hidden", "reference", cuda, f32, {"D": 40})
    # the chunked read-out (first in its table) was not measured: the measured serial kernel runs
    assert select_backend("icl_readout_next_token", "auto", cuda, f32, {"D": 4}) == "triton"
    assert "chunked, which was not measured there" in backend_reason(
        "icl_readout_next_token", "triton", cuda, f32, {"D": 4})
    assert select_backend("causal_linear_attention", "auto", cuda, f32, {"K": 4, "V": 4}) == \
        "triton"
    # the preference applies on CUDA only: the interpreter runs the first kernel
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert select_backend("cubic_hidden", "auto", torch.device("cpu"), f32, {"D": 40}) == "triton"
