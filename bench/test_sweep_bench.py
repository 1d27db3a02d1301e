"""Sweep benchmarks (issue 6). Not timing assertions: numbers are printed and, under
pytest-benchmark, recorded. Run:

    pytest bench/test_sweep_bench.py -s                     # small: workers 1 vs 2, batching, Ray
    python bench/test_sweep_bench.py grid --workers 2 --max-run-seconds 60   # 105-run D × N × seed grid
    python bench/test_sweep_bench.py grid --dims 256 --contexts 32,128,512,2048 --seeds 1 \
        --max-evals 100000000                                # to convergence, no budget
    python bench/test_sweep_bench.py d1024 --context 512 --max-run-seconds 120   # D = H = 1024

Setting (stated once): ATTN_S rank 1, H = D, linear spectrum (trace 1), init 1e-2·√D (paper scheme:
per-head |v|, ‖k‖, ‖q‖ ≈ 1e-2 at every D), N ∈ {8, 32, 128, 512, 2048}, exact flow with the sweep's
default horizon and tolerances (stop at L ≤ 1.05·L*, "auto" integrator: RK45 switching to Rodas4
while stiff up to P = 2000, above it the order-4 stabilized explicit method with Hessian-free Rodas4
episodes where the flow has settled; rtol 1e-5, atol 1e-9).
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

import pytest

BASE = {"model": "separate", "heads": "D", "rank": 1, "init": "1e-2*sqrt(D)", "spectrum": "linear"}
GRID = dict(BASE, dim=[4, 8, 16, 32, 64, 128, 256], context=[8, 32, 128, 512, 2048])
SMALL = dict(BASE, dim=[16, 32, 64], context=[32, 128])


def _sweep(grid, out, **kw):
    from fastattn.sweep import run_sweep

    t = time.perf_counter()
    df = run_sweep(grid, out, progress=False, **kw)
    return df, time.perf_counter() - t


def _summary(df, wall: float) -> str:
    counts = df["status"].value_counts().to_dict()
    return f"{len(df)} runs in {wall:.1f} s; status {counts}; sum of run times {df['wall_time'].sum():.1f} s"


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_workers(workers, tmp_path):
    df, wall = _sweep(SMALL, tmp_path, seeds=3, workers=workers)
    print(f"\nlocal workers={workers}: {_summary(df, wall)}")


@pytest.mark.slow
@pytest.mark.parametrize("batch", [1, 3])
def test_batching(batch, tmp_path):
    """K = 3 seeds per population.integrate call vs one call per run (in-process, no pool)."""
    df, wall = _sweep(SMALL, tmp_path, seeds=3, workers=0, batch=batch)
    print(f"\nbatch={batch}: {_summary(df, wall)}")


@pytest.mark.slow
def test_ray_local(tmp_path):
    pytest.importorskip("ray")
    df, wall = _sweep(SMALL, tmp_path, seeds=3, executor="ray", workers=2)
    print(f"\nray (local, 2 CPUs, includes start-up): {_summary(df, wall)}")


def grid_main(out: str, a: argparse.Namespace) -> None:
    from fastattn.sweep import Horizon

    grid = dict(GRID, **{k: [int(x) for x in v.split(",")] for k, v in
                         (("dim", a.dims), ("context", a.contexts)) if v})
    df, wall = _sweep(grid, out, seeds=a.seeds, workers=a.workers, batch=a.batch,
                      horizon=Horizon(max_run_seconds=a.max_run_seconds, max_evals=a.max_evals))
    print(_summary(df, wall))
    print(df.groupby(["dim", "context"]).agg(wall=("wall_time", "mean"), evals=("n_evals", "mean"),
                                             hvps=("n_hvp", "mean"),
                                             status=("status", lambda s: ",".join(sorted(set(s)))))
          .round(1).to_string())


def d1024_main(out: str, context: int, rel: float, max_run_seconds: float | None) -> None:
    from fastattn.sweep import Horizon

    grid = dict(BASE, dim=1024, context=context)
    df, wall = _sweep(grid, out, workers=0,
                      horizon=Horizon(converge_rel=rel, max_run_seconds=max_run_seconds))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    row = df.iloc[0]
    print(f"D=H=1024, N={context}: status={row['status']}, evals={row['n_evals']}, "
          f"final/L*={row['final_loss'] / row['theory_Lstar']:.4f}, run {row['wall_time']:.1f} s, "
          f"total {wall:.1f} s, max RSS {rss:.0f} MiB, error={row.get('error')}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("grid", "d1024"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--max-run-seconds", type=float, default=None)
    ap.add_argument("--max-evals", type=int, default=5_000_000)
    ap.add_argument("--dims", default=None, help="grid: comma-separated D (default 4..256)")
    ap.add_argument("--contexts", default=None, help="grid: comma-separated N (default 8..2048)")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--context", type=int, default=32)
    ap.add_argument("--converge-rel", type=float, default=0.05)
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix=f"sweep-{a.what}-")
    print(f"output: {Path(out)}", file=sys.stderr)
    if a.what == "grid":
        grid_main(out, a)
    else:
        d1024_main(out, a.context, a.converge_rel, a.max_run_seconds)
