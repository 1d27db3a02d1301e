"""The fused He step's ms/step under each instruction-set level of the core, same machine, same run.

    python bench/isa_levels.py [--steps N] [--rounds R] [--python PY ...]

Each variant runs in its own interpreter (one process loads one core): every level the multi-level
core of this Python has and this CPU runs (FASTATTN_ISA=baseline / avx2 / avx512), and the core of
each extra `--python` (e.g. a venv holding a -march=native build), rounds interleaved, the best
round's process CPU time per step reported (CPU time: a busy machine inflates wall time more).
Setting: He E4's, d 5, L 40, B 256, H 2, float32, one thread.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

WORK = """
import json, sys, time
import numpy as np
from fastattn.info import core_report
from fastattn.models import MultiHeadSoftmax
from fastattn.tasks import LinearRegression
from fastattn.training.batched import BatchedAdamConfig, train_batched
steps = int(sys.argv[1])
task = LinearRegression(5, context=40, spectrum=[1.0] * 5, noise=0.1, w_cov=np.eye(5) / 5, data_seed=0)
def run(n):
    model = MultiHeadSoftmax(5, 2, init_seed=0, dtype="float32")
    start = time.process_time()
    train_batched([model], [task], BatchedAdamConfig(lr=1e-3, steps=n, batch_size=256, stream="fast",
                                                     backend="fused", threads=1))
    return time.process_time() - start
run(50)
print(json.dumps({"isa": core_report()["isa"], "ms": 1e3 * (run(steps) - run(1)) / (steps - 1)}))
"""


def measure(python: str, isa: str | None, steps: int) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "FASTATTN_ISA"}
    if isa:
        env["FASTATTN_ISA"] = isa
    out = subprocess.run([python, "-c", WORK, str(steps)], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--python", nargs="*", default=[], help="other interpreters to compare")
    args = parser.parse_args()
    from fastattn._core_loader import ISA_LEVELS, cpu_level
    from fastattn.info import core_report

    multi = core_report()["isa"].startswith("x86-64-v")
    variants = [(sys.executable, name) for name, n in ISA_LEVELS.items()
                if multi and n <= cpu_level()] + [(py, None) for py in args.python]
    best: dict[tuple[str, str | None], dict] = {}
    for _ in range(args.rounds):
        for variant in variants:
            got = measure(*variant, args.steps)
            if variant not in best or got["ms"] < best[variant]["ms"]:
                best[variant] = got
    print("| core | ms/step |\n|---|---|")
    for (python, isa), got in best.items():
        label = f"FASTATTN_ISA={isa}" if isa else python
        print(f"| {got['isa']} ({label}) | {got['ms']:.4f} |")


if __name__ == "__main__":
    main()
