"""torch.func transforms and double backward through every registered model's loss (issue 38 item 1).

Each model is built small in float64 for the first task it pairs with, at random parameters; its
task's sampled loss on one batch is a function of the flat parameter vector (`PARAM_ORDER`, the
layout the population objectives read). Truth: central finite differences in float64 of the loss
(first order) and of its plain-autograd gradient (second order); and, where the (task, model) pair
has an exact population objective, the Monte-Carlo mean of torch.func's Hessian-vector product of
the sampled loss equals the objective's exact one within its standard error.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as fwAD

from fastattn.configs import pairs
from fastattn.models import MODELS
from fastattn.population.induction_full import basis_matrix
from fastattn.population.registry import objective_for, registered_objectives
from fastattn.training.build import build_run
from helpers import mc_mean_and_se

#: small task values per task kind, and per model kind where the pair needs other ones
TASKS = {
    "linear_regression": {"dim": 3, "context": 5, "spectrum": "linear", "noise": 0.1},
    "multitask_regression": {"dim": 4, "supports": ((0, 1), (2, 3)), "context": 5},
    "autoregressive": {"dim": 2, "context": 6, "context_dist": "unitary"},
    "wishart_tasks": {"dim": 3, "spectrum": "2,1,0.5", "context": 5, "tasks": 4},
    "modular_addition": {"p": 5},
    "induction": {"dim": 6, "context": 3},
    "induction_tokens": {"vocab": 8, "block": 8, "pairs": 2},
}
#: AUG-1's exact loss is Prop. 2's, for complex tokens of s_1 = 1
TASK_OF_MODEL = {"aug": {"representation": "complex", "s1": "ones"}}
#: the full linear transformer (reduced=True freezes p1 = q2 = 0, outside the full objective)
SMALL_MODELS = {"transformer": {"d_model": 8, "n_heads": 2, "d_mlp": 8, "layer_norm": True},
                "standard_transformer": {"d_model": 8}, "aug_transformer": {"heads": 4},
                "non_aug": {"heads": 4}, "diag": {"heads": 2}, "merged_full": {"heads": 2},
                "linear_transformer": {"reduced": False}}
TASK_OF = {m: t for t, ms in reversed(pairs().items()) for m in ms}
KINDS = sorted(MODELS)
EXACT = sorted(m for t, m in registered_objectives() if TASK_OF.get(m) == t)
BATCH = 8
H_FD = 1e-5


class Problem:
    """A model's task loss on one batch as a function of the flat parameters `[P]`."""

    def __init__(self, kind: str, rng: np.random.Generator, scale: float = 0.3):
        task_kind = TASK_OF[kind]
        self.task, self.model, _ = build_run({
            "task": {"kind": task_kind, **TASKS[task_kind], **TASK_OF_MODEL.get(kind, {})},
            "model": {"kind": kind, "dtype": "float64", **SMALL_MODELS.get(kind, {})}})
        named = dict(self.model.named_parameters())
        self.names = list(getattr(self.model, "PARAM_ORDER", ())) or list(named)
        assert sorted(self.names) == sorted(named), "PARAM_ORDER must name every parameter"
        self.shapes = [named[n].shape for n in self.names]
        theta0 = torch.cat([named[n].detach().reshape(-1) for n in self.names])
        self.theta = theta0 + scale * torch.as_tensor(rng.standard_normal(theta0.numel()))
        self.batch = self.task.sample(BATCH, int(rng.integers(1 << 20)), dtype=torch.float64)

    def params(self, theta: torch.Tensor) -> dict[str, torch.Tensor]:
        out, offset = {}, 0
        for name, shape in zip(self.names, self.shapes, strict=True):
            n = int(np.prod(shape))
            out[name] = theta[offset:offset + n].reshape(shape)
            offset += n
        return out

    def loss(self, theta: torch.Tensor, batch=None) -> torch.Tensor:
        batch = self.batch if batch is None else batch
        with torch.nn.utils.stateless._reparametrize_module(self.model, self.params(theta)):
            return self.task.loss(self.model, batch)

    def grad(self, theta: torch.Tensor) -> torch.Tensor:
        """The gradient by plain first-order autograd (`backward()`, what training uses)."""
        leaf = theta.detach().requires_grad_()
        return torch.autograd.grad(self.loss(leaf), leaf)[0]

    def direction(self, rng: np.random.Generator) -> torch.Tensor:
        u = torch.as_tensor(rng.standard_normal(self.theta.numel()))
        return u / u.norm()

    def fd(self, f, u: torch.Tensor) -> torch.Tensor:
        return (f(self.theta + H_FD * u) - f(self.theta - H_FD * u)) / (2 * H_FD)


def _close(name: str, got: torch.Tensor, want: torch.Tensor, rtol: float) -> None:
    """|got − want| <= rtol · max(|want|, 1e-3) elementwise, with the worst error in the message."""
    scale = want.abs().max().clamp_min(1e-3)
    err = float((got - want).abs().max())
    assert err <= rtol * float(scale), f"{name}: max |Δ| = {err:.3e}, scale {float(scale):.3e}"


@pytest.mark.parametrize("kind", KINDS)
def test_grad_jacrev_and_vmap_grad(kind, rng):
    pb = Problem(kind, rng)
    u = pb.direction(rng)
    g = torch.func.grad(pb.loss)(pb.theta)
    _close("grad·u vs FD", g @ u, pb.fd(pb.loss, u), 1e-6)
    _close("grad vs backward()", g, pb.grad(pb.theta), 1e-10)
    _close("jacrev vs backward()", torch.func.jacrev(pb.loss)(pb.theta), pb.grad(pb.theta), 1e-10)
    # an ensemble of parameter vectors: batched parameters through every op
    thetas = torch.stack([pb.theta, pb.theta + 0.1 * u, pb.theta - 0.2 * u])
    per = torch.func.vmap(torch.func.grad(pb.loss))(thetas)
    _close("vmap(grad) vs backward()", per, torch.stack([pb.grad(t) for t in thetas]), 1e-10)


@pytest.mark.parametrize("kind", KINDS)
def test_jvp_and_forward_ad_equal_finite_differences(kind, rng):
    pb = Problem(kind, rng)
    u = pb.direction(rng)
    fd = pb.fd(pb.loss, u)
    _close("torch.func.jvp vs FD", torch.func.jvp(pb.loss, (pb.theta,), (u,))[1], fd, 1e-6)
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(pb.loss(fwAD.make_dual(pb.theta, u))).tangent
        assert tangent is not None, "forward_ad gave no tangent"
        _close("forward_ad vs FD", tangent, fd, 1e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_hessian_and_double_backward_equal_finite_differences_of_the_gradient(kind, rng):
    pb = Problem(kind, rng)
    basis = torch.stack([pb.direction(rng) for _ in range(3)], 1)         # [P, 3]
    # torch.func.hessian (jacfwd ∘ jacrev) on a 3-dim slice through θ: every model's full P
    hess = torch.func.hessian(lambda a: pb.loss(pb.theta + basis @ a))(torch.zeros(3,
                                                                               dtype=torch.float64))
    fd = torch.stack([pb.fd(pb.grad, basis[:, j]) for j in range(3)], 1)  # [P, 3]
    _close("hessian vs FD of the gradient", hess, basis.T @ fd, 1e-5)
    leaf = pb.theta.detach().requires_grad_()
    (g,) = torch.autograd.grad(pb.loss(leaf), leaf, create_graph=True)
    hvp = torch.autograd.grad(g @ basis[:, 0], leaf)[0]
    _close("double backward vs FD of the gradient", hvp, fd[:, 0], 1e-5)
    hvp_func = torch.func.jvp(torch.func.grad(pb.loss), (pb.theta,), (basis[:, 0],))[1]
    _close("torch.func HVP vs FD of the gradient", hvp_func, fd[:, 0], 1e-5)


@pytest.mark.parametrize("kind", EXACT)
def test_sampled_hvp_averages_to_the_exact_population_hvp(kind, rng):
    """E over batches of torch.func's HVP of the sampled loss = the exact objective's HVP."""
    pb = Problem(kind, rng, scale=0.2)
    objective = objective_for(pb.task, pb.model)
    u = pb.direction(rng)
    if kind == "disentangled":   # the exact objective lives on Theorem 1's 19-dim subspace
        basis = torch.as_tensor(basis_matrix(pb.model.config.dim))
        pb.theta = basis @ torch.as_tensor(0.3 * rng.standard_normal(basis.shape[1]))
        u = basis @ torch.as_tensor(rng.standard_normal(basis.shape[1]))
        u = u / u.norm()
    theta = pb.theta.numpy()
    exact = np.asarray(objective.hvp(theta, u.numpy()))
    hvp = torch.func.jvp(torch.func.grad(pb.loss), (pb.theta,), (u,))[1]

    def batch_hvp(step: int) -> np.ndarray:
        """torch.func's HVP of the loss on a fresh batch: i.i.d. unbiased estimates."""
        batch = pb.task.sample(768, step, dtype=torch.float64)
        return torch.func.jvp(torch.func.grad(lambda t: pb.loss(t, batch)), (pb.theta,),
                              (u,))[1].numpy()

    # 40 batches of 768 sequences: the standard error of 120 batches of 256 at a third of the
    # calls (a call's fixed cost dominated), and 39 degrees of freedom for the z below
    samples = np.stack([batch_hvp(step) for step in range(1, 41)])
    mean, se = mc_mean_and_se(samples)
    z = np.abs(mean - exact) / np.maximum(se, 1e-12 * np.abs(exact).max())
    print(f"{kind}: max|Δ| {np.abs(mean - exact).max():.3e}, max z {z.max():.2f}, "
          f"|exact|max {np.abs(exact).max():.3e}, one-batch HVP norm {float(hvp.norm()):.3e}")
    assert z.max() < 6.0, f"max z = {z.max():.2f} at {int(z.argmax())}"


#: a model per op, each run through the op's Triton kernel under the interpreter by "auto"
KERNEL_MODELS = {"separate": ("icl_readout", "icl_readout"), "cubic_mlp": ("cubic", "cubic_hidden"),
                 "multihead_softmax": ("single_query_attention", "single_query_attention"),
                 "non_aug": ("pe_attention", "pe_attention")}


@pytest.mark.interpreter
@pytest.mark.parametrize("kind", list(KERNEL_MODELS))
def test_kernel_path_under_the_interpreter_double_backward_and_jvp(kind, rng, monkeypatch):
    """The Triton kernel runs the forward and the first backward; a double backward records the
    reference's backward, and torch.func.jvp runs the reference: both equal the FD truth."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    folder, op = KERNEL_MODELS[kind]
    kernel = importlib.import_module(f"fastattn.triton_kernels.{folder}.kernel")
    forward = getattr(kernel, f"{op}_forward")
    launches = []
    monkeypatch.setattr(kernel, f"{op}_forward", lambda *a: launches.append(1) or forward(*a))
    pb = Problem(kind, rng)
    u = pb.direction(rng)
    leaf = pb.theta.detach().requires_grad_()
    (g,) = torch.autograd.grad(pb.loss(leaf), leaf, create_graph=True)
    assert launches, f"{op}: the kernel did not run"
    hvp = torch.autograd.grad(g @ u, leaf)[0]
    _close("kernel double backward vs FD of the gradient", hvp, pb.fd(pb.grad, u), 1e-5)
    _close("jvp (auto: the reference) vs FD", torch.func.jvp(pb.loss, (pb.theta,), (u,))[1],
           pb.fd(pb.loss, u), 1e-6)
