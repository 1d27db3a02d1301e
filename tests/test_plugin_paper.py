"""Issue 39's acceptance: a paper defined outside the package is served with no edit to it.

A sixth paper, "toy2026", lives in a temporary package (`toy_paper`, written by the fixture):
a task family (linear regression under its own kind), a model (H scalars on the plug-in
estimator, ŷ = s Σ_h v_h · βᵀx_q), an exact objective, a closed form, one figure with one claim,
one planted bug in its own objective, and no sweep hooks. It is installed the way a distribution
would be, by an entry point of the group `fastattn.papers` (`importlib.metadata.entry_points` is
replaced). The test walks the
checklist of docs/configs.md ("Adding a paper"): the paper appears in `train --help`, `fastattn
info`, `MODELS` and `TASKS`, trains with its preset, sweeps, reproduces its figure and shows its
claim on the report.

The toy's closed form (Λ = I, w ~ N(0, I), no noise, context N, c = s Σ_h v_h): with
β = (1/N) Σ_n y_n x_n, E‖β‖² = D (1 + (D + 1)/N) and E wᵀβ = D, so
L(c) = D − 2cD + c² D (1 + (D + 1)/N), minimised at c* = N/(N + D + 1) with
L* = D (D + 1)/(N + D + 1): 12/13 at the preset's D = 3, N = 9. The figure checks the flow's
final loss against it and the trained model's sampled loss (Monte Carlo) against both.
"""

from __future__ import annotations

import json
import sys
import textwrap
from importlib import metadata

import pytest
from figure_checklist import theory_overlay

import fastattn.cli_options
import fastattn.sweep  # noqa: F401
from fastattn import papers, plots
from fastattn.cli import main
from fastattn.configs import MODEL_CARDS, TASK_CARDS
from fastattn.experiments.registry import FIGURES
from fastattn.models import MODELS
from fastattn.population import registry as objectives
from fastattn.tasks import TASKS

#: the toy's optimum at its preset (D = 3, N = 9): D (D + 1)/(N + D + 1)
OPTIMUM = 3 * 4 / 13

FILES = {
    "__init__.py": '''
        """The toy paper's manifest: import paths only."""
        from fastattn.papers import Paper

        PAPER = Paper(
            "toy2026", "A toy paper: the shrunk plug-in estimator",
            cards=("toy_paper.cards",), tasks=("toy_paper.family",), models=("toy_paper.family",),
            objectives=("toy_paper.objective",), theory=("toy_paper.theory",),
            figures="toy_paper.figures:FIGURES", claims="toy_paper.figures:CLAIMS",
            mutations="toy_paper.mutations:MUTATIONS")
    ''',
    "mutations.py": '''
        from fastattn.experiments.mutations import Mutation

        MUTATIONS = (
            Mutation("toy-context-term", "objective's term", "toy_paper.objective",
                     "k = 1 + (d + 1) / self.context", "k = 1 + d / self.context",
                     ("toy2026-fig1",), "the objective's E‖β‖² with D/N for (D + 1)/N", ci=True),
        )
    ''',
    "theory.py": '''
        def optimum(dim, context):
            """(c*, L*) of the shrunk plug-in estimator (the test module's docstring)."""
            return context / (context + dim + 1), dim * (dim + 1) / (context + dim + 1)
    ''',
    "cards.py": '''
        from fastattn.configs import (Field, ModelCard, Preset, TaskCard, register_model_card,
                                      register_task_card)
        from fastattn.configs.base import set_values
        from fastattn.configs.common import HEADS, INIT_SEED

        register_task_card(TaskCard(
            "toy_regression", "toy2026", "y = wᵀx, x ~ N(0, I), w ~ N(0, I); predict the query's y",
            (Field("dim", int, "token dimension D", 3), Field("context", int, "context length N", 9),
             Field("data_seed", int, "seed of the training data stream", 0)), set_values))

        PRESET = Preset("toy2026", "the toy's setting: D=3, N=9, H=2, s=1/2, exact flow to t=200",
                        task={"dim": 3, "context": 9},
                        model={"heads": 2, "init_scale": 0.1, "shrink": 0.5},
                        train={"method": "flow", "t_end": 200.0})

        register_model_card(ModelCard(
            "toy_shrunk", "toy2026", "H scalars on the plug-in estimator",
            (HEADS, INIT_SEED, Field("init_scale", float, "std of v"),
             Field("shrink", float, "the estimator's factor s", 1.0)),
            lambda c: (("v", (c.heads,)),), {"toy_regression": (PRESET,)}))
    ''',
    "family.py": '''
        from dataclasses import dataclass
        from typing import ClassVar

        from fastattn.models import BaseModelConfig, ICLModel, register_model
        from fastattn.tasks import LinearRegression, register_task


        @register_task
        @dataclass(frozen=True)
        class ToyRegression(LinearRegression):
            kind: ClassVar[str] = "toy_regression"


        @dataclass(frozen=True)
        class ToyConfig(BaseModelConfig):
            kind = "toy_shrunk"
            shrink: float = 1.0


        @register_model
        class ToyShrunk(ICLModel):
            """ŷ = s Σ_h v_h · βᵀx_q, β = (1/N) Σ_n y_n x_n."""

            config_class = ToyConfig
            PARAM_ORDER = ("v",)

            def _init_parameters(self, g):
                self.v = self._normal(g, (self.config.heads,), self.config.init_scale ** 2)

            def forward(self, x, y, x_q, lengths=None):
                beta = (y[..., None] * x).mean(1)                       # [B, D]
                return self.v.sum() * self.config.shrink * (beta * x_q).sum(-1)
    ''',
    "objective.py": '''
        import numpy as np

        from fastattn.population import Objective, register_objective


        class ToyObjective(Objective):
            """L(v) = D − 2cD + c² D k, c = s Σ v, k = 1 + (D + 1)/N."""

            def __init__(self, dim, context, heads, shrink):
                super().__init__()
                self.dim, self.context, self.heads, self.shrink = dim, context, heads, shrink

            def size(self):
                return self.heads

            def loss_grad(self, params):
                d, s = self.dim, self.shrink
                k = 1 + (d + 1) / self.context
                c = s * float(np.sum(params))
                loss = d - 2 * c * d + c * c * d * k
                return loss, np.full(self.heads, -2 * s * d + 2 * s * c * d * k)


        @register_objective("toy_regression", "toy_shrunk", exact_for=lambda task, config: None)
        def toy_objective(task, model):
            return ToyObjective(task.dim, task.context, model.config.heads, model.config.shrink)
    ''',
    "figures.py": '''
        from matplotlib.figure import Figure as Drawing

        from fastattn.experiments.claims import Claim
        from fastattn.experiments.recipe import Figure, Recipe, RunSpec
        from fastattn.training.build import build_default
        from toy_paper.theory import optimum


        def runs(quick):
            task, model, cfg = build_default("toy_regression", "toy_shrunk")
            return [RunSpec("flow", task, model.config, cfg)]


        def summarize(runs):
            (run,) = runs
            task = run.spec.task
            batch = task.sample(20_000, 10**6)
            sampled = float(task.loss(run.model, batch, "query"))
            return {"final_loss": run.traj.final_loss, "theory_loss": optimum(task.dim, task.context)[1],
                    "sampled_loss": sampled}


        def plot(runs, summary):
            fig = Drawing()
            ax = fig.subplots()
            ax.loglog(runs[0].traj.time[1:], runs[0].traj.loss[1:])
            ax.axhline(summary["theory_loss"], ls="--", label="L* = D(D+1)/(N+D+1)")
            return fig


        RECIPE = Recipe("the flow's loss and the optimum D(D+1)/(N+D+1)", runs, summarize, plot)
        FIGURES = (Figure("toy2026-fig1", "Toy 2026, Fig. 1: the flow reaches the optimum",
                          "toy_paper.figures:RECIPE", theory="L*"),)
        CLAIMS = (Claim("toy2026", "optimum", "the flow reaches L* = D(D+1)/(N+D+1)",
                        12 / 13, figure="toy2026-fig1", field="summary.final_loss", tolerance=1e-6,
                        reason="the flow to t=200 converged (rate ≈ 2), rtol 1e-8",
                        source="derived", where="the toy's closed form"),)
    ''',
}


@pytest.fixture
def toy_paper(tmp_path, monkeypatch):
    """The toy paper written outside the package and installed by an entry point; every registry
    it adds to is restored afterwards."""
    root = tmp_path / "site"
    (root / "toy_paper").mkdir(parents=True)
    for name, text in FILES.items():
        (root / "toy_paper" / name).write_text(textwrap.dedent(text).lstrip())
    monkeypatch.syspath_prepend(str(root))
    registries = (MODELS, TASKS, MODEL_CARDS, TASK_CARDS, objectives._FACTORIES)
    saved = [dict(r) for r in registries]
    monkeypatch.setattr(papers, "REGISTRY", papers._Registry())
    entry = metadata.EntryPoint("toy2026", "toy_paper:PAPER", papers.GROUP)
    installed = metadata.entry_points

    def entry_points(**selection):
        return [entry] if selection.get("group") == papers.GROUP else installed(**selection)

    monkeypatch.setattr(papers.metadata, "entry_points", entry_points)
    yield
    for registry, before in zip(registries, saved, strict=True):
        dict.clear(registry)
        dict.update(registry, before)
    for name in [m for m in sys.modules if m == "toy_paper" or m.startswith("toy_paper.")]:
        del sys.modules[name]


def test_the_paper_is_listed_by_every_door(toy_paper, capsys):
    assert papers.names()[-1] == "toy2026"
    assert "toy_paper.family" not in sys.modules            # imported when first needed
    assert MODELS["toy_shrunk"].model.__module__ == "toy_paper.family"
    assert TASKS["toy_regression"].__module__ == "toy_paper.family"
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    assert "--task toy_regression (toy2026): --model toy_shrunk" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["train", "--task", "toy_regression", "--model", "toy_shrunk", "--help"])
    part = capsys.readouterr().out
    assert "\nmodel toy_shrunk (toy2026)" in part
    assert "--shrink SHRINK: the estimator's factor s (default: 0.5)" in part
    assert "with --task toy_regression: the toy's setting" in part
    assert main(["info"]) == 0
    line = next(li for li in capsys.readouterr().out.splitlines() if "toy_shrunk" in li)
    assert "exact + sampled" in line and "preset toy2026" in line
    assert main(["reproduce", "--list"]) == 0
    assert "toy2026-fig1" in capsys.readouterr().out


def test_the_paper_trains_reproduces_and_reports(toy_paper, tmp_path, capsys, monkeypatch):
    assert main(["train", "--task", "toy_regression", "--model", "toy_shrunk", "--quiet",
                 "--out", str(tmp_path / "train")]) == 0
    record = json.loads((tmp_path / "train" / "run.json").read_text())
    assert record["meta"]["preset"]["name"] == "toy2026"
    assert record["config"]["model"]["shrink"] == 0.5
    assert record["final_loss"] == pytest.approx(OPTIMUM, rel=1e-6)

    out = tmp_path / "figures"
    saved, save = [], plots.save
    monkeypatch.setattr(plots, "save", lambda fig, path, *a: saved.append(fig) or save(fig, path, *a))
    assert main(["reproduce", "--paper", "toy2026", "--quick", "--out", str(out)]) == 0
    assert theory_overlay(saved[0], FIGURES["toy2026-fig1"].theory) == []
    summary = json.loads((out / "toy2026-fig1.json").read_text())["summary"]
    assert summary["theory_loss"] == pytest.approx(OPTIMUM, rel=1e-12)
    assert summary["sampled_loss"] == pytest.approx(OPTIMUM, rel=0.05)   # 20 000 sequences
    rows = json.loads((out / "claims.json").read_text())
    row = next(r for r in (rows["claims"] if isinstance(rows, dict) else rows)
               if (r["paper"], r["key"]) == ("toy2026", "optimum"))
    assert row["status"] == "reproduced"
    assert 'data-paper="toy2026"' in (out / "index.html").read_text()


def test_the_paper_sweeps_with_explicit_values(toy_paper, tmp_path):
    from fastattn.sweep import read_table, run_sweep

    run_sweep({"task": "toy_regression", "model": "toy_shrunk", "dim": 3, "context": 9,
               "heads": 2, "t_end": 200.0}, tmp_path, workers=0, progress=False)
    (row,) = read_table(tmp_path).to_dict("records")
    assert row["final_loss"] == pytest.approx(OPTIMUM, rel=1e-6)


def test_the_paper_sweeps_with_its_preset(toy_paper, tmp_path):
    from fastattn.sweep import read_table, run_sweep

    run_sweep({"task": "toy_regression", "model": "toy_shrunk"}, tmp_path, workers=0,
              progress=False)
    (row,) = read_table(tmp_path).to_dict("records")
    assert (row["dim"], row["context"], row["heads"]) == (3, 9, 2)
    assert row["final_loss"] == pytest.approx(OPTIMUM, rel=1e-6)


def test_the_paper_plants_bugs_in_its_own_modules(toy_paper, tmp_path):
    """A planted bug names its module by import path, so an installed paper's bug is planted in
    a copy of its own package (beside fastattn's copy), and the original is left alone."""
    from fastattn.experiments import mutations

    m = mutations.get(["toy-context-term"])[0]
    original = mutations.source(m.module)[1]
    assert original == tmp_path / "site" / "toy_paper" / "objective.py"
    root = mutations.package_copy(tmp_path / "copy", [m.module])
    assert (root / "fastattn" / "__init__.py").is_file()
    mutations.plant(m, root)
    assert m.new in (root / "toy_paper" / "objective.py").read_text()
    assert m.new not in original.read_text() and m.old in original.read_text()
    assert "toy_paper.objective" not in sys.modules            # found, not imported


@pytest.mark.slow
def test_the_papers_planted_bug_flips_its_claim(toy_paper, tmp_path, monkeypatch):
    """End to end, as `fastattn report DIR --mutations` runs it: the toy installed for real (a
    dist-info with its entry point, on PYTHONPATH), the figures rerun in fresh processes, and the
    planted copy of toy_paper shadowing the installed one there."""
    from fastattn.experiments import mutations

    info = tmp_path / "site" / "toy_paper-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy_paper\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{papers.GROUP}]\ntoy2026 = toy_paper:PAPER\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    (result,) = mutations.check(mutations.get(["toy-context-term"]), tmp_path / "work")
    assert not result["failed"], result["failed"]
    assert [(f["key"], f["before"]) for f in result["flipped"]] == [("optimum", "reproduced")]


def test_the_checklist_names_every_manifest_field():
    """docs/configs.md's "Adding a paper" is the list this module walks: its manifest line names
    every field of `Paper`."""
    from dataclasses import fields
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[1] / "docs" / "configs.md").read_text()
    section = docs.split("\n## Adding a paper\n", 1)[1].split("\n## ", 1)[0]
    assert "tests/test_plugin_paper.py" in section
    missing = [f.name for f in fields(papers.Paper)[2:] if f"{f.name}=" not in section]
    assert not missing, f"docs/configs.md (Adding a paper) does not name {missing}"
