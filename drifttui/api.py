"""The engine interface the front ends use. Imports neither torch nor onnxruntime.

The TUI talks only to an :class:`Engine`; tests hand it a fake one with frozen
results.  :class:`LocalEngine` is the real one: it imports the torch/ORT engine
lazily, on the first run, inside the worker thread.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Optional, Protocol

from drifttui.core.result import Config, Result, Step
from drifttui.errors import Cancelled


@dataclass(frozen=True)
class Progress:
    stage: str                 # "load", "export", "map", "samples", "local", "done", "step"
    done: int = 0
    total: int = 0
    message: str = ""
    partial: Optional[Result] = None   # per-layer results so far (after the first sample)


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


class Engine(Protocol):
    def run(self, config: Config, progress: ProgressFn = no_progress,
            cancel: Optional[CancelToken] = None) -> Result: ...

    def step(self, number: int, result: Result, progress: ProgressFn = no_progress,
             cancel: Optional[CancelToken] = None) -> Step: ...


class LocalEngine:
    """Runs torch and ONNX Runtime in this process."""

    def run(self, config: Config, progress: ProgressFn = no_progress,
            cancel: Optional[CancelToken] = None) -> Result:
        from drifttui.core.session import Session

        session = Session(config)
        result = session.run(progress=progress, cancel=cancel)
        try:
            # keep the loaded model, graph and mapping for the debugging steps (keys 1-6)
            from drifttui.core.steps.context import context_for

            context_for(result, session)
        except Exception:   # the steps rebuild what they need when this cache is missing
            pass
        return result

    def step(self, number: int, result: Result, progress: ProgressFn = no_progress,
             cancel: Optional[CancelToken] = None) -> Step:
        from drifttui.core.steps import run_step

        return run_step(number, result, progress=progress, cancel=cancel)
