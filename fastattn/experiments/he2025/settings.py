"""The paper's setting (spec §2.1, §3.2) and the runs several figures share."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import torch

from fastattn.experiments.recipe import RunSpec
from fastattn.models import MultiHeadSoftmaxConfig
from fastattn.tasks import LinearRegression, MultiTaskRegression
from fastattn.tasks.multitask_regression import PAPER_SUPPORTS
from fastattn.training import TrainConfig

D, L_TRAIN, SIGMA2 = 5, 40, 0.1


def task(d: int = D, context: int = L_TRAIN, sigma2: float = SIGMA2, data_seed: int = 0,
         cov: np.ndarray | None = None) -> LinearRegression:
    """x ~ N(0, I_d) (or N(0, cov)), β ~ N(0, I_d/d), noise σ² on context and query labels."""
    spectrum = None if cov is not None else [1.0] * d
    return LinearRegression(d, context=context, spectrum=spectrum, cov=cov, noise=sigma2,
                            w_cov=np.eye(d) / d, data_seed=data_seed)


def trained_heads(quick: bool, heads: tuple[int, ...] | None = None) -> list[RunSpec]:
    """Adam runs of `MultiHeadSoftmax` at d = 5, L = 40, σ² = 0.1, batch 256 (the paper's 5·10⁵
    steps at lr 1e-3; quick: 400 steps at lr 1e-2, far from converged)."""
    heads = heads or ((1, 2) if quick else (1, 2, 4, 8))
    steps, lr = (400, 1e-2) if quick else (500_000, 1e-3)
    cfg = TrainConfig(method="adam", lr=lr, steps=steps, batch_size=256, n_records=60,
                      n_snapshots=6)
    return [RunSpec(f"H{h}", task(data_seed=h), MultiHeadSoftmaxConfig(D, h, init_seed=h,
                                                                       dtype="float32"),
                    cfg, group={"heads": h}) for h in heads]


def seed_grid(heads: tuple[int, ...] = (1, 2, 4, 8), seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
              ) -> list[RunSpec]:
    """The E4 grid: the paper's 5·10⁵ Adam steps at lr 1e-3 for every H and seed s, from init seed
    s and data seed 100 H + s (labels `H{h}_seed{s}`). `reproduce` trains each H's seeds in one
    call of the fused step (`train_many`); H = 2 reaches dGD(η*) from some seeds only."""
    cfg = TrainConfig(method="adam", lr=1e-3, steps=500_000, batch_size=256, n_records=60,
                      n_snapshots=6)
    return [RunSpec(f"H{h}_seed{s}", task(data_seed=100 * h + s),
                    MultiHeadSoftmaxConfig(D, h, init_seed=s, dtype="float32"), cfg,
                    group={"heads": h, "seed": s}) for h in heads for s in seeds]


#: the multi-task experiment (spec §2.3, E11): N = 2 tasks on d = 6 with S_1 = {1..4}, S_2 = {3..6}
D_MT = 6


def multitask_task(context: int = L_TRAIN, data_seed: int = 0, **kw) -> MultiTaskRegression:
    """The text's multi-task setting: shared β ~ N(0, I_6/6), supports {1,2,3,4} and {3,4,5,6}
    (0-based in code), σ² = 0.1 on every response; `kw` selects the code's variant (spec §9.3)."""
    return MultiTaskRegression(D_MT, PAPER_SUPPORTS, context=context, noise=SIGMA2,
                               data_seed=data_seed, **kw)


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
