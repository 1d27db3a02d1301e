"""Every model family's parameters are independent tensors (issue 23, defect 1: the full linear
transformer's p1 and q2 were one `zero` tensor, so every in-place update applied ∇p1 + ∇q2 to both).

For every registered model kind (`MODELS`) and every other model class `fastattn.models` exports,
built at its defaults: no two parameters share storage, and one plain-SGD step on a random batch
moves each parameter by exactly −lr × its own gradient.
"""

import dataclasses
import inspect

import pytest
import torch

import fastattn.models as models
from fastattn.models import MODELS, DisentangledTransformer, StandardTransformer, Transformer
from fastattn.tasks import TASKS

D = 4

#: one small instance per task kind; a model is trained on the first task its forward accepts
_TASKS = {
    "linear_regression": [lambda: TASKS["linear_regression"](D, context=5)],
    "autoregressive": [lambda enc=enc: TASKS["autoregressive"](dim=D, context=5, representation="real",
                                                               context_dist="orthogonal", encoding=enc)
                       for enc in ("plain", "augmented")],
    "induction": [lambda: TASKS["induction"](D, context=2)],
    "induction_tokens": [lambda: TASKS["induction_tokens"](vocab=8, block=8, pairs=2)],
    "wishart_tasks": [lambda: TASKS["wishart_tasks"](D, context=5, tasks=3)],
    "multitask_regression": [lambda: TASKS["multitask_regression"](6, context=5)],
    "modular_addition": [lambda: TASKS["modular_addition"](p=7)],
    "repeated_tokens": [lambda: TASKS["repeated_tokens"](vocab=8, length=8)],
}

#: model classes built from their fields (token in, logits out; the disentangled model)
_OTHER = {DisentangledTransformer: dict(dim=D, init_scale=0.1),
          StandardTransformer: dict(vocab=8, block=8, d_model=8),
          Transformer: dict(vocab=8, n_ctx=8, d_model=8, n_heads=2)}


def _candidates(cls):
    """Models of class `cls` at their default init, one per dimension a task may need."""
    if cls in _OTHER:
        return [cls(**_OTHER[cls])]
    fields = cls.config_class.__dataclass_fields__
    extra = {"context": 5} if "context" in fields else {}
    if "heads" in fields and fields["heads"].default is dataclasses.MISSING:
        extra["heads"] = 2
    if "mlp_width" in fields:           # eq6's MLP blocks are empty at its default width 0
        extra["mlp_width"] = 3
    out = [cls(dim=dim, **extra) for dim in (D, 6)]
    return out


def _loss(model):
    """A random batch's loss: the first task whose `loss` accepts the model."""
    for makers in _TASKS.values():
        for make in makers:
            task = make()
            try:
                return task.loss(model, task.sample(3, step=1))
            except (RuntimeError, ValueError, TypeError, AttributeError, IndexError):
                continue
    return None


def _model_and_loss(cls):
    for model in _candidates(cls):
        loss = _loss(model)
        if loss is not None:
            return model, loss
    raise AssertionError(f"{cls.__name__}: no task in {sorted(_TASKS)} accepts it; add one here")


_CLASSES = [fam.model for fam in MODELS.values()] + list(_OTHER)


def test_every_task_kind_and_model_class_is_covered():
    assert set(_TASKS) == set(TASKS), "add a small instance of the new task kind to _TASKS"
    exported = (getattr(models, n) for n in models.__all__)
    modules = {c for c in exported if inspect.isclass(c) and issubclass(c, torch.nn.Module)
               and c is not models.ICLModel}
    assert modules <= set(_CLASSES), f"cover {modules - set(_CLASSES)} in _OTHER"


@pytest.mark.parametrize("cls", _CLASSES, ids=lambda c: c.__name__)
def test_parameters_share_no_storage(cls):
    for model in _candidates(cls):
        seen = {}
        for name, p in model.named_parameters():
            ptr = p.untyped_storage().data_ptr()
            assert ptr not in seen, f"{cls.__name__}: {name} shares storage with {seen[ptr]}"
            seen[ptr] = name


@pytest.mark.parametrize("cls", _CLASSES, ids=lambda c: c.__name__)
def test_one_sgd_step_moves_each_parameter_by_its_own_gradient(cls):
    torch.manual_seed(0)
    model, loss = _model_and_loss(cls)
    params = dict(model.named_parameters())
    # a random quadratic in every parameter on top of the batch loss: each trainable tensor gets a
    # gradient of its own even where the forward pass does not read it
    coef = {n: torch.randn_like(p) for n, p in params.items()}
    loss = loss + sum(((coef[n] * p) ** 2).sum() + (coef[n] * p).sum() for n, p in params.items())
    loss.backward()
    before = {n: p.detach().clone() for n, p in params.items()}
    grads = {n: None if p.grad is None else p.grad.clone() for n, p in params.items()}
    lr = 0.01
    torch.optim.SGD(model.parameters(), lr=lr).step()
    for n, p in params.items():
        want = before[n] if grads[n] is None else before[n] - lr * grads[n]
        err = float((p.detach() - want).abs().max()) if p.numel() else 0.0
        tol = 1e-5 if p.dtype == torch.float32 else 1e-12
        assert err <= tol * (1 + float(want.abs().max())), f"{cls.__name__}.{n} moved off by {err}"
