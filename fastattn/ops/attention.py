"""Single-query softmax attention with H heads as a torch custom op."""

from __future__ import annotations

import torch
from torch import Tensor

from fastattn.ops._autograd import recording_backward, reference_vjp
from fastattn.ops._dispatch import active_transform, select_backend
from fastattn.ops._validate import check, check_same, shape_str
from fastattn.triton_kernels.single_query_attention.reference import (
    single_query_attention_backward_reference,
    single_query_attention_reference,
    single_query_attention_with_lse_reference,
)

__all__ = ["single_query_attention"]


@torch.library.custom_op("fastattn::single_query_attention", mutates_args=())
def _sqa(q: Tensor, k: Tensor, v: Tensor, scale: float, backend: str) -> tuple[Tensor, Tensor]:
    if backend == "triton":
        from fastattn.triton_kernels.single_query_attention.kernel import (
            single_query_attention_forward,
        )

        return single_query_attention_forward(q.contiguous(), k.contiguous(), v.contiguous(),
                                              scale)
    return single_query_attention_with_lse_reference(q, k, v, scale)


@_sqa.register_fake
def _(q, k, v, scale, backend):
    return q.new_empty(q.shape[0], q.shape[1], v.shape[2]), q.new_empty(q.shape[0], q.shape[1])


@torch.library.custom_op("fastattn::single_query_attention_backward", mutates_args=())
def _sqa_bwd(dout: Tensor, q: Tensor, k: Tensor, v: Tensor, scale: float, out: Tensor,
             lse: Tensor, backend: str) -> tuple[Tensor, Tensor, Tensor]:
    if backend == "triton":
        from fastattn.triton_kernels.single_query_attention.kernel import (
            single_query_attention_backward,
        )

        return single_query_attention_backward(dout.contiguous(), q.contiguous(), k.contiguous(),
                                               v.contiguous(), scale, out.contiguous(),
                                               lse.contiguous())
    return single_query_attention_backward_reference(dout, q, k, v, scale, out, lse)


@_sqa_bwd.register_fake
def _(dout, q, k, v, scale, out, lse, backend):
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


def _setup(ctx, inputs, output):
    q, k, v, scale, backend = inputs
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse)
    ctx.scale, ctx.backend = scale, backend
    ctx.mark_non_differentiable(lse)


def _backward(ctx, dout, _dlse):
    q, k, v, out, lse = ctx.saved_tensors
    if dout is None:
        dout = torch.zeros_like(out)
    if recording_backward():
        return (*reference_vjp(lambda *a: single_query_attention_reference(*a, ctx.scale), (q, k, v), dout),
                None, None)
    dq, dk, dv = _sqa_bwd(dout, q, k, v, ctx.scale, out, lse, ctx.backend)
    return dq, dk, dv, None, None


_sqa.register_autograd(_backward, setup_context=_setup)


def single_query_attention(q: Tensor, k: Tensor, v: Tensor, scale: float, *,
                           backend: str = "auto") -> Tensor:
    """out[b, h] = Σ_m softmax_m(scale · q_bh · k_bm) v_bm, forward and backward by online softmax.

    In the library the query of head h is U_h x_q (merged) or K_hᵀ Q_h x_q (separate), the keys are
    the tokens' x including the query token, and the values are the y's (V = 1).

    Args:
        q: [B, H, K] one query per head.
        k: [B, M, K] keys shared by the heads, or [B, H, M, K] per-head keys.
        v: [B, M, V] values shared by the heads.
        scale: multiplies the scores.
        backend: "auto", "triton" or "reference" (see :func:`fastattn.ops.icl_readout`, also for
            autodiff: every order and every torch.func transform).

    Returns:
        [B, H, V].
    """
    check("q", q, "[B, H, K]", (None, None, None))
    b, h, kd = q.shape
    if not isinstance(k, Tensor) or k.dim() not in (3, 4):
        got = shape_str(k) if isinstance(k, Tensor) else type(k).__name__
        raise ValueError(f"k must be [B, M, K] or [B, H, M, K]; got {got}")
    if k.dim() == 3:
        check("k", k, "[B, M, K]", (b, None, kd))
    else:
        check("k", k, "[B, H, M, K]", (b, h, None, kd))
    m = k.shape[-2]
    check("v", v, "[B, M, V]", (b, m, None))
    check_same(["q", "k", "v"], [q, k, v])
    if m == 0:
        raise ValueError("k must have at least one key (M >= 1); got M = 0")
    transform = active_transform(q, k, v)
    name = select_backend("single_query_attention", backend, q.device, q.dtype,
                          {"K": kd, "V": v.shape[2]}, transform)
    if transform is not None:    # the reference, as plain torch (see fastattn.ops.icl_readout)
        return single_query_attention_reference(q, k, v, float(scale))
    return _sqa(q, k, v, float(scale), name)[0]
