"""The `fastattn reproduce` and `fastattn report` subcommands.

`reproduce NAME` runs one figure; `reproduce --all` (or `--paper P`) runs many into one folder,
resumably, then measures the papers' claims (`DIR/claims.json`) and writes the report page
(`DIR/index.html`). `report DIR` rebuilds the ledger and page from a folder; `report --compare OLD
NEW` lists the claims whose measured value or status changed between two folders.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

#: exit status of a batch in which some figure failed (the others ran)
FAILED = 1


class _Error(ValueError):
    """Bad input: `fastattn.cli.main` prints it as one line and exits 2."""


def _list() -> int:
    from fastattn import experiments
    from fastattn.experiments.registry import figure_order

    for name in sorted(experiments.FIGURES, key=figure_order):
        recipe = experiments.FIGURES[name]
        opts = "; ".join(f"{k}: {'|'.join(map(str, v))}" for k, v in recipe.options.items())
        print(f"{name:<22} {recipe.title}" + (f"  [options {opts}]" if opts else ""))
    return 0


def _one(args: argparse.Namespace, device) -> int:
    from fastattn import experiments
    from fastattn.experiments.batch import check_figure_output
    from fastattn.experiments.registry import device_type

    experiments.get(args.name)
    options = {}
    for o in args.option:
        if "=" not in o:
            raise _Error(f"--option {o!r} must be KEY=VALUE, e.g. heads=code")
        key, value = o.split("=", 1)
        options[key] = value
    check_figure_output(Path(args.out), args.name, args.quick, args.overwrite,
                        device_type(device))
    doc = experiments.reproduce(args.name, args.out, quick=args.quick,
                                resume=not args.overwrite, device=device, **options)
    print(f"{args.name}: {len(doc['runs'])} runs in {doc['wall_time']:.1f} s")
    print(f"wrote {args.out}/{args.name}.png and {args.out}/{args.name}.json")
    return 0


def _all(args: argparse.Namespace, got: list[int], device) -> int:
    from fastattn.experiments import batch
    from fastattn.experiments.claims import headline
    from fastattn.experiments.report import compute_time, write_report

    if args.option:
        raise _Error("--option applies to one figure (fastattn reproduce NAME --option K=V), "
                     "not to --all/--paper")
    names = batch.select(args.paper)
    out = Path(args.out)
    # one line per figure as it ends, piped or not: a batch runs for minutes between figures
    printer = None if args.quiet else batch.progress_printer()

    def report(k: int, n: int, outcome: batch.Outcome) -> None:
        if printer is not None:
            printer(k, n, outcome)
        if got:                     # a signal something swallowed: no further figure starts
            raise KeyboardInterrupt

    result = batch.run_all(names, out, args.quick, workers=args.workers, overwrite=args.overwrite,
                           report=report, device=None if device is None else str(device))
    ledger, page = write_report(out)
    counts: dict[str, int] = {}
    for claim in ledger:
        counts[claim["status"]] = counts.get(claim["status"], 0) + 1
    n_done = sum(o.status == "done" for o in result.outcomes)
    n_cached = sum(o.status == "cached" for o in result.outcomes)
    print(f"{len(names)} figures: {n_done} computed, {n_cached} already finished, "
          f"{len(result.failed)} failed; this command took {result.wall_time:.1f} s; the folder's "
          f"figures took {compute_time(out):.1f} s to compute")
    print("claims: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    print(headline(ledger))
    print(f"wrote {out / 'claims.json'} and {page}")
    for o in result.failed:
        print(f"FAILED {o.name}: {o.error}", file=sys.stderr)
    return FAILED if result.failed else 0


def _cmd_reproduce(args: argparse.Namespace) -> int:
    """Ctrl-C or SIGTERM: one line, the batch manifest updated (`batch.run_all`), exit 128 + the
    signal's number (130, 143); a signal that something swallowed still stops the batch after
    the figure in flight."""
    got: list[int] = []
    try:
        with _signals_interrupt(got):
            code = _reproduce(args, got)
            if got:                   # swallowed on the way (an "Exception ignored in ..."): stop
                raise KeyboardInterrupt
            return code
    except KeyboardInterrupt:
        signum = got[0] if got else signal.SIGINT
        print(f"fastattn reproduce: interrupted ({signal.Signals(signum).name}); finished figures "
              f"and runs are kept: rerun the same command to continue", file=sys.stderr)
        return 128 + signum


@contextlib.contextmanager
def _signals_interrupt(got: list[int]) -> Iterator[None]:
    """Within the block SIGINT and SIGTERM raise KeyboardInterrupt and are noted in `got` (a
    trainer turns the interrupt into an "interrupted" run; the batch stops)."""
    def interrupt(signum: int, frame: object) -> None:
        got.append(signum)
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {s: signal.signal(s, interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def _reproduce(args: argparse.Namespace, got: list[int]) -> int:
    from fastattn.cli_options import step_device

    if args.list:
        return _list()
    if args.workers < 1:                # every path: one figure ignored the value
        raise _Error(f"--workers must be at least 1; got {args.workers}")
    device = step_device(args.device)
    if args.all or args.paper:
        if args.name:
            raise _Error(f"give a figure name or --all/--paper, not both (got {args.name!r})")
        return _all(args, got, device)
    if not args.name:
        raise _Error("give a figure name (PAPER-FIGURE), --paper NAME or --all; "
                     "--list lists them")
    return _one(args, device)


def _cmd_report(args: argparse.Namespace) -> int:
    from fastattn.experiments.claims import headline
    from fastattn.experiments.report import compare, tally_text, write_report

    if args.compare:
        old, new = (Path(p) for p in args.compare)
        for folder in (old, new):
            if not (folder / "claims.json").exists():
                raise _Error(f"--compare: {folder / 'claims.json'} does not exist (a folder "
                             "written by fastattn reproduce --all)")
        changes = compare(json.loads((old / "claims.json").read_text()),
                          json.loads((new / "claims.json").read_text()))
        for line in changes:
            print(line)
        print(f"{len(changes)} claims changed between {old} and {new}")
        return 0
    if args.mutations is not None:
        return _mutations(args)
    if not args.dir:
        raise _Error("give a folder written by fastattn reproduce, or --compare OLD NEW")
    folder = Path(args.dir)
    if not folder.is_dir():
        raise _Error(f"{folder} is not a folder")
    from fastattn import papers
    from fastattn.outputs import WHAT, detect_kind

    # a report written into another kind of folder marks it as reproduce's, and the command that
    # owns the folder (a sweep resuming) then refuses it
    kind = detect_kind(folder)
    if kind not in (None, "reproduce"):
        raise _Error(f"{folder} is {WHAT[kind]}, not one written by fastattn reproduce: give the "
                     "folder fastattn reproduce wrote")
    if kind is None and not any(path.name.split("-")[0] in papers.names()
                                for path in folder.glob("*-*.json")):
        raise _Error(f"{folder} holds no figure written by fastattn reproduce: run `fastattn "
                     f"reproduce FIGURE --out {folder}` first, or give the folder it wrote")
    if args.docs:
        docs = Path(args.docs)
        if not (docs.is_dir() and os.access(docs, os.W_OK)):
            raise _Error(f"--docs {docs}: not a writable folder; give the docs/ folder whose "
                         "pages carry the claims ledger blocks")
    ledger, page = write_report(folder)
    print(f"{len(ledger)} claims; wrote {folder / 'claims.json'} and {page}")
    print(headline(ledger))
    print(tally_text(ledger))
    if args.docs:
        from fastattn.experiments.report import folder_mode, update_docs

        mode = folder_mode(folder)
        revisions: dict[str, set[str]] = {}       # papers with figures here → their revisions
        for path in folder.glob("*-*.json"):
            if path.name.split("-")[0] not in papers.names():   # the manifest, a sweep's table, ...
                continue
            meta = json.loads(path.read_text()).get("meta", {})
            revisions.setdefault(path.name.split("-")[0], set()).add(
                (meta.get("git_revision") or "unknown")[:10])
        for paper, revs in sorted(revisions.items()):
            for path in update_docs(Path(args.docs), ledger, mode, " + ".join(sorted(revs)),
                                    {paper}):
                print(f"wrote the claims ledger block of {path}")
    return 0


def _mutations(args: argparse.Namespace) -> int:
    """`report DIR --mutations [KEY ...]`: plant each bug in a copy, rerun its quick figures into
    DIR/<key>/, list the claims that flipped (DIR/mutations.json); exit 1 if a bug flips none."""
    from fastattn.experiments import mutations
    from fastattn.training.records import atomic_write

    try:
        chosen = mutations.get(args.mutations or None)
    except ValueError as exc:
        raise _Error(f"--mutations: {exc}") from None
    if not args.dir:
        raise _Error("--mutations needs a folder for the rerun figures: fastattn report DIR "
                     "--mutations")
    work = Path(args.dir)
    if work.exists() and not work.is_dir():
        raise _Error(f"{work} is not a folder")
    print(f"{len(chosen)} planted bugs; baseline and planted quick figures under {work}")
    results = mutations.check(chosen, work, report=print)
    atomic_write(work / "mutations.json", lambda fh: fh.write(json.dumps(results, indent=2)), "w")
    holes = [r["key"] for r in results if not r["flipped"]]
    print(f"{len(results) - len(holes)} of {len(results)} planted bugs flipped a claim"
          + (f"; none flipped by {holes}" if holes else "") + f"; wrote {work / 'mutations.json'}")
    return FAILED if holes else 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Register `reproduce` and `report` on the CLI's subparsers."""
    from fastattn import papers

    p = sub.add_parser(
        "reproduce", help="reproduce published figures with the theory overlaid, and the claims",
        description="Reproduce one figure (NAME), a paper's figures (--paper) or all of them (--all) "
        "into --out. Many figures: resumable (finished figures are skipped), failures are listed at "
        "the end (exit 1), and the folder gets claims.json (each claim of the papers measured) and "
        "index.html (the report page). One figure already in --out is refused unless --overwrite.")
    p.add_argument("name", nargs="?", help="figure name, PAPER-FIGURE (--list lists them)")
    p.add_argument("--all", action="store_true", help="every listed figure")
    p.add_argument("--paper", action="append", default=[],
                   help=f"every figure of this paper (repeatable): {', '.join(papers.names())}")
    p.add_argument("--workers", type=int, default=1,
                   help="figures computed at once, one process each (default 1); with --device, "
                   "each process steps on the GPU in turn")
    p.add_argument("--device", metavar="DEVICE",
                   help="the runs the fused He step trains (kind 'batched') step on this GPU "
                   "(e.g. cuda) with its Triton kernels and CUDA graphs instead of the C++ core; "
                   "the other runs keep their engine. Records, figures and the folder say so, and "
                   "a folder holds one engine's runs (the bits differ in rounding): neither "
                   "engine's records are reused for the other")
    p.add_argument("--out", default="out", help="output directory (default: out)")
    p.add_argument("--quick", action="store_true", help="small settings that finish in seconds")
    p.add_argument("--overwrite", action="store_true",
                   help="recompute finished figures, also of the other mode (quick/full)")
    p.add_argument("--quiet", action="store_true",
                   help="no progress lines (one per figure on stderr, on a terminal or piped)")
    p.add_argument("--list", action="store_true", help="list the available figures")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a recipe option of one figure, e.g. heads=code (see --list)")
    p.set_defaults(func=_cmd_reproduce)

    p = sub.add_parser("report", help="the claims ledger and report page of a reproduce folder",
                       description="Rebuild DIR/claims.json and DIR/index.html from a folder "
                       "written by fastattn reproduce, or compare two such folders' claims.")
    p.add_argument("dir", nargs="?", help="folder written by fastattn reproduce")
    p.add_argument("--docs", metavar="DOCS_DIR",
                   help="also write the ledger table of each paper with figures in DIR into "
                   "DOCS_DIR/<paper>.md (between the claims-ledger markers)")
    p.add_argument("--compare", nargs=2, metavar=("OLD_DIR", "NEW_DIR"),
                   help="list claims whose measured value or status changed from OLD to NEW")
    p.add_argument("--mutations", nargs="*", metavar="KEY",
                   help="plant each paper's planted bugs (its manifest's mutations; or those "
                   "named) in a "
                   "temporary copy of the package, rerun the quick figures it affects into DIR/KEY, "
                   "and list the claims that flipped (DIR/mutations.json; exit 1 if a bug flips "
                   "none)")
    p.set_defaults(func=_cmd_report)
