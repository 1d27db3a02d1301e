"""Loads the compiled core once, so every module sees the same answer to "is the C++ core here?"."""

from __future__ import annotations

from types import ModuleType

try:
    from fastattn import _core as core
    CORE_ERROR: str | None = None
except ImportError as exc:  # a development checkout without a build; pip install always builds it
    core: ModuleType | None = None  # type: ignore[no-redef]
    CORE_ERROR = f"{type(exc).__name__}: {exc}"


def has_cpp() -> bool:
    """True when the compiled float64 population core ``fastattn._core`` is importable."""
    return core is not None
