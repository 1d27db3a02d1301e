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
            return self._interpreted[grid]
        if self._compiled is None:
            from triton.runtime.jit import JITFunction

            self._compiled = JITFunction(self.fn)
        return self._compiled[grid]
