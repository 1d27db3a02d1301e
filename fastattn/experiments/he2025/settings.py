"""The paper's setting (spec §2.1, §3.2) and the runs several figures share."""

from __future__ import annotations

from contextlib import contextmanager

import torch

from fastattn.configs import resolve
from fastattn.experiments.recipe import RunSpec, preset_run
from fastattn.tasks import LinearRegression, MultiTaskRegression
from fastattn.training.build import build_task

#: the paper's pair; its preset (`fastattn.configs.he2025.HE`: d = 5, L = 40, x ~ N(0, I),
#: β ~ N(0, I/d), σ² = 0.1, H = 2, float32, Adam lr 1e-3, batch 256, 5·10⁵ steps) is every
#: figure's setting, and the recipes state only what differs from it
PAIR = ("linear_regression", "multihead_softmax")
#: the multi-task pair (spec §2.3, E11: d = 6, S_1 = {1..4}, S_2 = {3..6}; preset HE_MULTITASK)
MULTITASK = ("multitask_regression", "multioutput_softmax")

_TASK, _MULTITASK = resolve(*PAIR).task, resolve(*MULTITASK).task
#: d, L and σ² of the preset, for the closed forms the figures compare with
D, L_TRAIN, SIGMA2 = _TASK["dim"], _TASK["context"], _TASK["noise"]
D_MT = _MULTITASK["dim"]


def task(**given) -> LinearRegression:
    """The preset's task with the task options `given` (e.g. context=, noise=, data_seed=,
    cov_rho=): x ~ N(0, I_d), β ~ N(0, I_d/d), noise σ² on context and query labels."""
    return build_task(resolve(*PAIR, {"task": given}).task)


def multitask_task(**given) -> MultiTaskRegression:
    """The preset's multi-task setting (the text's: shared β ~ N(0, I_6/6), supports {1,2,3,4}
    and {3,4,5,6}, 0-based in code, σ² on every response) with the task options `given`."""
    return build_task(resolve(*MULTITASK, {"task": given}).task)


def trained_heads(quick: bool, heads: tuple[int, ...] | None = None) -> list[RunSpec]:
    """Adam runs of `MultiHeadSoftmax` in the preset's setting with H heads from init and data
    seed H (the paper's 5·10⁵ steps at lr 1e-3; quick: 400 steps at lr 1e-2, far from
    converged)."""
    heads = heads or ((1, 2) if quick else (1, 2, 4, 8))
    train = {"n_records": 60, "n_snapshots": 6} | ({"steps": 400, "lr": 1e-2} if quick else {})
    return [preset_run(f"H{h}", *PAIR, group={"heads": h}, task={"data_seed": h},
                       model={"heads": h, "init_seed": h}, train=train) for h in heads]


def seed_grid(heads: tuple[int, ...] = (1, 2, 4, 8), seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
              ) -> list[RunSpec]:
    """The E4 grid: the preset's (the paper's) 5·10⁵ Adam steps at lr 1e-3 for every H and seed
    s, from init seed s and data seed 100 H + s (labels `H{h}_seed{s}`). `reproduce` trains each
    H's seeds in one call of the fused step (`train_many`); H = 2 reaches dGD(η*) from some seeds
    only."""
    return [preset_run(f"H{h}_seed{s}", *PAIR, group={"heads": h, "seed": s},
                       task={"data_seed": 100 * h + s}, model={"heads": h, "init_seed": s},
                       train={"n_records": 60, "n_snapshots": 6})
            for h in heads for s in seeds]


@contextmanager
def one_thread():
    """Torch on one thread inside (restored after): the figures' Monte Carlo and batched training
    use small ops, which run far slower split across threads on a busy machine."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
