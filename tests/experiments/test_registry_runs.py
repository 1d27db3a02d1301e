"""Declarative recipes (issue 24 item 5): every training or flow of a figure is a `RunSpec` that
`reproduce` trains, and `reproduce` resumes a figure from the run records it finished."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fastattn.experiments import registry
from fastattn.experiments.recipe import RunSpec
from fastattn.models import KernelRegressorsConfig
from fastattn.outputs import Output
from fastattn.population.kernel_regressors import ApproxLossObjective
from fastattn.training import TrainConfig, Trajectory

#: He's and Sander's figures that compute no training or flow (closed forms, Monte Carlo of fixed
#: predictors; the registry's docstring says why each)
NO_TRAINING = {"he2025-e5", "he2025-e6", "he2025-e7", "he2025-e9", "he2025-e14",
               "sander2024-fig1", "sander2024-fig2", "sander2024-fig4"}
#: the trainer kind of each run of the figures made declarative here
KIND = {"he2025-e2": "batched", "he2025-e8": "flow", "sander2024-fig9": "sampled"}


@pytest.mark.parametrize("name", sorted(NO_TRAINING | set(KIND)))
def test_only_closed_form_figures_list_no_runs(name):
    recipe = registry.get(name).load()
    for quick in (True, False):
        specs = recipe.runs(quick)
        if name in NO_TRAINING:
            assert specs == []
        else:
            assert specs and {s.kind for s in specs} == {KIND[name]}, (name, quick)


@pytest.mark.parametrize("name", sorted(registry.FIGURES))
def test_the_seed_replicas_of_a_figure_are_not_copies_of_one_run(name):
    """Runs that a recipe groups as seeds of one setting (`group["seed"]`, the rest of the group
    equal) start from distinct initialisations (unless an `init` is given), and sampled ones also
    draw distinct batches: a seed spread that quietly became one run repeated (every seed's
    init_seed 0) survived every other test (planted-bug audit)."""
    recipe = registry.get(name).load()
    for quick in (True, False):
        replicas: dict[tuple, list] = {}
        for spec in recipe.runs(quick):
            if "seed" in spec.group:
                rest = tuple(sorted((k, repr(v)) for k, v in spec.group.items() if k != "seed"))
                replicas.setdefault(rest, []).append(spec)
        for rest, specs in replicas.items():
            starts = [s.init if s.init is not None else s.model.init_seed for s in specs]
            assert len(set(starts)) == len(specs), (name, quick, dict(rest), starts)
            sampled = [s.task.data_seed for s in specs if s.kind != "flow"]
            assert len(set(sampled)) == len(sampled), (name, quick, dict(rest), sampled)


def test_registry_docstring_names_every_figure_without_runs():
    doc = " ".join(registry.__doc__.split())
    for name in NO_TRAINING:
        paper, fig = name.split("-")
        assert (f"{fig.upper()} (" if paper == "he2025" else f"Fig. {fig[3:]} (") in doc, name


def _small_fig9(steps: int = 5) -> list[RunSpec]:
    from fastattn.experiments.sander2024 import fig9

    return [dataclasses.replace(s, train=dataclasses.replace(s.train, steps=steps,
                                                             n_records=10 * steps))
            for s in fig9.runs(quick=True)]


def test_an_interrupted_figure_resumes_from_its_finished_runs(tmp_path, monkeypatch):
    """Interrupt after two of four runs; the rerun trains only the other two, and every run has
    the numbers of an uninterrupted reproduction."""
    specs = _small_fig9()
    whole = registry.run_specs(specs, tmp_path / "whole")
    real, calls = registry._train, []

    def interrupt_third(specs_, models, *rest):
        calls.append([s.label for s in specs_])
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(specs_, models, *rest)

    monkeypatch.setattr(registry, "_train", interrupt_third)
    with pytest.raises(KeyboardInterrupt):
        registry.run_specs(specs, tmp_path / "cut")
    assert sorted(p.name for p in (tmp_path / "cut").glob("*.json")) == [
        f"{s.label}.json" for s in specs[:2]]
    calls.clear()
    monkeypatch.setattr(registry, "_train", lambda s, m, *r: calls.append([x.label for x in s])
                        or real(s, m, *r))
    resumed = registry.run_specs(specs, tmp_path / "cut")
    assert calls == [[specs[2].label], [specs[3].label]]
    for a, b in zip(whole, resumed, strict=True):
        np.testing.assert_array_equal(a.traj.loss, b.traj.loss)
        np.testing.assert_array_equal(a.model.to_flat(), b.model.to_flat())
        assert a.traj.config == b.traj.config
    calls.clear()
    registry.run_specs(specs, tmp_path / "cut")              # all finished: nothing trains
    assert calls == []


def test_ctrl_c_inside_a_run_stops_the_figure_and_the_rerun_trains_that_run(tmp_path,
                                                                            monkeypatch):
    """The trainers return a Ctrl-C'd run with status "interrupted": `run_specs` keeps the finished
    records and raises instead of handing a half-trained run to `summarize`."""
    specs = _small_fig9()
    real, calls = registry._train, []

    def ctrl_c_in_second(specs_, models, on_done, *rest):
        calls.append(specs_[0].label)

        def cut_second(j, traj):
            if len(calls) == 2:
                traj.status = "interrupted"
            on_done(j, traj)

        return real(specs_, models, cut_second, *rest)

    monkeypatch.setattr(registry, "_train", ctrl_c_in_second)
    with pytest.raises(KeyboardInterrupt, match=specs[1].label):
        registry.run_specs(specs, tmp_path)
    calls.clear()
    monkeypatch.setattr(registry, "_train", lambda s, m, *r: calls.append(s[0].label) or real(s, m, *r))
    runs = registry.run_specs(specs, tmp_path)
    assert calls == [s.label for s in specs[1:]]
    assert {r.traj.status for r in runs} == {"steps"}


def test_a_record_is_reused_only_for_the_same_run(tmp_path, monkeypatch):
    specs = _small_fig9()[:1]
    registry.run_specs(specs, tmp_path)
    calls = []
    real = registry._train
    monkeypatch.setattr(registry, "_train", lambda s, m, *r: calls.append(s[0].label) or real(s, m, *r))
    other_lr = [dataclasses.replace(specs[0], train=dataclasses.replace(specs[0].train, lr=1e-3))]
    other_seed = [dataclasses.replace(specs[0], model=dataclasses.replace(specs[0].model,
                                                                          init_seed=5))]
    for changed in (other_lr, other_seed, specs):            # each replaces the record before
        registry.run_specs(changed, tmp_path)
    assert len(calls) == 3
    registry.run_specs(specs, tmp_path)
    assert len(calls) == 3
    # an interrupted run's record is trained again
    path = tmp_path / specs[0].label
    traj = Trajectory.load(path)
    traj.status = "interrupted"
    traj.save(path)
    registry.run_specs(specs, tmp_path)
    assert len(calls) == 4


def test_objective_override_is_part_of_the_run_and_only_for_exact_runs(tmp_path):
    cfg = TrainConfig(method="flow", t_end=1.0, integrator="rk45")
    from fastattn.experiments.he2025.settings import task

    def spec(sigma2: float) -> RunSpec:
        return RunSpec("H2", task(), KernelRegressorsConfig(5, 2), cfg,
                       init=(1e-3, -1e-3, 1e-3, -1e-3),
                       objective=ApproxLossObjective(2, 5, 40, sigma2))

    (a,) = registry.run_specs([spec(0.1)], tmp_path)
    assert a.traj.config["objective"] == {"kind": "ApproxLossObjective", "heads": 2, "d": 5,
                                          "L": 40.0, "sigma2": 0.1}
    assert a.traj.final_loss == pytest.approx(
        ApproxLossObjective(2, 5, 40, 0.1).loss_grad(a.traj.final_params)[0])
    (b,) = registry.run_specs([spec(0.01)], tmp_path)      # another objective: integrated anew
    assert b.traj.config["objective"]["sigma2"] == 0.01 and b.traj.final_loss != a.traj.final_loss
    with pytest.raises(ValueError, match="objective is integrated by an exact run"):
        RunSpec("x", task(), KernelRegressorsConfig(5, 2),
                TrainConfig(method="adam", lr=1e-3, steps=2), objective=ApproxLossObjective(2, 5, 40, 0.1))
    with pytest.raises(ValueError, match="its objective has 6 parameters"):
        registry.run_specs([dataclasses.replace(spec(0.1), objective=ApproxLossObjective(3, 5, 40, 0.1))])


def test_reproduce_drops_records_of_runs_no_longer_listed_and_overwrite_retrains(tmp_path,
                                                                                 monkeypatch):
    from fastattn.experiments.he2025 import e8

    def short(quick: bool) -> list[RunSpec]:           # E8's flows to t = 1: the test is fast
        return [dataclasses.replace(s, train=dataclasses.replace(s.train, t_end=1.0))
                for s in e8.runs(quick)]

    def blank(runs, summary):                          # drawing is not under test here
        from matplotlib.figure import Figure

        return Figure(figsize=(1, 1))

    monkeypatch.setattr(e8, "RECIPE", dataclasses.replace(e8.RECIPE, runs=short, plot=blank))
    name = "he2025-e8"
    registry.reproduce(name, tmp_path, quick=True)
    # a record fastattn wrote of a run the figure no longer lists goes; a file it did not write stays
    Output(tmp_path, "reproduce").write(tmp_path / name / "old_run.json", lambda fh: fh.write("{}"),
                                        "w")
    (tmp_path / name / "mine.txt").write_text("the user's")
    calls = []
    real = registry._train
    monkeypatch.setattr(registry, "_train", lambda s, m, *r: calls.append(s[0].label) or real(s, m, *r))
    doc = registry.reproduce(name, tmp_path, quick=True)
    assert calls == [] and not (tmp_path / name / "old_run.json").exists()
    assert (tmp_path / name / "mine.txt").read_text() == "the user's"
    (tmp_path / name / "mine.txt").unlink()
    assert {r["kind"] for r in doc["runs"].values()} == {"flow"}
    registry.reproduce(name, tmp_path, quick=True, resume=False)
    assert calls == [label for label, *_ in e8.CASES]
    # the CLI: a figure without its JSON resumes; --overwrite trains every run again
    from fastattn.cli import main

    (tmp_path / f"{name}.json").unlink()
    calls.clear()
    assert main(["reproduce", name, "--quick", "--out", str(tmp_path)]) == 0
    assert calls == []
    assert main(["reproduce", name, "--quick", "--out", str(tmp_path), "--overwrite"]) == 0
    assert calls == [label for label, *_ in e8.CASES]


def test_an_objective_without_attributes_is_never_taken_for_another():
    """A compiled objective keeps its parameters out of reach: its identity is a fresh token, so a
    cached record of it is never reused for a different objective of the same class."""
    from fastattn.experiments.recipe import objective_config

    class Compiled:
        __slots__ = ()

    a, b = objective_config(Compiled()), objective_config(Compiled())
    assert a["kind"] == b["kind"] == "test_an_objective_without_attributes_is_never_taken_for_another" \
        ".<locals>.Compiled" and a != b


def test_a_batched_call_writes_each_batch_as_it_ends_and_ctrl_c_starts_no_more(tmp_path,
                                                                               monkeypatch):
    """He E4's runs H1 and H2 are two batches of one `train_many` call. H1's record is on disk
    before H2's first step (a kill during H2 loses H2 only); Ctrl-C during H1 keeps H1's record
    (interrupted) and never starts H2, and the rerun trains both."""
    import fastattn._core_loader as loader
    from fastattn._core_loader import core
    from fastattn.experiments.he2025 import e4

    specs = [dataclasses.replace(s, train=dataclasses.replace(s.train, steps=40, n_records=10,
                                                              n_snapshots=2))
             for s in e4.runs(quick=True)]
    assert [s.label for s in specs] == ["H1", "H2"]
    seen: list[bool] = []
    ctrl_c_at: list[int] = []

    class Core:
        def __getattr__(self, name):
            return getattr(core, name)

        def he_adam_steps(self, *a, **k):
            seen.append((tmp_path / "run" / "H1.json").exists())
            out = core.he_adam_steps(*a, **k)
            if len(seen) in ctrl_c_at:
                raise KeyboardInterrupt
            return out

    monkeypatch.setattr(loader, "core", Core())
    registry.run_specs(specs, tmp_path / "run")
    assert not seen[0] and seen[-1]               # H2 trained after H1's record was written

    seen.clear()
    ctrl_c_at.append(2)
    with pytest.raises(KeyboardInterrupt, match="H1; not started: H2"):
        registry.run_specs(specs, tmp_path / "cut")
    assert Trajectory.load(tmp_path / "cut" / "H1").status == "interrupted"
    assert not (tmp_path / "cut" / "H2.json").exists()
    ctrl_c_at.clear()
    runs = registry.run_specs(specs, tmp_path / "cut")
    assert [r.traj.status for r in runs] == ["steps", "steps"]
