"""Model families for in-context regression, each taking its own frozen config.

`MODELS` maps each family's kind to its (model class, config class); `build_model(config)` builds
any of them and `config_from_dict` reads a run record's {"kind": ..., **fields}. Importing this
package registers every family (one module each).
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
)
from fastattn.models.softmax_attention import (
    SoftmaxMergedConfig,
    SoftmaxMergedKQ,
    SoftmaxSeparateConfig,
    SoftmaxSeparateKQ,
)

__all__ = ["MODELS", "ARAugmented", "ARAugmentedConfig", "ARAugmentedLayers",
           "ARAugmentedLayersConfig", "ARDiag", "ARDiagConfig", "ARPEOnly",
           "ARPEOnlyConfig", "BaseModelConfig", "CubicMLP", "CubicMLPConfig", "ICLModel", "LinearTransformer",
           "LinearTransformerConfig", "MergedConfig",
           "MergedFullConfig", "MergedKQ", "MergedKQFull", "ModelFamily",
           "SeparateConfig", "SeparateKQ", "SoftmaxMergedConfig", "SoftmaxMergedKQ",
           "SoftmaxSeparateConfig", "SoftmaxSeparateKQ", "beta", "build_model", "config_from_dict",
           "config_to_dict", "cubic_feature", "get_model", "register_model"]
# Musat et al. 2025 (not ICLModel families: the input is a token matrix, see models/disentangled.py)
__all__ += ["DisentangledConfig", "DisentangledTransformer"]
__all__ += ["KernelRegressors", "KernelRegressorsConfig", "MultiHeadLinear", "MultiHeadLinearConfig",
            "MultiHeadSoftmax", "MultiHeadSoftmaxConfig"]
# token transformers (not ICLModel families: tokens in, logits out; Mainali & Musat applications)
from fastattn.models.transformer import Transformer, TransformerConfig  # noqa: E402

__all__ += ["Transformer", "TransformerConfig"]
