"""Mainali & Teixeira 2025, C0 (spec §9.0): relative error of task-centric SGD's half-times
against the exact flow, over data seeds (issue 17: is mode 1's +8.4 % on data seed 1 noise or bias?).

Three runs on C0's task set (task_seed 0), all against the exact aligned flow with the task set's
ω = diag Ω (exact here: aligned blocks stay aligned under the reduced flow for any Ω):
  - `sgd`: the library's task-centric SGD (`method="task_sgd"`), one run per data seed;
  - `exact-task`: the same task order with each update's batch gradient replaced by the task's
    exact population gradient (C++ `WishartAlignedObjective` with ω = λ_μ²): no sampling noise,
    so its error is the finite-η discretisation alone (deterministic given the order);
  - both at η = 0.01 or, with `--lr`, any other rate (epochs of C0's ηP = 0.64: an update
    advances t by η/(0.64); the discretisation error should shrink ∝ η, the noise ∝ √η).
Half-times are taken against the exact flow's final a (the mean over the last 10 % of 250 epochs),
for the flow and the runs alike, so the errors measure timing only. Prints the mean ± SE per mode.

Run: OMP_NUM_THREADS=1 python tools/mainali2025_sgd_seeds.py --seeds 0..15 --epochs 12
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fastattn.configs import resolve
from fastattn.configs.options import run_list
from fastattn.experiments.mainali2025 import c0
from fastattn.models import LinearTransformer
from fastattn.population import WishartAlignedObjective, aligned_flow
from fastattn.tasks import WishartTasks
from fastattn.theory import mainali2025 as th
from fastattn.training import TrainConfig, train
from fastattn.training.build import build_task
from fastattn.training.task_sgd import task_order

FLOW_EPOCHS = 250
#: C0's preset (the figures' task set and batch); each run replaces its data seed
C0 = resolve(*c0.PAIR)


def reference(task: WishartTasks) -> tuple[np.ndarray, np.ndarray]:
    """(the exact flow's final a `[d]`, its half-times `[d]`) in epochs."""
    t = np.linspace(0.0, FLOW_EPOCHS, 20_001)
    f = aligned_flow.exact_flow(task.s, c0.N, c0.ETA_P, np.full(c0.D, c0.INIT), np.full(c0.D, c0.INIT), t,
                      omega=np.diag(task.omega()))
    a = f.p * f.q
    final = a[t >= 0.9 * FLOW_EPOCHS].mean(0)
    return final, th.half_times(t, a, final)


def updates(lr: float, epochs: float) -> int:
    """Updates of rate lr that span `epochs` of C0's time (t = 2η k / (2 ηP)|_{η = 0.01})."""
    return round(epochs * c0.ETA_P / lr)


def sgd_run(task: WishartTasks, lr: float, epochs: int, batch: int) -> tuple[np.ndarray, np.ndarray]:
    """(epochs `[T]`, a `[T, d]`) of the library's task-centric SGD."""
    steps = updates(lr, epochs)
    cfg = TrainConfig(method="task_sgd", lr=lr, steps=steps, batch_size=batch,
                      n_records=min(steps, 2000))
    traj = train(LinearTransformer(c0.D, init_scale=c0.INIT, reduced=True), task, cfg)
    blocks = traj.params.reshape(len(traj.params), 4, c0.D, c0.D)
    u = task.U
    a = np.einsum("ji,tjk,tkl,li->ti", u, blocks[:, 1], blocks[:, 2], u)
    return traj.step * lr / c0.ETA_P, a


def exact_task_run(task: WishartTasks, lr: float, epochs: int) -> tuple[np.ndarray, np.ndarray]:
    """(epochs `[T]`, a `[T, d]`) of task-cycled updates θ ← θ − η ∇L_μ(θ) with exact per-task
    gradients, in the task-centric SGD's order (every update recorded)."""
    objs = [WishartAlignedObjective(task.s, c0.N, lam**2) for lam in task.task_eigs]
    theta = np.full(2 * c0.D, c0.INIT)
    a = [theta[: c0.D] * theta[c0.D:]]
    steps = updates(lr, epochs)
    for epoch in range(-(-steps // c0.P)):
        for mu in task_order(task, epoch)[: steps - (len(a) - 1)]:
            theta = theta - lr * objs[int(mu)].loss_grad(theta)[1]
            a.append(theta[: c0.D] * theta[c0.D:])
    return np.arange(len(a)) * lr / c0.ETA_P, np.asarray(a)


def seeds_of(text: str) -> list[int]:
    """--seeds in `fastattn train`'s list grammar (`LIST_GRAMMAR`: 0..15, 0,3,7; the old 0-15 with
    its deprecation line); a bad list is argparse's one-line error naming --seeds."""
    try:
        return run_list(text, int)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def summary(label: str, errors: list[np.ndarray]) -> None:
    e = 100 * np.asarray(errors)
    n = np.sum(np.isfinite(e), 0)
    mean = np.nanmean(e, 0)
    se = np.nanstd(e, 0, ddof=1) / np.sqrt(np.maximum(n, 1)) if len(e) > 1 else np.full(e.shape[1], np.nan)
    cells = ", ".join(f"{m:+.2f} ± {s:.2f}" if k else "—" for m, s, k in zip(mean, se, n, strict=True))
    print(f"{label}: t_half error (%) per mode, mean ± SE over {len(e)} runs: [{cells}]")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=seeds_of, default="0..7",
                        help="data seeds, a list as `fastattn train --seeds` takes: 0..15 or 0,3,7")
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--lr", type=float, default=c0.LR)
    parser.add_argument("--batch", type=int, default=C0.train["batch_size"])
    parser.add_argument("--no-sgd", action="store_true", help="only the noise-free exact-task run")
    return parser


def main() -> None:
    args = build_parser().parse_args()
    base = c0.c0_task()
    final, t_ref = reference(base)
    print(f"exact flow (ω = diag Ω): final a {np.round(final, 4)}, t_half {np.round(t_ref, 3)} epochs")
    errors: dict[str, list[np.ndarray]] = {"exact-task": [], "sgd": []}
    for seed in args.seeds:
        task = build_task({**C0.task, "data_seed": seed})
        labels = ["exact-task"] if args.no_sgd else ["exact-task", "sgd"]
        for label in labels:
            start = time.perf_counter()
            t, a = (exact_task_run(task, args.lr, args.epochs) if label == "exact-task"
                    else sgd_run(task, args.lr, args.epochs, args.batch))
            err = th.half_times(t, a, final) / t_ref - 1
            errors[label].append(err)
            print(f"  seed {seed} {label}: t_half error (%) {np.round(100 * err, 2)} "
                  f"({time.perf_counter() - start:.1f} s)", flush=True)
    for label, errs in errors.items():
        if errs:
            summary(f"{label} (η = {args.lr}, batch {args.batch})", errs)


if __name__ == "__main__":
    main()
