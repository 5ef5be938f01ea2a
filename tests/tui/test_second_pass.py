"""The new-user second pass (issue 23): items 5, 6, 7, 10, 11, 14 and 18, on recorded
real-engine results at the sizes a user has (80x24 first)."""
from __future__ import annotations

from rich.color import Color

from drifttui.core.base.progress import Progress
from drifttui.tui.app import DriftApp
from drifttui.tui.heat import CELL_WIDTH, COLUMNS
from drifttui.tui.runner import RunProgress
from drifttui.tui.screens.help import HelpScreen
from drifttui.tui.widgets.layer_table import column_needs

from .conftest import CONFIG, screen_text, settle, wait_until
from .replay import ReplayEngine


def _lum(c: Color) -> float:
    def ch(v: int) -> float:
        v = v / 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
    r, g, b = c.get_truecolor()
    return 0.2126 * ch(r) + 0.7152 * ch(g) + 0.0722 * ch(b)


def contrast(a: Color, b: Color) -> float:
    la, lb = sorted((_lum(a), _lum(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


async def test_light_theme_cells_and_cursor_row_are_legible(result):
    app = DriftApp(None, result=result)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("T")
        await pilot.pause()
        assert not app.current_theme.dark
        table = app.table
        background = Color.parse(app.current_theme.background)
        for y in range(1, table.size.height):
            cursor = table.cursor + 1 - round(table.scroll_y) == y
            for seg in table.render_line(y):
                style = seg.style
                if not seg.text.strip() or style is None or style.color is None:
                    continue
                behind = style.bgcolor if style.bgcolor is not None else background
                assert contrast(style.color, behind) >= 3.0, (y, cursor, seg.text, style)


async def test_no_color_origin_marker_and_failed_step_chip_are_bold_reversed(result, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = DriftApp(None, result=result)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("3")
        await pilot.pause()
        origin_row = table_row = app.table.render_line(app.table.cursor + 1 - round(app.table.scroll_y))
        mark = next(seg for seg in origin_row if seg.text == "◆")
        assert mark.style.reverse and mark.style.bold, table_row
        tabs = app.steps_bar.render_text()
        start = tabs.plain.index("3✗onnx node")
        styles = " ".join(str(span.style) for span in tabs.spans if span.start <= start < span.end)
        assert "reverse" in styles and "bold" in styles and "dim" not in styles
        status = app.status.first_line()
        at = status.plain.index("◆")
        assert any("reverse" in str(s.style) for s in status.spans if s.start <= at < s.end)


async def test_columns_fit_their_content_and_onnx_ops_from_100_columns(result):
    name_w, cls_w, ops_w = column_needs(result.layers)
    for width, height in ((80, 24), (100, 30)):
        app = DriftApp(None, result=result)
        async with app.run_test(size=(width, height)) as pilot:
            await pilot.pause()
            cols = app.table._columns
            assert cols.module <= name_w + 1                      # not all the spare width
            header = app.table.render_line(0).text
            assert ("onnx ops" in header) == (width >= 100), header
            row = screen_text(app).splitlines()[3]
            assert len(row.rstrip()) <= width and cols.cls >= min(cls_w, 11)
            heat = len(COLUMNS) * (CELL_WIDTH + 1)
            assert 1 + cols.module + 1 + cols.cls + (cols.ops + 1 if cols.ops else 0) + cols.status + 1 + heat <= width


async def test_footer_follows_the_focused_pane(result):
    app = DriftApp(None, result=result)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        footer = app.query_one("#footer")
        assert "Layer detail" in str(footer.render()) and "back to the table" not in str(footer.render())
        await pilot.press("tab")
        await pilot.pause()
        assert app.focused is app.inspector
        assert "back to the table" in screen_text(app).splitlines()[-1]
        await pilot.press("escape")
        await pilot.pause()
        assert app.focused is app.table and "Layer detail" in screen_text(app).splitlines()[-1]


async def test_first_screen_80x24_note_takes_one_line(result):
    app = DriftApp(None, result=result)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        lines = screen_text(app).splitlines()
        note = [i for i, line in enumerate(lines) if line.lstrip().startswith("⚠")]
        assert len(note) == 1 and "in full: Home, Enter" in lines[note[0]]
        assert lines[note[0] + 1].lstrip().startswith("g Origin")         # the footer, no continuation
        assert app.table.region.height >= 17


async def test_progress_stays_on_its_line_and_the_partial_label_follows_the_run():
    engine = ReplayEngine(block=True)
    app = DriftApp(engine, config=CONFIG)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.table.result is not None)
        await pilot.press("i")
        token = app._token
        app.post_message(RunProgress(Progress("samples", 5, 8, "per-layer pass on the 2 worst sample(s), "
                                              "window 3/7 of the --max-memory plan"), token))
        await pilot.pause()
        await pilot.pause()
        lines = screen_text(app).splitlines()
        assert "samples 5/8" in lines[0] and lines[1].startswith(" opt ")    # no wrap onto the config line
        assert "the run is at 5/8" in " ".join(app.inspector.text.split())
        engine.gate.set()
        await settle(app, pilot)


async def test_filter_line_has_a_label_and_esc_in_the_table_clears_a_kept_filter(result):
    app = DriftApp(None, result=result)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("slash", *"relu")
        await pilot.pause()
        assert any(line.startswith(" filter / relu") for line in screen_text(app).splitlines())
        await pilot.press("enter", "f")
        await pilot.pause()
        tree = app.table.layer_tree
        assert app.focused is app.table and tree.filter_text == "relu" and tree.only_drift
        await pilot.press("escape")
        await pilot.pause()
        assert tree.filter_text == "" and not tree.only_drift and len(tree.rows) == len(result.layers)
        assert app.query_one("#filter-bar").has_class("hidden")


async def test_help_first_page_at_80x24_has_the_step_keys_and_determinism(result):
    app = DriftApp(None, result=result)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        first = screen_text(app)
        assert "1 … 6" in first and "capture again with determinism on/off" in first


async def test_long_stage_messages_take_their_short_form_whole_at_80_columns():
    """(fourth pass) the observer check was cut to "… ORT's…" at 80 columns; the export's
    heartbeat says its elapsed time."""
    engine = ReplayEngine(block=True)
    app = DriftApp(engine, config=CONFIG)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.table.result is not None)
        await pilot.press("i")
        token = app._token
        app.post_message(RunProgress(Progress("observer", message="observer check: does marking values as "
                                              "outputs change ORT's numbers?"), token))
        await pilot.pause()
        await pilot.pause()
        first = screen_text(app).splitlines()[0].rstrip()
        assert first.endswith("observer check: do extra outputs change ORT?") and "…" not in first, first
        app.post_message(RunProgress(Progress("export", message="exporting example:resnet18-bf16 with the dynamo "
                                              "exporter…", elapsed=12.4), token))
        await pilot.pause()
        await pilot.pause()
        first = screen_text(app).splitlines()[0].rstrip()
        assert "exporting" in first and "12 s" in first and "…" not in first, first
        await pilot.resize_terminal(160, 40)
        await pilot.pause()
        first = screen_text(app).splitlines()[0].rstrip()      # wide: the whole message and the time
        assert "exporting example:resnet18-bf16 with the dynamo exporter… · 12 s" in first, first
        engine.gate.set()
        await settle(app, pilot)
