"""fastattn: exact and fast training dynamics of in-context learning in attention models.

Conventions (token layout, 1/N, loss scale, time units, parameter layouts) are in docs/conventions.md.
"""

from fastattn._core_loader import has_cpp
from fastattn.info import info
from fastattn.training import TrainConfig, Trajectory, train

__version__ = "0.1.0"

__all__ = ["TrainConfig", "Trajectory", "__version__", "has_cpp", "info", "train"]
