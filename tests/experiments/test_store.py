"""The shared run store (`experiments/store.py`): a run several figures list is trained once, also
when parallel workers reach it at the same time, and a run whose trainer stopped is trained anew."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from fastattn.experiments import batch, registry
from fastattn.experiments.recipe import RunSpec
from fastattn.experiments.store import RunStore
from fastattn.training import Trajectory


def _small_runs(steps: int = 5) -> list[RunSpec]:
    """Four short sampled runs (Sander Fig. 9's, cut to `steps` steps)."""
    from fastattn.experiments.sander2024 import fig9

    return [dataclasses.replace(s, train=dataclasses.replace(s.train, steps=steps,
                                                             n_records=10 * steps))
            for s in fig9.runs(quick=True)]


def _counting(monkeypatch, log: list[str], pause: float = 0.0) -> None:
    real = registry._train

    def train(specs, models, *rest):
        log.extend(s.label for s in specs)
        time.sleep(pause)
        return real(specs, models, *rest)

    monkeypatch.setattr(registry, "_train", train)


def _same(a: list, b: list) -> None:
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x.traj.loss, y.traj.loss)
        np.testing.assert_array_equal(x.model.to_flat(), y.model.to_flat())
        assert x.traj.config == y.traj.config


def test_a_run_two_figures_list_is_trained_once(tmp_path, monkeypatch):
    specs = _small_runs()
    store = RunStore.of(tmp_path)
    trained: list[str] = []
    _counting(monkeypatch, trained)
    first = registry.run_specs(specs, tmp_path / "figA", store)
    # another figure lists the same runs under other labels, and one of its own
    relabelled = [dataclasses.replace(s, label=f"other_{s.label}") for s in specs]
    extra = dataclasses.replace(specs[0], label="extra",
                                model=dataclasses.replace(specs[0].model, init_seed=7))
    second = registry.run_specs([*relabelled, extra], tmp_path / "figB", store)
    assert trained == [s.label for s in specs] + ["extra"]
    _same(first, second[:4])
    for s, run in zip(relabelled, second, strict=False):    # the figure's folder holds the record
        record = Trajectory.load(tmp_path / "figB" / s.label)
        assert record.config == run.traj.config
        np.testing.assert_array_equal(record.loss, run.traj.loss)
    assert len(list(store.root.glob("*.json"))) == 5
    # without the store (share=False in `reproduce`), the same runs train again
    registry.run_specs(specs, tmp_path / "figC")
    assert len(trained) == 5 + 4


def _worker(folder: str, barrier, log: str) -> None:
    """A `reproduce --workers` process in miniature: train the runs into `folder`, appending each
    run it trains to the file `log`."""
    real = registry._train

    def train(specs, models, *rest):
        with open(log, "a") as fh:
            fh.write("".join(f"{s.label}\n" for s in specs))
        time.sleep(0.3)                        # hold each run long enough for the other to meet it
        return real(specs, models, *rest)

    registry._train = train
    barrier.wait()
    registry.run_specs(_small_runs(), Path(folder) / Path(folder).name,
                       RunStore.of(Path(folder).parent))


def test_parallel_workers_train_each_shared_run_once(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    log = tmp_path / "trained.txt"
    procs = [ctx.Process(target=_worker, args=(str(tmp_path / name), barrier, str(log)))
             for name in ("figA", "figB")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    labels = sorted(log.read_text().split())
    assert labels == sorted(s.label for s in _small_runs())     # each run trained once in all
    runs = {name: registry.run_specs(_small_runs(), tmp_path / name / name)   # loads, trains none
            for name in ("figA", "figB")}
    _same(runs["figA"], runs["figB"])
    assert sorted(log.read_text().split()) == labels


def test_a_run_whose_lock_holder_stops_is_trained_by_the_waiting_figure(tmp_path, monkeypatch):
    """A run locked elsewhere is set aside; once the lock is let go without a record (that
    worker died or was interrupted), the waiting figure trains it."""
    specs = _small_runs()
    store = RunStore.of(tmp_path)
    trained: list[str] = []
    _counting(monkeypatch, trained)
    identity = registry._identity(specs[1], registry._build(specs[1]))
    result: list = []
    with store.claim(identity, wait=False) as taken:
        assert taken
        thread = threading.Thread(target=lambda: result.append(
            registry.run_specs(specs, tmp_path / "fig", store)))
        thread.start()
        deadline = time.monotonic() + 60
        while len(trained) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        assert trained == [specs[0].label, specs[2].label, specs[3].label]   # run 1 set aside
    thread.join(60)
    assert trained[-1] == specs[1].label and len(trained) == 4
    _same(result[0], registry.run_specs(specs))


def test_overwrite_batch_empties_the_store_and_single_overwrite_ignores_it(tmp_path):
    store = RunStore.of(tmp_path)
    registry.run_specs(_small_runs()[:1], tmp_path / "fig", store)
    assert list(store.root.glob("*.json"))
    batch.prepare(tmp_path, quick=True, overwrite=False)
    assert list(store.root.glob("*.json"))
    batch.prepare(tmp_path, quick=True, overwrite=True)
    assert not store.root.exists()


@pytest.mark.parametrize("quick", [True, False])
def test_mainali_figs_5_and_6_list_the_same_runs(quick):
    """The reason for the store: Figs. 5 and 6 show one set of trainings (spec §9.8)."""
    def identities(name: str) -> set[str]:
        return {json.dumps(registry._identity(s, registry._build(s)), sort_keys=True)
                for s in registry.get(name).load().runs(quick)}

    assert identities("mainali2025-fig5") == identities("mainali2025-fig6")


def test_linking_a_record_leaves_a_file_of_any_other_name_alone(tmp_path):
    """link_record's temporary name is its own: a user's `<label>.npz.link` (once the fixed
    temporary name, deleted unseen) is left whole, and the linked record reads as the source."""
    from fastattn.experiments.store import link_record
    from fastattn.training.records import read_record, write_record

    src = tmp_path / "store" / "abc"
    src.parent.mkdir()
    write_record(src, {"status": "t_end"}, {"loss": np.arange(3.0)})
    dst = tmp_path / "fig" / "run"
    dst.parent.mkdir()
    mine = dst.with_name("run.npz.link")
    mine.write_text("my notes")
    link_record(src, dst)
    assert mine.read_text() == "my notes"
    assert sorted(p.name for p in dst.parent.iterdir()) == ["run.json", "run.npz", "run.npz.link"]
    np.testing.assert_array_equal(read_record(dst)[1]["loss"], np.arange(3.0))
