"""Finished runs shared by the figures of one output folder, so no run is trained twice.

Figures of one paper may list the same run (Mainali's Figs. 5 and 6 show one set of trainings
two ways). `reproduce` keeps each figure's run records under `DIR/NAME/`; this store, `DIR/runs/`,
holds one hard link (or copy) of every finished record keyed by the run's identity (task, model,
resolved train config, init, objective: `registry._identity`), so a figure finds a run another
figure trained.

Parallel workers (`reproduce --all --workers N`) coordinate through one lock file per run:
a worker trains a run only while it holds that run's lock, and publishes the record before
letting go. A run locked by another worker is set aside and collected at the end, once its lock
is free; if that worker died, the run is trained then. Locks are `fcntl.flock` locks, which the
operating system releases when a process ends, so a killed worker leaves no stale lock (POSIX).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fastattn.outputs import Output, signals_held
from fastattn.training.records import atomic_write

#: the store's folder inside a `reproduce` output folder
FOLDER = "runs"


def key(identity: dict[str, Any]) -> str:
    """The store's name for a run: the SHA-256 of its identity as canonical JSON."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def link_record(src: Path, dst: Path, output: Output | None = None) -> None:
    """Give the record `src` (no suffix) a second name `dst`: its arrays hard-linked where the
    file system allows (copied otherwise), its JSON written anew to name them; each file
    replaced atomically, the JSON last (a record whose JSON exists is whole). Records are
    rewritten by replacement, never in place, so the two names cannot alter each other. With
    `output` (the folder's manifest), only over files fastattn wrote, and both entered there."""
    npz, js = dst.with_name(dst.name + ".npz"), dst.with_name(dst.name + ".json")
    if output is not None:
        output.check_writable(npz)
        output.check_writable(js)
    dst.parent.mkdir(parents=True, exist_ok=True)
    # a name of this call's own (never a file someone else left under a fixed name)
    tmp = npz.with_name(f".{npz.name}.{uuid.uuid4().hex}.link")
    with signals_held():                   # the files and their manifest entries together
        try:
            try:
                os.link(src.with_name(src.name + ".npz"), tmp)
            except OSError:
                shutil.copy2(src.with_name(src.name + ".npz"), tmp)
            os.replace(tmp, npz)
        finally:
            tmp.unlink(missing_ok=True)
        meta = {**json.loads(src.with_name(src.name + ".json").read_text()), "arrays": npz.name}
        atomic_write(js, lambda fh: fh.write(json.dumps(meta, indent=2, allow_nan=False)), "w")
        if output is not None:
            output.record(npz, js)


class RunStore:
    """The shared records of one output folder (`root` = `DIR/runs`)."""

    def __init__(self, root: str | Path, output: Output | None = None) -> None:
        self.root = Path(root)
        self.output = output

    @classmethod
    def of(cls, out: str | Path) -> RunStore:
        """The store of the `reproduce` output folder `out` (its files entered in the folder's
        manifest; refused if `out/runs` is a symlink)."""
        output = Output(out, "reproduce")
        return cls(output.path(FOLDER), output)

    def record(self, identity: dict[str, Any]) -> Path:
        """Where the record of the run with `identity` is (or would be), without suffix."""
        return self.root / key(identity)

    def publish(self, identity: dict[str, Any], record: Path) -> None:
        """Share the finished record `record` (no suffix) of the run with `identity`."""
        link_record(record, self.record(identity), self.output)

    @contextlib.contextmanager
    def claim(self, identity: dict[str, Any], wait: bool) -> Iterator[bool]:
        """Hold the run's lock for the `with` block; yields whether it was taken. `wait=False`
        gives up at once when another process holds it (yields False); `wait=True` waits."""
        import fcntl

        self.root.mkdir(parents=True, exist_ok=True)
        lock = self.record(identity).with_suffix(".lock")
        fd = os.open(lock, os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, 0o644)
        try:
            if self.output is not None:
                self.output.record(lock)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
