"""The old items issue 35 (point 6) asked to re-check, on recorded real-engine results: a drift
origin at the model's ROOT module (tests/tui/fixtures/root-drift.json: the root's own Mul drifts,
scripts/fixture_models/root_drift.py), the light theme on every screen (not only the table), and
a 60x20 terminal with and without NO_COLOR."""
from __future__ import annotations

import pytest
from rich.color import Color

from drifttui.tui.app import DriftApp
from drifttui.tui.screens.detail import DetailScreen

from .conftest import screen_text, wait_until
from .replay import load_fixture
from .test_second_pass import contrast

ROOT = "root-drift"


def test_the_fixture_is_a_root_origin():
    result = load_fixture(ROOT)
    assert result.drift_origin is not None and result.drift_origin.layer == 0
    assert result.drift_origin.module == "" and result.layers[0].parent is None
    assert [s.step for s in result.steps] == [1, 2, 3, 4, 5, 6] and result.findings[0].module == ""


@pytest.mark.parametrize("size", [(80, 24), (60, 20)])
async def test_a_root_origin_is_shown_found_and_opened(size):
    result = load_fixture(ROOT)
    app = DriftApp(None, result=result)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        assert app.table.cursor_layer == 0                                 # the cursor starts on it
        lines = screen_text(app).splitlines()
        assert "◆ (root)" in lines[0]                                      # status line names it
        assert lines[2].lstrip().startswith("profile ◆")                   # first in module order
        row = next(line for line in lines if "(root)" in line and "drift" in line)
        assert row.startswith("◆")
        await pilot.press("down", "down", "g")
        await pilot.pause()
        assert app.table.cursor_layer == 0                                 # g finds it
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen) and "Layer #0 (root)" in app.screen.title_text
        assert "drift origin: the first module" in " ".join(app.screen.text.split())
        await pilot.press("escape", "3", "s")
        await pilot.pause()
        assert "#0 (root)" in " ".join(app.screen.text.split())
        await pilot.press("c")
        await pilot.pause()
        assert app.clipboard == "(root)"                                   # was refused: module ""
        await pilot.press("escape", "down", "l")
        await pilot.pause()
        assert app.table.cursor_layer == 0                                 # l: the step's layer
        await pilot.press("f")
        await pilot.pause()
        assert 0 in app.table.layer_tree.rows                              # drifting only keeps it


@pytest.mark.parametrize("no_color", [False, True])
async def test_60x20_keeps_help_quit_and_the_whole_configuration(monkeypatch, no_color):
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    app = DriftApp(None, result=load_fixture())
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        lines = screen_text(app).splitlines()
        assert "? Help" in lines[-1] and "q Quit" in lines[-1]             # were cut off at 60
        config = lines[1]
        assert "…" not in config and "n=8" in config and "det off" in config and "1e-04/1e-04" in config
        assert "◆" in lines[0] and "layer3.1.bn1" in lines[0]
        await pilot.press("i", "tab")                                        # the inspector's keys
        await pilot.pause()
        footer = screen_text(app).splitlines()[-1]
        assert "? Help" in footer and "q Quit" in footer
        if no_color:
            origin_row = app.table.render_line(app.table.cursor + 1 - round(app.table.scroll_y))
            mark = next(seg for seg in origin_row if seg.text == "◆")
            assert mark.style.reverse and mark.style.bold


def _illegible(app, floor: float = 3.0) -> list:
    """Every text segment on screen whose colour reads under ``floor`` against what is behind it."""
    background = Color.parse(app.current_theme.background)
    bad = []
    for y, strip in enumerate(app.screen._compositor.render_strips()):
        for seg in strip:
            style = seg.style
            if not seg.text.strip() or style is None or style.color is None or style.color.triplet is None:
                continue
            behind = style.bgcolor if style.bgcolor is not None and style.bgcolor.triplet else background
            if contrast(style.color, behind) < floor:
                bad.append((y, seg.text.strip()[:20], round(contrast(style.color, behind), 2)))
    return bad


@pytest.mark.parametrize("keys", [(), ("3",), ("3", "s"), ("enter",), ("question_mark",)],
                         ids=["main", "step-chip", "step-detail", "layer-detail", "help"])
async def test_light_theme_every_screen_is_legible(keys):
    """The status line's ◆, the profile, the step chips, the run notes, the inspector's metrics and
    the detail screens used the dark theme's colours on the light background (contrast 1.4-2.8)."""
    app = DriftApp(None, result=load_fixture())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("T", *keys)
        await pilot.pause()
        assert not app.current_theme.dark
        assert _illegible(app) == []
        await pilot.press("escape", "T")                                     # the dark theme keeps its colours
        await pilot.pause()
        assert app.current_theme.dark


@pytest.mark.parametrize("size", [(60, 20), (80, 24), (120, 40)])
async def test_the_run_note_fits_its_line_and_is_cut_between_words(size):
    """The note line was cut for 78 columns whatever the width (before the first layout), and
    mid-word ("3 of the 20 sample…")."""
    app = DriftApp(None, result=load_fixture())
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        line = next(line for line in screen_text(app).splitlines() if line.lstrip().startswith("⚠"))
        assert line.rstrip().endswith("in full: Home, Enter")                # never cropped
        assert "all on (root)" not in line           # read as "every sample" (fourth pass): it meant every note
        note = line.strip()[2:line.strip().index(" — in full")]
        full = app.steps_bar.notes[0]
        if note.endswith("…"):
            kept = note[:-1]
            assert full.startswith(kept) and full[len(kept)] in " ,;:(", (kept, full)
            assert len(line.rstrip()) >= size[0] - 20                       # the width is used
        else:
            assert note == full


async def test_a_rerun_at_80_columns_keeps_its_change_count_and_time_left_whole(result):
    """(fourth pass) "⟳ → det on: samples 4/20 · 5 s le…": the origin gives way to the progress."""
    from drifttui.core.base.progress import Progress
    from drifttui.tui.runner import RunProgress

    from .conftest import settle
    from .replay import ReplayEngine

    engine = ReplayEngine(block=True)
    app = DriftApp(engine, result=result)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("d")
        await wait_until(pilot, lambda: engine.started.is_set())
        app.post_message(RunProgress(Progress("samples", 4, 20, eta=125.0), app._token))
        await pilot.pause()
        await pilot.pause()
        first = screen_text(app).splitlines()[0]
        assert "◆ layer3.1.bn1" in first and "→ det on: samples 4/20 · 2 min left" in first, first
        assert "…" not in first
        engine.gate.set()
        await settle(app, pilot)
        assert "BatchNorm2d" in screen_text(app).splitlines()[0]              # back in full when done


async def test_a_root_origin_drill_down_shows_its_own_ops_not_the_model_outputs():
    """(fourth pass) the root's drill-down showed the model's outputs ([1, 4], its output): it shows
    the root's own ONNX ops and the channels of their values, from the real engine's capture (the
    fixture's root scales channel 2 of its features with a wrong value: that channel stands out)."""
    from drifttui.core.result import OWN_VALUES

    result = load_fixture(ROOT)
    root = result.layers[0]
    ch = root.channels
    assert ch is not None and ch.source == OWN_VALUES
    own_values = {v for n in root.nodes for v in n.outputs}
    assert root.output_shapes == [[1, 4]] and ch.size != 4                         # not its output
    assert ch.size == 8 and max(range(ch.size), key=lambda i: ch.max_abs[i]) == 2  # the scaled channel
    app = DriftApp(None, result=result)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        text = " ".join(app.screen.text.split())
        assert "its own ONNX ops (Mul node_mul → mul; ReduceMean node_mean → mean)" in text
        assert "per channel of its own values (8 along axis last" in text and "worst channels: #2" in text
        assert "per output channel" not in text and {"mul", "mean"} <= own_values
