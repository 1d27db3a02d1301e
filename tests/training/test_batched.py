"""Batched multi-run training of MultiHeadSoftmax: bit-identical runs, equal to train(); the fused
C++ step equal to the torch step on the same batches; the fast stream's generator equal to its
float64 reference (Philox + Box-Muller in torch)."""

import numpy as np
import pytest
import torch

from fastattn._core_loader import core as _core
from fastattn.models import MultiHeadSoftmax
from fastattn.ops import BackendUnavailableError
from fastattn.tasks import LinearRegression
from fastattn.training import train
from fastattn.training.batched import (
    BatchedAdamConfig,
    FastLaw,
    FastStream,
    loss_and_grad,
    train_batched,
)
from fastattn.triton_kernels.he_train_step.reference import normals_reference, sample_reference

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


@pytest.mark.parametrize(("dtype", "stream", "backend"), [
    ("float64", "task", "torch"), ("float32", "task", "torch"), ("float32", "fast", "torch"),
    ("float32", "fast", "fused"), ("float64", "fast", "fused")])
def test_each_batched_run_is_bit_identical_to_the_run_alone(dtype, stream, backend):
    # fused with 2 threads: R = 3 splits the runs, R = 1 the chunks of prompts (batch 37 leaves a
    # partial chunk); the two schedules must give the same bits
    cfg = BatchedAdamConfig(lr=1e-2, steps=15, batch_size=37, record_every=5, stream=stream,
                            backend=backend, threads=2)
    seeds = [(0, 10), (1, 11), (2, 12)]
    models = [MultiHeadSoftmax(D, H, init_seed=i, dtype=dtype) for i, _ in seeds]
    together = train_batched(models, [_task(s) for _, s in seeds], cfg)
    assert together.extras["backend"] == backend
    for r, (i, s) in enumerate(seeds):
        alone_model = MultiHeadSoftmax(D, H, init_seed=i, dtype=dtype)
        alone = train_batched([alone_model], [_task(s)], cfg)
        assert np.array_equal(alone.losses[0], together.losses[r])
        assert np.array_equal(alone_model.to_flat(), models[r].to_flat())


@pytest.mark.parametrize("noise", [0.2, 0.0])
def test_fused_step_equals_the_torch_step_on_the_same_batches(noise):
    """float64, R = 2 runs with their own learning rates, the fast stream's batches (without
    label noise the generator skips the noise's normals)."""
    tasks = [LinearRegression(D, context=L, cov=[[1.0, 0.3, 0.0], [0.3, 1.0, 0.0], [0.0, 0.0, 0.5]],
                              noise=noise, w_cov=np.eye(D) / D, data_seed=s) for s in (4, 9)]
    runs = {}
    for backend in ("fused", "torch"):
        models = [MultiHeadSoftmax(D, H, init_seed=i) for i in (1, 2)]
        cfg = BatchedAdamConfig(steps=6, batch_size=21, record_every=2, stream="fast",
                                backend=backend)
        res = train_batched(models, tasks, cfg, lrs=[1e-2, 3e-3])
        runs[backend] = (res.losses, np.stack([m.to_flat() for m in models]))
    np.testing.assert_allclose(runs["fused"][0], runs["torch"][0], rtol=1e-12)
    np.testing.assert_allclose(runs["fused"][1], runs["torch"][1], rtol=1e-10, atol=1e-13)


def test_fused_backend_refuses_the_task_stream_and_auto_says_why():
    cfg = BatchedAdamConfig(steps=2, batch_size=8, stream="task", backend="fused")
    with pytest.raises(BackendUnavailableError, match="stream='task'"):
        train_batched([MultiHeadSoftmax(D, H)], [_task(0)], cfg)
    res = train_batched([MultiHeadSoftmax(D, H)], [_task(0)],
                        BatchedAdamConfig(steps=2, batch_size=8, stream="task"))
    assert res.extras["backend"] == "torch" and "stream='task'" in res.extras["fallback"]


def test_fast_stream_normals_equal_the_float64_reference():
    # float32 polynomials for log, sin, cos and Newton steps for √ in the core
    for seed, step, prompt in [(0, 0, 0), (12345, 7, 3), (2**40 + 5, 2**33 + 1, 255)]:
        got = _core.he_normals(seed, step, prompt, dim=D, context=L)
        want = normals_reference(seed, step, torch.tensor([prompt]), len(got))[0]
        np.testing.assert_allclose(got, want.numpy(), rtol=0, atol=2e-5)


@pytest.mark.parametrize("noise", [0.3, 0.0])
def test_fast_stream_batch_is_a_pure_function_of_seed_and_step(noise):
    # noise 0: the generator skips the label noise's normals; the reference draws them all
    task = LinearRegression(D, context=L, cov=[[1.0, 0.5, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 2.0]],
                            noise=noise, w_cov=np.eye(D) / D, data_seed=3)
    stream, law = FastStream(task, torch.float64), FastLaw.of(task)
    z, z_q, y_q = stream.draw(19, 5)
    prefix = stream.draw(7, 5)  # a smaller batch is the first prompts of a larger one
    for a, b in zip(prefix, (z, z_q, y_q), strict=True):
        assert torch.equal(a, b[:7])
    ref = sample_reference(3, 5, 19, L, torch.from_numpy(law.x_factor),
                           torch.from_numpy(law.w_factor), law.noise_std)
    for a, b in zip((z, z_q, y_q), ref, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-4)
    assert not torch.equal(stream.draw(19, 6)[0], z)


def test_batched_run_equals_the_sampled_trainer():
    steps = 12
    model = MultiHeadSoftmax(D, H, init_seed=5)
    reference = MultiHeadSoftmax(D, H, init_seed=5)
    res = train_batched([model], [_task(7)], BatchedAdamConfig(lr=1e-2, steps=steps,
                                                               batch_size=16, record_every=1))
    traj = train(reference, _task(7), method="adam", lr=1e-2, steps=steps, batch_size=16,
                 sampler="tokens", n_records=steps + 1, n_snapshots=2, progress=False)
    np.testing.assert_allclose(model.to_flat(), reference.to_flat(), rtol=1e-9, atol=1e-12)
    recorded = traj.step < steps
    np.testing.assert_allclose(res.losses[0][traj.step[recorded]], traj.loss[recorded], rtol=1e-9)


def test_mixed_heads_are_rejected():
    with pytest.raises(ValueError, match="heads"):
        train_batched([MultiHeadSoftmax(D, 1), MultiHeadSoftmax(D, 2)], [_task(0), _task(1)],
                      BatchedAdamConfig(steps=1))


def test_fast_stream_has_the_task_distribution():
    task = LinearRegression(D, context=L, cov=[[1.0, 0.5, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 2.0]],
                            noise=0.3, w_cov=np.eye(D) / D, data_seed=3)
    z, z_q, y_q = FastStream(task, torch.float64).draw(40_000, 0)
    x = z[..., :D].reshape(-1, D).numpy()
    np.testing.assert_allclose(x.T @ x / len(x), task.cov_matrix, atol=0.02)
    # E y_q² = tr(Λ Σ_w) + σ²
    assert abs(float((y_q ** 2).mean()) - (np.trace(task.cov_matrix) / D + 0.3)) < 0.02
    assert torch.all(z_q[:, -1] == 0)
