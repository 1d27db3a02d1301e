"""What every model family shares: its config dataclass, the flat float64 parameter layout, seeded
initialisation, and the model registry.

A model takes its family's frozen config (nanoGPT's `GPT(config)`): `SeparateKQ(SeparateConfig(4, 5,
rank=1))`, or the config's fields directly, `SeparateKQ(dim=4, heads=5, rank=1, init_seed=0)`. The
config's `kind` names the family in the registry (`MODELS`), in run records
(`{"kind": ..., **asdict(config)}`, see `config_to_dict`) and in the objective registry.

A model's parameters map to one flat float64 vector laid out by its family's card
(`fastattn.configs.param_shapes(config)`: each block's name and shape, in flat order, row-major);
the models create their parameters with those shapes, and the population objectives and the
integrators read that vector (docs/conventions.md, "Parameters").
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np
import torch
from torch import nn

from fastattn import _validate as check
from fastattn import papers
from fastattn.ops._dispatch import active_transform

DTYPES = ("float64", "float32")
#: fields every model config once had that moved to the families that use them (init_scheme: to
#: Zhang et al.'s): a record written before holds them for every family, and loads with them
#: dropped where the family has none (they had no effect there)
MOVED_FIELDS = ("init_scheme",)


@dataclass(frozen=True)
class BaseModelConfig:
    """Fields every model family has. Subclasses set `kind` and add their own fields.

    Attributes:
        dim: token dimension D. heads: number of heads H (the MLP's hidden width).
        init_scale: the initialisation's scale (w_init of Zhang et al. App. C.2).
        init_seed: seed of the initialisation.
        dtype: "float64" or "float32" (sampled training; the population flow is float64).
    """

    kind: ClassVar[str] = ""

    dim: int
    heads: int
    _: KW_ONLY
    init_scale: float = 1e-2
    init_seed: int = 0
    dtype: str = "float64"

    def __post_init__(self) -> None:
        check.positive_int("dim", self.dim)
        check.positive_int("heads", self.heads)
        check.nonnegative_float("init_scale", self.init_scale)
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}; got {self.dtype!r}")

    @property
    def torch_dtype(self) -> torch.dtype:
        return getattr(torch, self.dtype)


#: the axes of each input of a model's forward methods (checked by `ICLModel.check_inputs`)
_INPUT_SHAPES = {"x": ("B", "N", "D"), "y": ("B", "N"), "x_q": ("B", "D"), "b": ("B", "D"),
                 "lengths": ("B",)}


class ICLModel(nn.Module):
    """Base of the in-context regression models: config, flat parameters and seeded init.

    Subclasses set `config_class` (their family's config; its `kind` is the model's) and implement
    `forward`, and either `init_variances` (each block drawn from N(0, variance) with the card's
    shape, in flat order) or `_init_parameters` (creating the parameters with `param_layout()`'s
    shapes). A family without a card layout (`shapes` None) sets `PARAM_ORDER` itself.
    """

    config_class: ClassVar[type[BaseModelConfig]] = BaseModelConfig

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """`Model(config)` with the family's config, or `Model(dim, heads, ..., **fields)` with the
        config's fields (see the config class for their order and meaning)."""
        super().__init__()
        self.config = self._make_config(args, kwargs)
        self._init_parameters(torch.Generator().manual_seed(int(self.config.init_seed)))

    @classmethod
    def _make_config(cls, args: tuple, kwargs: dict) -> BaseModelConfig:
        want = cls.config_class
        if len(args) == 1 and not kwargs and isinstance(args[0], BaseModelConfig):
            if type(args[0]) is not want:
                raise TypeError(f"{cls.__name__} takes a {want.__name__}; got a "
                                f"{type(args[0]).__name__} (build any model from its config with "
                                "fastattn.models.build_model(config))")
            return args[0]
        try:
            inspect.signature(want).bind(*args, **kwargs)
        except TypeError as exc:
            fields = ", ".join(f.name for f in dataclasses.fields(want))
            raise TypeError(f"{cls.__name__}: {exc}; its config {want.__name__} has the fields "
                            f"{fields}") from None
        return want(*args, **kwargs)

    @property
    def PARAM_ORDER(self) -> tuple[str, ...]:
        """The parameters' names in flat order: the blocks of the family card's layout."""
        return tuple(self.param_layout())

    def param_layout(self) -> dict[str, tuple[int, ...]]:
        """name → shape of each parameter block, in flat order: the family card's
        `shapes(config)` (fastattn.configs), the one declaration of the layout."""
        from fastattn.configs.base import param_shapes

        return dict(param_shapes(self.config))

    @classmethod
    def init_variances(cls, config: BaseModelConfig) -> dict[str, float]:
        """name → the variance of each entry of the block at initialisation (the family's initial
        statistics), for families whose blocks are drawn i.i.d. normal."""
        raise NotImplementedError(f"{cls.__name__} draws its parameters otherwise "
                                  "(_init_parameters)")

    def _init_parameters(self, g: torch.Generator) -> None:
        """Draw the parameters from `g` (seeded by `config.init_seed`): each block of the card's
        layout, in flat order, from N(0, `init_variances(config)[name]`)."""
        var = self.init_variances(self.config)
        for name, shape in self.param_layout().items():
            setattr(self, name, self._normal(g, shape, var[name]))

    @property
    def kind(self) -> str:
        """The family's registry name (the config's `kind`)."""
        return self.config.kind

    def _normal(self, g: torch.Generator, shape: tuple[int, ...], var: float) -> nn.Parameter:
        t = torch.randn(shape, generator=g, dtype=torch.float64) * float(np.sqrt(var))
        return nn.Parameter(t.to(self.config.torch_dtype))

    def check_inputs(self, **inputs: torch.Tensor | None) -> None:
        """Raise a ValueError naming the argument and both shapes unless the inputs fit: x
        `[B, N, D]`, y `[B, N]`, x_q `[B, D]`, b `[B, D]` (β), lengths `[B]`, D the model's dim,
        B and N the same across arguments. None: not given."""
        sizes = {"D": self.config.dim}
        source = {"D": "the model's dim"}
        for name, tensor in inputs.items():
            if tensor is None:
                continue
            pattern, shape = _INPUT_SHAPES[name], tuple(tensor.shape)
            ok = len(shape) == len(pattern) and all(sizes.get(s, n) == n
                                                     for s, n in zip(pattern, shape, strict=True))
            if not ok:
                want = ", ".join(f"{s}={sizes[s]}" if s in sizes else s for s in pattern)
                known = "; ".join(f"{s}={sizes[s]} from {source[s]}" for s in pattern if s in sizes)
                raise ValueError(f"{self.kind}: {name} has shape {list(shape)}; it must be "
                                 f"[{want}]" + (f" ({known})" if known else ""))
            for s, n in zip(pattern, shape, strict=True):
                sizes.setdefault(s, n)
                source.setdefault(s, f"{name}.shape")

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
                             f"{self.config}; got {flat.shape}")
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
        return ", ".join(f"{k}={v!r}" for k, v in dataclasses.asdict(self.config).items())


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5
               ) -> torch.Tensor:
    """LayerNorm over the last axis, ``F.layer_norm(x, x.shape[-1:], weight, bias, eps)``.

    Under torch.func or forward-mode AD it is written in elementary ops: torch 2.13's fused layer
    norm has wrong second derivatives under vmap and forward-over-forward (``torch.func.hessian``
    through it is silently wrong and asymmetric in the weight; pytorch/pytorch#196700,
    functorch#534). Otherwise the fused op runs (faster; its double backward is right).
    x `[..., E]`, weight and bias `[E]`.
    """
    if active_transform(x, weight, bias) is None:
        return torch.nn.functional.layer_norm(x, x.shape[-1:], weight, bias, eps)
    mean = x.mean(-1, keepdim=True)
    var = (x - mean).square().mean(-1, keepdim=True)
    return (x - mean) * torch.rsqrt(var + eps) * weight + bias


# -------------------------------------------------------------------------------- registry
class ModelFamily(NamedTuple):
    """A registered model family: its model class and its config class."""

    model: type[torch.nn.Module]
    config: type


#: kind → (model class, config class). Filled by `register_model` when the model modules of the
#: papers' manifests (`fastattn.papers`) are imported, on the first read; read by the CLI, sweeps,
#: recipes.
MODELS: papers.Registry = papers.Registry("models")


def register_model(cls: type[ICLModel]) -> type[ICLModel]:
    """Class decorator: add a model family to `MODELS` under its config's `kind`."""
    kind = cls.config_class.kind
    if not kind:
        raise TypeError(f"{cls.__name__}.config_class must set a kind")
    register_family(kind, cls, cls.config_class)
    return cls


def register_family(kind: str, model: type, config: type) -> None:
    """Add `kind` → (model class, config class) to `MODELS`; for models outside `ICLModel` (Musat's
    disentangled transformer, whose three kinds share one class, and the token transformer)."""
    if MODELS.has(kind) and MODELS.peek(kind).model is not model:
        raise ValueError(f"model kind {kind!r} is already registered by "
                         f"{MODELS.peek(kind).model.__name__}")
    MODELS.add(kind, ModelFamily(model, config))


def get_model(kind: str) -> ModelFamily:
    """The (model class, config class) registered under `kind`."""
    if kind not in MODELS:
        raise ValueError(f"model={kind!r} is unknown; choose one of {sorted(MODELS)}")
    return MODELS[kind]


def build_model(config: BaseModelConfig) -> ICLModel:
    """The model a config describes: `MODELS[config.kind].model(config)`."""
    if getattr(config, "kind", None) not in MODELS or not dataclasses.is_dataclass(config):
        raise TypeError(f"build_model takes a model config (e.g. SeparateConfig); got "
                        f"{type(config).__name__}: use config_from_dict for a record's dict")
    return get_model(config.kind).model(config)


def config_to_dict(config: BaseModelConfig) -> dict[str, Any]:
    """{"kind": ..., **asdict(config)}: what a run record stores."""
    return {"kind": config.kind, **dataclasses.asdict(config)}


def config_from_dict(record: Mapping[str, Any]) -> BaseModelConfig:
    """The config a {"kind": ..., **fields} dict describes (the inverse of `config_to_dict`)."""
    fields = dict(record)
    if "kind" not in fields:
        raise ValueError(f"a model record needs its 'kind' (one of {sorted(MODELS)}); got keys "
                         f"{sorted(fields)}")
    family = get_model(fields.pop("kind"))
    names = {f.name for f in dataclasses.fields(family.config)}
    for name in set(MOVED_FIELDS) - names:
        fields.pop(name, None)
    unknown = sorted(set(fields) - names)
    if unknown:
        raise ValueError(f"{family.config.__name__} has no field(s) {unknown}; it has "
                         f"{sorted(names)}")
    return family.config(**fields)
