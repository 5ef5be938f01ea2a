"""The app quits when it is told to (SIGTERM, SIGHUP: a CI timeout, ``docker stop``, a closed
terminal) and when nobody drives it any more (``drifttui serve`` or its browser tab gone), and the
process never outlives a quit that does not finish: after GRACE seconds it ends hard."""
from __future__ import annotations

import contextlib
import os
import threading
from typing import Any, Callable, Iterator

from drifttui.signals import end_now

GRACE = 5.0          # seconds a requested quit may take before the process ends hard
POLL = 1.0           # how often the orphan watch looks at the app's controller


def _hard_exit_later(code: int, done: threading.Event) -> None:
    """End the process with ``code`` unless the app has finished within GRACE seconds: the exit
    handlers first (they remove the engine's temp folders), then no interpreter teardown."""
    def wait() -> None:
        if not done.wait(GRACE):
            end_now(code)
    threading.Thread(target=wait, name="drifttui-hard-exit", daemon=True).start()


def _request_quit(app: Any, code: int, loop: Any, done: threading.Event) -> None:
    for token in app.live_tokens():
        token.cancel()
    if loop is not None:
        try:
            loop.call_soon_threadsafe(lambda: app.exit(None, code))
        except RuntimeError:        # the loop has closed: the app is ending anyway
            pass
    _hard_exit_later(code, done)


def controller_gone(app: Any, parent: int) -> bool:
    """True when nobody drives the app: its parent process ended (the process was re-parented),
    or the driver's input thread ended while the app still runs (textual-serve's pipe closed:
    the web driver then stops reading but would keep the app alive, spinning, for ever)."""
    if os.getppid() != parent:
        return True
    thread = getattr(getattr(app, "_driver", None), "_key_thread", None)
    return (isinstance(thread, threading.Thread) and thread.ident is not None and not thread.is_alive()
            and bool(getattr(app, "is_running", False)))


def _watch(app: Any, done: threading.Event, loop_of: Callable[[], Any], code: int) -> None:
    parent = os.getppid()
    while not done.wait(POLL):
        if controller_gone(app, parent):
            _request_quit(app, code, loop_of(), done)
            return


@contextlib.contextmanager
def signals_quit(app: Any) -> Iterator[None]:
    """SIGTERM / SIGHUP quit the app like `q`, with exit code 128 + signum: the running engine
    is cancelled (its ``finally`` removes the temp workdir) and the terminal is restored; an app
    whose controller has gone quits with 129 (as after SIGHUP).  Either way the process ends
    within GRACE seconds."""
    import asyncio
    import signal

    from drifttui.signals import on_stop_signals

    done = threading.Event()

    def loop_of() -> Any:
        return getattr(app, "_loop", None)       # Textual's running loop (None before and after)

    def stop(signum: int, frame: object) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:        # the loop is not running (yet/any more): nothing to wake
            loop = loop_of()
        _request_quit(app, 128 + signum, loop, done)

    with on_stop_signals(stop):
        threading.Thread(target=_watch, args=(app, done, loop_of, 128 + int(signal.SIGHUP)),
                         name="drifttui-orphan-watch", daemon=True).start()
        try:
            yield
        finally:
            done.set()
