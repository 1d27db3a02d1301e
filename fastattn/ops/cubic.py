"""Cubic-feature contraction hidden = W1 z, z = (β x_qᵀ).flatten(), as a torch custom op."""

from __future__ import annotations

import torch
from torch import Tensor

from fastattn.ops._autograd import recording_backward, reference_vjp
from fastattn.ops._dispatch import active_transform, select_backend
from fastattn.ops._validate import check, check_same
from fastattn.triton_kernels.cubic.reference import (
    cubic_hidden_backward_reference,
    cubic_hidden_reference,
)

__all__ = ["cubic_hidden", "cubic_second_moments"]


@torch.library.custom_op("fastattn::cubic_hidden", mutates_args=())
def _cubic(beta: Tensor, x_q: Tensor, w1: Tensor, backend: str) -> Tensor:
    if backend == "triton":
        from fastattn.triton_kernels.cubic.kernel import cubic_hidden_forward

        return cubic_hidden_forward(beta.contiguous(), x_q.contiguous(), w1.contiguous())
    return cubic_hidden_reference(beta, x_q, w1)


@_cubic.register_fake
def _(beta, x_q, w1, backend):
    return beta.new_empty(beta.shape[0], w1.shape[0])


@torch.library.custom_op("fastattn::cubic_hidden_backward", mutates_args=())
def _cubic_bwd(dout: Tensor, beta: Tensor, x_q: Tensor, w1: Tensor, backend: str
               ) -> tuple[Tensor, Tensor, Tensor]:
    if backend == "triton":
        from fastattn.triton_kernels.cubic.kernel import cubic_hidden_backward

        return cubic_hidden_backward(dout.contiguous(), beta.contiguous(), x_q.contiguous(),
                                     w1.contiguous())
    return cubic_hidden_backward_reference(dout, beta, x_q, w1)


@_cubic_bwd.register_fake
def _(dout, beta, x_q, w1, backend):
    return torch.empty_like(beta), torch.empty_like(x_q), torch.empty_like(w1)


def _setup(ctx, inputs, output):
    beta, x_q, w1, backend = inputs
    ctx.save_for_backward(beta, x_q, w1)
    ctx.backend = backend


def _backward(ctx, dout):
    beta, x_q, w1 = ctx.saved_tensors
    if recording_backward():
        return (*reference_vjp(cubic_hidden_reference, (beta, x_q, w1), dout), None)
    return (*_cubic_bwd(dout, beta, x_q, w1, ctx.backend), None)


_cubic.register_autograd(_backward, setup_context=_setup)


def cubic_hidden(beta: Tensor, x_q: Tensor, w1: Tensor, *, backend: str = "auto") -> Tensor:
    """hidden[b, h] = Σ_ij W1[h, i·D + j] β_bi x_q,bj, i.e. W1 z with z = (β x_qᵀ).flatten()
    (row-major), never materialising z. Differentiable in all inputs, to any order and under
    every torch.func transform (see :func:`fastattn.ops.icl_readout`).

    Args:
        beta: [B, D].
        x_q: [B, D].
        w1: [H, D*D].
        backend: "auto", "triton" or "reference" (see :func:`fastattn.ops.icl_readout`).

    Returns:
        [B, H].
    """
    check("beta", beta, "[B, D]", (None, None))
    b, d = beta.shape
    check("x_q", x_q, "[B, D]", (b, d))
    check("w1", w1, "[H, D*D]", (None, d * d))
    check_same(["beta", "x_q", "w1"], [beta, x_q, w1])
    transform = active_transform(beta, x_q, w1)
    name = select_backend("cubic_hidden", backend, beta.device, beta.dtype, {"D": d}, transform)
    if transform is not None:    # the reference, as plain torch (see fastattn.ops.icl_readout)
        return cubic_hidden_reference(beta, x_q, w1)
    return _cubic(beta, x_q, w1, name)


def cubic_second_moments(beta: Tensor, x_q: Tensor, y_q: Tensor) -> dict[str, Tensor]:
    """Empirical second moments of the cubic feature z = (β x_qᵀ).flatten() over a data set.

    Args:
        beta: [B, D].
        x_q: [B, D].
        y_q: [B].

    Returns:
        dict: ``zz`` [D², D²] = mean z zᵀ and ``zy`` [D, D] = mean y_q β x_qᵀ (both exact),
        ``yy`` = mean y_q², and the Kronecker factors ``beta_beta`` = mean ββᵀ, ``xq_xq`` = mean
        x_q x_qᵀ. ``kron(beta_beta, xq_xq)`` is exact in population (β and x_q are independent)
        but only approximates ``zz`` on a finite data set.
    """
    from fastattn.triton_kernels.cubic.reference import cubic_second_moments_reference

    check("beta", beta, "[B, D]", (None, None))
    b, d = beta.shape
    check("x_q", x_q, "[B, D]", (b, d))
    check("y_q", y_q, "[B]", (b,))
    check_same(["beta", "x_q", "y_q"], [beta, x_q, y_q])
    return cubic_second_moments_reference(beta, x_q, y_q)
