"""The paper's setting (spec §2.1, §3.2) and the runs several figures share."""

from __future__ import annotations

import numpy as np

from fastattn.experiments.recipe import RunSpec
from fastattn.models import MultiHeadSoftmaxConfig
from fastattn.tasks import LinearRegression
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
