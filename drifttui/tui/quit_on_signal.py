"""SIGTERM and SIGHUP (a CI timeout, ``docker stop``, a closed terminal) quit the app cleanly."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator


@contextlib.contextmanager
def signals_quit(app: Any) -> Iterator[None]:
    """SIGTERM / SIGHUP quit the app like `q`, with exit code 128 + signum: the running engine
    is cancelled (its ``finally`` removes the temp workdir) and the terminal is restored."""
    import asyncio

    from drifttui.signals import on_stop_signals

    def stop(signum: int, frame: object) -> None:
        for token in app.live_tokens():
            token.cancel()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:        # the loop is not running (yet/any more): nothing to wake
            return
        loop.call_soon_threadsafe(lambda: app.exit(None, 128 + signum))

    with on_stop_signals(stop):
        yield
