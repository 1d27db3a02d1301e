"""Torch samplers of the ICL statistics (β, x_q, y_q) of a linear-regression task.

Task: x ~ N(0, Λ) with Λ = L Lᵀ, w ~ N(μ, Σ_w) with Σ_w = F Fᵀ, y = wᵀx + σ ε; the context has N
tokens, β = (1/N) Σ_n y_n x_n, and the query is (x_q, y_q) with the same noise. Both samplers draw
from a ``torch.Generator`` seeded with :func:`mix_seed` (seed, step); they match the Triton kernel
in distribution, not bit for bit.
"""

from __future__ import annotations

import torch

__all__ = ["mix_seed", "sample_icl_stats_reference", "sample_icl_stats_wishart"]

_MASK64 = (1 << 64) - 1


def mix_seed(seed: int, step: int) -> int:
    """A 63-bit seed from (seed, step) by SplitMix64; distinct pairs give unrelated streams."""
    z = (int(seed) * 0x9E3779B97F4A7C15 + int(step) + 0x632BE59BD9B4E019) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return (z ^ (z >> 31)) >> 1


def _generator(seed: int, step: int, device: torch.device) -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(mix_seed(seed, step))
    return g


def sample_icl_stats_reference(seed: int, step: int, batch: int, context: int,
                               cov_factor: torch.Tensor, w_mean: torch.Tensor,
                               w_factor: torch.Tensor, noise_std: float,
                               dtype: torch.dtype = torch.float64, chunk: int = 16384
                               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Literal sampler: draws the tokens ``chunk`` sequences at a time and reduces them.

    Args:
        seed, step: the batch is a pure function of this pair.
        batch: B sequences.
        context: N context tokens per sequence.
        cov_factor: [D, D] L with Λ = L Lᵀ.
        w_mean: [D] μ.
        w_factor: [D, D] F with Σ_w = F Fᵀ.
        noise_std: σ.
        dtype: of the draws and outputs.
        chunk: sequences per step (bounds the [chunk, N, D] token tensor).

    Returns:
        (β [B, D], x_q [B, D], y_q [B]) on the device of ``cov_factor``.
    """
    dev = cov_factor.device
    g = _generator(seed, step, dev)
    lt, ft, mu = cov_factor.to(dtype).T, w_factor.to(dtype).T, w_mean.to(dtype)
    d = lt.shape[0]
    betas, xqs, yqs = [], [], []
    for s in range(0, batch, chunk):
        b = min(chunk, batch - s)
        w = mu + torch.randn(b, d, generator=g, dtype=dtype, device=dev) @ ft
        x = torch.randn(b, context + 1, d, generator=g, dtype=dtype, device=dev) @ lt
        eps = torch.randn(b, context + 1, generator=g, dtype=dtype, device=dev)
        y = torch.einsum("bnd,bd->bn", x, w) + noise_std * eps
        betas.append(torch.einsum("bn,bnd->bd", y[:, :-1], x[:, :-1]) / context)
        xqs.append(x[:, -1])
        yqs.append(y[:, -1])
    return torch.cat(betas), torch.cat(xqs), torch.cat(yqs)


def sample_icl_stats_wishart(seed: int, step: int, batch: int, context: int,
                             cov_factor: torch.Tensor, w_mean: torch.Tensor,
                             w_factor: torch.Tensor, noise_std: float,
                             dtype: torch.dtype = torch.float64
                             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Exact-in-distribution sampler in O(B D²) work, independent of N, that never forms the tokens.

    With g_n = (ζ_n, ε_n) ~ N(0, I_{D+1}) and x_n = L ζ_n, N β = L [W u]_{:D} where
    W = Σ_n g_n g_nᵀ is Wishart(N, I) and u = (Lᵀ w, σ). By rotation invariance and the Bartlett
    decomposition, W u has the law of c (c u + |u| (z − û ûᵀ z)) with c² ~ χ²_N and
    z ~ N(0, I_{D+1}) independent. Same arguments and returns as
    :func:`sample_icl_stats_reference`.
    """
    dev = cov_factor.device
    g = _generator(seed, step, dev)
    lt, ft, mu = cov_factor.to(dtype).T, w_factor.to(dtype).T, w_mean.to(dtype)
    d = lt.shape[0]
    w = mu + torch.randn(batch, d, generator=g, dtype=dtype, device=dev) @ ft
    u = torch.cat([w @ lt.T, torch.full((batch, 1), float(noise_std), dtype=dtype, device=dev)], 1)
    # c² ~ χ²_N = 2 Gamma(N/2): one draw per sequence, however long the context
    shape = torch.full((batch,), context / 2, dtype=dtype, device=dev)
    c = (2 * torch._standard_gamma(shape, generator=g)).sqrt()[:, None]
    z = torch.randn(batch, d + 1, generator=g, dtype=dtype, device=dev)
    norm = u.square().sum(1, keepdim=True).sqrt()
    uhat = u / norm.clamp_min(torch.finfo(dtype).tiny)
    wu = c * (c * u + norm * (z - uhat * (uhat * z).sum(1, keepdim=True)))
    beta = wu[:, :d] @ lt / context
    x_q = torch.randn(batch, d, generator=g, dtype=dtype, device=dev) @ lt
    y_q = (x_q * w).sum(1) + noise_std * torch.randn(batch, generator=g, dtype=dtype, device=dev)
    return beta, x_q, y_q
