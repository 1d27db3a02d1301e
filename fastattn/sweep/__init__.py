"""Sweeps over task/model/trainer options: one run per grid point, a resumable Parquet results table.

See docs/sweeps.md. Python API::

    from fastattn.sweep import run_sweep
    table = run_sweep({"model": "separate", "dim": [4, 8], "context": [16, 64], "heads": "D"},
                      "out/sweep", seeds=2, workers=2)
"""

from fastattn.sweep.api import EXECUTORS, GridError, plan, run_sweep
from fastattn.sweep.grid import Grid, load_config, parse_axis, resolve, run_key
from fastattn.sweep.horizon import Horizon
from fastattn.sweep.store import read_table, write_table

__all__ = ["EXECUTORS", "Grid", "GridError", "Horizon", "load_config", "parse_axis", "plan", "read_table",
           "resolve", "run_key", "run_sweep", "write_table"]
