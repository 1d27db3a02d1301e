"""The ops under torch.func and higher-order autograd, on each backend (issue 38 item 1).

Under torch.func or forward-mode AD the ops run the reference as plain torch; a backward run with
create_graph=True records the reference's backward, on the reference's custom op and the kernel's
alike. The truth here is a float64 central finite difference of the op (first order) and of its
plain-autograd gradient (second order). The Triton kernel (under the interpreter on CPU, compiled
on CUDA) runs the reference under "auto" inside torch.func or forward-mode AD and fails in one
line under an explicit "triton".
"""

from __future__ import annotations

import pytest
import torch
import torch.autograd.forward_ad as fwAD

import fastattn.ops as ops
from fastattn.ops._dispatch import active_transform
from helpers import seeded_torch, triton_device

#: the finite-difference step: the fourth-order difference below errs by O(h⁴) truncation plus
#: O(ε/h) rounding, both relative to the derivative's scale; at 1e-4 that is ≤ 2e-12 of the largest
#: HVP component over seeds (the second-order difference at 1e-5 erred 5e-10, so a per-element atol
#: of 1e-8 failed on components near zero of a vector of scale 500)
H_FD = 1e-4
#: the bound on |AD − FD|, relative to the derivative's scale (below): 500× the measured error, and
#: far below any wrong term, which errs O(1) relative
FD_RTOL = 1e-9


def _cases(g: torch.Generator, device: torch.device):
    """op name → (f(*inputs, backend) -> tensor, inputs): small float64 shapes."""

    def r(*s):
        return torch.randn(*s, generator=g, dtype=torch.float64).to(device)

    b, n, d, h = 3, 4, 3, 2
    return {
        "icl_readout": (lambda *a, backend: ops.icl_readout(*a, backend=backend),
                        (r(b, n, d), r(b, n), r(b, d), r(h, d, d))),
        "icl_readout_next_token": (lambda *a, backend: ops.icl_readout_next_token(*a, backend=backend),
                                   (r(b, n, d), r(b, n), r(h, d, d))),
        "cubic_hidden": (lambda *a, backend: ops.cubic_hidden(*a, backend=backend),
                         (r(b, d), r(b, d), r(h, d * d))),
        "single_query_attention": (
            lambda *a, backend: ops.single_query_attention(*a, 0.7, backend=backend),
            (r(b, h, d), r(b, n, d), r(b, n, 2))),
        "pe_attention": (lambda *a, backend: ops.pe_attention(*a, lookahead=1, backend=backend),
                         (r(b, h, n, d), r(b, h, n, d), r(b, h, n, 2), r(h, n, n))),
    }


OPS = list(_cases(torch.Generator(), torch.device("cpu")))


def _scalar(fn, backend, weights):
    """A scalar loss of the op: Σ w ⊙ out² (second derivatives in every input)."""
    return lambda *a: (weights * fn(*a, backend=backend) ** 2).sum()


def _setup(op, rng, device):
    g = seeded_torch(rng)
    fn, inputs = _cases(g, device)[op]
    out = fn(*inputs, backend="reference")
    weights = torch.randn(out.shape, generator=g, dtype=torch.float64).to(device)
    tangents = tuple(torch.randn(t.shape, generator=g, dtype=torch.float64).to(device)
                     for t in inputs)
    return fn, inputs, weights, tangents


def _central_fd(f, inputs, tangents):
    """The directional derivative of f along the tangents by Richardson's fourth-order central
    difference: (8 (f(x+h) − f(x−h)) − (f(x+2h) − f(x−2h))) / 12h."""
    def at(k):
        return f(*(x + k * H_FD * t for x, t in zip(inputs, tangents, strict=True)))
    return (8 * (at(1) - at(-1)) - (at(2) - at(-2))) / (12 * H_FD)


def _assert_matches_fd(ad, fd, scale=None):
    """AD equals the finite difference within FD_RTOL of `scale`, by default the difference's
    largest component."""
    scale = float(fd.abs().max()) if scale is None else scale
    torch.testing.assert_close(ad, fd, rtol=0, atol=FD_RTOL * scale)


def _directional_scale(f, inputs, tangents) -> float:
    """Σ ‖∇ᵢf‖ ‖tᵢ‖, which bounds |∇f · t| (Cauchy–Schwarz): the scale of a directional derivative.
    The derivative itself is no scale: it is near zero for some directions while the rounding
    error of its difference, O(ε |f| / h), is not (relative to |∇f · t| it reached 4e-9 over 1000
    seeds, relative to this 2e-12)."""
    grads = _autograd_grads(f, inputs)
    return sum(float(g.norm() * t.norm()) for g, t in zip(grads, tangents, strict=True))


def _autograd_grads(f, inputs):
    leaves = [x.detach().requires_grad_() for x in inputs]
    return torch.autograd.grad(f(*leaves), leaves)


@pytest.mark.parametrize("op", OPS)
def test_reference_jvp_hessian_and_double_backward_equal_finite_differences(op, rng, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    fn, inputs, weights, tangents = _setup(op, rng, torch.device("cpu"))
    f = _scalar(fn, "auto", weights)
    fd = _central_fd(f, inputs, tangents)
    scale = _directional_scale(f, inputs, tangents)
    _, jvp = torch.func.jvp(f, inputs, tangents)
    _assert_matches_fd(jvp, fd, scale)
    with fwAD.dual_level():
        dual = f(*(fwAD.make_dual(x, t) for x, t in zip(inputs, tangents, strict=True)))
        _assert_matches_fd(fwAD.unpack_dual(dual).tangent, fd, scale)
    # second order: the HVP by double backward and by torch.func against the FD of the gradient
    hvp_fd = _central_fd(lambda *a: torch.cat([g.flatten() for g in _autograd_grads(f, a)]),
                         inputs, tangents)
    leaves = [x.detach().requires_grad_() for x in inputs]
    grads = torch.autograd.grad(f(*leaves), leaves, create_graph=True)
    dot = sum((g * t).sum() for g, t in zip(grads, tangents, strict=True))
    hvp_db = torch.cat([g.flatten() for g in torch.autograd.grad(dot, leaves)])
    _, hvp_func = torch.func.jvp(torch.func.grad(f, argnums=tuple(range(len(inputs)))),
                                 inputs, tangents)
    _assert_matches_fd(hvp_db, hvp_fd)
    _assert_matches_fd(torch.cat([g.flatten() for g in hvp_func]), hvp_fd)


#: the input shared by the batch (the parameters: Γ, W1, P) of the ops that have one
SHARED = {"icl_readout": 3, "icl_readout_next_token": 2, "cubic_hidden": 2, "pe_attention": 3}


@pytest.mark.parametrize("op", list(SHARED))
def test_reference_per_sample_vmap_grad_sums_to_the_batch_gradient(op, rng, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    fn, inputs, _, _ = _setup(op, rng, torch.device("cpu"))
    i = SHARED[op]
    param, data = inputs[i], inputs[:i]
    f = _scalar(fn, "auto", 1.0)
    per = torch.func.vmap(torch.func.grad(lambda p, *sample: f(*(s[None] for s in sample), p)),
                          in_dims=(None, *[0] * len(data)))(param, *data)
    whole = _autograd_grads(lambda p: f(*data, p), (param,))[0]
    torch.testing.assert_close(per.sum(0), whole, rtol=1e-10, atol=1e-12)


@pytest.fixture(params=[pytest.param("interpreter", marks=pytest.mark.interpreter), "cuda"])
def kernel_device(request, monkeypatch) -> torch.device:
    return triton_device(request.param, monkeypatch)


@pytest.mark.parametrize("op", OPS)
def test_kernel_double_backward_equals_the_reference(op, rng, kernel_device):
    fn, inputs, weights, tangents = _setup(op, rng, kernel_device)
    hvps = {}
    for backend in ("triton", "reference"):
        f = _scalar(fn, backend, weights)
        leaves = [x.detach().requires_grad_() for x in inputs]
        grads = torch.autograd.grad(f(*leaves), leaves, create_graph=True)
        dot = sum((g * t).sum() for g, t in zip(grads, tangents, strict=True))
        hvps[backend] = torch.cat([g.flatten() for g in torch.autograd.grad(dot, leaves)])
    torch.testing.assert_close(hvps["triton"], hvps["reference"], rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("op", OPS)
def test_kernel_under_torch_func_runs_the_reference_on_auto_and_fails_in_one_line(
        op, rng, kernel_device):
    fn, inputs, weights, tangents = _setup(op, rng, kernel_device)
    f = _scalar(fn, "auto", weights)
    reference = _scalar(fn, "reference", weights)
    fd = _central_fd(reference, inputs, tangents)
    scale = _directional_scale(reference, inputs, tangents)
    _assert_matches_fd(torch.func.jvp(f, inputs, tangents)[1], fd, scale)
    with fwAD.dual_level():
        dual = f(*(fwAD.make_dual(x, t) for x, t in zip(inputs, tangents, strict=True)))
        _assert_matches_fd(fwAD.unpack_dual(dual).tangent, fd, scale)

    kernel = _scalar(fn, "triton", weights)
    transforms = {
        "torch.func.jvp/jacfwd": lambda: torch.func.jvp(kernel, inputs, tangents),
        "torch.func.grad/vjp/jacrev": lambda: torch.func.grad(kernel)(*inputs),
        "torch.func.vmap": lambda: torch.func.vmap(kernel, in_dims=(0, *[None] * (len(inputs) - 1)))(
            inputs[0][None].expand(2, *inputs[0].shape), *inputs[1:]),
    }
    for name, call in transforms.items():
        with pytest.raises(ops.BackendUnavailableError) as err:
            call()
        msg = str(err.value)
        assert "\n" not in msg and name in msg and "use backend='reference'" in msg, msg
    with fwAD.dual_level(), pytest.raises(ops.BackendUnavailableError) as err:
        kernel(*(fwAD.make_dual(x, t) for x, t in zip(inputs, tangents, strict=True)))
    assert "\n" not in str(err.value) and "forward-mode AD" in str(err.value)


def test_active_transform_names_the_stack_and_the_dual_level():
    seen = []

    def f(x):
        seen.append(active_transform(x))
        return (x ** 3).sum()

    x = torch.ones(2, dtype=torch.float64)
    f(x)
    torch.func.hessian(f)(x)
    with fwAD.dual_level():
        f(fwAD.make_dual(x, torch.ones_like(x)))
    assert seen == [None, "torch.func.vmap, torch.func.jvp/jacfwd, torch.func.grad/vjp/jacrev",
                    "forward-mode AD (torch.autograd.forward_ad)"]


def test_backend_reason_says_why_the_kernel_did_not_run_under_torch_func(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    q, k, v = (torch.randn(1, 1, 3, 2, dtype=torch.float64) for _ in range(3))
    p = torch.randn(1, 3, 3, dtype=torch.float64)
    assert ops.pe_attention_backend(q, k, v, p)[0] == "triton"
    reasons = []

    def f(q):
        reasons.append(ops.pe_attention_backend(q, k, v, p))
        return ops.pe_attention(q, k, v, p).sum()

    torch.func.grad(f)(q)
    name, why = reasons[0]
    assert name == "reference" and "traced by torch.func.grad/vjp/jacrev" in why


def test_torch_func_inside_torch_compile_runs_the_reference(rng, monkeypatch):
    """torch.compile(fullgraph=True) of torch.func.grad through an op: dynamo sees the transform
    too, and the op traces as plain torch (the custom op would fail under the transform)."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    fn, inputs, weights, _ = _setup("icl_readout", rng, torch.device("cpu"))
    *data, gamma = inputs
    grad = torch.func.grad(lambda g: _scalar(fn, "auto", weights)(*data, g))
    torch.testing.assert_close(torch.compile(grad, fullgraph=True)(gamma), grad(gamma),
                               rtol=1e-12, atol=1e-14)
