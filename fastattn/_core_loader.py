"""Loads the compiled core, a hard requirement: without it `import fastattn` fails, saying how to
build it (every exact objective, integrator and the fused He step run in it; there is no fallback)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def _has_compiled_core(folder: Path) -> bool:
    """Whether `folder` holds a compiled `_core*` extension (a checkout's `_core.pyi` and
    `_core_loader.py` match the name too, and a checkout on PYTHONPATH is no installed copy)."""
    return any(path.name.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
               for path in folder.glob("_core*"))


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
        if installed != here and _has_compiled_core(installed):
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

#: FASTATTN_ISA's values and the x86-64 psABI level each forces (CMakeLists.txt builds one module
#: per level: _core_x86_64_v2, _v3, _v4)
ISA_LEVELS = {"baseline": 2, "avx2": 3, "avx512": 4}
#: the /proc/cpuinfo flags each level needs, beyond the lower levels'
_LEVEL_FLAGS = {
    2: {"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"},
    3: {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"},
    4: {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"},
}


class IsaError(ImportError):
    """FASTATTN_ISA asks for a level this CPU or this build cannot run."""


def cpu_level(cpuinfo: str | None = None) -> int:
    """The highest x86-64 psABI level (2, 3, 4) this CPU and OS run, from Linux's /proc/cpuinfo
    (whose flags omit what the kernel has not enabled, e.g. AVX-512 state); 2 where it cannot be
    read (the baseline module then runs: the lowest the build makes)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return 2
    line = next((x for x in cpuinfo.splitlines() if x.startswith("flags")), "")
    flags = set(line.partition(":")[2].split())
    level = 1
    for n in (2, 3, 4):
        if not _LEVEL_FLAGS[n] <= flags:
            break
        level = n
    return max(level, 2)


def _load_core() -> ModuleType:
    """The compiled core: of the per-level modules the build made, the highest this CPU runs (or
    the level FASTATTN_ISA forces); a single-module build (FASTATTN_ISA=native or generic) as is."""
    import os

    package = __name__.rpartition(".")[0]
    built = [n for n in (2, 3, 4)
             if importlib.util.find_spec(f"{package}._core_x86_64_v{n}") is not None]
    forced = os.environ.get("FASTATTN_ISA", "").strip().lower()
    if forced and forced not in ISA_LEVELS:
        raise IsaError(f"FASTATTN_ISA={forced!r}: give one of {', '.join(ISA_LEVELS)} (or unset "
                          "it to run the highest level this CPU has)")
    if not built:
        if forced:
            raise IsaError(f"FASTATTN_ISA={forced} picks a level of a multi-level core, but this "
                              "build has one module (built with FASTATTN_ISA=native or generic); "
                              "unset FASTATTN_ISA or reinstall with the default build")
        return importlib.import_module(f"{package}._core")
    level = cpu_level()
    if forced:
        if ISA_LEVELS[forced] > level:
            raise IsaError(f"FASTATTN_ISA={forced} needs x86-64-v{ISA_LEVELS[forced]}, but this "
                              f"CPU runs x86-64-v{level}: give a lower level or unset it")
        level = ISA_LEVELS[forced]
    usable = [n for n in built if n <= level]
    if not usable:
        raise IsaError(f"this CPU runs x86-64-v{level}; the core was built for "
                          f"{', '.join(f'x86-64-v{n}' for n in built)} only")
    module = importlib.import_module(f"{package}._core_x86_64_v{max(usable)}")
    # `from fastattn._core import ...` and `fastattn._core` name the module that runs
    sys.modules[f"{package}._core"] = module
    sys.modules[package]._core = module
    return module


try:
    core = _load_core()
except IsaError:
    raise
except ImportError as exc:
    raise ImportError(
        f"fastattn's compiled core fastattn._core is missing or does not load ({exc}). It is built "
        "when the package is installed: run `pip install -e .` (or `pip install .`) in the "
        "repository, which needs CMake and a C++17 compiler.") from exc

__all__ = ["core", "has_cpp"]


def has_cpp() -> bool:
    """True: fastattn does not import without its compiled core (kept for callers that ask)."""
    return True
