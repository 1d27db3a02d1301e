"""The GPU kernel table of docs/gpu.md from pytest-benchmark JSON of bench/test_kernels_bench.py.

    python bench/gpu_table.py bench.json [--after bench_after.json] [--peak-gbs 4800]

One row per benchmark group (op, shape, pass; bench/groups.py): the device median (ms) of the Triton
kernel, of the implementations only some ops have (:data:`EXTRA`: the read-out's chunked backend,
the linear-attention kernel with one TF32 product a dot, flash-linear-attention), shown where the
file has them, of the eager reference and torch.compile of it, the Triton GB/s (the fewest bytes
the pass must move over its time) and that as a share of ``--peak-gbs`` (the card's nominal memory
bandwidth; H200 4800, H100 SXM 3350) and, when the run
measured it (test_cuda_copy_bandwidth), of the device's copy rate ("of copy": the issue's 80 %
goal); where the bench counts flops, the Triton TFLOP/s. With ``--after`` (a later run of some
Triton cases), its Triton time and GB/s are the ones shown and the first file's Triton time is shown
as "before" (for the groups the later run re-timed). Rows and implementations are matched by the
benchmark's group and its ``extra_info`` fields, never by test name. Both files may be
``--benchmark-autosave`` runs from ``.benchmarks/``; pytest-benchmark's own ``--benchmark-compare``
compares wall times, this table the device medians it records in ``extra_info`` (docs/benchmarks.md,
"Comparing revisions").
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

from groups import FIELDS
from test_kernels_bench import CUDA_IMPLS

#: implementations some groups add (bench/test_linear_attention_bench.py), columns after Triton's
EXTRA = ("chunked", "triton-tf32", "fla")


@dataclass(frozen=True)
class Case:
    """One (op, shape, pass) group of test_cuda_kernel: its row label, each impl's (device median
    ms, GB/s) and the Triton kernel's TFLOP/s where the bench counts its flops."""

    op: str
    shape: dict[str, int]
    pass_: str
    impls: dict[str, tuple[float, float]]
    tflops: dict[str, float]
    dtype: str = "float32"


def copy_rate(path: Path) -> float | None:
    """GB/s of the device copy measured in the same run (test_cuda_copy_bandwidth), if any."""
    rates = [b["extra_info"]["copy_GB_per_s"] for b in json.loads(path.read_text())["benchmarks"]
             if "copy_GB_per_s" in b["extra_info"]]
    return rates[0] if rates else None


def cases(path: Path) -> dict[str, Case]:
    """The kernel cases of a pytest-benchmark JSON, by group, in the file's order: the benchmarks
    whose ``extra_info`` has a ``GB_per_s`` (the device-timed kernels)."""
    out: dict[str, Case] = {}
    for bench in json.loads(path.read_text())["benchmarks"]:
        info = bench["extra_info"]
        if "GB_per_s" not in info:
            continue
        missing = [k for k in FIELDS if k not in info]
        if missing or not bench.get("group"):
            raise SystemExit(f"{path}: benchmark {bench['name']} has no group or no extra_info "
                             f"{'/'.join(missing or FIELDS)} (a run from before bench/groups.py): "
                             "rerun bench/test_kernels_bench.py to make the file")
        case = out.setdefault(bench["group"], Case(info["op"], info["shape"], info["pass"], {}, {},
                                                   info.get("dtype", "float32")))
        case.impls[info["impl"]] = (info["device_median_ms"], info["GB_per_s"])
        if info.get("flops"):
            case.tflops[info["impl"]] = info["TFLOP_per_s"]
    if not out:
        raise SystemExit(f"{path}: no kernel benchmark (test_cuda_kernel) in it: make it with "
                         "`pytest bench/test_kernels_bench.py -k cuda --benchmark-json FILE`")
    return out


def table(before: Path, after: Path | None, peak_gbs: float) -> str:
    """The markdown table (module docstring) of ``before``, with ``after``'s Triton times."""
    rows, later = cases(before), cases(after) if after else {}
    extra = [i for i in EXTRA if any(i in case.impls for case in rows.values())]
    impl_order = [CUDA_IMPLS[0], *extra, *CUDA_IMPLS[1:]]
    copy = copy_rate(before)
    flops = any("triton" in case.tflops for case in rows.values())
    head = ["op (shape)", "pass"]
    head += (["Triton before ms", "Triton ms"] if after else ["Triton ms"])
    head += [f"{i} ms" for i in extra] + ["eager ms", "compile ms", "Triton GB/s", "of peak"]
    head += (["of copy"] if copy else []) + (["Triton TFLOP/s"] if flops else [])
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * 2 + "---:|" * (len(head) - 2)]
    for group, case in rows.items():
        impls = dict(case.impls)
        retimed = later[group].impls.get("triton") if group in later else None
        if retimed:
            impls["triton"] = retimed
        times = {k: impls[k][0] for k in impl_order if k in impls}
        best = min(times, key=times.get)
        cell = {k: (f"**{v:.3g}**" if k == best else f"{v:.3g}") for k, v in times.items()}
        sizes = ", ".join(f"{k}={v}" for k, v in case.shape.items())
        dtype = "" if case.dtype == "float32" else f", {case.dtype}"
        cols = [f"{case.op} ({sizes}{dtype})", case.pass_]
        if after:  # "—": the kernel's code did not change between the two runs
            cols.append(f"{case.impls['triton'][0]:.3g}" if retimed and "triton" in case.impls
                        else "—")
        cols += [cell.get(k, "—") for k in impl_order]
        tri_gbs = impls["triton"][1] if "triton" in impls else None
        cols += ([f"{tri_gbs:.0f}", f"{100 * tri_gbs / peak_gbs:.0f} %"] if tri_gbs is not None
                 else ["—", "—"])
        if copy:
            cols.append(f"{100 * tri_gbs / copy:.0f} %" if tri_gbs is not None else "—")
        if flops:
            cols.append(f"{case.tflops['triton']:.1f}" if "triton" in case.tflops else "—")
        out.append("| " + " | ".join(cols) + " |")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench", type=Path)
    parser.add_argument("--after", type=Path)
    parser.add_argument("--peak-gbs", type=float, default=4800.0)
    a = parser.parse_args()
    print(table(a.bench, a.after, a.peak_gbs))


if __name__ == "__main__":
    main()
