"""`auto` against every fixed integrator on one benchmark flow per registered exact objective (issue
25 item 5): CPU seconds (one thread, best of --repeat runs) and the exact work (gradient evaluations,
Hessian-vector products, dense Hessians, steps, rejections) of each method, and `auto`'s ratio to the
fastest fixed method measured in the same run.

The flows (the objective's registered (task kind, model kind), its model and task, the stop):
- linear_regression/separate: the golden flows fig3 (Zhang Fig. 3: D 4, H 5, t 2e4), rank4 (D 8,
  H 9, R 4, t 2e4) and d32 (D = H = 32, t 3e3) of tests/population/test_golden.py, and the
  auto-vs-LSODA flow at D = 8 and 32 (t 1e7, 400 log-spaced records; bench/test_auto_vs_lsoda.py);
- linear_regression/merged and cubic_mlp: D 8, H 9, λ_d ∝ 1/d rotated, N 31, init 1e-2, t 2e4;
- wishart_tasks/linear_transformer (Mainali, reduced model): d 16, fresh tasks, N 32, t 1e6;
- induction/three_param and gram19 (Musat): from zero through emergence at N = 256 (t_end: the
  last of the three coordinates' threshold crossings, `emergence.gram19_emergence_times`), the
  crossings located as events; gram19 at rtol 1e-7, atol 1e-12 (that function's tolerances);
- induction/disentangled: the full disentangled transformer (D 8, 1792 weights, a Python objective)
  through gram19's emergence at N = 4;
- autoregressive/diag, pe_only, aug (Sander): d 10, H 8, T 20, init 0.1, t 200 at rtol 1e-8.
Every method runs the same options (rtol 1e-6, atol 1e-9 unless stated); a method the objective
lacks the capability for (a dense Hessian, a Hessian operator) is "-".

Run: python bench/auto_table.py [--flows gram19,rank4] [--repeat 3] [--markdown]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from fastattn.experiments.zhang2025 import fig3_setting  # noqa: E402
from fastattn.models import build_model, config_from_dict  # noqa: E402
from fastattn.population import CoordinateEvent, FlowOptions, emergence, integrate, objective_for  # noqa: E402
from fastattn.tasks import AutoRegressive, InductionPairs, LinearRegression, WishartTasks  # noqa: E402
from fastattn.training.flow import log_grid  # noqa: E402

FIXED = ("rk45", "stabilized", "stiff", "stiff_krylov")


@dataclass(frozen=True)
class Flow:
    """One benchmark flow: the registered pair it exercises, its objective, start and options."""

    name: str
    pair: str
    objective: object
    params0: np.ndarray
    options: dict = field(default_factory=dict)


def _model(**config):
    return build_model(config_from_dict(config))


def _pair_flow(name: str, task, model, **options) -> Flow:
    return Flow(name, f"{task.kind}/{model.kind}", objective_for(task, model), model.to_flat(), options)


def _linear(name: str, kind: str, **model) -> Flow:
    task = LinearRegression(8, context=31, spectrum=tuple(1.0 / np.arange(1, 9)), rotate=True,
                            rotation_seed=1)
    return _pair_flow(name, task, _model(kind=kind, dim=8, heads=9, init_seed=1, **model), t_end=2e4)


def _emergence(name: str, kind: str, N: int, dim: int, **options) -> Flow:
    """From zero to emergence (the last threshold crossing of α₃, β₂, γ₃), the crossings as events."""
    task = InductionPairs(dim, context=N, data="orthonormal", query="last", reduction="sum")
    params = "full" if kind == "disentangled" else kind
    obj = objective_for(task, _model(kind="disentangled", dim=dim, params=params))
    if kind == "three_param":
        t_icl = emergence.emergence_times(N)["t_icl"]
        coords: tuple[int, ...] = (2, 1, 0)
    else:
        t_icl = emergence.gram19_emergence_times(N, method="stiff")["t_icl"]
        coords = tuple(emergence.NAMES.index(n) for n in ("gamma3", "beta2", "alpha3"))
    if kind == "disentangled":  # its own time scale; its coordinates are weights, not α₃, β₂, γ₃
        t_end, coords = t_icl / float(obj.paper_time(1.0)), ()
    else:
        t_end = t_icl / emergence.PAPER_TIME_PER_CORE_TIME
    events = tuple(CoordinateEvent(i, 0.5, direction=1) for i in coords)
    return Flow(name, f"induction/{kind}", obj, np.zeros(obj.size()),
                {"t_end": t_end, "events": events, **options})


def _autoregressive(name: str, kind: str) -> Flow:
    task = AutoRegressive(dim=10, context=20, encoding="augmented" if kind == "aug" else "plain")
    model = _model(kind=kind, dim=10, heads=8, init_scale=0.1, **({"context": 20} if kind != "aug" else {}))
    return _pair_flow(name, task, model, t_end=200.0, rtol=1e-8, atol=1e-12)


def _separate_golden(name: str) -> Flow:
    if name == "fig3":
        task, model = fig3_setting(1e-2, seed=0)
        return _pair_flow("fig3", task, model, t_end=2e4)
    if name == "rank4":
        task = LinearRegression(8, context=31, spectrum=tuple(1.0 / np.arange(1, 9)), rotate=True,
                                rotation_seed=1)
        return _pair_flow("rank4", task, _model(kind="separate", dim=8, heads=9, rank=4, init_seed=1),
                          t_end=2e4)
    task = LinearRegression(32, context=64, spectrum=tuple(np.linspace(1, 0.3, 32)), rotate=False)
    return _pair_flow("d32", task, _model(kind="separate", dim=32, heads=32, rank=1, init_seed=3),
                      t_end=3e3)


def _lsoda(D: int) -> Flow:
    spec = np.linspace(1.0, 0.3, D)
    task = LinearRegression(dim=D, context=64, spectrum=tuple(spec / spec.sum()), rotate=False)
    model = _model(kind="separate", dim=D, heads=D, rank=1, init_scale=1e-2, init_seed=3)
    return _pair_flow(f"lsoda-d{D}", task, model, t_end=1e7,
                      record_times=tuple(log_grid(1e7, 400)))


def _wishart() -> Flow:
    task = WishartTasks(16, spectrum=None, context=32, tasks=None)
    model = _model(kind="linear_transformer", dim=16, reduced=True)
    return _pair_flow("wishart-d16", task, model, t_end=1e6)


FLOWS: dict[str, Callable[[], Flow]] = {
    "fig3": lambda: _separate_golden("fig3"),
    "rank4": lambda: _separate_golden("rank4"),
    "d32": lambda: _separate_golden("d32"),
    "lsoda-d8": lambda: _lsoda(8),
    "lsoda-d32": lambda: _lsoda(32),
    "merged": lambda: _linear("merged", "merged"),
    "cubic_mlp": lambda: _linear("cubic_mlp", "cubic_mlp"),
    "wishart-d16": _wishart,
    "three_param": lambda: _emergence("three_param", "three_param", 256, 512, rtol=1e-10, atol=1e-14),
    "gram19": lambda: _emergence("gram19", "gram19", 256, 512, rtol=1e-7, atol=1e-12),
    "disentangled": lambda: _emergence("disentangled", "disentangled", 4, 8, rtol=1e-7, atol=1e-12),
    "ar-diag": lambda: _autoregressive("ar-diag", "diag"),
    "ar-pe_only": lambda: _autoregressive("ar-pe_only", "pe_only"),
    "ar-aug": lambda: _autoregressive("ar-aug", "aug"),
}


@dataclass(frozen=True)
class Cell:
    seconds: float
    n_evals: int
    n_hvp: int
    n_jac: int
    n_steps: int
    n_rejected: int
    status: str
    loss: float


def _capable(flow: Flow, method: str) -> bool:
    if method == "stiff":
        return bool(flow.objective.has_hessian)
    if method == "stiff_krylov":
        return bool(flow.objective.has_hessian_operator)
    return True


def measure(flow: Flow, method: str, repeat: int, max_seconds: float) -> Cell:
    """Best CPU time of `repeat` rounds of `method` on `flow` and the run's counts; a round repeats
    runs shorter than 0.1 s until it has lasted 0.1 s (its time: the mean). A run stopped by
    `max_seconds` of wall time is run once."""
    opts = FlowOptions(method=method, **{"rtol": 1e-6, "atol": 1e-9, "max_seconds": max_seconds,
                                         **flow.options})
    best, r = float("inf"), None
    for _ in range(repeat):
        t0, n = time.process_time(), 0
        while n == 0 or time.process_time() - t0 < 0.1:
            r = integrate(flow.objective, flow.params0, opts)
            n += 1
            if r.status == "max_seconds":
                break
        best = min(best, (time.process_time() - t0) / n)
        if r.status == "max_seconds":
            break
    return Cell(best, r.n_evals, r.n_hvp, r.n_jac, r.n_steps, r.n_rejected, r.status, float(r.loss[-1]))


def table(names: list[str], repeat: int, max_seconds: float) -> list[dict]:
    rows = []
    for name in names:
        flow = FLOWS[name]()
        cells = {m: measure(flow, m, repeat, max_seconds) for m in (*FIXED, "auto") if _capable(flow, m)}
        finished = {m: c for m, c in cells.items() if m != "auto" and c.status != "max_seconds"}
        best = min(finished, key=lambda m: finished[m].seconds)
        rows.append({"flow": flow, "cells": cells, "best": best,
                     "ratio": cells["auto"].seconds / finished[best].seconds})
        _print_row(rows[-1])
    return rows


def _cell_text(c: Cell) -> str:
    hvp = f"+{c.n_hvp}h" if c.n_hvp else ""
    jac = f"+{c.n_jac}H" if c.n_jac else ""
    more = ">" if c.status == "max_seconds" else ""
    return f"{more}{c.seconds:.4g} s ({more}{c.n_evals}{hvp}{jac})"


def _print_row(row: dict) -> None:
    flow, cells = row["flow"], row["cells"]
    text = " | ".join(f"{m} {_cell_text(c)}" for m, c in cells.items())
    a = cells["auto"]
    print(f"{flow.name} [{flow.pair}, P={flow.params0.size}]: {text} || auto/best ({row['best']}) = "
          f"{_ratio_text(row)}; auto {a.n_steps} steps, {a.n_rejected} rejected, {a.status}", flush=True)


def _ratio_text(row: dict) -> str:
    return (">" if row["cells"]["auto"].status == "max_seconds" else "") + f"{row['ratio']:.2f}×"


def markdown(rows: list[dict]) -> str:
    head = ("| flow | objective (P) | " + " | ".join(FIXED) + " | auto | auto / best fixed |\n"
            "|---|---|" + "---|" * (len(FIXED) + 2))
    lines = [head]
    for row in rows:
        flow, cells = row["flow"], row["cells"]
        fixed = [(_cell_text(cells[m]) if m in cells else "-") for m in FIXED]
        fixed = [f"**{t}**" if m == row["best"] else t for m, t in zip(FIXED, fixed, strict=True)]
        lines.append(f"| {flow.name} | {flow.pair} ({flow.params0.size}) | " + " | ".join(fixed)
                     + f" | {_cell_text(cells['auto'])} | **{_ratio_text(row)}** |")
    return "\n".join(lines)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flows", default=",".join(FLOWS))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--max-seconds", type=float, default=10.0,
                    help="wall-time cap of one run (rk45 on stiff flows: minutes); a capped run "
                         "shows '>' and is not a candidate for the best fixed method")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(1)
    rows = table(a.flows.split(","), a.repeat, a.max_seconds)
    if a.markdown:
        print(f"\nMeasured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} "
              f"(`python bench/auto_table.py --markdown`; CPU seconds, one thread, best of {a.repeat}; "
              "in parentheses gradient evaluations + Hessian-vector products (h) + dense Hessians (H)):\n")
        print(markdown(rows))
