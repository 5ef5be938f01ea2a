"""Progress reports and cancellation: owned by the engine, re-exported by ``drifttui.api``."""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, Optional

from drifttui.errors import Cancelled

if TYPE_CHECKING:   # pragma: no cover
    from drifttui.core.result import Result


@dataclass(frozen=True)
class Progress:
    stage: str                 # "load", "export", "map", "observer", "sessions", "samples", "local", "done", "step"
    done: int = 0
    total: int = 0
    message: str = ""
    partial: Optional["Result"] = None   # per-layer results so far (after the first sample)
    eta: Optional[float] = None          # seconds the rest of the stage should take (samples), when known
    elapsed: Optional[float] = None      # a heartbeat of an opaque call (the export): seconds since it began


ProgressFn = Callable[[Progress], None]


class CancelToken:
    """Checked by the engine between samples and between layers."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        if self._event.is_set():
            raise Cancelled()


def no_progress(_: Progress) -> None:
    return None


HEARTBEAT_EVERY = 2.0     # seconds between two heartbeats of an opaque call (the CLI logs one per ~10 s)


@contextmanager
def heartbeat(progress: ProgressFn, stage: str, message: str, every: float = HEARTBEAT_EVERY) -> Iterator[None]:
    """Say ``message`` now, then again every ``every`` seconds with the time since (``Progress.elapsed``)
    until the block ends: an opaque call (the export, 17-24 s) is never silent.  The heartbeats come
    from a daemon thread; the block itself runs on the caller's thread."""
    progress(Progress(stage, message=message))
    stop = threading.Event()
    start = time.monotonic()

    def beat() -> None:
        while not stop.wait(every):
            progress(Progress(stage, message=message, elapsed=time.monotonic() - start))

    thread = threading.Thread(target=beat, name=f"drifttui-{stage}-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


class Estimate:
    """Seconds left of a counted stage: the engine's own estimate (``Progress.eta``, the
    samples) or, for counted steps (``done`` of ``total``), the pace of the steps run so far.
    None until a first sample or step has run: no guess before there is a measurement."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._base: dict[tuple[str, int], tuple[float, int]] = {}

    def __call__(self, p: Progress) -> Optional[float]:
        if p.eta is not None:
            return p.eta if p.done > 0 else None
        if not p.total or p.done >= p.total:
            return None
        key, now = (p.stage, p.total), self._clock()
        base = self._base.get(key)
        if base is None or p.done < base[1]:        # a new counted stage (or the same one again)
            self._base[key] = (now, p.done)
            return None
        start, first = base
        if p.done == first or now <= start:
            return None
        return (now - start) / (p.done - first) * (p.total - p.done)


def duration(seconds: float) -> str:
    """A time left, rounded the way people say it: "8 s", "40 s", "3 min"."""
    if seconds < 10:
        return f"{max(1, round(seconds))} s"
    if seconds < 90:
        return f"{round(seconds / 5) * 5:.0f} s"
    return f"{seconds / 60:.0f} min"
