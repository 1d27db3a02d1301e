"""fastattn/experiments/recipe.py: a quick figure says what --quick shrank."""

from __future__ import annotations

from fastattn.experiments.recipe import Recipe, RunSpec, _differs, quick_note
from fastattn.models import MergedConfig
from fastattn.tasks import LinearRegression
from fastattn.training import TrainConfig


def _runs(quick: bool) -> list[RunSpec]:
    task = LinearRegression(4, context=31)
    seeds = range(2 if quick else 3)
    return [RunSpec(f"seed{s}", task, MergedConfig(4, 8, init_seed=s),
                    TrainConfig(method="sgd", lr=0.1, steps=40 if quick else 300)) for s in seeds]


def test_quick_note_names_what_quick_shrank():
    recipe = Recipe("caption", _runs, lambda runs: {}, lambda runs, summary: None)
    note = quick_note(recipe)
    assert note.startswith("QUICK")
    assert "2 of 3 runs" in note and "steps 300 → 40" in note
    assert "lr" not in note                   # a setting both forms share is not listed
    same = Recipe("caption", lambda quick: _runs(False), lambda runs: {}, lambda runs, summary: None)
    assert quick_note(same) == "QUICK (nothing shrunk: the quick runs are the full runs)"


def test_a_quick_figure_says_so_in_its_title_and_caption(tmp_path):
    from fastattn.experiments import registry

    doc = registry.reproduce("zhang2025-fig14", tmp_path, quick=True)
    assert doc["title"].endswith("[QUICK]")
    assert doc["caption"].startswith("QUICK") and "2 of 6 runs" in doc["caption"]


def test_fig14_runs_are_the_merged_full_preset_plus_the_figure_s_own_values(monkeypatch):
    """Issue 39: Fig. 14's setting lived in the preset and again in the recipe. The recipe now
    reads the pair's preset (`recipe.preset_run`): its runs resolve as `train --task
    linear_regression --model merged_full` does, and a change of the preset reaches them."""
    import dataclasses

    from fastattn.configs import MODEL_CARDS, resolve
    from fastattn.experiments.zhang2025 import fig14

    (spec, *_) = fig14.runs(False)
    r = resolve("linear_regression", "merged_full")
    assert (spec.task.dim, spec.task.context, spec.model.heads, spec.model.init_scale) == \
        (r.task["dim"], r.task["context"], r.model["heads"], r.model["init_scale"])
    assert (spec.train.method, spec.train.lr, spec.train.steps, spec.train.dataset_size) == \
        (r.train["method"], r.train["lr"], r.train["steps"], r.train["dataset_size"])
    card = MODEL_CARDS["merged_full"]
    (preset,) = card.presets["linear_regression"]
    moved = dataclasses.replace(preset, train=dict(preset.train, lr=0.1),
                                model=dict(preset.model, heads=3))
    monkeypatch.setitem(MODEL_CARDS, "merged_full", dataclasses.replace(
        card, presets={"linear_regression": (moved,)}))
    assert all(s.train.lr == 0.1 and s.model.heads == 3 for s in fig14.runs(True))


def _same(a, b) -> bool:
    """Equal configs: dataclasses compared field by field, arrays by their contents."""
    import dataclasses

    if dataclasses.is_dataclass(a) and type(a) is type(b):
        return all(not _differs(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    return not _differs(a, b)


def restated_overrides(specs: list[RunSpec]) -> list[str]:
    """The overrides of `specs` (runs of one figure) that equal what their pair's preset gives
    without them in every run that states them: a setting the recipe writes a second time."""
    from fastattn.configs import resolve
    from fastattn.experiments.recipe import TRAINER_ONLY

    same: dict[tuple[str, str, str, str], bool] = {}
    for spec in specs:
        task, model, given = spec.preset
        # no preset has the trainer-only fields: they restate nothing
        given = {t: {k: v for k, v in vs.items() if t != "train" or k not in TRAINER_ONLY}
                 for t, vs in given.items()}
        for target, values in given.items():
            for name, value in values.items():
                if (target, name) == ("train", "atol") and value == values.get("rtol", 0) * 1e-2:
                    continue        # set by a rule from rtol (zhang2025.settings.rk45), not written

                rest = {t: {k: v for k, v in vs.items() if (t, k) != (target, name)}
                        for t, vs in given.items()}
                preset = getattr(resolve(task, model, rest), target).get(name)
                key = (task, model, target, name)
                same[key] = same.get(key, True) and not _differs(preset, value)
    return [f"{t} × {m}: {target}.{name}" for (t, m, target, name), s in same.items() if s]


def test_every_figure_s_runs_are_its_pairs_preset_plus_overrides_that_differ_from_it():
    """Issue 39: a paper's setting is written once, in its pair's preset. Every run of every
    figure (quick and full) is `preset_run`'s: its task, model and trainer are the resolution of
    (pair, overrides) that the spec records, and no override restates the preset (equals, in
    every run of the figure that gives it, the value the preset gives without it)."""
    from fastattn.experiments import registry
    from fastattn.experiments.recipe import preset_run

    problems = []
    for name, figure in registry.FIGURES.items():
        recipe = figure.load()
        specs = recipe.runs(True) + recipe.runs(False)
        for spec in specs:
            if spec.preset is None:
                problems.append(f"{name} {spec.label}: not built from a preset (preset_run)")
                continue
            task, model, given = spec.preset
            again = preset_run(spec.label, task, model, **given)
            if not all(_same(getattr(spec, part), getattr(again, part))
                       for part in ("task", "model", "train")):
                problems.append(f"{name} {spec.label}: differs from its preset plus overrides")
        problems += [f"{name}: {r} restates the preset" for r in
                     restated_overrides([s for s in specs if s.preset is not None])]
    assert not problems, "\n".join(problems)
