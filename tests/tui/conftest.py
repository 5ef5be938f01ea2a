"""Fixtures for the TUI tests: a fake engine with frozen synthetic results."""
from __future__ import annotations

import threading
import time
from typing import Optional

import pytest

from drifttui.api import CancelToken, Progress, no_progress
from drifttui.core.result import Config, Result, Step
from drifttui.errors import ModelError
from drifttui.testing.synthetic import synthetic_result, synthetic_step

CONFIG = Config(model="synthetic:net", example="synthetic", samples=20)


class FakeEngine:
    """Frozen results; ``block=True`` makes runs wait on ``gate`` (honouring cancel)."""

    def __init__(self, n_layers: int = 60, block: bool = False, fail: Optional[Exception] = None,
                 unavailable_steps: tuple[int, ...] = (), step_fail: Optional[Exception] = None) -> None:
        self.n_layers = n_layers
        self.gate = threading.Event()
        if not block:
            self.gate.set()
        self.fail = fail
        self.unavailable_steps = unavailable_steps
        self.step_fail = step_fail
        self.configs: list[Config] = []
        self.tokens: list[Optional[CancelToken]] = []
        self.steps_run: list[int] = []
        self.started = threading.Event()

    def run(self, config: Config, progress=no_progress, cancel: Optional[CancelToken] = None) -> Result:
        self.configs.append(config)
        self.tokens.append(cancel)
        self.started.set()
        progress(Progress("samples", 0, config.samples, "starting"))
        deadline = time.monotonic() + 10
        while not self.gate.wait(0.005):
            if cancel is not None:
                cancel.check()
            if time.monotonic() > deadline:
                raise TimeoutError("fake engine gate never opened")
        if cancel is not None:
            cancel.check()
        if self.fail is not None:
            raise self.fail
        scale = 0.01 if config.deterministic else 1.0
        result = synthetic_result(self.n_layers, config=config, error_scale=scale, steps=False)
        progress(Progress("samples", config.samples, config.samples, partial=result))
        return result

    def step(self, number: int, result: Result, progress=no_progress,
             cancel: Optional[CancelToken] = None) -> Step:
        self.steps_run.append(number)
        if number in self.unavailable_steps:
            raise NotImplementedError(f"step {number}")
        if self.step_fail is not None:
            raise self.step_fail
        return synthetic_step(number, result)


@pytest.fixture(autouse=True)
def _no_animations(monkeypatch):
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")


@pytest.fixture
def config() -> Config:
    return CONFIG


@pytest.fixture
def result() -> Result:
    return synthetic_result(60, config=CONFIG)


@pytest.fixture
def engine() -> FakeEngine:
    return FakeEngine()


@pytest.fixture
def model_error() -> Exception:
    return ModelError("ONNX Runtime cannot run the graph", "check the opset")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Run ``async def`` tests in a fresh event loop (no pytest-asyncio needed)."""
    import asyncio
    import inspect

    if inspect.iscoroutinefunction(pyfuncitem.obj):
        names = pyfuncitem._fixtureinfo.argnames
        kwargs = {name: pyfuncitem.funcargs[name] for name in names}
        asyncio.run(pyfuncitem.obj(**kwargs))
        return True
    return None
