"""pytest-benchmark groups per (op, shape, pass), and the same three as data in ``extra_info``.

A benchmark calls :func:`label` once: its group (what ``--benchmark-group-by=group`` puts in one
table, and ``--benchmark-compare`` compares within) names the op, the shape and the pass, so the
implementations of one comparison sit side by side; ``extra_info`` carries ``op``, ``shape`` (a
dict of named sizes), ``pass`` and ``impl``, so that tables (bench/gpu_table.py) read fields of the
saved JSON instead of parsing test names. Comparing revisions: docs/benchmarks.md, "Comparing
revisions".
"""

from __future__ import annotations

from typing import Any

FIELDS = ("op", "shape", "pass", "impl")


def group_name(op: str, shape: dict[str, int], pass_: str, **setting: Any) -> str:
    """``"icl_readout (B=1024, N=32, D=4, H=4) fwd"``, then any setting (``threads=2``)."""
    sizes = ", ".join(f"{k}={v}" for k, v in shape.items())
    return " ".join([f"{op} ({sizes}) {pass_}", *(f"{k}={v}" for k, v in setting.items())])


def label(benchmark: Any, op: str, shape: dict[str, int], pass_: str, impl: str,
          **setting: Any) -> None:
    """Put ``benchmark`` (the pytest-benchmark fixture) in the group of (op, shape, pass, setting)
    and record the four FIELDS and the setting in its ``extra_info``.

    ``setting`` holds what, besides the shape, must match for two implementations to be compared
    (threads, steps per call); ``impl`` is what differs within the group.
    """
    benchmark.group = group_name(op, shape, pass_, **setting)
    benchmark.extra_info.update(dict(zip(FIELDS, (op, dict(shape), pass_, impl), strict=True)),
                                **setting)
