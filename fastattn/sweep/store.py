"""Sweep directory layout, one atomic file per finished run, and the consolidated Parquet table.

DIR/sweep.json            the sweep (grid, settings) as last started
DIR/runs/<key>.json       the result row of one finished (or failed) run; written last, atomically:
                          its presence means the run is done (unless it failed transiently)
DIR/records/<key>.json    the run record (config, provenance) beside records/<key>.npz (curves, params)
DIR/results.parquet       every row of runs/, rewritten atomically (rebuilt from runs/ on demand)

A crash at any moment leaves complete files only (temporary name + `os.replace`); a run whose row is
absent is simply run again on resume.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

from fastattn.outputs import Output, OutputError
from fastattn.sweep.schema import TABLE, legacy_columns, upgrade_columns
from fastattn.training.records import atomic_write, to_jsonable

RUNS = "runs"
RECORDS = "records"
#: in-flight markers of running batches (`worker.mark_inflight`)
INFLIGHT = ".inflight"
SWEEP = "sweep.json"


def save_row(out: Path, row: dict[str, Any]) -> Path:
    path = Path(out) / RUNS / f"{row['key']}.json"
    text = json.dumps(to_jsonable(row), indent=1, allow_nan=False)
    atomic_write(path, lambda fh: fh.write(text), "w")
    return path


def check_folder(out: Path) -> None:
    """Refuse, touching nothing, an `out` that cannot be a sweep folder: a file, or a folder
    another kind of command wrote (`fastattn.outputs`: a `reproduce` or `train` folder)."""
    if out.exists() and not out.is_dir():
        raise OutputError(f"--out {out} is a file; a sweep writes a folder: give another --out")
    Output(out, "sweep").check_kind()


def sweep_output(out: Path) -> Output:
    """The sweep folder `out` as an `Output`. A folder a sweep wrote before sweeps entered their
    files in the manifest (it lists none, and its sweep.json is a sweep's) has its sweep.json and
    results.parquet entered as the sweep's; a file of those names in any other folder stays the
    user's, which the sweep never replaces."""
    output = Output(out, "sweep")
    output.check_kind()               # never into another command's folder (`fastattn plot R`)
    doc = output.manifest()
    if not doc["files"] and doc.get("kind") == "sweep" and _is_sweep_doc(out / SWEEP):
        output.record(*(p for p in (out / SWEEP, out / TABLE) if p.is_file() and not p.is_symlink()))
    return output


def _is_sweep_doc(path: Path) -> bool:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and {"grid", "keys", "horizon"} <= doc.keys()


def check_writable(out: Path) -> None:
    """Create the sweep folder `out` (and runs/, records/) and check that files can be written
    there, before any run starts; a clear OSError naming the folder otherwise. A folder of
    another kind (`fastattn.outputs`: a `reproduce` or `train` folder), or runs/ or records/ that
    are symlinks, raise `OutputError`."""
    out = Path(out)
    check_folder(out)
    output = sweep_output(out)
    for name in (SWEEP, TABLE):       # a user's file of the sweep's names: refused, left alone
        output.check_writable(out / name)
    try:
        for d in (out, output.path(RUNS), output.path(RECORDS), output.path(INFLIGHT)):
            d.mkdir(parents=True, exist_ok=True)
        output.claim()                # writes the manifest: files can be written there
    except OSError as exc:
        what = exc.strerror or type(exc).__name__
        raise OSError(f"cannot write to the sweep folder {out} ({what}); choose a writable --out "
                      "(or fix the folder's permissions)") from None


def check_key_format(out: Path, expected: int) -> None:
    """Raise if `out` holds finished runs keyed by another key format than `expected` (their keys
    cannot be matched to this version's, so resuming would silently rerun everything)."""
    out = Path(out)
    Output(out, "sweep").check_kind()       # another kind's runs/ is not this sweep's
    n = sum(1 for _ in (out / RUNS).glob("*.json"))
    if not n:
        return
    doc = out / SWEEP
    found = json.loads(doc.read_text()).get("key_format", 1) if doc.exists() else 1
    if found != expected:
        raise ValueError(
            f"{out} holds {n} finished runs whose keys use key format {found}; this version uses "
            f"format {expected} (format 1 hashed every option, defaults included; format 2 those "
            f"that differ from the separate preset's values; format 3 those that differ from their "
            f"card's default, see docs/sweeps.md), so they cannot be "
            f"resumed here. Use a new --out directory; the old results stay readable with "
            f"fastattn.sweep.read_table({str(out)!r}).")


def read_row(path: Path) -> dict[str, Any] | None:
    """The result row in `path` (under today's column names: `schema.upgrade_columns`), or None
    with a warning naming the file when it is unreadable (truncated, not JSON, no key or status):
    such a run counts as not done and is run again."""
    try:
        row = json.loads(Path(path).read_text())
        if not isinstance(row, dict) or row.get("key") != Path(path).stem or "status" not in row:
            raise ValueError("not a result row (no key or status)")
        return upgrade_columns(row)
    except (OSError, ValueError) as exc:
        warnings.warn(f"{path}: unreadable result row ({exc}); its run counts as not done and is "
                      "run again", stacklevel=2)
        return None


def finished_keys(out: Path, include_failed: bool = True) -> set[str]:
    """Keys of the runs whose row exists and is readable (failed ones too unless
    include_failed=False). A run that failed transiently (an OSError: disk full, permission
    denied; its row has "transient": true) is never finished: a resume runs it again."""
    rows = (read_row(p) for p in (Path(out) / RUNS).glob("*.json"))
    return {row["key"] for row in rows
            if row is not None and not row.get("transient")
            and (include_failed or row["status"] != "error")}


def table_size(out: Path) -> int:
    """Runs recorded in the sweep folder `out` (by any grid run there)."""
    return len(finished_keys(out))


def load_rows(out: Path) -> list[dict[str, Any]]:
    """Every readable result row of DIR/runs/, in key order."""
    rows = (read_row(p) for p in sorted((Path(out) / RUNS).glob("*.json")))
    return [row for row in rows if row is not None]


def write_table(out: Path) -> Path:
    """Rebuild DIR/results.parquet from DIR/runs/ atomically (over a table the sweep wrote only:
    `sweep_output`); returns its path. Every column has the
    type `fastattn.sweep.schema` declares (never null), columns with a unit (the papers' hooks'
    `units`) carry it in their field metadata ("unit"), and the schema its version."""
    import pyarrow.parquet as pq

    from fastattn.sweep.hooks import units
    from fastattn.sweep.schema import to_table

    table = to_table(load_rows(out), units())
    return sweep_output(Path(out)).write(Path(out) / TABLE, lambda fh: pq.write_table(table, fh),
                                         "wb")


def column_units(out: str | Path) -> dict[str, str]:
    """Column -> unit of DIR/results.parquet (its field metadata)."""
    import pyarrow.parquet as pq

    schema = pq.read_schema(Path(out) / TABLE)
    return {f.name: f.metadata[b"unit"].decode() for f in schema
            if f.metadata and b"unit" in f.metadata}


def read_table(out: str | Path):
    """The results table (pandas DataFrame) of a sweep directory: DIR/results.parquet, rebuilt from
    DIR/runs/ when it is missing or older than the newest run file; under today's column names
    (`schema.upgrade_columns`: a table written before the options' renaming reads as one after)."""
    import pandas as pd

    out = Path(out)
    path = out / TABLE
    runs = list((out / RUNS).glob("*.json"))
    if not runs and not path.exists():
        raise FileNotFoundError(f"{out} has no {TABLE} and no finished runs in {out / RUNS}")
    newest = max((p.stat().st_mtime for p in runs), default=0.0)
    table, unreadable = None, ""
    if path.exists() and path.stat().st_mtime >= newest:
        try:
            table = pd.read_parquet(path)
        except Exception as exc:            # truncated or foreign: rebuilt from the row files
            unreadable = f"{path}: unreadable ({type(exc).__name__}: {exc}); "
    if table is None or (runs and len(table) != len(runs)):
        if not runs:
            raise ValueError(f"{path} is unreadable and {out / RUNS} holds no run to rebuild it from")
        try:
            table = pd.read_parquet(write_table(out))
            if unreadable:
                warnings.warn(f"{unreadable}rebuilt from {out / RUNS}", stacklevel=2)
        except OutputError as exc:          # not the sweep's table, or not a sweep folder
            from fastattn.sweep.hooks import units
            from fastattn.sweep.schema import to_table

            table = to_table(load_rows(out), units()).to_pandas()
            warnings.warn(f"{unreadable}rebuilt from {out / RUNS} in memory only; nothing is "
                          f"written: {exc}", stacklevel=2)
    legacy = legacy_columns()
    stale = [c for c in table.columns if c in legacy and legacy[c] in table.columns]
    return table.drop(columns=stale).rename(columns=legacy)
