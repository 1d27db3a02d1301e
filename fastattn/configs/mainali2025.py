"""Mainali & Teixeira 2025: the linear transformer on U-aligned Wishart task sets (spec mainali2025;
the paper gives no numbers: the defaults are the spec's canonical configuration C0, §9.0)."""

from __future__ import annotations

from fastattn.configs.base import (
    Field,
    ModelCard,
    Preset,
    TaskCard,
    boolean,
    int_or_fresh,
    register_model_card,
    register_task_card,
    set_values,
)
from fastattn.configs.common import DTYPE, INIT, INIT_SEED

WISHART_TASKS = register_task_card(TaskCard(
    "wishart_tasks", "mainali2025", "vector regression y = Λ x with U-aligned task matrices Λ",
    (Field("dim", int, "d, the input and output dimension (tokens are 2d)", 4),
     Field("spectrum", str, "eigenvalues s of Σ_x: a name or comma-separated values (default: s = 1)"),
     Field("context", int, "context pairs N", 32),
     Field("tasks", int_or_fresh, "number P of fixed tasks, or 'fresh' (a new task every sequence)",
           64),
     Field("center_tasks", boolean, "subtract the task set's mean λ", False),
     Field("whiten_tasks", boolean, "rescale each mode of the task set to (1/P) Σ λ² = 1", False),
     Field("rotate", boolean, "a Haar-random U from --rotation-seed (else U = I)", True),
     Field("rotation_seed", int, "seed of U", 0),
     Field("task_seed", int, "seed of the fixed task set", 0),
     Field("data_seed", int, "seed of the training data stream", 0)),
    set_values))

#: C0 (spec §9.0): d = 4, s = (2, 1, .5, .25), N = 32, P = 64, η = 0.01, batch 64, aligned init
#: p2 = q1 = 0.01·I, reduced model, 250 epochs of task-centric SGD (the flow: t = 2ηP·epochs)
C0 = Preset("mainali2025", "spec mainali2025 §9.0 C0: d=4, s=(2,1,.5,.25), N=32, P=64, η=0.01, "
            "batch 64, p2=q1=0.01·I, reduced, 250 epochs",
            task={"dim": 4, "spectrum": "2,1,0.5,0.25", "context": 32, "tasks": 64},
            model={"init_scale": 0.01, "reduced": True, "init_mode": "aligned"},
            train={"method": "task_sgd", "lr": 0.01, "steps": 64 * 250, "batch_size": 64},
            methods={"flow": {"t_end": 2 * 0.01 * 64 * 250, "integrator": "rk45"}})


def _linear_transformer(dims):
    d = dims[0]
    return tuple((name, (d, d)) for name in ("p1", "p2", "q1", "q2"))


register_model_card(ModelCard(
    "linear_transformer", "mainali2025", "f(Z) = Z + W^P (ZZᵀ/N) W^Q Z, blocks p1, p2, q1, q2",
    (INIT, INIT_SEED, DTYPE,
     Field("init_mode", str, "aligned (p2 = q1 = init·I, p1 = q2 = 0) | gaussian (every block "
           "N(0, init²))", "aligned", choices=("aligned", "gaussian")),
     Field("init_noise", float, "std of noise added to every block", 0.0),
     Field("reduced", boolean, "freeze the null blocks p1 = q2 = 0", False)),
    _linear_transformer, {"wishart_tasks": (C0,)}))
