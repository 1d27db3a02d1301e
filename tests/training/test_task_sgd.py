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
