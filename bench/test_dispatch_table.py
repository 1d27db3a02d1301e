"""bench/dispatch_table.py: a gpu_all.sh benchmark JSON becomes the timing table "auto" follows on
CUDA (stand-in medians; no GPU needed)."""

from __future__ import annotations

import torch
from dispatch_table import timings

from fastattn.ops import _dispatch as dispatch


def _bench(op, shape, pass_, impl, ms):
    return {"name": f"{op}-{impl}-{pass_}", "group": f"{op} {pass_}",
            "extra_info": {"op": op, "shape": shape, "pass": pass_, "impl": impl,
                           "device_median_ms": ms, "device": "stand-in GPU"}}


def test_rows_keep_backends_of_the_deciding_pass_and_steer_auto(monkeypatch):
    sqa = {"B": 4, "N": 8, "D": 64, "H": 2}
    nt = {"B": 4, "N": 8, "D": 4, "H": 2}
    bench = {"datetime": "2026-12-01T10:00:00", "benchmarks": [
        _bench("single_query_attention", sqa, "fwd+bwd", "triton", 3.0),
        _bench("single_query_attention", sqa, "fwd+bwd", "reference", 2.0),
        _bench("single_query_attention", sqa, "fwd+bwd", "compiled-reference", 1.0),
        _bench("single_query_attention", sqa, "fwd", "triton", 0.1),
        _bench("icl_readout_next_token", nt, "fwd+bwd", "triton", 5.0),
        _bench("icl_readout_next_token", nt, "fwd+bwd", "chunked", 1.0),
        _bench("icl_readout_next_token", nt, "fwd+bwd", "reference", 4.0),
        _bench("causal_linear_attention", {"B": 1, "T": 8, "H": 1, "K": 16}, "fwd+bwd", "fla", 1.0),
        _bench("causal_linear_attention", {"B": 1, "T": 8, "H": 1, "K": 16}, "fwd+bwd", "triton",
               2.0),
        {**_bench("single_query_attention", sqa, "fwd+bwd", "triton", 0.01),
         "extra_info": {**_bench("single_query_attention", sqa, "fwd+bwd", "triton", 0.01)[
             "extra_info"], "dtype": "bfloat16"}},      # another dtype's median: not float32's
        _bench("sample_icl_stats", {"B": 8, "N": 4, "D": 4}, "sample", "wishart", 0.5),
        _bench("sample_icl_stats", {"B": 8, "N": 4, "D": 4}, "sample", "triton", 0.7),
    ]}
    doc = timings(bench, {"torch": "t", "triton": "tr"})
    assert doc["device"] == "stand-in GPU" and doc["date"] == "2026-12-01"
    assert doc["ops"]["single_query_attention"] == [
        {"shape": sqa, "dims": {"K": 64, "V": 1}, "pass": "fwd+bwd",
         "ms": {"triton": 3.0, "reference": 2.0}}]
    assert "causal_linear_attention" not in doc["ops"]      # fla is no backend: one left
    assert doc["ops"]["sample_icl_stats"][0]["ms"] == {"wishart": 0.5, "triton": 0.7}
    monkeypatch.setattr(dispatch, "cuda_timings", lambda: doc)
    cuda, f32 = torch.device("cuda"), torch.float32
    assert dispatch.select_backend("single_query_attention", "auto", cuda, f32,
                                   {"K": 64, "V": 64}) == "reference"
    assert dispatch.select_backend("icl_readout_next_token", "auto", cuda, f32, {"D": 4}) == \
        "chunked"
    assert dispatch.select_backend("sample_icl_stats", "auto", cuda, f32, {"D": 4}) == "wishart"
