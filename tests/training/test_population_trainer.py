import numpy as np
import pytest
import torch

from fastattn import population
from fastattn.models import CubicMLP, MergedKQ, SeparateKQ
from fastattn.population import reference
from fastattn.tasks import LinearRegression
from fastattn.training import TrainConfig, train
from helpers import assert_mc_agrees, mc_mean_and_se, random_spd

TASK = LinearRegression(4, context=31, spectrum=[0.4, 0.3, 0.2, 0.1], rotate=True)


def test_gd_is_population_gradient_descent_with_time_two_eta_k():
    lr, steps = 0.3, 200
    m = SeparateKQ(4, 5, init_scale=0.3, init_seed=1)
    theta = m.to_flat()
    moments = TASK.moments()
    traj = train(m, TASK, method="gd", lr=lr, steps=steps, n_records=steps)
    losses = []
    for _ in range(steps + 1):
        loss, grad = reference.loss_and_grad(m.config, theta, moments)
        losses.append(loss)
        theta = theta - lr * grad
    losses = np.asarray(losses)
    np.testing.assert_allclose(traj.loss, losses[traj.step], rtol=1e-10)
    np.testing.assert_allclose(traj.time, 2 * lr * traj.step)
    # the loop took one step past `steps`; the model holds the state after exactly `steps`
    np.testing.assert_allclose(m.to_flat(), theta + lr * grad, rtol=1e-9, atol=1e-13)
    np.testing.assert_array_equal(traj.final_params, m.to_flat())


@pytest.mark.parametrize("make", [lambda: MergedKQ(4, 6, init_scale=1e-2),
                                  lambda: CubicMLP(4, 6, init_scale=1e-2),
                                  lambda: SeparateKQ(4, 5, 1, init_scale=1e-2)])
def test_flow_reaches_the_global_minimum(make):
    m = make()
    traj = train(m, TASK, method="flow", t_end=1e6)
    lam, c = TASK.eigvals, TASK.inv_context_mean()
    minimum = lam.sum() - np.sum(lam / (1 + (1 + lam.sum() / lam) * c))  # Eq. 19 with m = D
    assert abs(traj.final_loss - minimum) < 1e-8
    assert np.all(np.diff(traj.loss) <= 1e-12)   # gradient flow never increases the loss
    assert traj.time[0] == 0 and np.isclose(traj.time[-1], 1e6)


def test_flow_conserves_the_balance_quantities():
    m = SeparateKQ(4, 5, 2, init_scale=0.1, init_seed=3)
    traj = train(m, TASK, method="flow", t_end=3e4, rtol=1e-10, atol=1e-14)
    q = population.conserved_quantities(m.config, traj.params)
    for values in q.values():
        values = np.asarray(values)
        assert np.abs(values - values[0]).max() < 1e-7


def test_sampled_loss_and_gradient_of_the_models_match_the_closed_form(rng):
    """Task sampler + model forward (Monte-Carlo) agree with the population evaluator."""
    d = 3
    task = LinearRegression(d, context=[3, 6, 11], cov=random_spd(rng, d),
                            w_mean=rng.standard_normal(d) * 0.5, noise=0.3,
                            data_seed=int(rng.integers(10**6)))
    for model in (MergedKQ(d, 3, init_scale=1.0, init_seed=int(rng.integers(1000))),
                  SeparateKQ(d, 2, 2, init_scale=1.0, init_seed=int(rng.integers(1000)))):
        b = task.sample(200_000, 0)
        per_seq = (b.y_q - model(b.x, b.y, b.x_q, lengths=b.lengths)) ** 2
        mean, se = mc_mean_and_se(per_seq.detach().numpy())
        loss, grad = population.loss_and_grad(model.config, model.to_flat(), task.moments())
        assert_mc_agrees(mean, se, loss)
        # gradient: per-sequence autograd gradients via the mean over 32 independent chunks
        chunks = []
        for chunk in torch.chunk(per_seq, 32):
            model.zero_grad()
            chunk.mean().backward(retain_graph=True)
            chunks.append(np.concatenate([p.grad.reshape(-1).numpy() for p in
                                          (getattr(model, n) for n in model.PARAM_ORDER)]))
        g_mean, g_se = mc_mean_and_se(np.asarray(chunks))
        assert_mc_agrees(g_mean, g_se, grad, atol=1e-9, dof=len(chunks) - 1)


def test_flow_rejects_models_without_a_closed_form():
    from fastattn.models import MergedKQFull, SoftmaxMergedKQ

    with pytest.raises(ValueError, match=r"method='flow' .* no exact population objective for "
                                         r"task kind 'linear_regression' with model kind "
                                         r"'softmax_merged'"):
        train(SoftmaxMergedKQ(4, 2), TASK, method="flow", t_end=10.0)
    with pytest.raises(ValueError, match=r"method='gd' .*model kind 'merged_full'"):
        train(MergedKQFull(4, 2), TASK, method="gd", lr=0.1, steps=3)


def test_a_stop_between_records_ends_the_trajectory_at_the_final_state():
    m = SeparateKQ(4, 5, init_scale=1e-2, init_seed=1)
    traj = train(m, TASK, method="flow", t_end=1e6, target_loss=0.5, n_records=20)
    assert traj.status == "target_loss" and traj.final_loss <= 0.5 < traj.loss[-2]
    np.testing.assert_array_equal(traj.final_params, m.to_flat())
    assert traj.time[-1] == traj.snapshot_time[-1] < 1e6
    loss, _ = population.loss_and_grad(m.config, m.to_flat(), TASK.moments())
    assert traj.final_loss == loss


def test_one_batched_population_call_equals_single_runs():
    """flow.population_runs (the path the sweeps batch through) gives each run's own trajectory."""
    from fastattn.training import TrainConfig
    from fastattn.training.flow import population_runs

    tasks = [LinearRegression(3, context=n, spectrum=[0.5, 0.3, 0.2], rotate=True, rotation_seed=n)
             for n in (4, 16)]
    cfg = TrainConfig(method="flow", t_end=1e4, integrator="rk45", n_records=30, target_loss=0.45)
    batched, res = population_runs([SeparateKQ(3, 3, init_seed=s) for s in (0, 1)], tasks, cfg)
    assert len(batched) == 2 and len(res.status) == 2
    for s, (task, traj) in enumerate(zip(tasks, batched, strict=True)):
        single = train(SeparateKQ(3, 3, init_seed=s), task, cfg)
        assert traj.status == single.status
        np.testing.assert_array_equal(traj.time, single.time)
        np.testing.assert_allclose(traj.loss, single.loss, rtol=1e-12)
        np.testing.assert_allclose(traj.final_params, single.final_params, rtol=1e-12, atol=1e-15)


def test_events_reach_the_trajectory_and_its_record(tmp_path):
    from fastattn.population import LossEvent
    from fastattn.training import Trajectory, rebuild_run

    m = SeparateKQ(4, 5, init_scale=1e-2, init_seed=1)
    traj = train(m, TASK, method="flow", t_end=1e6, n_records=50,
                 events=(LossEvent(0.8), LossEvent(0.5, terminal=True)))
    assert traj.status == "event" and [e.event for e in traj.events] == [0, 1]
    hit = traj.events[1]
    np.testing.assert_array_equal(hit.params, traj.final_params)
    assert hit.t == traj.time[-1] and abs(traj.final_loss - 0.5) < 1e-6
    back = Trajectory.load(traj.save(tmp_path / "run"))
    assert [(e.event, e.t) for e in back.events] == [(e.event, e.t) for e in traj.events]
    _, _, cfg = rebuild_run(back.config)
    assert cfg.events == (LossEvent(0.8), LossEvent(0.5, terminal=True))
    with pytest.raises(ValueError, match="events are located on exact flows"):
        train(m, TASK, method="sgd", lr=0.1, steps=2, events=(LossEvent(0.5),))


def test_a_task_and_model_given_the_other_way_round_is_one_clear_type_error():
    """`train(task, model)` failed on a missing attribute of the task, deep inside."""
    with pytest.raises(TypeError, match=r"takes a model then a task; got LinearRegression then "
                                        r"SeparateKQ"):
        train(TASK, SeparateKQ(dim=4, heads=2), method="flow", t_end=1.0)


def test_a_keyword_the_method_does_not_read_is_refused_as_the_cli_refuses_its_option():
    """`train(model, task, method="flow", lr=0.1)` ran the flow and ignored lr, where `fastattn
    train --method flow --lr 0.1` is refused."""
    m = SeparateKQ(dim=4, heads=2)
    with pytest.raises(ValueError, match=r"^lr does not apply to method='flow'; drop it, or give "
                                         r"method='adam' \| 'gd' \| 'sgd' \| 'task_sgd'$"):
        train(m, TASK, method="flow", lr=0.1, t_end=1.0)
    with pytest.raises(ValueError, match=r"^t_end, dt do not apply to method='gd'; drop them"):
        train(m, TASK, TrainConfig(method="flow", t_end=1.0), method="gd", lr=0.1, steps=2,
              t_end=1.0, dt=0.1)
