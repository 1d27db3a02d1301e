"""Launch helpers shared by the kernels: compiled-or-interpreted choice made at call time."""

from __future__ import annotations

import os
from collections.abc import Callable

__all__ = ["TritonKernel", "block_size", "interpreting", "triton_available"]


def triton_available() -> bool:
    """True when ``import triton`` works."""
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


def interpreting() -> bool:
    """True when ``TRITON_INTERPRET=1`` is set now (read at every launch, not at import)."""
    return os.environ.get("TRITON_INTERPRET") == "1"


def block_size(n: int, minimum: int = 1) -> int:
    """The smallest power of two >= max(n, minimum)."""
    n = max(int(n), minimum, 1)
    return 1 << (n - 1).bit_length()


class TritonKernel:
    """A kernel body compiled by Triton or run by its CPU interpreter, chosen when launched.

    ``triton.jit`` decides between the two when the module is imported; this wrapper reads
    ``TRITON_INTERPRET`` at each launch, so importing order does not matter (tests set the
    variable with ``monkeypatch``). Kernel bodies must not call other jitted functions.
    """

    def __init__(self, fn: Callable):
        self.fn = fn
        self._compiled = None
        self._interpreted = None

    def __getitem__(self, grid):
        if interpreting():
            if self._interpreted is None:
                from triton.runtime.interpreter import InterpretedFunction

                self._interpreted = InterpretedFunction(self.fn)
            return _with_interpreted_library(self._interpreted[grid])
        if self._compiled is None:
            from triton.runtime.jit import JITFunction

            self._compiled = JITFunction(self.fn)
        return self._compiled[grid]


def _with_interpreted_library(launch: Callable) -> Callable:
    """Wrap an interpreted launch so that library device functions (``tl.sum``, ``tl.randn``, ...)
    that were built as compiled ``JITFunction`` objects, because triton was imported before
    TRITON_INTERPRET=1 was set, run through the interpreter too during this launch."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    def run(*args, **kwargs):
        original = JITFunction.__call__

        def call(jit_fn, *a, **k):
            return InterpretedFunction(jit_fn.fn)(*a, **k)

        JITFunction.__call__ = call
        try:
            return launch(*args, **kwargs)
        finally:
            JITFunction.__call__ = original

    return run
