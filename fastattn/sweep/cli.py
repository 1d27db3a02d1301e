"""`fastattn sweep` and `fastattn plot`: added to the main parser by `add_parsers(subparsers)`."""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastattn import _validate as check
from fastattn.cli_options import INTERRUPTED, CommandError, add_help, add_options
from fastattn.configs.options import LIST_GRAMMAR
from fastattn.population.stops import MEANING, Stop
from fastattn.sweep.api import plan, run_sweep
from fastattn.sweep.grid import SWEEP_DEFAULTS, Grid, axis_parser, grid_from_args, load_config
from fastattn.sweep.hooks import HOOKS, plot_kinds
from fastattn.sweep.horizon import Horizon

SWEEP_HELP = """Run one training run per point of a grid of task/model/trainer options.

Each option takes an axis, a list of values: --dim 4,8 --context 16,64 is 4 runs (the list
grammar below). --heads and --init-scale may be expressions of D and N: --heads D, --heads 2*D,
--init-scale '1e-2*sqrt(D)'.
Every point is built and checked before any run starts or --out is created (a bad value: one line,
exit 2; --dry-run shows the same). Flow runs without --t-end run to the horizon of the paper whose
theory covers the pair (Zhang: L <= (1 + converge-rel)·L*, bounded by t_end = horizon-factor × the
plateau-time estimate; Musat, Sander, Mainali: docs/sweeps.md). Sampled runs that differ only in
seeds or --lr train in one batched call where the pair has a batched trainer (He et al.'s model).
Finished runs in --out are never rerun: rerun the same command to resume. See docs/sweeps.md.

Example: fastattn sweep --model separate --dim 4,8 --context 16,64 --heads D --rank 1 --init-scale 1e-2
         --seeds 0..1 --out DIR

"""


#: a sweep setting (flag without dashes) → its check; the command line's values and a sweep
#: file's [sweep] table alike are checked before any planning
SETTINGS: dict[str, Callable[[str, Any], Any]] = {
    "workers": check.nonnegative_int, "batch": check.positive_int,
    "max_evals": check.positive_int, "max_runs": check.positive_int,
    "converge_rel": check.positive_float, "horizon_factor": check.positive_float,
    "max_run_seconds": check.positive_float,
}

#: the other settings a sweep file's [sweep] table may hold (its `seeds` is the grid's)
FILE_SETTINGS = ("out", "executor", "address", "retry_failed")

#: a grid of more runs than this is stated on stderr before planning (each run is built and checked)
STATE_SIZE_ABOVE = 100


def _cmd_sweep(args: argparse.Namespace) -> int:
    settings: dict = {}
    if args.config:
        file_grid, settings = load_config(args.config)
        known = (*SETTINGS, *FILE_SETTINGS)
        unknown = sorted(set(settings) - set(known))
        if unknown:
            from fastattn._names import closest

            match = closest(unknown[0], known)
            raise CommandError(f"sweep file {args.config}: [sweep] {unknown[0]} is no sweep "
                               "setting" + (f"; did you mean {match}?" if match else
                                            f"; the settings: {', '.join(known)}"))

    def opt(name, default=None):
        value = getattr(args, name, None)
        return value if value is not None else settings.get(name, default)

    for name, checker in SETTINGS.items():
        if opt(name) is not None:
            try:
                checker(f"--{name.replace('_', '-')}", opt(name))
            except (ValueError, TypeError):
                raise CommandError(f"--{name.replace('_', '-')} must be {_EXPECTS[checker]}; got "
                                   f"{opt(name)!r}") from None
    out = opt("out")
    if not out or not str(out).strip():
        raise CommandError("--out DIR is required (or `out` under [sweep] in the config)")
    grid = grid_from_args(args)
    if args.config:
        grid = Grid(file_grid.axes | grid.axes, file_grid.seeds if grid.seeds is None else grid.seeds)
    _check_size(grid, args.yes)
    horizon = Horizon(converge_rel=opt("converge_rel", 0.05),
                      horizon_factor=opt("horizon_factor", 100.0),
                      max_evals=int(opt("max_evals", 5_000_000)),
                      max_run_seconds=opt("max_run_seconds"))
    if args.dry_run:
        from fastattn.sweep.store import check_folder

        check_folder(Path(out))                     # a folder a real run would refuse
        items = plan(grid, horizon)     # a bad point: the same error as a real run
        for it in items:
            tr = it.spec["train"]
            print(it.key, {k: v for k, v in it.point.items()},
                  f"t_end={tr.get('t_end')} target={tr.get('target_loss')} {tr.get('integrator')}")
        print(f"{len(items)} runs")
        return 0
    batch = opt("batch")
    try:
        table = run_sweep(grid, out, executor=opt("executor", "local"), workers=opt("workers"),
                          batch=None if batch is None else int(batch), address=opt("address"),
                          horizon=horizon,
                          retry_failed=bool(opt("retry_failed", False)),
                          progress=False if args.quiet else None, max_runs=opt("max_runs"))
    except KeyboardInterrupt:
        from fastattn.sweep.store import finished_keys

        print(f"fastattn sweep: interrupted; {len(finished_keys(Path(out)))} runs finished in "
              f"{out}, rerun the same command to run the rest", file=sys.stderr)
        return INTERRUPTED
    from fastattn.sweep.store import table_size

    counts = table["status"].value_counts().to_dict()
    size = table_size(Path(out))
    print(f"this grid: {len(table)} of {table.attrs.get('n_grid', len(table))} runs finished ("
          + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())) + f"); {out}/results.parquet "
          f"holds {size} runs" + (" (other grids' runs too)" if size > len(table) else ""))
    for word in sorted(counts.keys() & set(Stop)):     # what each stop word in the counts means
        print(f"  {word}: {MEANING[Stop(word)]}")
    failed = table[table["status"] == "error"]
    for _, row in failed.head(5).iterrows():
        print(f"  failed {row['key']}: {row['error']}")
    return 0 if failed.empty else 1


_EXPECTS = {check.positive_int: "an integer >= 1", check.nonnegative_int: "an integer >= 0",
            check.positive_float: "a finite number > 0"}


def _check_size(grid: Grid, yes: bool) -> None:
    """State a large grid's size before planning it; refuse one above MAX_RUNS_UNASKED unless
    `yes`. The size is the product of the axes' lengths: nothing is listed."""
    n = len(grid)
    if n > check.MAX_RUNS_UNASKED and not yes:
        raise CommandError(f"the grid has {n} runs ({_shape(grid)}), above the limit of "
                           f"{check.MAX_RUNS_UNASKED} a command starts unasked; give --yes to plan and "
                           "run them, or shrink an axis")
    if n > STATE_SIZE_ABOVE:
        print(f"fastattn sweep: planning {n} runs ({_shape(grid)})", file=sys.stderr, flush=True)


def _shape(grid: Grid) -> str:
    return " × ".join(f"{k} {v}" for k, v in grid.shape.items())


def plot_paths(sweep_dir: str, out: str | None, kinds: list[str]) -> dict[str, Path]:
    """Where each plot kind goes: --out FILE for one kind; for several, FILE's name with the kind
    appended (fig.png → fig_duration.png, fig_heatmap.png …); no --out: DIR/plot_KIND.png."""
    from fastattn.sweep.plots import default_path

    if not out:
        return {k: default_path(sweep_dir, k) for k in kinds}
    path = Path(out)
    if len(kinds) == 1:
        return {kinds[0]: path}
    suffix = path.suffix or ".png"
    return {k: path.with_name(f"{path.stem}_{k}{suffix}") for k in kinds}


def _cmd_plot(args: argparse.Namespace) -> int:
    from fastattn.plots import check_target
    from fastattn.sweep.plots import KINDS, plot_sweep  # matplotlib: only for `fastattn plot`
    from fastattn.sweep.store import read_table

    if args.out is not None and not args.out.strip():
        raise CommandError("--out '' names no file; give a PNG path, or leave --out out for "
                           "DIR/plot_KIND.png")
    kinds = list(KINDS) if args.kind == "all" else [args.kind]
    table = read_table(args.dir)          # unreadable, or nothing to plot: exit 2, one line
    if table.empty:
        raise CommandError(f"{args.dir} holds no finished runs to plot")
    targets = plot_paths(args.dir, args.out, kinds)
    for path in targets.values():         # before any plot is drawn
        check_target(path)
    written, skipped = [], []
    for kind, out in targets.items():
        try:
            path = plot_sweep(args.dir, kind, out=out, x=args.x, y=args.y, value=args.value,
                              table=table)
        except ValueError as exc:
            if len(kinds) == 1:
                raise CommandError(f"--kind {kind}: {exc}") from None
            skipped.append(f"{kind}: {exc}")
            continue
        written.append(path)
        print(f"wrote {path}")
    for line in skipped:
        print(f"skipped {line}", file=sys.stderr)
    if not written:
        raise CommandError(f"no plot applies to the runs in {args.dir}: " + "; ".join(skipped))
    return 0


def add_parsers(subparsers) -> None:
    """Add the `sweep` and `plot` subcommands to `fastattn`'s subparsers."""
    p = subparsers.add_parser("sweep", help="run a grid of configurations; resumable Parquet table",
                              usage="fastattn sweep [CONFIG] --task T --model M [--KEY LIST ...] "
                              "--out DIR", description=SWEEP_HELP + textwrap.fill(LIST_GRAMMAR, 100),
                              formatter_class=argparse.RawDescriptionHelpFormatter, add_help=False)
    add_help(p, trainer=SWEEP_DEFAULTS)
    p.add_argument("config", nargs="?", help="a TOML (or YAML) sweep file; CLI axes override it")
    add_options(p, parse=axis_parser)
    g = p.add_argument_group("sweep")
    g.add_argument("--out", help="sweep directory (results.parquet, runs/, records/)")
    g.add_argument("--seeds", metavar="LIST",
                   help="repeat each point per seed, e.g. 0..4 or 0,3,7 (as train's): seed s sets "
                   "the init, rotation and data seeds to s (a bare K, the old count, is still 0..K-1 "
                   "with a deprecation note)")
    g.add_argument("--executor", choices=("local", "ray"), help="local process pool (default) or ray")
    g.add_argument("--workers", type=int, help="processes (default: CPU count; 0: in this process)")
    g.add_argument("--address", help="ray: address of a running cluster (default: start a local one)")
    g.add_argument("--batch", type=int,
                   help="integrate up to this many compatible flow runs per C++ call (default 1); "
                   "train up to this many batched sampled runs per call (default 64)")
    g.add_argument("--converge-rel", type=float,
                   help="flow without --target-loss: stop at L <= (1 + this)·L* (default 0.05)")
    g.add_argument("--horizon-factor", type=float,
                   help="flow without --t-end: t_end = this × theory time estimate (default 100)")
    g.add_argument("--max-evals", type=int, help="cap on gradient evaluations per run (default 5e6)")
    g.add_argument("--max-run-seconds", type=float,
                   help="wall-time budget per flow run (status max_seconds)")
    g.add_argument("--retry-failed", action="store_true", default=None,
                   help="rerun runs recorded as failed")
    g.add_argument("--max-runs", type=int, help="stop after this many new runs")
    g.add_argument("--dry-run", action="store_true", help="list the runs and their horizons; run none")
    g.add_argument("--yes", action="store_true",
                   help=f"plan and run a grid of more than {check.MAX_RUNS_UNASKED} runs without refusal")
    g.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_sweep)

    papers = "; ".join(f"{', '.join(repr(k) for k in h.plots)} ({h.paper})"
                       for h in HOOKS.values() if h.plots)
    p = subparsers.add_parser("plot", help="plots of a sweep's results table",
                              description=f"Plots from DIR/results.parquet: the papers' plots ({papers}; "
                              "docs/sweeps.md) and 'heatmap' (a value over two swept axes).")
    p.add_argument("dir", help="sweep directory")
    p.add_argument("--kind", default="all", choices=("all", *plot_kinds(), "heatmap"))
    p.add_argument("--x", help="heatmap: column on x (default: first swept axis)")
    p.add_argument("--y", help="heatmap: column on y (default: second swept axis)")
    p.add_argument("--value", default="final_loss", help="heatmap: column shown (default final_loss)")
    p.add_argument("--out", help="output PNG (default DIR/plot_KIND.png); with several kinds "
                   "(--kind all) each gets FILE's name + _KIND")
    p.set_defaults(func=_cmd_plot)
