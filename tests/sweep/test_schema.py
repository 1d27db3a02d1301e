"""The results table's schema: typed by declaration (no null column), versioned, and the same for
every family, so that a Zhang flow sweep, a He Adam sweep and a Musat flow sweep read as one
dataset with pyarrow.dataset and with DuckDB; run records carry their schema version."""

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fastattn.models import SeparateKQ
from fastattn.sweep import run_sweep
from fastattn.sweep.schema import SCHEMA_VERSION, VERSION_KEY, dataset, declared, to_table
from fastattn.sweep.store import TABLE
from fastattn.tasks import LinearRegression
from fastattn.training import RecordError, Trajectory, train

SWEEPS = {
    "zhang_flow": {"model": "separate", "dim": [2, 3], "context": 8, "heads": "D", "rank": 1,
                   "init_scale": 1e-2, "spectrum": "linear", "n_records": 60},
    "he_adam": {"model": "multihead_softmax", "dim": 3, "context": 9, "noise": 0.1, "w_var": 1 / 3,
                "spectrum": "1,1,1", "method": "adam", "lr": 0.01, "batch_size": 32, "steps": 40,
                "heads": [1, 2]},
    "musat_flow": {"task": "induction", "model": "three_param", "data": "orthonormal",
                   "query": "last", "dim": 8, "context": 4, "init_scale": 0.0},
}


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    out = {}
    for name, grid in SWEEPS.items():
        folder = tmp_path_factory.mktemp(name)
        run_sweep(grid, folder, workers=0, progress=False)
        out[name] = folder
    return out


def test_every_column_is_typed_and_the_table_versioned(sweeps):
    for folder in sweeps.values():
        schema = pq.read_schema(folder / TABLE)
        assert not [f.name for f in schema if pa.types.is_null(f.type)]
        assert schema.metadata[VERSION_KEY] == str(SCHEMA_VERSION).encode()
        kinds = declared()
        for name in ("dim", "seed", "n_evals", "final_loss", "status", "plateau_levels"):
            assert schema.field(name).type == to_table([{name: None}]).schema.field(name).type
            assert name in kinds


def test_three_families_read_as_one_dataset(sweeps):
    table = dataset(sweeps.values()).to_table()
    rows = {name: pq.read_table(folder / TABLE).num_rows for name, folder in sweeps.items()}
    assert table.num_rows == sum(rows.values()) == 2 + 2 + 1
    names = set(table.column_names)
    for folder in sweeps.values():                  # the union of the columns
        assert set(pq.read_schema(folder / TABLE).names) <= names
    he = table.filter(pa.compute.equal(table["model"], "multihead_softmax"))
    assert sorted(he["heads"].to_pylist()) == [1, 2]
    musat = table.filter(pa.compute.equal(table["model"], "three_param"))
    assert musat["status"].to_pylist() == ["target_loss"]


def test_duckdb_reads_the_sweeps_as_one_table(sweeps):
    duckdb = pytest.importorskip("duckdb")
    files = [str(f / TABLE) for f in sweeps.values()]
    counts = duckdb.sql(f"SELECT model, count(*) AS n FROM read_parquet({files}, "
                        "union_by_name = true) GROUP BY model ORDER BY model").fetchall()
    assert counts == [("multihead_softmax", 2), ("separate", 2), ("three_param", 1)]


def test_an_undeclared_column_gets_one_type_whatever_its_values():
    """A hook's column: integers and floats are float64 in every sweep, all-None is float64 for a
    number's name and text otherwise, lists are list<float64> with None as NaN."""
    table = to_table([{"key": "a", "theory_x": 3, "theory_y": None, "note": None, "lv": [1, None]},
                      {"key": "b", "theory_x": 2.5, "theory_y": None, "note": None, "lv": []}])
    types = {f.name: f.type for f in table.schema}
    assert types["theory_x"] == types["theory_y"] == pa.float64()
    assert types["note"] == pa.string() and types["lv"] == pa.list_(pa.float64())
    assert np.isnan(table["lv"].to_pylist()[0][1])


def test_a_table_of_another_version_is_refused(sweeps, tmp_path):
    folder = tmp_path / "old"
    folder.mkdir()
    table = pq.read_table(next(iter(sweeps.values())) / TABLE)
    pq.write_table(table.replace_schema_metadata({VERSION_KEY: b"0"}), folder / TABLE)
    with pytest.raises(ValueError, match="schema version 0"):
        dataset([folder])


def test_run_records_carry_their_schema_version(tmp_path):
    task = LinearRegression(2, context=4, spectrum=[0.6, 0.4])
    traj = train(SeparateKQ(2, 1, 1, init_seed=0), task, method="flow", t_end=1.0)
    path = traj.save(tmp_path / "run")
    meta = json.loads(path.read_text())
    assert meta["schema_version"] == 1
    meta["schema_version"] = 99
    path.write_text(json.dumps(meta))
    with pytest.raises(RecordError, match="schema version 99"):
        Trajectory.load(path)
