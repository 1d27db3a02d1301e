"""SIGTERM handled as Ctrl-C: a run ended by either keeps its state and its record."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Within the block SIGTERM raises KeyboardInterrupt, as SIGINT does, so a trainer stops with
    status "interrupted" and a sweep stops its queue. Only the main thread can own signal
    handlers; elsewhere the block runs unchanged."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
