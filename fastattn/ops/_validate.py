"""Shape, dtype and device checks at the ops' boundary: ValueError naming the argument."""

from __future__ import annotations

import torch


def shape_str(t: torch.Tensor) -> str:
    return "[" + ", ".join(str(s) for s in t.shape) + "]"


def check(name: str, t: object, spec: str, expected: tuple[int | None, ...]) -> None:
    """Raise ValueError unless ``t`` is a tensor of rank len(expected) matching non-None sizes."""
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{name} must be a tensor {spec}; got {type(t).__name__}")
    if t.dim() != len(expected) or any(e is not None and s != e
                                       for s, e in zip(t.shape, expected, strict=False)):
        want = spec
        if any(e is not None for e in expected):
            want += " = [" + ", ".join("*" if e is None else str(e) for e in expected) + "]"
        raise ValueError(f"{name} must be {want}; got {shape_str(t)}")
    if not t.is_floating_point():
        raise ValueError(f"{name} must be a floating tensor; got dtype {t.dtype}")


def check_same(names: list[str], tensors: list[torch.Tensor]) -> None:
    """All tensors share the first one's dtype and device."""
    first = tensors[0]
    for name, t in zip(names[1:], tensors[1:], strict=True):
        if t.dtype != first.dtype:
            raise ValueError(f"{name} must have the dtype of {names[0]} ({first.dtype}); "
                             f"got {t.dtype}")
        if t.device != first.device:
            raise ValueError(f"{name} must be on the device of {names[0]} ({first.device}); "
                             f"got {t.device}")
