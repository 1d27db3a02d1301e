"""The ``fastattn`` command line: one entry point, one subcommand per job."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import traceback
from pathlib import Path

from fastattn.cli_options import INTERRUPTED, CommandError, add_options, cli_names


def _cmd_info(args: argparse.Namespace) -> int:
    from fastattn.info import format_info, info

    report = info()
    print(json.dumps(report, indent=2) if args.json else format_info(report))
    return 0


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from fastattn import experiments

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


#: exit status of `fastattn train` when a run diverged (its record and plot are still written)
DIVERGED = 3


def run_list(text: str, parse: type = int) -> list:
    """"0-4" → [0, 1, 2, 3, 4]; "0,2,5" → [0, 2, 5] (the --seeds / --lrs lists)."""
    if parse is int and re.fullmatch(r"\d+-\d+", text.strip()):
        lo, hi = (int(v) for v in text.split("-"))
        return list(range(lo, hi + 1))
    return [parse(v) for v in text.split(",") if v.strip()]


def _cmd_train(args: argparse.Namespace) -> int:
    from fastattn.cli_options import build_run, collect
    from fastattn.training import Checkpointing, train, train_many
    from fastattn.training.interrupt import terminate_as_interrupt

    spec = collect(args)
    runs = _expand_runs(spec, args)
    out = Path(args.out)
    for name, _ in runs:
        check_output(out, name, args.overwrite or args.resume)
    built = [(name, *build_run(s)) for name, s in runs]
    if args.quiet:
        built = [(n, t, m, dataclasses.replace(c, progress=False)) for n, t, m, c in built]
    if len(built) > 1:
        if args.resume:
            raise CommandError("--resume continues one run; it takes no --seeds or --lrs lists")
        with terminate_as_interrupt():
            trajs = train_many([m for _, _, m, _ in built], [t for _, t, _, _ in built],
                               [c for *_, c in built])
    else:
        name, task, model, config = built[0]
        checkpoint = None
        if config.method in ("sgd", "adam"):
            checkpoint = Checkpointing(out / f"{name}.ckpt", every=args.checkpoint_every,
                                       resume=args.resume)
            if args.resume and not Path(checkpoint.path).exists():
                raise CommandError(f"--resume: no checkpoint {checkpoint.path} (written by an "
                                   "interrupted sgd/adam run of the same --out and --name)")
        elif args.resume:
            raise CommandError(f"--resume continues sgd/adam runs; --method {config.method} has "
                               "no checkpoints")
        with terminate_as_interrupt():
            trajs = [train(model, task, config, checkpoint=checkpoint)]
    status = 0
    for (name, task, model, config), traj in zip(built, trajs, strict=True):
        status = max(status, _report_run(out, name, task, model, config, traj))
    return status


def _expand_runs(spec: dict, args: argparse.Namespace) -> list[tuple[str, dict]]:
    """(record name, option values) of each run: one, or one per --seeds × --lrs value."""
    seeds = run_list(args.seeds) if args.seeds is not None else [None]
    lrs = run_list(args.lrs, float) if args.lrs is not None else [None]
    if not seeds or not lrs:
        raise CommandError("--seeds and --lrs take a list, e.g. --seeds 0-4 or --lrs 1e-3,1e-2")
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


def _report_run(out: Path, name: str, task, model, config, traj) -> int:
    """Write a run's record and plot, print its summary; the exit status it calls for."""
    from fastattn import plots

    record = traj.save(out / name)
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
    if traj.status == "diverged":
        if config.method == "flow":
            where = f"t = {float(traj.time[-1]):.4g}"
        else:
            where = f"step {traj.diverged_at if traj.diverged_at is not None else traj.step[-1]:.0f}"
        ax.text(0.5, 0.5, f"diverged at {where}", transform=ax.transAxes, ha="center",
                va="center", color="C3", fontsize=14)
    ax.legend()
    png = plots.save(fig, out / f"{name}.png")
    final = (f"final population loss={float(exact[-1]):.6g} (batch {traj.final_loss:.6g})"
             if exact is not None and len(exact) else f"final loss={traj.final_loss:.6g}")
    print(f"{config.method}: status={traj.status}, {final}, "
          f"evaluations={traj.n_evals}, wall time={traj.wall_time:.3g} s")
    print(f"wrote {record}, {record.with_suffix('.npz')} and {png}")
    if traj.status == "diverged":
        print(f"fastattn train: {name} diverged at {where} (the record keeps the last state "
              f"before it); exit status {DIVERGED}", file=sys.stderr)
        return DIVERGED
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
    p.add_argument("--quiet", action="store_true",
                   help="no progress bar or flow progress line (shown only on a terminal)")
    # runs trained together (the fused He step batches them; one record per run)
    p.add_argument("--seeds", metavar="LIST",
                   help="train one run per seed, e.g. 0-4 or 0,3,7: run s takes --init-seed s and "
                   "--data-seed s; records NAME-seedS (runs the fused He step can train are "
                   "trained batched in one process)")
    p.add_argument("--lrs", metavar="LIST",
                   help="train one run per learning rate, e.g. 1e-3,3e-3 (records NAME-lrX; with "
                   "--seeds, every pair)")
    p.epilog = ("exit status: 0 done (or interrupted and saved), 2 bad input, 3 a run diverged "
                "(its record and plot are written; docs/performance.md)")
    p.set_defaults(func=_cmd_train)

    p = sub.add_parser("reproduce", help="reproduce a published figure with the theory overlaid")
    p.add_argument("name", nargs="?", help="figure name, e.g. zhang2025-fig3")
    p.add_argument("--out", default="out", help="output directory (default: out)")
    p.add_argument("--quick", action="store_true", help="small settings that finish in seconds")
    p.add_argument("--list", action="store_true", help="list the available figures")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a recipe option, e.g. heads=code (see --list)")
    p.set_defaults(func=_cmd_reproduce)
    from fastattn.sweep.cli import add_parsers as add_sweep_parsers

    add_sweep_parsers(sub)
    for command in sub.choices.values():
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                             help="show the Python traceback of an error")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand. Bad input (and any other error) prints one line `fastattn <cmd>:
    error: …` and exits 2 (`--debug`: the traceback too). Ctrl-C exits 130 with one line, unless
    the command ends the work itself (`train` saves the interrupted run and exits 0). `train`
    exits 3 (DIVERGED) when a run diverged, after writing its record and plot."""
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
