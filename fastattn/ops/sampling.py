"""Sampling of ICL linear-regression statistics (β, x_q, y_q) without the token tensor."""

from __future__ import annotations

import torch
from torch import Tensor

from fastattn.ops._dispatch import select_backend
from fastattn.ops._validate import check, check_same

__all__ = ["sample_icl_stats"]


def sample_icl_stats(seed: int, step: int, batch: int, context: int, cov_factor: Tensor,
                     w_mean: Tensor, w_factor: Tensor, noise_std: float,
                     dtype: torch.dtype = torch.float32, *, backend: str = "auto"
                     ) -> tuple[Tensor, Tensor, Tensor]:
    """Draw B sequences of the task x ~ N(0, Λ), w ~ N(μ, Σ_w), y = wᵀx + σε and reduce them.

    Reproducible: the output is a pure function of (seed, step) and the arguments, per backend.
    Backends draw the same distribution but not the same numbers: "triton" (fused Philox kernel,
    float32-precision normals), "reference" (literal token tensor, chunked), "wishart" (exact law of
    (β, x_q, y_q) in O(D² + N) per sequence, the fastest CPU path). "auto" picks "triton" on CUDA
    (or CPU under TRITON_INTERPRET=1), else "reference".

    Args:
        seed, step: the batch is a pure function of this pair.
        batch: B.
        context: N context tokens per sequence (β divides by N).
        cov_factor: [D, D] L with Λ = L Lᵀ; its device is the output device.
        w_mean: [D] μ.
        w_factor: [D, D] F with Σ_w = F Fᵀ.
        noise_std: σ of the label noise (context and query).
        dtype: output dtype.
        backend: "auto", "triton", "reference" or "wishart".

    Returns:
        (β [B, D], x_q [B, D], y_q [B]).
    """
    check("cov_factor", cov_factor, "[D, D]", (None, None))
    d = cov_factor.shape[0]
    check("cov_factor", cov_factor, "[D, D]", (d, d))
    check("w_mean", w_mean, "[D]", (d,))
    check("w_factor", w_factor, "[D, D]", (d, d))
    check_same(["cov_factor", "w_mean", "w_factor"], [cov_factor, w_mean, w_factor])
    if int(batch) < 1 or int(context) < 1:
        raise ValueError(f"batch and context must be >= 1; got batch={batch}, context={context}")
    if not float(noise_std) >= 0:
        raise ValueError(f"noise_std must be >= 0; got {noise_std}")
    name = select_backend("sample_icl_stats", backend, cov_factor.device, dtype, {"D": d})
    args = (int(seed), int(step), int(batch), int(context), cov_factor, w_mean, w_factor,
            float(noise_std), dtype)
    if name == "triton":
        from fastattn.triton_kernels.sampling.kernel import sample_icl_stats_kernel

        return sample_icl_stats_kernel(*args)
    from fastattn.triton_kernels.sampling import reference

    if name == "wishart":
        return reference.sample_icl_stats_wishart(*args)
    return reference.sample_icl_stats_reference(*args)
