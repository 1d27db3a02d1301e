"""Figure recipes: a name, the runs it needs, what it compares with theory, and how it draws.

A recipe is declarative: `runs(quick, **options)` lists `RunSpec`s (task, model config, trainer
config); `reproduce` trains them, hands the trajectories to `summarize` (measured vs predicted
numbers) and `plot`, and writes `DIR/NAME.png`, `DIR/NAME.json` and one run record per run under
`DIR/NAME/`. Recipes never train or write files themselves.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fastattn.models import ModelConfig, build_model
from fastattn.tasks import LinearRegression
from fastattn.training import TrainConfig, Trajectory, train
from fastattn.training.records import atomic_write, environment, to_jsonable


@dataclass(frozen=True)
class RunSpec:
    """One training run of a figure: `label` is unique within the figure; `group` is free-form
    (a panel, a seed, a rank) for the recipe's own use. `init`, if given, is a flat parameter
    vector `[P]` loaded after the model is built (a hand-made initialisation, e.g. the balanced,
    aligned one a derivation assumes); otherwise the model config's seeded init is used."""

    label: str
    task: LinearRegression
    model: ModelConfig
    train: TrainConfig
    group: dict[str, Any] = field(default_factory=dict)
    init: tuple[float, ...] | None = None


@dataclass
class Run:
    """A finished run: its spec, trajectory and the trained model (for weight diagnostics)."""

    spec: RunSpec
    traj: Trajectory
    model: Any


@dataclass(frozen=True)
class Recipe:
    name: str
    title: str
    caption: str
    runs: Callable[..., list[RunSpec]]
    summarize: Callable[[list[Run]], dict[str, Any]]
    plot: Callable[[list[Run], dict[str, Any]], Any]   # returns a matplotlib Figure
    options: dict[str, tuple[Any, ...]] = field(default_factory=dict)  # name -> allowed values


FIGURES: dict[str, Recipe] = {}


def register(recipe: Recipe) -> Recipe:
    if recipe.name in FIGURES:
        raise ValueError(f"figure {recipe.name!r} is registered twice")
    FIGURES[recipe.name] = recipe
    return recipe


def get(name: str) -> Recipe:
    if name not in FIGURES:
        raise ValueError(f"unknown figure {name!r}; `fastattn reproduce --list` shows the "
                         f"{len(FIGURES)} available: {', '.join(sorted(FIGURES))}")
    return FIGURES[name]


def run_specs(specs: list[RunSpec]) -> list[Run]:
    labels = [s.label for s in specs]
    if len(set(labels)) != len(labels):
        raise ValueError(f"run labels must be unique within a figure; got {labels}")
    runs = []
    for spec in specs:
        model = build_model(spec.model)
        if spec.init is not None:
            model.load_flat(np.asarray(spec.init, dtype=np.float64))
        cfg = dataclasses.replace(spec.train, progress=False)
        runs.append(Run(spec, train(model, spec.task, cfg), model))
    return runs


def reproduce(name: str, out: str | Path, quick: bool = False, **options: Any) -> dict[str, Any]:
    """Run figure `name`, write `out/NAME.png`, `out/NAME.json` and `out/NAME/<run>.{json,npz}`.

    Returns the JSON document (also written to disk).
    """
    from fastattn import plots

    recipe = get(name)
    for key, value in options.items():
        allowed = recipe.options.get(key)
        if allowed is None:
            raise ValueError(f"{name} has no option {key!r}; it has {sorted(recipe.options) or 'none'}")
        if value not in allowed:
            raise ValueError(f"{name}: option {key} must be one of {allowed}; got {value!r}")
    start = time.perf_counter()
    runs = run_specs(recipe.runs(quick, **options))
    summary = recipe.summarize(runs)
    out = Path(out)
    records = {}
    for run in runs:
        path = run.traj.save(out / name / run.spec.label)
        records[run.spec.label] = {
            "record": str(path.relative_to(out)), "group": run.spec.group,
            "status": run.traj.status, "final_loss": run.traj.final_loss,
            "n_evals": run.traj.n_evals, "wall_time": run.traj.wall_time,
            "config": run.traj.config}
    fig = recipe.plot(runs, summary)
    fig.suptitle(f"{recipe.title}\n{recipe.caption}", fontsize=8)
    png = plots.save(fig, out / f"{name}.png")
    doc = {"name": name, "title": recipe.title, "caption": recipe.caption, "quick": quick,
           "options": options, "png": png.name, "wall_time": time.perf_counter() - start,
           "summary": summary, "runs": records, "meta": environment()}
    atomic_write(out / f"{name}.json",
                  lambda fh: fh.write(json.dumps(to_jsonable(doc), indent=2, allow_nan=True)), "w")
    return doc


def plateau_table(traj: Trajectory, predicted: np.ndarray, **detect: Any) -> dict[str, Any]:
    """Detected plateaus of a trajectory matched to predicted levels.

    Each predicted level is paired with the detected plateau whose level is closest in relative
    terms; returns predicted, measured levels and times (NaN where nothing matched within 10%), and
    the relative differences.
    """
    from fastattn.analysis import find_plateaus_and_drops

    plateaus, drops = find_plateaus_and_drops(traj.time, traj.loss, **detect)
    measured = np.full(len(predicted), np.nan)
    start = np.full(len(predicted), np.nan)
    end = np.full(len(predicted), np.nan)
    for i, level in enumerate(predicted):
        if not plateaus:
            break
        rel = [abs(p.level - level) / level for p in plateaus]
        j = int(np.argmin(rel))
        if rel[j] < 0.1:
            measured[i], start[i], end[i] = plateaus[j].level, plateaus[j].start, plateaus[j].end
    return {"predicted_levels": predicted, "measured_levels": measured,
            "relative_difference": (measured - predicted) / predicted,
            "plateau_start": start, "plateau_end": end,
            "detected_levels": [p.level for p in plateaus],
            "drop_times": [d.time for d in drops]}
