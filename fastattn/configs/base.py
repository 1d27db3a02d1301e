"""What a family declares, and the registries of declarations (no torch: `fastattn --help` reads them).

A model family's card (`ModelCard`) says, in one place: the fields of its config a user may set
(each a `--key value` option with help and default), the shapes of its flat parameter vector, and
the tasks it pairs with, each with the paper's setup for that pair (`Preset`). A task family's card
(`TaskCard`) says its options and how their values become the task's fields. The model and task
classes (which need torch) stay in `fastattn.models` and `fastattn.tasks`; a card names its config
by kind, and tests/configs checks that every card's options are fields of that config.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from fastattn import papers

Shapes = tuple[tuple[str, tuple[int, ...]], ...]


# ------------------------------------------------------------------------------ value parsers
def boolean(text: str) -> bool:
    """"true"/"false" (also 1/0, yes/no, on/off)."""
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError("true or false")


#: a context range "LO..HI" lists at most this many lengths (its size is checked before it is built)
MAX_CONTEXT_RANGE = 100_000


def context_value(text: str) -> int | list[int]:
    """"31" → 31; "1..31" → [1, ..., 31] (uniform: the next-token loss); "8,16" → [8, 16]."""
    if ".." in text:
        lo, hi = (int(v) for v in text.split(".."))
        if hi - lo + 1 > MAX_CONTEXT_RANGE:
            raise ValueError(f"a range of at most {MAX_CONTEXT_RANGE} lengths")
        return list(range(lo, hi + 1))
    if "," in text:
        return [int(v) for v in text.split(",")]
    return int(text)


def floats(text: str) -> list[float]:
    """"0.4,0.3" → [0.4, 0.3]."""
    return [float(v) for v in text.split(",")]


def int_or_fresh(text: str) -> int | str:
    return text if text == "fresh" else int(text)


def metric_target(text: str) -> tuple[str, float]:
    """"test_acc:0.99" → ("test_acc", 0.99)."""
    name, _, value = text.partition(":")
    if not name or not value:
        raise ValueError("NAME:VALUE")
    return name, float(value)


#: how each parser's expected input is named in an error ("--dim must be an integer; got 'abc'")
EXPECTS: dict[Callable, str] = {int: "an integer", float: "a number", boolean: "true or false",
                                context_value: "an integer, a list 8/16 or a range 1..31 (of at most "
                                f"{MAX_CONTEXT_RANGE} lengths)",
                                floats: "numbers separated by '/' (0.9/0.999)",
                                int_or_fresh: "an integer or 'fresh'",
                metric_target: "a metric and a value, NAME:VALUE (e.g. test_acc:0.99)"}


# ------------------------------------------------------------------------------ declarations
@dataclass(frozen=True)
class Field:
    """One settable field of a family's config: the option `--name VALUE` (the field's name with
    dashes, the only name the command line has for it: docs/conventions.md "Names") parsed by
    `parse`; `default` None means the config's own default (or unset). `choices`: the allowed
    values (checked before any work)."""

    name: str
    parse: Callable[[str], Any]
    help: str
    default: Any = None
    choices: tuple[Any, ...] = ()

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class Preset:
    """The setup of one paper for a (task, model) pair: option values by option name (flag without
    dashes, underscores) for the task, the model and the trainer. `when`: task option values that
    select this preset over the pair's first one (e.g. Sander's orthogonal contexts). `methods`:
    trainer values for methods other than the preset's (e.g. C0's flow horizon)."""

    name: str
    source: str
    task: Mapping[str, Any] = field(default_factory=dict)
    model: Mapping[str, Any] = field(default_factory=dict)
    train: Mapping[str, Any] = field(default_factory=dict)
    when: Mapping[str, Any] = field(default_factory=dict)
    methods: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def train_for(self, method: str | None) -> dict[str, Any]:
        """The trainer values for `method` (None: the preset's own): its `train`, or for another
        method that method's entry of `methods` (empty: the user gives lr, steps or --t-end)."""
        if method is None or method == self.train.get("method"):
            return dict(self.train)
        return {"method": method, **self.methods.get(method, {})}


#: how `PaperTime` prints each value it multiplies by
_SYMBOLS = {"dim": "D", "dim_if_mean": "D", "lr": "η", "tasks": "P"}


@dataclass(frozen=True)
class PaperTime:
    """How a family's paper measures training time, in the record's flow time t (dθ/dt = −½∇L: a
    GD step of learning rate η advances t by 2η, docs/conventions.md "Time"): the paper's time is
    t / divisor, the divisor being `factor` times the run's values named in `per`: a task field
    ("dim" D, "tasks" P), "lr" (the trainer's η), or "dim_if_mean" (D where the task's reduction
    is "mean", a loss D times smaller than the summed one, else 1). `unit`: what the paper calls
    its time; `why`: the paper's convention that gives the divisor (the models' help prints it)."""

    factor: float
    why: str
    per: tuple[str, ...] = ()
    unit: str = "paper time"

    def _values(self, task: Mapping[str, Any], train: Mapping[str, Any]) -> dict[str, Any]:
        out = {}
        for name in self.per:
            if name == "dim_if_mean":
                if task.get("reduction") == "mean":
                    out[name] = task.get("dim")
            else:
                out[name] = (train if name == "lr" else task).get(name)
        return out

    def divisor(self, task: Mapping[str, Any], train: Mapping[str, Any]) -> float | None:
        """The divisor for a run's task and trainer values; None where they lack a value it needs
        (a flow has no η; a Wishart task drawn fresh per sequence has no P)."""
        value = self.factor
        for v in self._values(task, train).values():
            if isinstance(v, bool) or not isinstance(v, int | float) or v <= 0:
                return None
            value *= v
        return float(value)

    def describe(self, task: Mapping[str, Any] | None = None,
                 train: Mapping[str, Any] | None = None) -> str:
        """"paper time t/2", "paper time t/(2D) = t/8", "paper epochs t/(2ηP)" (no η given)."""
        task, train = task or {}, train or {}
        symbols = [_SYMBOLS[name] for name in self._values(task, train)] if task or train else \
            [_SYMBOLS[name] for name in self.per if name != "dim_if_mean"]
        value = self.divisor(task, train)
        if not symbols:
            return f"{self.unit} = t" if value == 1 else f"{self.unit} t/{value:g}"
        text = f"{self.factor:g}" + "".join(
            s + ("²" if symbols.count(s) == 2 else "") for s in dict.fromkeys(symbols))
        return f"{self.unit} t/({text})" + ("" if value is None else f" = t/{value:g}")


#: what a model family reads (`ModelCard.inputs`)
INPUTS = ("vectors", "tokens")


@dataclass(frozen=True)
class ModelCard:
    """A model family: `kind` (its `MODELS` key and its config's kind), the `paper` it comes from,
    the settable `fields` of its config, its flat parameter layout `shapes(config)`: (name, shape)
    of each block in flat order, read off the family's model config (its fields by name: dim,
    heads, rank, context, layers, ...; the models create their parameters from it and the
    objectives read their offsets from it), its `presets` by task kind (the tasks it pairs with;
    the first preset of each is the default), `fixed`: config fields set by the kind (e.g.
    Musat's params) and `from_task`: config field → task field it takes (e.g. the positional
    models' T_max is the task's context).
    `shapes` None: a token model whose flat order is its own (no exact objective reads it).
    `time`: how the family's paper measures training time (records and plots label it;
    tests/configs/test_paper_time.py checks it against each paper's printed flow).
    `task_needs`: task field → the one value the family reads (Sander's augmented families read
    encoding "augmented" tokens, the other autoregressive ones "plain"); `resolve` refuses another.
    `inputs`: what the model reads, one of `INPUTS`: "vectors" (real tokens `[B, N+1, D+1]` or
    their statistics) or "tokens" (integer ids embedded from a vocabulary: a token transformer,
    which figure recipes list as trainer kind "tokens").
    `seconds_per_step`: task kind → seconds per optimiser step of the pair's default run (its
    first preset, a method with steps), measured on the reference machine (2 cores) by the
    command in docs/benchmarks.md, "Expected time of each pair's default run"; `fastattn info`
    states the default run's expected time from it."""

    kind: str
    paper: str
    summary: str
    fields: tuple[Field, ...]
    shapes: Callable[[Any], Shapes] | None
    presets: Mapping[str, tuple[Preset, ...]]
    fixed: Mapping[str, Any] = field(default_factory=dict)
    from_task: Mapping[str, str] = field(default_factory=dict)
    time: PaperTime | None = None
    task_needs: Mapping[str, Any] = field(default_factory=dict)
    seconds_per_step: Mapping[str, float] = field(default_factory=dict)
    inputs: str = "vectors"

    def __post_init__(self) -> None:
        if self.inputs not in INPUTS:
            raise ValueError(f"model card {self.kind}: inputs={self.inputs!r}; use one of {INPUTS}")

    @property
    def tasks(self) -> tuple[str, ...]:
        return tuple(self.presets)


def set_values(values: dict[str, Any]) -> dict[str, Any]:
    """The option values that are set (not None), unchanged: the converter of a task whose class
    takes its card's fields as they are and has its own defaults for the rest."""
    return {k: v for k, v in values.items() if v is not None}


@dataclass(frozen=True)
class TaskCard:
    """A task family: `kind` (its `TASKS` key), `paper`, its settable `fields`, and `to_fields`:
    the option values (by field name, defaults filled) → the task class's keyword arguments; a
    callable, or "module:function" for a converter that needs its task's module (imported only
    when a task is built)."""

    kind: str
    paper: str
    summary: str
    fields: tuple[Field, ...]
    to_fields: Callable[[dict[str, Any]], dict[str, Any]] | str = dict

    def converter(self) -> Callable[[dict[str, Any]], dict[str, Any]]:
        if callable(self.to_fields):
            return self.to_fields
        import importlib

        module, name = self.to_fields.split(":")
        return getattr(importlib.import_module(module), name)


#: kind → card, filled by `register_model_card` / `register_task_card` when the card modules of the
#: papers' manifests (`fastattn.papers`, field `cards`) are imported: on the first read
MODEL_CARDS: papers.Registry = papers.Registry("cards")
TASK_CARDS: papers.Registry = papers.Registry("cards")


def _register(cards: papers.Registry, card: ModelCard | TaskCard, what: str) -> None:
    if cards.has(card.kind) and cards.peek(card.kind) is not card:
        raise ValueError(f"{what} kind {card.kind!r} already has a card")
    cards.add(card.kind, card)


def register_model_card(card: ModelCard) -> ModelCard:
    _register(MODEL_CARDS, card, "model")
    return card


def register_task_card(card: TaskCard) -> TaskCard:
    _register(TASK_CARDS, card, "task")
    return card


def in_paper_order(cards: Mapping[str, Any]) -> dict[str, Any]:
    """`cards` ordered by their (first) paper in the manifests' order (`fastattn.papers.names()`:
    the order the CLI lists families, so the first declaration of a shared option, e.g.
    linear_regression's --context with its "1..31" form, is the sweep's), then as registered
    (cards of no manifest's paper last)."""
    order = papers.names()

    def rank(card) -> int:
        first = card.paper.split(",")[0].strip()
        return order.index(first) if first in order else len(order)
    return dict(sorted(cards.items(), key=lambda kv: rank(kv[1])))


def unknown(flag: str, value: str, known: Iterable[str]) -> str:
    """The one-line error for a value of `flag` that is none of `known`: the closest known value
    offered first ("--model 'transfomer' is unknown; did you mean --model transformer? (one of
    …)"), then the list."""
    from fastattn._names import closest

    known = list(known)
    match = closest(str(value), known)
    fix = f"did you mean {flag} {match}? (one of" if match else "choose one of"
    return f"{flag} {value!r} is unknown; {fix} {', '.join(map(str, known))}" + (")" if match else "")


def model_card(kind: str) -> ModelCard:
    if kind not in MODEL_CARDS:
        raise ValueError(unknown("--model", kind, MODEL_CARDS))
    return MODEL_CARDS[kind]


def task_card(kind: str) -> TaskCard:
    if kind not in TASK_CARDS:
        raise ValueError(unknown("--task", kind, TASK_CARDS))
    return TASK_CARDS[kind]


# ------------------------------------------------------------------------------ flat layout
class Block(NamedTuple):
    """One parameter block of a flat vector: its `name`, `shape` and place `start:stop`."""

    name: str
    shape: tuple[int, ...]
    start: int
    stop: int


def param_shapes(config: Any) -> Shapes:
    """(name, shape) of each parameter block, in flat order, of the model that `config` describes
    (a model config, or any object with its family's `kind` and the fields its card reads)."""
    if isinstance(config, str):
        raise TypeError(f"param_shapes takes the model config now, not (kind, dims): "
                        f"param_shapes(model.config) (for {config!r})")
    kind = getattr(config, "kind", None)
    shaped = [k for k, c in MODEL_CARDS.items() if c.shapes is not None]
    if kind not in shaped:
        raise ValueError(f"model kind {kind!r} has no flat layout; choose one of {', '.join(shaped)}")
    return tuple((name, tuple(int(n) for n in shape))
                 for name, shape in MODEL_CARDS[kind].shapes(config))


def blocks(config: Any) -> tuple[Block, ...]:
    """The blocks of `param_shapes(config)` with their offsets in the flat vector."""
    out, offset = [], 0
    for name, shape in param_shapes(config):
        out.append(Block(name, shape, offset, offset + math.prod(shape)))
        offset += math.prod(shape)
    return tuple(out)


def n_params(config: Any) -> int:
    """Flat parameter count P of the model `config` describes (H(1 + D²) for merged/cubic_mlp,
    H(1 + 2RD) for separate, 2H(D + 1)² for merged_full, ...)."""
    return sum(math.prod(shape) for _, shape in param_shapes(config))


def unflatten(config: Any, flat: Any) -> dict[str, Any]:
    """Views of each block: flat `[..., P]` → {name: `[..., *shape]`} (leading axes kept); a numpy
    array or anything that converts to one (float64), or a torch tensor (kept a tensor)."""
    import numpy as np

    p = flat if hasattr(flat, "requires_grad") else np.asarray(flat, dtype=np.float64)
    size = n_params(config)
    if tuple(p.shape[-1:]) != (size,):
        raise ValueError(f"{config.kind} parameters of {config} must have last dimension {size}; "
                         f"got shape {tuple(p.shape)}")
    lead = tuple(p.shape[:-1])
    return {b.name: p[..., b.start:b.stop].reshape(*lead, *b.shape) for b in blocks(config)}


@dataclass(frozen=True)
class PerDim:
    """A preset value that scales with the task's dim: `factor / D` (He et al.'s Σ_w = I/d)."""

    factor: float

    def __call__(self, task_values: Mapping[str, Any]) -> float:
        return self.factor / int(task_values["dim"])

    def __str__(self) -> str:
        return "1/D" if self.factor == 1 else f"{self.factor:g}/D"
