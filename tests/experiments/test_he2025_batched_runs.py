"""`python -m fastattn.experiments.he2025.batched_runs`: results JSON and final weights per run."""

from __future__ import annotations

import json

import numpy as np

from fastattn.experiments.he2025.batched_runs import main
from fastattn.models import MultiHeadSoftmax


def test_batched_runs_write_results_and_weights(tmp_path):
    main(["--steps", "30", "--lr", "1e-2", "--heads", "2", "--seeds", "0", "3", "--n-prompts", "256",
          "--threads", "2", "--out", str(tmp_path)])
    doc = json.loads((tmp_path / "results.json").read_text())
    assert set(doc["runs"]) == {"H2_seed0", "H2_seed3"}
    run = doc["runs"]["H2_seed3"]
    assert run["heads"] == 2 and run["init_seed"] == 3 and run["data_seed"] == 203
    assert len(run["losses"]) == len(run["loss_steps"]) and run["loss_steps"][-1] == 29
    mean, stderr = run["risk"]["40"]
    assert 0 < stderr < mean
    weights = np.load(tmp_path / "H2_seed3.npz")
    init = MultiHeadSoftmax(5, 2, init_seed=3, dtype="float32")
    assert weights["wq"].shape == (2, 6, 6) and weights["wo"].shape == (2, 6)
    assert not np.array_equal(weights["wq"], init.wq.detach().numpy())  # trained, from init seed 3
    assert "trained in" in (tmp_path / "progress.log").read_text()
