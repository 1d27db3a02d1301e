"""Pattern metrics (He et al. 2025 spec §4.2) on constructed circuits."""

import numpy as np

from fastattn.analysis.patterns import pattern_metrics


def _patterned(omegas, mus, d=4, leak=0.0):
    h = len(omegas)
    kq = np.zeros((h, d + 1, d + 1))
    ov = np.zeros((h, d + 1))
    for i, (w, m) in enumerate(zip(omegas, mus, strict=True)):
        kq[i, :d, :d] = w * np.eye(d)
        kq[i, :, d] = 5.0  # ineffective column: ignored
        kq[i, d, :d] = leak
        ov[i, d] = m
    return kq, ov


def test_perfect_patterns_score_perfectly():
    # the last head is inert (μ ≈ 0) although its ω is a third of γ, as in trained H = 4 models
    kq, ov = _patterned([0.13, -0.13, 0.13, 0.04], [1.7, -3.4, 1.7, 3e-3])
    m = pattern_metrics(kq, ov)
    np.testing.assert_allclose(m["diag_ratio"], 1.0)
    np.testing.assert_allclose(m["ov_last_ratio"], 1.0)
    np.testing.assert_allclose(m["isotropy_error"], 0.0, atol=1e-15)
    assert m["dummy"].tolist() == [False, False, False, True]
    assert m["sign"].tolist() == [1, -1, 1, 0]
    assert m["sign_match"] == 1.0 and m["n_dummy"] == 1
    np.testing.assert_allclose([m["gamma"], m["gamma_cv"]], [0.13, 0.0], atol=1e-15)
    np.testing.assert_allclose(m["mu_plus"], 3.4 + 3e-3)
    np.testing.assert_allclose(m["eta_eff"], 0.13 * 6.8 + 0.04 * 3e-3)


def test_broken_patterns_are_detected_and_leading_dims_kept():
    kq, ov = _patterned([0.1, -0.2], [1.0, 1.0], leak=0.05)
    kq[0, 0, 1] = 0.1
    ov[:, 0] = 1.0
    m = pattern_metrics(np.stack([kq, kq]), np.stack([ov, ov]))
    assert m["omega"].shape == (2, 2) and m["gamma"].shape == (2,)
    assert np.all(m["diag_ratio"][:, 0] < 0.9) and np.all(m["ov_last_ratio"] < 0.8)
    assert np.all(m["y_leakage"] > 0) and np.all(m["sign_match"] == 0.5)
    np.testing.assert_allclose(m["zero_sum"], 1.0)
    assert np.all(m["gamma_cv"] > 0.3)
