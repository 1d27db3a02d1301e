"""The musat2025 figure recipes (quick settings) through `fastattn reproduce`: files written, numbers
consistent with the theory. The all-figures smoke test (test_zhang2025.py) also runs each of them."""

from __future__ import annotations

import json

import pytest

from fastattn._core_loader import has_cpp
from fastattn.cli import main
from fastattn.experiments import registry
from fastattn.experiments.musat2025 import FIGURES, fig7, fig8, fig20, gram19

pytestmark = pytest.mark.skipif(not has_cpp(), reason="needs the compiled core")


def test_fig6_quick_through_the_cli(tmp_path, capsys):
    assert main(["reproduce", "musat2025-fig6", "--quick", "--out", str(tmp_path)]) == 0
    assert "musat2025-fig6: 0 runs" in capsys.readouterr().out
    assert (tmp_path / "musat2025-fig6.png").stat().st_size > 0
    doc = json.loads((tmp_path / "musat2025-fig6.json").read_text())
    assert doc["quick"] and doc["runs"] == {}
    s = doc["summary"]
    assert s["N"] == [4 * 2**k for k in range(8)]      # --quick reaches summarize
    assert all(e < 0.01 for N, e in zip(s["N"], s["asymptote_rel_error"], strict=True) if N >= 64)
    assert all(1.3 < r < 1.5 for N, r in zip(s["N"], s["t_loss_over_t_icl"], strict=True) if N >= 16)
    steps = dict(zip(s["gd"]["N"], s["gd"]["steps"], strict=True))
    assert steps[16]["half"]["T_alpha"] == 1155 and steps[16]["fig6"]["T_beta"] == 171


def test_gram19_quick_and_the_index():
    assert {f.name for f in FIGURES} == {"musat2025-fig6", "musat2025-gram19", "musat2025-uniform",
                                         "musat2025-fig4", "musat2025-fig7", "musat2025-fig8",
                                         "musat2025-fig20"}
    assert all(registry.get(f.name) is not None for f in FIGURES)
    s = gram19.summarize([], quick=True)
    row = next(r for r in s["rows"] if (r["query"], r["mask"], r["N"]) == ("last", "strict", 8))
    assert row["gram19"]["t_loss"] == pytest.approx(100.0, abs=0.05)   # spec §11.3
    assert row["three_param"]["t_loss"] == pytest.approx(158.4, abs=0.05)


def test_listed(capsys):
    assert main(["reproduce", "--list"]) == 0
    listed = capsys.readouterr().out.split()
    assert {f.name for f in FIGURES} <= set(listed)


def test_standard_transformer_quick_figures():
    """Figs. 7, 8, 20 at their quick size (N_T = 16, K = 4, D = 32, 100 AdamW steps): the loss
    leaves ln N_T and falls below the labels baseline ln K (the induction head, not a guess among
    the labels); held-out and training losses agree (fresh batches); the read-out is dominated by
    the diagonal of its O2V2·T block and layer 2 by its (t, O1V1·t) diagonal (Fig. 7); γ̃₃ rises
    first (Fig. 8)."""
    s20 = fig20.summarize([], quick=True)
    base = s20["baselines"]
    assert abs(s20["initial_loss"] - base["uniform"]) < 0.3, s20["initial_loss"]
    assert s20["final_loss"] < base["labels"] and s20["final_test_loss"] < base["labels"], s20
    assert abs(s20["train_minus_test"]["mean"]) < 0.2, s20["train_minus_test"]
    s7 = fig7.summarize([], quick=True)
    st = s7["structure"]
    norms = st["readout"]["block_norms"]
    assert max(norms, key=norms.get) == "O2V2·T", norms
    assert st["readout"]["argmax_fraction"] >= 0.9 and st["layer2_qk"]["argmax_fraction"] >= 0.75, st
    for name in ("layer2_qk", "readout"):
        assert st[name]["expected_mean"] > 2 * st[name]["other_rms"], (name, st[name])
    s8 = fig8.summarize([], quick=True)
    first = s8["emergence"]["per_entry"]["0.25"]
    assert first["order"][0] == "gamma3", first
    assert first["gamma3"] < s8["emergence"]["loss"]["half"], s8["emergence"]
    assert all(s8["peak"][k] > 10 for k in ("alpha3", "beta2", "gamma3")), s8["peak"]
