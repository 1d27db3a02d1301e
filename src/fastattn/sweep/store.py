"""Sweep directory layout, one atomic file per finished run, and the consolidated Parquet table.

DIR/sweep.json            the sweep (grid, settings) as last started
DIR/runs/<key>.json       the result row of one finished (or failed) run; written last, atomically:
                          its presence means the run is done
DIR/records/<key>.json    the run record (config, provenance) beside records/<key>.npz (curves, params)
DIR/results.parquet       every row of runs/, rewritten atomically (rebuilt from runs/ on demand)

A crash at any moment leaves complete files only (temporary name + `os.replace`); a run whose row is
absent is simply run again on resume.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from fastattn.training.records import atomic_write, to_jsonable

RUNS = "runs"
RECORDS = "records"
TABLE = "results.parquet"
SWEEP = "sweep.json"


def _clean(obj: Any) -> Any:
    obj = to_jsonable(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return None if math.isnan(obj) else obj
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    return obj


def save_row(out: Path, row: dict[str, Any]) -> Path:
    path = Path(out) / RUNS / f"{row['key']}.json"
    text = json.dumps(_clean(row), indent=1, allow_nan=True)
    atomic_write(path, lambda fh: fh.write(text), "w")
    return path


def check_key_format(out: Path, expected: int) -> None:
    """Raise if `out` holds finished runs keyed by another key format than `expected` (their keys
    cannot be matched to this version's, so resuming would silently rerun everything)."""
    out = Path(out)
    n = sum(1 for _ in (out / RUNS).glob("*.json"))
    if not n:
        return
    doc = out / SWEEP
    found = json.loads(doc.read_text()).get("key_format", 1) if doc.exists() else 1
    if found != expected:
        raise ValueError(
            f"{out} holds {n} finished runs whose keys use key format {found}; this version uses "
            f"format {expected} (format 1 hashed every option, defaults included; format 2 hashes "
            f"only options that differ from their defaults, see docs/sweeps.md), so they cannot be "
            f"resumed here. Use a new --out directory; the old results stay readable with "
            f"fastattn.sweep.read_table({str(out)!r}).")


def finished_keys(out: Path, include_failed: bool = True) -> set[str]:
    """Keys of the runs whose row exists (failed ones too unless include_failed=False)."""
    keys = set()
    for p in (Path(out) / RUNS).glob("*.json"):
        if include_failed:
            keys.add(p.stem)
            continue
        try:
            if json.loads(p.read_text()).get("status") != "error":
                keys.add(p.stem)
        except (OSError, ValueError):
            pass
    return keys


def load_rows(out: Path) -> list[dict[str, Any]]:
    rows = []
    for p in sorted((Path(out) / RUNS).glob("*.json")):
        try:
            rows.append(json.loads(p.read_text()))
        except (OSError, ValueError):      # never produced by save_row; skip foreign files
            continue
    return rows


FLOAT_PREFIXES = ("theory_", "first_", "level_", "final_", "excess_", "t_end", "target_loss")
LIST_COLUMNS = ("theory_levels", "plateau_levels", "plateau_starts", "plateau_ends", "drop_times")


def to_frame(rows: list[dict[str, Any]]):
    import pandas as pd

    df = pd.DataFrame(rows)
    for col in LIST_COLUMNS:
        if col in df:
            df[col] = df[col].map(lambda v: [float(x) if x is not None else float("nan") for x in v]
                                  if isinstance(v, list) else None)
    for col in df.columns:              # object columns of mixed scalars: keep one type
        if df[col].dtype == object and col not in LIST_COLUMNS:
            kinds = {type(v) for v in df[col] if v is not None}
            if len(kinds) > 1 and not kinds <= {int, float}:
                df[col] = df[col].map(lambda v: None if v is None else str(v))
            elif kinds <= {int, float} and (kinds or col.startswith(FLOAT_PREFIXES)):
                df[col] = df[col].astype(float)
    if "key" in df:
        df = df.sort_values("key", kind="stable").reset_index(drop=True)
    return df


def write_table(out: Path) -> Path:
    """Rebuild DIR/results.parquet from DIR/runs/ atomically; returns its path."""
    df = to_frame(load_rows(out))
    path = Path(out) / TABLE
    atomic_write(path, lambda fh: df.to_parquet(fh, index=False), "wb")
    return path


def read_table(out: str | Path):
    """The results table (pandas DataFrame) of a sweep directory: DIR/results.parquet, rebuilt from
    DIR/runs/ when it is missing or older than the newest run file."""
    import pandas as pd

    out = Path(out)
    path = out / TABLE
    runs = list((out / RUNS).glob("*.json"))
    newest = max((p.stat().st_mtime for p in runs), default=0.0)
    if not path.exists() or path.stat().st_mtime < newest or \
            (runs and len(pd.read_parquet(path, columns=["key"])) != len(runs)):
        if not runs:
            raise FileNotFoundError(f"{out} has no {TABLE} and no finished runs in {out / RUNS}")
        write_table(out)
    return pd.read_parquet(path)
