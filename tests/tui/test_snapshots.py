"""SVG snapshots (pytest-textual-snapshot) of results recorded from the real engine.
Regenerate with ``pytest tests/tui/test_snapshots.py --snapshot-update`` after an intended
visual change (and scripts/record_fixtures.py after an engine change)."""
from __future__ import annotations

import dataclasses

import pytest

from tests.tui import replay
from tests.tui.replay import ReplayEngine, load_fixture
from drifttui.tui.app import DriftApp

SIZES = [(80, 24), (100, 30), (120, 40), (200, 50)]


@pytest.fixture(autouse=True)
def stable_timings(monkeypatch):
    """The recorded timings (the status line's "captured in 3.1 s") replaced by fixed figures:
    re-recording the fixtures after an engine change would otherwise change every snapshot while
    nothing on screen changed but the machine's speed."""
    read = replay._read

    def fixed(path: str):
        r = read(path)
        return dataclasses.replace(r, timings={k: (v if k.endswith("_reused") else 1.0) for k, v in r.timings.items()})
    monkeypatch.setattr(replay, "_read", fixed)


def make_app(name: str = "resnet18-bf16") -> DriftApp:
    return DriftApp(ReplayEngine(name), result=load_fixture(name))


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_main(snap_compare, size):
    assert snap_compare(make_app(), terminal_size=size)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_step_3_shows_the_fix(snap_compare, size):
    assert snap_compare(make_app(), terminal_size=size, press=["3"])


def test_step_detail_80x24(snap_compare):
    assert snap_compare(make_app(), terminal_size=(80, 24), press=["3", "s"])


def test_step_detail_long_table_80x24(snap_compare):
    """Step 6's fusion levels at 80x24: the five-column table (op names in the last column) would
    be cut at the right edge; it is one block per level, under a line saying why."""
    async def to_the_levels(pilot) -> None:
        await pilot.press("6", "s")
        await pilot.pause()
        lines = pilot.app.screen.text.splitlines()
        y = next(i for i, line in enumerate(lines) if "one block per row" in line)
        pilot.app.screen.query_one("#detail-scroll").scroll_to(y=y - 2, animate=False, immediate=True)
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=to_the_levels)


def test_layer_detail_80x24(snap_compare):
    assert snap_compare(make_app(), terminal_size=(80, 24), press=["enter"])


def test_inspector_80x24(snap_compare):
    assert snap_compare(make_app(), terminal_size=(80, 24), press=["i"])


def test_transformer_120x40(snap_compare):
    assert snap_compare(make_app("transformer-ln-eps"), terminal_size=(120, 40), press=["6"])


def test_help(snap_compare):
    assert snap_compare(make_app(), terminal_size=(100, 40), press=["question_mark"])


def test_filtered_only_drift_80x24(snap_compare):
    assert snap_compare(make_app(), terminal_size=(80, 24), press=["f", "C"])


def test_no_color_80x24(snap_compare, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")          # failing cells bold + reversed, never fainter
    assert snap_compare(make_app(), terminal_size=(80, 24))


def test_light_theme_120x40(snap_compare):
    assert snap_compare(make_app(), terminal_size=(120, 40), press=["T"])
