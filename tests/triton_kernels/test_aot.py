"""The AOT compile report (fastattn.triton_kernels.aot): its kernel list is the set of kernels the
ops launch, launches are planned by the launchers' own code, the occupancy arithmetic, and the
compiler checks it makes (a real compile for sm_80 of two small kernels; no GPU needed)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
import torch
import triton.language as tl

import fastattn.ops as ops
from fastattn.triton_kernels import _launch, aot
from fastattn.triton_kernels.pe_attention.kernel import pe_attention_backward


def _launched_by_the_ops(monkeypatch) -> set[str]:
    """Names of the kernels launched when every op runs forward and backward on its Triton
    backend under the interpreter (tiny shapes)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    seen: set[str] = set()
    original = _launch.TritonKernel.__getitem__

    def spy(self, grid):
        seen.add(f"{self.fn.__module__.split('.')[-2]}.{self.fn.__name__}")
        return original(self, grid)

    monkeypatch.setattr(_launch.TritonKernel, "__getitem__", spy)
    g = torch.Generator().manual_seed(0)

    def r(*s):
        return torch.randn(*s, generator=g).requires_grad_()

    def fwd_bwd(out):
        out = out[0] if isinstance(out, tuple) else out
        out.sum().backward()

    b, n, d, h = 3, 5, 3, 2
    fwd_bwd(ops.icl_readout(r(b, n, d), r(b, n), r(b, d), r(h, d, d), backend="triton"))
    fwd_bwd(ops.icl_readout_next_token(r(b, n, d), r(b, n), r(h, d, d), backend="triton"))
    fwd_bwd(ops.causal_linear_attention(r(b, n, h, d), r(b, n, h, d), r(b, n, h, 2),
                                        backend="triton"))
    fwd_bwd(ops.cubic_hidden(r(b, d), r(b, d), r(h, d * d), backend="triton"))
    fwd_bwd(ops.cubic_hidden(r(b, 32), r(b, 32), r(h, 32 * 32), backend="triton"))   # tiled
    for keys in (r(b, n, d), r(b, h, n, d), r(b, n, 64)):     # K = 64: the tiled kernels
        fwd_bwd(ops.single_query_attention(r(b, h, keys.shape[-1]), keys, r(b, n, 2), 0.5,
                                           backend="triton"))
    for dt in (torch.float32, torch.float64):                 # float64: the broadcast kernels
        fwd_bwd(ops.pe_attention(*(t.detach().to(dt).requires_grad_() for t in (
            r(b, h, 4, d), r(b, h, 4, d), r(b, h, 4, 2), r(h, 4, 4))), backend="triton"))
    eye = torch.eye(d)
    ops.sample_icl_stats(0, 0, 4, 3, eye, torch.zeros(d), eye, 0.1, backend="triton")
    p = 3 * 1 * 3 * 3 + 3
    theta, m, v = torch.zeros(2, p), torch.zeros(2, p), torch.zeros(2, p)
    ops.he_adam_step(theta, m, v, torch.tensor([1, 2]), torch.full((2,), 1e-3),
                     torch.eye(2).expand(2, 2, 2), torch.eye(2).expand(2, 2, 2), torch.zeros(2),
                     heads=1, context=3, batch=4, step=0, backend="triton")
    return seen


def test_report_lists_exactly_the_kernels_the_ops_launch(monkeypatch):
    assert aot.kernel_names() == sorted(_launched_by_the_ops(monkeypatch))


def test_recording_plans_launches_as_on_the_target_without_running_them():
    b, h, t, kd = 64, 2, 5, 3
    q = torch.empty(b, h, t, kd, device="meta")
    with _launch.recording_launches(sms=10) as launches:
        assert _launch.compiled_for_gpu(q.device) and _launch.sm_count(q.device) == 10
        pe_attention_backward(q, q, q, q, torch.empty(h, t, t, device="meta"), 0, tiled=False)
        pe_attention_backward(q, q, q, q, torch.empty(h, t, t, device="meta"), 0)
    assert not _launch.compiled_for_gpu(q.device)
    dq_dp, dk_dv, dot_dq_dp, dot_dk_dv = launches
    # dq/dP: batch slices fill 4 programs per SM of the planned device (40 programs over 2 heads)
    assert dq_dp.grid == (h, 1, 20) and dq_dp.kwargs["BLOCK_Q"] == 8
    assert dk_dv.grid == (b * h, 1)
    # tl.dot kernels: 4 sequences per program (16 blocks), slices of blocks, at most 16
    assert dot_dq_dp.kwargs["BLOCK_B"] == 4 and dot_dq_dp.kwargs["PRECISION"] == "tf32x3"
    assert dot_dq_dp.grid == (h, 1, 16) and dot_dk_dv.grid == (b // 4 * h, 1)


def test_occupancy_follows_cuda_rules():
    sm90 = aot.TARGETS["sm_90"]
    # issue 29: 205 registers at 4 warps -> 6656 registers a warp, 9 warps, 2 blocks
    assert aot._occupancy(sm90, 205, 1024, 4) == (2, 0.125, "registers")
    assert aot._occupancy(sm90, 32, 0, 4) == (16, 1.0, "warps")
    # 100 KB of shared memory (+1 KB reserved) per block: two blocks fit in 228 KB
    assert aot._occupancy(sm90, 32, 100_000, 4) == (2, 0.125, "shared memory")


def _matmul_axis1(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + o[:, None] * BLOCK + o[None, :])
    b = tl.load(b_ptr + o[:, None] * BLOCK + o[None, :])
    tl.store(c_ptr + o[:, None] * BLOCK + o[None, :], tl.sum(a[:, :, None] * b[None, :, :], axis=1))


def _matmul_last_axis(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + o[:, None] * BLOCK + o[None, :])
    b = tl.load(b_ptr + o[:, None] * BLOCK + o[None, :])
    c = tl.sum(a[:, None, :] * tl.trans(b)[None, :, :], axis=2)
    tl.store(c_ptr + o[:, None] * BLOCK + o[None, :], c)


def _matmul_dot_and_axis1(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + o[:, None] * BLOCK + o[None, :])
    b = tl.load(b_ptr + o[:, None] * BLOCK + o[None, :])
    c = tl.dot(a, b, input_precision="tf32x3") + tl.sum(a[:, :, None] * b[None, :, :], axis=1)
    tl.store(c_ptr + o[:, None] * BLOCK + o[None, :], c)


def _report_toy(fn, monkeypatch, cache) -> aot.KernelReport:
    """The report of ``fn`` compiled for sm_80 in an empty Triton cache (a cached kernel would skip
    the front end, where a broken ``triton.language`` fails)."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))
    x = torch.empty(16, 16, device="meta")
    launch = _launch.Launch(_launch.TritonKernel(fn), (1,), (x, x, x), {"BLOCK": 16})
    return aot._report_one("toy", launch, aot.TARGETS["sm_80"])


@pytest.mark.parametrize("fn", [_matmul_axis1, _matmul_last_axis])
def test_compiles_for_sm80_and_flags_dots_the_compiler_invents(fn, monkeypatch, tmp_path):
    """A broadcast-multiply-sum over axis 1 becomes a tt.dot inside Triton (TF32 on sm_80+ with
    Triton 3.6: pe_attention's float32 error on an H100); the report refuses it. The same product
    reduced over the last axis compiles to plain FMAs."""
    rep = _report_toy(fn, monkeypatch, tmp_path)
    assert rep.registers and rep.registers > 0 and rep.spilled_bytes == 0, rep.error
    if fn is _matmul_axis1:
        assert not rep.compiled and rep.implicit_dots == 1 and "tt.dot" in rep.error
    else:
        assert rep.compiled and rep.implicit_dots == 0 and rep.mma == 0, rep.error
    assert rep.requested_dots == {}


def _multiply_add(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    a, b, c = tl.load(a_ptr + o), tl.load(b_ptr + o), tl.load(c_ptr + o)
    tl.store(c_ptr + o, a * b + c)


def test_kernels_compile_with_fused_multiply_adds_whatever_tritons_default(monkeypatch, tmp_path):
    """`COMPILE_OPTIONS` asks for FMA contraction: Triton 3.9's default, 3.10's opposite (without
    the option, 3.9 warns and 3.10 would round a*b+c twice). The compile the report makes, as a
    launch makes it, contracts a*b+c into one fma and leaves the default unread."""
    import triton.knobs

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "0")
    monkeypatch.setattr(triton.knobs.language, "default_fp_fusion", False)
    x = torch.empty(16, device="meta")
    launch = _launch.Launch(_launch.TritonKernel(_multiply_add), (1,), (x, x, x), {"BLOCK": 16})
    ptx = aot._compile(launch, aot.TARGETS["sm_80"]).asm["ptx"]
    assert "fma.rn.f32" in ptx and "mul.f32" not in ptx


def _dot_only(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + o[:, None] * BLOCK + o[None, :])
    b = tl.load(b_ptr + o[:, None] * BLOCK + o[None, :])
    c = tl.dot(a, b, input_precision="tf32x3")
    tl.store(c_ptr + o[:, None] * BLOCK + o[None, :], c)


def _dot_and_axis1_sum(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + o[:, None] * BLOCK + o[None, :])
    b = tl.load(b_ptr + o[:, None] * BLOCK + o[None, :])
    c = tl.dot(a, b, input_precision="tf32x3")
    c += tl.sum(a[:, :, None] * b[None, :, :], axis=1)
    tl.store(c_ptr + o[:, None] * BLOCK + o[None, :], c)


@pytest.mark.parametrize("fn", [_dot_only, _dot_and_axis1_sum])
def test_dots_the_source_requests_are_allowed_and_invented_ones_still_fail(fn, monkeypatch,
                                                                          tmp_path):
    """Each tt.dot is attributed to its source location: the tl.dot call is a requested dot
    (allowed, counted with its input precision); the broadcast-multiply-sum beside it in the same
    kernel is still an invented one and fails the configuration."""
    rep = _report_toy(fn, monkeypatch, tmp_path)
    assert rep.registers and rep.spilled_bytes == 0, rep.error
    assert rep.requested_dots == {"tf32x3": 1} and rep.mma > 0
    if fn is _dot_only:
        assert rep.compiled and rep.implicit_dots == 0, rep.error
        assert "requested dots 1 (tf32x3 1)" in aot._line(rep)
    else:
        assert not rep.compiled and rep.implicit_dots >= 1 and "broadcast-multiply-sum" in rep.error


def test_a_cached_compile_from_another_copy_of_the_file_still_counts_its_dots(monkeypatch,
                                                                             tmp_path):
    """Triton's cache is keyed by the source, not its path: a kernel compiled before from another
    copy of its file (a checkout, then the installed wheel) brings that copy's paths in its TTIR,
    and its tl.dot must still count as requested (CI ran the report after the tests had compiled
    the kernels from the checkout: every dot was counted as invented)."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    x = torch.empty(16, 16, device="meta")
    launch = _launch.Launch(_launch.TritonKernel(_dot_only), (1,), (x, x, x), {"BLOCK": 16})
    ttir = aot._compile(launch, aot.TARGETS["sm_80"]).asm["ttir"]
    here = str(Path(__file__).resolve().parent.parent)          # .../tests
    moved = ttir.replace(here, "/another/copy/of/tests")
    assert moved != ttir
    assert aot._dots(moved, _dot_only) == (["tf32x3"], [])


def test_an_invented_dot_on_the_line_of_a_tl_dot_still_fails(monkeypatch, tmp_path):
    """The tl.dot and the broadcast-multiply-sum in one expression: the invented dot's location is
    tl.sum's (in triton's own files, called from this line), not a tl.dot call, so it fails."""
    rep = _report_toy(_matmul_dot_and_axis1, monkeypatch, tmp_path)
    assert rep.requested_dots == {"tf32x3": 1} and rep.implicit_dots == 1, rep.error
    assert not rep.compiled


def test_a_configuration_that_spills_fails(monkeypatch, tmp_path):
    """A cubin whose stack frame is not empty (ptxas spilled into it: cuobjdump's STACK, which
    its LOCAL does not count) fails the configuration with the bytes and the remedy. The toy is
    compiled for real; its resource usage gets 16 B of stack, as ptxas reported for the
    single-query backward at K = 128 before its launcher took 16 keys a step."""
    real = aot._resources

    def spilled(cubin):
        usage, sass = real(cubin)
        return {**usage, "STACK": 16}, sass

    monkeypatch.setattr(aot, "_resources", spilled)
    rep = _report_toy(_matmul_last_axis, monkeypatch, tmp_path)
    assert rep.registers and rep.spilled_bytes == 16
    assert not rep.compiled and "16 B of local memory" in rep.error and "more warps" in rep.error
    assert aot._line(rep).startswith("FAIL toy")


def test_an_interpreted_launch_leaves_triton_language_as_it_found_it(monkeypatch, tmp_path):
    """The interpreter patches ``triton.language`` when a kernel calls a device function (``tl.sum``)
    and Triton 3.9 leaves those patches in place; the launcher undoes them, so that a kernel compiled
    later in the same process (the AOT report after an interpreted test) still compiles."""
    owners = (tl, tl.core, tl.math, tl.tensor, tl.dtype)

    def attributes():  # a submodule imported by the launch (tl.semantic) is no patch
        return [{k: v for k, v in vars(o).items() if not isinstance(v, ModuleType)} for o in owners]

    before = attributes()
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    x = torch.ones(3, 2)
    ops.cubic_hidden(x, x, torch.ones(2, 4), backend="triton")      # its kernel calls tl.sum
    monkeypatch.delenv("TRITON_INTERPRET")
    assert attributes() == before
    rep = _report_toy(_matmul_last_axis, monkeypatch, tmp_path)
    assert rep.compiled, rep.error
