"""Model families for in-context regression, each taking its own frozen config.

`MODELS` maps each family's kind to its (model class, config class); `build_model(config)` builds
any of them and `config_from_dict` reads a run record's {"kind": ..., **fields}. The families are
registered by the modules the papers' manifests list (`fastattn.papers`), imported on the first
read of `MODELS`; this package re-exports the built-in families' classes.
"""

from fastattn.models.autoregressive import (
    ARAugmented,
    ARAugmentedConfig,
    ARAugmentedLayers,
    ARAugmentedLayersConfig,
    ARDiag,
    ARDiagConfig,
    ARPEOnly,
    ARPEOnlyConfig,
    ARTransformer,
    ARTransformerConfig,
    Eq6,
    Eq6Config,
    NonAugmented,
    NonAugmentedConfig,
)
from fastattn.models.base import (
    MODELS,
    BaseModelConfig,
    ICLModel,
    ModelFamily,
    build_model,
    config_from_dict,
    config_to_dict,
    get_model,
    register_model,
)
from fastattn.models.cubic_mlp import CubicMLP, CubicMLPConfig, cubic_feature
from fastattn.models.disentangled import DisentangledConfig, DisentangledTransformer
from fastattn.models.linear_attention import (
    MergedConfig,
    MergedFullConfig,
    MergedKQ,
    MergedKQFull,
    SeparateConfig,
    SeparateKQ,
    beta,
)
from fastattn.models.linear_transformer import LinearTransformer, LinearTransformerConfig
from fastattn.models.multihead_softmax import (
    KernelRegressors,
    KernelRegressorsConfig,
    MultiHeadLinear,
    MultiHeadLinearConfig,
    MultiHeadSoftmax,
    MultiHeadSoftmaxConfig,
    MultiLayerSoftmax,
    MultiLayerSoftmaxConfig,
    MultiOutputSoftmax,
    MultiOutputSoftmaxConfig,
)
from fastattn.models.softmax_attention import (
    SoftmaxMergedConfig,
    SoftmaxMergedKQ,
    SoftmaxSeparateConfig,
    SoftmaxSeparateKQ,
)

# token transformers (tokens in, logits out: the Mainali and Musat applications) are registered
# families outside ICLModel; Musat et al.'s standard transformer is a configuration of the generic one
from fastattn.models.standard_transformer import StandardConfig, StandardTransformer
from fastattn.models.transformer import Transformer, TransformerConfig

__all__ = [  # noqa: RUF022 (grouped by paper, sorted within a group)
    "MODELS",
    # linear regression (Zhang et al. 2025)
    "CubicMLP", "CubicMLPConfig", "MergedConfig", "MergedFullConfig", "MergedKQ", "MergedKQFull",
    "SeparateConfig", "SeparateKQ", "SoftmaxMergedConfig", "SoftmaxMergedKQ", "SoftmaxSeparateConfig",
    "SoftmaxSeparateKQ", "beta", "cubic_feature",
    # multi-head softmax regression (He et al. 2025)
    "KernelRegressors", "KernelRegressorsConfig", "MultiHeadLinear", "MultiHeadLinearConfig",
    "MultiHeadSoftmax", "MultiHeadSoftmaxConfig", "MultiLayerSoftmax", "MultiLayerSoftmaxConfig",
    "MultiOutputSoftmax", "MultiOutputSoftmaxConfig",
    # autoregressive sequences (Sander et al. 2024)
    "ARAugmented", "ARAugmentedConfig", "ARAugmentedLayers", "ARAugmentedLayersConfig", "ARDiag",
    "ARDiagConfig", "ARPEOnly", "ARPEOnlyConfig", "ARTransformer", "ARTransformerConfig",
    "Eq6", "Eq6Config", "NonAugmented", "NonAugmentedConfig",
    # Wishart task sets (Mainali & Teixeira 2025)
    "LinearTransformer", "LinearTransformerConfig",
    # induction heads (Musat et al. 2025; the disentangled model takes a token matrix)
    "DisentangledConfig", "DisentangledTransformer", "StandardConfig", "StandardTransformer",
    # token transformers
    "Transformer", "TransformerConfig",
    # the registry
    "BaseModelConfig", "ICLModel", "ModelFamily", "build_model", "config_from_dict", "config_to_dict",
    "get_model", "register_model",
]
