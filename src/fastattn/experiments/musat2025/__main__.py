"""`python -m fastattn.experiments.musat2025 NAME [--quick] [--out DIR]`."""

from __future__ import annotations

import argparse

from fastattn.experiments.musat2025.figures import FIGURES, run_figure


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fastattn.experiments.musat2025", description=__doc__)
    parser.add_argument("name", choices=sorted(FIGURES), help="figure name")
    parser.add_argument("--quick", action="store_true", help="small settings (< 15 s)")
    parser.add_argument("--out", default="out", help="output directory (default: out)")
    args = parser.parse_args(argv)
    doc = run_figure(args.name, args.out, quick=args.quick)
    print(f"{args.name}: {doc['wall_time']:.1f} s; wrote {args.out}/{args.name}.png and .json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
