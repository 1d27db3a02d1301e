"""Events: crossings of a coordinate or of the loss, located by dense output within each accepted
step, against exact crossing times of closed-form flows and dense records of a Zhang flow."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq

from fastattn._core_loader import core
from fastattn.experiments.zhang2025 import fig3_setting
from fastattn.population import (
    CoordinateEvent,
    FlowOptions,
    LossEvent,
    integrate,
    loss_and_grad,
    make_evaluator,
)

from .analytic import QuadraticWithHessian, StiffDiagonal

METHODS = ("rk45", "stiff", "stiff_krylov", "stabilized", "auto")


def run(objective, params0, **options):
    method = options.pop("method")
    return core.integrate(objective, np.asarray(params0, dtype=np.float64),
                          core.Options(method=core.Method.__members__[method], **options))


def _diagonal_quadratic():
    """L = ½ Σ h_i θ_i², θ_i(t) = θ_i(0) e^{−h_i t/2}."""
    h = np.array([0.5, 1.0, 4.0, 10.0])
    return QuadraticWithHessian(np.diag(h)), h, np.array([2.0, -1.5, 1.0, 3.0])


@pytest.mark.parametrize("method", [*METHODS, "rk4"])
def test_coordinate_and_loss_crossings_at_exact_times(method):
    obj, h, th = _diagonal_quadratic()
    t_coord = -2 * np.log(0.5 / 2.0) / h[0]           # θ_0 falls through 0.5
    t_up = -2 * np.log(0.4 / 1.5) / h[1]              # θ_1 rises through −0.4

    def loss(t):
        return 0.5 * np.sum(h * (th * np.exp(-h * t / 2)) ** 2)

    level = 0.1 * loss(0.0)
    t_loss = brentq(lambda t: loss(t) - level, 0.0, 50.0, xtol=1e-14)
    events = [core.Event(index=0, level=0.5), core.Event(index=1, level=-0.4, direction=1),
              core.Event(index=1, level=-0.4, direction=-1), core.Event(level=level)]
    kw = {"dt": 0.01} if method == "rk4" else {"rtol": 1e-9, "atol": 1e-12}
    r = run(obj, th, method=method, t_end=20.0, events=events, **kw)
    assert r["status"] == ["t_end"]
    hits = r["events"][0]
    assert [e for e, _, _ in hits] == sorted([0, 1, 3], key=lambda e: {0: t_coord, 1: t_up, 3: t_loss}[e])
    times = {e: t for e, t, _ in hits}
    for e, t_exact in ((0, t_coord), (1, t_up), (3, t_loss)):
        assert times[e] == pytest.approx(t_exact, rel=1e-6, abs=0), (e, times[e], t_exact)
    for _, t, state in hits:
        np.testing.assert_allclose(state, th * np.exp(-h * t / 2), rtol=0, atol=1e-7)


@pytest.mark.parametrize("method", METHODS)
def test_terminal_event_stops_the_run_there(method):
    obj = StiffDiagonal(np.geomspace(1.0, 50.0, 5))
    th = np.linspace(0.5, 1.0, 5)
    L0 = obj.loss_at(th, 0.0)
    t_star = brentq(lambda t: obj.loss_at(th, t) - 0.2 * L0, 0.0, 10.0, xtol=1e-14)
    rec = np.linspace(0, 10, 401)  # several inside the step that crosses (auto interpolates them)
    r = run(obj, th, method=method, t_end=10.0, rtol=1e-9, atol=1e-12, record_times=rec,
            events=[core.Event(level=0.2 * L0, terminal=True)])
    assert r["status"] == ["event"]
    assert r["t_final"][0] == pytest.approx(t_star, rel=1e-6)
    (e, t, state), = r["events"][0]
    assert e == 0 and t == r["t_final"][0]
    np.testing.assert_array_equal(r["final_params"][0], state)
    np.testing.assert_allclose(state, obj.flow(th, t_star), rtol=0, atol=1e-7)
    # records stop before the event; those before it are on the flow (auto interpolates the ones
    # inside the step the event cut short)
    before = rec < t_star
    assert np.all(np.isnan(r["loss"][0][~before]))
    np.testing.assert_allclose(r["loss"][0][before], [obj.loss_at(th, t) for t in rec[before]], rtol=1e-6)


def test_loss_crossing_a_plateau_level_on_a_zhang_flow():
    """Fig. 3 (separate, D = 4, H = 5; plateaus at L ≈ 1, 0.64, 0.38, 0.21, 0.14): the loss falls
    through 0.5 between the second and third plateaus. The event's time lies between the dense
    records that bracket the crossing, and its state's loss is the level; a coordinate event in the
    caller's basis (the integrators work in Λ's eigenbasis) lands on its level too."""
    task, model = fig3_setting(1e-2, seed=0)
    config, m, th = model.config, task.moments(), model.to_flat()
    obj = make_evaluator(config, m)
    rec = np.linspace(0, 8000, 4001)
    dense = core.integrate(obj, th, core.Options(method=core.Method.auto, t_end=8000.0, record_times=rec,
                                                  record_params=True, rtol=1e-8, atol=1e-12))
    loss, params = dense["loss"][0], dense["params"][0]
    level = 0.5
    assert loss[0] > 0.6 > level > loss[-1]
    j = int(np.argmax(loss < level))
    coord = 36                                      # a query weight of the last head: 0.002 → 0.08
    c_level = 0.5 * (params[0, coord] + params[j, coord])
    events = [core.Event(level=level, terminal=True), core.Event(index=coord, level=c_level)]
    for method in ("auto", "stiff", "rk45"):
        r = core.integrate(obj, th, core.Options(method=core.Method.__members__[method], t_end=8000.0,
                                                  rtol=1e-8, atol=1e-12, events=events))
        assert r["status"] == ["event"]
        assert rec[j - 1] < r["t_final"][0] <= rec[j]
        hits = r["events"][0]
        assert [e for e, _, _ in hits] == [1, 0]
        # the cubic Hermite interpolant is O(h⁴) a step: a little less accurate than Dormand-Prince's
        # own steps (1.2e-6 here at rtol 1e-8; Rodas4: 2e-9)
        assert loss_and_grad(config, hits[1][2], m)[0] == pytest.approx(level, rel=1e-5)
        assert hits[0][2][coord] == pytest.approx(c_level, rel=1e-5)


def test_events_are_validated():
    obj, _, th = _diagonal_quadratic()
    with pytest.raises(ValueError, match="out of range"):
        run(obj, th, method="rk45", events=[core.Event(index=4, level=0.0)])
    with pytest.raises(ValueError, match="direction"):
        core.Options(events=[core.Event(level=0.0, direction=2)])


def test_the_python_face_returns_event_hits():
    """FlowOptions' CoordinateEvent / LossEvent through fastattn.population.integrate: EventHit per
    crossing (a list per model for a batch)."""
    obj, h, th = _diagonal_quadratic()
    t_coord = -2 * np.log(0.5 / 2.0) / h[0]
    opts = FlowOptions(t_end=20.0, rtol=1e-9, atol=1e-12,
                       events=(CoordinateEvent(0, 0.5, direction=-1, terminal=True), LossEvent(1e-3)))
    r = integrate(obj, th, opts)
    assert r.status == "event" and r.t_final == pytest.approx(t_coord, rel=1e-7)
    (hit,) = r.events
    assert hit.event == 0 and hit.t == r.t_final and hit.params[0] == pytest.approx(0.5, rel=1e-7)
    b = integrate(obj, np.stack([th, 0.1 * th]), opts)
    assert b.status == ["event", "t_end"] and len(b.events[0]) == 1
    assert [e.event for e in b.events[1]] == [1]      # 0.1·θ₀ starts below 0.5; its loss falls through 1e-3
