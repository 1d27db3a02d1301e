"""fastattn/ops/cuda_timings.json (what ``backend="auto"`` follows on CUDA) from the benchmark JSON
of a ``bench/gpu_all.sh`` run:

    python bench/dispatch_table.py OUT/bench.json [--out fastattn/ops/cuda_timings.json]

Per op, one row per benchmarked shape: its dispatch sizes (the ``dims`` the op passes to
``select_backend``), the pass that decides (forward + backward: training; the sampler's "sample")
and the device median of each backend measured there (torch.compile and flash-linear-attention are
not backends: left out). Rows with fewer than two backends decide nothing and are left out. The
device, date and versions come from the run (``gpu_all.json`` beside it, when present).
"""

from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path

from fastattn.ops._dispatch import BACKENDS

#: the pass whose time decides, per op (the others decide by forward + backward)
DECIDING = {"sample_icl_stats": "sample"}


def dispatch_dims(op: str, shape: dict[str, int]) -> dict[str, int]:
    """The sizes ``op`` passes to ``select_backend``, from a benchmark's shape (bench/groups.py's
    names: single-query attention is benchmarked with one value, V = 1; pe_attention with
    K = V = E)."""
    if op == "single_query_attention":
        return {"K": shape["D"], "V": 1}
    if op == "pe_attention":
        return {"K": shape["E"], "V": shape["E"]}
    if op == "causal_linear_attention":
        return {"K": shape["K"], "V": shape["K"]}
    return {"D": shape["D"]}


def timings(bench: dict, run: dict) -> dict:
    """The cuda_timings.json document of one pytest-benchmark JSON (``run``: gpu_all.json)."""
    rows: dict[tuple, dict] = {}
    for b in bench["benchmarks"]:
        info = b["extra_info"]
        op, impl = info.get("op"), info.get("impl")
        if op not in BACKENDS or impl not in BACKENDS[op] or "device_median_ms" not in info:
            continue
        if info["pass"] != DECIDING.get(op, "fwd+bwd"):
            continue
        if info.get("dtype", "float32") != "float32":   # "auto" follows float32's medians only
            continue
        key = (op, json.dumps(info["shape"]))
        row = rows.setdefault(key, {"shape": info["shape"], "dims": dispatch_dims(op, info["shape"]),
                                    "pass": info["pass"], "ms": {}})
        row["ms"][impl] = round(info["device_median_ms"], 4)
    ops: dict[str, list] = {}
    for (op, _), row in rows.items():
        if len(row["ms"]) >= 2:
            ops.setdefault(op, []).append(row)
    infos = [b["extra_info"] for b in bench["benchmarks"]]
    device = run.get("device") or next((i["device"] for i in infos if "device" in i), None)
    when = bench.get("datetime", datetime.datetime.now(datetime.timezone.utc).isoformat())[:10]
    return {"device": device, "date": when, "torch": run.get("torch"), "triton": run.get("triton"),
            "commit": bench.get("commit_info", {}).get("id", "")[:7],
            "source": "python bench/dispatch_table.py on a bench/gpu_all.sh run", "ops": ops}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench", type=Path)
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).resolve().parents[1] / "fastattn/ops/cuda_timings.json")
    a = parser.parse_args()
    summary = a.bench.with_name("gpu_all.json")
    run = json.loads(summary.read_text()) if summary.exists() else {}
    doc = timings(json.loads(a.bench.read_text()), run)
    tmp = a.out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(a.out)
    print(f"{a.out}: {sum(len(r) for r in doc['ops'].values())} rows over {len(doc['ops'])} ops")


if __name__ == "__main__":
    main()
