"""ICL linear read-out ŷ_h = βᵀ Γ_h x_q, and its next-token form, as torch custom ops."""

from __future__ import annotations

import torch
from torch import Tensor

from fastattn.ops._autograd import recording_backward, reference_vjp
from fastattn.ops._dispatch import active_transform, select_backend
from fastattn.ops._validate import check, check_same
from fastattn.ops.linear_attention import causal_linear_attention
from fastattn.triton_kernels.icl_readout.reference import (
    icl_beta_reference,
    icl_readout_backward_reference,
    icl_readout_next_token_backward_reference,
    icl_readout_next_token_reference,
    icl_readout_of_beta_reference,
    icl_readout_reference,
)

__all__ = ["icl_readout", "icl_readout_next_token"]


@torch.library.custom_op("fastattn::icl_readout", mutates_args=())
def _readout(x: Tensor, y: Tensor, x_q: Tensor, gamma: Tensor, backend: str
             ) -> tuple[Tensor, Tensor]:
    if backend == "triton":
        from fastattn.triton_kernels.icl_readout.kernel import icl_readout_forward

        return icl_readout_forward(x.contiguous(), y.contiguous(), x_q.contiguous(),
                                   gamma.contiguous())
    beta = icl_beta_reference(x, y)         # the output keeps β for the backward
    return icl_readout_of_beta_reference(beta, x_q, gamma), beta


@_readout.register_fake
def _(x, y, x_q, gamma, backend):
    return x.new_empty(x.shape[0], gamma.shape[0]), x.new_empty(x.shape[0], x.shape[2])


@torch.library.custom_op("fastattn::icl_readout_backward", mutates_args=())
def _readout_bwd(dout: Tensor, x: Tensor, y: Tensor, x_q: Tensor, gamma: Tensor, beta: Tensor,
                 backend: str) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    if backend == "triton":
        from fastattn.triton_kernels.icl_readout.kernel import icl_readout_backward

        return icl_readout_backward(dout.contiguous(), x.contiguous(), y.contiguous(),
                                    x_q.contiguous(), gamma.contiguous(), beta.contiguous())
    return icl_readout_backward_reference(dout, x, y, x_q, gamma, beta)


@_readout_bwd.register_fake
def _(dout, x, y, x_q, gamma, beta, backend):
    return torch.empty_like(x), torch.empty_like(y), torch.empty_like(x_q), torch.empty_like(gamma)


def _readout_setup(ctx, inputs, output):
    x, y, x_q, gamma, backend = inputs
    ctx.save_for_backward(x, y, x_q, gamma, output[1])
    ctx.backend = backend
    ctx.mark_non_differentiable(output[1])


def _readout_backward(ctx, dout, _dbeta):
    x, y, x_q, gamma, beta = ctx.saved_tensors
    if dout is None:
        dout = x.new_zeros(x.shape[0], gamma.shape[0])
    if recording_backward():
        return (*reference_vjp(icl_readout_reference, (x, y, x_q, gamma), dout), None)
    dx, dy, dxq, dgamma = _readout_bwd(dout, x, y, x_q, gamma, beta, ctx.backend)
    return dx, dy, dxq, dgamma, None


_readout.register_autograd(_readout_backward, setup_context=_readout_setup)


def icl_readout(x: Tensor, y: Tensor, x_q: Tensor, gamma: Tensor, *, backend: str = "auto"
                ) -> Tensor:
    """Per-head ICL linear read-out ŷ[b, h] = β_bᵀ Γ_h x_q,b with β_b = (1/N) Σ_n y_bn x_bn.

    Merged attention passes Γ_h = v_h U_h, separate rank-R attention Γ_h = v_h K_hᵀ Q_h; the
    model's prediction is the sum over heads. Differentiable in all four inputs, to any order and
    under every torch.func transform: a backward run with ``create_graph=True`` records the
    reference's backward (double backward, Hessians, on every backend); under torch.func or
    forward-mode AD (which the custom op has no rule for) the reference runs as plain torch,
    "auto" choosing it and "triton" failing in one line that names the transform.

    Args:
        x: [B, N, D] context inputs.
        y: [B, N] context labels.
        x_q: [B, D] query input.
        gamma: [H, D, D] per-head effective matrices.
        backend: "auto" (Triton on CUDA, or on CPU under TRITON_INTERPRET=1; else the reference),
            "triton" or "reference".

    Returns:
        [B, H].
    """
    check("x", x, "[B, N, D]", (None, None, None))
    b, n, d = x.shape
    check("y", y, "[B, N]", (b, n))
    check("x_q", x_q, "[B, D]", (b, d))
    check("gamma", gamma, "[H, D, D]", (None, d, d))
    check_same(["x", "y", "x_q", "gamma"], [x, y, x_q, gamma])
    if n == 0:
        raise ValueError("x must have at least one context token (N >= 1); got N = 0")
    transform = active_transform(x, y, x_q, gamma)
    name = select_backend("icl_readout", backend, x.device, x.dtype, {"D": d}, transform)
    if transform is not None:    # the reference, as plain torch: the custom op does not compose
        return icl_readout_reference(x, y, x_q, gamma)
    return _readout(x, y, x_q, gamma, name)[0]


@torch.library.custom_op("fastattn::icl_readout_next_token", mutates_args=())
def _next(x: Tensor, y: Tensor, gamma: Tensor, backend: str) -> Tensor:
    if backend == "triton":
        from fastattn.triton_kernels.icl_readout.kernel import icl_readout_next_token_forward

        return icl_readout_next_token_forward(x.contiguous(), y.contiguous(), gamma.contiguous())
    return icl_readout_next_token_reference(x, y, gamma)


@_next.register_fake
def _(x, y, gamma, backend):
    return x.new_empty(x.shape[0], x.shape[1] - 1, gamma.shape[0])


@torch.library.custom_op("fastattn::icl_readout_next_token_backward", mutates_args=())
def _next_bwd(dout: Tensor, x: Tensor, y: Tensor, gamma: Tensor, backend: str
              ) -> tuple[Tensor, Tensor, Tensor]:
    if backend == "triton":
        from fastattn.triton_kernels.icl_readout.kernel import icl_readout_next_token_backward

        return icl_readout_next_token_backward(dout.contiguous(), x.contiguous(), y.contiguous(),
                                               gamma.contiguous())
    return icl_readout_next_token_backward_reference(dout, x, y, gamma)


@_next_bwd.register_fake
def _(dout, x, y, gamma, backend):
    return torch.empty_like(x), torch.empty_like(y), torch.empty_like(gamma)


def _next_setup(ctx, inputs, output):
    x, y, gamma, backend = inputs
    ctx.save_for_backward(x, y, gamma)
    ctx.backend = backend


def _next_backward(ctx, dout):
    x, y, gamma = ctx.saved_tensors
    if recording_backward():
        return (*reference_vjp(icl_readout_next_token_reference, (x, y, gamma), dout), None)
    dx, dy, dgamma = _next_bwd(dout, x, y, gamma, ctx.backend)
    return dx, dy, dgamma, None


_next.register_autograd(_next_backward, setup_context=_next_setup)


def _next_chunked(x: Tensor, y: Tensor, gamma: Tensor) -> Tensor:
    """The next-token read-out as strict causal linear attention: query Γ_h x_t / t, key x_m and
    value y_m shared by the heads (broadcast, not copied), so that o_t,h = S_tᵀ Γ_h x_t / t."""
    b, t, d = x.shape
    h = gamma.shape[0]
    counts = torch.arange(t, dtype=x.dtype, device=x.device).clamp_min(1)
    q = torch.einsum("hij,btj->bthi", gamma, x) / counts[None, :, None, None]
    k = x[:, :, None, :].expand(b, t, h, d)
    v = y[:, :, None, None].expand(b, t, h, 1)
    return causal_linear_attention(q, k, v, strict=True, backend="triton")[:, 1:, :, 0]


def icl_readout_next_token(x: Tensor, y: Tensor, gamma: Tensor, *, backend: str = "auto"
                           ) -> Tensor:
    """Next-token read-out: the prediction at position n = 2..T uses β over the first n−1 tokens
    (divided by n−1) and x_n as the query.

    Args:
        x: [B, T, D], T >= 2.
        y: [B, T].
        gamma: [H, D, D].
        backend: "auto", "chunked", "triton" or "reference" (see :func:`icl_readout`, also for
            autodiff). "chunked" is :func:`fastattn.ops.causal_linear_attention`'s tensor-core
            kernel (float32; "auto" picks it first); "triton" the serial kernel (prefix sums in
            registers, float32 and float64).

    Returns:
        [B, T−1, H]; entry t−1 predicts y at 0-based position t.
    """
    check("x", x, "[B, T, D]", (None, None, None))
    b, t, d = x.shape
    check("y", y, "[B, T]", (b, t))
    check("gamma", gamma, "[H, D, D]", (None, d, d))
    check_same(["x", "y", "gamma"], [x, y, gamma])
    if t < 2:
        raise ValueError(f"x must have T >= 2 tokens for next-token predictions; got T = {t}")
    transform = active_transform(x, y, gamma)
    name = select_backend("icl_readout_next_token", backend, x.device, x.dtype, {"D": d}, transform)
    if transform is not None:    # the reference, as plain torch (see icl_readout)
        return icl_readout_next_token_reference(x, y, gamma)
    if name == "chunked":
        return _next_chunked(x, y, gamma)
    return _next(x, y, gamma, name)
