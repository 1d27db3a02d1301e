"""The flat float64 parameter layout of each model family, defined once (docs/conventions.md).

The C++ core, the population API, the analysis tools and the models' `to_flat`/`load_flat` all
read parameters in this order (row-major): a test checks every model's tensors against it.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike


def param_shapes(family: str, dims: tuple[int, int, int]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """(name, shape) of each parameter block, in flat order, for dims (D, H, R)."""
    d, h, r = dims
    if family in ("merged", "softmax_merged"):
        return (("v", (h,)), ("U", (h, d, d)))
    if family == "cubic_mlp":
        return (("w2", (h,)), ("W1", (h, d * d)))
    if family in ("separate", "softmax_separate"):
        return (("v", (h,)), ("K", (h, r, d)), ("Q", (h, r, d)))
    if family == "merged_full":
        return (("value", (h, d + 1, d + 1)), ("kq", (h, d + 1, d + 1)))
    if family in ("multihead_softmax", "multihead_linear"):  # d = the covariate dimension
        square = (h, d + 1, d + 1)
        return (("wq", square), ("wk", square), ("wv", square), ("wo", (h, d + 1)))
    if family == "multioutput_softmax":  # dims (d, H, N): tokens of width d + N, N outputs
        square = (h, d + r, d + r)
        return (("wq", square), ("wk", square), ("wv", square), ("wo", (h, r, d + r)))
    if family == "multilayer_softmax":  # dims (d, H, S): S weight sets (1 if tied, else layers)
        square = (r, h, d + 1, d + 1)
        return (("wq", square), ("wk", square), ("wv", square), ("wo", square), ("readout", (1, d + 1)))
    if family == "kernel_regressors":  # r = ω entries per head: 1 (scalar), d (diagonal), d² (full)
        omega = (h,) if r == 1 else (h, d) if r == d else (h, d, d)
        return (("omega", omega), ("mu", (h,)))
    # Sander et al. 2024 (fastattn.models.autoregressive): dims (d, H, T_max)
    if family == "diag":
        return (("A", (h, d)), ("B", (h, d)), ("P", (r, r)))
    if family == "pe_only":
        return (("P", (r, r)),)
    if family == "aug":
        return (("a", (4,)), ("b", (2,)))
    if family == "aug_layers":          # dims (d, 1, L), E = 3d
        e = 3 * d
        per_layer = [(f"{w}{n}", (r, e, e) if w == "W" else (r, e)) for n in "qkvo" for w in "Wb"]
        return (*per_layer, ("ln_w", (r, e)), ("ln_b", (r, e)), ("fc_w", (e, e)), ("fc_b", (e,)))
    if family == "non_aug":             # dims (d, H, k), E = k·d; 100 learned positions
        e = d * r
        qkv = [(f"{w}{n}", (h, e, e) if w == "W" else (h, e)) for n in "qkv" for w in "Wb"]
        return (*qkv, ("pos", (100, e)), ("Wo", (e, e)), ("bo", (e,)), ("ln_w", (e,)),
                ("ln_b", (e,)), ("fc_w", (d, e)), ("fc_b", (d,)))
    if family == "aug_transformer":     # dims (d, m, L): AUG-L plus an MLP of hidden width m
        e = 3 * d
        per_layer = [(f"{w}{n}", (r, e, e) if w == "W" else (r, e)) for n in "qkvo" for w in "Wb"]
        mlp = (("W1", (r, h, e)), ("b1", (r, h)), ("W2", (r, e, h)), ("b2", (r, e)),
               ("ln2_w", (r, e)), ("ln2_b", (r, e)))
        return (*per_layer, ("ln_w", (r, e)), ("ln_b", (r, e)), *mlp, ("fc_w", (e, e)),
                ("fc_b", (e,)))
    if family == "linear_transformer":
        return tuple((name, (d, d)) for name in ("p1", "p2", "q1", "q2"))
    raise ValueError(f"unknown family {family!r}; choose merged, merged_full, cubic_mlp, separate, "
                     "softmax_merged, softmax_separate, multihead_softmax, multihead_linear, "
                     "multioutput_softmax, multilayer_softmax, kernel_regressors, diag, pe_only, aug, "
                     "aug_layers, aug_transformer, non_aug or linear_transformer")


def n_params(family: str, dims: tuple[int, int, int]) -> int:
    """Flat parameter count P: H(1 + D²) for merged/cubic_mlp, H(1 + 2RD) for separate,
    2H(D + 1)² for merged_full."""
    return sum(math.prod(shape) for _, shape in param_shapes(family, dims))


def unflatten(family: str, flat: ArrayLike, dims: tuple[int, int, int]) -> dict[str, np.ndarray]:
    """Views of each block: flat `[..., P]` → {name: `[..., *shape]`} (leading axes kept)."""
    p = np.asarray(flat, dtype=np.float64)
    size = n_params(family, dims)
    if p.shape[-1:] != (size,):
        raise ValueError(f"{family} parameters at dims {tuple(dims)} must have last dimension "
                         f"{size}; got shape {p.shape}")
    out, offset = {}, 0
    for name, shape in param_shapes(family, dims):
        n = math.prod(shape)
        out[name] = p[..., offset:offset + n].reshape(*p.shape[:-1], *shape)
        offset += n
    return out
