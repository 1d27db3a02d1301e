"""How the kernels' register budgets trade occupancy against work per program on a real GPU.

The budgets (`triton_kernels/_launch.register_budget`) were once chosen from the AOT report to
keep every kernel spill-free at >= 25 % occupancy; on the GPUs the kernels they shrank got slower
(docs/gpu.md §3a, §4), and the budgets now come from this sweep. It times forward + backward of
each `CUDA_CASES` shape of bench/test_kernels_bench.py with every kernel module's budget scaled by
each of ``--scales`` (float32, device median of `triton.testing.do_bench`, L2 flushed), checks each
output and input gradient against the float64 reference, and writes one JSON row per (op, shape,
scale).

    python bench/gpu_budgets.py --scales 1,2,4 --out budgets.json     # on a CUDA machine
    TRITON_INTERPRET=1 python bench/gpu_budgets.py --device cpu --small   # a smoke run, no timing
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_kernels_bench import CUDA_CASES, _cuda_case

KERNEL_MODULES = ("cubic", "icl_readout", "single_query_attention", "pe_attention", "sampling")
SMALL_CASES = {op: [(5, 7, 3, 2)] for op in CUDA_CASES}


@contextlib.contextmanager
def scaled_budgets(scale: int):
    """Every kernel module's `register_budget` multiplied by ``scale`` while inside."""
    modules = [importlib.import_module(f"fastattn.triton_kernels.{m}.kernel") for m in KERNEL_MODULES]
    originals = [m.register_budget for m in modules]
    try:
        for m, orig in zip(modules, originals, strict=True):
            m.register_budget = (lambda f: lambda dtype, elements, *a, **k:
                                 f(dtype, elements * scale, *a, **k))(orig)
        yield
    finally:
        for m, orig in zip(modules, originals, strict=True):
            m.register_budget = orig


def _median_ms(fn, device) -> float:
    if device.type == "cuda":
        from triton.testing import do_bench

        return do_bench(fn, warmup=25, rep=100, return_mode="median")
    start = time.perf_counter()
    fn()
    return 1e3 * (time.perf_counter() - start)


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach(), b.detach()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def measure(op: str, shape: tuple[int, int, int, int], scale: int, device) -> dict:
    args, fused, ref, fwd_elems, bwd_elems = _cuda_case(op, *shape, device=device)
    with scaled_budgets(scale):
        out = fused(*args, backend="triton")
        grads = torch.autograd.grad(out.sum(), args)
        ref64 = [a.detach().double().requires_grad_() for a in args]
        out_ref = ref(*ref64)
        grads_ref = torch.autograd.grad(out_ref.sum(), ref64)
        err = max([_rel(out.double(), out_ref)] + [_rel(g.double(), gr)
                                                    for g, gr in zip(grads, grads_ref, strict=True)])

        def once():
            torch.autograd.grad(fused(*args, backend="triton").sum(), args)

        ms = _median_ms(once, device)
    nbytes = 4 * (fwd_elems + bwd_elems)
    return {"op": op, "shape": list(shape), "scale": scale, "fwd_bwd_ms": ms,
            "GB_per_s": nbytes / ms / 1e6, "max_rel_err_vs_float64": err}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--small", action="store_true", help="tiny shapes (interpreter smoke run)")
    parser.add_argument("--scales", default="1,2,4,8")
    parser.add_argument("--ops", default=",".join(CUDA_CASES))
    a = parser.parse_args()
    device = torch.device(a.device)
    cases = SMALL_CASES if a.small else CUDA_CASES
    rows = []
    for op in a.ops.split(","):
        for shape in cases[op]:
            for scale in map(int, a.scales.split(",")):
                try:
                    row = measure(op, shape, scale, device)
                except Exception as exc:  # a configuration that fails to compile is a result too
                    row = {"op": op, "shape": list(shape), "scale": scale,
                           "error": f"{type(exc).__name__}: {exc}"[:300]}
                rows.append(row)
                print(json.dumps(row), flush=True)
                if a.out:
                    a.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
