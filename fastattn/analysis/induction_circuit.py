"""The interpretable transformation and the progress measures of a two-layer, one-head-per-layer,
attention-only transformer (Musat et al. 2025 §4.2–4.4, Eq. 17–22; spec §9.4–9.5).

Weights are the paper's, in its column convention (`CircuitWeights`): token and positional
embeddings T `[D, N_T]`, P `[D, N_P]`; per layer W_Q, W_K, W_V `[D_H, D]`, W_O `[D, D_H]`; read-out
W_o `[N_T, D]`; layer l's scores S_l = (W_K H)ᵀ (W_Q H) (Eq. 19, no 1/√D_H: a model that scales
its scores hands over W_Q times the scale, `fastattn.models.standard_transformer`).

Only four residual subspaces are ever written, each spanned by N_T + N_P interpretable vectors
(§4.2): E = [T P], O1V1·E, O2V2·E and O2V2·O1V1·E (OlVl = W_O^l W_V^l). Expressed in them:

- layer-1 QK `[N_T+N_P, N_T+N_P]`: (W_Q¹ E)ᵀ (W_K¹ E), the score a query basis vector (row) gives
  a key basis vector (column);
- layer-2 QK `[N_T+N_P, 2(N_T+N_P)]`: queries in E, keys in [E, O1V1·E];
- read-out `[N_T, 4(N_T+N_P)]`: W_o [E, O1V1·E, O2V2·E, O2V2·O1V1·E].

Rows are queries and columns keys, the library's attention convention (the paper's S has keys as
rows; spec §12.11), so the previous-position head of layer 1 is the subdiagonal of the P-P block,
key = query − 1, as the paper's Fig. 7 calls it.

The progress measures (Eq. 20–22) are one entry pattern of each:

    α̃₃ = Σ_{i=2}^{N_P} (W_K¹ p_{i−1})ᵀ (W_Q¹ p_i)       subdiagonal of the layer-1 P-P block (§12.10)
    β̃₂ = Σ_{i=1}^{N_T} (W_K² O1V1 t_i)ᵀ (W_Q² t_i)      diagonal of layer 2's (query T, key O1V1·T) block
    γ̃₃ = tr(W_o O2V2 T)                                  diagonal of the read-out's O2V2·T block
"""

from __future__ import annotations

import numpy as np
import torch

from fastattn.models.standard_transformer import CircuitWeights

#: names of the 2 × 4 residual bases of the read-out's column blocks, in order
READOUT_BLOCKS = ("T", "P", "O1V1·T", "O1V1·P", "O2V2·T", "O2V2·P", "O2V2·O1V1·T", "O2V2·O1V1·P")


def _checked(w: CircuitWeights) -> CircuitWeights:
    """The weights as float64 tensors (on their device), or a ValueError naming a bad shape."""
    w = CircuitWeights(*(torch.as_tensor(x).detach().to(torch.float64) for x in w))
    D, N_T = w.T.shape
    D_H = w.WQ1.shape[0]
    want = {"T": (D, N_T), "P": (D, w.P.shape[1]), "Wo": (N_T, D)}
    for name in ("WQ1", "WK1", "WV1", "WQ2", "WK2", "WV2"):
        want[name] = (D_H, D)
    want["WO1"] = want["WO2"] = (D, D_H)
    for name, shape in want.items():
        got = tuple(getattr(w, name).shape)
        if got != shape:
            raise ValueError(f"{name} has shape {list(got)}; expected {list(shape)} (D={D} from T, "
                             f"N_T={N_T}, D_H={D_H} from WQ1)")
    return w


def _np(x: torch.Tensor) -> np.ndarray:
    return x.cpu().numpy()


def interpretable_weights(weights: CircuitWeights) -> dict[str, np.ndarray]:
    """The key-query products and the read-out in the interpretable bases (module doc):
    "layer1_qk" `[N_T+N_P, N_T+N_P]`, "layer2_qk" `[N_T+N_P, 2(N_T+N_P)]` (rows: queries in
    [T, P]; columns: keys in [T, P] then [O1V1·T, O1V1·P]), "readout" `[N_T, 4(N_T+N_P)]` (column
    blocks `READOUT_BLOCKS`). float64."""
    w = _checked(weights)
    E = torch.cat([w.T, w.P], dim=1)                               # [D, n] subspace 1
    E2 = w.WO1 @ (w.WV1 @ E)                                       # [D, n] subspace 2
    E3, E4 = w.WO2 @ (w.WV2 @ E), w.WO2 @ (w.WV2 @ E2)             # subspaces 3, 4
    keys2 = torch.cat([E, E2], dim=1)
    return {"layer1_qk": _np((w.WQ1 @ E).T @ (w.WK1 @ E)),
            "layer2_qk": _np((w.WQ2 @ E).T @ (w.WK2 @ keys2)),
            "readout": _np(w.Wo @ torch.cat([E, E2, E3, E4], dim=1))}


def progress_measures(weights: CircuitWeights) -> dict[str, float]:
    """α̃₃, β̃₂, γ̃₃ of Eq. 20–22 ("alpha3", "beta2", "gamma3"; module doc), without forming the
    interpretable matrices."""
    w = _checked(weights)
    alpha = ((w.WK1 @ w.P[:, :-1]) * (w.WQ1 @ w.P[:, 1:])).sum()
    beta = ((w.WK2 @ (w.WO1 @ (w.WV1 @ w.T))) * (w.WQ2 @ w.T)).sum()
    gamma = torch.trace(w.Wo @ (w.WO2 @ (w.WV2 @ w.T)))
    return {"alpha3": float(alpha), "beta2": float(beta), "gamma3": float(gamma)}
