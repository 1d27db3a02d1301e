"""Launch helpers shared by the kernels: compiled-or-interpreted choice made at call time."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import MappingProxyType, ModuleType

__all__ = ["COMPILE_OPTIONS", "Launch", "TritonKernel", "block_rows", "block_size",
           "compiled_for_gpu", "dot_inputs", "dot_precision", "interpreting", "persistent_programs",
           "recording_launches", "register_budget", "sm_count", "triton_available"]


@dataclass
class _Recording:
    """Launches recorded instead of run (the AOT report), and the SM count they are planned for."""

    sm_count: int
    launches: list[Launch] = field(default_factory=list)


#: compiler options every compiled launch (and the AOT report's compile) passes. Fused multiply-adds:
#: Triton 3.9 enables them by default but warns that 3.10 will not; every timing and tolerance so
#: far was taken with them, and an FMA rounds once where a multiply and an add round twice.
COMPILE_OPTIONS = MappingProxyType({"enable_fp_fusion": True})

_RECORDING: ContextVar[_Recording | None] = ContextVar("fastattn_triton_recording", default=None)


@dataclass(frozen=True)
class Launch:
    """One kernel launch as a launcher issued it: the kernel, its grid and its arguments."""

    kernel: TritonKernel
    grid: tuple
    args: tuple
    kwargs: dict


@contextmanager
def recording_launches(sms: int) -> Iterator[list[Launch]]:
    """Within the block, every :class:`TritonKernel` launch is appended to the yielded list instead
    of running, and launchers plan their grids as for a CUDA device with ``sms`` SMs. Call the
    launchers with ``meta`` tensors: nothing is allocated or computed. The AOT report
    (``fastattn.triton_kernels.aot``) uses this to compile exactly what the launchers would launch."""
    recording = _Recording(sms)
    token = _RECORDING.set(recording)
    try:
        yield recording.launches
    finally:
        _RECORDING.reset(token)


def triton_available() -> bool:
    """True when ``import triton`` works."""
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


def interpreting() -> bool:
    """True when ``TRITON_INTERPRET=1`` is set now (read at every launch, not at import) and
    launches are not being recorded for the AOT report (which plans them as compiled)."""
    return os.environ.get("TRITON_INTERPRET") == "1" and _RECORDING.get() is None


def register_budget(dtype, elements: int, interpreted: int = 1 << 16) -> int:
    """Elements of the largest broadcast temporary a program may form: ``elements`` for 4-byte
    dtypes compiled, half that for 8-byte ones (two registers each), ``interpreted`` under the
    interpreter (fewer, larger programs). Each kernel's ``elements`` is the fastest of a GPU sweep
    (``bench/gpu_budgets.py``: cubic, icl_readout, single_query_attention) or was chosen from the
    AOT report (``fastattn kernels``: pe_attention, sampling); the report checks that none spills
    (each kernel's README)."""
    if interpreting():
        return interpreted
    return elements if dtype.itemsize <= 4 else elements // 2


def block_size(n: int, minimum: int = 1) -> int:
    """The smallest power of two >= max(n, minimum)."""
    n = max(int(n), minimum, 1)
    return 1 << (n - 1).bit_length()


def compiled_for_gpu(device) -> bool:
    """True when a launch on ``device`` runs code compiled for a GPU: a CUDA device without
    TRITON_INTERPRET=1, or any device while launches are recorded for the AOT report."""
    if _RECORDING.get() is not None:
        return True
    return getattr(device, "type", "cpu") == "cuda" and not interpreting()


def dot_precision(dtype, device) -> str:
    """``input_precision`` of a float32 ``tl.dot``. Compiled, it follows torch's own setting for
    float32 matrix products (``torch.set_float32_matmul_precision``): "tf32x3" at "highest" (the
    default: three TF32 tensor-core products recover float32's accuracy), one TF32 product,
    "tf32", at "high" or "medium" (about 1e-3 relative error, as torch's own matmuls then have).
    "ieee" under the interpreter (its only one)."""
    return dot_inputs(dtype, device)["PRECISION"]


def dot_inputs(dtype, device) -> dict:
    """Constexprs of a kernel whose loads are ``dtype`` and whose ``tl.dot`` operands are cast to
    ``DOT`` with ``input_precision=PRECISION``. float32: "tf32x3" compiled, "ieee" interpreted
    (:func:`dot_precision`). bfloat16, float16: compiled, the operands stay in ``dtype`` (tensor
    cores, float32 accumulation; the precision is unused); the interpreter has no half
    ``tl.dot``, so there they are upcast, exactly, to float32 and multiplied in "ieee": the
    interpreter checks the half-precision loads, casts, masks and stores, not the tensor-core
    product (the AOT report compiles that)."""
    import torch
    import triton.language as tl

    compiled = compiled_for_gpu(device)
    upcast = not compiled and dtype in (torch.bfloat16, torch.float16)
    precision = "ieee"
    if compiled and dtype == torch.float32:
        precision = "tf32x3" if torch.get_float32_matmul_precision() == "highest" else "tf32"
    return {"DOT": tl.float32 if upcast else getattr(tl, str(dtype).removeprefix("torch.")),
            "PRECISION": precision}


def sm_count(device) -> int:
    """Streaming multiprocessors of the CUDA ``device`` (the planned count while recording)."""
    recording = _RECORDING.get()
    if recording is not None:
        return recording.sm_count
    import torch

    return torch.cuda.get_device_properties(device).multi_processor_count


def block_rows(rows: int, cap: int, device) -> int:
    """Rows (sequences) per program: a power of two <= ``cap`` (the register budget), halved while
    that leaves fewer than 8 programs per SM, so that kernels looping serially over a sequence
    have enough programs in flight to hide memory latency. Under the interpreter (no CUDA
    device), as many as ``cap`` allows: every program is one more Python iteration."""
    bb = max(1, min(block_size(rows), 1 << (max(int(cap), 1).bit_length() - 1)))
    if not compiled_for_gpu(device):
        return bb
    target = 8 * sm_count(device)
    while bb > 1 and -(-rows // bb) < target:
        bb //= 2
    return bb


def persistent_programs(blocks: int, device) -> int:
    """Programs of a persistent grid (each loops over blocks, then its partial sums are added):
    4 per SM on CUDA, 4 under the interpreter, never more than ``blocks``."""
    per_device = 4 * sm_count(device) if compiled_for_gpu(device) else 4
    return max(1, min(blocks, per_device))


class TritonKernel:
    """A kernel body compiled by Triton or run by its CPU interpreter, chosen when launched.

    ``triton.jit`` decides between the two when the module is imported; this wrapper reads
    ``TRITON_INTERPRET`` at each launch, so importing order does not matter (tests set the
    variable with ``monkeypatch``). Kernel bodies must not call other jitted functions.
    """

    def __init__(self, fn: Callable):
        self.fn = fn
        self._compiled = None
        self._interpreted = None

    def __getitem__(self, grid):
        recording = _RECORDING.get()
        if recording is not None:
            return lambda *args, **kwargs: recording.launches.append(
                Launch(self, tuple(grid), args, kwargs))
        if interpreting():
            if self._interpreted is None:
                from triton.runtime.interpreter import InterpretedFunction

                self._interpreted = InterpretedFunction(self.fn)
            return _with_interpreted_library(self._interpreted[grid])
        if self._compiled is None:
            from triton.runtime.jit import JITFunction

            self._compiled = JITFunction(self.fn)
        launch = self._compiled[grid]
        return lambda *args, **kwargs: launch(*args, **(COMPILE_OPTIONS | kwargs))


def _with_interpreted_library(launch: Callable) -> Callable:
    """Wrap an interpreted launch so that library device functions (``tl.sum``, ``tl.randn``, ...)
    that were built as compiled ``JITFunction`` objects, because triton was imported before
    TRITON_INTERPRET=1 was set, run through the interpreter too during this launch; afterwards
    ``triton.language`` is as before the launch (see :func:`_language_restored`)."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    def run(*args, **kwargs):
        original = JITFunction.__call__

        def call(jit_fn, *a, **k):
            return InterpretedFunction(jit_fn.fn)(*a, **k)

        JITFunction.__call__ = call
        try:
            with _language_restored():
                return launch(*args, **kwargs)
        finally:
            JITFunction.__call__ = original

    return run


@contextmanager
def _language_restored() -> Iterator[None]:
    """Undo, on exit, what the interpreter patched into ``triton.language``. A device-function call
    under the interpreter (``InterpretedFunction.__call__``: ``tl.sum`` from a kernel) patches the
    language's builtins, tensor methods and reductions to the interpreter's and, in Triton 3.9,
    never restores them (only the kernel-level patches are scoped); a kernel compiled later in the
    same process (the AOT report) then fails with "'value' object has no attribute 'dtype'"."""
    import triton.language as tl

    owners = [tl, tl.core, tl.math, tl.tensor, tl.dtype,
              getattr(tl.core, "condition", None), getattr(tl.core, "tensor_descriptor_base", None)]
    owners = [o for o in owners if o is not None]
    saved = [(o, dict(vars(o))) for o in owners]
    try:
        yield
    finally:
        for owner, before in saved:
            now = vars(owner)
            for name in [n for n in now if n not in before and not isinstance(now[n], ModuleType)]:
                delattr(owner, name)          # a submodule imported meanwhile stays
            for name, value in before.items():
                if now.get(name, _ABSENT) is not value:
                    setattr(owner, name, value)


_ABSENT = object()
