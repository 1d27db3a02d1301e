"""A figure's full run list at another step count and learning rate, for machines where the full
sizes do not fit (docs/he2025.md quotes such runs):

    python -m fastattn.experiments.he2025.shortened NAME STEPS LR OUT_DIR

Writes OUT_DIR/NAME-STEPS.png and OUT_DIR/NAME-STEPS.json (the recipe's summary). Only recipes
with sampled runs (E2, E3, E10, E11, E12, E13) are shortened; E8's runs are flows (no steps) and
the others train nothing.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import torch

from fastattn import plots
from fastattn.experiments import registry
from fastattn.experiments.recipe import summarize
from fastattn.training.records import atomic_write, to_jsonable


def main(argv: list[str]) -> None:
    name, steps, lr, out = argv[0], int(argv[1]), float(argv[2]), Path(argv[3])
    torch.set_num_threads(1)
    figure = registry.get(name)
    recipe = figure.load()
    specs = [dataclasses.replace(s, train=dataclasses.replace(s.train, steps=steps, lr=lr))
             for s in recipe.runs(False)]
    if not specs or any(s.train.method not in ("sgd", "adam") for s in specs):
        raise SystemExit(f"{name} lists no sampled runs (it trains nothing, or its runs are flows "
                         f"without steps); run `fastattn reproduce {name}` instead")
    runs = registry.run_specs(specs)
    summary = summarize(recipe, runs, False)
    fig = recipe.plot(runs, summary)
    plots.suptitle(fig, f"{figure.title} ({steps} steps at lr {lr:g})", recipe.caption)
    plots.save(fig, out / f"{name}-{steps}.png")
    doc = {"name": name, "steps": steps, "lr": lr, "summary": summary,
           "walls": {r.spec.label: r.traj.wall_time for r in runs}}
    atomic_write(out / f"{name}-{steps}.json",
                 lambda fh: fh.write(json.dumps(to_jsonable(doc), indent=1)), "w")


if __name__ == "__main__":
    main(sys.argv[1:])
