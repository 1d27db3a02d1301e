"""The wishart_tasks family (Mainali & Teixeira 2025 §2): labels y = W x with W = U diag(λ) Uᵀ,
batches pure functions of (data_seed, step), centring / whitening of the task set, fresh tasks."""

import numpy as np
import pytest
import torch

from fastattn.tasks import TASKS, WishartTasks, build_task


def test_registered_and_rebuilt_from_its_record():
    task = WishartTasks(3, spectrum="2,1,0.5", context=5, tasks=4, task_seed=2)
    assert TASKS["wishart_tasks"] is WishartTasks
    from dataclasses import asdict
    again = build_task({"kind": task.kind, **asdict(task)})
    np.testing.assert_array_equal(again.task_eigs, task.task_eigs)


def test_labels_are_the_tasks_and_the_basis_is_orthogonal():
    task = WishartTasks(4, context=6, tasks=5, data_seed=3)
    u = task.U
    np.testing.assert_allclose(u.T @ u, np.eye(4), atol=1e-14)
    b = task.sample(8, step=2)
    w = torch.einsum("ij,bj,kj->bik", torch.as_tensor(u), b.task_eigs, torch.as_tensor(u))
    np.testing.assert_allclose(b.y, torch.einsum("bij,bnj->bni", w, b.x), atol=1e-13)
    np.testing.assert_allclose(b.y_q, torch.einsum("bij,bj->bi", w, b.x_q), atol=1e-13)
    rows = {tuple(r) for r in b.task_eigs.numpy().round(12)}
    assert rows <= {tuple(r) for r in task.task_eigs.round(12)}
    mu = 3
    bt = task.sample_task(mu, 5, step=1)
    np.testing.assert_array_equal(bt.task_eigs, np.tile(task.task_eigs[mu], (5, 1)))
    np.testing.assert_allclose(task.task_matrix(mu), (u * task.task_eigs[mu]) @ u.T)


def test_batches_are_pure_functions_of_seed_and_step():
    task = WishartTasks(2, context=3, tasks=None, data_seed=1)
    a, b, c = task.sample(4, step=7), task.sample(4, step=7), task.sample(4, step=8)
    assert torch.equal(a.x, b.x) and torch.equal(a.task_eigs, b.task_eigs)
    assert not torch.equal(a.x, c.x)
    assert not torch.equal(task.sample_task(0, 4, 1).x, task.sample_task(0, 4, 2).x)


def test_input_covariance_is_u_s_ut():
    task = WishartTasks(3, spectrum="3,1,0.2", context=50, tasks=2, data_seed=0)
    x = task.sample(400, step=0).x.reshape(-1, 3).numpy()          # 20000 samples
    cov = x.T @ x / x.shape[0]
    want = (task.U * task.s) @ task.U.T
    # entries' standard error ≈ sqrt((Σ_ii Σ_jj + Σ_ij²)/n) ≤ 3·sqrt(2)/sqrt(20000) ≈ 0.03
    assert np.max(np.abs(cov - want)) < 0.12


def test_centring_whitening_and_task_statistics():
    plain = WishartTasks(3, tasks=16, task_seed=5)
    cw = WishartTasks(3, tasks=16, task_seed=5, center_tasks=True, whiten_tasks=True)
    np.testing.assert_allclose(cw.task_eigs.mean(0), 0, atol=1e-14)
    np.testing.assert_allclose((cw.task_eigs**2).mean(0), 1, rtol=1e-14)
    assert np.abs(plain.task_eigs.mean(0)).max() > 1e-3
    stats = cw.task_stats()
    np.testing.assert_allclose(stats["omega_diag"], 1, rtol=1e-14)
    np.testing.assert_allclose(WishartTasks(3, tasks=None).omega(), np.eye(3))


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="tasks"):
        WishartTasks(3, tasks=0)
    with pytest.raises(ValueError, match="fresh tasks"):
        WishartTasks(3, tasks=None, center_tasks=True)
    with pytest.raises(ValueError, match="spectrum"):
        WishartTasks(3, spectrum="1,2")
    with pytest.raises(ValueError, match="outside the task set"):
        WishartTasks(3, tasks=2).sample_task(2, 4)
    with pytest.raises(ValueError, match="whiten_tasks"):
        WishartTasks(3).fixed_dataset(4, 0, whiten=True)
