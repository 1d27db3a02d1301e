"""`Horizon`: the sweep's settings for how far a flow run goes and what it may spend."""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Horizon:
    """How far a flow run goes when the sweep does not give --t-end (docs/sweeps.md).

    The paper's hooks turn the first two into a run's horizon (`Hooks.flow_horizon`); for Zhang et
    al. 2025: stop at L ≤ (1 + converge_rel)·L* unless --target-loss, and t_end = horizon_factor ×
    the theory's time to learn the directions that the target needs.

    Attributes:
        converge_rel: relative distance to the theory's minimum loss at which a run has converged.
        horizon_factor: t_end as a multiple of the theory's time estimate (a safety margin: the
            target normally stops the run well before).
        max_evals: a cap on gradient evaluations plus Hessian-vector products (status "max_evals").
        n_records: loss records per flow run (None: the run's --n-records).
        max_run_seconds: a wall-time budget per flow run (status "max_seconds"; machine-dependent,
            unlike max_evals).
    """

    converge_rel: float = 0.05
    horizon_factor: float = 100.0
    max_evals: int = 5_000_000
    n_records: int | None = None
    max_run_seconds: float | None = None

    def __post_init__(self) -> None:
        """Bad values fail here, before any run, rather than as an error row of every run."""
        for name in ("converge_rel", "horizon_factor", "max_run_seconds", "max_evals", "n_records"):
            value = getattr(self, name)
            if value is None and name in ("max_run_seconds", "n_records"):
                continue
            count = name in ("max_evals", "n_records")
            if count:
                ok = isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 1
            else:
                ok = isinstance(value, numbers.Real) and not isinstance(value, bool) \
                    and 0 < value < math.inf
            if not ok:
                need = "a whole number >= 1" if count else "a positive finite number"
                raise ValueError(f"--{name.replace('_', '-')} must be {need}; got {value!r}")

    def run_settings(self) -> dict[str, Any]:
        """The settings that change a run beyond its spec (converge_rel and horizon_factor only fill
        target_loss and t_end into the spec), where they differ from their defaults: part of the run
        key."""
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        return {k: getattr(self, k) for k in ("max_evals", "n_records", "max_run_seconds")
                if getattr(self, k) != defaults[k]}
