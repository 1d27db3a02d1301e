"""fastattn: exact and fast training dynamics of in-context learning in attention models.

Conventions (token layout, 1/N, loss scale, time units, parameter layouts) are in docs/conventions.md.

The public names below load on first use (module ``__getattr__``): ``import fastattn`` imports no
torch, theory or experiment module, so the command line starts fast and a caller pays only for
what it uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from fastattn._core_loader import has_cpp  # the compiled core: a clear ImportError without it

if TYPE_CHECKING:
    from fastattn.info import info
    from fastattn.training import TrainConfig, Trajectory, train

__version__ = "0.1.0"

#: public name → the module that defines it
_LAZY = {
    "info": "fastattn.info",
    "TrainConfig": "fastattn.training",
    "Trajectory": "fastattn.training",
    "train": "fastattn.training",
}

__all__ = ["TrainConfig", "Trajectory", "__version__", "has_cpp", "info", "train"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value            # later look-ups skip __getattr__
        return value
    raise AttributeError(f"module 'fastattn' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
