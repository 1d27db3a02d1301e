"""Data distributions behind the `Task` protocol, registered by kind in `TASKS`.

Each task samples batches as pure functions of (data_seed, step), gives a model's sampled loss on a
batch, and knows the exact moments of its distribution. The families are registered by the modules
the papers' manifests list (`fastattn.papers`), imported on the first read of `TASKS`; this package
re-exports the built-in families' classes.
"""

from fastattn.tasks.autoregressive import ARBatch, AutoRegressive
from fastattn.tasks.base import TASKS, Task, build_task, get_task, register_task
from fastattn.tasks.induction import InductionBatch, InductionPairs
from fastattn.tasks.induction_tokens import InductionTokens, TokenBatch
from fastattn.tasks.linear_regression import Batch, LinearRegression, Stats, split_tokens
from fastattn.tasks.spectra import spectrum
from fastattn.tasks.tokens import LabelledTokens, ModularAddition, PeriodicTokens, RepeatedTokens
from fastattn.tasks.wishart_tasks import VectorBatch, WishartTasks

__all__ = ["TASKS", "ARBatch", "AutoRegressive", "Batch", "LinearRegression", "Stats", "Task",
           "VectorBatch", "WishartTasks", "build_task", "get_task", "register_task", "spectrum",
           "split_tokens"]
__all__ += ["InductionBatch", "InductionPairs"]
__all__ += ["InductionTokens", "TokenBatch"]
__all__ += ["LabelledTokens", "ModularAddition", "PeriodicTokens", "RepeatedTokens"]
from fastattn.tasks.multitask_regression import MultiTaskBatch, MultiTaskRegression  # noqa: E402

__all__ += ["MultiTaskBatch", "MultiTaskRegression"]
