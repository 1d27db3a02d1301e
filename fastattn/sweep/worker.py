"""What runs inside a worker (a local process or a Ray task): one batch of runs, each ending as a
result row in the sweep directory — the run's row, or an error row when it fails — and the
in-flight markers that tell the pool which batch a dead worker was running.

Every function here takes plain data (RunItems, a directory path, a Horizon), so a run gives the
same row wherever it runs.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import traceback
from pathlib import Path
from typing import Any

import torch

from fastattn.population.stops import Stop
from fastattn.sweep import store
from fastattn.sweep.horizon import Horizon
from fastattn.sweep.runner import (
    RunItem,
    batched_sampled,
    batched_trajectories,
    build,
    flow_trajectories,
    result_row,
)
from fastattn.training import train

#: directory of in-flight markers, one per running batch (named after its first run's key)


def init_worker() -> None:
    """Start-up of a worker process: one thread (the C++ core is single-threaded; keep torch and
    BLAS from oversubscribing the cores that the other workers use); Ctrl-C ignored (the terminal
    sends it to the whole process group: the sweep's main process stops the workers itself); and
    exit when the main process is gone (killed with -9, it cannot stop them)."""
    torch.set_num_threads(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True,
                     name="fastattn-exit-with-parent").start()


def _exit_with_parent(parent: int, poll: float = 0.5) -> None:
    while os.getppid() == parent:
        time.sleep(poll)
    os._exit(1)


def run_batch(items: list[RunItem], out_dir: str, horizon: Horizon) -> list[dict[str, Any]]:
    """The worker entry point: mark the batch in flight and execute it; returns every row (also
    saved in `out_dir`)."""
    mark_inflight(items, out_dir)
    return execute(items, out_dir, horizon)


def execute(items: list[RunItem], out_dir: str, horizon: Horizon) -> list[dict[str, Any]]:
    """Run `items` (one batch: several only when they are compatible flow runs or sampled runs of a
    batched trainer), save each run's record and result row in `out_dir`, and return the rows.
    Never raises for a failed run."""
    rows: list[dict[str, Any]] = []
    sampled = batched_sampled(items[0].spec)
    if len(items) > 1 or sampled:
        start = time.perf_counter()
        try:
            many = batched_trajectories if sampled else flow_trajectories
            results, p0, tasks = many(items, horizon)
        except Exception as exc:             # attribute the failure: run them one by one
            if len(items) == 1:
                row = error_row(items[0], exc, time.perf_counter() - start)
                store.save_row(Path(out_dir), row)
                return [row]
            return [r for it in items for r in execute([it], out_dir, horizon)]
        for k, (item, (traj, model, extra)) in enumerate(zip(items, results, strict=True)):
            try:
                rows.append(_finish(item, traj, p0[k], tasks[k], extra, out_dir, horizon, model))
            except Exception as exc:
                row = error_row(item, exc, traj.wall_time)
                store.save_row(Path(out_dir), row)
                rows.append(row)
        return rows
    item = items[0]
    start = time.perf_counter()
    try:
        if item.spec["train"].get("method", "flow") == "flow":
            results, p0, tasks = flow_trajectories([item], horizon)
            traj, model, extra = results[0]
            rows.append(_finish(item, traj, p0[0], tasks[0], extra, out_dir, horizon, model))
        else:
            task, model, cfg = build(item)
            p0 = model.to_flat()
            traj = train(model, task, cfg)
            rows.append(_finish(item, traj, p0, task, {"runs_in_batch": 1}, out_dir, horizon, model))
    except Exception as exc:
        row = error_row(item, exc, time.perf_counter() - start)
        store.save_row(Path(out_dir), row)
        rows.append(row)
    return rows


def _finish(item, traj, p0, task, extra, out_dir, horizon, model=None) -> dict[str, Any]:
    if traj.status == Stop.INTERRUPTED:        # not a result: no row, so a resume runs it again
        raise KeyboardInterrupt(f"run {item.key} interrupted")
    out = Path(out_dir)
    record = traj.save(out / store.RECORDS / item.key)
    row = result_row(item, traj, p0, task, extra, horizon, model)
    row["record"] = str(record.relative_to(out))
    store.save_row(out, row)
    return row


def error_row(item: RunItem, exc: BaseException, wall: float) -> dict[str, Any]:
    """The row of a failed run: its config columns, the error and the planned theory columns.
    An OSError (disk full, permission denied) is "transient": the machine failed, not the run, so
    a resume runs it again (`store.finished_keys`)."""
    error = f"{type(exc).__name__}: {exc}"
    trace = "".join(traceback.format_exception(exc))[-4000:]
    return {"key": item.key, **item.columns, "status": "error", "error": error,
            "transient": isinstance(exc, OSError), "traceback": trace, "wall_time": wall,
            **item.theory}


def mark_inflight(group: list[RunItem], out: str) -> None:
    """Mark the group as running, with the worker's PID (removed when its rows are collected).
    A marker left by a dead worker tells the pool that the group had started."""
    d = Path(out) / store.INFLIGHT
    d.mkdir(parents=True, exist_ok=True)
    # O_NOFOLLOW: a symlink planted at the marker's name is refused, never written through
    fd = os.open(d / group[0].key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as fh:
        fh.write(str(os.getpid()))


def is_inflight(group: list[RunItem], out: str) -> bool:
    return (Path(out) / store.INFLIGHT / group[0].key).exists()


def clear_inflight(group: list[RunItem], out: str) -> None:
    (Path(out) / store.INFLIGHT / group[0].key).unlink(missing_ok=True)


def process_alive(pid: int) -> bool:
    """Whether process `pid` runs. A zombie (exited, not yet reaped: what a killed sweep's workers
    stay in a container without an init process) does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:                 # someone else's process
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):           # no procfs: os.kill's answer
        return True


def clear_stale_inflight(out: str | Path) -> None:
    """Remove the markers of workers that no longer run (left by a sweep that was killed)."""
    for marker in (Path(out) / store.INFLIGHT).glob("*"):
        try:
            pid = int(marker.read_text())
        except (OSError, ValueError):
            pid = 0
        if pid <= 0 or not process_alive(pid):
            marker.unlink(missing_ok=True)


def lost_rows(group: list[RunItem], out: str, exc: BaseException) -> list[dict[str, Any]]:
    """Rows of runs whose worker died: those that finished before it died, the others recorded as
    failed (a resume with --retry-failed reruns them)."""
    rows = []
    for it in group:
        path = Path(out) / store.RUNS / f"{it.key}.json"
        if path.exists():
            rows.append(json.loads(path.read_text()))
            continue
        row = error_row(it, RuntimeError(f"worker died: {exc!r}"), 0.0)
        store.save_row(Path(out), row)
        rows.append(row)
    return rows
