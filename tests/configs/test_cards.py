"""The family cards (fastattn.configs): every registered family has one, its options are its
config's fields, its presets set only its options, every pair builds and every task runs with its
defaults; the cards import no torch."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

import fastattn.configs
from fastattn.cli import main
from fastattn.configs import MODEL_CARDS, TASK_CARDS, options_for, pairs, resolve
from fastattn.models import MODELS
from fastattn.tasks import TASKS
from fastattn.training import rebuild_run
from fastattn.training.build import build_default


def test_every_family_has_a_card_and_every_card_a_family():
    assert set(TASK_CARDS) == set(TASKS)
    assert set(MODEL_CARDS) == set(MODELS)


@pytest.mark.parametrize("kind", sorted(MODEL_CARDS))
def test_a_model_card_s_options_are_its_config_s_fields(kind):
    card = MODEL_CARDS[kind]
    fields = {f.name for f in dataclasses.fields(MODELS[kind].config)}
    assert {f.name for f in card.fields} | set(card.fixed) | set(card.from_task) <= fields
    for task in card.tasks:
        names = {f.name for f in card.fields}
        for preset in card.presets[task]:
            assert set(preset.model) <= names, (kind, task)


@pytest.mark.parametrize("kind", sorted(TASK_CARDS))
def test_a_task_card_s_presets_set_only_its_options(kind):
    names = {f.name for f in TASK_CARDS[kind].fields}
    for model in pairs()[kind]:
        for preset in MODEL_CARDS[model].presets[kind]:
            assert set(preset.task) <= names and set(preset.when) <= names, model


@pytest.mark.parametrize(("task", "model"), [(t, m) for t, ms in pairs().items() for m in ms])
def test_every_pair_builds_its_preset(task, model):
    t, m, _cfg = build_default(task, model)
    assert (t.kind, m.kind) == (task, model)
    token_tasks = ("induction_tokens", "modular_addition", "repeated_tokens")   # dim: the vocabulary
    assert {o.name for o in options_for(task, model)} >= {"task", "model", "method", "dim"} - \
        ({"dim"} if task in token_tasks else set())


def test_every_task_runs_with_its_defaults(tmp_path, capsys):
    """Issue 28 item 1: `--task multitask_regression` with its defaults failed ("supports[1] must
    be distinct coordinates in 0..3"). Each task with its first model and the preset's values, but
    a short horizon (--steps 2, or --t-end 1 for flows)."""
    for task, models in pairs().items():
        r = resolve(task, models[0])
        short = ["--t-end", "1"] if r.train["method"] == "flow" else ["--steps", "2"]
        if r.train["method"] == "task_sgd":
            short = ["--steps", "2", "--batch-size", "4"]
        assert main(["train", "--task", task, "--model", models[0], *short, "--quiet",
                     "--out", str(tmp_path), "--name", task]) == 0, capsys.readouterr().err
        record = json.loads((tmp_path / f"{task}.json").read_text())
        assert record["meta"]["preset"]["name"] == r.preset.name
        rebuilt = rebuild_run(record["config"])          # Musat's models too (now in MODELS)
        assert (rebuilt[0].kind, rebuilt[1].kind) == (task, models[0])


def test_info_lists_every_pair_with_its_methods(capsys):
    assert main(["info", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["pairs"]
    assert {t: tuple(ms) for t, ms in report.items()} == pairs()
    assert report["linear_regression"]["separate"]["methods"] == ["flow", "gd", "sgd", "adam"]
    assert report["linear_regression"]["multihead_softmax"]["methods"] == ["sgd", "adam"]
    assert "task_sgd" in report["wishart_tasks"]["linear_transformer"]["methods"]
    assert report["induction"]["three_param"]["exact"] is True
    assert main(["info"]) == 0
    text = capsys.readouterr().out
    for model in MODELS:
        assert f"    {model} " in text


def test_the_cards_import_no_torch_and_no_model_task_or_trainer_module():
    """The layers above may import the cards; the cards import nothing above them at module level
    (`fastattn --help` reads them; build.py imports the families only when called)."""
    root = Path(fastattn.configs.__file__).parent
    for path in root.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                assert not name.startswith(("torch", "fastattn.models", "fastattn.tasks",
                                            "fastattn.training", "fastattn.population", "numpy")), \
                    (path.name, name)


def test_build_default_takes_task_and_model_options():
    """Issue 39: `build_default(task, model, **given)` took `task=`/`model=` as its kinds (TypeError:
    multiple values for argument 'task'); the kinds are positional-only."""
    t, m, cfg = build_default("linear_regression", "separate", task={"dim": 3},
                              model={"heads": 2}, train={"t_end": 7.0})
    assert (t.dim, m.config.heads, cfg.t_end) == (3, 2, 7.0)


def test_info_says_where_the_preset_is_not_covered_by_the_exact_objective(capsys):
    """Issue 39: `info` advertised flow for every pair with a registered objective. Sander's AUG-1
    preset is Fig. 5's Haar contexts, which Prop. 2's closed form does not cover (its `exact_for`):
    info lists the sampled methods there with the reason, one line."""
    assert main(["info", "--json"]) == 0
    aug = json.loads(capsys.readouterr().out)["pairs"]["autoregressive"]["aug"]
    assert aug["methods"] == ["sgd", "adam"] and aug["exact"] is False
    assert "--context-dist haar has no closed form" in aug["not_exact"]
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "no exact flow at the preset: AUG-1's exact loss is Prop. 2's" in out


def test_info_names_a_card_without_a_model_class(monkeypatch, capsys):
    """Issue 39: a model card registered without its model class made `info` fail with a raw
    KeyError; it lists the pair with no methods and the one-line fix."""
    import dataclasses

    monkeypatch.setitem(MODEL_CARDS, "orphan", dataclasses.replace(MODEL_CARDS["merged"], kind="orphan"))
    assert main(["info", "--json"]) == 0
    orphan = json.loads(capsys.readouterr().out)["pairs"]["linear_regression"]["orphan"]
    assert orphan["methods"] == [] and "register one with fastattn.models.register_model" in \
        orphan["not_exact"]
