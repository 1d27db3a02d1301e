"""The benchmarks import their siblings (`doors`, `test_he2025_bench`); pytest's importlib mode
(pyproject.toml) does not put a test file's folder on sys.path, so this does, for any working
directory: `python -m pytest bench/test_doors_bench.py` from the repository root."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
