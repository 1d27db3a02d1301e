"""`fastattn reproduce --all`: many figures into one folder, resumable, failures collected.

The folder holds one `NAME.json` per finished figure (written last and atomically by
`registry.reproduce`, so its presence means the figure finished) and a manifest `reproduce.json`
that fixes the folder's mode (quick or full): a second run skips every figure whose JSON exists
with the same mode and options, and a figure in flight resumes from its finished runs (the run
records under `NAME/` whose config is the run's, `registry.run_specs`), so Ctrl-C loses only the
runs in flight. A run that several figures list is trained once: the folder's store `runs/`
(`experiments/store.py`) shares it, also between parallel workers. Mixing quick and full in one
folder is refused unless `overwrite` (which recomputes everything), and so is mixing the engines
of the He step (`reproduce --device cuda` and the C++ core): the two differ in rounding, so a
folder's claims come from one engine; the manifest and every figure's JSON say which (`device`).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastattn.experiments.store import RunStore
from fastattn.outputs import Output, OutputError, probe
from fastattn.training.records import to_jsonable

MANIFEST = "reproduce.json"


@dataclass
class Outcome:
    """One figure of a batch: `status` is "done" (computed now), "cached" (finished earlier) or
    "failed" (`error` holds the one-line reason, `traceback` the whole)."""

    name: str
    status: str
    wall_time: float = 0.0
    error: str = ""
    traceback: str = ""


@dataclass
class BatchResult:
    outcomes: list[Outcome] = field(default_factory=list)
    wall_time: float = 0.0

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == "failed"]


def select(papers: Sequence[str] = (), names: Sequence[str] = ()) -> list[str]:
    """Figure names in reading order (`registry.figure_order`: papers in the manifests' order,
    figures numerically within each): those of `papers` (all papers when empty) plus `names`."""
    from fastattn import papers as manifests
    from fastattn.experiments import registry

    unknown = [p for p in papers if p not in manifests.names()]
    if unknown:
        raise ValueError(f"--paper {unknown[0]!r} is not a paper; choose from "
                         f"{', '.join(manifests.names())}")
    for name in names:
        registry.get(name)
    return sorted((n for n in registry.FIGURES
                   if (not papers and not names) or n.split("-")[0] in papers or n in names),
                  key=registry.figure_order)


def prepare(out: Path, quick: bool, overwrite: bool, device: str | None = None) -> dict[str, Any]:
    """Check `out` before any work: a writable folder of `reproduce` (not a sweep's or a train
    run's) whose earlier figures (if any) have the same mode and He step `device` (a device type,
    `registry.device_type`; None: the C++ core). Returns the manifest (written to `out`).
    `overwrite` empties the folder's run store of the records fastattn wrote there."""
    _writable(out)
    output = Output(out, "reproduce")
    output.check_kind()
    mode = "quick" if quick else "full"
    manifest_path = output.path(MANIFEST)
    old: dict[str, Any] = {}
    if manifest_path.exists():
        try:
            old = json.loads(manifest_path.read_text())
        except (OSError, ValueError):
            old = {}
    if not overwrite:
        if old and old.get("mode") != mode:
            raise OutputError(f"--out {out} holds a {old.get('mode', 'unknown')} run; a {mode} run "
                              "would mix the two: give another --out, or --overwrite to replace it")
        if old and old.get("device") != device:
            raise OutputError(f"--out {out} holds a run whose He step ran on "
                              f"{_engine(old.get('device'))}; one on {_engine(device)} would mix "
                              "the two: give another --out, or --overwrite to replace it")
        _check_mode(out, mode, device)
    output.check_writable(manifest_path)
    manifest = {"mode": mode, "quick": quick, "device": device, "figures": {}}
    if not overwrite:
        manifest["figures"] = old.get("figures", {})
    else:       # the batch trains every run again, once: figures share only what it trains
        output.remove_tree(RunStore.of(out).root)
    output.write(manifest_path, lambda fh: fh.write(json.dumps(manifest, indent=2)), "w")
    return manifest


def _check_mode(out: Path, mode: str, device: str | None) -> None:
    """Refuse a `mode` run on `device` into `out` if a figure there is of the other mode, or ran
    the He step elsewhere (a figure written before `--device` existed ran it on the C++ core)."""
    figures = [d for p in out.glob("*.json") if p.name != MANIFEST
               and (d := _figure_of(p)) is not None]
    modes = {"quick" if d["quick"] else "full" for d in figures}
    if modes - {mode}:
        raise OutputError(f"--out {out} holds {', '.join(sorted(modes))} figures; a {mode} run "
                          "would mix them: give another --out, or --overwrite")
    devices = {d.get("device") for d in figures} - {device}
    if devices:
        raise OutputError(f"--out {out} holds figures whose He step ran on "
                          f"{_engine(devices.pop())}; one on {_engine(device)} would mix them: "
                          "give another --out, or --overwrite")


def _engine(device: str | None) -> str:
    """Where a figure's He step ran, in a sentence's words."""
    return "the C++ core" if device is None else f"--device {device}"


def check_figure_output(out: Path, name: str, quick: bool, overwrite: bool,
                        device: str | None = None) -> None:
    """Before one figure's work: `out` is a writable `reproduce` folder whose figures and batch
    (`reproduce.json`) are of this mode and He step `device` (as `prepare`), and a finished
    `NAME.json` there is replaced only with `overwrite`."""
    _writable(out)
    Output(out, "reproduce").check_kind()
    now = "quick" if quick else "full"
    mode = _mode_of(out / f"{name}.json")
    if mode is not None and not overwrite:
        what = f"a {mode} run" + (f"; a {now} run would mix the two" if mode != now else "")
        raise OutputError(f"{out / (name + '.json')} exists ({what}): give another --out, or "
                          "--overwrite to replace it")
    if not overwrite:
        try:
            manifest = json.loads((out / MANIFEST).read_text())
            batch, engine = manifest.get("mode"), manifest.get("device")
        except (OSError, ValueError, AttributeError):
            batch, engine = None, device
        if batch not in (None, now):
            raise OutputError(f"--out {out} holds a {batch} run; a {now} figure would mix the "
                              "two: give another --out, or --overwrite to replace it")
        if engine != device:
            raise OutputError(f"--out {out} holds a run whose He step ran on {_engine(engine)}; "
                              f"a figure on {_engine(device)} would mix the two: give another "
                              "--out, or --overwrite to replace it")
        _check_mode(out, now, device)


def _writable(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise OutputError(f"--out {out} is a file; give a directory")
    try:
        probe(out)
    except OSError as exc:
        raise OutputError(f"--out {out} is not writable ({exc.strerror or exc})") from None


def _figure_of(path: Path) -> dict[str, Any] | None:
    """The figure JSON at `path`, or None if it is not one (the manifest, a foreign file)."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or "quick" not in doc or "summary" not in doc:
        return None
    return doc


def _mode_of(path: Path) -> str | None:
    doc = _figure_of(path)
    return None if doc is None else "quick" if doc["quick"] else "full"


def finished(out: Path, name: str, quick: bool) -> bool:
    """Whether `out/NAME` is a finished figure of this mode (default options): its JSON, PNG and
    run records all present, each as fastattn wrote it (size and hash in the folder's manifest)."""
    path = out / f"{name}.json"
    if not path.exists():
        return False
    try:
        doc = json.loads(path.read_text())
        records = [out / run["record"] for run in doc.get("runs", {}).values()]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return False
    if doc.get("quick") != quick or doc.get("options"):
        return False
    files = [path, out / f"{name}.png", *records, *(r.with_suffix(".npz") for r in records)]
    return Output(out, "reproduce").complete(files)


def _run_one(name: str, out: str, quick: bool, workers: int, resume: bool = True,
             device: str | None = None) -> tuple[str, float, str, str]:
    """Worker: reproduce one figure (`resume`: from the run records of an unfinished attempt;
    `device`: where its batched He runs step), one of `workers` processes sharing the machine
    (1: in the calling process); returns (name, wall time, error line, traceback)."""
    start = time.perf_counter()
    try:
        if workers > 1:
            import torch

            # torch's threads and the fused step's (`threads.machine_share`) take this worker's
            # share of the cores, so the workers do not oversubscribe them
            os.environ["FASTATTN_WORKERS"] = str(workers)
            torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))
        from fastattn.experiments.registry import reproduce

        # an unfinished attempt's run records are reused where they are the same runs
        # (`registry.run_specs`); --overwrite trains every run again. Runs shared with other
        # figures come from the folder's store (`experiments/store.py`), which `prepare` empties
        # for --overwrite
        reproduce(name, out, quick=quick, resume=resume, share=True, device=device)
        return name, time.perf_counter() - start, "", ""
    except Exception as exc:
        line = " ".join(f"{type(exc).__name__}: {exc}".split())
        return name, time.perf_counter() - start, line, traceback.format_exc()


def run_all(names: Sequence[str], out: str | Path, quick: bool, *, workers: int = 1,
            overwrite: bool = False, report: Callable[[int, int, Outcome], None] | None = None,
            device: str | None = None) -> BatchResult:
    """Reproduce `names` into `out`, skipping finished ones (unless `overwrite`), `workers`
    processes at a time (1: in this process). `device` (e.g. "cuda"): every figure's batched He
    runs step on that GPU (`registry.run_specs`); with `workers` > 1 each worker process drives
    it with its own CUDA context (the GPU runs their steps in turn). `report(k, n, outcome)` is
    called as each figure ends. Failures are collected, never raised; the result is also written to
    `out/reproduce.json` (manifest + per-figure outcomes and wall times). Ctrl-C (or SIGTERM
    turned into KeyboardInterrupt) stops the batch: the worker processes are ended, the figures
    in flight are marked "interrupted" in the manifest, and the KeyboardInterrupt propagates."""
    from fastattn.experiments.registry import device_type

    out = Path(out)
    manifest = prepare(out, quick, overwrite, device_type(device))
    start = time.perf_counter()
    result = BatchResult()
    todo = []
    n = len(names)
    for name in names:
        if not overwrite and finished(out, name, quick):
            result.outcomes.append(Outcome(name, "cached",
                                           json.loads((out / f"{name}.json").read_text())
                                           .get("wall_time", 0.0)))
            if report:
                report(len(result.outcomes), n, result.outcomes[-1])
        else:
            todo.append(name)

    running: set[str] = set()          # figures in flight

    def record(name: str, wall: float, error: str, tb: str) -> None:
        running.discard(name)
        outcome = Outcome(name, "failed" if error else "done", wall, error, tb)
        result.outcomes.append(outcome)
        if report:
            report(len(result.outcomes), n, outcome)

    try:
        if workers <= 1:
            for name in todo:
                running.add(name)
                record(*_run_one(name, str(out), quick, 1, not overwrite, device))
        else:
            # spawn: a fork of a process whose OpenMP/torch threads ran can deadlock; the workers
            # ignore Ctrl-C (the terminal sends it to the whole group): this process ends them
            pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                       initializer=_ignore_ctrl_c)
            try:
                names_of = {pool.submit(_run_one, name, str(out), quick, workers, not overwrite,
                                        device): name for name in todo}
                pending = set(names_of)
                while pending:
                    running.update(names_of[f] for f in pending if f.running())
                    done, pending = wait(pending, return_when=FIRST_COMPLETED, timeout=1.0)
                    for future in done:
                        try:
                            record(*future.result())
                        except Exception as exc:    # the worker died (e.g. killed for memory)
                            record(names_of[future], 0.0,
                                   f"worker process failed: {type(exc).__name__}: {exc}", "")
            except BaseException:   # Ctrl-C, SIGTERM: end the workers, keep what finished
                from fastattn.sweep.executors import _stop

                running.update(names_of[f] for f in pending if f.running())
                _stop(pool)
                raise
            pool.shutdown()
    except BaseException:
        for name in running:
            manifest["figures"][name] = {"status": "interrupted", "wall_time": 0.0, "error": ""}
        raise
    finally:
        result.wall_time = time.perf_counter() - start
        order = {name: i for i, name in enumerate(names)}
        result.outcomes.sort(key=lambda o: order[o.name])
        manifest["figures"].update({o.name: {"status": o.status, "wall_time": o.wall_time,
                                             "error": o.error} for o in result.outcomes})
        manifest["wall_time"] = result.wall_time
        Output(out, "reproduce").write(
            out / MANIFEST, lambda fh: fh.write(json.dumps(to_jsonable(manifest), indent=2)), "w")
    return result


def _ignore_ctrl_c() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def progress_printer(stream: Any = None) -> Callable[[int, int, Outcome], None]:
    """A `report` callback printing "figure k of n: NAME done in 12.3 s [1 min 5 s elapsed]"
    lines (the elapsed time of the whole batch from this call)."""
    stream = stream or sys.stderr
    start = time.perf_counter()

    def report(k: int, n: int, outcome: Outcome) -> None:
        what = {"done": f"done in {outcome.wall_time:.1f} s",
                "cached": "already finished (cached)",
                "failed": f"FAILED after {outcome.wall_time:.1f} s: {outcome.error}"}[outcome.status]
        minutes, seconds = divmod(int(time.perf_counter() - start), 60)
        elapsed = f"{minutes} min {seconds} s" if minutes else f"{seconds} s"
        print(f"figure {k} of {n}: {outcome.name} {what} [{elapsed} elapsed]", file=stream,
              flush=True)

    return report
