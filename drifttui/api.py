"""The engine interface the front ends use. Imports neither torch nor onnxruntime.

The TUI talks only to an :class:`Engine`; tests hand it a fake one with frozen
results.  :class:`LocalEngine` is the real one: it imports the torch/ORT engine
lazily, on the first run, inside the worker thread.
"""
from __future__ import annotations

from typing import Optional, Protocol

from drifttui.core.result import Config, Result, Step
from drifttui.core.progress import CancelToken, Progress, ProgressFn, no_progress

__all__ = ["CancelToken", "Config", "Engine", "LocalEngine", "Progress", "ProgressFn", "no_progress"]


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
