"""The ``fastattn`` command line: one entry point, one subcommand per job."""

from __future__ import annotations

import argparse
import dataclasses
import json

from fastattn.cli_options import add_options


def _cmd_info(args: argparse.Namespace) -> int:
    from fastattn.info import format_info, info

    report = info()
    print(json.dumps(report, indent=2) if args.json else format_info(report))
    return 0


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from fastattn import experiments

    if args.list or not args.name:
        for name, recipe in sorted(experiments.FIGURES.items()):
            opts = "; ".join(f"{k}: {'|'.join(map(str, v))}" for k, v in recipe.options.items())
            print(f"{name:<22} {recipe.title}" + (f"  [options {opts}]" if opts else ""))
        return 0 if args.list else 2
    options = dict(o.split("=", 1) for o in args.option)
    doc = experiments.reproduce(args.name, args.out, quick=args.quick, **options)
    print(f"{args.name}: {len(doc['runs'])} runs in {doc['wall_time']:.1f} s")
    print(f"wrote {args.out}/{args.name}.png and {args.out}/{args.name}.json")
    return 0


def _cmd_train(args: argparse.Namespace) -> int:
    from pathlib import Path

    from fastattn import plots
    from fastattn.cli_options import build_run, collect
    from fastattn.training import train

    task, model, config = build_run(collect(args))
    if config.progress is None and args.quiet:
        config = dataclasses.replace(config, progress=False)
    traj = train(model, task, config)
    out = Path(args.out)
    record = traj.save(out / args.name)
    fig, ax = plots.plt.subplots(figsize=(6, 4))
    plots.loss_axes(ax, log_time=True)
    plots.plot_loss(ax, traj, label=f"{model.kind} ({config.method})")
    d, h, r = model.dims
    ax.set_title(f"{task.kind}: D={d}; {model.kind}: H={h}, R={r}")
    ax.legend()
    png = plots.save(fig, out / f"{args.name}.png")
    print(f"{config.method}: status={traj.status}, final loss={traj.final_loss:.6g}, "
          f"evaluations={traj.n_evals}, wall time={traj.wall_time:.3g} s")
    print(f"wrote {record}, {record.with_suffix('.npz')} and {png}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fastattn", description=__doc__)
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
    p.add_argument("--name", default="run", help="file name stem (default: run)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
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
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
