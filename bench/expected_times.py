"""The expected time of each (task, model) pair's default run (its preset's, as `fastattn train
--task T --model M` runs it), printed as the rows of docs/benchmarks.md's table "Expected time of
each pair's default run". A method with steps: CPU seconds per step (this process, all threads)
of `fastattn.training.expected.default_seconds_per_step`, the value each model card declares as
`seconds_per_step`, times the preset's steps; an exact flow: CPU seconds of the whole run.

    nice -n 10 python bench/expected_times.py [TASK:MODEL ...]
"""

from __future__ import annotations

import sys
import time

#: CPU seconds the timed difference of the two probes must reach (fast steps get longer probes)
MIN_SECONDS = 1.0


def row(task: str, model: str) -> str:
    """One table row: | task | model | steps (or flow) | s/step | expected |."""
    from fastattn.configs import resolve
    from fastattn.info import default_run
    from fastattn.training import train
    from fastattn.training.build import build_run
    from fastattn.training.expected import default_seconds_per_step, duration

    run = default_run(task, model)
    if run["steps"] is None:
        built_task, built_model, config = build_run(resolve(task, model).spec())
        start = time.process_time()
        train(built_model, built_task, config, progress=False)
        return f"| {task} | {model} | flow | – | {duration(time.process_time() - start)} |"
    rate = default_seconds_per_step(task, model, MIN_SECONDS, clock=time.process_time)
    rate = float(f"{rate:.3g}")
    return f"| {task} | {model} | {run['steps']} | {rate:g} | {duration(rate * run['steps'])} |"


def main(argv: list[str]) -> None:
    from fastattn.configs import pairs

    chosen = {tuple(a.split(":")) for a in argv}
    print("| task | model | steps | CPU s/step | expected |\n|---|---|---|---|---|")
    for task, models in pairs().items():
        for model in models:
            if not chosen or (task, model) in chosen:
                print(row(task, model), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
