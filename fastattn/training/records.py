"""Run records: a JSON file (config, metadata, scalars) beside an `.npz` (arrays), written atomically.

A record is complete or absent: each file is written to a temporary name in the same directory and
renamed into place (`os.replace` is atomic on POSIX), the `.npz` first, so a JSON that exists always
points at a finished `.npz`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import json
import math
import os
import platform
import re
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def to_jsonable(obj: Any) -> Any:
    """Plain, strict JSON data from configs and results: dataclasses, numpy arrays and scalars,
    ranges, tuples; NaN and ±inf become None (`null`: strict JSON has no non-finite numbers)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (np.ndarray, np.generic)):
        return to_jsonable(obj.tolist())
    if isinstance(obj, (list, tuple, range)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


@functools.cache
def git_revision() -> str | None:
    """The git revision of fastattn's source: the HEAD of fastattn's own checkout when it runs
    from one (an editable install, the repository root), else the one `pip install` recorded in
    `fastattn._build_info`. Only the checkout whose root holds this package is asked, so an
    installed copy in a virtual environment inside some other repository does not report that
    repository's revision. Computed once per process."""
    root = Path(__file__).resolve().parents[2]
    if (root / ".git").exists() and (root / "pyproject.toml").exists():
        revision = head_commit(root / ".git") or _rev_parse(root)
        if revision:
            return revision
    try:
        from fastattn._build_info import GIT_REVISION
    except ImportError:  # a core built by hand with CMake: pip writes that file
        return None
    return GIT_REVISION or None


def head_commit(git: Path) -> str | None:
    """The commit HEAD names, read from the files of `git` (a `.git` folder, or a worktree's
    `.git` file): what `git rev-parse HEAD` prints, without its 5–15 ms subprocess on a short
    run's first record. None where the layout is not the plain one (`git rev-parse` decides)."""
    commit = _read_head(git)
    return commit if commit and re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", commit) else None


def _read_head(git: Path) -> str | None:
    try:
        if git.is_file():                               # a worktree: "gitdir: PATH"
            git = (git.parent / git.read_text().split("gitdir:", 1)[1].strip()).resolve()
        common = git / (git / "commondir").read_text().strip() if (git / "commondir").exists() \
            else git
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head                                 # a detached HEAD
        ref = head.removeprefix("ref: ")
        for folder in (git, common):
            if (folder / ref).is_file():
                return (folder / ref).read_text().strip()
        for line in (common / "packed-refs").read_text().splitlines():
            commit, _, name = line.partition(" ")
            if name == ref:
                return commit
    except (OSError, IndexError):
        pass
    return None


def _rev_parse(root: Path) -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                             text=True, timeout=5, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def environment() -> dict[str, Any]:
    """Versions, git revision, host and time: what a run record needs to be traced back."""
    from fastattn.versions import core_report, versions

    core_status = core_report()
    return {
        "versions": versions(),
        "core_loaded": core_status["loaded"],
        "core_native_build": core_status["native_build"],
        "core_isa": core_status["isa"],
        "git_revision": git_revision(),
        "host": platform.node(),
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: Path, write: Callable[[Any], None], mode: str) -> None:
    """Write `path` through a temporary file in its directory renamed into place, with the
    permissions of a plainly created file (the umask's; mkstemp's own are 0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, mode) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


#: the layout of a run record's JSON (its keys and their meaning); raised when one changes
RECORD_SCHEMA_VERSION = 1


def write_record(path: str | os.PathLike, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> Path:
    """Write `path.json` (meta, with "schema_version") and `path.npz` (arrays) atomically; `path`
    has no suffix."""
    base = Path(path)
    npz = base.with_name(base.name + ".npz")
    atomic_write(npz, lambda fh: np.savez(fh, **arrays), "wb")
    meta = {"schema_version": RECORD_SCHEMA_VERSION, **to_jsonable(meta), "arrays": f"{npz.name}"}
    atomic_write(base.with_name(base.name + ".json"),
                  lambda fh: fh.write(json.dumps(meta, indent=2, allow_nan=False)), "w")
    return base.with_name(base.name + ".json")


class RecordError(ValueError):
    """A run record that cannot be read: the message names the file and what is wrong with it."""


def read_record(path: str | os.PathLike, required: tuple[str, ...] = ()
                ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(meta, arrays) of a record written by `write_record`; `path` may end in .json or have no
    suffix. `required`: meta keys that must be present. A missing, truncated or foreign file
    raises RecordError (FileNotFoundError when the JSON file does not exist)."""
    p = Path(path)
    if p.is_dir():
        # `fastattn train --out DIR` writes DIR/NAME.json (default NAME: run)
        names = sorted(q.stem for q in p.glob("*.json") if q.with_suffix(".npz").is_file())
        raise FileNotFoundError(f"{p} is a folder; give one of its run records: "
                                + (", ".join(str(p / n) for n in names[:5]) or "(none there)"))
    json_path = p if p.suffix == ".json" else p.with_name(p.name + ".json")
    try:
        meta = json.loads(json_path.read_text())
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as exc:
        raise RecordError(f"{json_path}: not a readable run record ({_what(exc)})") from exc
    missing = [k for k in ("arrays", *required) if not isinstance(meta, dict) or k not in meta]
    if missing:
        raise RecordError(f"{json_path}: not a run record (no {', '.join(map(repr, missing))})")
    version = meta.get("schema_version", 0)     # records before versioning: 0, the same layout
    if not isinstance(version, int) or version > RECORD_SCHEMA_VERSION:
        raise RecordError(f"{json_path}: run record schema version {version!r}, newer than this "
                          f"fastattn reads ({RECORD_SCHEMA_VERSION}); upgrade fastattn")
    npz = json_path.with_name(str(meta["arrays"]))
    try:
        with np.load(npz) as data:
            arrays = {k: data[k] for k in data.files}
    except Exception as exc:                     # zipfile, pickle and EOF errors of np.load
        raise RecordError(f"{npz}: unreadable arrays of the run record {json_path.name} "
                          f"({_what(exc)})") from exc
    return meta, arrays


def _what(exc: BaseException) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"truncated or invalid JSON: {exc.msg} at character {exc.pos}"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
