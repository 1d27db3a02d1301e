"""The index of figures and `reproduce`: a name, the runs it needs, what it compares with theory,
and how it draws.

Each paper's package (`fastattn/experiments/<paper>/`, listed in `PAPERS`) names its figures in a
`FIGURES` tuple of `Figure` entries; a figure's module is imported only when that figure is
reproduced. A recipe's `runs(quick, **options)` lists `RunSpec`s (task, model config, trainer
config); `reproduce` trains them, hands the trajectories to `summarize` (measured vs predicted
numbers) and `plot`, and writes `DIR/NAME.png`, `DIR/NAME.json` (last, atomically) and one run
record per run under `DIR/NAME/`. Recipes write no files; some (exact flows of other families,
Monte Carlo, token transformers) still compute inside `summarize` and list no runs. The unit that
`fastattn reproduce --all` caches and resumes is the figure (`experiments/batch.py`): a finished
figure is its JSON.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from fastattn.analysis import find_plateaus_and_drops
from fastattn.experiments.recipe import Figure, Run, RunSpec, summarize
from fastattn.models import build_model
from fastattn.training import Trajectory, train_many
from fastattn.training.records import atomic_write, environment, to_jsonable

#: papers with figure recipes: each is a package `fastattn.experiments.<paper>` whose `FIGURES`
#: (a tuple of `Figure`) names its figures without importing their modules
PAPERS = ("zhang2025", "he2025", "sander2024", "mainali2025", "musat2025")


def _index() -> dict[str, Figure]:
    out: dict[str, Figure] = {}
    for paper in PAPERS:
        for figure in importlib.import_module(f"fastattn.experiments.{paper}").FIGURES:
            if figure.name in out:
                raise ValueError(f"figure {figure.name!r} is listed twice")
            out[figure.name] = figure
    return out


#: every figure by name (index entries: title, options, where the recipe is)
FIGURES: dict[str, Figure] = _index()


def get(name: str) -> Figure:
    """The index entry of figure `name` (its module is not imported)."""
    if name not in FIGURES:
        raise ValueError(f"unknown figure {name!r}; `fastattn reproduce --list` shows the "
                         f"{len(FIGURES)} available: {', '.join(sorted(FIGURES))}")
    return FIGURES[name]


def run_specs(specs: list[RunSpec]) -> list[Run]:
    labels = [s.label for s in specs]
    if len(set(labels)) != len(labels):
        raise ValueError(f"run labels must be unique within a figure; got {labels}")
    models = []
    for spec in specs:
        model = build_model(spec.model)
        if spec.init is not None:
            model.load_flat(np.asarray(spec.init, dtype=np.float64))
        models.append(model)
    # runs the fused He step can train together are batched (each bit-identical to its train())
    trajs = train_many(models, [s.task for s in specs],
                       [dataclasses.replace(s.train, progress=False) for s in specs])
    return [Run(*run) for run in zip(specs, trajs, models, strict=True)]


def reproduce(name: str, out: str | Path, quick: bool = False, **options: Any) -> dict[str, Any]:
    """Run figure `name`, write `out/NAME.png`, `out/NAME.json` and `out/NAME/<run>.{json,npz}`.

    Returns the JSON document (also written to disk).
    """
    from fastattn import plots  # matplotlib: only when a figure is drawn, not for --list

    figure = get(name)
    for key, value in options.items():
        allowed = figure.options.get(key)
        if allowed is None:
            raise ValueError(f"{name} has no option {key!r}; it has {sorted(figure.options) or 'none'}")
        if value not in allowed:
            raise ValueError(f"{name}: option {key} must be one of {allowed}; got {value!r}")
    recipe = figure.load()
    start = time.perf_counter()
    runs = run_specs(recipe.runs(quick, **options))
    summary = summarize(recipe, runs, quick)
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
    plots.suptitle(fig, figure.title, recipe.caption)
    png = plots.save(fig, out / f"{name}.png")
    doc = {"name": name, "title": figure.title, "caption": recipe.caption, "quick": quick,
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
