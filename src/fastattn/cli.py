"""The fastattn command line: one entry point, one subcommand per job.

Only the chosen subcommand's parser is built, and only its modules are imported: ``fastattn --help``
and a subcommand's ``--help`` load no more than that subcommand needs (no torch for the listing).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import traceback
from collections.abc import Callable
from pathlib import Path


def _cmd_info(args: argparse.Namespace) -> int:
    from fastattn.info import format_info, info

    report = info()
    print(json.dumps(report, indent=2) if args.json else format_info(report))
    return 0


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from fastattn import experiments
    from fastattn.cli_options import CommandError

    if not args.list and not args.name:
        raise CommandError("give a figure name (e.g. zhang2025-fig3); --list lists them")
    if args.list:
        for name in sorted(experiments.FIGURES, key=natural_order):
            recipe = experiments.FIGURES[name]
            opts = "; ".join(f"{k}: {'|'.join(map(str, v))}" for k, v in recipe.options.items())
            print(f"{name:<22} {recipe.title}" + (f"  [options {opts}]" if opts else ""))
        return 0
    options = dict(o.split("=", 1) for o in args.option)
    doc = experiments.reproduce(args.name, args.out, quick=args.quick, **options)
    print(f"{args.name}: {len(doc['runs'])} runs in {doc['wall_time']:.1f} s")
    print(f"wrote {args.out}/{args.name}.png and {args.out}/{args.name}.json")
    return 0


def natural_order(name: str) -> list:
    """Sort key that puts numbers in numeric order: fig3 before fig11."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def check_output(out: Path, name: str, overwrite: bool) -> None:
    """Refuse, before any work, an output that cannot be written or would replace a run record."""
    from fastattn.cli_options import CommandError

    if not name or Path(name).name != name or name in (".", ".."):
        raise CommandError(f"--name {name!r} must be a plain file name (no directory part)")
    if out.exists() and not out.is_dir():
        raise CommandError(f"--out {out} is a file; give a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".{name}.probe"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise CommandError(f"--out {out} is not writable ({exc.strerror or exc})") from None
    existing = [p for p in (out / f"{name}.json", out / f"{name}.npz") if p.exists()]
    if existing and not overwrite:
        raise CommandError(f"{existing[0]} exists (a run record); give another --name or --out, "
                           "or --overwrite to replace it")


TRAIN_HELP = """Train one model on one task; writes a run record (NAME.json, NAME.npz) and a plot.

--task and --model alone run the canonical setup of the paper the pair comes from (its preset,
listed under each model below; the run record's meta.preset names it). Every field is a --KEY VALUE
override. E.g. Zhang et al.'s Fig. 3, whose four drops end near t = 2.1e3, 3.5e3, 7.5e3, 1.2e4:
  fastattn train --task linear_regression --model separate --spectrum 0.4,0.3,0.2,0.1 \\
      --time 20000 --out DIR
`fastattn info` lists every task with the models it pairs with and each pair's methods."""


class _OneLineParser(argparse.ArgumentParser):
    """An argument parser (and its subcommands') whose errors are one line, `fastattn train: error:
    …`, without the usage (`--help` has it)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _check_method(task: str, model: str, method: str) -> None:
    """Refuse, before any work, a method the pair does not have (flow and gd need the exact
    population loss)."""
    from fastattn.cli_options import CommandError
    from fastattn.info import pair_methods

    methods = pair_methods(task, model)
    if method in ("flow", "gd") and method not in methods:
        raise CommandError(f"--method {method} trains the exact population loss, which --task {task} "
                           f"--model {model} does not have; use --method {' or '.join(methods)} "
                           "(fastattn info lists each pair's methods)")
    if method not in methods:
        raise CommandError(f"--method {method} does not train --task {task} --model {model}; use "
                           f"--method {' | '.join(methods)}")


def _title(resolved) -> str:
    """The plot title: the task's dim and context, the model's integer options (H, R, L …)."""
    from fastattn.configs import model_card

    short = {"heads": "H", "rank": "R", "layers": "L", "d_model": "D", "context": "N", "dim": "D"}
    task = ", ".join(f"{short[k]}={resolved.task[k]}" for k in ("dim", "context")
                     if k in resolved.task)
    card = model_card(resolved.model["kind"])
    model = ", ".join(f"{short[f.name]}={resolved.model[f.name]}" for f in card.fields
                      if f.name in short and f.name in resolved.model)
    return f"{resolved.task['kind']}: {task}; {resolved.model['kind']}" + (f": {model}" if model else "")


def _cmd_train(args: argparse.Namespace) -> int:
    from fastattn import plots
    from fastattn.cli_options import CommandError, build_run, in_cli_words, resolve_args
    from fastattn.configs import options_for
    from fastattn.training import Checkpointing, train
    from fastattn.training.interrupt import terminate_as_interrupt

    resolved = resolve_args(args)
    kinds = resolved.task["kind"], resolved.model["kind"]
    _check_method(*kinds, resolved.train["method"])
    try:
        task, model, config = build_run(resolved.spec())
        if config.method in ("flow", "gd"):     # the objective's own checks, before --out exists
            from fastattn.population import objective_for

            objective_for(task, model)
    except (ValueError, TypeError) as exc:
        raise CommandError(in_cli_words(str(exc), {o.field: o for o in options_for(*kinds)})) from None
    if config.progress is None and args.quiet:
        config = dataclasses.replace(config, progress=False)
    out = Path(args.out)
    check_output(out, args.name, args.overwrite or args.resume)
    checkpoint = None
    if config.method in ("sgd", "adam"):
        checkpoint = Checkpointing(out / f"{args.name}.ckpt", every=args.checkpoint_every,
                                   resume=args.resume)
        if args.resume and not Path(checkpoint.path).exists():
            raise CommandError(f"--resume: no checkpoint {checkpoint.path} (written by an "
                               "interrupted sgd/adam run of the same --out and --name)")
    elif args.resume:
        raise CommandError(f"--resume continues sgd/adam runs; --method {config.method} has no "
                           "checkpoints")
    with terminate_as_interrupt():
        traj = train(model, task, config, checkpoint=checkpoint)
    traj.meta["preset"] = {"name": resolved.preset.name, "source": resolved.preset.source}
    record = traj.save(out / args.name)
    # Sampled runs: the exact population loss where the pair has one, the noisy batch loss beside
    exact = traj.test_loss.get("population") if config.method in ("sgd", "adam") else None
    x = "step" if config.method == "adam" else "time"      # Adam has no flow time (conventions)
    fig, ax = plots.plt.subplots(figsize=(6, 4))
    plots.loss_axes(ax, log_time=True, **({"xlabel": "Adam step k"} if x == "step" else {}))
    label = f"{model.kind} ({config.method})"
    if exact is not None:
        plots.plot_loss(ax, traj, label=f"{label}: batch loss", x=x, alpha=0.35, lw=0.8)
        plots.plot_loss(ax, dataclasses.replace(traj, loss=exact),
                        label=f"{label}: population loss (exact)", x=x)
    else:
        plots.plot_loss(ax, traj, label=label, x=x)
    ax.set_title(_title(resolved))
    ax.legend()
    png = plots.save(fig, out / f"{args.name}.png")
    final = (f"final population loss={float(exact[-1]):.6g} (batch {traj.final_loss:.6g})"
             if exact is not None and len(exact) else f"final loss={traj.final_loss:.6g}")
    print(f"{config.method}: status={traj.status}, {final}, "
          f"evaluations={traj.n_evals}, wall time={traj.wall_time:.3g} s (preset {resolved.preset.name})")
    print(f"wrote {record}, {record.with_suffix('.npz')} and {png}")
    return 0


def _add_info(sub) -> None:
    p = sub.add_parser("info", help=COMMANDS["info"][0])
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_cmd_info)


def _add_train(sub) -> None:
    from fastattn.cli_options import add_train_options

    p = sub.add_parser("train", help=COMMANDS["train"][0],
                       usage="fastattn train --task T --model M [--KEY VALUE ...] --out DIR",
                       description=TRAIN_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_train_options(p)
    p.add_argument("--out", required=True, help="directory for the run record and the plot")
    p.add_argument("--name", default="run",
                   help="file name stem (default: run); an existing record of that name is an "
                   "error unless --overwrite")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing run record of the same --name in --out")
    p.add_argument("--checkpoint-every", type=float, default=60.0, metavar="SECONDS",
                   help="sgd/adam: write OUT/NAME.ckpt every SECONDS (0: every step; default 60); "
                   "removed when the run ends other than by Ctrl-C/SIGTERM")
    p.add_argument("--resume", action="store_true",
                   help="sgd/adam: continue an interrupted run from OUT/NAME.ckpt, bit for bit "
                   "(same options; replaces its record)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_train)


def _add_reproduce(sub) -> None:
    p = sub.add_parser("reproduce", help=COMMANDS["reproduce"][0])
    p.add_argument("name", nargs="?", help="figure name, e.g. zhang2025-fig3")
    p.add_argument("--out", default="out", help="output directory (default: out)")
    p.add_argument("--quick", action="store_true", help="small settings that finish in seconds")
    p.add_argument("--list", action="store_true", help="list the available figures")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a recipe option, e.g. heads=code (see --list)")
    p.set_defaults(func=_cmd_reproduce)


def _add_sweep(sub) -> None:
    from fastattn.sweep.cli import add_parsers

    add_parsers(sub)                        # adds both `sweep` and `plot`


def _add_kernels(sub) -> None:
    from fastattn.triton_kernels.aot_cli import add_parser

    add_parser(sub)


#: subcommand → (its one-line help in `fastattn --help`, the function that adds its parser).
#: A subcommand's parser, and the modules its options need, are built only when it runs.
COMMANDS: dict[str, tuple[str, Callable[[argparse._SubParsersAction], None]]] = {
    "info": ("versions, C++ core, kernel backends and devices", _add_info),
    "train": ("train one model on one task; writes a run record and a plot", _add_train),
    "reproduce": ("reproduce a published figure with the theory overlaid", _add_reproduce),
    "sweep": ("run a grid of configurations; resumable Parquet table", _add_sweep),
    "plot": ("plots of a sweep's results table", _add_sweep),
    "kernels": ("AOT-compile the Triton kernels for sm_80/sm_90 and report their resource use "
                "(no GPU needed)", _add_kernels),
}


def _chosen(argv: list[str]) -> str | None:
    """The subcommand named in argv: its first word that is not an option (the top-level parser's
    only options, --debug and --help, take no value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with every subcommand listed and `command`'s options added (None: every
    command's, which imports every subcommand's modules)."""
    parser = _OneLineParser(prog="fastattn", description=__doc__.split("\n")[0])
    parser.add_argument("--debug", action="store_true",
                        help="show the Python traceback of an error (also after the subcommand)")
    sub = parser.add_subparsers(dest="command", required=True)
    built: set[Callable] = set()
    chosen = COMMANDS if command is None else {k: v for k, v in COMMANDS.items() if k == command}
    for _, add in chosen.values():          # first: one function may add several (sweep, plot)
        if add not in built:
            add(sub)
            built.add(add)
    for name, (help_line, _) in COMMANDS.items():
        if name not in sub.choices:
            sub.add_parser(name, help=help_line, add_help=False)  # listed; built when chosen
    for name in sub.choices:
        if command is None or name == command:
            sub.choices[name].add_argument("--debug", action="store_true",
                                           default=argparse.SUPPRESS,
                                           help="show the Python traceback of an error")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand. Bad input (and any other error) prints one line `fastattn <cmd>:
    error: …` and exits 2 (`--debug`: the traceback too). Ctrl-C exits 130 with one line, unless
    the command ends the work itself (`train` saves the interrupted run and exits 0)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _chosen(argv)
    args = build_parser(command if command in COMMANDS else "").parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        from fastattn.cli_options import INTERRUPTED

        print(f"fastattn {args.command}: interrupted", file=sys.stderr)
        return INTERRUPTED
    except Exception as exc:
        if args.debug:
            traceback.print_exc()
        options = sys.modules.get("fastattn.cli_options")   # loaded if it raised CommandError
        known = isinstance(exc, (ValueError, TypeError, OSError)) or (
            options is not None and isinstance(exc, options.CommandError))
        text = " ".join(str(exc).split())          # one line
        print(f"fastattn {args.command}: error: "
              f"{text if known else f'{type(exc).__name__}: {text}'}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
