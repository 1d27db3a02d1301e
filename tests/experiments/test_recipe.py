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


def test_a_quick_figure_says_so_in_its_title_and_caption(tmp_path):
    from fastattn.experiments import registry

    doc = registry.reproduce("zhang2025-fig14", tmp_path, quick=True)
    assert doc["title"].endswith("[QUICK]")
    assert doc["caption"].startswith("QUICK") and "2 of 6 runs" in doc["caption"]
