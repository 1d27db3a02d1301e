"""Causal linear attention o_t = scale Σ_{m ≤ t} (q_t · k_m) v_m as a torch custom op: the chunked
tensor-core kernel, or the quadratic pure-torch reference."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from fastattn.ops._autograd import recording_backward, reference_vjp
from fastattn.ops._dispatch import active_transform, select_backend
from fastattn.ops._validate import check, check_same
from fastattn.triton_kernels.linear_attention.reference import causal_linear_attention_reference

__all__ = ["causal_linear_attention"]


@torch.library.custom_op("fastattn::causal_linear_attention", mutates_args=())
def _cla(q: Tensor, k: Tensor, v: Tensor, scale: float, strict: bool) -> tuple[Tensor, Tensor]:
    from fastattn.triton_kernels.linear_attention.kernel import causal_linear_attention_forward

    return causal_linear_attention_forward(q, k, v, scale, strict)


@_cla.register_fake
def _(q, k, v, scale, strict):
    from fastattn.triton_kernels.linear_attention.kernel import state_shape

    b, t, h, kd = q.shape
    return (q.new_empty(b, t, h, v.shape[-1]),
            q.new_empty(state_shape(b, t, h, kd, v.shape[-1], q.device), dtype=torch.float32))


@torch.library.custom_op("fastattn::causal_linear_attention_backward", mutates_args=())
def _cla_bwd(do: Tensor, q: Tensor, k: Tensor, v: Tensor, states: Tensor, scale: float,
             strict: bool) -> tuple[Tensor, Tensor, Tensor]:
    from fastattn.triton_kernels.linear_attention.kernel import causal_linear_attention_backward

    return causal_linear_attention_backward(do, q, k, v, states, scale, strict)


@_cla_bwd.register_fake
def _(do, q, k, v, states, scale, strict):
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


def _setup(ctx, inputs, output):
    q, k, v, scale, strict = inputs
    ctx.save_for_backward(q, k, v, output[1])
    ctx.scale, ctx.strict = scale, strict
    ctx.mark_non_differentiable(output[1])


def _backward(ctx, do, _dstates):
    q, k, v, states = ctx.saved_tensors
    if recording_backward():
        return (*reference_vjp(lambda *a: causal_linear_attention_reference(
            *a, ctx.scale, ctx.strict), (q, k, v), do), None, None)
    return (*_cla_bwd(do, q, k, v, states, ctx.scale, ctx.strict), None, None)


_cla.register_autograd(_backward, setup_context=_setup)


def causal_linear_attention(q: Tensor, k: Tensor, v: Tensor, *, scale: float = 1.0,
                            strict: bool = False, backend: str = "auto") -> Tensor:
    """o_t = scale Σ_{m ≤ t} (q_t · k_m) v_m per sequence and head (``strict``: m < t, the
    next-token form, where token t does not read itself).

    The Triton backend is chunked linear attention (flash-linear-attention's ``chunk_linear_attn``
    with ``normalize=False``, same [B, T, H, K] layout; its default scale is K^-1/2, ours is 1):
    per chunk of tokens, the state before the chunk and the masked scores inside it, all
    products on tensor cores in float32 accuracy for float32 inputs; bfloat16 and float16 inputs
    are multiplied in their dtype with float32 accumulation and float32 states, and the output
    and gradients come back in it (the reference computes them in float32). Keys and values may
    be broadcast over heads (``expand``, stride 0): the kernel reads them in place.
    Differentiable to any order and under every torch.func transform, as
    :func:`fastattn.ops.icl_readout`.

    Args:
        q: [B, T, H, K] queries.
        k: [B, T, H, K] keys.
        v: [B, T, H, V] values.
        scale: multiplies every score.
        strict: exclude the diagonal.
        backend: "auto" (Triton on CUDA, or on CPU under TRITON_INTERPRET=1, for float32,
            bfloat16 and float16; else the reference), "triton" or "reference".

    Returns:
        [B, T, H, V] in q's dtype.
    """
    check("q", q, "[B, T, H, K]", (None, None, None, None))
    b, t, h, kd = q.shape
    check("k", k, "[B, T, H, K]", (b, t, h, kd))
    check("v", v, "[B, T, H, V]", (b, t, h, None))
    check_same(["q", "k", "v"], [q, k, v])
    if t == 0:
        raise ValueError("q must have at least one token (T >= 1); got T = 0")
    if not math.isfinite(scale):
        raise ValueError(f"scale must be a finite number; got {scale}")
    transform = active_transform(q, k, v)
    name = select_backend("causal_linear_attention", backend, q.device, q.dtype,
                          {"K": kd, "V": v.shape[-1]}, transform)
    if name == "reference":       # plain torch: composes with every transform
        return causal_linear_attention_reference(q, k, v, float(scale), strict)
    return _cla(q, k, v, float(scale), strict)[0]
