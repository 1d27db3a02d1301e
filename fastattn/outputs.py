"""Output folders own only what fastattn wrote there.

Each output folder (`reproduce --out DIR`, a sweep's `--out`, `train --out`) keeps a manifest,
`DIR/.fastattn-files.json`: the folder's kind ("reproduce", "sweep", "train") and every file
fastattn wrote there, by path relative to DIR, with its size and SHA-256. The rules it serves:

- nothing deletes or replaces a file that is not in the manifest, or whose size or hash is no
  longer what fastattn wrote (the user changed it): `Output.check_writable` refuses, in one line;
- nothing follows a symlink out of DIR: a path whose folders below DIR are symlinks, or that is
  itself a symlink, is refused (`Output.path`);
- every file is written to a temporary name and renamed into place (`records.atomic_write`, the
  one implementation), then entered in the manifest;
- a folder of one kind is refused by the commands of another (`Output.check_kind`): a folder
  without a manifest is recognised by the files each kind writes (`sweep.json`, `reproduce.json`,
  a `*.json` run record with its `.npz`).

Parallel writers (`reproduce --all --workers N`) update the manifest under an `fcntl.flock` lock.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from fastattn.training.records import atomic_write

#: the manifest's name inside an output folder
MANIFEST = ".fastattn-files.json"
KINDS = ("reproduce", "sweep", "train")
#: what each kind of folder is, for messages
WHAT = {"reproduce": "a `fastattn reproduce` folder", "sweep": "a sweep folder",
        "train": "a `fastattn train` folder"}


class OutputError(ValueError):
    """The output folder cannot take this write: another kind of folder, a file fastattn did not
    write, a symlink. One line that names the path and the way out."""


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back for the block; the first that arrives is handled (raises)
    after it. A file's rename and its manifest entry are one step this way: a Ctrl-C between the
    two would leave a file fastattn wrote that its manifest does not list.

    The signals are masked, and their Python handlers swapped for one that notes them: a signal
    that reached the process just before the mask, which Python has not yet handled, would
    otherwise still raise at the block's first instruction. A handler installed outside Python
    (`signal.getsignal` gives None) is left in place, under the mask alone. Only the main thread
    receives signals; elsewhere the block runs unchanged."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    signals = {signal.SIGINT, signal.SIGTERM}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    held: list[tuple[int, Any]] = []
    previous = {s: signal.signal(s, lambda s, frame: held.append((s, frame)))
                for s in sorted(signals) if signal.getsignal(s) is not None}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if held:
            signum, frame = held[0]
            if callable(previous[signum]):
                previous[signum](signum, frame)
            elif previous[signum] == signal.SIG_DFL:
                signal.raise_signal(signum)


def probe(folder: Path) -> None:
    """Create `folder` and check that a file can be created there, touching no existing file (a
    fresh temporary name, removed at once). Raises OSError."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".fastattn-probe-")
    os.close(fd)
    os.unlink(tmp)


def detect_kind(root: Path) -> str | None:
    """The kind of the folder `root` by its manifest, else by the files each kind writes; None
    for an empty or unknown folder."""
    try:
        doc = json.loads((root / MANIFEST).read_text())
        if doc.get("kind") in KINDS:
            return doc["kind"]
    except (OSError, ValueError, AttributeError):
        pass
    if (root / "sweep.json").is_file():
        return "sweep"
    if (root / "reproduce.json").is_file():
        return "reproduce"
    for path in root.glob("*.json") if root.is_dir() else ():
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and "summary" in doc and "quick" in doc:
            return "reproduce"
        if isinstance(doc, dict) and "arrays" in doc and "config" in doc \
                and (root / str(doc["arrays"])).is_file():
            return "train"
    return None


def _inside(rel: str) -> bool:
    """Whether `rel` is a normalised relative path below the folder (no "..", not absolute)."""
    path = Path(rel)
    return bool(rel) and not path.is_absolute() and ".." not in path.parts \
        and path.as_posix() == rel


class Output:
    """The output folder `root` of kind `kind`, and its manifest of the files fastattn wrote."""

    def __init__(self, root: str | Path, kind: str) -> None:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")
        self.root = Path(root)
        self.kind = kind

    # ------------------------------------------------------------------ checks before any work
    def check_kind(self) -> None:
        """Refuse a folder that another kind of command wrote."""
        found = detect_kind(self.root) if self.root.is_dir() else None
        if found is not None and found != self.kind:
            raise OutputError(f"--out {self.root} is {WHAT[found]}; {WHAT[self.kind]} would mix "
                              "with it: give another --out")

    def claim(self) -> None:
        """Check the folder's kind (`check_kind`) and mark it as this kind's (its manifest)."""
        self.check_kind()
        with self._locked() as doc:
            doc["kind"] = self.kind

    def path(self, rel: str | Path) -> Path:
        """`root/rel`, refused if a folder on the way below `root`, or the path itself, is a
        symlink (writing there would reach outside the folder)."""
        rel = Path(rel)
        if rel.is_absolute() or ".." in rel.parts:
            raise OutputError(f"{rel} is not a path inside --out {self.root}")
        here = self.root
        for part in rel.parts:
            here = here / part
            if here.is_symlink():
                raise OutputError(f"{here} is a symlink; fastattn writes nothing through links "
                                  f"(it would reach outside --out {self.root}): remove the link "
                                  "or give another --out")
        return here

    # ------------------------------------------------------------------ the manifest
    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        """The manifest, read and written back under the folder's lock."""
        import fcntl

        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / f"{MANIFEST}.lock", os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            doc = self.manifest()
            before = json.dumps(doc, sort_keys=True)
            yield doc
            if json.dumps(doc, sort_keys=True) != before or not (self.root / MANIFEST).exists():
                atomic_write(self.root / MANIFEST,
                             lambda fh: fh.write(json.dumps(doc, indent=1, sort_keys=True)), "w")
        finally:
            os.close(fd)

    def manifest(self) -> dict[str, Any]:
        """{"kind", "files": {relative path: {"size", "sha256"}}} (empty when there is none)."""
        try:
            doc = json.loads((self.root / MANIFEST).read_text())
            if isinstance(doc, dict) and isinstance(doc.get("files"), dict):
                # an entry naming a path outside the folder ("a/../../x", "/x") is not one
                # fastattn wrote: a crafted manifest must not aim a removal outside --out
                doc["files"] = {rel: entry for rel, entry in doc["files"].items()
                                if isinstance(rel, str) and _inside(rel)}
                return doc
        except (OSError, ValueError):
            pass
        return {"kind": self.kind, "files": {}}

    def _rel(self, path: Path) -> str:
        return Path(os.path.relpath(path, self.root)).as_posix()

    def owns(self, path: Path, entry: dict[str, Any] | None = None) -> bool:
        """Whether `path` is a regular file fastattn wrote and nobody changed since."""
        if entry is None:
            entry = self.manifest()["files"].get(self._rel(path))
        if entry is None or path.is_symlink() or not path.is_file():
            return False
        return path.stat().st_size == entry["size"] and sha256(path) == entry["sha256"]

    def check_writable(self, path: Path) -> None:
        """Refuse to replace `path` unless it is absent or a file fastattn wrote (unchanged)."""
        self.path(self._rel(path))
        if (path.exists() or path.is_symlink()) and not self.owns(path):
            raise OutputError(f"{path} was not written by fastattn (or was changed since): it is "
                              "left alone; move it away or give another --out")

    def record(self, *paths: Path) -> None:
        """Enter the files `paths` (just written) in the manifest with their size and hash."""
        entries = {self._rel(p): {"size": p.stat().st_size, "sha256": sha256(p)} for p in paths}
        with self._locked() as doc:
            doc["kind"] = self.kind
            doc["files"].update(entries)

    def write(self, path: Path, write: Callable[[Any], None], mode: str) -> Path:
        """Write `path` atomically (`records.atomic_write`) if it may be, and record it."""
        self.check_writable(path)
        with signals_held():
            atomic_write(path, write, mode)
            self.record(path)
        return path

    def remove(self, path: Path) -> bool:
        """Delete the file `path` if fastattn wrote it (unchanged); returns whether it did.
        Anything else is left where it is."""
        with self._locked() as doc:
            rel = self._rel(path)
            entry = doc["files"].get(rel)
            if entry is None or not self.owns(path, entry):
                return False
            path.unlink()
            del doc["files"][rel]
            return True

    def remove_tree(self, folder: Path) -> list[Path]:
        """Delete the files fastattn wrote under `folder` (the folder too once empty); returns
        the files left there (not fastattn's). A symlinked `folder` is never entered."""
        self.path(self._rel(folder))
        prefix = self._rel(folder) + "/"
        with self._locked() as doc:
            for rel, entry in list(doc["files"].items()):
                if rel.startswith(prefix) and self.owns(self.root / rel, entry):
                    (self.root / rel).unlink()
                    del doc["files"][rel]
                elif rel.startswith(prefix) and not (self.root / rel).exists():
                    del doc["files"][rel]
        # a symlink (to a folder too) is the user's: it stays, and so does the folder
        left = [p for p in folder.rglob("*") if p.is_symlink() or not p.is_dir()] \
            if folder.is_dir() else []
        if folder.is_dir() and not left:          # only empty folders remain: deepest first
            for d in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
                d.rmdir()
            folder.rmdir()
        return left

    def rename(self, src: Path, dst: Path) -> None:
        """Move the file or folder `src` to `dst` (absent) within the folder, manifest entries
        with it."""
        a, b = self._rel(src), self._rel(dst)
        self.path(a)
        self.path(b)
        with self._locked() as doc:
            os.rename(src, dst)
            for rel in list(doc["files"]):
                if rel == a or rel.startswith(a + "/"):
                    doc["files"][b + rel[len(a):]] = doc["files"].pop(rel)

    def complete(self, paths: list[Path]) -> bool:
        """Whether every file of `paths` is in the manifest and present with its size and hash."""
        files = self.manifest()["files"]
        return all(self.owns(p, files.get(self._rel(p))) for p in paths)
