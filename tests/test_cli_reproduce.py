"""`fastattn reproduce --device` (issue 40 item 3): the runs the fused He step trains step with its
Triton kernels on the device (here on CPU under TRITON_INTERPRET=1, as `train --device cpu`), the
other runs keep their engine, every record, figure and folder says which engine ran, and a folder
never mixes the two engines' runs. The figures are He 2025's E13 (one batched softmax run, one
sampled linear-attention run) and E2 (one batched run), cut to 12 steps of batch 16 with a blank
plot: about 5 s each under the interpreter on one core."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from fastattn.cli import main
from fastattn.experiments import batch
from fastattn.experiments.recipe import RunSpec
from fastattn.outputs import MANIFEST, Output
from fastattn.training import Trajectory
from fastattn.training.fused import ENGINE, ENGINE_GPU

E13, E2 = "he2025-e13", "he2025-e2"
STEPS, BATCH = 12, 16
#: float32's unit roundoff
U = 2.0 ** -24


def _loss_rtol(spec: RunSpec) -> float:
    """How far the C++ core's and the Triton kernels' final batch losses of one run may differ.

    Both compute the same float32 sums, each in its own order. A sum of n terms is off by at most
    (n - 1)·u of the sum of its |terms|, and the loss is a chain of such sums: d-term key scores,
    the softmax over L + 1 keys, the values over L + 1 keys, H heads, the mean over B prompts
    (positive terms: relative to the loss itself). One evaluation: c·u per engine with c = d +
    2(L + 1) + H + B, 2·c·u between the two. Each of the k Adam steps carries such a relative
    change into the parameters (to first order Adam's m/√v passes it on unamplified), so over the
    run: 2·k·c·u (here 1.5e-4; measured ~1e-7)."""
    task, model = spec.task, spec.model
    c = task.dim + 2 * (task.max_context + 1) + model.heads + spec.train.batch_size
    return 2 * spec.train.steps * c * U


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("fastattn reproduce: error: "), err
    return lines[0]


@pytest.fixture
def small(monkeypatch) -> dict[str, list[RunSpec]]:
    """E13 and E2 cut to `STEPS` steps of `BATCH` prompts with a blank plot; `--all`/`--paper`
    select the two. Returns each figure's runs."""
    from matplotlib.figure import Figure

    from fastattn.experiments.he2025 import e2, e13

    out = {}
    for name, module in ((E13, e13), (E2, e2)):
        specs = [dataclasses.replace(s, train=dataclasses.replace(
                     s.train, steps=STEPS, batch_size=BATCH, n_records=STEPS))
                 for s in module.runs(True)]
        out[name] = specs
        monkeypatch.setattr(module, "RECIPE", dataclasses.replace(
            module.RECIPE, runs=lambda quick, specs=specs: specs,
            plot=lambda runs, summary: Figure(figsize=(1, 1))))
    monkeypatch.setattr(batch, "select", lambda papers=(), names=(): [E13, E2])
    return out


def _records(out: Path, name: str) -> dict[str, Trajectory]:
    doc = json.loads((out / f"{name}.json").read_text())
    return {label: Trajectory.load(out / name / label) for label in doc["runs"]}


@pytest.mark.interpreter
def test_device_steps_the_batched_runs_on_the_triton_kernels_and_the_others_as_before(
        small, tmp_path, monkeypatch):
    """E13 with --device cpu: the batched run's record names the Triton engine and the device and
    its final loss agrees with the C++ core's run of the same figure to float32 rounding; the
    sampled run keeps its engine and its numbers bit for bit. The figure's JSON says both."""
    pytest.importorskip("triton")
    core, gpu = tmp_path / "core", tmp_path / "gpu"
    assert main(["reproduce", E13, "--quick", "--out", str(core)]) == 0
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert main(["reproduce", E13, "--quick", "--out", str(gpu), "--device", "cpu"]) == 0
    doc = json.loads((gpu / f"{E13}.json").read_text())
    assert doc["device"] == "cpu"
    assert json.loads((core / f"{E13}.json").read_text())["device"] is None
    on_core, on_gpu = _records(core, E13), _records(gpu, E13)
    specs = {s.label: s for s in small[E13]}
    assert sorted(r["kind"] for r in doc["runs"].values()) == ["batched", "sampled"]
    for label, run in doc["runs"].items():
        c, g = on_core[label], on_gpu[label]
        assert run["engine"] == g.backend["engine"]
        if run["kind"] == "batched":
            assert c.backend["engine"] == ENGINE
            assert g.backend["engine"] == ENGINE_GPU and g.backend["device"] == "cpu"
            assert g.config == {**c.config, "step_device": "cpu"}
            np.testing.assert_allclose(g.final_loss, c.final_loss, rtol=_loss_rtol(specs[label]),
                                       atol=0)
        else:
            assert g.backend["engine"] == c.backend["engine"] != ENGINE_GPU
            assert g.config == c.config
            np.testing.assert_array_equal(g.loss, c.loss)


@pytest.mark.interpreter
def test_paper_with_device_steps_every_figure_s_batched_runs_on_the_device(small, tmp_path,
                                                                           monkeypatch):
    """--paper (the --all path, one figure after another): each figure's batched runs, the second
    figure's too, step on the device; the manifest and the report page say so."""
    pytest.importorskip("triton")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    out = tmp_path / "out"
    assert main(["reproduce", "--paper", "he2025", "--quick", "--quiet", "--device", "cpu",
                 "--out", str(out)]) == 0
    assert json.loads((out / batch.MANIFEST).read_text())["device"] == "cpu"
    for name in (E13, E2):
        assert json.loads((out / f"{name}.json").read_text())["device"] == "cpu"
        batched = [t for t in _records(out, name).values() if t.backend["engine"] != "torch"]
        assert batched and all(t.backend["engine"] == ENGINE_GPU for t in batched), name
    assert "Triton kernels on cpu" in (out / "index.html").read_text()


def _no_triton(monkeypatch) -> None:
    import fastattn.triton_kernels._launch as launch

    monkeypatch.setattr(launch, "triton_available", lambda: False)


@pytest.mark.parametrize("form", [[E2], ["--paper", "he2025"]], ids=["figure", "paper"])
@pytest.mark.parametrize("device, interpret, patch, says", [
    ("gpu7", True, None, "--device gpu7 is no torch device"),
    ("cuda", False, None, "no CUDA device is visible"),
    ("cpu", False, None, "TRITON_INTERPRET=1"),
    ("cpu", True, _no_triton, "--device needs triton"),
], ids=["bad-string", "no-cuda", "cpu-compiled", "no-triton"])
def test_a_device_that_cannot_run_is_refused_in_one_line_and_nothing_is_written(
        small, tmp_path, monkeypatch, capsys, form, device, interpret, patch, says):
    if device == "cuda" and torch.cuda.is_available():
        pytest.skip("a CUDA device is visible here")
    if interpret:
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    else:
        monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    if patch is not None:
        patch(monkeypatch)
    out = tmp_path / "out"
    assert main(["reproduce", *form, "--quick", "--out", str(out), "--device", device]) == 2
    assert says in _one_error_line(capsys.readouterr().err)
    assert not out.exists()


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.startswith(MANIFEST)}


@pytest.mark.interpreter
def test_a_folder_holds_one_engine_s_runs(small, tmp_path, monkeypatch, capsys):
    """A folder with a figure of the C++ core refuses --device (one figure, or --paper) before
    any work; the records of an unfinished figure of the C++ core are not reused by --device
    (the run's identity names its step's device): its batched run is trained on the device."""
    pytest.importorskip("triton")
    assert main(["reproduce", E2, "--quick", "--out", str(tmp_path)]) == 0
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    before = _files(tmp_path)
    for form in ([E13], ["--paper", "he2025"]):
        assert main(["reproduce", *form, "--quick", "--out", str(tmp_path), "--device", "cpu"]) == 2
        assert "would mix" in _one_error_line(capsys.readouterr().err)
        assert _files(tmp_path) == before
    (label,) = _records(tmp_path, E2)
    Output(tmp_path, "reproduce").remove(tmp_path / f"{E2}.json")     # the figure is unfinished
    assert main(["reproduce", E2, "--quick", "--out", str(tmp_path), "--device", "cpu"]) == 0
    assert _records(tmp_path, E2)[label].backend["engine"] == ENGINE_GPU


def test_workers_hand_the_device_to_every_figure_s_process(small, tmp_path, monkeypatch):
    """--workers N with --device: allowed, and each worker's figure gets the device (a thread
    pool stands in for the process pool, a recorder for the figure)."""
    from concurrent.futures import ThreadPoolExecutor

    given = []
    monkeypatch.setattr(batch, "ProcessPoolExecutor",
                        lambda n, mp_context, initializer: ThreadPoolExecutor(n))
    monkeypatch.setattr(batch, "_run_one", lambda name, out, quick, workers, resume, device:
                        given.append((name, workers, device)) or (name, 0.0, "", ""))
    batch.run_all([E13, E2], tmp_path, quick=True, workers=2, device="cuda:1")
    assert sorted(given) == sorted([(E13, 2, "cuda:1"), (E2, 2, "cuda:1")])
    assert json.loads((tmp_path / batch.MANIFEST).read_text())["device"] == "cuda"
