"""Engine calls off the UI thread, in DAEMON threads, reporting back with messages.

Textual's thread workers run in asyncio's default executor, which ``App.run`` joins on exit:
quitting during a 30 s capture would blank the screen until it finished.  Daemon threads
are not joined, so ``q`` returns at once (``run_app`` waits a moment for them to notice the
cancel, saying "stopping…", then leaves).
"""
from __future__ import annotations

import threading
from typing import Callable, Optional

from textual.message import Message

from drifttui.core.base.progress import CancelToken, Progress, no_progress
from drifttui.core.result import Result, Step
from drifttui.errors import Cancelled

_THREADS: list[threading.Thread] = []


_STARTED = [0]


def started_any() -> bool:
    """Whether any engine thread ran in this process."""
    return _STARTED[0] > 0


def alive_threads() -> list[threading.Thread]:
    """Engine threads still running (the app has quit or is quitting)."""
    _THREADS[:] = [t for t in _THREADS if t.is_alive()]
    return list(_THREADS)


def start(target: Callable[[], None], name: str) -> threading.Thread:
    thread = threading.Thread(target=target, name=name, daemon=True)
    _THREADS.append(thread)
    _STARTED[0] += 1
    thread.start()
    return thread


class RunProgress(Message):
    def __init__(self, progress: Progress, token: CancelToken) -> None:
        self.progress, self.token = progress, token
        super().__init__()


class RunDone(Message):
    def __init__(self, result: Result, token: CancelToken) -> None:
        self.result, self.token = result, token
        super().__init__()


class RunFailed(Message):
    def __init__(self, message: str, token: CancelToken, cancelled: bool = False) -> None:
        self.message, self.token, self.cancelled = message, token, cancelled
        super().__init__()


class StepProgress(Message):
    def __init__(self, number: int, progress: Progress) -> None:
        self.number, self.progress = number, progress
        super().__init__()


class StepDone(Message):
    def __init__(self, number: int, step: Optional[Step], result: Result, message: str = "",
                 error: bool = False) -> None:
        self.number, self.step, self.result, self.message, self.error = number, step, result, message, error
        super().__init__()


def run_in_thread(app, engine, config, token: CancelToken) -> threading.Thread:
    """``engine.run(config)``; posts RunProgress, then RunDone or RunFailed."""

    def progress(p: Progress) -> None:
        if not token.cancelled:
            app.post_message(RunProgress(p, token))

    def work() -> None:
        try:
            result = engine.run(config, progress, token)
        except Cancelled:
            app.post_message(RunFailed("cancelled", token, cancelled=True))
            return
        except BaseException as err:  # noqa: BLE001 - any engine failure becomes a modal
            app.post_message(RunFailed(str(err) or type(err).__name__, token))
            return
        if token.cancelled:
            app.post_message(RunFailed("cancelled", token, cancelled=True))
        else:
            app.post_message(RunDone(result, token))

    return start(work, "drifttui-run")


def step_in_thread(app, engine, number: int, result: Result, token: CancelToken) -> threading.Thread:
    """``engine.step(number, result)``; posts StepProgress, then StepDone."""

    def progress(p: Progress) -> None:
        if not token.cancelled:
            app.post_message(StepProgress(number, p))

    def work() -> None:
        try:
            step = engine.step(number, result, progress, token)
        except Cancelled:
            app.post_message(StepDone(number, None, result, f"step {number} cancelled"))
            return
        except BaseException as err:  # noqa: BLE001
            app.post_message(StepDone(number, None, result, str(err) or type(err).__name__, error=True))
            return
        if token.cancelled:
            app.post_message(StepDone(number, None, result, f"step {number} cancelled"))
        else:
            app.post_message(StepDone(number, step, result))

    return start(work, f"drifttui-step-{number}")


class DrillDone(Message):
    """``engine.drill`` finished: ``channels`` (None: ``message`` says why)."""

    def __init__(self, layer: int, channels, token: CancelToken, message: str = "") -> None:
        self.layer, self.channels, self.token, self.message = layer, channels, token, message
        super().__init__()


class DrillProgress(Message):
    """How far ``engine.drill`` is (the every-sample comparison: sample k of N, the time left)."""

    def __init__(self, progress: Progress, token: CancelToken) -> None:
        self.progress, self.token = progress, token
        super().__init__()


def drill_in_thread(app, engine, layer: int, result: Result, token: CancelToken,
                    every_sample: bool = False) -> threading.Thread:
    """``engine.drill(layer, result)``: the per-channel errors of one layer (from the capture,
    or one per-layer pass on its worst sample; ``every_sample``: one pass per sample of the
    run); posts DrillProgress, then DrillDone."""

    def progress(p: Progress) -> None:
        if not token.cancelled:
            app.post_message(DrillProgress(p, token))

    def work() -> None:
        try:
            if every_sample:
                channels = engine.drill(layer, result, progress, token, every_sample=True)
            else:
                channels = engine.drill(layer, result, progress, token)
        except (NotImplementedError, ModuleNotFoundError, ImportError):
            app.post_message(DrillDone(layer, None, token, "this engine cannot compute per-channel errors"))
            return
        except Cancelled:
            app.post_message(DrillDone(layer, None, token, "cancelled"))
            return
        except BaseException as err:  # noqa: BLE001
            app.post_message(DrillDone(layer, None, token, str(err) or type(err).__name__))
            return
        app.post_message(DrillDone(layer, None if token.cancelled else channels, token,
                                   "cancelled" if token.cancelled else ""))

    return start(work, "drifttui-drill")
