"""Who holds the cores: the run's foreground computations (an ONNX Runtime run, a torch forward)
and the background work that must not slow them down (the inspector's initializer figures,
``prepare.details``).

ONNX Runtime and torch split a run over every core and wait for the slowest part: a background
thread that takes one core from them slows the whole run by far more than its own time (on a 1B
model, 15 s of figures beside the observer check made that check 11 s longer).  So the background
work waits while any foreground computation runs (``wait_idle``, called between small steps) and
fills the gaps between them: session builds, the Python between two runs.  Process-wide, as the
cores are."""
from __future__ import annotations

import contextlib
import threading
from typing import Iterator, Optional

_cond = threading.Condition()
_busy = 0


@contextlib.contextmanager
def foreground() -> Iterator[None]:
    """Mark a computation that wants every core for as long as it runs."""
    global _busy
    with _cond:
        _busy += 1
    try:
        yield
    finally:
        with _cond:
            _busy -= 1
            if not _busy:
                _cond.notify_all()


def wait_idle(urgent: Optional[threading.Event] = None, poll: float = 0.05) -> None:
    """Return once no foreground computation runs, or at once when ``urgent`` is set (someone
    waits for the background work: it then runs at full speed)."""
    with _cond:
        while _busy and not (urgent is not None and urgent.is_set()):
            _cond.wait(poll)     # ``urgent`` is set without notifying: looked at every ``poll`` s
