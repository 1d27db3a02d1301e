"""Loads the compiled core, a hard requirement: without it `import fastattn` fails, saying how to
build it (every exact objective, integrator and the fused He step run in it; there is no fallback)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def _join_checkout(package: ModuleType) -> None:
    """Make a source checkout's `fastattn/` whole. The repository keeps the package and its kernels
    side by side (`fastattn/`, `triton_kernels/`), and `pip install .` compiles the core into the
    installed copy only. Where the checkout's folder is the one imported (the repository root comes
    first on sys.path under `python -c`, `python -m pytest` and pytest's `pythonpath`), this adds the
    installed copy's folder (it holds `_core*` and `_build_info.py`) to `package.__path__`, after the
    checkout's, and registers `triton_kernels/` as `fastattn.triton_kernels`, as the wheel installs it
    (PyPI has an unrelated top-level `triton_kernels`). An installed copy holds its kernels: no-op."""
    here = Path(package.__file__).resolve().parent
    kernels = here.parent / "triton_kernels"
    if (here / "triton_kernels").is_dir() or not (kernels / "__init__.py").is_file():
        return
    for entry in sys.path:
        installed = Path(entry or ".").resolve() / "fastattn"
        if installed != here and any(installed.glob("_core*")):
            if str(installed) not in package.__path__:
                package.__path__.append(str(installed))
            break
    name = f"{package.__name__}.triton_kernels"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, kernels / "__init__.py", submodule_search_locations=[str(kernels)])
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    package.triton_kernels = sys.modules[name]


_join_checkout(sys.modules[__name__.rpartition(".")[0]])

try:
    from fastattn import _core as core
except ImportError as exc:
    raise ImportError(
        f"fastattn's compiled core fastattn._core is missing or does not load ({exc}). It is built "
        "when the package is installed: run `pip install -e .` (or `pip install .`) in the "
        "repository, which needs CMake and a C++17 compiler.") from exc

__all__ = ["core", "has_cpp"]


def has_cpp() -> bool:
    """True: fastattn does not import without its compiled core (kept for callers that ask)."""
    return True
