"""Task-centric SGD (spec §4.2): one batch-mean update per task, epochs of P tasks, time τ = 2η per
update; the reduced model keeps its null blocks at zero; the run follows the exact population flow."""

import numpy as np
import pytest

from fastattn.models import LinearTransformer
from fastattn.tasks import WishartTasks
from fastattn.training import TrainConfig, train
from fastattn.training.task_sgd import task_order


def test_records_time_unit_and_frozen_null_blocks():
    task = WishartTasks(2, spectrum="2,0.5", context=8, tasks=4, center_tasks=True, data_seed=1)
    model = LinearTransformer(2, init_scale=0.1, reduced=True)
    traj = train(model, task, method="task_sgd", lr=0.02, steps=4 * 30, batch_size=16, n_records=10)
    assert traj.status == "steps" and traj.n_evals == 120
    assert traj.step[0] == 0 and traj.step[-1] == 120 and np.all(np.diff(traj.step) > 0)
    np.testing.assert_allclose(traj.time, 2 * 0.02 * traj.step)               # τ = 2η·updates
    blocks = traj.params.reshape(len(traj.params), 4, 2, 2)
    assert np.all(blocks[:, 0] == 0) and np.all(blocks[:, 3] == 0)             # p1, q2 frozen
    pop = traj.test_loss["population"]
    assert pop.shape == traj.loss.shape and pop[-1] < 0.5 * pop[0]
    assert sorted(task_order(task, 3)) == [0, 1, 2, 3]


def test_a_record_is_the_mean_batch_loss_of_the_updates_since_the_last():
    """The recorded loss at step k is the mean of the batch losses of the updates since the
    previous record, as a plain loop over the same task order and batches computes them."""
    import torch

    task = WishartTasks(2, spectrum="2,0.5", context=8, tasks=3, data_seed=5)
    lr, steps, batch = 0.03, 8, 16
    traj = train(LinearTransformer(2, init_scale=0.2, reduced=True), task, method="task_sgd",
                 lr=lr, steps=steps, batch_size=batch, n_records=8)
    model = LinearTransformer(2, init_scale=0.2, reduced=True)
    params = {n: getattr(model, n) for n in model.PARAM_ORDER if getattr(model, n).requires_grad}
    losses = []
    for k in range(steps):
        mu = task_order(task, k // 3)[k % 3]
        b = task.sample_task(int(mu), batch, k, dtype=model.config.torch_dtype)
        loss, grads = model.query_loss_grad(b.x, b.y, b.x_q, b.y_q)
        losses.append(loss)
        with torch.no_grad():
            for name, p in params.items():
                p.sub_(lr * grads[name])
    assert traj.step[-1] == steps and np.diff(traj.step).max() > 1     # records span updates
    for before, at, recorded in zip(traj.step[:-1], traj.step[1:], traj.loss[1:], strict=True):
        assert recorded == pytest.approx(np.mean(losses[before:at]), rel=1e-12), (before, at)


def test_tracks_the_exact_flow_with_small_steps():
    """At small η the SGD path is the population flow at τ = 2ηk (spec §4.3): the exact loss of the
    SGD iterate equals the flow's, up to SGD noise."""
    task = WishartTasks(2, spectrum="2,1", context=16, tasks=None, data_seed=3)
    sgd_model = LinearTransformer(2, init_scale=0.3, reduced=True)
    flow_model = LinearTransformer(2, init_scale=0.3, reduced=True)
    sgd = train(sgd_model, task, method="task_sgd", lr=0.005, steps=400, batch_size=64, n_records=5)
    flow = train(flow_model, task, TrainConfig(method="flow", t_end=float(sgd.time[-1]),
                                                integrator="rk45"))
    assert sgd.test_loss["population"][-1] == pytest.approx(flow.final_loss, rel=0.05)
    assert flow.final_loss < 0.6 * flow.loss[0]


def test_needs_a_model_with_the_query_backward():
    from fastattn.models import MergedKQ
    from fastattn.tasks import LinearRegression

    with pytest.raises(ValueError, match="task_sgd"):
        train(MergedKQ(2, 1), LinearRegression(2), method="task_sgd", lr=0.1, steps=2)
