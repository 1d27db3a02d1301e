"""He et al. 2025 sampled training step (pytest-benchmark; no timing asserts).

Setting of the paper's figures: H = 8, d = 5, L = 40, batch 256, Adam, float32, CPU. The anchor is
the authors' structure, re-implemented from spec §1.3 and their repo (read, not copied): per-head
full-width nn.Linear(D, H·D) projections for Q, K, V, nn.Linear(H·D, 1) output, single-query
softmax attention with scale D^-1/2, their data generator (x, x_q ~ N(0, I), β ~ N(0, I/d), noise
std √0.1 on context and query labels), MSELoss and torch.optim.Adam: one step per call. Ours:
`fastattn.training.batched` (R runs laid out [R, P]):

- test_fused_step: the fused C++ step (`_core.he_adam_steps`: data generation, forward, backward,
  reduction and Adam of all R runs), STEPS_PER_CALL steps per call, `threads` threads; time per
  step = mean / STEPS_PER_CALL, per run-step = mean / (STEPS_PER_CALL R).
- test_batched_step: the written-out torch step, one step of all R runs per call (stream "task":
  each run's batch from task.sample; "fast": from the fast stream's generator).

    pytest bench/test_he2025_bench.py --benchmark-only --benchmark-columns=mean,min,rounds \
        -k "authors or fused" --benchmark-max-time=2 --benchmark-min-rounds=10

Groups (bench/groups.py): op he2025_adam_step, shape (R, H, d, L, B), pass "1 step" (the authors'
step and the torch step) or "STEPS_PER_CALL steps" (a fused call), and the thread count.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from groups import label
from torch import nn

from fastattn._core_loader import core as _core
from fastattn.models import MultiHeadSoftmax
from fastattn.tasks import LinearRegression
from fastattn.training.batched import (
    BatchedAdamConfig,
    BatchedState,
    FastLaw,
    FastStream,
    adam_update,
    batch_tokens,
    loss_and_grad,
)

H, d, L, B = 8, 5, 40, 256
D = d + 1
STEPS_PER_CALL = 20


class AuthorsAttention(nn.Module):
    """The authors' model structure (spec §1.3)."""

    def __init__(self):
        super().__init__()
        self.q_proj = nn.Linear(D, D * H, bias=False)
        self.k_proj = nn.Linear(D, D * H, bias=False)
        self.v_proj = nn.Linear(D, D * H, bias=False)
        self.o_proj = nn.Linear(D * H, 1, bias=False)

    def forward(self, z_q, z):
        b = z.shape[0]
        q = self.q_proj(z_q).view(b, 1, H, D).transpose(1, 2)
        k = self.k_proj(z).view(b, -1, H, D).transpose(1, 2)
        v = self.v_proj(z).view(b, -1, H, D).transpose(1, 2)
        w = torch.softmax(q @ k.transpose(-2, -1) * D ** -0.5, -1)
        return self.o_proj((w @ v).transpose(1, 2).reshape(b, 1, H * D))


def authors_data():
    x = torch.randn(B, L, d)
    x_q = torch.randn(B, 1, d)
    beta = torch.randn(B, d, 1) * math.sqrt(1 / d)
    y = x @ beta + math.sqrt(0.1) * torch.randn(B, L, 1)
    y_q = x_q @ beta + math.sqrt(0.1) * torch.randn(B, 1, 1)
    return torch.cat([x_q, torch.zeros_like(y_q)], 2), torch.cat([x, y], 2), y_q


@pytest.fixture(params=[1, 2], ids=lambda t: f"threads{t}")
def threads(request):
    old = torch.get_num_threads()
    torch.set_num_threads(request.param)
    yield request.param
    torch.set_num_threads(old)


def _label(benchmark, runs, steps, impl, threads):
    label(benchmark, "he2025_adam_step", {"R": runs, "H": H, "d": d, "L": L, "B": B},
          f"{steps} step{'s' * (steps > 1)}", impl, threads=threads)


def test_authors_step(benchmark, threads):
    torch.manual_seed(1029)
    model = AuthorsAttention()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.MSELoss()

    def step():
        z_q, z, y_q = authors_data()
        loss = loss_fn(model(z_q, z), y_q)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    _label(benchmark, 1, 1, "authors", threads)
    benchmark(step)


def _runs(runs):
    models = [MultiHeadSoftmax(d, H, init_seed=r, dtype="float32") for r in range(runs)]
    tasks = [LinearRegression(d, context=L, spectrum=[1.0] * d, noise=0.1, w_cov=np.eye(d) / d,
                              data_seed=r) for r in range(runs)]
    return models, tasks


@pytest.mark.parametrize("runs", [1, 4, 20])
def test_fused_step(benchmark, threads, runs):
    models, tasks = _runs(runs)
    state = BatchedState.of(models)
    laws = [FastLaw.of(t) for t in tasks]
    args = dict(seeds=np.array([law.seed for law in laws], dtype=np.uint64),
                lr=np.full(runs, 1e-3), x_factor=np.stack([law.x_factor for law in laws]),
                w_factor=np.stack([law.w_factor for law in laws]),
                noise_std=np.array([law.noise_std for law in laws]), heads=H, dim=d, context=L,
                batch=B, beta1=0.9, beta2=0.999, eps=1e-8, n_steps=STEPS_PER_CALL,
                record_at=np.array([STEPS_PER_CALL - 1]), threads=threads)
    theta, m, v = (b.numpy() for b in (state.theta, state.m, state.v))
    counter = iter(range(0, 10**9, STEPS_PER_CALL))

    def steps():
        return _core.he_adam_steps(theta, m, v, step0=next(counter), **args)

    _label(benchmark, runs, STEPS_PER_CALL, "fused", threads)
    benchmark(steps)


@pytest.mark.parametrize("stream", ["task", "fast"])
@pytest.mark.parametrize("runs", [1, 4, 20])
def test_batched_step(benchmark, threads, runs, stream):
    models, tasks = _runs(runs)
    state = BatchedState.of(models)
    cfg = BatchedAdamConfig(lr=1e-3, steps=1, batch_size=B)
    counter = iter(range(10**9))
    streams = [FastStream(t, torch.float32) for t in tasks]

    def draw():
        k = next(counter)
        if stream == "task":
            return batch_tokens(tasks, B, k, torch.float32)
        return (torch.stack(t) for t in zip(*(s.draw(B, k) for s in streams), strict=True))

    def step():
        z, z_q, y_q = draw()
        loss, grads = loss_and_grad(state.params, z, z_q, y_q)
        adam_update(state, grads, cfg)
        return loss

    _label(benchmark, runs, 1, f"torch-{stream}", threads)
    benchmark(step)
