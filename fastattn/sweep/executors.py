"""Executors: a local process pool (default) and Ray (optional extra ``fastattn[ray]``).

Both call the same worker function, `fastattn.sweep.worker.run_batch`, on one batch of runs; the
worker writes each run's record and row into the sweep directory (which must therefore be visible
to the workers: always true locally; on a multi-node Ray cluster use a shared filesystem).
"""

from __future__ import annotations

import contextlib
import ipaddress
import multiprocessing as mp
import os
import signal
import socket
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from fastattn.sweep.horizon import Horizon
from fastattn.sweep.runner import RunItem
from fastattn.sweep.worker import clear_inflight, init_worker, is_inflight, lost_rows, run_batch

Collect = Callable[[list[dict[str, Any]]], None]


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def run_local(groups: list[list[RunItem]], out: str, horizon: Horizon, workers: int | None,
              collect: Collect, start_method: str = "spawn") -> None:
    """Run the batches on a process pool of `workers` (0: in this process, no pool)."""
    n = default_workers() if workers is None else int(workers)
    if n <= 0 or not groups:
        for g in groups:
            try:
                rows = run_batch(g, out, horizon)
            finally:
                clear_inflight(g, out)
            collect(rows)
        return
    ctx = mp.get_context(start_method)
    queue, suspects = list(groups), []
    while queue or suspects:
        # A worker that dies breaks the pool. The groups that were running then become suspects
        # and are rerun one at a time in a pool of one: a group that kills that worker too is
        # recorded as failed; every other group is simply run again.
        isolated = not queue
        todo, queue = (suspects, []) if isolated else (queue, [])
        if isolated:
            suspects = []
        with ProcessPoolExecutor(max_workers=1 if isolated else min(n, len(todo)), mp_context=ctx,
                                 initializer=init_worker) as pool:
            pending = {pool.submit(run_batch, g, out, horizon): g for g in todo}
            while pending:
                try:
                    finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                except BaseException:           # Ctrl-C, SIGTERM: stop now, keep finished runs
                    _stop(pool)
                    for g in pending.values():
                        clear_inflight(g, out)
                    raise
                for fut in finished:
                    group = pending.pop(fut)
                    try:
                        rows = fut.result()
                    except BrokenProcessPool as exc:
                        if not is_inflight(group, out):
                            (suspects if isolated else queue).append(group)
                            continue
                        clear_inflight(group, out)
                        if not isolated:
                            suspects.append(group)
                            continue
                        rows = lost_rows(group, out, exc)
                    except Exception as exc:
                        rows = lost_rows(group, out, exc)
                    clear_inflight(group, out)
                    collect(rows)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Stop a pool at once: queued runs cancelled, running ones killed (their runs have no row, so
    a resume runs them again). The executor has no public way to end running calls."""
    for process in list(getattr(pool, "_processes", {}).values()):
        process.kill()
    pool.shutdown(wait=False, cancel_futures=True)


#: Ray's switch between a node address other machines can reach (clusters; the default on Linux)
#: and the loopback address (its default on macOS and Windows): read by Ray at import and by the
#: processes a local cluster starts (they inherit the environment)
RAY_CLUSTER_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


@contextlib.contextmanager
def loopback_only():
    """A local Ray instance started in this context listens on 127.0.0.1 only (its GCS, raylet,
    workers and agents; checked in tests/sweep/test_ray.py). `ray.init(_node_ip_address=
    "127.0.0.1")` alone does not do it: Ray replaces a loopback address by the machine's network
    address unless its cluster switch is off, and its servers then listen on every interface."""
    from ray._private import ray_constants

    saved_env, saved_flag = os.environ.get(RAY_CLUSTER_SWITCH), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[RAY_CLUSTER_SWITCH] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False       # Ray read the variable when it was imported
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved_flag
        if saved_env is None:
            os.environ.pop(RAY_CLUSTER_SWITCH, None)
        else:
            os.environ[RAY_CLUSTER_SWITCH] = saved_env


#: times Ray reruns a batch whose worker process or node died before it is recorded as failed
RAY_RETRIES = 3


def run_ray(groups: list[list[RunItem]], out: str, horizon: Horizon, workers: int | None,
            address: str | None, collect: Collect) -> None:
    """Run the batches as Ray tasks (one CPU each) on the cluster at `address`, or on a local one
    that listens on 127.0.0.1 only (`loopback_only`)."""
    try:
        import ray
    except ImportError:
        raise ImportError("executor='ray' needs Ray: pip install 'fastattn[ray]'") from None
    started = False
    with contextlib.ExitStack() as stack:
        if not ray.is_initialized():
            # No address: an instance of the sweep's own ("local"). Left None, Ray would join
            # whatever cluster was last started on this machine (/tmp/ray/ray_current_cluster or
            # RAY_ADDRESS), which may listen on every interface and has its own CPU count.
            kw: dict[str, Any] = {"address": address} if address else \
                {"address": "local", "num_cpus": workers or default_workers(),
                 "include_dashboard": False}
            if not address or _loopback(address):
                # a cluster on this machine (started here, or by `ray start --node-ip-address
                # 127.0.0.1`): the driver stays on loopback too, or Ray would look for the
                # cluster at the machine's network address
                kw["_node_ip_address"] = "127.0.0.1"
                stack.enter_context(loopback_only())
            # Ray puts the driver's working directory first on the workers' sys.path; run from a
            # fastattn checkout, that would import the uncompiled source tree instead of the
            # installed package. An empty working_dir keeps the workers' imports those of the
            # installed environment.
            kw["runtime_env"] = {"working_dir": tempfile.mkdtemp(prefix="fastattn-ray-")}
            # ray.init installs its own handlers (SIGTERM: exit at once, the sweep's markers left
            # behind): the sweep's (`terminate_as_interrupt`, Ctrl-C) are put back
            handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
            ray.init(ignore_reinit_error=True, log_to_driver=False, **kw)
            if threading.current_thread() is threading.main_thread():
                for signum, handler in handlers.items():
                    if handler is not None:
                        signal.signal(signum, handler)
            started = True
        pending: dict[Any, list[RunItem]] = {}
        try:
            # A batch whose worker or node dies (a node lost, a worker killed) runs again on the
            # rest of the cluster: Ray retries a task only for such system failures, never for an
            # exception of the run (that is a row). Rows are files named by run key, so a rerun
            # rewrites its own row; only the run that returns is collected.
            task = ray.remote(num_cpus=1, max_retries=RAY_RETRIES)(_ray_task)
            pending = {task.remote(run_batch, g, out, horizon): g for g in groups}
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    group = pending.pop(ref)
                    try:
                        rows = ray.get(ref)
                    except Exception as exc:
                        rows = lost_rows(group, out, exc)
                    clear_inflight(group, out)
                    collect(rows)
        except BaseException:       # Ctrl-C, SIGTERM: stop the tasks, keep finished runs
            for ref, group in pending.items():
                ray.cancel(ref, force=True)
                clear_inflight(group, out)
            raise
        finally:
            if started:
                ray.shutdown()


def check_ray_address(address: str) -> None:
    """Refuse a cluster address nothing answers at, before any work: given one, `ray.init` retries
    the connection for minutes, printing Ray's logs, and ignores SIGTERM and Ctrl-C meanwhile.
    "auto" (Ray's own lookup) and addresses without a port are left to Ray."""
    host, _, port = address.split("://")[-1].rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as exc:
        raise ValueError(f"address {address!r}: no Ray cluster answers there "
                         f"({exc.strerror or exc}); start one (`ray start --head`) or give no "
                         "address to start a local one") from None


def _loopback(address: str) -> bool:
    """Whether a Ray address ("127.0.0.1:6379", "localhost:6379") names this machine's loopback."""
    host = address.split("://")[-1].rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _ray_task(fn, group, out, horizon):
    init_worker()
    return fn(group, out, horizon)
