"""Sweep grids: axes of option values, their cartesian product, and one resolved spec per run.

An axis is a list of values of one option of the family cards (`fastattn.configs.all_options`,
keyed by the option's name without dashes, e.g. ``dim``, ``context``, ``init_scale``). A grid point holds
only what was given; `resolve` turns it into its run's values the way `train` does
(`fastattn.configs.resolve`: the cards' defaults, then the pair's preset, then the point). Every
combination is one run. On the command line a comma separates axis values (``--dim 4,8``); an
option whose *single* value is a list (an explicit spectrum, a list of context lengths, ``--betas``,
``--w-mean``, ``--supports``) separates its elements with ``/`` (``--spectrum 0.4/0.3/0.2/0.1``,
``--context 8/16``): `fastattn.configs.options.LIST_GRAMMAR`, `train`'s too. In a TOML file a
list is an axis and a nested list or a string is one value (``context = [[8, 16], 32]``,
``spectrum = ["0.4,0.3,0.2,0.1"]``).

``heads`` and ``init_scale`` may be expressions of the token dimension ``D`` (and context length
``N``): ``heads = "D"``, ``"2*D"``, ``"D/2"``, ``init_scale = "1e-2*sqrt(D)"``; they are evaluated
per run.
"""

from __future__ import annotations

import argparse
import ast
import copy
import hashlib
import itertools
import json
import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fastattn.configs import (
    Option,
    all_options,
    model_card,
    preset_for,
    task_card,
)
from fastattn.configs import resolve as resolve_pair
from fastattn.configs.common import TRAIN
from fastattn.configs.options import (
    METHOD_FIELDS,
    MODEL,
    RENAMED,
    TASK,
    one_value,
    run_list,
    split_values,
)


def option_table() -> dict[str, Option]:
    """Option name (flag without dashes, underscores) → Option, every option once: computed when
    asked, so a family registered after this module was imported is known."""
    return {o.name: o for o in all_options()}


#: options that may be expressions of D (and N)
EXPRESSIONS = ("heads", "init_scale")
#: fields set by the seed axis (seed s sets each to s)
SEED_FIELDS = ("init_seed", "rotation_seed", "data_seed")
EVAL_SEED_OFFSET = 1_000_000
#: trainer values of a sweep where neither the point nor the pair's preset sets them, for the
#: methods that read them (docs/sweeps.md, "Sweep defaults"): looser than the cards' 1e-8/1e-12
SWEEP_DEFAULTS = {"integrator": "auto", "rtol": 1e-5, "atol": 1e-9}


# ----------------------------------------------------------------------------- expressions
_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow}
_FUNCS = {"sqrt": math.sqrt, "log": math.log, "log2": math.log2, "exp": math.exp, "int": int,
          "round": round, "max": max, "min": min}
#: an exponent (right operand of ``**``) above this in magnitude is refused before it is computed:
#: ``9**9**9`` would otherwise build a 370-million-digit integer (minutes, gigabytes)
MAX_EXPONENT = 64
#: every intermediate and final value of an expression is at most this in magnitude (a head count
#: or an init scale far beyond any run's)
MAX_MAGNITUDE = 1e12
#: expressions longer than this are refused unparsed (Python's parser recurses on nesting depth)
MAX_EXPRESSION_LENGTH = 200


def evaluate(expr: str, names: Mapping[str, float]) -> float:
    """Evaluate an arithmetic expression of `names` (e.g. "1e-2*sqrt(D)") without `eval`.

    Bounded before work: exponents above MAX_EXPONENT, values above MAX_MAGNITUDE, non-finite
    numbers and every arithmetic error (division by zero, overflow, a math domain error) raise a
    one-line ValueError naming the expression."""

    def bounded(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{value!r} is not a real number")
        if not math.isfinite(value) or abs(value) > MAX_MAGNITUDE:
            raise ValueError(f"a value ({value:.3g}) above the limit {MAX_MAGNITUDE:g}")
        return value

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
                and not isinstance(node.value, bool):
            return bounded(node.value)
        if isinstance(node, ast.Name) and node.id in names:
            return bounded(names[node.id])
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            left, right = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
                raise ValueError(f"an exponent ({right:g}) above the limit {MAX_EXPONENT}")
            return bounded(_BINOPS[type(node.op)](left, right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return -ev(node.operand) if isinstance(node.op, ast.USub) else ev(node.operand)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS \
                and not node.keywords:
            return bounded(_FUNCS[node.func.id](*[ev(a) for a in node.args]))
        raise ValueError(f"use numbers, {', '.join(sorted(names))}, + - * / // ** and "
                         f"{', '.join(sorted(_FUNCS))}")

    if len(expr) > MAX_EXPRESSION_LENGTH:
        raise ValueError(f"expression of {len(expr)} characters; at most {MAX_EXPRESSION_LENGTH}")
    try:
        tree = ast.parse(expr.replace("×", "*").strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise ValueError(f"cannot parse expression {expr!r}") from None
    try:
        return ev(tree)
    except (ArithmeticError, ValueError, TypeError, RecursionError) as exc:
        why = {ZeroDivisionError: "division by zero", OverflowError: "overflow"}.get(
            type(exc), str(exc) or type(exc).__name__)
        raise ValueError(f"expression {expr!r}: {why}") from None


def _parse_one(name: str, text: str) -> Any:
    """One value of option `name` from its text: a number or list by the option's parser, or (heads,
    init_scale) an expression of D and N kept as text, checked now at D = N = 1 so that a typo or an
    arithmetic error fails at parse time. ValueError in one line naming the option."""
    opt = option_table()[name]
    if name not in EXPRESSIONS:
        return opt.convert(text)
    try:
        value = opt.parse(text)
    except (ValueError, TypeError):
        try:
            evaluate(text, {"D": 1, "N": 1})
        except ValueError as exc:
            raise ValueError(f"{opt.flag}: {exc}") from None
        return text.strip()
    opt.check(value)
    return value


# ------------------------------------------------------------------------------ axis parsing
def parse_value(name: str, text: str) -> Any:
    """One value of option `name` from its command-line text (inner lists written with "/")."""
    return _parse_one(name, one_value(name, text))


def parse_axis(name: str, text: str) -> list[Any]:
    """An axis of option `name`: "4,8" → [4, 8] (`configs.options.LIST_GRAMMAR`); every value
    parsed by the option's parser."""
    return [parse_value(name, t) for t in split_values(option_table()[name].flag, text)]


def axis_parser(opt: Option):
    """The `parse` hook of `cli_options.add_options`: every sweep option takes an axis (a bad
    value: argparse's one line with the reason, `argument --heads: --heads: expression …`)."""
    name = opt.flag[2:].replace("-", "_")

    def p(text: str) -> list[Any]:
        try:
            return parse_axis(name, text)
        except ValueError as exc:      # argparse names the option: "argument --init-scale: …"
            raise argparse.ArgumentTypeError(str(exc).removeprefix(opt.flag).lstrip(": ")) from None

    p.__name__ = f"{name} axis"     # argparse names the type in its error messages
    return p


def _from_toml(name: str, value: Any) -> Any:
    """One value from a config file: strings go through the option's parser; numbers stay (and
    are checked: TOML has nan and inf)."""
    opt = option_table()[name]
    if isinstance(value, str):
        return _parse_one(name, value)
    if isinstance(value, list):            # a nested list: one list-valued value
        value = [_from_toml(name, v) if isinstance(v, str) else v for v in value]
    opt.check(value)
    return value


def normalize_name(key: str) -> str:
    """The option name of a grid key ("--init-scale", "init_scale"); an old name (`RENAMED`,
    "init") gives its new one with one deprecation line."""
    name = key.lstrip("-").replace("-", "_")
    if name in RENAMED:
        from fastattn._names import deprecated

        deprecated(f"sweep option {key!r}", repr(RENAMED[name]))
        name = RENAMED[name]
    options = option_table()
    if name not in options:
        raise ValueError(f"unknown sweep option {key!r}; options are {', '.join(sorted(options))}")
    return name


# --------------------------------------------------------------------------------- the grid
@dataclass
class Grid:
    """Axes (option name → list of values) and the seed count; `expand()` lists the runs.

    Attributes:
        axes: option name → values. A name absent from `axes` takes the run's pair's value (its
            preset, else its card's default), as in `train`.
        seeds: None, or the seeds: every run is repeated for each seed s, which sets init_seed,
            rotation_seed and data_seed to s and eval_seed to 1_000_000 + s. A list or a range
            of integers (Python; a range, as "LO..HI" text becomes, is never listed), or text
            in the command line's list grammar as `train --seeds` reads it
            ("0..4", "0,3,7"; `configs.options.LIST_GRAMMAR`); a Python int K is 0..K-1, and so,
            with a deprecation line, is bare text "K" (the sweep's old count, which `train`
            reads as the one seed K).
    """

    axes: dict[str, list[Any]] = field(default_factory=dict)
    seeds: int | list[int] | range | str | None = None

    def __post_init__(self) -> None:
        self.axes = {normalize_name(k): (list(v) if isinstance(v, (list, tuple)) else [v])
                     for k, v in self.axes.items()}
        for name, values in self.axes.items():
            if not values:
                raise ValueError(f"axis {name!r} has no values")
        if isinstance(self.seeds, str):
            self.seeds = _seeds_text(self.seeds)
        if isinstance(self.seeds, range):       # kept as a range: --seeds 0..10**8 is counted
            if not self.seeds or self.seeds.step != 1 or self.seeds.start < 0:   # (and refused)
                raise ValueError(f"--seeds must list distinct integers >= 0; got {self.seeds}")
        elif isinstance(self.seeds, (list, tuple)):
            self.seeds = list(self.seeds)
            if not self.seeds or any(isinstance(s, bool) or not isinstance(s, int) or s < 0
                                     for s in self.seeds) or len(set(self.seeds)) < len(self.seeds):
                raise ValueError(f"--seeds must list distinct integers >= 0; got {self.seeds}")
        if self.seeds is not None:
            if isinstance(self.seeds, int) and self.seeds < 1:
                raise ValueError(f"seeds must be >= 1; got {self.seeds}")
            clash = [f for f in SEED_FIELDS if f in self.axes]
            if clash:
                raise ValueError(f"seeds={self.seeds} sets {', '.join(SEED_FIELDS)}; do not also "
                                 f"sweep {', '.join(clash)}")

    @property
    def shape(self) -> dict[str, int]:
        out = {k: len(v) for k, v in self.axes.items() if len(v) > 1}
        if self.seeds:
            out["seed"] = len(self.seed_values())
        return out

    def seed_values(self) -> Sequence[int]:
        """The seeds each point is repeated for ([] when seeds are not swept); a range is not
        listed, so a grid is counted (`len`) before anything is built."""
        if self.seeds is None:
            return []
        return range(self.seeds) if isinstance(self.seeds, int) else self.seeds

    def __len__(self) -> int:
        return math.prod(self.shape.values())

    def points(self) -> list[dict[str, Any]]:
        """Every combination as {option name: value} (plus "seed" when seeds are swept)."""
        names = list(self.axes)
        seeds = self.seed_values() or [None]
        out = []
        for combo in itertools.product(*(self.axes[n] for n in names)):
            for s in seeds:
                point = dict(zip(names, copy.deepcopy(combo), strict=True))
                if s is not None:
                    point["seed"] = s
                out.append(point)
        return out

    def to_dict(self) -> dict[str, Any]:
        seeds = list(self.seeds) if isinstance(self.seeds, range) else self.seeds
        return {"axes": self.axes, "seeds": seeds}


def _seeds_text(text: str) -> int | list[int]:
    """The seeds of `--seeds TEXT` (`Grid.seeds`): a list as `train` reads it; a bare K >= 1, the
    old count, 0..K-1 with a deprecation line ("0", never a count, is seed 0)."""
    if text.strip().isdigit() and int(text) >= 1:
        from fastattn._names import deprecated

        k = int(text)
        deprecated(f"--seeds {k} (a count)", f"--seeds 0..{k - 1}",
                   f"; a bare number will be one seed, as in train (--seeds {k}: seed {k})")
        return k
    return run_list(text, int, None, "--seeds", lazy=True)


def grid_from_args(args: Any) -> Grid:
    """A Grid from an argparse namespace built with `add_options(parser, parse=axis_parser)`."""
    axes = {name: getattr(args, name) for name in option_table()
            if getattr(args, name, None) is not None}
    return Grid(axes, getattr(args, "seeds", None))


def load_config(path: str) -> tuple[Grid, dict[str, Any]]:
    """(grid, sweep settings) from a TOML (or, with pyyaml, YAML) file.

    Layout: option keys at the top level or under ``[grid]`` (a list is an axis), sweep settings
    (``seeds``, ``out``, ``executor``, ``workers``, ``batch``, ``converge_rel`` …) under ``[sweep]``.
    """
    try:
        return _parse_config(path)
    except (OSError, ValueError) as exc:        # tomllib's and yaml's errors are ValueErrors
        raise ValueError(f"sweep file {path}: {exc}") from None


def _parse_config(path: str) -> tuple[Grid, dict[str, Any]]:
    with open(path, "rb") as fh:
        text = fh.read()
    if str(path).endswith((".yaml", ".yml")):
        try:
            import yaml
        except ImportError:
            raise ValueError("YAML sweep files need pyyaml (pip install pyyaml); or use TOML") from None
        try:
            doc = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            raise ValueError(f"not valid YAML: {exc}") from None
    else:
        try:
            import tomllib
        except ImportError:             # Python 3.10: the same parser, as the tomli package
            import tomli as tomllib

        doc = tomllib.loads(text.decode())
    if not isinstance(doc, dict):
        raise ValueError("expected option keys and a [sweep] table")
    settings = dict(doc.pop("sweep", {}) or {})
    raw = dict(doc.pop("grid", {}) or {}) | doc
    axes: dict[str, list[Any]] = {}
    for key, value in raw.items():
        name = normalize_name(key)
        values = value if isinstance(value, list) else [value]
        axes[name] = [_from_toml(name, v) for v in values]
    seeds = settings.pop("seeds", None)     # a number is the command line's text (`Grid`)
    return Grid(axes, str(seeds) if isinstance(seeds, int) else seeds), settings


# ------------------------------------------------------------------------------ resolution
def given(point: Mapping[str, Any]) -> tuple[str, str, dict[str, dict[str, Any]]]:
    """(task kind, model kind, {"task", "model", "train": {field: value}}) of one grid point: what
    it gives of its pair's fields, seeds applied (`seed` s sets the pair's seed fields to s and
    eval_seed to EVAL_SEED_OFFSET + s); heads/init_scale expressions stay text. A point's value of an
    option its pair lacks (an axis of another family in a mixed grid) is not the pair's: dropped
    (`api.check_axes` refuses an axis that applies to none of the grid's pairs)."""
    options = option_table()
    task = point.get("task") or TASK.default
    model = point.get("model") or MODEL.default
    values = {k: v for k, v in point.items() if k not in ("task", "model", "seed") and v is not None}
    if point.get("seed") is not None:
        s = int(point["seed"])
        values |= dict.fromkeys(SEED_FIELDS, s) | {"eval_seed": EVAL_SEED_OFFSET + s}
    fields = {"task": {f.name for f in task_card(task).fields},
              "model": {f.name for f in model_card(model).fields}, "train": {f.name for f in TRAIN}}
    out: dict[str, dict[str, Any]] = {"task": {}, "model": {}, "train": {}}
    for name, value in values.items():
        opt = options[name]
        if opt.field in fields[opt.target]:
            out[opt.target][opt.field] = value
    return task, model, out


def resolve(point: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The resolved {"task", "model", "train"} spec (as `training.build.build_run` takes it) of one
    grid point: `fastattn.configs.resolve` of what the point gives (`given`), the card defaults
    then the pair's preset filling the rest, as for `train`; SWEEP_DEFAULTS where neither sets a
    trainer value its method reads; heads/init_scale expressions of D and N evaluated at the resolved
    dim and context (ValueError where one does not give a valid value, or the pair is wrong)."""
    task, model, values = given(point)
    expressions = {f: values["model"].pop(f) for f in ("heads", "init_scale")
                   if isinstance(values["model"].get(f), str)}
    method = values["train"].get("method") or \
        preset_for(task, model, values["task"]).train_for(None).get("method")
    preset = preset_for(task, model, values["task"]).train_for(method)
    for name, value in SWEEP_DEFAULTS.items():
        if name not in values["train"] and name not in preset and method in METHOD_FIELDS[name]:
            values["train"][name] = value
    r = resolve_pair(task, model, values)
    if expressions:
        if "dim" not in r.task:
            raise ValueError(f"--heads/--init-scale expressions of D need a task with a dim; --task {task} "
                             "has none: give numbers")
        ctx = r.task.get("context", 1)
        names = {"D": int(r.task["dim"]), "N": max(ctx) if isinstance(ctx, (list, tuple)) else int(ctx)}
        for f, expr in expressions.items():
            v = evaluate(expr, names)
            if f == "heads":
                if abs(v - round(v)) > 1e-9 or round(v) < 1:
                    raise ValueError(f"heads={expr!r} gives {v} at D={names['D']}; need a positive "
                                     "integer")
                v = round(v)
            values["model"][f] = float(v) if f == "init_scale" else v
        r = resolve_pair(task, model, values)
    return r.spec()


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


#: how `run_key` is computed; a sweep directory records it (sweep.json) and must match to resume
#: (format 1 hashed every resolved option, defaults included; format 2 those that differ from one
#: default per option, the (linear_regression, separate) pair's)
KEY_FORMAT = 3


def _canonical_value(opt: Option | None, value: Any) -> Any:
    """One form per value: lists for sequences, floats for a float option given an int."""
    if isinstance(value, (list, tuple)):
        return [_canonical_value(None, v) for v in value]
    if opt is not None and opt.parse is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def card_defaults(task: str, model: str) -> dict[tuple[str, str], Any]:
    """(target, field) → the default its card declares, for the fields of a (task, model) run."""
    return {(target, f.name): f.default
            for target, fields in (("task", task_card(task).fields), ("model", model_card(model).fields),
                                   ("train", TRAIN))
            for f in fields}


def run_key(spec: Mapping[str, Mapping[str, Any]], settings: Mapping[str, Any] | None = None) -> str:
    """A stable 16-hex-digit key of a resolved run: a hash of its pair's kinds, of its values that
    differ from their card's default (by option name; the preset's values are hashed as given) and
    of `settings` (horizon settings that change the run, given only where they differ from theirs).
    A field added to a card with a default therefore leaves every existing key unchanged. Fields of
    `spec` that are no option (other than private "_" ones, such as a planning error) are hashed as
    "target.field"."""
    by_field = {(o.target, o.field): o for o in all_options()}
    hashed = {new: old for old, new in RENAMED.items()}    # the names format 3 was defined with
    defaults = card_defaults(spec["task"]["kind"], spec["model"]["kind"])
    changed: dict[str, Any] = {}
    for target, fields in spec.items():
        for fld, value in fields.items():
            if fld.startswith("_"):
                continue
            opt = by_field.get((target, fld))
            name = hashed.get(opt.name, opt.name) if opt else f"{target}.{fld}"
            value = _canonical_value(opt, value)
            if fld == "kind" or (target, fld) not in defaults or \
                    value != _canonical_value(opt, defaults[(target, fld)]):
                changed[name] = value
    doc = {"options": changed, "settings": dict(settings or {})}
    return hashlib.sha256(canonical(doc).encode()).hexdigest()[:16]


def flat_columns(point: Mapping[str, Any], spec: Mapping[str, Mapping[str, Any]],
                 names: Iterable[str] | None = None) -> dict[str, Any]:
    """Config columns of the results table: one per option in `names` (default: every option;
    the sweep passes the options of the run's family, `sweep.options.family_options`), resolved
    values; list values as JSON text so every column has one type."""
    options = option_table()
    out: dict[str, Any] = {}
    for name in options if names is None else names:
        opt = options[name]
        v = spec[opt.target].get(opt.field)
        if isinstance(v, (list, tuple)):
            v = json.dumps(list(v))
        out[name] = v
    out["seed"] = point.get("seed")
    for name in EXPRESSIONS:
        raw = point.get(name)
        out[f"{name}_expr"] = raw if isinstance(raw, str) else None
    return out


def describe(points: Iterable[Mapping[str, Any]]) -> str:
    pts = list(points)
    return f"{len(pts)} runs"
