"""The fastattn command line: one entry point, one subcommand per job.

Only the chosen subcommand's parser is built, and only its modules are imported: ``fastattn --help``
and a subcommand's ``--help`` load no more than that subcommand needs (no torch for the listing).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import textwrap
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path


def _cmd_info(args: argparse.Namespace) -> int:
    from fastattn.info import format_info, info

    if args.task or args.model or args.measure:
        return _info_pair(args)
    report = info()
    print(json.dumps(report, indent=2) if args.json else format_info(report))
    return 0


def _info_pair(args: argparse.Namespace) -> int:
    """`fastattn info --task T --model M [--measure]`: the pair's methods, preset and the expected
    time of its default run (declared; --measure: also timed here)."""
    from fastattn.cli_options import CommandError
    from fastattn.configs import check_pair
    from fastattn.info import default_run, format_pair, pairs_report

    if not (args.task and args.model):
        raise CommandError("--task and --model name a pair together (fastattn info lists the "
                           "pairs); --measure times that pair's default run")
    check_pair(args.task, args.model)
    report = pairs_report()[args.task][args.model]
    measured = None
    if args.measure:
        if default_run(args.task, args.model)["steps"] is None:
            raise CommandError(f"--measure times optimiser steps; the default run of --task "
                               f"{args.task} --model {args.model} is an exact flow")
        from fastattn.training.expected import default_seconds_per_step

        measured = default_seconds_per_step(args.task, args.model)
    if args.json:
        print(json.dumps({**report, "measured_seconds_per_step": measured}, indent=2))
    else:
        print("\n".join(format_pair(args.task, args.model, report, measured)))
    return 0


def check_output(out: Path, name: str, overwrite: bool) -> None:
    """Refuse, before any work, an output that cannot be written or would replace a run record."""
    from fastattn.cli_options import CommandError

    if not name or Path(name).name != name or name in (".", ".."):
        raise CommandError(f"--name {name!r} must be a plain file name (no directory part)")
    if out.exists() and not out.is_dir():
        raise CommandError(f"--out {out} is a file; give a directory")
    from fastattn.outputs import Output, probe

    Output(out, "train").check_kind()                # not a `reproduce` or sweep folder
    try:
        probe(out)
    except OSError as exc:
        raise CommandError(f"--out {out} is not writable ({exc.strerror or exc})") from None
    linked = [p for p in (out / f"{name}{x}" for x in (".json", ".npz", ".png")) if p.is_symlink()]
    if linked:
        raise CommandError(f"{linked[0]} is a symlink; fastattn writes nothing through links: "
                           "remove the link or give another --out")
    existing = [p for p in (out / f"{name}.json", out / f"{name}.npz") if p.exists()]
    if existing and not overwrite:
        raise CommandError(f"{existing[0]} exists (a run record); give another --name or --out, "
                           "or --overwrite to replace it")
    for path in (*existing, out / f"{name}.png"):     # --overwrite replaces fastattn's files only
        Output(out, "train").check_writable(path)


TRAIN_HELP = """Train one model on one task; writes a run record (NAME.json, NAME.npz) and a plot.

--task and --model alone run the canonical setup of the paper the pair comes from (its preset;
the run record's meta.preset names it). Every field is a --KEY VALUE override. E.g. Zhang et
al.'s Fig. 3, whose four drops end near t = 2.1e3, 3.5e3, 7.5e3, 1.2e4:
  fastattn train --task linear_regression --model separate --spectrum 0.4,0.3,0.2,0.1 \\
      --t-end 20000 --out DIR
`fastattn info` lists every task with the models it pairs with and each pair's methods.
"""


class _OneLineParser(argparse.ArgumentParser):
    """An argument parser (and its subcommands') whose errors are one line, `fastattn train: error:
    …`, without the usage (`--help` has it)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")

    def parse_known_args(self, args=None, namespace=None):
        # the whole line, for --help to find a --task or --model given after it (`PairHelp`)
        self.given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)


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


#: exit status of `fastattn train` when a run diverged (its record and plot are still written)
DIVERGED = 3


def _cmd_train(args: argparse.Namespace) -> int:
    from fastattn.cli_options import (
        INTERRUPTED,
        CommandError,
        build_run,
        given,
        in_cli_words,
        step_device,
    )
    from fastattn.configs import options_for, resolve
    from fastattn.configs.options import check_method_fields
    from fastattn.training import Checkpointing, RunsInterrupted, train, train_many
    from fastattn.training.callbacks import check_log, logger
    from fastattn.training.interrupt import terminate_as_interrupt

    if not args.out.strip():
        raise CommandError("--out '' names no folder; give a directory (--out . for this one)")
    device = step_device(args.device)
    lrs = _lr_list(args)
    if lrs is not None:                  # one run per value: the runs' lr, not one option value
        args = argparse.Namespace(**{**vars(args), "lr": None})
    task_kind, model_kind, values = given(args)
    _check_exclusive(args, values)
    resolved = resolve(task_kind, model_kind, values)
    kinds = resolved.task["kind"], resolved.model["kind"]
    _check_method(*kinds, resolved.train["method"])
    try:
        check_method_fields(resolved.train["method"],
                            [*values["train"], *(["lr"] if lrs is not None else [])],
                            "" if "method" in values["train"] else
                            f" (the preset's for --task {kinds[0]} --model {kinds[1]})")
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    runs = _expand_runs(resolved.spec(), args, lrs)
    try:
        built = [(name, *build_run(s)) for name, s in runs]
        for _, task, model, config in built:
            if config.method in ("flow", "gd"):  # the objective's own checks, before --out exists
                from fastattn.population import objective_for

                objective_for(task, model)
    except (ValueError, TypeError) as exc:
        raise CommandError(in_cli_words(str(exc), {o.field: o for o in options_for(*kinds)})) from None
    if args.quiet:
        built = [(n, t, m, dataclasses.replace(c, progress=False)) for n, t, m, c in built]
    if args.log and (len(built) > 1 or device is not None):
        raise CommandError("--log follows one run; it takes no --seeds or --lr lists and no "
                           "--device (train each seed with its own --log, or use train_many's "
                           "on_done in Python)")
    for spec in args.log or ():
        check_log(spec)
    out = Path(args.out)
    for name, _ in runs:
        check_output(out, name, args.overwrite or args.resume)
    statuses: list[int] = []

    def report(k: int, traj) -> None:
        name, task, _, config = built[k]
        traj.meta["preset"] = {"name": resolved.preset.name, "source": resolved.preset.source}
        statuses.append(_report_run(out, name, resolved, config, traj, task, runs[k][1]["model"]))

    try:
        loggers = [logger(spec) for spec in args.log or ()]
    except (ImportError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    if len(built) > 1 or device is not None:
        if args.resume:
            raise CommandError("--resume continues one run; it takes no --seeds or --lr lists "
                               "and no --device")
        try:                     # each record is written as soon as its run (its batch) ends
            with terminate_as_interrupt():
                train_many([m for _, _, m, _ in built], [t for _, t, _, _ in built],
                           [c for *_, c in built], on_done=report, device=device)
        except RunsInterrupted as stop:
            never = [built[k][0] for k, t in enumerate(stop.trajectories) if t is None]
            print(f"fastattn train: interrupted; not started: {', '.join(never)} (the records "
                  "written above are kept)", file=sys.stderr)
            return INTERRUPTED
    else:
        name, task, model, config = built[0]
        checkpoint = None
        if config.method in ("sgd", "adam"):
            from fastattn.outputs import Output

            output = Output(out, "train")
            ckpt = output.path(f"{name}.ckpt")          # not through a symlink
            if not args.resume:           # a file of that name it did not write: left alone
                output.check_writable(ckpt)
            try:
                checkpoint = Checkpointing(ckpt, every=args.checkpoint_every,
                                           every_steps=args.checkpoint_every_steps,
                                           resume=args.resume, output=output)
            except ValueError:
                raise CommandError(f"--checkpoint-every {args.checkpoint_every} and "
                                   f"--checkpoint-every-steps {args.checkpoint_every_steps} take "
                                   "seconds >= 0 and steps >= 1") from None
            if args.resume and not Path(checkpoint.path).exists():
                raise CommandError(f"--resume: no checkpoint {checkpoint.path} (written by an "
                                   "interrupted sgd/adam run of the same --out and --name)")
        elif args.resume:
            raise CommandError(f"--resume continues sgd/adam runs; --method {config.method} has "
                               "no checkpoints")
        if not (args.quiet or args.resume):
            from fastattn.training.expected import announce

            line = announce(model, task, config)
            if line:
                print(f"fastattn train: {line}", flush=True)
        with terminate_as_interrupt():
            traj = train(model, task, config, checkpoint=checkpoint, callbacks=loggers)
        report(0, traj)
    if INTERRUPTED in statuses:          # the last run was cut short: its record is written
        print("fastattn train: interrupted; the records written above are kept (an sgd/adam run "
              "continues with --resume)", file=sys.stderr)
    return max(statuses, default=0)


def _check_exclusive(args: argparse.Namespace, values: dict[str, dict]) -> None:
    """Refuse options of which one would silently replace the other."""
    from fastattn.cli_options import CommandError

    if args.seeds is not None:
        for target, field in (("model", "init_seed"), ("task", "data_seed")):
            if field in values[target]:
                flag = "--" + field.replace("_", "-")
                raise CommandError(f"--seeds {args.seeds} sets {flag} of each run; do not also "
                                   f"give {flag}")
    if "dt" in values["train"] and values["train"].get("integrator") != "rk4":
        # (a sweep may give dt to an integrator axis; one run has one integrator)
        raise CommandError("--dt is the step of --integrator rk4; the other integrators choose "
                           "their own steps: drop --dt or give --integrator rk4")
    if "cov_rho" in values["task"] and "spectrum" in values["task"]:
        raise CommandError("--cov-rho gives the input covariance (Λ_ij = ρ^|i−j|) in place of "
                           "--spectrum's diagonal one: give one of them")


def _lr_list(args: argparse.Namespace) -> str | None:
    """The text of a list of learning rates, one run each: --lr 1e-3,1e-2 (as a sweep's axis), or
    the deprecated --lrs (never beside --lr); None for a single --lr (or none)."""
    from fastattn._names import deprecated
    from fastattn.cli_options import CommandError

    if args.lrs is not None:
        if args.lr is not None:
            raise CommandError(f"--lrs {args.lrs} and --lr {args.lr} both give the learning rates: "
                               f"give one list, --lr {args.lrs}")
        deprecated(f"--lrs {args.lrs}", f"--lr {args.lrs}", " (a list: one run per value, as in a sweep)")
        return args.lrs
    return args.lr if args.lr is not None and "," in args.lr else None


def _expand_runs(spec: dict, args: argparse.Namespace, lr_list: str | None = None
                 ) -> list[tuple[str, dict]]:
    """(record name, option values) of each run: one, or one per --seeds × --lr list value."""
    from fastattn._validate import MAX_RUNS_UNASKED
    from fastattn.cli_options import CommandError
    from fastattn.configs.options import run_list

    limit = None if args.yes else MAX_RUNS_UNASKED
    seeds = run_list(args.seeds, int, limit) if args.seeds is not None else [None]
    lrs = run_list(lr_list, float, limit, "--lr") if lr_list is not None else [None]
    if not seeds or not lrs:
        raise CommandError("--seeds and --lr take a list, e.g. --seeds 0..4 or --lr 1e-3,1e-2")
    if limit is not None and len(seeds) * len(lrs) > limit:
        raise CommandError(f"--seeds × --lr is {len(seeds)} × {len(lrs)} = {len(seeds) * len(lrs)} "
                           f"runs, above the limit of {limit} a command starts unasked; give --yes "
                           "to start them, or shorter lists")
    runs = []
    for seed in seeds:
        for lr in lrs:
            run = {k: dict(v) for k, v in spec.items()}
            name = args.name
            if seed is not None:
                run["model"]["init_seed"] = run["task"]["data_seed"] = seed
                name += f"-seed{seed}"
            if lr is not None:
                run["train"]["lr"] = lr
                name += f"-lr{lr:g}"
            runs.append((name, run))
    return runs


def _report_run(out: Path, name: str, resolved, config, traj, task, model: dict) -> int:
    """Write a run's record and plot (with the loss levels the pair's theory predicts, where a
    paper's theory covers it: `sweep.hooks.loss_levels`), print its summary; the exit status it
    calls for (INTERRUPTED for a run Ctrl-C or SIGTERM cut short, DIVERGED, else 0). `task`: the
    run's task; `model`: its resolved model options."""
    from fastattn import plots
    from fastattn.outputs import Output, signals_held
    from fastattn.population.stops import Stop
    from fastattn.sweep.hooks import loss_levels

    output = Output(out, "train")
    with signals_held():                 # the record and its manifest entries together
        record = traj.save(out / name)
        output.record(record, record.with_suffix(".npz"))
    # Sampled runs: the exact population loss where the pair has one, the noisy batch loss beside
    exact = traj.test_loss.get("population") if config.method in ("sgd", "adam") else None
    x = "step" if config.method == "adam" else "time"      # Adam has no flow time (conventions)
    fig, ax = plots.plt.subplots(figsize=(6, 4))
    plots.loss_axes(ax, log_time=True, xlabel="Adam step k" if x == "step" else traj.time_label)
    label = f"{resolved.model['kind']} ({config.method})"
    if exact is not None:
        plots.plot_loss(ax, traj, label=f"{label}: batch loss", x=x, alpha=0.35, lw=0.8)
        plots.plot_loss(ax, dataclasses.replace(traj, loss=exact),
                        label=f"{label}: population loss (exact)", x=x)
    else:
        plots.plot_loss(ax, traj, label=label, x=x)
    params0 = traj.params[0] if len(traj.params) else None
    for i, (theory, levels) in enumerate(loss_levels(task, model, params0)):
        plots.draw_levels(ax, levels, label=theory, color=f"0.{3 + 2 * i}")
    ax.set_title(_title(resolved))
    if traj.status == Stop.DIVERGED:
        if config.method == "flow":
            where = f"t = {float(traj.time[-1]):.4g}"
        else:
            where = f"step {traj.diverged_at if traj.diverged_at is not None else traj.step[-1]:.0f}"
        ax.text(0.5, 0.5, f"diverged at {where}", transform=ax.transAxes, ha="center",
                va="center", color="C3", fontsize=14)
    ax.legend()
    png = plots.save(fig, out / f"{name}.png", output)
    final = (f"final population loss={float(exact[-1]):.6g} (batch {traj.final_loss:.6g})"
             if exact is not None and len(exact) else f"final loss={traj.final_loss:.6g}")
    print(f"{config.method}: status={traj.status}, {final}, "
          f"evaluations={traj.n_evals}, wall time={traj.wall_time:.3g} s (preset {resolved.preset.name})")
    if traj.metrics:                    # a token task's held-out measures (test accuracy, ICL score)
        print("held-out: " + ", ".join(f"{k}={float(v[-1]):.4g}" for k, v in traj.metrics.items()))
    print(f"wrote {record}, {record.with_suffix('.npz')} and {png}")
    if traj.status == Stop.INTERRUPTED:
        from fastattn.cli_options import INTERRUPTED

        return INTERRUPTED
    if traj.status == Stop.DIVERGED:
        print(f"fastattn train: {name} diverged at {where} (the record keeps the last state "
              f"before it); exit status {DIVERGED}", file=sys.stderr)
        return DIVERGED
    return 0


def _add_info(sub) -> None:
    p = sub.add_parser("info", help=COMMANDS["info"][0])
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--task", help="with --model: that pair only, with its default run's expected "
                   "time")
    p.add_argument("--model", help="with --task: that pair only")
    p.add_argument("--measure", action="store_true",
                   help="with --task and --model: also time a few steps of the default run here")
    p.set_defaults(func=_cmd_info)


def _add_train(sub) -> None:
    from fastattn._validate import MAX_RUNS_UNASKED
    from fastattn.cli_options import add_help, add_train_options
    from fastattn.configs.options import LIST_GRAMMAR
    from fastattn.training.checkpoint import EVERY_STEPS
    from fastattn.training.expected import LONG_RUN, MIN_PROBED_STEPS, PROBE_STEPS, duration

    p = sub.add_parser("train", help=COMMANDS["train"][0],
                       usage="fastattn train --task T --model M [--KEY VALUE ...] --out DIR",
                       description=TRAIN_HELP + textwrap.fill(LIST_GRAMMAR, 100),
                       formatter_class=argparse.RawDescriptionHelpFormatter, add_help=False)
    add_help(p)
    add_train_options(p)
    p.add_argument("--out", required=True, help="directory for the run record and the plot")
    p.add_argument("--name", default="run",
                   help="file name stem (default: run); an existing record of that name is an "
                   "error unless --overwrite")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing run record of the same --name in --out")
    p.add_argument("--checkpoint-every", type=float, default=60.0, metavar="SECONDS",
                   help="sgd/adam: write OUT/NAME.ckpt every SECONDS (0: every step; default 60) "
                   "or every --checkpoint-every-steps, whichever comes first; removed when the "
                   "run ends other than by Ctrl-C/SIGTERM")
    p.add_argument("--checkpoint-every-steps", type=int, default=EVERY_STEPS, metavar="STEPS",
                   help=f"sgd/adam: also write OUT/NAME.ckpt every STEPS steps (default "
                   f"{EVERY_STEPS})")
    p.add_argument("--resume", action="store_true",
                   help="sgd/adam: continue an interrupted run from OUT/NAME.ckpt, bit for bit "
                   "(same options; replaces its record)")
    p.add_argument("--quiet", action="store_true",
                   help="no progress bar or flow progress line (shown only on a terminal), and "
                   f"no expected-time line (a run of {MIN_PROBED_STEPS} steps or more first times "
                   f"{3 * PROBE_STEPS + 1} steps of it on throw-away copies and says its expected "
                   f"time when that is over {duration(LONG_RUN)})")
    p.add_argument("--log", action="append", metavar="SPEC",
                   help="live logging of each loss record: tensorboard:DIR (needs tensorboard) or "
                   "wandb[:PROJECT] (needs wandb); may be given twice")
    # runs trained together (the fused He step batches them; one record per run)
    p.add_argument("--seeds", metavar="LIST",
                   help="train one run per seed, e.g. 0..4 or 0,3,7: run s takes --init-seed s and "
                   "--data-seed s; records NAME-seedS (runs the fused He step can train are "
                   "trained batched in one process)")
    p.add_argument("--lrs", metavar="LIST",
                   help="deprecated, write --lr LIST: a list of learning rates trains one run per "
                   "value, e.g. --lr 1e-3,3e-3 (records NAME-lrX; with --seeds, every pair)")
    p.add_argument("--yes", action="store_true",
                   help=f"start more than {MAX_RUNS_UNASKED} runs (--seeds × --lr) unasked")
    p.add_argument("--device", metavar="DEVICE",
                   help="the runs the fused He step trains step on this GPU (e.g. cuda, cuda:1) "
                   "with its Triton kernels and CUDA graphs instead of the C++ core (their records "
                   "say so; the bits differ from the core's in rounding); no --log or --resume")
    p.epilog = ("exit status: 0 done, 2 bad input, 3 a run diverged (its record and plot are "
                "written; docs/performance.md), 130 interrupted by Ctrl-C or SIGTERM (the cut "
                "run's record is written)")
    p.set_defaults(func=_cmd_train)



def _add_reproduce(sub) -> None:
    from fastattn.cli_reproduce import add_parsers

    add_parsers(sub)                        # adds both `reproduce` and `report`


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
    "reproduce": ("reproduce published figures with the theory overlaid, and the claims", _add_reproduce),
    "report": ("the claims ledger and report page of a reproduce folder", _add_reproduce),
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
    chosen = COMMANDS[command][1] if command in COMMANDS else None
    built: set[Callable] = set()
    for name, (help_line, add) in COMMANDS.items():
        if command is None or add is chosen:           # one function may add several commands
            if add not in built:
                add(sub)
                built.add(add)
        elif name not in sub.choices:
            sub.add_parser(name, help=help_line, add_help=False)  # listed; built when chosen
    for name in sub.choices:
        if command is None or COMMANDS[name][1] is chosen:
            sub.choices[name].add_argument("--debug", action="store_true",
                                           default=argparse.SUPPRESS,
                                           help="show the Python traceback of an error")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand. Bad input (and any other error) prints one line `fastattn <cmd>:
    error: …` and exits 2 (`--debug`: the traceback too). Ctrl-C exits 130 with one line wherever
    it lands (`train` first writes the interrupted run's record). `train` exits 3 (DIVERGED) when
    a run diverged, after writing its record and plot."""
    os.environ.setdefault("MPLBACKEND", "Agg")     # files only; a library import keeps the user's
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _chosen(argv)
    name = command if command in COMMANDS else None
    if command is not None and name is None:
        from fastattn._names import closest

        match = closest(command, COMMANDS)
        return _error(None, ValueError(f"unknown command {command!r}; " + (
            f"did you mean fastattn {match}?" if match else
            f"choose one of {', '.join(COMMANDS)} (fastattn --help)")))
    with warnings.catch_warnings():
        warnings.showwarning = _one_line_warning(name)
        try:
            try:
                parser = build_parser(name or "")
                args, extra = parser.parse_known_args(argv)
                if extra:
                    raise ValueError(_unrecognized(parser, name, extra))
            except Exception as exc:       # a value parser that failed other than argparse's way
                if "--debug" in argv:
                    traceback.print_exc()
                return _error(name, exc)
            try:
                return args.func(args)
            except Exception as exc:
                if args.debug:
                    traceback.print_exc()
                return _error(args.command, exc)
        except KeyboardInterrupt:      # anywhere: while importing, parsing, working or reporting
            from fastattn._validate import INTERRUPTED

            print(f"fastattn{f' {name}' if name else ''}: interrupted", file=sys.stderr)
            return INTERRUPTED


def _unrecognized(parser: argparse.ArgumentParser, command: str | None, extra: list[str]) -> str:
    """The one-line error for arguments no option takes: the first unknown option with the known
    option closest to it ("unknown option --heds; did you mean --heads?"), else the stray words."""
    from fastattn._names import closest

    options = [a for a in extra if a.startswith("--")]
    if not options:
        return f"unrecognized arguments: {' '.join(extra)}"
    word = options[0].split("=", 1)[0]
    sub = next((a for a in parser._actions if a.dest == "command"), None)
    chosen = sub.choices.get(command) if sub is not None and command else parser
    known = [s for s in chosen._option_string_actions if s.startswith("--")]
    match = closest(word, known)
    ask = f"fastattn {command} --help" if command else "fastattn --help"
    return f"unknown option {word}; " + (f"did you mean {match}?" if match else
                                          f"{ask} lists the options")


def _error(command: str | None, exc: Exception) -> int:
    """Print `exc` as one line `fastattn <command>: error: …`; the exit status of bad input, 2."""
    options = sys.modules.get("fastattn.cli_options")   # loaded if it raised CommandError
    known = isinstance(exc, (ValueError, TypeError, OSError)) or (
        options is not None and isinstance(exc, options.CommandError))
    text = " ".join(str(exc).split())          # one line
    print(f"fastattn{f' {command}' if command else ''}: error: "
          f"{text if known else f'{type(exc).__name__}: {text}'}", file=sys.stderr)
    return 2


def _one_line_warning(command: str | None):
    """`warnings.showwarning` for the command line: `fastattn <command>: warning: …`, one line."""
    def show(message, category, filename, lineno, file=None, line=None) -> None:
        text = " ".join(str(message).split())
        print(f"fastattn{f' {command}' if command else ''}: warning: {text}",
              file=file or sys.stderr)

    return show


if __name__ == "__main__":
    raise SystemExit(main())
