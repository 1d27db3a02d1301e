"""Records and plots say which time they show: the record's t, and the paper's time where it differs."""

import json
import re

import pytest

from fastattn.training.trajectory import RECORD_TIME, time_label


@pytest.mark.parametrize("dim", [4, 16])
def test_full_disentangled_weights_label_paper_time_as_the_objective_converts(dim):
    from fastattn.population.induction_full import DisentangledFullObjective

    label = time_label({"task": {"kind": "induction", "dim": dim}, "model": {"kind": "disentangled"}})
    divisor = float(re.search(r"t/\(2D\) = t/([\d.]+)", label).group(1))
    assert DisentangledFullObjective(dim, 2).paper_time(divisor) == pytest.approx(1.0)


def test_every_label_names_the_record_time_and_the_papers_conversion():
    lab = {kind: time_label({"task": {"kind": task, "tasks": 64, "dim": 4}, "model": {"kind": kind},
                             "train": {"lr": 0.01}})
           for task, kind in (("linear_regression", "separate"), ("induction", "gram19"),
                              ("wishart_tasks", "linear_transformer"), ("autoregressive", "diag"),
                              ("linear_regression", "multihead_softmax"))}
    assert all(label.startswith(RECORD_TIME) for label in lab.values())
    assert lab["gram19"].endswith("paper time t/2")
    assert lab["linear_transformer"].endswith("t/(2ηP) = t/1.28")
    assert lab["separate"].endswith("; paper time = t")
    assert lab["diag"].endswith("; paper time t/2")
    assert lab["multihead_softmax"].endswith("; paper time t/2")     # He's, not Zhang's, on one task
    assert "not a flow time" in time_label({"task": {"kind": "linear_regression"},
                                            "train": {"method": "adam"}})


def test_a_run_record_says_which_time_it_holds(tmp_path):
    from fastattn.cli import main

    assert main(["train", "--task", "induction", "--model", "disentangled", "--data", "orthonormal",
                 "--dim", "4", "--context", "2", "--t-end", "1", "--out", str(tmp_path), "--quiet"]) == 0
    meta = json.loads((tmp_path / "run.json").read_text())
    assert meta["time"].endswith("paper time t/(2D) = t/8")
