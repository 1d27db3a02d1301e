"""What every model family shares: its config, the flat float64 parameter layout, initialisation.

A model's parameters map to one flat float64 vector in the order of `PARAM_ORDER` (row-major); the
population evaluator and the integrators read that vector (docs/conventions.md, "Parameters").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from fastattn import _validate as check

INIT_SCHEMES = ("paper", "code")


@dataclass(frozen=True)
class ModelConfig:
    """Plain-data description of a model; `build_model(config)` rebuilds it exactly.

    Attributes:
        name: registry name ("merged", "separate", "cubic_mlp", "softmax_merged", "softmax_separate").
        dim: token dimension D. heads: number of heads H (hidden width for the MLP).
        rank: key/query rank R of the separate models (1 for the others).
        init_scale: w_init of Zhang et al. App. C.2. init_seed: seed of the initialisation.
        init_scheme: "paper" (App. C.2: layer norms O(w_init)) or "code" (the public code's
            per-entry N(0, w_init²); see docs/conventions.md).
        full: merged model only: keep every block of W^V and W^KQ (Eq. 91) instead of (v, U).
        scale: softmax models only: scores are scale · x_mᵀ W x_q (the paper's 1/ρ; code: 1).
        dtype: "float64" or "float32".
    """

    name: str
    dim: int
    heads: int
    rank: int = 1
    init_scale: float = 1e-2
    init_seed: int = 0
    init_scheme: str = "paper"
    full: bool = False
    scale: float = 1.0
    dtype: str = "float64"

    def __post_init__(self) -> None:
        check.positive_int("dim", self.dim)
        check.positive_int("heads", self.heads)
        check.positive_int("rank", self.rank)
        check.nonnegative_float("init_scale", self.init_scale)
        check.positive_float("scale", self.scale)
        if self.init_scheme not in INIT_SCHEMES:
            raise ValueError(f"init_scheme must be one of {INIT_SCHEMES}; got {self.init_scheme!r}")
        if self.dtype not in ("float64", "float32"):
            raise ValueError(f"dtype must be 'float64' or 'float32'; got {self.dtype!r}")

    @property
    def torch_dtype(self) -> torch.dtype:
        return getattr(torch, self.dtype)


class ICLModel(nn.Module):
    """Base of the in-context regression models: config, flat parameters and seeded init.

    Subclasses set `FAMILY` (the population evaluator's family name, or None when there is no
    closed form), `PARAM_ORDER` (names of the parameters in flat order), and implement `forward`.
    """

    FAMILY: str | None = None
    PARAM_ORDER: tuple[str, ...] = ()

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config

    @property
    def dims(self) -> tuple[int, int, int]:
        """(D, H, R) as the population evaluator takes them."""
        return self.config.dim, self.config.heads, self.config.rank

    def _generator(self) -> torch.Generator:
        return torch.Generator().manual_seed(int(self.config.init_seed))

    def _normal(self, g: torch.Generator, shape: tuple[int, ...], var: float) -> nn.Parameter:
        t = torch.randn(shape, generator=g, dtype=torch.float64) * float(np.sqrt(var))
        return nn.Parameter(t.to(self.config.torch_dtype))

    def to_flat(self) -> np.ndarray:
        """The parameters as one float64 vector `[P]` in `PARAM_ORDER` (row-major)."""
        return np.concatenate([getattr(self, n).detach().cpu().double().reshape(-1).numpy()
                               for n in self.PARAM_ORDER])

    def load_flat(self, flat: np.ndarray) -> ICLModel:
        """Set the parameters from a flat vector `[P]` (the inverse of `to_flat`); returns self."""
        flat = np.asarray(flat, dtype=np.float64)
        sizes = [getattr(self, n).numel() for n in self.PARAM_ORDER]
        if flat.shape != (sum(sizes),):
            raise ValueError(f"flat parameters must have shape [{sum(sizes)}] for "
                             f"{type(self).__name__}{self.dims}; got {flat.shape}")
        if not np.all(np.isfinite(flat)):
            raise ValueError("flat parameters contain NaN or inf")
        offset = 0
        with torch.no_grad():
            for name, size in zip(self.PARAM_ORDER, sizes, strict=True):
                p = getattr(self, name)
                p.copy_(torch.from_numpy(flat[offset:offset + size]).reshape(p.shape))
                offset += size
        return self

    def flat_size(self) -> int:
        return sum(getattr(self, n).numel() for n in self.PARAM_ORDER)

    def extra_repr(self) -> str:
        c = self.config
        return f"dim={c.dim}, heads={c.heads}, rank={c.rank}, init_scale={c.init_scale}"
