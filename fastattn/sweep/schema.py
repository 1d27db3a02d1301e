"""The results table's Arrow schema: every column typed by declaration, never inferred as null, so
that sweeps of different families read as one dataset (`dataset`, or DuckDB over the Parquet
files).

Where each column's type comes from:
- a config column (one per option): the option's parser (`fastattn.configs`): an integer, a
  number, true/false; an option whose values are numbers or lists (`--context 32` or `8/16`) is an
  integer column while every value of the sweep is one, else JSON text (`grid.flat_columns`): two
  sweeps, one of fixed and one of random context lengths, do not share one `context` type;
- the run's own columns: `RUN_COLUMNS` below;
- the paper-independent measurements: `fastattn.sweep.runner.MEASURED`, beside the code that
  measures them;
- a paper's theory and measurement columns (its hooks): one rule on their values, the same for
  every sweep: numbers are float64 (an integer-valued count too: a column keeps one type across
  sweeps), lists of numbers list<float64>, true/false bool, else text; a column with no value in a
  sweep is float64 if its name says number (`NUMBER_PREFIXES`), else text.

The schema's metadata holds `fastattn.schema_version` (`SCHEMA_VERSION`, raised when a column
changes type or meaning) and each column with a unit (the hooks' `units`) its "unit".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

#: the results table's file name in a sweep folder
TABLE = "results.parquet"
#: raised when a column changes type or meaning; in the Parquet schema's metadata and in run records
SCHEMA_VERSION = 1
#: the key of the schema version in the Parquet schema's metadata
VERSION_KEY = b"fastattn.schema_version"
#: an undeclared column with no value in a sweep is a number if its name starts so
NUMBER_PREFIXES = ("theory_", "first_", "level_", "final_", "excess_", "t_", "target_loss", "risk",
                   "n_")

#: the columns every row may have, beside the options' and the measurements'
RUN_COLUMNS: dict[str, Any] = {
    "key": str, "seed": int, "heads_expr": str, "init_scale_expr": str, "t_end": float,
    "target_loss": float, "integrator_used": str, "status": str, "error": str, "traceback": str,
    "transient": bool, "n_evals": int, "wall_time": float, "record": str, "runs_in_batch": int,
    "batch_wall_time": float, "backend": str, "stream": str,
}


def legacy_columns() -> dict[str, str]:
    """Column names of result rows and tables written before `configs.options.RENAMED` → their
    names now: the renamed options' columns and their expressions' ("init_expr")."""
    from fastattn.configs.options import RENAMED
    from fastattn.sweep.grid import EXPRESSIONS

    return RENAMED | {f"{old}_expr": f"{new}_expr" for old, new in RENAMED.items()
                      if new in EXPRESSIONS}


def upgrade_columns(row: Mapping[str, Any]) -> dict[str, Any]:
    """`row` (column → value) under today's column names (`legacy_columns`); an old column whose
    new name is there too is dropped (old rows held the option column `time` beside the run's
    `t_end`, the same value)."""
    legacy = legacy_columns()
    return {legacy.get(k, k): v for k, v in row.items() if legacy.get(k, k) == k or legacy[k] not in row}


#: an option column whose parser gives numbers or lists: int64 if every value is an integer
INT_OR_TEXT = "int or text"


def arrow_type(kind: Any):
    """The Arrow type of a declared Python kind: int, float, bool, str or list[float]."""
    import pyarrow as pa

    if kind == list[float]:
        return pa.list_(pa.float64())
    return {int: pa.int64(), float: pa.float64(), bool: pa.bool_(), str: pa.string()}[kind]


def declared() -> dict[str, Any]:
    """Column name -> Python kind of every declared column (options, run, measurements)."""
    from fastattn.configs.base import boolean
    from fastattn.sweep.grid import option_table
    from fastattn.sweep.runner import MEASURED

    options = {name: str if opt.choices else
               {int: int, float: float, boolean: bool, str: str}.get(opt.parse, INT_OR_TEXT)
               for name, opt in option_table().items()}
    return options | RUN_COLUMNS | MEASURED


def _inferred(name: str, values: list[Any]) -> Any:
    present = [v for v in values if v is not None]
    if not present:
        return float if name.startswith(NUMBER_PREFIXES) else str
    if all(isinstance(v, bool) for v in present):
        return bool
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return float
    if all(isinstance(v, list) for v in present):
        return list[float]
    return str


def _column(kind: Any, values: list[Any]):
    """An Arrow array of `kind` from row values (None: null; a value of another type is converted:
    an int to float, a list to JSON text in a text column)."""
    import json

    import pyarrow as pa

    def convert(v):
        if v is None:
            return None
        if kind is float:
            return float(v)
        if kind is int:
            return int(v)
        if kind is bool:
            return bool(v)
        if kind is str:
            return v if isinstance(v, str) else json.dumps(v)
        return [float("nan") if x is None else float(x) for x in v]
    return pa.array([convert(v) for v in values], type=arrow_type(kind))


def to_table(rows: list[dict[str, Any]], units: Mapping[str, str] | None = None):
    """The rows as a typed Arrow table (columns in first-seen order, rows sorted by key)."""
    import pyarrow as pa

    rows = sorted(rows, key=lambda r: r.get("key") or "")
    names = list(dict.fromkeys(name for row in rows for name in row))
    known, units = declared(), units or {}
    fields, arrays = [], []
    for name in names:
        values = [row.get(name) for row in rows]
        kind = known.get(name) or _inferred(name, values)
        if kind == INT_OR_TEXT:
            given = [v for v in values if v is not None]
            kind = int if given and all(type(v) is int for v in given) else str
        arrays.append(_column(kind, values))
        meta = {"unit": units[name]} if name in units else None
        fields.append(pa.field(name, arrow_type(kind), metadata=meta))
    return pa.Table.from_arrays(arrays, schema=pa.schema(
        fields, metadata={VERSION_KEY: str(SCHEMA_VERSION).encode()}))


def dataset(folders: Iterable[str | Path]):
    """One `pyarrow.dataset.Dataset` over the results tables of several sweep folders (of any
    families): the union of their columns, each with its one type; a folder's missing columns read
    as null. Tables of another schema version are refused."""
    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq


    paths = [str(Path(f) / TABLE) for f in folders]
    schemas = [pq.read_schema(p) for p in paths]
    for path, schema in zip(paths, schemas, strict=True):
        version = (schema.metadata or {}).get(VERSION_KEY)
        if version != str(SCHEMA_VERSION).encode():
            raise ValueError(f"{path}: results schema version {version and version.decode()}, this "
                             f"fastattn reads {SCHEMA_VERSION}; rebuild it from its runs with "
                             "fastattn.sweep.write_table(folder)")
        old = sorted(set(schema.names) & legacy_columns().keys())
        if old:
            raise ValueError(f"{path} has columns of the options' old names ({', '.join(old)}); "
                             "rebuild it from its runs with fastattn.sweep.write_table(folder), "
                             "which renames them")
    return ds.dataset(paths, format="parquet", schema=pa.unify_schemas(schemas))
