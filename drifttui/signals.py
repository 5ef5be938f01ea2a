"""SIGTERM and SIGHUP (a CI timeout, ``timeout``, ``docker stop``, a closed terminal): the one place
that installs a handler for both and puts the previous handlers back (the CLI unwinds the run,
the TUI quits the app); and ``end_now``, the one way drifttui ends its own process early."""
from __future__ import annotations

import contextlib
import signal
from typing import Any, Callable, Iterator

STOP_SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None)


@contextlib.contextmanager
def on_stop_signals(handler: Callable[[int, Any], None]) -> Iterator[None]:
    """``handler`` for SIGTERM and SIGHUP inside the block; outside the main thread (embedded use)
    signals are left alone."""
    previous = {}
    for s in STOP_SIGNALS:
        try:
            previous[s] = signal.signal(s, handler)
        except (ValueError, OSError):   # not the main thread
            pass
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def end_now(code: int) -> None:
    """End the process now: output flushed, the exit handlers run (they remove the engine's temp
    folders, ``weakref.finalize``), then no interpreter teardown (freeing a big model's tensors and
    ORT sessions one by one took seconds after the work was done).  Only the command's own entry
    points call it (``cli.entry``, the TUI's quit), never the Python API."""
    import atexit
    import os
    import sys

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):     # a closed pipe: nothing more can be said on it
            pass
    atexit._run_exitfuncs()
    os._exit(code)
