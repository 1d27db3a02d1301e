"""Haar-distributed orthonormal frames: the one implementation every task draws its random
orthogonal matrices and orthonormal vectors from.

QR of a Gaussian matrix gives an orthonormal Q, but LAPACK's Householder QR fixes the signs of R's
diagonal, which biases Q (e.g. its first entry is negative in every draw); moving the signs of R's
diagonal into Q makes Q Haar-distributed (Mezzadri 2007, "How to generate random matrices from the
classical compact groups", §5). For a tall Gaussian `[D, n]` the same fix gives the first n columns
of a Haar matrix on O(D), i.e. a frame uniform on the Stiefel manifold.
"""

from __future__ import annotations

import numpy as np
import torch


def haar_frame(gaussian: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
    """Haar-distributed orthonormal columns from i.i.d. N(0, 1) entries.

    gaussian: `[..., D, n]` (n ≤ D), a torch tensor or numpy array of standard normals.
    Returns Q `[..., D, n]` of the same kind: QᵀQ = I; n = D: Haar on O(D) (det ±1); n < D: the
    first n columns of a Haar matrix on O(D).
    """
    if gaussian.shape[-1] > gaussian.shape[-2]:
        raise ValueError(f"gaussian must be [..., D, n] with n <= D; got shape {list(gaussian.shape)}")
    if isinstance(gaussian, np.ndarray):
        return haar_frame(torch.from_numpy(gaussian)).numpy()
    q, r = torch.linalg.qr(gaussian)
    return q * torch.sgn(torch.diagonal(r, dim1=-2, dim2=-1)).unsqueeze(-2)
