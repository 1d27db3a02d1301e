"""Grokking at the spec's learning rate (Mainali & Teixeira 2025 §9.8: AdamW lr 1e-3), the model and task
of `fastattn reproduce mainali2025-fig7` (which uses lr 1e-2 to grok in 1000 epochs).

Trains up to 20 000 full-batch epochs, stops 8 log-spaced records after test accuracy reaches 0.99,
and writes the figure's summary (crossings, drop window, OV/QK landmarks, every curve) as JSON.

    OMP_NUM_THREADS=1 python tools/mainali2025_grokking_spec_lr.py OUT.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

from fastattn.experiments.mainali2025 import grokking
from fastattn.experiments.registry import run_specs
from fastattn.training.records import atomic_write, to_jsonable


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="JSON file for the summary")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--epochs", type=int, default=20_000)
    args = parser.parse_args()
    (spec,) = grokking.runs(quick=False)
    train = dataclasses.replace(spec.train, lr=args.lr, steps=args.epochs, n_records=160,
                                n_snapshots=160, target_metric=("test_acc", 0.99), patience=8)
    start = time.perf_counter()
    runs = run_specs([dataclasses.replace(spec, train=train)])
    summary = grokking.summarize(runs) | {"wall_s": time.perf_counter() - start}
    text = json.dumps(to_jsonable(summary), indent=1)
    atomic_write(Path(args.out), lambda f: f.write(text), "w")
    print({k: summary[k] for k in ("status", "epochs", "train_acc_0.99_epoch", "test_acc_0.99_epoch")})


if __name__ == "__main__":
    main()
