"""Longer runs at the paper's setting trained with `train_batched` (the recipes' `train()` path
would take hours at 5·10⁵ steps here), evaluated at several context lengths with the pattern metrics.

    python -m fastattn.experiments.he2025.batched_runs STEPS LR OUT.json
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import numpy as np
import torch

from fastattn.analysis.patterns import pattern_metrics
from fastattn.analysis.risk import monte_carlo_risk
from fastattn.experiments.he2025.settings import D, task
from fastattn.models import MultiHeadSoftmax
from fastattn.training.batched import BatchedAdamConfig, train_batched
from fastattn.training.records import to_jsonable

GRID = ((1, (0,)), (2, (0, 1)), (4, (0,)))
LENGTHS = (10, 20, 40, 70, 100)


def run_grid(steps: int, lr: float, n_prompts: int = 20_000) -> dict[str, Any]:
    """Each (H, seeds) group of `GRID` trained together (fast stream, float32, batch 256); per run
    the Monte-Carlo risk at `LENGTHS`, the pattern metrics and the last recorded batch losses."""
    cfg = BatchedAdamConfig(lr=lr, steps=steps, batch_size=256, record_every=max(steps // 50, 1),
                            stream="fast")
    out: dict[str, Any] = {"steps": steps, "lr": lr, "n_prompts": n_prompts, "runs": {}}
    for heads, seeds in GRID:
        models = [MultiHeadSoftmax(D, heads, init_seed=s, dtype="float32") for s in seeds]
        start = time.perf_counter()
        res = train_batched(models, [task(data_seed=100 * heads + s) for s in seeds], cfg)
        wall = time.perf_counter() - start
        for r, (seed, model) in enumerate(zip(seeds, models, strict=True)):
            risks = {L: monte_carlo_risk(model, task(context=L), n_prompts, seed=L) for L in LENGTHS}
            metrics = pattern_metrics(model.extract_kq().detach().double().numpy(),
                                      model.extract_ov().detach().double().numpy())
            out["runs"][f"H{heads}_seed{seed}"] = {
                "heads": heads, "group_wall_s": wall, "risk": {L: list(v[:2]) for L, v in risks.items()},
                "metrics": metrics, "last_losses": res.losses[r, -5:]}
    return out


def main(argv: list[str]) -> None:
    torch.set_num_threads(1)
    steps, lr, path = int(argv[0]), float(argv[1]), argv[2]
    doc = run_grid(steps, lr)
    with open(path, "w") as fh:
        json.dump(to_jsonable(doc), fh, indent=1)
    for name, run in doc["runs"].items():
        print(name, {L: round(m, 4) for L, (m, _) in run["risk"].items()},
              {k: np.round(np.asarray(run["metrics"][k]), 3).tolist()
               for k in ("omega", "mu", "gamma", "eta_eff", "zero_sum")})


if __name__ == "__main__":
    main(sys.argv[1:])
