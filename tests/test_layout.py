"""From the repository root (where the README has a newcomer type `python` and `python -m pytest`),
`import fastattn` must find the installed package, with its compiled core and its Triton kernels,
not a source tree that has neither."""

import importlib.machinery
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_repository_root_holds_no_importable_fastattn():
    """cwd comes first on sys.path under `python -c` and `python -m`: a package there shadows the install."""
    assert importlib.machinery.PathFinder.find_spec("fastattn", [str(ROOT)]) is None


def test_fastattn_and_its_ops_import_from_the_repository_root():
    code = ("import fastattn, fastattn.ops, fastattn.triton_kernels.sampling.reference; "
            "assert fastattn.info()['core']['loaded']")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
