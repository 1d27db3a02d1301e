"""Command-line options of the AOT compile report (``fastattn kernels``,
``python -m fastattn.triton_kernels.aot_cli``), kept free of torch and triton imports so that building
the ``fastattn`` parser stays cheap."""

from __future__ import annotations

import argparse
import sys

__all__ = ["add_arguments", "add_parser", "main", "run"]

DESCRIPTION = ("Compile every Triton kernel of the library at every launch configuration its "
               "launchers choose, for an NVIDIA target, without a GPU; report registers, spills, "
               "shared memory, occupancy and instruction mix. Exit 1 if a configuration does not "
               "compile, spills, or holds a dot the compiler invented.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The report's options."""
    parser.add_argument("--target", action="append", choices=["sm_80", "sm_90"],
                        help="GPU target (repeatable; default sm_90)")
    parser.add_argument("--kernel", action="append", metavar="NAME",
                        help="only kernels named PACKAGE or PACKAGE.FUNCTION, e.g. pe_attention "
                        "(repeatable; --list shows them)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--list", action="store_true", help="list the kernels and exit")
    parser.add_argument("--quick", action="store_true",
                        help="one configuration per kernel (the first the workloads plan: the "
                        "library's shapes, float32) instead of all")
    parser.add_argument("--jobs", type=int, default=1, metavar="N",
                        help="compile in N processes (default 1)")


def add_parser(sub) -> argparse.ArgumentParser:
    """Register ``kernels`` on a subparsers object."""
    p = sub.add_parser("kernels", help="AOT-compile the Triton kernels for sm_80/sm_90 and report "
                       "their resource use (no GPU needed)", description=DESCRIPTION)
    add_arguments(p)
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Run the report for parsed ``args``."""
    from fastattn.triton_kernels.aot import kernel_names, run_report

    if args.jobs < 1:
        raise ValueError(f"--jobs must be at least 1; got {args.jobs}")
    if args.kernel:                     # an unknown name would compile nothing and exit 0
        names = kernel_names()
        unknown = [k for k in args.kernel if not any(n == k or n.startswith(k + ".") for n in names)]
        if unknown:
            raise ValueError(f"--kernel {unknown[0]} is no kernel or package of kernels; "
                             f"`fastattn kernels --list` lists them")
    return run_report(targets=args.target or ["sm_90"], kernels=args.kernel, as_json=args.json,
                      list_only=args.list, jobs=args.jobs, quick=args.quick)


def main(argv: list[str] | None = None) -> int:
    """``python -m fastattn.triton_kernels.aot_cli``: the options of ``fastattn kernels``."""
    parser = argparse.ArgumentParser(prog="python -m fastattn.triton_kernels.aot_cli",
                                     description=DESCRIPTION)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
