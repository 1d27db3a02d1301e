"""The musat2025 figure recipes (quick settings): files written, numbers consistent with the theory."""

from __future__ import annotations

import json

import pytest

from fastattn._core_loader import has_cpp
from fastattn.experiments.musat2025 import FIGURES, run_figure

pytestmark = pytest.mark.skipif(not has_cpp(), reason="needs the compiled core")


def test_fig6_quick(tmp_path):
    doc = run_figure("musat2025-fig6", tmp_path, quick=True)
    assert (tmp_path / "musat2025-fig6.png").exists()
    saved = json.loads((tmp_path / "musat2025-fig6.json").read_text())
    assert saved["N"] == doc["N"]
    assert all(e < 0.01 for N, e in zip(doc["N"], doc["asymptote_rel_error"], strict=True) if N >= 64)
    assert all(1.3 < r < 1.5 for N, r in zip(doc["N"], doc["t_loss_over_t_icl"], strict=True) if N >= 16)
    steps = dict(zip(doc["gd"]["N"], doc["gd"]["steps"], strict=True))
    assert steps[16]["half"]["T_alpha"] == 1155 and steps[16]["fig6"]["T_beta"] == 171


def test_gram19_quick_and_the_index(tmp_path):
    assert set(FIGURES) == {"musat2025-fig6", "musat2025-gram19", "musat2025-uniform", "musat2025-fig4"}
    doc = run_figure("musat2025-gram19", tmp_path, quick=True)
    row = next(r for r in doc["rows"] if (r["query"], r["mask"], r["N"]) == ("last", "strict", 8))
    assert row["gram19"]["t_loss"] == pytest.approx(100.0, abs=0.05)   # spec §11.3
    assert row["three_param"]["t_loss"] == pytest.approx(158.4, abs=0.05)
    with pytest.raises(ValueError, match="unknown figure"):
        run_figure("musat2025-fig99", tmp_path)
