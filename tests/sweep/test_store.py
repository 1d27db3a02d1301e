"""A sweep folder written before four options took their fields' names (issue 41: --time → --t-end,
--init → --init-scale, --records → --n-records, --snapshots → --n-snapshots) still reads, plots
and resumes. data/sweep_cfc9f57 is a two-run sweep written by main at cfc9f57 (its sweep.json's
meta.git_revision): its rows and grid use the old names."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fastattn.sweep import read_table, run_sweep
from fastattn.sweep.grid import load_config
from fastattn.sweep.plots import swept_axes
from fastattn.sweep.store import RUNS, TABLE

FIXTURE = Path(__file__).parent / "data" / "sweep_cfc9f57"
#: the old columns → the new (independent of fastattn.configs.options.RENAMED, which it checks)
OLD = {"time": "t_end", "init": "init_scale", "records": "n_records", "snapshots": "n_snapshots",
       "init_expr": "init_scale_expr"}


@pytest.fixture
def old(tmp_path) -> Path:
    out = tmp_path / "old"
    shutil.copytree(FIXTURE, out)
    return out


def _rows(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((folder / RUNS).glob("*.json"))]


@pytest.mark.parametrize("stale_table", [False, True])
def test_an_old_sweeps_table_reads_under_the_new_names(old, stale_table):
    """From the rows (results.parquet rebuilt) and from an old results.parquet newer than them
    (read as it is): the old columns carry the new names and the rows' values."""
    rows = _rows(old)
    assert OLD.keys() <= rows[0].keys()                           # the fixture is an old sweep
    if stale_table:           # as the old code wrote it: the rows' own names, nothing renamed
        pq.write_table(pa.Table.from_pylist(rows), old / TABLE)
    table = read_table(old)
    assert not OLD.keys() & set(table.columns)
    for row in rows:
        (got,) = table[table["key"] == row["key"]].to_dict("records")
        for was, now in OLD.items():
            assert got[now] == row[was] or (row[was] is None and pd.isna(got[now])), now
    assert sorted(table["init_scale"]) == [0.01, 0.02]
    assert swept_axes(old, table) == ["init_scale"]              # sweep.json's old axis names


def test_an_old_sweep_resumes_from_a_sweep_file_of_the_old_names(old, tmp_path):
    """Its grid, written with the old keys (one deprecation line each), finds both runs finished
    (the run keys are the old code's): neither is rerun, and a third init scale's run joins them
    in one table of the new names."""
    spec = tmp_path / "grid.toml"
    spec.write_text('model = "separate"\ndim = 2\nheads = 2\ncontext = 8\ntime = 1.0\n'
                    'init = [0.01, 0.02, 0.03]\nrecords = 20\nsnapshots = 5\n')
    with pytest.warns(FutureWarning) as notes:
        grid, _ = load_config(str(spec))
    assert [str(n.message).split(";")[0] for n in notes if n.category is FutureWarning] == [
        f"sweep option {k!r} is deprecated" for k in ("time", "init", "records", "snapshots")]
    assert grid.axes["init_scale"] == [0.01, 0.02, 0.03] and grid.axes["t_end"] == [1.0]
    before = {p.name: p.read_text() for p in (old / RUNS).glob("*.json")}
    table = run_sweep(grid, old, workers=0, progress=False)
    after = {p.name: p.read_text() for p in (old / RUNS).glob("*.json")}
    assert len(after) == 3 and {k: after[k] for k in before} == before
    assert sorted(table["init_scale"]) == [0.01, 0.02, 0.03]
    assert not OLD.keys() & set(table.columns) and list(table.columns).count("init_scale") == 1
