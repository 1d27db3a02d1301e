"""Boundary checks shared by tasks, models and trainers: one clear ValueError naming the argument."""

from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np

#: `train --seeds/--lrs` and `sweep` refuse to start more runs than this without --yes
MAX_RUNS_UNASKED = 10_000

#: exit status of a command ended by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it)
INTERRUPTED = 130


def positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1; got {value!r}")
    return int(value)


def key_query_rank(rank: object, dim: int) -> int:
    """A key/query rank R with 1 <= R <= D: a head's K_iᵀ Q_i is D × D, so a larger R adds
    parameters and no rank."""
    r = positive_int("rank", rank)
    if r > dim:
        raise ValueError(f"rank={r} must be at most dim={dim} (a head's K_iᵀ Q_i is D × D, of "
                         "rank at most D): give a smaller rank or a larger dim")
    return r


def nonnegative_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0; got {value!r}")
    return int(value)


def nonnegative_float(name: str, value: object) -> float:
    v = float(value)  # type: ignore[arg-type]
    if not math.isfinite(v) or v < 0:
        raise ValueError(f"{name} must be a finite number >= 0; got {value!r}")
    return v


def positive_float(name: str, value: object) -> float:
    v = float(value)  # type: ignore[arg-type]
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}")
    return v


def psd_matrix(name: str, value: object, dim: int | None = None, tol: float = 1e-10) -> np.ndarray:
    """A symmetric positive semi-definite float64 matrix, or ValueError saying what is wrong."""
    m = np.asarray(value, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"{name} must be a square matrix [D, D]; got shape {m.shape}")
    if dim is not None and m.shape[0] != dim:
        raise ValueError(f"{name} must be [{dim}, {dim}] to match dim={dim}; got shape {m.shape}")
    if not np.all(np.isfinite(m)):
        raise ValueError(f"{name} contains NaN or inf; pass a finite matrix")
    scale = max(1.0, float(np.abs(m).max()))
    if not np.allclose(m, m.T, rtol=0, atol=tol * scale):
        raise ValueError(f"{name} must be symmetric; max |A - Aᵀ| = {np.abs(m - m.T).max():.3g}. "
                         "Pass (A + A.T) / 2 if the asymmetry is rounding")
    m = (m + m.T) / 2
    lo = float(np.linalg.eigvalsh(m).min())
    if lo < -tol * scale:
        raise ValueError(f"{name} must be positive semi-definite; its smallest eigenvalue is "
                         f"{lo:.3g}. Pass a covariance matrix (e.g. A @ A.T)")
    return m


def finite_vector(name: str, value: object, dim: int) -> np.ndarray:
    v = np.asarray(value, dtype=np.float64)
    if v.shape != (dim,):
        raise ValueError(f"{name} must have shape [{dim}] to match dim={dim}; got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} contains NaN or inf")
    return v


def thread_count(name: str, value: object) -> int:
    """A thread count >= 1, capped (with a warning) at the cores this process may run on: more
    threads than cores only oversubscribe them, and tens of thousands crash the thread pools."""
    n = positive_int(name, value)
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:                          # no affinity API (macOS)
        cores = os.cpu_count() or 1
    if n > cores:
        warnings.warn(f"{name}={n} is more than the {cores} cores this process may use; using "
                      f"{cores}", RuntimeWarning, stacklevel=3)
        return cores
    return n


def read_json(path: str | os.PathLike) -> Any:
    """The JSON document in `path`; a file that is not valid JSON (truncated, foreign) raises a
    one-line ValueError naming the file, as a missing one raises FileNotFoundError naming it."""
    try:
        return json.loads(Path(path).read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno} column "
                         f"{exc.colno}: truncated, or not written by fastattn); rerun what wrote "
                         "it, or remove it") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a JSON text file (it does not decode as UTF-8)") from None
