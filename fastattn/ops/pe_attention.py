"""Causal linear attention with a multiplicative T×T positional matrix (Sander et al. 2024,
spec §7 item 2) as a torch custom op: O = (M ⊙ P ⊙ q kᵀ) v per head, M the causal mask with an
optional look-ahead."""

from __future__ import annotations

import torch
from torch import Tensor

from fastattn.ops._autograd import recording_backward, reference_vjp
from fastattn.ops._dispatch import active_transform, backend_reason, select_backend
from fastattn.ops._validate import check, check_same
from fastattn.triton_kernels.pe_attention.reference import pe_attention_reference

__all__ = ["pe_attention", "pe_attention_backend"]


@torch.library.custom_op("fastattn::pe_attention", mutates_args=())
def _pe(q: Tensor, k: Tensor, v: Tensor, p: Tensor, lookahead: int, backend: str) -> Tensor:
    if backend == "triton":
        from fastattn.triton_kernels.pe_attention.kernel import pe_attention_forward

        return pe_attention_forward(q.contiguous(), k.contiguous(), v.contiguous(), p.contiguous(),
                                    lookahead)
    return pe_attention_reference(q, k, v, p, lookahead)


@_pe.register_fake
def _(q, k, v, p, lookahead, backend):
    return q.new_empty(*q.shape[:-1], v.shape[-1])


@torch.library.custom_op("fastattn::pe_attention_backward", mutates_args=())
def _pe_bwd(dout: Tensor, q: Tensor, k: Tensor, v: Tensor, p: Tensor, lookahead: int, backend: str
            ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    if backend == "triton":
        from fastattn.triton_kernels.pe_attention.kernel import pe_attention_backward

        return pe_attention_backward(dout.contiguous(), q.contiguous(), k.contiguous(),
                                     v.contiguous(), p.contiguous(), lookahead)
    from fastattn.triton_kernels.pe_attention.reference import pe_attention_backward_reference

    return pe_attention_backward_reference(dout, q, k, v, p, lookahead)


@_pe_bwd.register_fake
def _(dout, q, k, v, p, lookahead, backend):
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v), torch.empty_like(p)


def _setup(ctx, inputs, output):
    q, k, v, p, lookahead, backend = inputs
    ctx.save_for_backward(q, k, v, p)
    ctx.lookahead, ctx.backend = lookahead, backend


def _backward(ctx, dout):
    q, k, v, p = ctx.saved_tensors
    if recording_backward():
        return (*reference_vjp(lambda *a: pe_attention_reference(*a, ctx.lookahead), (q, k, v, p),
                               dout), None, None)
    return (*_pe_bwd(dout.contiguous(), q, k, v, p, ctx.lookahead, ctx.backend), None, None)


_pe.register_autograd(_backward, setup_context=_setup)


def _check(q: Tensor, k: Tensor, v: Tensor, p: Tensor, lookahead: int) -> dict[str, int]:
    check("q", q, "[B, H, Tq, K]", (None, None, None, None))
    b, h, tq, kd = q.shape
    check("k", k, "[B, H, Tk, K]", (b, h, None, kd))
    tk = k.shape[2]
    check("v", v, "[B, H, Tk, V]", (b, h, tk, None))
    check("p", p, "[H, Tq, Tk]", (h, tq, tk))
    check_same(["q", "k", "v", "p"], [q, k, v, p])
    if not isinstance(lookahead, int) or lookahead < 0:
        raise ValueError(f"lookahead must be a non-negative int (0: the standard causal mask, 1: "
                         f"Sander et al. Eq. 6's one-step look-ahead); got {lookahead!r}")
    return {"K": kd, "V": v.shape[3]}


def pe_attention(q: Tensor, k: Tensor, v: Tensor, p: Tensor, *, lookahead: int = 0,
                 backend: str = "auto") -> Tensor:
    """O[b, h, i] = Σ_{j ≤ i + lookahead} P[h, i, j] (q_bhi · k_bhj) v_bhj: causal linear attention
    with a multiplicative positional matrix (Sander et al. Eq. 2; spec §7 item 2). Differentiable
    in q, k, v and p; p's gradient is reduced over the batch deterministically on every backend.
    A P shared by the heads can be passed as ``P.expand(H, Tq, Tk)`` (autograd sums over heads).
    Differentiable to any order and under every torch.func transform (see
    :func:`fastattn.ops.icl_readout`).

    Args:
        q: [B, H, Tq, K]. k: [B, H, Tk, K]. v: [B, H, Tk, V]. p: [H, Tq, Tk].
        lookahead: keys j ≤ i + lookahead are read: 0 the standard causal mask, 1 the one-step
            look-ahead of Eq. 6 (query e_{T−1}, keys e_1..e_T).
        backend: "auto" (Triton on CUDA, or on CPU under TRITON_INTERPRET=1; else the reference),
            "triton" or "reference"; :func:`pe_attention_backend` says which runs and why.

    Returns:
        [B, H, Tq, V].
    """
    dims = _check(q, k, v, p, lookahead)
    transform = active_transform(q, k, v, p)
    name = select_backend("pe_attention", backend, q.device, q.dtype, dims, transform)
    if transform is not None:    # the reference, as plain torch (see fastattn.ops.icl_readout)
        return pe_attention_reference(q, k, v, p, lookahead)
    return _pe(q, k, v, p, lookahead, name)


def pe_attention_backend(q: Tensor, k: Tensor, v: Tensor, p: Tensor, *, lookahead: int = 0,
                         backend: str = "auto") -> tuple[str, str]:
    """(backend, reason): what :func:`pe_attention` runs these inputs on, and why."""
    dims = _check(q, k, v, p, lookahead)
    transform = active_transform(q, k, v, p)
    name = select_backend("pe_attention", backend, q.device, q.dtype, dims, transform)
    return name, backend_reason("pe_attention", name, q.device, q.dtype, dims, transform)
