"""How long a run will take, measured before it starts: a few optimiser steps of the run itself,
timed on this machine, times its step count (issue 41: a default run of hours must say so first).

`seconds_per_step` trains throw-away copies of the model for `PROBE_STEPS` and `2 · PROBE_STEPS`
steps of the run's own configuration (after a one-step warm-up that pays for first-call costs) and
divides the difference of their times by `PROBE_STEPS`, so the per-run setup (test sets, fixed data
sets, the fused step's buffers) cancels. Records and snapshots are cut to the minimum in the
probes: their cost over a whole run is not measured (a few per cent for the papers' presets).

Exact flows ("flow") have no step count to multiply: their cost is the whole integration, known
only by running it (docs/benchmarks.md, "Expected time of each pair's default run").
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastattn.models.base import ICLModel
    from fastattn.tasks.base import Task
    from fastattn.training.config import TrainConfig

#: a run expected to take longer than this many seconds says so before it starts
LONG_RUN = 600.0
#: optimiser steps timed per probe (two probes: PROBE_STEPS and 2 · PROBE_STEPS steps)
PROBE_STEPS = 10
#: runs of fewer steps are not probed: the probes (3 · PROBE_STEPS + 1 steps) would cost over 3 %
MIN_PROBED_STEPS = 100 * PROBE_STEPS
#: methods whose run is a number of optimiser steps of one cost each
STEPPED = ("gd", "sgd", "adam", "task_sgd")


def seconds_per_step(model: ICLModel, task: Task, config: TrainConfig,
                     probe: int = PROBE_STEPS, min_seconds: float = 0.0,
                     clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds per optimiser step of `config`'s run of `model` on `task`, measured here: throw-away
    copies of `model` trained 1 (warm-up), `probe` and `2 · probe` steps; (t(2·probe) − t(probe)) /
    probe. While that difference is under `min_seconds` (too short to time well: a fast step)
    `probe` grows tenfold, as long as the longer probe stays within a tenth of the run's steps.
    `model` is not changed. Stopping rules (target loss or metric) are off in the probes."""
    from fastattn.training.trainer import train

    if config.method not in STEPPED:
        raise ValueError(f"method={config.method!r} has no step count to time; methods with "
                         f"steps: {', '.join(STEPPED)}")

    def timed(steps: int) -> float:
        cfg = dataclasses.replace(config, steps=steps, n_records=1, n_snapshots=1,
                                  record_every=None, snapshot_every=None, target_loss=None,
                                  target_metric=None, progress=False)
        start = clock()
        train(copy.deepcopy(model), task, cfg)
        return clock() - start

    timed(1)
    while True:
        short = timed(probe)
        spent = timed(2 * probe) - short
        if spent >= min_seconds or 200 * probe > config.steps:
            return max(spent, 0.0) / probe
        probe *= 10


def default_seconds_per_step(task: str, model: str, min_seconds: float = 0.0,
                             clock: Callable[[], float] = time.perf_counter) -> float:
    """`seconds_per_step` of the (task, model) pair's default run (its preset's, as `fastattn
    train --task TASK --model MODEL` runs it); `clock=time.process_time` counts this process's CPU
    seconds (all threads) instead of wall seconds: what a loaded machine does not inflate."""
    from fastattn.configs import resolve
    from fastattn.training.build import build_run

    built_task, built_model, config = build_run(resolve(task, model).spec())
    return seconds_per_step(built_model, built_task, config, min_seconds=min_seconds, clock=clock)


def duration(seconds: float) -> str:
    """"2 h 58 min", "14 min", "40 s", "< 1 s" (rounded: an estimate, not a measurement to the
    second)."""
    if seconds < 0.5:
        return "< 1 s"
    if seconds < 60:
        return f"{round(seconds)} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def short_steps(rate: float, steps: int, budget: float = LONG_RUN) -> int:
    """The step count offered for a shorter run: the largest of 1, 2, 5 × 10^k steps that fits in
    `budget` seconds at `rate` seconds per step (at least 1, at most `steps`)."""
    fits = budget / rate if rate > 0 else steps
    best = 1
    for k in range(int(math.log10(max(steps, 1))) + 1):
        best = max([best] + [m * 10 ** k for m in (1, 2, 5) if m * 10 ** k <= fits])
    return min(best, steps)


def estimate(rate: float, steps: int, how: str) -> str:
    """"expected ≈ 2 h 58 min for 40000 steps (0.267 s/step HOW)": `steps` at `rate` seconds per
    step; `how` says where the rate comes from."""
    return f"expected ≈ {duration(rate * steps)} for {steps} steps ({rate:.3g} s/step {how})"


def expected_line(rate: float, steps: int, how: str, long_run: float = LONG_RUN) -> str | None:
    """The line a run longer than `long_run` seconds prints before it starts: its `estimate` and
    the shorter `--steps` run that fits in `long_run`; None for a shorter run."""
    if rate * steps <= long_run:
        return None
    short = short_steps(rate, steps, long_run)
    return f"{estimate(rate, steps, how)}; --steps {short} runs in ≈ {duration(rate * short)}"


def announce(model: ICLModel, task: Task, config: TrainConfig,
             long_run: float = LONG_RUN) -> str | None:
    """The expected-time line of a run about to start (see `expected_line`), from its rate
    measured here; None for an exact flow, a run of fewer than MIN_PROBED_STEPS steps (not
    probed), or one expected to take at most `long_run` seconds."""
    if config.method not in STEPPED or config.steps < MIN_PROBED_STEPS:
        return None
    rate = seconds_per_step(model, task, config)
    return expected_line(rate, config.steps, f"on this machine, measured over {PROBE_STEPS} steps",
                         long_run)
