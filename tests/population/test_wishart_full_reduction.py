"""The full Wishart model with fresh tasks is trained exactly through the reduced C++ objective:
p1 = q2 = 0 is invariant (the full model's own flow stays there to rounding) and the full and reduced
flows from there coincide; a fixed task set, which breaks the λ → −λ symmetry, is not reduced."""

import numpy as np
import pytest

from fastattn import population
from fastattn.models import build_model, config_from_dict
from fastattn.population.wishart_tasks import FullModelObjective, WishartReducedObjective
from fastattn.tasks.wishart_tasks import WishartTasks
from fastattn.training import train

D = 3


def _model(**kw):
    return build_model(config_from_dict({"kind": "linear_transformer", "dim": D,
                                         "init_scale": 0.3, **kw}))


@pytest.mark.slow
def test_full_model_flow_stays_on_p1_q2_zero_and_equals_the_reduced_flow():
    task = WishartTasks(D, spectrum="2,1,0.5", tasks=None, context=8)
    full = FullModelObjective(task.s, task.context, task.U, None)
    theta0 = _model(init_noise=0.05).to_flat()
    theta0[:D * D] = theta0[3 * D * D:] = 0
    opts = dict(method="rk45", t_end=4.0, rtol=1e-10, atol=1e-13, record_times=(1.0, 4.0),
                record_params=True)
    slow = population.integrate(full, theta0, **opts)       # the full model's own flow (torch)
    fast = population.integrate(full.reduction_at(theta0), theta0, **opts)
    assert isinstance(full.reduction_at(theta0), WishartReducedObjective)
    blocks = np.asarray(slow.params).reshape(-1, 4, D, D)
    assert np.abs(blocks[:, [0, 3]]).max() < 1e-14 * np.abs(blocks).max()
    np.testing.assert_allclose(fast.params, slow.params, rtol=0, atol=1e-8)
    np.testing.assert_allclose(fast.loss, slow.loss, rtol=1e-10)
    # the full model's p1 and q2 gradients vanish all along the flow (odd in W)
    for theta in np.asarray(fast.params):
        _, g = full.loss_grad(theta)
        assert np.abs(g.reshape(4, D, D)[[0, 3]]).max() < 1e-14


def test_train_uses_the_reduction_only_where_it_is_exact():
    fresh = WishartTasks(D, spectrum="2,1,0.5", tasks=None, context=8)
    traj = train(_model(), fresh, method="flow", t_end=1e3)
    assert "WishartReducedObjective" in traj.backend["engine"]
    assert "reduction" in traj.backend
    fixed = WishartTasks(D, spectrum="2,1,0.5", tasks=5, context=8)
    full = FullModelObjective(fixed.s, fixed.context, fixed.U, fixed.task_eigs)
    theta = _model().to_flat()
    assert full.reduction_at(theta) is None
    _, g = full.loss_grad(theta)                   # a fixed task set drives p1, q2 off zero
    assert np.abs(g.reshape(4, D, D)[[0, 3]]).max() > 1e-6
    noisy = _model(init_noise=0.01)                # off the invariant set: the full objective
    assert full.reduction_at(noisy.to_flat()) is None
