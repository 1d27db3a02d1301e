"""The command line's task, model and trainer options, generated from the family cards
(`fastattn.configs`, read when a parser is built, so a family registered late is known): `train`
parses them per (task, model) pair, `sweep` takes each as an axis.

`fastattn train --task T --model M --help` (and `sweep`'s) prints that pair's options with the
values its run takes (its paper's preset); `--help` without a pair lists the pairs;
`--help-all` lists each task family and each model family with its options, the tasks it pairs
with and the paper preset of each pair. Values arrive as text and are converted once the pair is
known, so an error names the option: "--dim must be an integer; got 'abc'".
"""

from __future__ import annotations

import argparse
import re
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from fastattn._validate import INTERRUPTED
from fastattn.configs import (
    MODEL_CARDS,
    TASK_CARDS,
    Option,
    Resolved,
    all_options,
    check_pair,
    options_for,
    pairs,
    resolve,
)
from fastattn.configs.base import in_paper_order, model_card, task_card
from fastattn.configs.options import (
    INNER_LIST,
    LIST_GRAMMAR,
    METHOD_FIELDS,
    MODEL,
    RENAMED,
    TASK,
    one_value,
)
from fastattn.training.build import build_run, build_task


class CommandError(Exception):
    """Bad input to a subcommand: printed as one line `fastattn <cmd>: error: …`, exit status 2."""


def step_device(given: str | None):
    """The torch device of `--device` (`train`, `reproduce`): where the fused He step's Triton
    kernels run, checked before any work (None: not given, the C++ core)."""
    from fastattn.triton_kernels._launch import interpreting, triton_available

    if given is None:
        return None
    import torch

    try:
        device = torch.device(given)
    except (RuntimeError, ValueError):
        raise CommandError(f"--device {given} is no torch device; give cuda or cuda:N") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise CommandError(f"--device {given}: no CUDA device is visible here; drop --device to "
                           "train on the C++ core")
    if device.type == "cpu" and not interpreting():
        raise CommandError("--device cpu runs the Triton kernels only under TRITON_INTERPRET=1 "
                           "(tests); drop --device to train on the C++ core")
    if device.type not in ("cuda", "cpu"):
        raise CommandError(f"--device {given}: the fused step's kernels run on cuda")
    if not triton_available():
        raise CommandError("--device needs triton (pip install triton); drop --device to train "
                           "on the C++ core")
    return device


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
            groups[heading] = _family_group(parser, heading)
        default = f" (default: {opt.default})" if opt.field == "kind" else \
            " (default: the pair's preset)" if opt.target != "train" else ""
        groups[heading].add_argument(opt.flag, dest=opt.name,
                                     type=parse(opt) if parse else opt.parse,
                                     default=None, help=opt.help + default)
    add_renamed(parser, parse)


class Renamed(argparse.Action):
    """An option's old flag (`RENAMED`): stores its value as the new flag does, after one
    deprecation line naming the new (also for scripts' own parsers: bench/population_table.py)."""

    def __init__(self, option_strings: list[str], dest: str, new: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.new = new

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from fastattn._names import deprecated

        deprecated(option_string, self.new)
        setattr(namespace, self.dest, values)


def add_renamed(parser: argparse.ArgumentParser,
                parse: Callable[[Option], Callable] | None = None) -> None:
    """Add the old flag of each renamed option (`RENAMED`: --time for --t-end), left out of the
    help; `parse` as in `add_options` (None: the value is kept as text, as `train` reads it)."""
    options = {o.name: o for o in all_options()}
    for old, name in RENAMED.items():
        opt = options[name]
        parser.add_argument("--" + old, dest=name, action=Renamed, new=opt.flag,
                            type=parse(opt) if parse else None, default=argparse.SUPPRESS,
                            help=argparse.SUPPRESS)


def _family_group(parser: argparse.ArgumentParser, title: str, description: str | None = None):
    """An argument group of family options: shown by --help-all, left out of --help (which
    shows one pair's, `pair_help`)."""
    group = parser.add_argument_group(title, description)
    group.family = True
    return group


# ------------------------------------------------------------------------------ help
class PairHelp(argparse.Action):
    """`-h/--help` and `--help-all` of a command whose options come from the cards (`train`,
    `sweep`). --help with --task and --model anywhere on the line (before or after it): that pair's
    options and the values its run takes (`pair_help`); without them, the command's own options and
    the pairs (`pairs_help`). --help-all: every family's options."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS,
                 help: str | None = None, trainer: Mapping[str, Any] | None = None) -> None:
        super().__init__(option_strings, dest, default=argparse.SUPPRESS, nargs=0, help=help)
        self.trainer = trainer

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        if option_string == "--help-all":
            parser.print_help()
        else:
            command = parser.prog.split()[-1]
            asked = _asked(getattr(parser, "given", ()))
            if asked.keys() & {"task", "model"}:
                print(f"usage: {parser.usage}\n\n"
                      f"{_asked_pairs_help(command, asked, self.trainer)}")
            else:
                print(_own_help(parser) + "\n" + pairs_help(command))
        parser.exit()


def add_help(parser: argparse.ArgumentParser, trainer: Mapping[str, Any] | None = None) -> None:
    """Add --help (one pair's options, or the pairs) and --help-all (every family's) to `parser`,
    built with add_help=False; `trainer`: the command's own trainer defaults (`pair_help`)."""
    parser.add_argument("-h", "--help", action=PairHelp, trainer=trainer,
                        help="with --task T --model M: that pair's options and preset values; "
                        "without: the pairs")
    parser.add_argument("--help-all", action=PairHelp,
                        help="every task's, model's and trainer option, each pair's preset")


def _asked(argv: Sequence[str]) -> dict[str, list[str]]:
    """The --task, --model and --method values on a command line, wherever they stand (a sweep
    axis gives several)."""
    scan = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    for flag in ("--task", "--model", "--method"):
        scan.add_argument(flag)
    known, _ = scan.parse_known_args(list(argv))
    return {k: [v.strip() for v in text.split(",") if v.strip()]
            for k, text in vars(known).items() if text}


def _asked_pairs_help(command: str, asked: Mapping[str, list[str]],
                      trainer: Mapping[str, Any] | None = None) -> str:
    """Each asked pair's help; a lone --task or --model takes the other's default (as a run
    does), and where that pair does not exist, the pairs listing of the one given."""
    tasks, models = asked.get("task", []), asked.get("model", [])
    for kind in tasks:
        task_card(kind)                  # a mistyped kind: one line offering the closest
    for kind in models:
        model_card(kind)
    if not (tasks and models):
        pairing = [(t, m) for t in tasks or [TASK.default] for m in models or [MODEL.default]
                   if t in model_card(m).tasks]
        if not pairing:
            return pairs_help(command, asked)
        tasks, models = [pairing[0][0]], [pairing[0][1]]
    method = asked.get("method", [None])[0]
    return "\n\n".join(pair_help(command, t, m, method, trainer) for t in tasks for m in models)


def _own_help(parser: argparse.ArgumentParser) -> str:
    """The parser's help without its family groups (argparse's `format_help`, those left out)."""
    formatter = parser._get_formatter()
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    formatter.add_text(parser.description)
    for group in parser._action_groups:
        if not getattr(group, "family", False):
            formatter.start_section(group.title)
            formatter.add_text(group.description)
            formatter.add_arguments(group._group_actions)
            formatter.end_section()
    formatter.add_text(parser.epilog)
    return formatter.format_help()


def pairs_help(command: str, asked: Mapping[str, list[str]] | None = None) -> str:
    """The pairs of tasks and models (those of a given --task or --model only), and how to ask
    about one: `fastattn COMMAND --help` without a pair."""
    asked = asked or {}
    rows = []
    for task, models in pairs().items():
        models = [m for m in models if m in asked.get("model", models)]
        if models and task in asked.get("task", [task]):
            rows.append(_wrap(f"--task {task} ({task_card(task).paper}): --model "
                              f"{' | '.join(models)}"))
    return ("pairs (the models each task pairs with):\n" + "\n".join(rows) + "\n\n"
            + _wrap(f"fastattn {command} --task T --model M --help: that pair's options and the "
                    f"values its run takes (its paper's preset); fastattn {command} --help-all: "
                    "every family's options", ""))


def pair_help(command: str, task: str, model: str, method: str | None = None,
              trainer: Mapping[str, Any] | None = None) -> str:
    """The options of one (task, model) pair with the values its run takes where they are not
    given (its preset's, for `method`: default the preset's method; then `trainer`, the
    command's own defaults of the trainer fields its method reads, as the sweep's), the trainer's
    only those `method` reads, and the pair's presets."""
    check_pair(task, model)
    r = resolve(task, model, {"train": {"method": method}} if method else None)
    method = r.train["method"]
    preset = r.preset
    own = {k: v for k, v in (trainer or {}).items()
           if k not in preset.train_for(method) and method in METHOD_FIELDS.get(k, (method,))}
    values = {"task": r.task | dict(preset.task), "model": r.model | dict(preset.model),
              "train": r.train | own | preset.train_for(method)}  # the preset's form: "1/D", not 0.2
    shown: dict[str, list[Option]] = {"task": [], "model": [], "train": []}
    for o in options_for(task, model):
        if o.field != "kind" and (o.target != "train" or
                                  method in METHOD_FIELDS.get(o.field, (method,))):
            shown[o.target].append(replace(o, default=values[o.target].get(o.field)))
    card, tcard = model_card(model), task_card(task)
    time = [_wrap(f"time: {card.time.describe(r.task, r.train)} ({card.time.why})")] if card.time \
        else []
    axes = "; each option takes a list of values, one run each" if command == "sweep" else ""
    return "\n".join([
        f"fastattn {command} --task {task} --model {model}",
        _wrap(f"values shown: what a run takes where the option is not given: preset "
              f"{preset.name} ({preset.source}), --method {method}{axes}", ""),
        _wrap(LIST_GRAMMAR, ""),
        "", _wrap(f"task {task} ({tcard.paper}): {tcard.summary}", ""), _lines(shown["task"]),
        "", _wrap(f"model {model} ({card.paper}): {card.summary}", ""), _lines(shown["model"]),
        *time,
        "", f"trainer options of --method {method} (another method's: --method M --help)",
        _lines(shown["train"]),
        "", "presets of this pair (the first whose --task values match is the run's):",
        _preset_lines(task, model),
        "", _wrap(f"the command's own options (--out …): fastattn {command} --help; every "
                  f"family's: fastattn {command} --help-all", "")]).replace("\n\n\n", "\n\n")


# ------------------------------------------------------------------------------ train
def _show(value: Any, name: str = "") -> str:
    """A value of option `name` as the command line writes it (`LIST_GRAMMAR`: a list's elements
    separated by "/", also in a list kept as text, e.g. a spectrum "0.25,0.25", so that both
    `train` and `sweep` read it back as one value)."""
    if isinstance(value, str) and name in INNER_LIST:
        return value.replace(",", "/")
    if isinstance(value, (list, tuple)):
        return "/".join(_show(v) for v in value) if not any(isinstance(v, (list, tuple))
                                                            for v in value) else \
            ";".join(_show(v) for v in value)
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):        # short where exact; else every digit (typed back: the same)
        return f"{value:g}" if float(f"{value:g}") == value else repr(value)
    return str(value)


def _wrap(text: str, indent: str = "  ") -> str:
    return textwrap.fill(text, 100, initial_indent=indent, subsequent_indent=indent + "    ",
                         break_on_hyphens=False)


def _lines(options: list[Option]) -> str:
    return "\n".join(_wrap(f"{o.flag} {o.name.upper()}: {o.help}"
                           + (f" (default: {_show(o.default, o.name)})" if o.default is not None else ""))
                     for o in options)


def _preset_lines(task: str, model: str) -> str:
    """One line per preset of the pair: the task values that select it, its source, its values."""
    from fastattn.configs import model_card

    flags = {(o.target, o.field): o.flag for o in options_for(task, model)}
    out = []
    for p in model_card(model).presets[task]:
        values = [f"{flags[(t, k)]} {_show(v, k)}"
                  for t, d in (("task", p.task), ("model", p.model), ("train", p.train))
                  for k, v in d.items() if (t, k) in flags]
        when = "".join(f" {flags[('task', k)]} {_show(v, k)}" for k, v in p.when.items())
        out.append(_wrap(f"with --task {task}{when}: {p.source} [{' '.join(values)}]"))
    return "\n".join(out)


def add_train_options(parser: argparse.ArgumentParser) -> None:
    """The `train` options: --task, --model and the trainer's as arguments; each task and model
    family's options in a section of their own (the values are read as text and converted once the
    pair is known: `given`)."""
    seen = set()
    choose = parser.add_argument_group("the pair", _wrap(
        "--task T --model M alone runs the canonical setup of the paper the pair comes from (its "
        "preset); any option overrides one value"))
    trainer = _family_group(parser, "trainer options (every pair)")
    for opt in all_options():
        if opt.name in seen:
            continue
        seen.add(opt.name)
        group = choose if opt.field == "kind" else trainer if opt.target == "train" else None
        default = "the pair's preset" if opt.field == "method" else \
            None if opt.default is None else _show(opt.default, opt.name)
        helptext = argparse.SUPPRESS if group is None else opt.help + (
            f" (default: {default})" if default is not None else "")
        (group or parser).add_argument(opt.flag, dest=opt.name, default=None, metavar=opt.name.upper(),
                                       help=helptext)
    add_renamed(parser)
    for kind, card in in_paper_order(TASK_CARDS).items():
        opts = [o for o in options_for(kind, pairs()[kind][0]) if o.target == "task"
                and o.field != "kind"]
        _family_group(
            parser, f"task {kind} ({card.paper}): {card.summary}",
            _wrap(f"models: {', '.join(pairs()[kind])} (defaults below: with --model "
                  f"{pairs()[kind][0]}; each model's preset lines give its own)") + "\n"
            + _lines(opts))
    for kind, card in in_paper_order(MODEL_CARDS).items():
        opts = [o for o in options_for(card.tasks[0], kind) if o.target == "model"
                and o.field != "kind"]
        presets = "\n".join(_preset_lines(t, kind) for t in card.tasks)
        time = _wrap(f"time: {card.time.describe()} ({card.time.why})") + "\n" if card.time else ""
        _family_group(parser, f"model {kind} ({card.paper}): {card.summary}",
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
        out[opt.target][opt.field] = opt.convert(one_value(opt.name, text))
    return task, model, out


def _pairs_known(task: str, model: str) -> bool:
    """Whether (task, model) pairs; a wrong pair is reported by `resolve` (one line, after the
    options' values are read)."""
    return task in TASK_CARDS and model in MODEL_CARDS and task in MODEL_CARDS[model].tasks


def in_cli_words(message: str, options: Mapping[str, Option]) -> str:
    """A config's error in the CLI's words: a message that starts with a field's name ("t_end must
    be …") starts with its option's flag instead, and every `field=value` of an option ("give
    lr=0.01", "method='gd'") reads `--flag value`."""
    def flag_value(m: re.Match) -> str:
        opt = options.get(m.group(1))
        value = m.group(2).strip("'\"")
        return m.group(0) if opt is None else f"{opt.flag} {value}"

    message = re.sub(r"\b([a-z_][a-z0-9_]*)=('[^']*'|\"[^\"]*\"|[^\s,;:)]+)", flag_value, message)
    head = message.split(" ", 1)[0].strip(":,;")
    opt = options.get(head)
    if opt is None or head == opt.flag:
        return message
    return opt.flag + message[len(head):]


def resolve_args(args: argparse.Namespace) -> Resolved:
    """The resolved values of a `train` command line (its pair's preset, then the given options)."""
    task, model, values = given(args)
    return resolve(task, model, values)


__all__ = [
    "INTERRUPTED",
    "CommandError",
    "Option",
    "PairHelp",
    "add_help",
    "add_options",
    "add_train_options",
    "build_run",
    "build_task",
    "given",
    "in_cli_words",
    "pair_help",
    "pairs_help",
    "resolve_args",
]
