"""The interpretable transformation and progress measures (Musat et al. 2025 Eq. 17–22, spec
§9.4–9.5) on hand-built induction-head weights with known answers, and on random weights against
the literal equations."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fastattn.analysis.induction_circuit import (
    READOUT_BLOCKS,
    CircuitWeights,
    interpretable_weights,
    progress_measures,
)
from helpers import induction_head

N_T, N_P = 5, 7
n = N_T + N_P


def random_weights(D=9, D_H=6, seed=1) -> CircuitWeights:
    gen = torch.Generator().manual_seed(seed)
    shapes = [(D, N_T), (D, N_P)] + [(D_H, D)] * 3 + [(D, D_H)] + [(D_H, D)] * 3 + [(D, D_H), (N_T, D)]
    return CircuitWeights(*(torch.randn(s, generator=gen, dtype=torch.float64) for s in shapes))


def test_measures_of_an_exact_induction_head():
    m = progress_measures(induction_head(N_T, N_P, c=2.0, b=3.0, g=5.0))
    assert m["alpha3"] == pytest.approx(2.0 * (N_P - 1), rel=1e-12)
    assert m["beta2"] == pytest.approx(3.0 * N_T, rel=1e-12)
    assert m["gamma3"] == pytest.approx(5.0 * N_T, rel=1e-12)


def test_interpretable_blocks_of_an_exact_induction_head():
    """Each matrix is one diagonal (or subdiagonal) in one block, zero elsewhere (Fig. 7)."""
    c, b, g = 2.0, 3.0, 5.0
    m = interpretable_weights(induction_head(N_T, N_P, c, b, g))
    assert m["layer1_qk"].shape == (n, n)
    assert m["layer2_qk"].shape == (n, 2 * n) and m["readout"].shape == (N_T, 4 * n)
    want1 = np.zeros((n, n))
    want1[N_T:, N_T:] = c * np.eye(N_P, k=-1)            # query position i, key i − 1
    np.testing.assert_allclose(m["layer1_qk"], want1, atol=1e-12)
    want2 = np.zeros((n, 2 * n))
    want2[:N_T, n:n + N_T] = b * np.eye(N_T)              # query token t, key O1V1 t
    np.testing.assert_allclose(m["layer2_qk"], want2, atol=1e-12)
    want3 = np.zeros((N_T, 4 * n))
    assert READOUT_BLOCKS[4] == "O2V2·T"                 # columns 2n … 2n + N_T
    want3[:, 2 * n:2 * n + N_T] = g * np.eye(N_T)
    np.testing.assert_allclose(m["readout"], want3, atol=1e-12)


def test_measures_are_the_literal_sums_and_the_matrix_entries():
    w = random_weights()
    m = progress_measures(w)
    T, P = w.T.numpy(), w.P.numpy()
    np_w = {k: v.numpy() for k, v in w._asdict().items()}
    alpha = sum((np_w["WK1"] @ P[:, i - 1]) @ (np_w["WQ1"] @ P[:, i]) for i in range(1, N_P))
    beta = sum((np_w["WK2"] @ np_w["WO1"] @ np_w["WV1"] @ T[:, i]) @ (np_w["WQ2"] @ T[:, i])
               for i in range(N_T))
    gamma = np.trace(np_w["Wo"] @ np_w["WO2"] @ np_w["WV2"] @ T)
    assert m == pytest.approx({"alpha3": alpha, "beta2": beta, "gamma3": gamma}, rel=1e-12)
    mats = interpretable_weights(w)
    assert np.trace(mats["layer1_qk"][N_T:, N_T:], offset=-1) == pytest.approx(alpha, rel=1e-12)
    assert np.trace(mats["layer2_qk"][:N_T, n:n + N_T]) == pytest.approx(beta, rel=1e-12)
    assert np.trace(mats["readout"][:, 2 * n:2 * n + N_T]) == pytest.approx(gamma, rel=1e-12)


def test_layer1_matrix_gives_the_scores_of_any_sequence():
    """Eq. 17/19: S_1[key i, query j] is the sum of four entries of the layer-1 matrix, indexed by
    the tokens and positions of j (row) and i (column): the transformation is a complete
    description of layer 1."""
    w = random_weights()
    gen = torch.Generator().manual_seed(3)
    L = 6
    tok = torch.randint(0, N_T, (L,), generator=gen)
    pos = 1 + torch.arange(L)
    H = w.T[:, tok] + w.P[:, pos]                               # H0 = T X_T + P X_P
    S = (w.WK1 @ H).T @ (w.WQ1 @ H)                             # [key, query]
    A = interpretable_weights(w)["layer1_qk"]
    rows = [tok.numpy(), N_T + pos.numpy()]
    want = sum(A[np.ix_(r, c)] for r in rows for c in rows)     # [query, key]
    np.testing.assert_allclose(S.numpy().T, want, rtol=1e-10, atol=1e-10)


def test_bad_shapes_are_named():
    w = random_weights()
    with pytest.raises(ValueError, match=r"WO2 has shape \[9, 5\]; expected \[9, 6\]"):
        progress_measures(w._replace(WO2=torch.zeros(9, 5)))
    with pytest.raises(ValueError, match="Wo has shape"):
        interpretable_weights(w._replace(Wo=torch.zeros(N_T + 1, 9)))
