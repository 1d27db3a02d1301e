"""Cubature rules for expectations over Gaussian variables: a population objective whose loss is a
polynomial of low degree in a Gaussian variable averages it exactly over a few nodes."""

from __future__ import annotations

import numpy as np


def cubature5(d: int) -> tuple[np.ndarray, np.ndarray]:
    """Degree-5 Gaussian cubature for λ ~ N(0, I_d): nodes `[2d²+1, d]`, weights `[2d²+1]`
    (spec mainali2025 (M4)): 0 with weight (d² − 7d + 18)/18, ±√3 e_i with (4 − d)/18, ±√3 e_i ±
    √3 e_j (i < j) with 1/36. Integrates every polynomial of degree ≤ 5 exactly (weights may be
    negative, d > 4)."""
    r = np.sqrt(3.0)
    nodes, weights = [np.zeros(d)], [(d * d - 7 * d + 18) / 18]
    eye = np.eye(d)
    for i in range(d):
        for sign in (1, -1):
            nodes.append(sign * r * eye[i])
            weights.append((4 - d) / 18)
    for i in range(d):
        for j in range(i + 1, d):
            for si in (1, -1):
                for sj in (1, -1):
                    nodes.append(r * (si * eye[i] + sj * eye[j]))
                    weights.append(1 / 36)
    return np.array(nodes), np.array(weights)
