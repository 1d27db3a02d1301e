"""Batched multi-run training of MultiHeadSoftmax: bit-identical runs, equal to train()."""

import numpy as np
import pytest
import torch

from fastattn.models import MultiHeadSoftmax
from fastattn.tasks import LinearRegression
from fastattn.training import train
from fastattn.training.batched import BatchedAdamConfig, loss_and_grad, train_batched

D, L, H = 3, 9, 2


def _task(seed):
    return LinearRegression(D, context=L, spectrum=[1.0] * D, noise=0.1, w_cov=np.eye(D) / D,
                            data_seed=seed)


def test_fused_gradient_equals_autograd():
    model = MultiHeadSoftmax(D, H, init_seed=3)
    batch = _task(0).sample(17, 0)
    loss = ((model(batch.x, batch.y, batch.x_q) - batch.y_q) ** 2).mean()
    expect = torch.autograd.grad(loss, [model.wq, model.wk, model.wv, model.wo])
    params = {n: getattr(model, n).detach()[None] for n in ("wq", "wk", "wv", "wo")}
    z = torch.cat([batch.x, batch.y[..., None]], -1)[None]
    z_q = torch.cat([batch.x_q, torch.zeros(17, 1, dtype=torch.float64)], -1)[None]
    got_loss, grads = loss_and_grad(params, z, z_q, batch.y_q[None])
    torch.testing.assert_close(got_loss[0], loss, rtol=1e-13, atol=0)
    for name, e in zip(("wq", "wk", "wv", "wo"), expect, strict=True):
        torch.testing.assert_close(grads[name][0], e, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize(("dtype", "stream"), [("float64", "task"), ("float32", "task"),
                                             ("float32", "fast")])
def test_each_batched_run_is_bit_identical_to_the_run_alone(dtype, stream):
    cfg = BatchedAdamConfig(lr=1e-2, steps=15, batch_size=32, record_every=5, stream=stream)
    seeds = [(0, 10), (1, 11), (2, 12)]
    models = [MultiHeadSoftmax(D, H, init_seed=i, dtype=dtype) for i, _ in seeds]
    together = train_batched(models, [_task(s) for _, s in seeds], cfg)
    for r, (i, s) in enumerate(seeds):
        alone_model = MultiHeadSoftmax(D, H, init_seed=i, dtype=dtype)
        alone = train_batched([alone_model], [_task(s)], cfg)
        assert np.array_equal(alone.losses[0], together.losses[r])
        assert np.array_equal(alone_model.to_flat(), models[r].to_flat())


def test_batched_run_equals_the_sampled_trainer():
    steps = 12
    model = MultiHeadSoftmax(D, H, init_seed=5)
    reference = MultiHeadSoftmax(D, H, init_seed=5)
    res = train_batched([model], [_task(7)], BatchedAdamConfig(lr=1e-2, steps=steps,
                                                               batch_size=16, record_every=1))
    traj = train(reference, _task(7), method="adam", lr=1e-2, steps=steps, batch_size=16,
                 n_records=steps + 1, n_snapshots=2, progress=False)
    np.testing.assert_allclose(model.to_flat(), reference.to_flat(), rtol=1e-9, atol=1e-12)
    recorded = traj.step < steps
    np.testing.assert_allclose(res.losses[0][traj.step[recorded]], traj.loss[recorded], rtol=1e-9)


def test_mixed_heads_are_rejected():
    with pytest.raises(ValueError, match="heads"):
        train_batched([MultiHeadSoftmax(D, 1), MultiHeadSoftmax(D, 2)], [_task(0), _task(1)],
                      BatchedAdamConfig(steps=1))


def test_fast_stream_has_the_task_distribution():
    from fastattn.training.batched import FastStream

    task = LinearRegression(D, context=L, cov=[[1.0, 0.5, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 2.0]],
                            noise=0.3, w_cov=np.eye(D) / D, data_seed=3)
    z, z_q, y_q = FastStream(task, torch.float64).draw(40_000)
    x = z[..., :D].reshape(-1, D).numpy()
    np.testing.assert_allclose(x.T @ x / len(x), task.cov_matrix, atol=0.02)
    # E y_q² = tr(Λ Σ_w) + σ²
    assert abs(float((y_q ** 2).mean()) - (np.trace(task.cov_matrix) / D + 0.3)) < 0.02
    assert torch.all(z_q[:, -1] == 0)
