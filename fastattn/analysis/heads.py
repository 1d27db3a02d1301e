"""Per-head QK and OV matrices of a torch transformer, and the spectral measures of spec §8 on them
(Mainali & Teixeira 2025 §4: effective rank, marginalised effective rank, subspace distance).

Works on `fastattn.models.Transformer` and on any module (or state dict) with TransformerLens'
parameter names and row-vector layout, `HookedTransformer` included: `blocks.{l}.attn.W_Q`, `W_K`,
`W_V` `[H, d, d_head]` and `W_O` `[H, d_head, d]`. Then (spec §8.6)

    QK^{l,h} = W_Q^{l,h} (W_K^{l,h})ᵀ,    OV^{l,h} = W_V^{l,h} W_O^{l,h},    both [d, d], rank ≤ d_head.

Biases are ignored. A HookedTransformer loaded with `from_pretrained` has its layer norms folded and
its writing weights centred by default; both change these matrices (spec §8.6), so record the choice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from fastattn.analysis import spectral as sp
from fastattn.models.transformer import ov_factors, qk_factors


def extract_qk(model: torch.nn.Module | Mapping[str, Any]) -> np.ndarray:
    """Per-head QK = W_Q W_Kᵀ of every layer: `[L, H, d, d]`, float64."""
    x, y = qk_factors(model)
    return x @ np.swapaxes(y, -1, -2)


def extract_ov(model: torch.nn.Module | Mapping[str, Any]) -> np.ndarray:
    """Per-head OV = W_V W_O of every layer: `[L, H, d, d]`, float64."""
    x, y = ov_factors(model)
    return x @ np.swapaxes(y, -1, -2)


def factored_svd(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The thin SVD of M = X Yᵀ from its factors X, Y `[..., d, k]` (spec §8.6): QR both, then the
    k×k SVD of R_X R_Yᵀ. Returns (U `[..., d, k]`, σ `[..., k]`, V `[..., d, k]`), M = U diag(σ) Vᵀ;
    O(d k²) instead of O(d³)."""
    qx, rx = np.linalg.qr(x)
    qy, ry = np.linalg.qr(y)
    u, s, vt = np.linalg.svd(rx @ np.swapaxes(ry, -1, -2))
    return qx @ u, s, qy @ np.swapaxes(vt, -1, -2)


def head_measures(mats: np.ndarray, t: np.ndarray, kmax: int = 3) -> dict[str, np.ndarray]:
    """Spec §8 measures of per-head matrices over training, each head against its own final matrix.

    mats `[T, L, H, d, d]` (e.g. `extract_ov` at T checkpoints, the last taken as M(∞)), t `[T]`.
    Returns:
        effective_rank `[T, L, H]` (Eq. 15, on all d singular values);
        subdist `[T, L, H]`: normalised SubDist (Eq. 16) to the final matrix, truncated at the final
            matrix's numerical rank (≤ d_head; spec §8.3);
        mer_magnitude `[T, L, H, kmax+1]`: marginalised effective rank, Variant A (the k largest
            singular values dropped at each t);
        mer_mode `[T, L, H, kmax+1]`: Variant B (the k earliest-converging modes of the final
            matrix's singular basis dropped; modes beyond its numerical rank left out).
    """
    mats = np.asarray(mats, dtype=np.float64)
    n_t, n_l, n_h, d, _ = mats.shape
    if not 0 <= kmax < d:
        raise ValueError(f"kmax must be in [0, {d - 1}]; got {kmax}")
    sv = np.linalg.svd(mats, compute_uv=False)                          # [T, L, H, d]
    out = {"effective_rank": sp.entropy_effective_rank(sv),
           "subdist": np.zeros((n_t, n_l, n_h)),
           "mer_magnitude": sp.marginalized_effective_rank(sv.reshape(-1, d), kmax).reshape(
               n_t, n_l, n_h, kmax + 1),
           "mer_mode": np.full((n_t, n_l, n_h, kmax + 1), np.nan)}
    for layer in range(n_l):
        for head in range(n_h):
            series = mats[:, layer, head]
            for i in range(n_t):
                out["subdist"][i, layer, head] = sp.subspace_distance(
                    series[i], series[-1], normalized=True)[0]
            final = sv[-1, layer, head]
            rank = int((final > 1e-6 * final[0]).sum()) if final[0] > 0 else 0
            if rank > kmax:
                comps = sp.mode_components(series)[:, :rank]
                out["mer_mode"][:, layer, head] = sp.marginalized_effective_rank_by_mode(
                    comps, kmax, t)[0]
    return out
