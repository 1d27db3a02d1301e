"""Data distributions. Each task samples batches and knows the exact moments of its distribution."""

from fastattn.tasks.linear_regression import Batch, LinearRegression, split_tokens
from fastattn.tasks.spectra import spectrum

TASKS = {"linear_regression": LinearRegression}

__all__ = ["TASKS", "Batch", "LinearRegression", "spectrum", "split_tokens"]
