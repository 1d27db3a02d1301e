"""The ``fastattn`` command line: one entry point, one subcommand per job."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import traceback
from pathlib import Path

from fastattn.cli_options import INTERRUPTED, CommandError, add_options, cli_names


def _cmd_info(args: argparse.Namespace) -> int:
    from fastattn.info import format_info, info

    report = info()
    print(json.dumps(report, indent=2) if args.json else format_info(report))
    return 0


def check_output(out: Path, name: str, overwrite: bool) -> None:
    """Refuse, before any work, an output that cannot be written or would replace a run record."""
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


def _cmd_train(args: argparse.Namespace) -> int:
    from fastattn import plots
    from fastattn.cli_options import build_run, collect
    from fastattn.training import Checkpointing, train
    from fastattn.training.interrupt import terminate_as_interrupt

    task, model, config = build_run(collect(args))
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
    d, h, r = model.dims
    ax.set_title(f"{task.kind}: D={d}; {model.kind}: H={h}, R={r}")
    ax.legend()
    png = plots.save(fig, out / f"{args.name}.png")
    final = (f"final population loss={float(exact[-1]):.6g} (batch {traj.final_loss:.6g})"
             if exact is not None and len(exact) else f"final loss={traj.final_loss:.6g}")
    print(f"{config.method}: status={traj.status}, {final}, "
          f"evaluations={traj.n_evals}, wall time={traj.wall_time:.3g} s")
    print(f"wrote {record}, {record.with_suffix('.npz')} and {png}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fastattn", description=__doc__)
    parser.add_argument("--debug", action="store_true",
                        help="show the Python traceback of an error (also after the subcommand)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("info", help="versions, C++ core, kernel backends and devices")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_cmd_info)

    p = sub.add_parser("train", help="train one model on one task; writes a run record and a plot",
                       description="Train one model on one task. Every task, model and trainer "
                       "option is below, under the family it applies to; e.g. fastattn train "
                       "--task linear_regression --model separate --dim 4 --heads 5 --rank 1 "
                       "--context 31 --spectrum 0.4,0.3,0.2,0.1 --init 1e-2 --method flow "
                       "--time 2000 --out DIR")
    add_options(p)
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

    from fastattn.cli_reproduce import add_parsers as add_reproduce_parsers

    add_reproduce_parsers(sub)
    from fastattn.sweep.cli import add_parsers as add_sweep_parsers

    add_sweep_parsers(sub)
    for command in sub.choices.values():
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                             help="show the Python traceback of an error")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand. Bad input (and any other error) prints one line `fastattn <cmd>:
    error: …` and exits 2 (`--debug`: the traceback too). Ctrl-C exits 130 with one line, unless
    the command ends the work itself (`train` saves the interrupted run and exits 0)."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print(f"fastattn {args.command}: interrupted", file=sys.stderr)
        return INTERRUPTED
    except Exception as exc:
        if args.debug:
            traceback.print_exc()
        known = isinstance(exc, (CommandError, ValueError, TypeError, OSError))
        text = str(exc) if args.command not in ("train", "sweep") else cli_names(str(exc))
        text = " ".join(text.split())          # one line
        print(f"fastattn {args.command}: error: "
              f"{text if known else f'{type(exc).__name__}: {text}'}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
