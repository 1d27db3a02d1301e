"""The GPU kernel table of docs/gpu.md from pytest-benchmark JSON of bench/test_kernels_bench.py.

    python bench/gpu_table.py bench.json [--after bench_after.json] [--peak-gbs 4800]

One row per (op, shape, pass): the device median (ms) of the Triton kernel, the eager reference and
torch.compile of it, the Triton GB/s (the fewest bytes the pass must move over its time) and that
as a share of ``--peak-gbs`` (the card's nominal memory bandwidth; H200 4800, H100 SXM 3350). With
``--after`` (a later run of some Triton cases), its Triton time and GB/s are the ones shown and the
first file's Triton time is shown as "before" (for the cases the later run re-timed).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

_NAME = re.compile(r"test_cuda_kernel\[(\w+)-(\d+)-(\d+)-(\d+)-(\d+)-([\w-]+)-(fwd\+bwd|fwd)\]")


def _medians(path: Path) -> dict[tuple, dict[str, tuple[float, float]]]:
    rows: dict[tuple, dict[str, tuple[float, float]]] = {}
    for bench in json.loads(path.read_text())["benchmarks"]:
        m = _NAME.fullmatch(bench["name"])
        if m:
            op, b, n, d, h, impl, mode = m.groups()
            info = bench["extra_info"]
            rows.setdefault((op, int(b), int(n), int(d), int(h), mode), {})[impl] = (
                info["device_median_ms"], info["GB_per_s"])
    return rows


def table(before: Path, after: Path | None, peak_gbs: float) -> str:
    rows, later = _medians(before), _medians(after) if after else {}
    head = ["op (B, N, D, H)", "pass"]
    head += (["Triton before ms", "Triton ms"] if after else ["Triton ms"])
    head += ["eager ms", "compile ms", "Triton GB/s", "of peak"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * 2 + "---:|" * (len(head) - 2)]
    for key, impls in rows.items():
        op, b, n, d, h, mode = key
        tri_ms, tri_gbs = later.get(key, {}).get("triton", impls["triton"])
        times = {"triton": tri_ms, "reference": impls["reference"][0],
                 "compiled-reference": impls["compiled-reference"][0]}
        best = min(times, key=times.get)
        cell = {k: (f"**{v:.3g}**" if k == best else f"{v:.3g}") for k, v in times.items()}
        cols = [f"{op} ({b}, {n}, {d}, {h})", mode]
        if after:  # "—": the kernel's code did not change between the two runs
            cols.append(f"{impls['triton'][0]:.3g}" if key in later else "—")
        cols.append(cell["triton"])
        cols += [cell["reference"], cell["compiled-reference"], f"{tri_gbs:.0f}",
                 f"{100 * tri_gbs / peak_gbs:.0f} %"]
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
