"""The backward a kernel's custom op records when autograd will differentiate it again."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor


def recording_backward() -> bool:
    """True inside a backward run with ``create_graph=True`` (autograd enables grad mode there):
    the backward itself is being recorded for a higher derivative (double backward, Hessians)."""
    return torch.is_grad_enabled()


def reference_vjp(reference: Callable[..., Tensor], inputs: tuple[Tensor, ...], dout: Tensor
                  ) -> tuple[Tensor, ...]:
    """∂⟨dout, reference(*inputs)⟩/∂inputs in plain torch, so that autograd can differentiate the
    result again: the kernels' backward ops have no autograd formula of their own, and their saved
    side outputs (β, the log-sum-exp) are marked non-differentiable, so a double backward through
    them would silently drop terms.

    Args:
        reference: the op's pure-torch forward, a function of ``inputs`` only.
        inputs: the tensors the op was called with, as saved by its setup_context.
        dout: the gradient of the op's output.

    Returns:
        one gradient per input (zeros where the output does not depend on it).
    """
    _, vjp = torch.func.vjp(reference, *inputs)
    return vjp(dout)
