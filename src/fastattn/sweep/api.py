"""`run_sweep`: expand a grid, skip finished runs, batch compatible flow runs, execute, consolidate."""

from __future__ import annotations

import json
import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from fastattn.sweep import store
from fastattn.sweep.executors import run_local, run_ray
from fastattn.sweep.grid import KEY_FORMAT, Grid, canonical, flat_columns, resolve, run_key
from fastattn.sweep.horizon import Horizon
from fastattn.sweep.runner import RunItem, plan_flow
from fastattn.sweep.worker import clear_stale_inflight
from fastattn.training.interrupt import terminate_as_interrupt
from fastattn.training.records import atomic_write, environment, to_jsonable

EXECUTORS = ("local", "ray")
#: option values of a sweep where neither the grid nor `defaults` give one (docs/sweeps.md)
SWEEP_DEFAULTS = {"integrator": "auto", "rtol": 1e-5, "atol": 1e-9}


def plan(grid: Grid, horizon: Horizon | None = None, defaults: Mapping[str, Any] | None = None
         ) -> list[RunItem]:
    """Every run of `grid` as a RunItem: resolved spec (horizon filled in), key, config columns.

    `defaults` are option values used when an axis is absent, on top of SWEEP_DEFAULTS.
    """
    horizon = horizon or Horizon()
    defaults = dict(SWEEP_DEFAULTS) | dict(defaults or {})
    items, seen = [], set()
    for point in grid.points():
        full = dict(defaults or {}) | point
        theory: dict[str, Any] = {}
        try:
            spec = resolve(full)
            spec, theory = plan_flow(spec, horizon)
        except Exception as exc:          # a bad point becomes a failed run, not a failed sweep
            spec = resolve(full, strict=False)
            spec["train"]["_plan_error"] = f"{type(exc).__name__}: {exc}"
        key = run_key(spec, horizon.run_settings())
        if key in seen:
            continue
        seen.add(key)
        columns = flat_columns(full, spec)
        items.append(RunItem(key, point, spec, columns, theory=theory))
    for it in items:
        tr = it.spec["train"]
        if tr.get("method", "flow") == "flow" and "_plan_error" not in tr:
            m = it.spec["model"]
            it.batch_key = canonical({"family": m["kind"], "dim": it.spec["task"]["dim"],
                                      "heads": m["heads"], "rank": m.get("rank", 1),
                                      "train": {k: v for k, v in tr.items() if k != "eval_seed"}})
    return items


def batches(items: list[RunItem], batch: int) -> list[list[RunItem]]:
    """Groups of at most `batch` compatible runs (same family, dims, integrator, horizon, target)."""
    groups: OrderedDict[str, list[RunItem]] = OrderedDict()
    for it in items:
        groups.setdefault(it.batch_key or it.key, []).append(it)
    out = []
    for g in groups.values():
        for i in range(0, len(g), max(1, batch)):
            out.append(g[i:i + max(1, batch)])
    # largest runs first: better packing on the workers, honest ETA sooner
    out.sort(key=lambda b: -_size(b[0]))
    return out


def _size(it: RunItem) -> float:
    try:
        return float(it.spec["task"]["dim"]) * float(it.spec["model"]["heads"])
    except (TypeError, ValueError):
        return 0.0


def run_sweep(
    grid: Grid | Mapping[str, Any],
    out: str | Path,
    *,
    seeds: int | None = None,
    executor: str = "local",
    workers: int | None = None,
    batch: int = 1,
    address: str | None = None,
    horizon: Horizon | None = None,
    defaults: Mapping[str, Any] | None = None,
    retry_failed: bool = False,
    progress: bool | None = None,
    consolidate_every: float = 5.0,
    max_runs: int | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
):
    """Run every point of `grid` not yet finished in `out`; returns the results table (DataFrame).

    Args:
        grid: a `Grid`, or a mapping option name → value or list of values (an axis).
        seeds: repeat each point for seeds 0..K-1 (see `Grid`).
        executor: "local" (process pool of `workers`, default: CPU count; 0 runs in this process)
            or "ray" (connect to `address`, or start a local Ray instance with `workers` CPUs).
        batch: integrate up to this many compatible flow runs in one C++ call (K models).
        horizon: the flow horizon when --time is not given (`Horizon`).
        defaults: option values used where the grid has no axis (the CLI passes integrator="auto").
        retry_failed: run again the runs recorded as failed.
        max_runs: stop after this many runs have finished (for tests and partial sweeps).
    """
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {EXECUTORS}; got {executor!r}")
    if not isinstance(grid, Grid):
        grid = Grid(dict(grid), seeds)
    elif seeds is not None:
        grid = Grid(grid.axes, seeds)
    horizon = horizon or Horizon()
    defaults = dict(SWEEP_DEFAULTS) | dict(defaults or {})
    out = Path(out)
    store.check_key_format(out, KEY_FORMAT)
    items = plan(grid, horizon, defaults)
    done = store.finished_keys(out, include_failed=not retry_failed)
    todo = [it for it in items if it.key not in done]
    if max_runs is not None:
        todo = todo[:max_runs]
    doc = {"key_format": KEY_FORMAT, "grid": grid.to_dict(), "defaults": defaults,
           "horizon": horizon.__dict__,
           "executor": executor, "workers": workers, "batch": batch, "n_runs": len(items),
           "keys": [it.key for it in items], "meta": environment()}
    atomic_write(out / store.SWEEP,
                 lambda fh: fh.write(json.dumps(to_jsonable(doc), indent=1, default=str)), "w")
    groups = batches(todo, batch)
    bar = _progress(len(items), len(items) - len(todo), progress)
    state = {"failed": 0, "last": time.monotonic()}

    def collect(rows: list[dict[str, Any]]) -> None:
        for row in rows:
            state["failed"] += row.get("status") == "error"
            if on_row:
                on_row(row)
        bar.update(len(rows))
        bar.set_postfix(failed=state["failed"], remaining=bar.total - bar.n, refresh=False)
        if time.monotonic() - state["last"] > consolidate_every:
            store.write_table(out)
            state["last"] = time.monotonic()

    clear_stale_inflight(out)
    try:
        with terminate_as_interrupt():
            if executor == "ray":
                run_ray(groups, str(out), horizon, workers, address, collect)
            else:
                run_local(groups, str(out), horizon, workers, collect)
    finally:
        bar.close()
        if any((out / store.RUNS).glob("*.json")):
            store.write_table(out)
    table = store.read_table(out)
    keys = {it.key for it in items}
    return table[table["key"].isin(keys)].reset_index(drop=True)


def _progress(total: int, initial: int, show: bool | None):
    disable = not (sys.stderr.isatty() if show is None else show)
    return tqdm(total=total, initial=initial, unit="run", desc="sweep", disable=disable,
                smoothing=0.05)
