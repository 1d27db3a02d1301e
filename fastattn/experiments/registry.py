"""The index of figures and `reproduce`: a name, the runs it needs, what it compares with theory,
and how it draws.

Each paper's manifest (`fastattn.papers`, field `figures`) points at a tuple of `Figure` entries
that names its figures (built in: `fastattn/experiments/<paper>/__init__.py`'s `FIGURES`); a
figure's module is imported only when that figure is reproduced. A recipe's `runs(quick, **options)`
lists `RunSpec`s (task, model config, trainer config; their `kind` says which trainer: exact flow,
fused batched Adam, sampled, tokens); `reproduce` trains them (`run_specs` →
`fastattn.training.train_many`), hands the finished runs to `summarize` (measured vs predicted
numbers) and `plot`, and writes `DIR/NAME.png`, `DIR/NAME.json` (last, atomically) and one run
record per run under `DIR/NAME/`. Recipes write no files and train nothing themselves: every
training or flow a figure shows is one of its runs.

Caching: a finished figure is its JSON (`experiments/batch.py` skips it); inside a figure, each run
record is written as its training ends and reused by the next `reproduce` when it is the same run
(same task, model, resolved train config, init and objective), so an interrupted figure resumes
from its finished runs. Runs are also shared across the figures of one folder (`DIR/runs/`,
`experiments/store.py`): a run that several figures list is trained once.

Figures that list no runs compute no training or flow: closed forms and Monte Carlo of fixed
predictors, sized in `summarize` by --quick. He 2025: E5 (Monte-Carlo risks of fixed estimators
and of the two-head model at fixed (ω, μ)), E6 (dGD(η*) vs ridge: Monte Carlo and limits), E7
(the landscape of fixed (ω, μ) pairs, semi-analytic and Monte Carlo), E9 (norms of softmax weights
of random prompts), E14 (a fixed ±γ pair vs debiased GD); Sander 2024: Fig. 1 (orbits of sampled
contexts), Fig. 2 (a trigonometric identity), Fig. 4 (least-squares AR(1) fits of text).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from fastattn import papers
from fastattn.analysis import find_plateaus_and_drops
from fastattn.experiments.recipe import (
    Figure,
    Run,
    RunSpec,
    objective_config,
    quick_note,
    summarize,
    trainer_kind,
)
from fastattn.experiments.store import RunStore, link_record
from fastattn.models import build_model
from fastattn.models.base import ICLModel
from fastattn.outputs import Output, OutputError, signals_held
from fastattn.training import RecordError, RunsInterrupted, Trajectory, flow, run_config, train_many
from fastattn.training.records import environment, to_jsonable
from fastattn.training.threads import torch_threads
from fastattn.training.trainer import dispatch


def _prefixed(paper: papers.Paper, figure: Figure) -> None:
    if not figure.name.startswith(paper.name + "-"):
        raise ValueError(f"figure {figure.name!r} of paper {paper.name}: name it "
                         f"'{paper.name}-...' (--paper selects figures by that prefix)")


def _index() -> dict[str, Figure]:
    return papers.collect("figures", lambda figure: figure.name, _prefixed)


#: every figure by name, in the papers' order (index entries: title, options, where the recipe
#: is); rebuilt when a paper is registered
FIGURES: papers.View = papers.View(_index)


def figure_order(name: str) -> tuple[int, list[str | int]]:
    """Sort key of figure names: papers in the manifests' order, then the name with its numbers compared
    as numbers (he2025-e2 before he2025-e10, musat2025-fig9-11 before musat2025-fig12-14). Every
    list of figures a reader sees (the page, the docs' claims tables, `reproduce --list`) is
    sorted by it, and `reproduce --all` / `--paper` compute in this order (`batch.select`)."""
    paper = name.split("-")[0]
    order = papers.names()
    rank = order.index(paper) if paper in order else len(order)
    return rank, [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def get(name: str) -> Figure:
    """The index entry of figure `name` (its module is not imported)."""
    if name not in FIGURES:
        raise ValueError(f"unknown figure {name!r}; `fastattn reproduce --list` shows the "
                         f"{len(FIGURES)} available: {', '.join(sorted(FIGURES))}")
    return FIGURES[name]


def device_type(device: torch.device | str | None) -> str | None:
    """What `reproduce --device` is recorded as (a run's identity, a figure's JSON, a folder's
    manifest): the device's type ("cuda"; "cpu" under the Triton interpreter), None without one
    (the C++ core). Not its index: `cuda:1` runs the same kernels as `cuda:0`."""
    return None if device is None else torch.device(device).type


def _build(spec: RunSpec) -> ICLModel:
    model = build_model(spec.model)
    if spec.init is not None:
        model.load_flat(np.asarray(spec.init, dtype=np.float64))
    return model


def _identity(spec: RunSpec, model: ICLModel, device: str | None = None) -> dict[str, Any]:
    """The config a finished run of `spec` records (`Trajectory.config`), as plain JSON data: the
    trainer's {"task", "model", "train"} (the train config as the trainer resolves it), plus the
    hash of a hand-made `init` and the `objective` override when the spec has them. Two specs
    with equal identities compute the same run.

    `device` (`reproduce --device`): a run of kind "batched" steps there with the Triton kernels,
    and its identity says so (`step_device`: the device's type, "cuda"): its numbers differ from
    the C++ core's in rounding, so neither engine's record stands in for the other's, in a
    figure's folder or in the shared store; the other kinds train as without `device` and keep
    their identity."""
    cfg = dataclasses.replace(spec.train, progress=False)
    if cfg.method in ("sgd", "adam"):          # the sampler it resolves to (exact runs: as given)
        cfg = dispatch(model, spec.task, cfg)[0]
    out = run_config(spec.task, model, cfg)
    if spec.init is not None:
        out["init_sha256"] = hashlib.sha256(np.asarray(spec.init, dtype=np.float64).tobytes()
                                            ).hexdigest()
    if spec.objective is not None:
        out["objective"] = objective_config(spec.objective)
    if device is not None and trainer_kind(spec, model) == "batched":
        out["step_device"] = device_type(device)
    return json.loads(json.dumps(to_jsonable(out)))


def _cached(spec: RunSpec, model: ICLModel, identity: dict[str, Any], path: Path,
            output: Output | None = None) -> Trajectory | None:
    """The finished record at `path` of this very run (same identity, not interrupted), or None;
    with `output`, only a record fastattn wrote there (in the folder's manifest, unchanged)."""
    files = [path.with_name(path.name + suffix) for suffix in (".json", ".npz")]
    if not files[0].exists() or (output is not None and not output.complete(files)):
        return None
    try:
        traj = Trajectory.load(path)
    except (RecordError, OSError, KeyError, ValueError):
        return None               # half-written by another version, or foreign: train again
    if traj.status == "interrupted" or traj.config != identity:
        return None
    model.load_flat(traj.final_params)
    return traj


def _train(specs: list[RunSpec], models: list[ICLModel],
           on_done: Callable[[int, Trajectory], None] | None = None,
           device: torch.device | str | None = None) -> list[Trajectory]:
    """Train runs whose kinds may share one call: `train_many` (which batches the runs the fused
    He step can take together, on `device` when given), or the exact flow of a spec's `objective`
    override. Each run is handed to `on_done(index, trajectory)` as it ends."""
    if specs[0].objective is None:
        return train_many(models, [s.task for s in specs],
                          [dataclasses.replace(s.train, progress=False) for s in specs], on_done,
                          device=device)
    (spec,), (model,) = specs, models
    cfg = dataclasses.replace(spec.train, progress=False)
    objective = spec.objective
    if objective.size() != model.flat_size():
        raise ValueError(f"run {spec.label!r}: its objective has {objective.size()} parameters, "
                         f"the model {spec.model.kind!r} {model.flat_size()}: give an objective "
                         "over the model's flat layout")
    with torch_threads(cfg.threads or 1):
        (traj,), _ = flow.population_runs([model], [spec.task], cfg, objs=[objective])
    traj.config = run_config(spec.task, model, cfg)
    traj.meta = environment()
    traj.backend = {"engine": f"exact flow of the figure's objective ({type(objective).__name__})"}
    if on_done is not None:
        on_done(0, traj)
    return [traj]


def run_specs(specs: list[RunSpec], records: str | Path | None = None,
              store: RunStore | None = None, output: Output | None = None,
              device: torch.device | str | None = None) -> list[Run]:
    """Train `specs` through `fastattn.training.train_many` and return the finished runs in order.

    `records`: a folder of run records (`reproduce`'s `DIR/NAME`): a run whose record
    `records/<label>` exists with the same identity (task, model, resolved train config, init,
    objective; not interrupted) is loaded instead of trained, and every run trained is written
    there as soon as its call ends, so a figure interrupted mid-way resumes from its finished
    runs. Runs of kind "batched" are trained in one call (the fused step batches those that
    share their options); the others one at a time. A run that comes back interrupted (Ctrl-C)
    raises KeyboardInterrupt once its call's records are written.

    `store` (needs `records`): the records shared by the figures of one output folder
    (`experiments/store.py`): a run found there is linked into `records` instead of trained,
    every run trained is published there, and a run another process is training (its lock is
    held) is set aside and taken from the store once that process lets go of it.

    `output` (with `records`): the output folder's manifest (`fastattn.outputs`): only records
    fastattn wrote are reused or replaced, and every record written is entered there.

    `device` (e.g. "cuda"): the runs of kind "batched" step on that GPU with the fused He step's
    Triton kernels (`train_many(device=...)`; their records' `backend` names the engine and the
    device) and are identified as such (`_identity`: a C++ core record is not reused for them,
    nor theirs for a run without `device`). The other kinds have no GPU step and train as
    without `device` (their records name their engine): a figure that mixes kinds runs whole.
    """
    labels = [s.label for s in specs]
    if len(set(labels)) != len(labels):
        raise ValueError(f"run labels must be unique within a figure; got {labels}")
    folder = Path(records) if records is not None else None
    if store is not None and folder is None:
        raise ValueError("run_specs: a store shares run records; give the figure's records folder")
    models = [_build(s) for s in specs]
    identities = [_identity(s, m, device) for s, m in zip(specs, models, strict=True)]
    trajs: list[Trajectory | None] = [None] * len(specs)
    if folder is not None:
        trajs = [_cached(s, m, i, folder / s.label, output)
                 for s, m, i in zip(specs, models, identities, strict=True)]

    def shared(k: int) -> bool:
        """Take run k from the store into the figure's folder, if the store has it."""
        if store is None:
            return False
        path = store.record(identities[k])
        trajs[k] = _cached(specs[k], models[k], identities[k], path, store.output)
        if trajs[k] is not None:
            link_record(path, folder / specs[k].label, output)
        return trajs[k] is not None

    def train(call: list[int]) -> None:
        if not call:
            return

        def keep(j: int, traj: Trajectory) -> None:
            """Record run call[j] as soon as it ends: a batched call of several groups keeps the
            groups that finished before a Ctrl-C."""
            k = call[j]
            traj.config = identities[k]
            trajs[k] = traj
            if folder is not None:
                base = folder / specs[k].label
                files = [base.with_name(base.name + suffix) for suffix in (".npz", ".json")]
                for path in files if output is not None else ():
                    output.check_writable(path)
                with signals_held():        # the files and their manifest entries together
                    traj.save(base)
                    if output is not None:
                        output.record(*files)
                if store is not None and traj.status != "interrupted":
                    store.publish(identities[k], folder / specs[k].label)

        try:
            _train([specs[k] for k in call], [models[k] for k in call], keep, device)
        except RunsInterrupted:              # the runs that ended are kept; the rest never started
            pass
        # the trainers end a run on Ctrl-C with status "interrupted" (its record kept); the
        # figure stops there rather than summarising a half-trained run
        cut = [specs[k].label for k in call if trajs[k] is not None
               and trajs[k].status == "interrupted"]
        never = [specs[k].label for k in call if trajs[k] is None]
        if cut or never:
            raise KeyboardInterrupt(f"interrupted during run {', '.join(cut)}"
                                    + (f"; not started: {', '.join(never)}" if never else ""))

    todo = [k for k, t in enumerate(trajs) if t is None and not shared(k)]
    batched = [k for k in todo if trainer_kind(specs[k], models[k]) == "batched"]
    calls = [batched if k in batched else [k] for k in todo if k not in batched[1:]]
    elsewhere: list[int] = []          # runs another process holds: taken from the store at the end
    for call in calls:
        with contextlib.ExitStack() as held:
            mine = []
            for k in call:
                if store is None or held.enter_context(store.claim(identities[k], wait=False)):
                    if not shared(k):            # not finished by another process meanwhile
                        mine.append(k)
                else:
                    elsewhere.append(k)
            train(mine)
    for k in elsewhere:
        with store.claim(identities[k], wait=True):
            if not shared(k):                    # its process stopped before finishing it
                train([k])
    return [Run(s, t, m) for s, t, m in zip(specs, trajs, models, strict=True)]


def reproduce(name: str, out: str | Path, quick: bool = False, resume: bool = True,
              share: bool | None = None, device: torch.device | str | None = None,
              **options: Any) -> dict[str, Any]:
    """Run figure `name`, write `out/NAME.png`, `out/NAME.json` and `out/NAME/<run>.{json,npz}`.

    `resume`: reuse the run records already in `out/NAME/` that are the same runs (`run_specs`),
    and delete those of runs the figure no longer lists; False (--overwrite): train every run
    again into `out/.NAME.new/` beside the old result, and swap it in only once the figure is
    complete (an interrupted or failed overwrite leaves the old result whole).
    `share`: take runs that other figures of `out` finished from the shared store `out/runs/`
    (`experiments/store.py`) and publish the runs trained here to it; False: neither; None
    (default): as `resume` (`reproduce --all --overwrite` gives False and True: it empties the
    store first, so every run is trained again, once).
    `device` (`reproduce --device`): the runs of kind "batched" step on that GPU (`run_specs`);
    the figure's JSON says so (`device`: the device's type, or None for the C++ core), and each
    run's entry there names its engine.

    The folder's manifest (`fastattn.outputs`) lists what fastattn wrote: nothing else there is
    deleted or replaced, and no symlink is followed out of `out` (both refused in one line, before
    any training). Returns the JSON document (also written to disk).
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
    out = Path(out)
    output = Output(out, "reproduce")
    output.check_kind()
    specs = recipe.runs(quick, **options)
    final, png, js = output.path(name), output.path(f"{name}.png"), output.path(f"{name}.json")
    folder = final if resume else output.path(f".{name}.new")
    if final.exists() and not final.is_dir():
        raise OutputError(f"{final} is a file, where the figure's run records go: move it away or "
                          "give another --out")
    for path in (png, js):
        output.check_writable(path)
    if not resume:
        for stale in (folder, output.path(f".{name}.old")):   # an earlier overwrite, cut short
            _refuse_foreign(stale, output.remove_tree(stale))
        if final.is_dir():
            _refuse_foreign(final, [p for p in final.rglob("*")
                                    if not p.is_dir() and not output.owns(p)])
    elif final.is_dir():            # records of runs this figure no longer lists (fastattn's only)
        keep = {f"{s.label}{suffix}" for s in specs for suffix in (".json", ".npz")}
        _refuse_foreign(final, [final / n for n in sorted(keep) if (final / n).exists()
                                and not output.owns(final / n)])
        for path in final.iterdir():
            if path.name not in keep and not path.is_symlink() and path.is_file():
                output.remove(path)
    store = RunStore.of(out) if (resume if share is None else share) else None
    drawn = png if resume else output.path(f".{name}.png.new")
    output.check_writable(drawn)
    try:
        runs = run_specs(specs, folder, store, output, device)
        summary = summarize(recipe, runs, quick)
        records = {}
        for run in runs:
            records[run.spec.label] = {
                "record": f"{name}/{run.spec.label}.json",
                "kind": trainer_kind(run.spec, run.model), "group": run.spec.group,
                "engine": (run.traj.backend or {}).get("engine"),
                "status": run.traj.status, "final_loss": run.traj.final_loss,
                "n_evals": run.traj.n_evals, "wall_time": run.traj.wall_time,
                "config": run.traj.config}
        fig = recipe.plot(runs, summary)
        # a quick figure says so, and what it shrank, where a reader of the picture or page looks
        title, caption = figure.title, recipe.caption
        if quick:   # the PNG's caption (it wraps) says QUICK; its title line does not wrap: page only
            title, caption = f"{title} [QUICK]", f"{quick_note(recipe, **options)}. {caption}"
        plots.suptitle(fig, figure.title, caption)
        plots.save(fig, drawn, output)
        doc = {"name": name, "title": title, "caption": caption, "quick": quick,
               "options": options, "device": device_type(device), "png": png.name,
               "wall_time": time.perf_counter() - start, "summary": summary, "runs": records,
               "meta": environment()}
        text = json.dumps(to_jsonable(doc), indent=2, allow_nan=True)
        if resume:
            output.write(js, lambda fh: fh.write(text), "w")
            return doc
        old = output.path(f".{name}.old")
        with signals_held():       # the swap: a few renames, not cut in the middle by Ctrl-C
            output.remove(js)       # from here until the new JSON the figure is not finished
            if final.is_dir():
                output.rename(final, old)
            if folder.is_dir():
                output.rename(folder, final)
            output.rename(drawn, png)
            output.write(js, lambda fh: fh.write(text), "w")
    except BaseException:
        if not resume:              # an overwrite cut short: the old result stays, nothing beside
            output.remove_tree(folder)
            output.remove(drawn)
        raise
    output.remove_tree(old)
    return doc


def _refuse_foreign(folder: Path, left: list[Path]) -> None:
    if left:
        raise OutputError(f"{folder} holds {left[0].name}" + (f" and {len(left) - 1} more files"
                          if len(left) > 1 else "") + " that fastattn did not write: move them "
                          "away or give another --out (nothing was changed)")


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
