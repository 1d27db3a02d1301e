"""pytest-benchmark cases of the doors table (bench/doors.py), one per row, each door beside its
engine or anchor at small sizes (no timing asserts):

    python -m pytest bench/test_doors_bench.py --benchmark-only --benchmark-columns=mean,min,rounds
"""

from __future__ import annotations

import subprocess
import sys

import doors
import numpy as np
import pytest
import torch

from fastattn.models import MultiHeadSoftmax, build_model, config_from_dict
from fastattn.tasks import WishartTasks
from fastattn.training import train, train_many
from fastattn.training.batched import BatchedAdamConfig, train_batched

STEPS = 200


@pytest.fixture(autouse=True)
def _one_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def _he_model():
    return MultiHeadSoftmax(doors.HE["dim"], doors.HE["heads"], init_seed=0, dtype="float32")


# row 1: He H = 2
def test_he_authors_step(benchmark):
    benchmark(doors.authors_step, 5)


def test_he_train_door(benchmark):
    benchmark(lambda: train(_he_model(), doors._he_task(), method="adam", lr=1e-3, steps=STEPS,
                            batch_size=doors.HE["batch"], progress=False))


def test_he_fast_stream_batch(benchmark):
    """The fused step's data generator alone: one batch (B 256, L 40, d 5) of the fast stream."""
    from fastattn._core_loader import core

    d = doors.HE["dim"]
    benchmark(core.he_sample, 0, 1, dim=d, context=doors.HE["context"], batch=doors.HE["batch"],
              x_factor=np.eye(d), w_factor=np.eye(d) / np.sqrt(d), noise_std=0.1, float64=False)


def test_he_engine(benchmark):
    cfg = BatchedAdamConfig(lr=1e-3, steps=STEPS, batch_size=doors.HE["batch"], stream="fast",
                            backend="fused", threads=1)
    benchmark(lambda: train_batched([_he_model()], [doors._he_task()], cfg))


# row 2: E4's runs through the recipes' path
def test_e4_train_many(benchmark):
    from fastattn.experiments.he2025.settings import trained_heads

    specs = trained_heads(quick=True)
    benchmark(lambda: train_many([build_model(s.model) for s in specs], [s.task for s in specs],
                                 [s.train for s in specs]))


# row 3: Mainali C0 full model and its reduced anchor
@pytest.mark.parametrize("reduced", [False, True], ids=["full", "reduced"])
def test_mainali_full_flow(benchmark, reduced):
    task = WishartTasks(4, spectrum="2,1,0.5,0.25", context=32, tasks=None)
    benchmark(lambda: train(build_model(config_from_dict(
        {"kind": "linear_transformer", "dim": 4, "reduced": reduced})), task, method="flow",
        t_end=1e6, progress=False))


# row 4: the first train() of a process (exact flow D = 8), in a fresh interpreter
def test_first_train_call(benchmark):
    env = {"PYTHONPATH": str(doors.ROOT / "bench")}
    benchmark.pedantic(lambda: subprocess.run([sys.executable, "-c", doors._FIRST_CALL],
                                              check=True, capture_output=True,
                                              env={**__import__("os").environ, **env}),
                       rounds=2, iterations=1)


# row 5: start-up
@pytest.mark.parametrize("args", [["--help"], ["train", "--help"]], ids=["help", "train-help"])
def test_cli_help(benchmark, args):
    benchmark.pedantic(lambda: doors._cli(args), rounds=2, iterations=1)


# row 6: Musat gram19 (N = 64 here), auto against the fixed integrators
@pytest.mark.parametrize("method", ["auto", "stabilized", "stiff_krylov"])
def test_musat_gram19(benchmark, method):
    from fastattn.population import emergence as th

    benchmark.pedantic(lambda: th.gram19_emergence_times(64, method=method), rounds=2,
                       iterations=1)


# row 7: Mainali loss_grad in the original basis (random U, a finite task set's Ω) against 4
# dense products
@pytest.mark.parametrize("d", [64, 256])
def test_mainali_loss_grad(benchmark, d):
    from fastattn.population import WishartReducedObjective

    rng = np.random.default_rng(0)
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    lam = rng.standard_normal((64, d))
    obj = WishartReducedObjective(np.linspace(2, 0.1, d), 32, lam.T @ lam / 64,
                                  q * np.sign(np.diag(r)))
    theta = rng.standard_normal(4 * d * d) / d
    benchmark(obj.loss_grad, theta)


@pytest.mark.parametrize("d", [64, 256])
def test_four_products_floor(benchmark, d):
    a, b = np.random.default_rng(0).standard_normal((2, d, d))
    benchmark(lambda: [a @ b for _ in range(4)])
