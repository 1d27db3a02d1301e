"""The linear transformer of Mainali & Teixeira 2025: its matrix-free query prediction equals the
literal f(Z) = Z + W^P (ZZᵀ/N) W^Q Z (spec §13.1), the blocks outside p and q get exactly zero
gradient (§13.2), and the hand-written backward equals autograd."""

import numpy as np
import pytest
import torch

from fastattn.models import LinearTransformer, build_model, config_from_dict, config_to_dict
from fastattn.models import reference as ref
from fastattn.tasks import WishartTasks


def _z(batch):
    """Z `[B, 2d, N+1]`: columns [x_i; y_i], the last [x_q; 0]."""
    top = torch.cat([batch.x, batch.x_q[:, None]], 1)
    bot = torch.cat([batch.y, torch.zeros_like(batch.x_q)[:, None]], 1)
    return torch.cat([top, bot], 2).transpose(1, 2)


def _setup(rng, d=3, n=5):
    task = WishartTasks(d, spectrum=",".join(map(str, rng.uniform(0.2, 2, d))),
                        context=n, tasks=7, data_seed=int(rng.integers(1000)))
    model = LinearTransformer(d, init_mode="gaussian", init_scale=0.7,
                              init_seed=int(rng.integers(1000)))
    return task, model, task.sample(6, step=int(rng.integers(100)))


@pytest.mark.parametrize("d,n", [(1, 1), (3, 5), (4, 8)])
def test_prediction_is_the_literal_formula(rng, d, n):
    task, model, batch = _setup(rng, d, n)
    g = torch.Generator().manual_seed(int(rng.integers(2**31)))
    wp = torch.randn(2 * d, 2 * d, generator=g, dtype=torch.float64)
    wq = torch.randn(2 * d, 2 * d, generator=g, dtype=torch.float64)
    wp[d:, :d], wp[d:, d:] = model.p1.detach(), model.p2.detach()
    wq[:d, :d], wq[d:, :d] = model.q1.detach(), model.q2.detach()
    literal = ref.linear_transformer(_z(batch), wp, wq, n)[:, d:, -1]
    fast = model(batch.x, batch.y, batch.x_q).detach()
    assert float((fast - literal).abs().max()) < 1e-12 * float(literal.abs().max())
    # with p1 = 0 the query term vanishes: ŷ = p2 W Σ̂ (q1 + Wᵀ q2) x_q exactly (spec §3.3)
    with torch.no_grad():
        model.p1.zero_()
    u = torch.as_tensor(task.U)
    w = torch.einsum("ij,bj,kj->bik", u, batch.task_eigs, u)
    cov = batch.x.transpose(1, 2) @ batch.x / n
    b = model.q1.detach() + w.transpose(1, 2) @ model.q2.detach()
    want = torch.einsum("ij,bjk,bkl,blm,bm->bi", model.p2.detach(), w, cov, b, batch.x_q)
    got = model(batch.x, batch.y, batch.x_q).detach()
    assert float((got - want).abs().max()) < 1e-12 * float(want.abs().max())


def test_blocks_outside_p_and_q_get_exactly_zero_gradient(rng):
    d, n = 3, 4
    _, _, batch = _setup(rng, d, n)
    g = torch.Generator().manual_seed(int(rng.integers(2**31)))
    wp = torch.randn(2 * d, 2 * d, generator=g, dtype=torch.float64, requires_grad=True)
    wq = torch.randn(2 * d, 2 * d, generator=g, dtype=torch.float64, requires_grad=True)
    out = ref.linear_transformer(_z(batch), wp, wq, n)[:, d:, -1]
    (0.5 * ((out - batch.y_q) ** 2).sum()).backward()
    assert torch.all(wp.grad[:d] == 0) and torch.all(wq.grad[:, d:] == 0)
    assert torch.all(wp.grad[d:] != 0) and torch.all(wq.grad[:, :d] != 0)


def test_hand_written_backward_equals_autograd(rng):
    task, model, batch = _setup(rng, 3, 6)
    loss, grads = model.query_loss_grad(batch.x, batch.y, batch.x_q, batch.y_q)
    auto = task.loss(model, batch)
    auto.backward()
    assert loss == pytest.approx(auto.item(), rel=1e-13)
    for name in model.PARAM_ORDER:
        want = getattr(model, name).grad
        assert float((grads[name] - want).abs().max()) < 1e-12 * float(want.abs().max())


def test_reduced_model_freezes_the_null_blocks_and_round_trips():
    model = LinearTransformer(4, reduced=True, init_scale=0.01, init_noise=1e-4, init_seed=3)
    assert torch.all(model.p1 == 0) and torch.all(model.q2 == 0)
    assert not model.p1.requires_grad and model.p2.requires_grad
    assert model.to_flat().shape == (64,)
    again = build_model(config_from_dict(config_to_dict(model.config)))
    np.testing.assert_array_equal(again.to_flat(), model.to_flat())
    aligned = LinearTransformer(2, init_scale=0.1)
    np.testing.assert_array_equal(aligned.p2.detach().numpy(), 0.1 * np.eye(2))


def test_bad_config_is_named():
    with pytest.raises(ValueError, match="one head"):
        LinearTransformer(3, heads=2)
    with pytest.raises(ValueError, match="init_mode"):
        LinearTransformer(3, init_mode="orthogonal")


def test_full_model_keeps_null_blocks_small_on_centred_tasks(tmp_path):
    """Spec §13 test 9 (the hard test) through the CLI, shortened to 800 of its 12,800 updates:
    task-centric SGD of the full model (`--reduced false`) on a centred P = 64 task set leaves
    ‖p1‖, ‖q2‖ < 0.1 (0.018, 0.016 here; above 0.1 when p1 and q2 share one tensor, issue 23),
    read from the run record."""
    from fastattn.cli import main
    from fastattn.training import Trajectory

    assert main(["train", "--task", "wishart_tasks", "--model", "linear_transformer", "--dim", "4",
                 "--spectrum", "2,1,0.5,0.25", "--context", "32", "--tasks", "64", "--center-tasks",
                 "true", "--init-scale", "0.01", "--reduced", "false", "--method", "task_sgd", "--lr",
                 "0.01", "--batch-size", "64", "--steps", "800", "--out", str(tmp_path)]) == 0
    traj = Trajectory.load(tmp_path / "run.json")
    # the full model trained p1 and q2 (the reduced one, the C0 preset's, freezes them at exactly 0
    # and would pass the bounds below whatever the code does)
    assert traj.config["model"]["reduced"] is False
    assert traj.series["norm_p1"][-1] > 0 and traj.series["norm_q2"][-1] > 0
    assert traj.series["norm_p1"][-1] < 0.1
    assert traj.series["norm_q2"][-1] < 0.1
    p2 = traj.params[-1].reshape(4, 16)[1]
    assert np.linalg.norm(p2) > 1     # the main pathway did learn


@pytest.mark.parametrize("method,reduced", [("task_sgd", False), ("sgd", False), ("gd", True),
                                            ("flow", True)])
def test_every_run_records_the_null_block_norms(tmp_path, method, reduced):
    """Spec §6.7: a run of the linear transformer, exact or sampled, records ‖p1‖_F and ‖q2‖_F at
    every snapshot; they survive the run record and end at the trained model's blocks."""
    from fastattn.training import Trajectory, train

    task = WishartTasks(2, spectrum="1,0.5", context=4, tasks=4)
    model = LinearTransformer(2, init_scale=0.3, init_noise=0.05, reduced=reduced)
    extra = {"t_end": 1.0} if method == "flow" else {"steps": 20, "lr": 0.05}
    if method in ("sgd", "task_sgd"):
        extra["batch_size"] = 8
    traj = Trajectory.load(train(model, task, method=method, **extra).save(tmp_path / "run"))
    assert set(traj.series) == {"norm_p1", "norm_q2"}
    for name, block in (("norm_p1", model.p1), ("norm_q2", model.q2)):
        assert traj.series[name].shape == traj.snapshot_time.shape
        assert traj.series[name][-1] == pytest.approx(float(block.detach().norm()), rel=1e-12)
    if not reduced:
        assert traj.series["norm_p1"][-1] > 0
