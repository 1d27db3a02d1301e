"""Model families for in-context regression. `MODELS` maps registry names to classes."""

from fastattn.models.base import ICLModel, ModelConfig
from fastattn.models.cubic_mlp import CubicMLP, cubic_feature
from fastattn.models.linear_attention import MergedKQ, SeparateKQ, beta
from fastattn.models.softmax_attention import SoftmaxMergedKQ, SoftmaxSeparateKQ

MODELS: dict[str, type[ICLModel]] = {
    "merged": MergedKQ,
    "separate": SeparateKQ,
    "cubic_mlp": CubicMLP,
    "softmax_merged": SoftmaxMergedKQ,
    "softmax_separate": SoftmaxSeparateKQ,
}


def build_model(config: ModelConfig) -> ICLModel:
    """The model a `ModelConfig` describes (what a run record stores)."""
    if config.name not in MODELS:
        raise ValueError(f"unknown model {config.name!r}; choose one of {sorted(MODELS)}")
    kw = {"init_scale": config.init_scale, "init_seed": config.init_seed,
          "init_scheme": config.init_scheme, "dtype": config.dtype}
    if config.name in ("separate", "softmax_separate"):
        kw["rank"] = config.rank
    if config.name.startswith("softmax"):
        kw["scale"] = config.scale
    if config.name == "merged":
        kw["full"] = config.full
    return MODELS[config.name](config.dim, config.heads, **kw)


__all__ = ["MODELS", "CubicMLP", "ICLModel", "MergedKQ", "ModelConfig", "SeparateKQ",
           "SoftmaxMergedKQ", "SoftmaxSeparateKQ", "beta", "build_model", "cubic_feature"]
