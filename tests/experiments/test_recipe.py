"""fastattn/experiments/recipe.py: a quick figure says what --quick shrank."""

from __future__ import annotations

from fastattn.experiments.recipe import Recipe, RunSpec, quick_note
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
