import os
import warnings
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
# a progress line on stderr when it is not a terminal (drifttui/cli_progress.py): "[  12.3s] ..."
PROGRESS_LINE = __import__("re").compile(r"^\[ *\d+\.\ds\] ")


def without_progress(err: str) -> str:
    """stderr without the progress lines: what a command said besides its progress."""
    return "".join(line for line in err.splitlines(keepends=True) if not PROGRESS_LINE.match(line))
MODELS = TESTS / "models.py"
os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
warnings.filterwarnings("ignore", category=DeprecationWarning)


def pytest_configure(config):
    """The drift_check fixture: the pytest11 entry point loads it when drifttui is installed
    with this pyproject; register it here otherwise (never twice)."""
    from drifttui.testing import pytest_plugin

    if not (config.pluginmanager.is_registered(pytest_plugin) or config.pluginmanager.has_plugin("drifttui")):
        config.pluginmanager.register(pytest_plugin, "drifttui")


def model_spec(fn: str) -> str:
    return f"{MODELS}:{fn}"


@pytest.fixture(scope="session")
def run_cache():
    """Runs of the real engine shared across tests: export tiny models once per session."""
    from drifttui.core.result import Config
    from drifttui.core.pipeline import run_once

    cache = {}

    def run(**kw):
        key = tuple(sorted(kw.items()))
        if key not in cache:
            kw.setdefault("samples", 3)
            if "example" in kw and "model" not in kw:
                kw["model"] = f"example:{kw['example']}"
            cache[key] = run_once(Config(**kw)).result
        return cache[key]

    return run


@pytest.fixture(autouse=True)
def _no_inherited_terminal_size(monkeypatch):
    """The CLI wraps at $COLUMNS when it is set (report/console.py); pytest-xdist workers inherit one
    from the runner. A test that wants a width sets it itself."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
