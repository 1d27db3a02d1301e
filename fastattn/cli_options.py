"""The command line's task, model and trainer options, generated from the family cards
(`fastattn.configs`, read when a parser is built, so a family registered late is known): `train`
parses them per (task, model) pair, `sweep` takes each as an axis.

`fastattn train --help` lists each task family and each model family with its options, the tasks
it pairs with and the paper preset of each pair (the defaults). Values arrive as text and are
converted once the pair is known, so an error names the option: "--dim must be an integer; got
'abc'".
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable, Mapping
from typing import Any

from fastattn._validate import INTERRUPTED
from fastattn.configs import (
    MODEL_CARDS,
    TASK_CARDS,
    Option,
    Resolved,
    all_options,
    options_for,
    pairs,
    resolve,
)
from fastattn.configs.base import in_paper_order
from fastattn.training.build import build_run, build_task


class CommandError(Exception):
    """Bad input to a subcommand: printed as one line `fastattn <cmd>: error: …`, exit status 2."""


def _heading(opt: Option) -> str:
    if opt.target == "train":
        return "trainer options"
    families = ", ".join(opt.families) if opt.families else "every family"
    return f"{opt.target} options ({families})"


def add_options(parser: argparse.ArgumentParser, parse: Callable[[Option], Callable] | None = None
                ) -> None:
    """Add every option to `parser`, one argument group per (target, families); `parse(option)`
    gives each option's parser (the sweep's axes). An option not given takes the value of each
    run's pair (its preset, else its card's default), as in `train`."""
    groups: dict[str, Any] = {}
    for opt in all_options():            # now, not at import: families registered since count
        heading = _heading(opt)
        if heading not in groups:
            groups[heading] = parser.add_argument_group(heading)
        default = f" (default: {opt.default})" if opt.field == "kind" else \
            " (default: the pair's preset)" if opt.target != "train" else ""
        groups[heading].add_argument(opt.flag, dest=opt.name,
                                     type=parse(opt) if parse else opt.parse,
                                     default=None, help=opt.help + default)


# ------------------------------------------------------------------------------ train
def _show(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(_show(v) for v in value) if not any(isinstance(v, (list, tuple))
                                                            for v in value) else \
            ";".join(_show(v) for v in value)
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)


def _wrap(text: str, indent: str = "  ") -> str:
    return textwrap.fill(text, 100, initial_indent=indent, subsequent_indent=indent + "    ")


def _lines(options: list[Option]) -> str:
    return "\n".join(_wrap(f"{o.flag} {o.name.upper()}: {o.help}"
                           + (f" (default: {_show(o.default)})" if o.default is not None else ""))
                     for o in options)


def _preset_lines(task: str, model: str) -> str:
    """One line per preset of the pair: the task values that select it, its source, its values."""
    from fastattn.configs import model_card

    flags = {(o.target, o.field): o.flag for o in options_for(task, model)}
    out = []
    for p in model_card(model).presets[task]:
        values = [f"{flags[(t, k)]} {_show(v)}"
                  for t, d in (("task", p.task), ("model", p.model), ("train", p.train))
                  for k, v in d.items() if (t, k) in flags]
        when = "".join(f" {flags[('task', k)]} {_show(v)}" for k, v in p.when.items())
        out.append(_wrap(f"with --task {task}{when}: {p.source} [{' '.join(values)}]"))
    return "\n".join(out)


def add_train_options(parser: argparse.ArgumentParser) -> None:
    """The `train` options: --task, --model and the trainer's as arguments; each task and model
    family's options in a section of their own (the values are read as text and converted once the
    pair is known: `given`)."""
    seen = set()
    choose = parser.add_argument_group("the pair", _wrap(
        "--task T --model M alone runs the canonical setup of the paper the pair comes from (its "
        "preset, listed under each model); any option below overrides one value"))
    trainer = parser.add_argument_group("trainer options (every pair)")
    for opt in all_options():
        if opt.name in seen:
            continue
        seen.add(opt.name)
        group = choose if opt.field == "kind" else trainer if opt.target == "train" else None
        default = "the pair's preset" if opt.field == "method" else \
            None if opt.default is None else _show(opt.default)
        helptext = argparse.SUPPRESS if group is None else opt.help + (
            f" (default: {default})" if default is not None else "")
        (group or parser).add_argument(opt.flag, dest=opt.name, default=None, metavar=opt.name.upper(),
                                       help=helptext)
    for kind, card in in_paper_order(TASK_CARDS).items():
        opts = [o for o in options_for(kind, pairs()[kind][0]) if o.target == "task"
                and o.field != "kind"]
        parser.add_argument_group(
            f"task {kind} ({card.paper}): {card.summary}",
            _wrap(f"models: {', '.join(pairs()[kind])} (defaults below: with --model "
                  f"{pairs()[kind][0]}; each model's preset lines give its own)") + "\n"
            + _lines(opts))
    for kind, card in in_paper_order(MODEL_CARDS).items():
        opts = [o for o in options_for(card.tasks[0], kind) if o.target == "model"
                and o.field != "kind"]
        presets = "\n".join(_preset_lines(t, kind) for t in card.tasks)
        time = _wrap(f"time: {card.time.describe()} ({card.time.why})") + "\n" if card.time else ""
        parser.add_argument_group(f"model {kind} ({card.paper}): {card.summary}",
                                  (_lines(opts) + "\n" if opts else "") + time + presets)


def given(args: argparse.Namespace) -> tuple[str, str, dict[str, dict[str, Any]]]:
    """(task kind, model kind, {"task": {field: value}, "model": ..., "train": ...}) of the options
    given on the command line, converted (one-line errors naming the option)."""
    task = getattr(args, "task", None) or "linear_regression"
    model = getattr(args, "model", None) or "separate"
    out: dict[str, dict[str, Any]] = {"task": {}, "model": {}, "train": {}}
    mine = {o.name: o for o in options_for(task, model)} if _pairs_known(task, model) else {}
    for opt in all_options():
        opt = mine.get(opt.name, opt)           # the pair's own parser (e.g. --context 1..31)
        text = getattr(args, opt.name, None)
        if text is None or opt.field == "kind":
            continue
        out[opt.target][opt.field] = opt.convert(text)
    return task, model, out


def _pairs_known(task: str, model: str) -> bool:
    """Whether (task, model) pairs; a wrong pair is reported by `resolve` (one line, after the
    options' values are read)."""
    return task in TASK_CARDS and model in MODEL_CARDS and task in MODEL_CARDS[model].tasks


def in_cli_words(message: str, options: Mapping[str, Option]) -> str:
    """A config's error in the CLI's words: a message that starts with a field's name ("t_end must
    be …", "dim=0 …") starts with its option's flag instead."""
    head = message.split(" ", 1)[0].split("=", 1)[0].strip(":,;")
    opt = options.get(head)
    if opt is None or head == opt.flag:
        return message
    return opt.flag + message[len(head):]


def resolve_args(args: argparse.Namespace) -> Resolved:
    """The resolved values of a `train` command line (its pair's preset, then the given options)."""
    task, model, values = given(args)
    return resolve(task, model, values)


__all__ = ["INTERRUPTED", "CommandError", "Option", "add_options", "add_train_options",
           "build_run", "build_task", "given", "in_cli_words", "resolve_args"]
