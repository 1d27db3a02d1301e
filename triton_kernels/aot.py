"""Ahead-of-time compile report: every Triton kernel of the library compiled for an NVIDIA target
(sm_80, sm_90) on a machine without a GPU, with its resource use.

The launch configurations are not listed here: each workload below calls the kernels' own
launchers (``*_forward``, ``*_backward``, ``he_adam_step_triton``, ...) with ``meta`` tensors
inside :func:`recording_launches`, which records every launch (grid, arguments, constexprs) instead
of running it and makes the launchers plan as for a CUDA device with the target's SM count. Each
distinct recorded configuration is then specialised exactly as ``JITFunction.run`` does (Triton's
own binder: dtypes, 16-byte alignment, integers equal to 1) and compiled with
``triton.compile`` for the target; ``cuobjdump`` (shipped with Triton) reads the cubin's
registers, local memory (spills) and shared memory, and its SASS gives the instruction mix.

Usage: ``python -m fastattn.triton_kernels.aot_cli --target sm_90 [--json]`` (or ``fastattn
kernels``). A configuration fails when it does not compile, when the compiler invents a ``tt.dot``
the source did not ask for, or when it spills (local memory, counting ptxas's stack frame); exit
status 1 when one fails.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from ._launch import COMPILE_OPTIONS, Launch, recording_launches

__all__ = [
    "TARGETS",
    "WORKLOADS",
    "KernelReport",
    "compile_report",
    "kernel_names",
    "planned_launches",
    "run_report",
]


@dataclass(frozen=True)
class Target:
    """An NVIDIA GPU generation: what bounds the occupancy of a kernel on one SM."""

    name: str
    capability: int
    sms: int                 # SMs of the reference part (A100 SXM, H100 SXM), for grid planning
    max_warps: int = 64      # resident warps per SM
    max_blocks: int = 32     # resident blocks per SM
    registers: int = 65536   # 32-bit registers per SM
    shared: int = 0          # shared memory per SM usable by blocks, bytes
    reserved_shared: int = 1024  # per block, reserved by the system (sm_80+)


TARGETS = {
    "sm_80": Target("sm_80", 80, sms=108, shared=167936),
    "sm_90": Target("sm_90", 90, sms=132, shared=233472),
}

#: Shapes the workloads plan launches for (the library's own shapes and the dispatch limits).
_DTYPES = (torch.float32, torch.float64)
#: Workloads planned for other dtypes than :data:`_DTYPES`: the chunked linear attention runs
#: float32 and half precision (the interpreter, which tests it, has no float64 tl.dot).
_WORKLOAD_DTYPES = {"linear_attention": (torch.float32, torch.bfloat16, torch.float16)}


def _meta(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.empty(*shape, dtype=dtype, device="meta")


def _he_train_step(dt: torch.dtype) -> None:
    from .he_train_step.kernel import he_adam_step_triton

    # (R, H, d, L, B): the He et al. 2025 runs (H <= 8, d = 5, L = 40, B = 256) and the test shape
    for r, h, d, L, b in [(20, 8, 5, 40, 256), (20, 1, 5, 40, 256), (3, 1, 7, 100, 1000)]:
        dd = d + 1
        p = 3 * h * dd * dd + h * dd
        theta, m, v = (_meta(r, p, dtype=dt) for _ in range(3))
        he_adam_step_triton(theta, m, v, _meta(r, dtype=torch.int64), _meta(r, dtype=dt),
                            _meta(r, d, d, dtype=dt), _meta(r, d, d, dtype=dt), _meta(r, dtype=dt),
                            h, L, b, 3, write_batch=False)


def _icl_readout(dt: torch.dtype) -> None:
    from .icl_readout.kernel import (
        icl_readout_backward,
        icl_readout_forward,
        icl_readout_next_token_backward,
        icl_readout_next_token_forward,
    )

    # (B, N, D, H): read-out at D <= 64 (the dispatch limit), the benchmark shapes
    for b, n, d, h in [(1 << 20, 32, 4, 4), (4096, 40, 5, 1), (4096, 64, 16, 4), (1024, 64, 64, 4)]:
        x, y, xq, g = _meta(b, n, d, dtype=dt), _meta(b, n, dtype=dt), _meta(b, d, dtype=dt), \
            _meta(h, d, d, dtype=dt)
        out, beta = icl_readout_forward(x, y, xq, g)
        icl_readout_backward(out, x, y, xq, g, beta)
        out = icl_readout_next_token_forward(x, y, g)
        icl_readout_next_token_backward(out, x, y, g)


def _cubic(dt: torch.dtype) -> None:
    from .cubic.kernel import cubic_hidden_backward, cubic_hidden_forward

    # (B, D, H): D up to the dispatch limit 64; both sides of the whole-G switch
    for b, d, h in [(262144, 1, 4), (262144, 4, 4), (262144, 16, 4), (65536, 64, 4)]:
        beta, xq, w1 = _meta(b, d, dtype=dt), _meta(b, d, dtype=dt), _meta(h, d * d, dtype=dt)
        out = cubic_hidden_forward(beta, xq, w1)
        cubic_hidden_backward(out, beta, xq, w1)


def _sampling(dt: torch.dtype) -> None:
    from .sampling.kernel import sample_icl_stats_kernel

    # (B, N, D): the benchmark shape and the read-out's D range
    for b, n, d in [(65536, 1024, 16), (4096, 40, 5), (4096, 64, 64)]:
        sample_icl_stats_kernel(0, 0, b, n, _meta(d, d, dtype=dt), _meta(d, dtype=dt),
                                _meta(d, d, dtype=dt), 0.1, dt)


def _single_query_attention(dt: torch.dtype) -> None:
    from .single_query_attention.kernel import (
        single_query_attention_backward,
        single_query_attention_forward,
    )

    # (B, H, M, K, V, shared keys): K and V up to the dispatch limit 128
    for b, h, m, k, v, shared in [(16384, 4, 1024, 64, 64, True), (4096, 8, 41, 6, 6, False),
                                  (1024, 4, 256, 128, 128, True)]:
        q = _meta(b, h, k, dtype=dt)
        keys = _meta(b, m, k, dtype=dt) if shared else _meta(b, h, m, k, dtype=dt)
        vals = _meta(b, m, v, dtype=dt)
        out, lse = single_query_attention_forward(q, keys, vals, 0.125)
        single_query_attention_backward(out, q, keys, vals, 0.125, out, lse)


def _pe_attention(dt: torch.dtype) -> None:
    from .pe_attention.kernel import pe_attention_backward, pe_attention_forward

    # (B, H, Tq, Tk, K, V, look-ahead): Sander et al. at T <= 64, the benchmark shapes
    for b, h, tq, tk, kd, vd, la in [(1024, 64, 50, 50, 10, 10, 0), (1024, 1, 64, 64, 5, 5, 1),
                                     (4096, 256, 16, 16, 4, 4, 0), (64, 4, 200, 200, 33, 9, 0)]:
        q, k, v = _meta(b, h, tq, kd, dtype=dt), _meta(b, h, tk, kd, dtype=dt), \
            _meta(b, h, tk, vd, dtype=dt)
        p = _meta(h, tq, tk, dtype=dt)
        out = pe_attention_forward(q, k, v, p, la)
        pe_attention_backward(out, q, k, v, p, la)


def _linear_attention(dt: torch.dtype) -> None:
    from .linear_attention.kernel import (
        causal_linear_attention_backward,
        causal_linear_attention_forward,
    )

    # (B, T, H, K, V, strict): flash-linear-attention's benchmark shapes (head dim 16-128, T up to
    # 8192) and the next-token read-out's (K = D, V = 1, strict)
    for b, t, h, kd, vd, strict in [(8, 2048, 16, 64, 64, False), (2, 8192, 8, 128, 128, False),
                                    (8, 4096, 16, 16, 16, False), (1 << 14, 256, 4, 4, 1, True),
                                    (1 << 12, 1024, 4, 16, 1, True)]:
        q, k, v = _meta(b, t, h, kd, dtype=dt), _meta(b, t, h, kd, dtype=dt), \
            _meta(b, t, h, vd, dtype=dt)
        o, states = causal_linear_attention_forward(q, k, v, 1.0, strict)
        causal_linear_attention_backward(o, q, k, v, states, 1.0, strict)


#: kernel package -> workload: calls its launchers as the ops do.
WORKLOADS: dict[str, Callable[[torch.dtype], None]] = {
    "cubic": _cubic,
    "he_train_step": _he_train_step,
    "icl_readout": _icl_readout,
    "linear_attention": _linear_attention,
    "pe_attention": _pe_attention,
    "sampling": _sampling,
    "single_query_attention": _single_query_attention,
}


def kernel_name(launch: Launch) -> str:
    """``package.function`` of a launch's kernel, e.g. ``pe_attention._pe_attention_fwd``."""
    fn = launch.kernel.fn
    return f"{fn.__module__.split('.')[-2]}.{fn.__name__}"


def planned_launches(target: Target) -> Iterator[tuple[str, Launch]]:
    """(workload, launch) for every launch the workloads' launchers issue, planned for ``target``."""
    for name, workload in WORKLOADS.items():
        for dt in _WORKLOAD_DTYPES.get(name, _DTYPES):
            with recording_launches(target.sms) as launches:
                workload(dt)
            for launch in launches:
                yield name, launch


def kernel_names() -> list[str]:
    """Sorted names of every kernel the workloads launch (no compilation)."""
    return sorted({kernel_name(launch) for _, launch in planned_launches(TARGETS["sm_90"])})


@dataclass
class KernelReport:
    """One kernel at one launch configuration, compiled for one target."""

    kernel: str
    target: str
    config: dict            # constexprs and the dtype of the first pointer argument
    num_warps: int
    num_stages: int
    grid: list[int]
    compiled: bool
    error: str | None = None
    registers: int | None = None      # per thread
    spilled_bytes: int | None = None  # local memory per thread: stack frame (spills) + LOCAL
    shared_bytes: int | None = None   # static + dynamic, per block
    blocks_per_sm: int | None = None
    occupancy: float | None = None    # resident warps / max warps per SM
    limiter: str | None = None        # what bounds the occupancy
    mma: int | None = None            # tensor-core instructions (HMMA/DMMA/HGMMA) in the SASS
    requested_dots: dict | None = None  # tt.dot from a tl.dot call in the source, by precision or half type
    implicit_dots: int | None = None  # tt.dot the compiler made from a broadcast-multiply-sum
    loads: dict | None = None         # global loads in the SASS by width in bits
    vector_loads: int | None = None   # global loads wider than one element
    compile_seconds: float | None = None
    notes: list[str] = field(default_factory=list)


def _tool(name: str) -> str:
    import triton

    path = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", name)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{name} not found at {path} (it ships with the triton wheel)")
    return path


def _resources(cubin: bytes) -> tuple[dict[str, int], str]:
    """(cuobjdump's resource usage of the cubin's one kernel, its SASS)."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        usage = subprocess.run([_tool("cuobjdump"), "--dump-resource-usage", f.name],
                               capture_output=True, text=True, check=True).stdout
        sass = subprocess.run([_tool("cuobjdump"), "--dump-sass", f.name],
                              capture_output=True, text=True, check=True).stdout
    found = dict(re.findall(r"\b(REG|STACK|SHARED|LOCAL):(\d+)", usage))
    return {k: int(v) for k, v in found.items()}, sass


def _occupancy(target: Target, regs: int, shared: int, warps: int) -> tuple[int, float, str]:
    """(blocks per SM, occupancy, limiter) from CUDA's occupancy rules: registers allocated per
    warp in units of 256, shared memory per block plus the reserved 1 KB."""
    regs_per_warp = -(-max(regs, 1) * 32 // 256) * 256
    limits = {  # on a tie the hardware maxima are named
        "warps": target.max_warps // warps,
        "blocks": target.max_blocks,
        "registers": (target.registers // regs_per_warp) // warps,
        "shared memory": target.shared // (shared + target.reserved_shared),
    }
    limiter = min(limits, key=limits.get)
    blocks = limits[limiter]
    return blocks, blocks * warps / target.max_warps, limiter


def _config(launch: Launch) -> dict:
    cfg = {k: v for k, v in launch.kwargs.items() if k not in ("num_warps", "num_stages")}
    dtypes = [a.dtype for a in launch.args if isinstance(a, torch.Tensor) and a.is_floating_point()]
    cfg["dtype"] = str(dtypes[0]).removeprefix("torch.") if dtypes else None
    return cfg


def _compile(launch: Launch, target: Target):
    """Compile ``launch`` for ``target`` exactly as ``JITFunction.run`` would specialise it."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend
    from triton.runtime.jit import JITFunction, create_function_from_signature

    jit = JITFunction(launch.kernel.fn)
    gpu = GPUTarget("cuda", target.capability, 32)
    backend = make_backend(gpu)
    binder = create_function_from_signature(jit.signature, jit.params, backend)
    kwargs = {**COMPILE_OPTIONS, **launch.kwargs, "debug": False}
    bound, specialization, options = binder(*launch.args, **kwargs)
    options, signature, constexprs, attrs = jit._pack_args(backend, kwargs, bound, specialization,
                                                           options)
    src = triton.compiler.ASTSource(jit, signature, constexprs, attrs)
    return triton.compile(src, target=gpu, options=options.__dict__)


_LOC_ALIAS = re.compile(r"^(#loc\d*) = loc\((.*)\)$", re.M)
_DOT = re.compile(r"\btt\.dot\b([^\n]*) loc\((.*)\)$", re.M)
_REQUESTED = re.compile(r"tl\.dot\s*\(")


def _frames(loc: str, aliases: dict[str, str]) -> list[tuple[str, int, int]]:
    """(file, line, column) frames of an MLIR location, innermost first: ``"f":L:C``, a name
    ``"x"(LOC)``, ``callsite(CALLEE at CALLER)``, ``fused[...]``, ``#locN`` aliases, ``unknown``."""
    loc = loc.strip()
    if loc.startswith("#loc"):
        return _frames(aliases.get(loc, "unknown"), aliases)
    if loc.startswith("loc(") and loc.endswith(")"):
        return _frames(loc[4:-1], aliases)
    if m := re.fullmatch(r'"((?:[^"\\]|\\.)*)":(\d+):(\d+)', loc):
        return [(m[1], int(m[2]), int(m[3]))]
    if m := re.fullmatch(r'"(?:[^"\\]|\\.)*"\((.*)\)', loc):
        return _frames(m[1], aliases)
    if loc.startswith("callsite(") and loc.endswith(")"):
        callee, _, caller = loc[len("callsite("):-1].rpartition(" at ")
        return _frames(callee, aliases) + _frames(caller, aliases)
    if loc.startswith("fused"):            # fused<...>[a, b]: every member's frames
        return [f for part in re.findall(r'#loc\d*|"[^"]*":\d+:\d+', loc)
                for f in _frames(part, aliases)]
    return []


def _dots(ttir: str, fn: Callable) -> tuple[list[str], list[str]]:
    """Input precisions of the TTIR's ``tt.dot`` ops (half-precision operands, which have no
    precision choice, by their type: "bf16", "f16"), split into (requested, implicit): requested
    when the op's location in the kernel's own file is a ``tl.dot(`` call (the column Triton
    records is the call's start), implicit otherwise (a broadcast-multiply-sum the compiler turned
    into a dot, or a dot with no location).

    A frame is in the kernel's file when its last two path parts (package, file) match: Triton's
    cache is keyed by the source, not its path, so a kernel compiled before from another copy of
    the same file (a checkout and an installed wheel) brings that copy's paths in its TTIR."""
    import linecache

    source = os.path.abspath(inspect.getsourcefile(fn) or "")
    tail = Path(source).parts[-2:]
    aliases = dict(_LOC_ALIAS.findall(ttir))
    requested, implicit = [], []
    for body, loc in _DOT.findall(ttir):
        operand = re.search(r": tensor<(?:\d+x)+(\w+)>", body)
        precision = re.search(r"inputPrecision = (\w+)", body)
        if operand and operand[1] in ("bf16", "f16"):
            precision = operand[1]
        else:
            precision = (precision[1] if precision else "ieee").lower()
        here = [(ln, col) for f, ln, col in _frames(loc, aliases) if Path(f).parts[-2:] == tail]
        text = linecache.getline(source, here[0][0])[here[0][1] - 1:] if here else ""
        (requested if _REQUESTED.match(text) else implicit).append(precision)
    return requested, implicit


def _report_one(name: str, launch: Launch, target: Target) -> KernelReport:
    rep = KernelReport(kernel=name, target=target.name, config=_config(launch),
                       num_warps=launch.kwargs.get("num_warps", 4),
                       num_stages=launch.kwargs.get("num_stages", 3),
                       grid=[int(g) for g in launch.grid], compiled=False)
    start = time.perf_counter()
    try:
        kernel = _compile(launch, target)
    except Exception as exc:  # the compiler's error is the report's content
        rep.error = f"{type(exc).__name__}: {exc}".strip()[-4000:]
        rep.compile_seconds = round(time.perf_counter() - start, 2)
        return rep
    rep.compile_seconds = round(time.perf_counter() - start, 2)
    rep.compiled = True
    usage, sass = _resources(kernel.asm["cubin"])
    rep.registers = usage.get("REG")
    # ptxas puts spills in the stack frame (STACK); LOCAL is declared local arrays
    rep.spilled_bytes = usage.get("LOCAL", 0) + usage.get("STACK", 0)
    rep.shared_bytes = max(int(kernel.metadata.shared), usage.get("SHARED", 0))
    rep.num_warps = int(kernel.metadata.num_warps)
    rep.blocks_per_sm, rep.occupancy, rep.limiter = _occupancy(
        target, rep.registers or 1, rep.shared_bytes, rep.num_warps)
    rep.mma = len(re.findall(r"\b(?:HMMA|DMMA|IMMA|HGMMA|QGMMA)\b", sass))
    widths = []
    for suffix in re.findall(r"\bLDG((?:\.[A-Z0-9_]+)*)", sass):   # LDG.E.128.CONSTANT, LDG.E
        sizes = [int(part) for part in suffix.split(".") if part.isdigit()]
        widths.append(sizes[0] if sizes else 32)
    rep.loads = {str(w): widths.count(w) for w in sorted(set(widths))}
    element = 64 if rep.config.get("dtype") == "float64" else 32
    rep.vector_loads = sum(n for w, n in rep.loads.items() if int(w) > element)
    requested, implicit = _dots(kernel.asm["ttir"], launch.kernel.fn)
    rep.requested_dots = {p: requested.count(p) for p in sorted(set(requested))}
    rep.implicit_dots = len(implicit)
    if implicit:
        rep.compiled = False
        rep.error = (f"{len(implicit)} tt.dot made by the compiler from a broadcast-multiply-sum "
                     f"reduced over axis 1 (input precision {sorted(set(implicit))}; Triton 3.6 "
                     f"runs them in TF32 on sm_80+): reduce over the last axis instead")
    if rep.spilled_bytes:
        # issue 40 asks for no spills on sm_80 and sm_90: a launcher that plans one fails here,
        # in CI, rather than on a GPU no CI run has
        rep.compiled = False
        rep.error = "; ".join(filter(None, [rep.error, (
            f"{rep.spilled_bytes} B of local memory per thread (ptxas's stack frame and local "
            f"arrays: spills): give the launcher smaller blocks or more warps for this shape")]))
    if rep.occupancy < 0.25:
        rep.notes.append(f"occupancy {rep.occupancy:.0%} < 25 % (limited by {rep.limiter})")
    return rep


def _key(name: str, launch: Launch) -> str:
    cfg = _config(launch)
    return json.dumps([name, sorted(cfg.items())], default=str)


def compile_report(target: str = "sm_90", kernels: list[str] | None = None,
                   progress: Callable[[str], None] | None = None, jobs: int = 1,
                   quick: bool = False) -> list[KernelReport]:
    """Compile every distinct (kernel, configuration) the workloads plan for ``target``
    (``kernels``: only those names or packages; ``quick``: one configuration per kernel), in
    ``jobs`` processes."""
    if target not in TARGETS:
        raise ValueError(f"target must be one of {sorted(TARGETS)}; got {target!r}")
    tgt = TARGETS[target]
    todo = _distinct(tgt, kernels, quick)
    if jobs <= 1:
        reports = []
        for name, launch in todo:
            reports.append(_report_one(name, launch, tgt))
            if progress is not None:
                progress(_line(reports[-1]))
        return reports
    import multiprocessing

    everything = _distinct(tgt, None)
    index = {_key(n, launch): i for i, (n, launch) in enumerate(everything)}
    tasks = [(target, index[_key(n, launch)]) for n, launch in todo]
    with multiprocessing.get_context("spawn").Pool(jobs) as pool:
        reports = []
        for rep in pool.imap(_report_task, tasks):
            reports.append(rep)
            if progress is not None:
                progress(_line(rep))
    return reports


def _line(r: KernelReport) -> str:
    cfg = " ".join(f"{k}={v}" for k, v in r.config.items())
    if not r.compiled:
        first = (r.error or "").strip().splitlines()
        if r.registers is not None:  # compiled, but rejected (implicit dot)
            return f"FAIL {r.kernel} [{cfg}] w{r.num_warps}: {first[0]}"
        return f"FAIL {r.kernel} [{cfg}] w{r.num_warps}: {first[-1] if first else ''}"
    return (f"ok   {r.kernel} [{cfg}] w{r.num_warps} s{r.num_stages}: {r.registers} regs, "
            f"{r.spilled_bytes} B spilled, {r.shared_bytes} B shared, {r.blocks_per_sm} blocks/SM, "
            f"occupancy {r.occupancy:.0%} ({r.limiter}), mma {r.mma}, "
            f"requested dots {_dot_count(r.requested_dots)}, "
            f"loads by width {r.loads} (vector {r.vector_loads}), {r.compile_seconds:.1f} s")


def _dot_count(by_precision: dict[str, int]) -> str:
    """``3 (tf32x3 2, ieee 1)``, or ``0``."""
    parts = ", ".join(f"{p} {n}" for p, n in by_precision.items())
    return f"{sum(by_precision.values())} ({parts})" if by_precision else "0"


def _report_task(task: tuple[str, int]) -> KernelReport:
    """Worker of ``--jobs``: compile the ``index``-th distinct configuration for ``target``
    (workers re-plan the launches: a Launch holds meta tensors and a kernel, not picklable)."""
    target, index = task
    tgt = TARGETS[target]
    return _report_one(*_distinct(tgt, None)[index], tgt)


def _distinct(target: Target, kernels: list[str] | None, quick: bool = False
              ) -> list[tuple[str, Launch]]:
    """(kernel name, launch) of each distinct configuration the workloads plan for ``target``
    (``quick``: the first of each kernel only)."""
    seen: dict[str, tuple[str, Launch]] = {}
    for _, launch in planned_launches(target):
        name = kernel_name(launch)
        if kernels and not any(name == k or name.startswith(k + ".") for k in kernels):
            continue
        if quick and any(n == name for n, _ in seen.values()):
            continue
        seen.setdefault(_key(name, launch), (name, launch))
    return list(seen.values())


def run_report(targets: list[str], kernels: list[str] | None = None, as_json: bool = False,
               list_only: bool = False, jobs: int = 1, quick: bool = False) -> int:
    """Print the report for ``targets`` (text, or JSON); 1 if any kernel failed, else 0."""
    if list_only:
        print("\n".join(kernel_names()))
        return 0
    reports: list[KernelReport] = []
    for target in targets:
        progress = None if as_json else (lambda line, t=target: print(f"{t} {line}", flush=True))
        reports += compile_report(target, kernels, progress, jobs, quick)
    failed = [r for r in reports if not r.compiled]
    if as_json:
        import triton

        print(json.dumps({"triton": triton.__version__, "reports": [asdict(r) for r in reports]},
                         indent=1))
    else:
        print(f"{len(reports) - len(failed)}/{len(reports)} configurations compiled with no spill "
              "and no invented dot")
    for r in failed:
        print(f"{r.kernel} for {r.target} [{r.config}] fails:\n{r.error}", file=sys.stderr)
    return 1 if failed else 0
