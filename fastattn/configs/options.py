"""Command-line options generated from the cards, and a pair's resolved values (no torch).

Every settable field of a task, model or trainer config is an option `--key VALUE` (nanoGPT's
configurator). `options_for(task, model)` lists a pair's options with the pair's defaults (the
paper's preset); `all_options()` lists every option once (the sweep's axes); `resolve` turns the
given option values into the task, model and trainer values of a run, refusing a wrong pair or an
option of another family in one line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from fastattn.configs.base import (
    EXPECTS,
    MODEL_CARDS,
    TASK_CARDS,
    Field,
    Preset,
    in_paper_order,
    model_card,
    task_card,
)
from fastattn.configs.common import TRAIN


@dataclass(frozen=True)
class Option:
    """One command-line option: `flag` fills `field` of the `target` config ("task", "model" or
    "train"); `families`: the task kinds (target "task") or model kinds (target "model") that have
    it, () for all; `default`: the value when not given (None: the config's own or unset)."""

    flag: str
    target: str
    field: str
    parse: Callable[[str], Any]
    help: str
    default: Any = None
    families: tuple[str, ...] = ()
    choices: tuple[Any, ...] = ()

    @property
    def name(self) -> str:
        """The option's name: the flag without dashes, e.g. "init_seed" (argparse's dest)."""
        return self.flag[2:].replace("-", "_")

    def convert(self, text: str) -> Any:
        """The value of `text`, or a ValueError in the CLI's words: "--dim must be an integer;
        got 'abc'"."""
        try:
            value = self.parse(text)
        except (TypeError, ValueError):
            expects = EXPECTS.get(self.parse, "a valid value")
            # the sweep's expressions (--heads D) read naturally here too
            hint = " (expressions of D and N are for fastattn sweep; give the number)" if \
                self.parse in (int, float) and re.search(r"\b[DN]\b", text) else ""
            raise ValueError(f"{self.flag} must be {expects}; got {text!r}{hint}") from None
        self.check(value)
        return value

    def check(self, value: Any) -> None:
        """A ValueError in the CLI's words unless `value` is allowed: one of `choices` (where the
        option has them), no NaN or infinity anywhere in it (no option means either), and a seed
        (a field named *seed) an integer >= 0."""
        if self.choices and value not in self.choices:
            from fastattn._names import closest

            match = closest(str(value), map(str, self.choices))
            fix = f"; did you mean {self.flag} {match}?" if match else ""
            raise ValueError(f"{self.flag} must be one of {' | '.join(map(str, self.choices))}; "
                             f"got {value!r}{fix}")
        if not _finite(value):
            raise ValueError(f"{self.flag} must be finite (no nan or inf); got {value!r}")
        if self.field.endswith("seed") and isinstance(value, int) and value < 0:
            raise ValueError(f"{self.flag} must be an integer >= 0 (a seed); got {value}")


def _finite(value: Any) -> bool:
    """False if `value` is, or holds (lists, tuples, mappings), a non-finite float."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return all(_finite(v) for v in value)
    if isinstance(value, Mapping):
        return all(_finite(v) for v in value.values())
    return True


#: the options whose command-line name was once not their field's (--time for t_end): old option
#: name → field name, the one place the old names are declared. The old flags still parse with one
#: deprecation line naming the new (`cli_options.add_renamed`), as do a sweep grid's old keys
#: (`sweep.grid.normalize_name`); stored result rows and results tables load with their old
#: columns renamed (`sweep.schema.upgrade_columns`); run keys hash the old names (`sweep.grid.
#: run_key`: a stored sweep's keys, and so its resume, stay the same)
RENAMED = {"time": "t_end", "init": "init_scale", "records": "n_records", "snapshots": "n_snapshots"}

#: options whose one value is itself a list (a spectrum's eigenvalues, context lengths, β1/β2, a
#: task-prior mean, each task's support): `LIST_GRAMMAR`'s inner lists
INNER_LIST = ("context", "spectrum", "w_mean", "betas", "supports")
#: the one list grammar of `train` and `sweep` (both commands' help print it)
LIST_GRAMMAR = (
    "Lists: a comma separates values (--seeds 0,3,7, train --lr 1e-3,1e-2, sweep --dim 4,8: one run "
    "each); LO..HI is every integer from LO to HI (--context 1..31, --seeds 0..4); a value that is "
    "itself a list (--spectrum, --context lengths, --betas, --w-mean, --supports) separates its "
    "elements with '/' (--spectrum 0.4/0.3/0.2/0.1, --context 8/16), which train also takes as ',' "
    "(it sweeps none of these). --seeds is the same list in train and sweep; sweep's old --seeds K "
    "(a count: 0..K-1) still works with a deprecation note, and will mean the one seed K.")


def split_values(flag: str, text: str) -> list[str]:
    """The values of a comma-separated list, "4,8" → ["4", "8"] (`LIST_GRAMMAR`); an empty value
    ("4,,8", "4,") is a one-line ValueError, not dropped."""
    parts = [t.strip() for t in text.split(",")]
    if not all(parts):
        raise ValueError(f"{flag} {text!r} has an empty value; separate values by single commas, "
                         f"e.g. {flag} 4,8")
    return parts


def run_list(text: str, parse: type = int, limit: int | None = None, what: str = "--seeds",
             lazy: bool = False) -> list | range:
    """"0..4" → [0, 1, 2, 3, 4]; "0,2,5" → [0, 2, 5] (the --seeds / --lr lists,
    `LIST_GRAMMAR`; "0-4", the old range form, still works with a deprecation
    note). A list longer than `limit` is refused before it is built (a range's size is computed,
    not listed): give --yes to go above it. `lazy`: a range LO..HI is returned as a `range`,
    never listed (a caller that counts before it plans)."""
    from fastattn._names import deprecated

    text = text.strip()
    if parse is int and re.fullmatch(r"\d+-\d+", text):
        deprecated(f"{what} {text}", f"{what} {text.replace('-', '..')} (LO..HI, as --context)")
        text = text.replace("-", "..")
    span = re.fullmatch(r"(\d+)\.\.(\d+)", text) if parse is int else None
    size = int(span[2]) - int(span[1]) + 1 if span else text.count(",") + 1
    if limit is not None and size > limit:
        raise ValueError(f"{what} {text} lists {size} runs, above the limit of {limit} a command "
                         "starts unasked; give --yes to start them, or a shorter list")
    if span:
        if size < 1:
            raise ValueError(f"{what} {text} is an empty range: LO..HI needs LO <= HI (e.g. "
                             f"{span[2]}..{span[1]})")
        seeds = range(int(span[1]), int(span[2]) + 1)
        return seeds if lazy else list(seeds)
    try:
        values = [parse(v) for v in split_values(what, text)]
    except ValueError as exc:
        if "empty value" in str(exc):
            raise
        raise ValueError(f"{what} must be a list of {'integers' if parse is int else 'numbers'} "
                         f"(e.g. 0..4 or 0,3,7); got {text!r}") from None
    if parse is int and any(v < 0 for v in values):
        raise ValueError(f"{what} takes seeds >= 0; got {text!r}")
    if parse is float and not all(math.isfinite(v) and v > 0 for v in values):
        raise ValueError(f"{what} takes learning rates > 0 (finite); got {text!r}")
    return values


def one_value(name: str, text: str) -> str:
    """The text of one value of option `name` as its parser reads it: an inner list's "/" → ","."""
    return text.replace("/", ",") if name in INNER_LIST else text


TASK = Option("--task", "task", "kind", str, "task family (fastattn info lists them with their models)",
              "linear_regression")
MODEL = Option("--model", "model", "kind", str, "model family (paired with --task)", "separate")


def _option(target: str, f: Field, families: tuple[str, ...] = (), default: Any = None) -> Option:
    return Option(f.option, target, f.name, f.parse, f.help, f.default if default is None else default,
                  families, f.choices)


#: (the registered cards, their option table) of the last `all_options` call: the table is
#: recomputed only when a card was registered or replaced since (holding the cards keeps their
#: identities unique)
_TABLE: list[Any] = [None, ()]


def all_options() -> tuple[Option, ...]:
    """Every option once (first declaration's help and default), with the families that have it
    and the values any of them allows; read from the registered cards when asked, so a family
    registered late is known."""
    cards = [*TASK_CARDS.items(), *MODEL_CARDS.items()]
    known = _TABLE[0]
    if known is None or len(known) != len(cards) or \
            any(k != kind or c is not card for (k, c), (kind, card) in zip(known, cards, strict=True)):
        _TABLE[:] = [cards, _option_table()]
    return _TABLE[1]


def _option_table() -> tuple[Option, ...]:
    seen: dict[str, Option] = {"task": TASK, "model": MODEL}
    for target, cards in (("task", TASK_CARDS), ("model", MODEL_CARDS)):
        for kind, card in in_paper_order(cards).items():
            for f in card.fields:
                opt = seen.get(f.option[2:].replace("-", "_"))
                if opt is None:
                    seen[f.option[2:].replace("-", "_")] = _option(target, f, (kind,))
                elif opt.target != target or opt.field != f.name:
                    raise ValueError(f"{f.option} is both {opt.target}.{opt.field} and "
                                     f"{target}.{f.name} ({kind}); give one a flag of its own")
                else:          # a value any family allows (`resolve` checks the pair's own)
                    choices = tuple(dict.fromkeys((*opt.choices, *f.choices))) \
                        if opt.choices and f.choices else ()
                    seen[opt.name] = replace(opt, families=(*opt.families, kind), choices=choices)
    for f in TRAIN:
        seen[f.option[2:].replace("-", "_")] = _option("train", f)
    n_tasks, n_models = len(TASK_CARDS), len(MODEL_CARDS)
    return tuple(replace(o, families=()) if len(o.families) == (n_tasks if o.target == "task" else
                                                                  n_models) else o
                 for o in seen.values())


def pairs() -> dict[str, tuple[str, ...]]:
    """Task kind → the model kinds that pair with it (cards' order)."""
    out: dict[str, list[str]] = {kind: [] for kind in in_paper_order(TASK_CARDS)}
    for kind, card in in_paper_order(MODEL_CARDS).items():
        for task in card.tasks:
            out.setdefault(task, []).append(kind)
    return {k: tuple(v) for k, v in out.items()}


def check_pair(task: str, model: str) -> None:
    """A ValueError in one line, naming the models that pair with `task`, unless (task, model) pairs."""
    task_card(task)
    card = model_card(model)
    if task not in card.tasks:
        raise ValueError(f"--model {model} does not pair with --task {task}; models for {task}: "
                         f"{', '.join(pairs()[task]) or 'none'} (--model {model} pairs with "
                         f"--task {', '.join(card.tasks)}; fastattn info lists every pair)")


def preset_for(task: str, model: str, given_task: Mapping[str, Any] | None = None) -> Preset:
    """The pair's preset: the first whose `when` matches the task values (given, else the first
    preset's), else the first."""
    check_pair(task, model)
    presets = model_card(model).presets[task]
    base = {f.name: f.default for f in task_card(task).fields} | dict(presets[0].task)
    values = base | dict(given_task or {})
    for p in presets[1:]:
        if all(values.get(k) == v for k, v in p.when.items()):
            return p
    return presets[0]


@dataclass(frozen=True)
class Resolved:
    """A run's option values by config field: `task`, `model` (kinds under "kind") and `train`, and
    the `preset` the defaults came from."""

    task: dict[str, Any]
    model: dict[str, Any]
    train: dict[str, Any]
    preset: Preset

    def spec(self) -> dict[str, dict[str, Any]]:
        return {"task": self.task, "model": self.model, "train": self.train}


def _evaluate(values: dict[str, Any], task_values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v(task_values) if callable(v) else v for k, v in values.items()}


def resolve(task: str, model: str, given: Mapping[str, Mapping[str, Any]] | None = None) -> Resolved:
    """The values of a (task, model) run: each card's defaults, then the pair's preset, then `given`
    ({"task": {field: value}, "model": {...}, "train": {...}}). A field `given` that the pair does
    not have is a ValueError naming its option and the families that have it."""
    given = {t: dict((given or {}).get(t, {})) for t in ("task", "model", "train")}
    preset = preset_for(task, model, given["task"])
    tcard, mcard = task_card(task), model_card(model)
    known = {"task": tcard.fields, "model": mcard.fields, "train": TRAIN}
    for target, values in given.items():
        names = {f.name for f in known[target]}
        for name in values:
            if name not in names:
                raise ValueError(_not_a_field(target, name, task, model))
    task_values = {f.name: f.default for f in tcard.fields} | dict(preset.task) | given["task"]
    task_values = _evaluate(task_values, task_values)
    for name, needed in mcard.task_needs.items():
        if task_values.get(name) != needed:
            opt = {(o.target, o.field): o for o in all_options()}.get(("task", name))
            flag = opt.flag if opt else f"task.{name}"
            raise ValueError(f"--model {model} reads {flag} {needed} tokens; the task has {flag} "
                             f"{task_values.get(name)}: give {flag} {needed} (or leave it to the "
                             f"pair's preset)")
    model_values = {f.name: f.default for f in mcard.fields} | dict(preset.model) | given["model"]
    train_values = {f.name: f.default for f in TRAIN} | preset.train_for(given["train"].get("method"))
    train_values |= given["train"]
    train_values = _evaluate(train_values, task_values)
    for values, fields in ((task_values, tcard.fields), (model_values, mcard.fields),
                           (train_values, TRAIN)):
        for f in fields:
            if values.get(f.name) is not None:
                _option("", f).check(values[f.name])
    drop = lambda d: {k: v for k, v in d.items() if v is not None}     # noqa: E731
    return Resolved({"kind": task, **drop(task_values)}, {"kind": model, **drop(model_values)},
                    drop(train_values), preset)


def _not_a_field(target: str, name: str, task: str, model: str) -> str:
    """The one-line error for a `given` field `name` of `target` that the pair lacks: the option's
    flag (else target.name), the family it was given for (the trainer's fields are the model's run
    options: --model), and the fix: the families that have it, the config that has a field of that
    name, or the field a flag of that name (or its old name, `RENAMED`) sets."""
    options = all_options()
    opt = {(o.target, o.field): o for o in options}.get((target, name))
    flag = opt.flag if opt else f"{target}.{name}"
    which = f"--task {task}" if target == "task" else f"--model {model}"
    if opt and opt.families:
        return f"{flag} does not apply to {which} (it applies to --{target} {', '.join(opt.families)})"
    by_flag = [o for o in options if o.name == RENAMED.get(name, name)
               and (o.target, o.field) != (target, name)]
    elsewhere = [o for o in options if o.field == name and o.target != target]
    if elsewhere:
        fix = f"; {name} is a {elsewhere[0].target} field: give it as {elsewhere[0].target}.{name}"
    elif by_flag:
        fix = f"; the option {by_flag[0].flag} sets {by_flag[0].target}.{by_flag[0].field}"
    else:
        fix = f"; fastattn train --task {task} --model {model} --help lists the fields"
    return f"{flag} does not apply to {which}{fix}"


def options_for(task: str, model: str) -> tuple[Option, ...]:
    """The options of a (task, model) pair, with the pair's defaults (its paper's preset)."""
    r = resolve(task, model)
    out = [replace(TASK, default=task), replace(MODEL, default=model)]
    for target, fields, values in (("task", task_card(task).fields, r.task),
                                   ("model", model_card(model).fields, r.model),
                                   ("train", TRAIN, r.train)):
        out += [_option(target, f, default=values.get(f.name)) for f in fields]
    return tuple(out)


#: trainer fields that only some methods read (the rest, e.g. --n-records, --threads, --target-loss,
#: apply to every method): giving one to another method is an error, not silently ignored
METHOD_FIELDS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("t_end", "integrator", "rtol", "atol", "dt"), ("flow",)),
    **dict.fromkeys(("lr", "steps"), ("gd", "sgd", "adam", "task_sgd")),
    "grad_tol": ("flow", "gd"),
    "batch_size": ("sgd", "adam", "task_sgd"),
    **dict.fromkeys(("weight_decay", "betas"), ("adam",)),
    **dict.fromkeys(("warmup", "dataset_size", "whiten", "sampler", "loss", "test_size",
                     "eval_seed", "target_metric", "patience"), ("sgd", "adam")),
}


def check_method_fields(method: str, fields: Iterable[str], why: str = "",
                        python: bool = False) -> None:
    """A ValueError in one line if a trainer field in `fields` (given by the user) is one that
    `method` does not read (`METHOD_FIELDS`); `why` says where the method came from. `python`:
    in `train()`'s words (lr, method='flow') rather than the command line's (--lr, --method flow)."""
    flags = {f.name: f.option for f in TRAIN}
    unused = [f for f in fields if method not in METHOD_FIELDS.get(f, (method,))]
    if unused:
        users = sorted({m for f in unused for m in METHOD_FIELDS[f]})
        def said(m: str) -> str:
            return f"method={m!r}" if python else f"--method {m}"

        names = unused if python else [flags[f] for f in unused]
        alternatives = " | ".join(map(repr, users)) if python else " | ".join(users)
        raise ValueError(f"{', '.join(names)} {'does' if len(names) == 1 else 'do'} not apply to "
                         f"{said(method)}{why}; drop {'it' if len(names) == 1 else 'them'}, or "
                         f"give {'method=' if python else '--method '}{alternatives}")
