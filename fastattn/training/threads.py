"""How many threads a run uses by default: small work on one thread, large work on this process's
share of the machine.

The share is the cores this process may run on (its CPU affinity) divided by the number of
workers sharing them: `FASTATTN_WORKERS` (set by a sweep executor for the processes it starts;
default 1). Small ops (the population objectives' d × d algebra, batches of fewer than 2²⁰
numbers, the fused He step) run slower split across threads, and two processes that each take
every core oversubscribe the machine (docs/performance.md, "Threads").
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

#: work of fewer numbers than this per step runs on one thread by default
SMALL_WORK = 2**20


def machine_share() -> int:
    """Cores of this process's affinity mask divided among `FASTATTN_WORKERS` workers (>= 1)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:                          # no affinity API (macOS)
        cores = os.cpu_count() or 1
    try:
        workers = max(1, int(os.environ.get("FASTATTN_WORKERS", "1")))
    except ValueError:
        raise ValueError("FASTATTN_WORKERS must be a positive integer; got "
                         f"{os.environ['FASTATTN_WORKERS']!r}") from None
    return max(1, cores // workers)


def default_threads(work: int) -> int:
    """Threads for work of `work` numbers per step: 1 if small, else the machine share."""
    return 1 if work < SMALL_WORK else machine_share()


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Torch intra-op threads set to n inside, restored after."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
