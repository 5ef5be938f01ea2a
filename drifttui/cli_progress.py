"""The progress a command prints on stderr while it works.

* stderr a terminal: one line per stage, the sample count rewritten in place with the time left
  (``samples 5/20, about 10 s left``) once a first sample has run; a counted step (the tolerance
  sweep, the ORT levels) says its time left too.
* stderr piped or redirected (a CI log, ``2> log``): one plain line per stage with the time since
  the command started, ``[  12.3s] exporting with the dynamo exporter``, never a ``\\r``; the sample
  loop and an opaque call's heartbeat (the export: ``[  12.3s] export: still running, 10 s``) say
  where they are at most every ``every`` seconds.  A log that stops moving shows which
  stage hangs, and how long each took.

Every message is made one line and its names escaped for the terminal (they quote module names).
"""
from __future__ import annotations

import sys
import time
from typing import Callable, Optional, TextIO

from drifttui.core.base.progress import Estimate, Progress, duration
from drifttui.errors import one_line

LINE_EVERY = 10.0       # seconds between two sample-count lines in a log
_LIVE_WIDTH = 60


class ProgressPrinter:
    """A ``ProgressFn`` for the CLI.  ``phase(prefix)`` gives one for a nested run (a repaired
    copy's check) on the same clock, its lines prefixed."""

    def __init__(self, enabled: bool = True, stream: Optional[TextIO] = None, tty: Optional[bool] = None,
                 clock: Callable[[], float] = time.monotonic, every: float = LINE_EVERY) -> None:
        self.enabled = enabled
        # bound now: the exporter redirects sys.stderr while it runs (core/model/export.py quiet()),
        # and the export's heartbeat, from another thread, would be swallowed with its prints
        self._stream = stream if stream is not None else sys.stderr
        self._tty = tty
        self.clock = clock
        self.every = every
        self.start = clock()
        self.estimate = Estimate(clock)
        self._last_stage = ""
        self._last_line = -1e9
        self._live = False

    @property
    def stream(self) -> TextIO:
        return self._stream

    @property
    def tty(self) -> bool:
        if self._tty is not None:
            return self._tty
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty())

    def __call__(self, p: Progress, prefix: str = "") -> None:
        if not self.enabled:
            return
        left = self.estimate(p)
        left = left if left is not None and left >= 1 else None     # no "about 0 s"
        if self.tty:
            self._terminal(p, prefix, left)
        else:
            self._log(p, prefix, left)
        self._last_stage = prefix + p.stage

    def phase(self, prefix: str) -> Callable[[Progress], None]:
        return lambda p: self(p, prefix)

    # -- a terminal: rewritten in place -------------------------------------------------
    def _terminal(self, p: Progress, prefix: str, left: Optional[float]) -> None:
        if p.elapsed is not None:           # a heartbeat: the elapsed time rewritten in place
            self._write(f"\r  {prefix}{p.stage}: running for {p.elapsed:.0f} s".ljust(_LIVE_WIDTH))
            self._live = True
            return
        if p.stage == "samples" and p.message.startswith("sample "):
            tail = f", about {duration(left)} left" if left else ""
            self._write(f"\r  {prefix}samples {p.done}/{p.total}{tail}".ljust(_LIVE_WIDTH))
            self._live = True
            return
        if self._live:
            self._write("\r" + " " * _LIVE_WIDTH + "\r")
            self._live = False
        if p.stage != "done":
            self._write(f"  {prefix}{_said(p, left)}\n")

    # -- a log: one line per stage, with the time since the start -------------------------
    def _log(self, p: Progress, prefix: str, left: Optional[float]) -> None:
        now = self.clock()
        counting = p.stage == "samples" and p.message.startswith("sample ") or p.elapsed is not None
        if counting and self._last_stage == prefix + p.stage and now - self._last_line < self.every:
            return
        if p.stage == "done":
            text = "run done: decided"
        elif p.elapsed is not None:         # a heartbeat: one line per ~10 s, never a spinner
            text = f"{p.stage}: still running, {p.elapsed:.0f} s"
        elif counting:
            text = f"samples {p.done}/{p.total}" + (f", about {duration(left)} left" if left else "")
        else:
            text = _said(p, left)
        self._last_line = now
        self._write(f"[{now - self.start:6.1f}s] {prefix}{text}\n")

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


def _said(p: Progress, left: Optional[float]) -> str:
    """The engine's message in one line (names escaped), with its count and time left when counted."""
    text = one_line(p.message or p.stage, 160)
    about = f"about {duration(left)} left" if left else ""
    if p.total and p.stage != "samples" and f"{p.done}/{p.total}" not in text:
        return text + f" ({p.done + 1}/{p.total}" + (f", {about})" if about else ")")
    return text + (f" ({about})" if about else "")


def progress_printer(enabled: bool = True) -> ProgressPrinter:
    return ProgressPrinter(enabled)
