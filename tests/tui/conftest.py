"""Fixtures for the TUI tests: results recorded from the real engine (tests/tui/fixtures,
written by scripts/record_fixtures.py) and a replaying fake engine for timing and failures."""
from __future__ import annotations

import pytest

from drifttui.core.result import Config, Result
from drifttui.errors import ModelError
from tests.tui.replay import ReplayEngine, load_fixture

DEMO = load_fixture()
CONFIG = DEMO.config            # example:resnet18-bf16, 8 samples


@pytest.fixture(autouse=True)
def _no_animations(monkeypatch):
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    monkeypatch.delenv("NO_COLOR", raising=False)


@pytest.fixture
def config() -> Config:
    return CONFIG


@pytest.fixture
def result() -> Result:
    return DEMO


@pytest.fixture
def engine() -> ReplayEngine:
    return ReplayEngine()


@pytest.fixture
def model_error() -> Exception:
    return ModelError("ONNX Runtime cannot run the graph", "check the opset")


async def settle(app, pilot, timeout: float = 5.0) -> None:
    """Wait until no capture and no step runs, then let the UI process its messages."""
    await wait_until(pilot, lambda: not app.running and not app.steps_bar.running, timeout)
    await pilot.pause()
    await pilot.pause()


async def wait_until(pilot, cond, timeout: float = 5.0) -> None:
    for _ in range(int(timeout / 0.01)):
        if cond():
            return
        await pilot.pause(0.01)
    raise AssertionError("condition not met")


def screen_text(app) -> str:
    """What the terminal shows, as plain text lines."""
    comp = app.screen._compositor
    return "\n".join(strip.text for strip in comp.render_strips())


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
