"""Backend choice for the ops, xformers style: each backend declares what it can run, and a request
it cannot serve fails with one message listing every reason and what would work instead."""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from importlib import resources

import torch
import torch.autograd.forward_ad as fwAD

from fastattn.triton_kernels._launch import interpreting, triton_available

__all__ = [
    "BACKENDS",
    "BackendUnavailableError",
    "active_transform",
    "available_backends",
    "backend_reason",
    "cuda_timings",
    "select_backend",
]


class BackendUnavailableError(RuntimeError):
    """A requested backend cannot run the given inputs; the message lists why and what would."""


@dataclass(frozen=True)
class Backend:
    """What one backend can run.

    Attributes:
        name: "triton", "reference" or "wishart".
        needs_triton: requires ``import triton``.
        devices: device types it runs on ("cpu" for Triton means: under TRITON_INTERPRET=1).
        dtypes: supported floating dtypes (None: any floating dtype).
        max_dim: largest feature size (D, K or V) it accepts (None: no limit).
        describe: one line for error messages.
        composes: runs under torch.func transforms and forward-mode AD (plain torch does; a
            kernel behind a custom op has no batching or forward-mode rule).
    """

    name: str
    needs_triton: bool
    devices: tuple[str, ...]
    dtypes: tuple[torch.dtype, ...] | None
    max_dim: int | None
    describe: str
    composes: bool = False

    def not_supported_reasons(self, device: torch.device | None = None,
                              dtype: torch.dtype | None = None,
                              dims: dict[str, int] | None = None,
                              transform: str | None = None) -> list[str]:
        """Every reason this backend cannot run the inputs (empty: it can); ``transform`` names
        the autodiff transform tracing them (:func:`active_transform`)."""
        reasons = []
        if transform is not None and not self.composes:
            reasons.append(f"the inputs are traced by {transform}, and the {self.name} kernel's "
                           "custom op has no batching or forward-mode rule")
        if self.needs_triton and not triton_available():
            reasons.append("triton is not installed (pip install triton)")
        if device is not None:
            if device.type not in self.devices:
                reasons.append(f"tensors are on {device.type}; supported devices: "
                               f"{', '.join(self.devices)}")
            elif self.needs_triton and device.type == "cpu" and not interpreting():
                reasons.append("tensors are on cpu and TRITON_INTERPRET=1 is not set (Triton "
                               "kernels run on CUDA, or on CPU under the interpreter)")
        if dtype is not None and self.dtypes is not None and dtype not in self.dtypes:
            names = ", ".join(str(d).removeprefix("torch.") for d in self.dtypes)
            reasons.append(f"dtype {str(dtype).removeprefix('torch.')} is not supported "
                           f"(supported: {names})")
        if dims and self.max_dim is not None:
            for name, size in dims.items():
                if size > self.max_dim:
                    reasons.append(f"{name}={size} exceeds the maximum {self.max_dim}")
        return reasons


_FLOATS = (torch.float32, torch.float64)
_TRITON = Backend("triton", True, ("cuda", "cpu"), _FLOATS, 64,
                  "fused Triton kernel: CUDA tensors (or CPU with TRITON_INTERPRET=1), "
                  "float32/float64, feature sizes <= 64")
_TRITON_ATTN = Backend("triton", True, ("cuda", "cpu"), _FLOATS, 128,
                       "fused Triton kernel: CUDA tensors (or CPU with TRITON_INTERPRET=1), "
                       "float32/float64, K and V <= 128")
_CHUNKED = Backend("triton", True, ("cuda", "cpu"), (torch.float32, torch.bfloat16, torch.float16),
                   None, "chunked Triton kernel on tensor cores: CUDA tensors (or CPU with "
                   "TRITON_INTERPRET=1), float32, bfloat16 or float16 (the interpreter that tests "
                   "it has no float64 tl.dot)")
_READOUT_CHUNKED = Backend("chunked", True, ("cuda", "cpu"), (torch.float32,), None,
                           "the read-out as strict causal linear attention on the chunked "
                           "Triton kernel: CUDA tensors (or CPU with TRITON_INTERPRET=1), float32")
_REFERENCE = Backend("reference", False, ("cpu", "cuda", "mps", "xpu", "meta"), None, None,
                     "pure-torch reference: any device, any floating dtype, every torch.func "
                     "transform", composes=True)
_WISHART = Backend("wishart", False, ("cpu", "cuda", "mps", "xpu"), None, None,
                   "torch sampler of (β, x_q, y_q) through the Wishart law, O(D² + N) per "
                   "sequence: any device, any floating dtype")
_HE_CPP = Backend("cpp", False, ("cpu",), _FLOATS, None,
                  "the C++ core's fused step (fastattn._core.he_adam_steps): CPU, float32/float64")

BACKENDS: dict[str, dict[str, Backend]] = {
    "icl_readout": {"triton": _TRITON, "reference": _REFERENCE},
    "icl_readout_next_token": {"chunked": _READOUT_CHUNKED, "triton": _TRITON,
                               "reference": _REFERENCE},
    "causal_linear_attention": {"triton": _CHUNKED, "reference": _REFERENCE},
    "cubic_hidden": {"triton": _TRITON, "reference": _REFERENCE},
    "sample_icl_stats": {"triton": _TRITON, "reference": _REFERENCE, "wishart": _WISHART},
    "single_query_attention": {"triton": _TRITON_ATTN, "reference": _REFERENCE},
    "pe_attention": {"triton": _TRITON, "reference": _REFERENCE},
    "he_adam_step": {"triton": _TRITON_ATTN, "cpp": _HE_CPP, "reference": _REFERENCE},
}


@dataclass(frozen=True)
class CudaPreference:
    """Where "auto" on CUDA runs another backend than its first kernel, because that backend
    measured faster at the nearest measured shape (:func:`cuda_timings`)."""

    backend: str
    why: str


@functools.cache
def cuda_timings() -> dict:
    """The measured device medians "auto" follows on CUDA (``cuda_timings.json`` beside this
    module: per op, rows of shape, dispatch sizes, pass and milliseconds per backend, with the
    device, date and versions they were measured on). ``bench/dispatch_table.py`` writes it from a
    ``bench/gpu_all.sh`` run; docs/gpu.md shows the same run as tables."""
    return json.loads(resources.files("fastattn.ops").joinpath("cuda_timings.json").read_text())


def _log_distance(a: dict[str, int], b: dict[str, int]) -> float:
    """Σ |log2(a_k / b_k)| over the sizes both name: how far apart two shapes are."""
    return sum(abs(math.log2(max(a[k], 1) / max(b[k], 1))) for k in a.keys() & b.keys())


def _cuda_preference(op: str, device: torch.device, dtype: torch.dtype,
                     dims: dict[str, int]) -> CudaPreference | None:
    """The backend "auto" runs instead of the op's first kernel, if another measured faster at the
    nearest measured shape (by :func:`_log_distance` of the dispatch sizes); only backends
    measured there and able to run the inputs compete. CUDA only, not under the interpreter, where
    the kernels are what is being tested; None for an op with no measurement."""
    if device.type != "cuda" or interpreting():
        return None
    timings = cuda_timings()
    rows = timings["ops"].get(op)
    first = _first_kernel(op, device, dtype, dims, None)
    if not rows or first is None:
        return None
    row = min(rows, key=lambda r: _log_distance(dims, r["dims"]))
    able = {name: ms for name, ms in row["ms"].items() if name in BACKENDS[op]
            and not BACKENDS[op][name].not_supported_reasons(device, dtype, dims)}
    if not able:
        return None
    best = min(able, key=able.get)
    if best == first:
        return None
    shape = ", ".join(f"{k}={v}" for k, v in row["shape"].items())
    against = (f"{first}'s {able[first]:.3g} ms" if first in able
               else f"{first}, which was not measured there,")
    return CudaPreference(best, f"it measured faster: {able[best]:.3g} ms against {against} "
                                f"({row['pass']}) at the nearest measured shape ({shape}) on "
                                f"{timings['device']}, {timings['date']} (fastattn/ops/"
                                "cuda_timings.json)")


_TRANSFORM_NAMES = {"Grad": "torch.func.grad/vjp/jacrev", "Jvp": "torch.func.jvp/jacfwd",
                    "Vmap": "torch.func.vmap", "Functionalize": "torch.func.functionalize"}


def active_transform(*tensors: torch.Tensor) -> str | None:
    """The autodiff transform tracing ``tensors``, named for messages, or None.

    torch.func's transforms (outermost first, e.g. hessian = "torch.func.vmap, torch.func.jvp/jacfwd,
    torch.func.grad/vjp/jacrev") and forward-mode AD (tensors carrying a tangent of
    ``torch.autograd.forward_ad``) reach a custom op's kernel without a rule of their own: a kernel
    that cannot compose must not run under them (its jvp would be silently zero).
    """
    if torch.compiler.is_compiling():     # dynamo traces the innermost level, not the stack
        if torch._C._functorch.peek_interpreter_stack() is not None:
            return "a torch.func transform (under torch.compile)"
        return None
    stack = torch._C._functorch.get_interpreter_stack() or []
    if stack:
        return ", ".join(_TRANSFORM_NAMES.get(i.key().name, i.key().name) for i in stack)
    if fwAD._current_level >= 0 and any(fwAD.unpack_dual(t).tangent is not None for t in tensors):
        return "forward-mode AD (torch.autograd.forward_ad)"
    return None


def _first_kernel(op: str, device: torch.device, dtype: torch.dtype, dims: dict[str, int],
                  transform: str | None) -> str | None:
    """The first Triton backend of ``op`` that can run the inputs where kernels run (CUDA, or CPU
    under the interpreter), or None."""
    if device.type != "cuda" and not interpreting():
        return None
    return next((name for name, b in BACKENDS[op].items() if b.needs_triton
                 and not b.not_supported_reasons(device, dtype, dims, transform)), None)


def select_backend(op: str, backend: str, device: torch.device, dtype: torch.dtype,
                   dims: dict[str, int], transform: str | None = None) -> str:
    """The backend that will run ``op``.

    "auto" picks the op's first Triton backend (in :data:`BACKENDS` order) that can run the inputs,
    on CUDA, and on CPU only when TRITON_INTERPRET=1, unless another backend measured faster at
    the nearest measured shape (:func:`cuda_timings`); else the reference; it never fails. Under
    an autodiff transform (``transform``, from :func:`active_transform`) only backends that
    compose run: "auto" picks the reference, an explicit kernel fails in one line naming the
    transform and the alternative. Any other explicit backend that cannot run raises
    :class:`BackendUnavailableError` with every reason and the backends that would work.
    """
    table = BACKENDS[op]
    if backend == "auto":
        kernel = _first_kernel(op, device, dtype, dims, transform)
        if kernel is not None:
            pref = _cuda_preference(op, device, dtype, dims)
            return pref.backend if pref is not None else kernel
        return "reference"
    if backend not in table:
        raise ValueError(f"backend must be one of {['auto', *table]}; got {backend!r}")
    reasons = table[backend].not_supported_reasons(device, dtype, dims, transform)
    if not reasons:
        return backend
    if len(reasons) == 1 and transform is not None and not table[backend].composes:
        working = [name for name, b in table.items() if b.composes]
        raise BackendUnavailableError(
            f"fastattn.ops.{op}: backend={backend!r} does not compose with {transform} (its "
            f"custom op has no batching or forward-mode rule); use backend="
            f"{working[0]!r} or 'auto', which picks it under torch.func and forward-mode AD")
    inputs = ", ".join([f"device={device.type}", f"dtype={str(dtype).removeprefix('torch.')}",
                        *(f"{k}={v}" for k, v in dims.items())])
    lines = [f"fastattn.ops.{op}: backend {backend!r} cannot run these inputs ({inputs}) because:"]
    lines += [f"  - {r}" for r in reasons]
    working = [name for name, b in table.items()
               if name != backend and not b.not_supported_reasons(device, dtype, dims, transform)]
    lines.append("What would work: " + ("; ".join(
        f"backend={name!r} ({table[name].describe})" for name in working) or "nothing here"))
    lines.append(f"backend={backend!r} needs: {table[backend].describe}.")
    raise BackendUnavailableError("\n".join(lines))


def backend_reason(op: str, name: str, device: torch.device, dtype: torch.dtype,
                   dims: dict[str, int], transform: str | None = None) -> str:
    """Why :func:`select_backend` ran ``op`` on backend ``name``: one line for logs and tests."""
    pref = _cuda_preference(op, device, dtype, dims)
    if pref is not None and pref.backend == name:
        return f"{name}: requested, or chosen by auto on CUDA because {pref.why}"
    if name != "reference":
        return f"{name}: requested or chosen, and it can run these inputs"
    kernels = {k: b for k, b in BACKENDS[op].items() if b.needs_triton}
    reasons = [(f"{k}: " if len(kernels) > 1 else "") + r for k, b in kernels.items()
               for r in b.not_supported_reasons(device, dtype, dims, transform)]
    if not reasons and device.type != "cuda" and not interpreting():
        reasons = ["tensors are on cpu and TRITON_INTERPRET=1 is not set"]
    return "reference: " + ("; ".join(reasons) if reasons else "requested")


def available_backends() -> dict[str, dict[str, dict]]:
    """Per op, per backend: ``{"available": bool, "why_not": str | None, "requires": str}``.

    "available" means the backend can run on some device visible now (Triton: triton installed
    and a CUDA device, or TRITON_INTERPRET=1 for CPU tensors).
    """
    cuda = torch.cuda.is_available()
    report: dict[str, dict[str, dict]] = {}
    for op, table in BACKENDS.items():
        report[op] = {}
        for name, b in table.items():
            why = None
            if b.needs_triton:
                if not triton_available():
                    why = "triton is not installed"
                elif not cuda and not interpreting():
                    why = "no CUDA device is visible and TRITON_INTERPRET=1 is not set"
            report[op][name] = {"available": why is None, "why_not": why, "requires": b.describe}
    return report
