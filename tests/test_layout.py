"""The design card's layout: `fastattn/` and `triton_kernels/` at the repository root, the kernels
installed as `fastattn.triton_kernels` (PyPI has an unrelated top-level `triton_kernels`). From the
root of a checkout, where the README has a newcomer type `python -c`, `python -m pytest` and its
Python example, `import fastattn` imports the checkout's sources joined to the installed compiled
core (fastattn/_core_loader.py, `_join_checkout`)."""

import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import fastattn
from fastattn.info import core_report

ROOT = Path(__file__).resolve().parents[1]


def installed_core() -> Path | None:
    """The installed fastattn folder that holds the compiled core (not the checkout's)."""
    for entry in sys.path:
        folder = Path(entry or ".").resolve() / "fastattn"
        if folder != ROOT / "fastattn" and any(folder.glob("_core*")):
            return folder
    return None


def editable_install() -> bool:
    """PEP 610's record of how fastattn was installed."""
    try:
        text = importlib.metadata.distribution("fastattn").read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        return False
    return bool(json.loads(text or "{}").get("dir_info", {}).get("editable"))


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_checkout_imports_its_sources_with_the_installed_core():
    """Under pytest (pyproject's pythonpath) as under `python -m pytest`: the checkout's modules and
    kernels, the installed copy's core."""
    import fastattn.triton_kernels.sampling.reference as reference

    assert Path(fastattn.__file__).resolve() == ROOT / "fastattn" / "__init__.py"
    assert Path(reference.__file__).resolve() == ROOT / "triton_kernels" / "sampling" / "reference.py"
    assert Path(fastattn._core_loader.core.__file__).resolve().parent != ROOT / "fastattn"
    assert core_report()["loaded"]


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(),
                    reason="needs git and a git checkout")
@pytest.mark.skipif(installed_core() is None, reason="no installed compiled core: `pip install .` first")
@pytest.mark.skipif(editable_install(), reason="an editable install imports its own checkout, not a clone")
def test_a_fresh_clone_imports_tests_and_runs_the_readme_example(tmp_path):
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    code = ("import fastattn, fastattn.ops, fastattn.triton_kernels.sampling.reference as r; "
            "from fastattn.info import core_report; "
            "print(fastattn.__file__, r.__file__, core_report()['loaded'])")
    result = run([sys.executable, "-c", code], clone)
    assert result.returncode == 0, result.stderr
    init, kernel, loaded = result.stdout.split()
    assert Path(init).parent == clone / "fastattn" and Path(kernel).is_relative_to(clone / "triton_kernels")
    assert loaded == "True"

    example = re.search(r"```python\n(.*?)```", (clone / "README.md").read_text(), re.S).group(1)
    result = run([sys.executable, "-c", example], clone)
    assert result.returncode == 0, result.stderr

    result = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                  "tests/test_layout.py", "-k", "checkout_imports_its_sources"], clone)
    assert result.returncode == 0 and "1 passed" in result.stdout, result.stdout + result.stderr


@pytest.mark.skipif(importlib.util.find_spec("scikit_build_core") is None,
                    reason="builds the wheel with scikit-build-core (no compiling), not installed here")
def test_the_wheel_puts_the_kernels_inside_fastattn(tmp_path):
    result = run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps",
                  "-C", "wheel.cmake=false", "-C", f"build-dir={tmp_path / 'build'}",
                  "-w", str(tmp_path), str(ROOT)], tmp_path)
    assert result.returncode == 0, result.stderr
    (wheel,) = tmp_path.glob("fastattn-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "fastattn/triton_kernels/__init__.py" in names
    assert "fastattn/triton_kernels/sampling/reference.py" in names
    assert "fastattn/cli.py" in names
    assert {n.split("/")[0] for n in names if ".dist-info/" not in n} == {"fastattn"}


def test_every_benchmark_file_collects_from_the_repository_root():
    """The docs run benchmarks as `python -m pytest bench/FILE` from the root; files that import a
    sibling (`doors`, `test_he2025_bench`) need bench/conftest.py under pytest's importlib mode."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "bench", "--collect-only", "-q",
                           "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True,
                          timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "error" not in proc.stdout.splitlines()[-1], proc.stdout[-3000:]
