"""`fastattn._core_loader`: a source checkout joins the installed copy that holds the compiled
core, never another checkout (whose `_core.pyi` and `_core_loader.py` share the name's prefix)."""

from __future__ import annotations

import importlib.machinery
import subprocess
import sys
from pathlib import Path

from fastattn._core_loader import _has_compiled_core

ROOT = Path(__file__).resolve().parents[1]


def test_a_checkout_holds_no_compiled_core(tmp_path):
    (tmp_path / "_core.pyi").write_text("")
    (tmp_path / "_core_loader.py").write_text("")
    assert not _has_compiled_core(tmp_path)
    (tmp_path / f"_core_x86_64_v3{importlib.machinery.EXTENSION_SUFFIXES[0]}").write_bytes(b"")
    assert _has_compiled_core(tmp_path)


def test_a_copy_ahead_of_the_checkout_on_the_path_loads_the_core(tmp_path):
    """What `fastattn report --mutations` runs: a package copy first on the path, the checkout on
    PYTHONPATH after it, the installed copy last."""
    import shutil

    shutil.copytree(ROOT / "fastattn", tmp_path / "fastattn",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "triton_kernels", tmp_path / "triton_kernels",
                    ignore=shutil.ignore_patterns("__pycache__"))
    code = "import fastattn, sys; sys.exit(0 if fastattn.has_cpp() else 'no core')"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, env={"PYTHONPATH": f"{tmp_path}:{ROOT}",
                                          "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
