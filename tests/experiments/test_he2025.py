"""Acceptance checks of the He et al. 2025 figure recipes that need no training (closed forms,
semi-analytic integrals, flows on L̃, small Monte Carlo). Every figure's quick form also runs in the
all-figures smoke test (tests/experiments/test_zhang2025.py)."""

import dataclasses

import numpy as np
import pytest

from fastattn.experiments import registry
from fastattn.experiments.he2025 import e3, e6, e7, e8, e9, e10, e11, e14
from fastattn.theory import he2025 as th


def test_e14_pair_approaches_dgd_at_rate_gamma_squared():
    s = e14.summarize([], quick=True)
    assert s["log_log_slope_small_gamma"] == pytest.approx(2.0, abs=0.05)
    # the pair's risk tends to the closed form R_dGD(η*) (same prompts at every γ: 4 s.e. of one)
    small = np.asarray(s["pair_risk"])[:3]
    assert np.all(np.abs(small - s["dgd_closed_form"]) < 4 * np.asarray(s["pair_risk_se"])[:3])


def test_e7_approximate_loss_tracks_the_true_loss():
    s = e7.summarize([], quick=True)
    # spec §6 E7: |ℒ − L̃| ≤ ~0.1 over the grid, ≈ 0.02 at the trained point (0.243 vs 0.221)
    assert s["max_abs_difference"] < 0.12
    trained = s["checks"][0]
    assert 0.01 < trained["semi_analytic"] - trained["approx"] < 0.03
    assert all(abs(c["mc_minus_semi_in_se"]) < 4 for c in s["checks"])


def test_e9_norms_match_the_spec_means():
    """Spec §6 E9 (MC means at s = 0.5, d = 5): 0.257 (L = 40), 0.175 (100), 0.084 (500); the
    large-L prediction √(e^{ds²}/L) is exact in the limit (0.084 at L = 500)."""
    for L, expect in ((40, 0.257), (100, 0.175), (500, 0.084)):
        norms = e9.softmax_norms(0.5, L, 5, 4000, seed=L)
        assert abs(norms.mean() - expect) < 4 * norms.std() / np.sqrt(len(norms)) + 2e-3
    assert th.softmax_norm_prediction(0.5, 5, 500) == pytest.approx(0.084, abs=1e-3)


def test_e6_ratio_below_theorem1_bound():
    s = e6.summarize([], quick=True)
    assert np.all(np.asarray(s["ratio_limit_grid"]) <= np.asarray(s["bound_grid"]))
    for r in s["rows"]:
        assert abs(r["dgd_mc"] - r["dgd_closed"]) < 4 * r["dgd_se"]
    row = next(r for r in s["rows"] if r["xi"] == 0.2)
    assert row["dgd_limit"] == pytest.approx(3.44444, abs=1e-5)       # spec §5.4 table
    assert row["bayes_limit"] == pytest.approx(3.40512, abs=1e-5)


def test_e8_flow_reaches_the_manifold():
    s = e8.summarize(registry.run_specs(e8.runs(quick=True)))
    two, four = s["cases"]["H2"], s["cases"]["H4"]
    assert two["final_sign_match"] and abs(two["sum_mu"][-1]) < 1e-6
    assert two["final_mu_plus_over_mu_gamma"] == pytest.approx(1.0, abs=0.02)
    assert four["final_sign_match"]
    signs = np.sign(np.asarray(four["omega"])[-1])
    assert (signs > 0).any() and (signs < 0).any()       # multi-head: both signs (spec §4.1 item 7)


def test_e10_optimal_preconditioner_turns_to_the_inverse_covariance():
    cos = e10.cosine
    grid = [cos(th.optimal_preconditioner(e10.COV, L, 0.1, 0.2), np.linalg.inv(e10.COV))
            for L in (20, 40, 80, 160)]
    assert np.all(np.diff(grid) > 0) and grid[-1] > 0.999


def test_e11_reference_predictors():
    """Separate dGDs (H ≥ 2N) beat one weighted dGD (H = 2), which weights the overlap S* more
    (the text's ω̆* > ω̆^c)."""
    from fastattn.tasks import MultiTaskRegression

    ref = e11.reference_predictors(MultiTaskRegression(6).support_mask)
    w = ref["weighted_dgd"]
    assert ref["separate_dgd"]["risk"] < w["risk"] and w["eta_overlap"] > w["eta_rest"]
    assert ref["separate_dgd"]["eta"] == pytest.approx(
        th.optimal_preconditioner(np.eye(4), 40, 0.1, 1 / 6)[0, 0], rel=1e-10)


def test_e3_first_step_from_which_a_pattern_holds():
    step = np.array([0, 1, 2, 5, 10])
    assert e3._first(step, np.array([False, True, False, True, True])) == 5
    assert e3._first(step, np.ones(5, bool)) == 0
    assert e3._first(step, np.array([True, True, True, True, False])) is None


def _patterned(model, omegas, mus):
    """Set head h to KQ_11 = ω_h I, OV's last row (0, …, 0, μ_h) (spec §4.1)."""
    import torch

    dd = model.config.dim + 1
    eye = torch.eye(dd, dtype=torch.float64)
    x_block = torch.diag(torch.tensor([1.0] * (dd - 1) + [0.0], dtype=torch.float64))
    with torch.no_grad():
        model.wq.copy_(torch.stack([w * np.sqrt(dd) * x_block for w in omegas]))
        model.wk.copy_(eye.expand_as(model.wk))
        model.wv.copy_(eye.expand_as(model.wv))
        model.wo.copy_(torch.stack([m * eye[-1] for m in mus]))
    return model


def test_e13_summary_on_patterned_models():
    """E13's summary on untrained, patterned models: LinTF (one head, ωμ = η_GD,opt(40), 1/L fixed
    to 1/40) degrades from L = 40 to 100 and its Monte Carlo equals its closed form; the two-head
    softmax pair (±0.13, ±3.45) keeps improving (acceptance, issue 15)."""
    from fastattn.experiments.he2025 import e13
    from fastattn.experiments.recipe import Run
    from fastattn.models import build_model
    from fastattn.training import Trajectory

    eta = th.eta_gd_opt(5, 40, 0.1)
    runs = []
    for spec in e13.runs(quick=True):
        model = build_model(spec.model).double()
        if spec.group["kind"] == "linear":
            _patterned(model, [1.0], [eta])
        else:
            _patterned(model, [0.13, -0.13], [3.45, -3.45])
        runs.append(Run(spec, Trajectory(np.zeros(1), np.zeros(1), np.zeros(1)), model))
    s = e13.summarize(runs, quick=True)
    lin, soft = s["models"]["linear_H1"], s["models"]["softmax_H2"]
    assert lin["eta_train"] == pytest.approx(eta, rel=1e-12)
    np.testing.assert_allclose(lin["closed_form"], s["linear_spec_closed"], rtol=1e-12)
    assert np.all(np.abs(np.asarray(lin["mean"]) - lin["closed_form"]) < 4 * np.asarray(lin["se"]))
    assert lin["risk_100_minus_risk_40_in_se"] > 4 and soft["risk_100_minus_risk_40_in_se"] < -4


def test_e2_runs_are_the_batched_fused_runs_it_trained_before():
    """E2's runs (kind "batched", trained by `reproduce` through `train_many`) take the steps of
    the `train_batched(stream="fast")` call E2 made inside `summarize` before: the same trained
    weights, bit for bit, so its (γ, μ₊) numbers are unchanged."""
    from fastattn.experiments.he2025 import e2
    from fastattn.models import build_model
    from fastattn.training.batched import BatchedAdamConfig, train_batched

    specs = [dataclasses.replace(s, train=dataclasses.replace(s.train, steps=40))
             for s in e2.runs(quick=True)]
    assert [s.kind for s in specs] == ["batched"]
    runs = registry.run_specs(specs)
    assert runs[0].traj.backend["engine"].startswith("fused")
    models = [build_model(s.model) for s in specs]
    train_batched(models, [s.task for s in specs],
                  BatchedAdamConfig(lr=specs[0].train.lr, steps=40, batch_size=128, stream="fast"))
    for run, model in zip(runs, models, strict=True):
        np.testing.assert_array_equal(run.model.to_flat(), model.to_flat())
    s = e2.summarize(runs)
    assert set(s["models"]) == {"H2_seed0"} and np.isfinite(s["models"]["H2_seed0"]["gamma"])


def test_e4_multi_head_pools_every_seed():
    """`_multi_head` reads every H ≥ 2 run (no chosen seed): medians over runs, the fraction at the
    text's limits, the spread of the per-H medians and the single-head ratio."""
    from fastattn.experiments.he2025.e4 import _multi_head

    def run(h, gamma, mu_plus, risk):
        return {"heads": h, "gamma": gamma, "mu_plus": mu_plus, "eta_eff": 2 * gamma * mu_plus,
                "zero_sum": 0.0, "sign_match": 1.0, "mean": [risk]}

    out = {"models": {"H1_seed0": run(1, 0.52, 0.0, 0.41), "H2_seed0": run(2, 0.13, 3.4, 0.245),
                      "H2_seed1": run(2, 0.52, 0.0, 0.407), "H4_seed0": run(4, 0.128, 3.45, 0.246)},
           "by_heads": {"H1": {"L_train": {"median": 0.41}}, "H2": {"L_train": {"median": 0.326}},
                        "H4": {"L_train": {"median": 0.246}}}}
    agg = _multi_head(out, 0)
    assert agg["n_runs"] == 3 and agg["gamma"]["median"] == 0.13
    assert agg["gamma"]["values"] == [0.13, 0.52, 0.128]      # every run, for seeds=True claims
    assert agg["fraction_at_limits"] == pytest.approx(2 / 3)
    assert agg["median_risk_relative_spread"] == pytest.approx(0.08 / 0.286)
    assert agg["single_over_multi_head_risk"] == pytest.approx(0.41 / 0.246)
