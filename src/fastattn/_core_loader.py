"""Loads the compiled core, a hard requirement: without it `import fastattn` fails, saying how to
build it (every exact objective, integrator and the fused He step run in it; there is no fallback)."""

from __future__ import annotations

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
