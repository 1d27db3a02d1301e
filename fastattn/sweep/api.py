"""`run_sweep`: expand a grid, skip finished runs, batch compatible flow runs, execute, consolidate."""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from fastattn import _validate as check
from fastattn.configs.options import INNER_LIST, METHOD_FIELDS, check_method_fields
from fastattn.sweep import store
from fastattn.sweep.executors import check_ray_address, run_local, run_ray
from fastattn.sweep.grid import (
    KEY_FORMAT,
    SWEEP_DEFAULTS,
    Grid,
    flat_columns,
    given,
    option_table,
    resolve,
    run_key,
)
from fastattn.sweep.horizon import Horizon
from fastattn.sweep.options import family_options
from fastattn.sweep.runner import RunItem, batch_key, check_run, plan_flow
from fastattn.sweep.worker import clear_stale_inflight
from fastattn.training.interrupt import terminate_as_interrupt
from fastattn.training.progress import interactive
from fastattn.training.records import environment, to_jsonable

EXECUTORS = ("local", "ray")


class GridError(ValueError):
    """A grid point that cannot run, found before any run starts or any folder is written: the
    message names the point's options (as flags) and the problem, on one line."""


def point_flags(point: Mapping[str, Any]) -> str:
    """A grid point in the command line's words: {"heads": -1, "dim": 4} → "--heads -1 --dim 4"."""
    def text(v: Any) -> str:
        return "/".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)

    return " ".join(f"--{k.replace('_', '-')} {text(v)}" if k != "seed" else f"seed {v}"
                    for k, v in point.items())


def _inner_list_hint(grid: Grid, error: str) -> str:
    """When the error is about an option whose value is itself a list (`INNER_LIST`) and that
    option is swept over single values, the likely mistake: train's `--spectrum 0.4,0.3` is,
    in a sweep, two runs of one eigenvalue each. Says how to write the one list."""
    for name in INNER_LIST:
        values = grid.axes.get(name, [])
        if len(values) > 1 and name in error.partition(": ")[2] \
                and not any(isinstance(v, (list, tuple)) for v in values):
            flag = f"--{name.replace('_', '-')}"
            return (f"; in a sweep a comma separates swept values, so {flag} "
                    f"{','.join(map(str, values))} is {len(values)} runs of one value each: write "
                    f"one list with '/' ({flag} {'/'.join(map(str, values))})")
    return ""


def check_axes(grid: Grid, families: list[tuple[str, str]], methods: list[str] = ()) -> None:
    """An axis of an option that applies to none of the grid's (task, model) families, or (a
    trainer option) to none of its `methods`, is an error, as in `train` (a typo'd family would
    otherwise sweep nothing; --lr of a flow sweep would be ignored)."""
    options = option_table()
    unused = [options[n].field for n in grid.axes if options[n].target == "train"
              and options[n].field in METHOD_FIELDS
              and not set(METHOD_FIELDS[options[n].field]) & set(methods)]
    if unused:
        try:
            check_method_fields(methods[0], unused, f" (this grid's: {', '.join(methods)})"
                                if len(methods) > 1 else "")
        except ValueError as exc:
            raise GridError(str(exc)) from None
    for name in grid.axes:
        opt = options[name]
        if opt.families and not any(name in family_options(*f) for f in families):
            kinds = sorted({f[0] if opt.target == "task" else f[1] for f in families})
            raise GridError(f"{opt.flag} applies to {opt.target} {', '.join(opt.families)}; not to "
                            f"--{opt.target} {','.join(kinds)}")


def plan(grid: Grid, horizon: Horizon | None = None, defaults: Mapping[str, Any] | None = None
         ) -> list[RunItem]:
    """Every run of `grid` as a RunItem: what its point gives, its resolved spec (horizon filled
    in), key, config columns.

    Every point is resolved as `train` resolves its options (`grid.resolve`: the cards' defaults,
    the pair's preset, then the point) and built and checked first (its task, model and trainer
    config, the flow horizon): a point that cannot run raises `GridError` naming its options, so a
    bad grid fails before any run or folder exists. `defaults` are option values used when an
    axis is absent (given, as the axes are).
    """
    horizon = horizon or Horizon()
    defaults = dict(defaults or {})
    items, seen, bad = [], set(), []
    for point in grid.points():
        full = defaults | point
        try:
            spec = resolve(full)
            check_run(spec, trainer=False)
            spec, theory = plan_flow(spec, horizon, given(full)[2]["train"])
            check_run(spec)
        except Exception as exc:
            bad.append(f"{point_flags(point)}: {exc}" if point else str(exc))
            continue
        key = run_key(spec, horizon.run_settings())
        if key in seen:
            continue
        seen.add(key)
        columns = flat_columns(full, spec,
                               family_options(spec["task"]["kind"], spec["model"]["kind"]))
        items.append(RunItem(key, point, spec, columns, theory=theory))
    if bad:
        more = f" (and {len(bad) - 1} more of the {len(grid)} runs)" if len(bad) > 1 else ""
        raise GridError(bad[0] + more + _inner_list_hint(grid, bad[0]))
    check_axes(grid, sorted({(it.spec["task"]["kind"], it.spec["model"]["kind"]) for it in items}),
               sorted({it.spec["train"].get("method", "flow") for it in items}))
    for it in items:
        it.batch_key = batch_key(it)
    return items


#: at most this many sampled runs share one batched call when --batch is not given
SAMPLED_BATCH = 64


def batches(items: list[RunItem], batch: int | None) -> list[list[RunItem]]:
    """Groups of compatible runs: at most `batch` flow runs (None: 1) or sampled runs of a batched
    trainer (None: SAMPLED_BATCH) per group."""
    groups: OrderedDict[str, list[RunItem]] = OrderedDict()
    for it in items:
        groups.setdefault(it.batch_key or it.key, []).append(it)
    out = []
    for g in groups.values():
        flow = g[0].spec["train"].get("method", "flow") == "flow"
        size = max(1, batch if batch is not None else (1 if flow else SAMPLED_BATCH))
        for i in range(0, len(g), size):
            out.append(g[i:i + size])
    # largest runs first: better packing on the workers, honest ETA sooner
    out.sort(key=lambda b: -_size(b[0]) * len(b))
    return out


def _size(it: RunItem) -> float:
    try:
        return float(it.spec["task"].get("dim", 1)) * float(it.spec["model"].get("heads", 1))
    except (TypeError, ValueError):
        return 0.0


def run_sweep(
    grid: Grid | Mapping[str, Any],
    out: str | Path,
    *,
    seeds: int | list[int] | str | None = None,
    executor: str = "local",
    workers: int | None = None,
    batch: int | None = None,
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
        seeds: repeat each point for each seed: a list, an int K (0..K-1), or text "0..4" (`Grid`).
        executor: "local" (process pool of `workers`, default: CPU count; 0 runs in this process)
            or "ray" (connect to `address`, or start a local Ray instance with `workers` CPUs).
        batch: integrate up to this many compatible flow runs in one C++ call (K models; default
            1), or train up to this many sampled runs of a batched trainer in one call (default
            SAMPLED_BATCH; `runner.batched_sampled`).
        horizon: the flow horizon when --t-end is not given (`Horizon`).
        defaults: option values used where the grid has no axis (given, as the axes are; the
            sweep's own trainer defaults are `grid.SWEEP_DEFAULTS`).
        retry_failed: run again the runs recorded as failed.
        max_runs: stop after this many runs have finished (for tests and partial sweeps).
    """
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {EXECUTORS}; got {executor!r}")
    if workers is not None:
        check.nonnegative_int("workers", workers)
    if address is not None:
        if executor != "ray":
            raise ValueError(f"address {address!r} names a Ray cluster, but executor is "
                             f"{executor!r}: give executor 'ray' too, or drop the address")
        check_ray_address(address)
    if not isinstance(grid, Grid):
        grid = Grid(dict(grid), seeds)
    elif seeds is not None:
        grid = Grid(grid.axes, seeds)
    horizon = horizon or Horizon()
    defaults = dict(defaults or {})
    # absolute before any executor sees it: a Ray worker runs in its own working directory
    out = Path(out).expanduser().absolute()
    items = plan(grid, horizon, defaults)
    store.check_key_format(out, KEY_FORMAT)
    store.check_writable(out)
    done = store.finished_keys(out, include_failed=not retry_failed)
    todo = [it for it in items if it.key not in done]
    if max_runs is not None:
        todo = todo[:max_runs]
    doc = {"key_format": KEY_FORMAT, "grid": grid.to_dict(), "defaults": defaults,
           "sweep_defaults": SWEEP_DEFAULTS,
           "horizon": horizon.__dict__,
           "executor": executor, "workers": workers, "batch": batch, "n_runs": len(items),
           "keys": [it.key for it in items], "meta": environment()}
    store.sweep_output(out).write(
        out / store.SWEEP, lambda fh: fh.write(json.dumps(to_jsonable(doc), indent=1, default=str)),
        "w")
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
    table = table[table["key"].isin(keys)].reset_index(drop=True)
    table.attrs["n_grid"] = len(items)
    return table


def _progress(total: int, initial: int, show: bool | None):
    disable = not (interactive() if show is None else show)
    return tqdm(total=total, initial=initial, unit="run", desc="sweep", disable=disable,
                smoothing=0.05)
