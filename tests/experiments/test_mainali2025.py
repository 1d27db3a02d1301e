"""Mainali & Teixeira 2025 transformer applications, quick forms: the grokking model groks (train
accuracy long before test accuracy) and the measures are well-formed; the attention-only runs
record ICL and the per-head measures."""

import numpy as np

from fastattn.experiments.mainali2025 import attn_only, grokking


def test_quick_grokking_groks_and_measures_converge():
    summary = grokking.summarize([], quick=True)
    assert summary["status"] == "stop"                           # test accuracy reached 0.99
    train, test = summary["train_acc_0.99_epoch"], summary["test_acc_0.99_epoch"]
    assert train is not None and test is not None and test >= 3 * train, (train, test)
    lo, hi = summary["test_loss_drop_window"]
    assert train < lo < hi <= summary["epochs"]
    s = summary["_series"]
    for kind in ("ov", "qk"):
        d = np.asarray(s[f"{kind}_subdist"])
        assert np.all((d >= 0) & (d <= 1)) and d[-1] < 1e-6 and d[0] > 0.3
        er = np.asarray(s[f"{kind}_effective_rank"])
        assert np.all((er >= 1) & (er <= 16))                    # rank ≤ d_head = 16
    # the spec §9.8 target, on the quick run: SubDist(OV) < 0.1 inside the test-loss drop
    assert summary["ov"]["subdist_0.1_inside_test_drop"] is True


def test_quick_attention_only_records_icl():
    summary = attn_only.summarize([], quick=True)
    assert set(summary) == {"1L", "2L"}
    for name, s in summary.items():
        icl = np.asarray(s["_series"]["icl_score"])
        assert abs(icl[0]) < 0.1 and icl[-1] < -0.5, (name, icl)   # untrained ≈ 0; some ICL learnt
        mer = np.asarray(s["_series"]["qk_mer_mode"])
        assert mer.shape == (len(icl), attn_only.apps.KMAX + 1)
        assert np.all(np.diff(mer[-1]) < 0)                        # dropping modes lowers the rank
    assert summary["1L"]["icl_emergence_window"] is None
    assert summary["2L"]["icl_emergence_window"] is not None
