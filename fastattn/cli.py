"""The ``fastattn`` command line: one entry point, one subcommand per job."""

from __future__ import annotations

import argparse
import json
import sys


def _cmd_info(args: argparse.Namespace) -> int:
    from fastattn.info import format_info, info

    report = info()
    print(json.dumps(report, indent=2) if args.json else format_info(report))
    return 0


def _cmd_reproduce(args: argparse.Namespace) -> int:
    print("fastattn reproduce: figure reproductions are not yet available in this version "
          "(they arrive with the Zhang et al. 2025 reproduction work).", file=sys.stderr)
    return 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fastattn", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("info", help="versions, C++ core, kernel backends and devices")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_cmd_info)

    p = sub.add_parser("reproduce", help="reproduce a published figure with the theory overlaid")
    p.add_argument("name", nargs="?", help="figure name, e.g. zhang2025-fig3")
    p.add_argument("--out", default="out", help="output directory (default: out)")
    p.add_argument("--quick", action="store_true", help="small settings that finish in seconds")
    p.add_argument("--list", action="store_true", help="list the available figures")
    p.set_defaults(func=_cmd_reproduce)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
