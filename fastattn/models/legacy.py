"""The old all-families `ModelConfig`, kept only until the experiments and sweeps build models from
the per-family configs (issue 12); `to_family()` gives the family config it stands for."""

from __future__ import annotations

from dataclasses import dataclass

from fastattn.models.base import BaseModelConfig, get_model


@dataclass(frozen=True)
class ModelConfig:
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

    def to_family(self) -> BaseModelConfig:
        kind = "merged_full" if self.name == "merged" and self.full else self.name
        config = get_model(kind).config
        kw = {"init_scale": self.init_scale, "init_seed": self.init_seed,
              "init_scheme": self.init_scheme, "dtype": self.dtype}
        if kind in ("separate", "softmax_separate"):
            kw["rank"] = self.rank
        if kind.startswith("softmax"):
            kw["scale"] = self.scale
        return config(self.dim, self.heads, **kw)
