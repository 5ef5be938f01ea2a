"""SIGTERM and SIGHUP (a CI timeout, ``timeout``, ``docker stop``, a closed terminal): the one place
that installs a handler for both and puts the previous handlers back (the CLI unwinds the run,
the TUI quits the app)."""
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
