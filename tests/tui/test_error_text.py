"""Issue 10, points 8 and 10: error text in the TUI is shown literally and wrapped (never
parsed as markup), and the TUI process returns the app's return code (non-zero after a crash)."""
from __future__ import annotations

from textual.app import App
from textual.geometry import Region
from textual.widgets import Static

from drifttui.tui.screens.error import ErrorScreen

ORT = ("[ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running Resize node. "
       "Name:'/decoder/up3/Resize_upsample_bilinear2d_with_a_rather_long_name' Status Message: "
       "upsample_base.h:366 ScalesValidation Scale value should be greater than 0.")


class _Host(App):
    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message

    def on_mount(self) -> None:
        self.push_screen(ErrorScreen(self.message, title="[b]title[/b] /tmp/[x]"))


def _shown(widget: Static) -> list[str]:
    region = Region(0, 0, widget.size.width, widget.size.height)
    return ["".join(seg.text for seg in strip).rstrip() for strip in widget.render_lines(region)]


async def _render(message: str, size=(80, 24)) -> tuple[list[str], list[str]]:
    app = _Host(message)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ErrorScreen)
        return _shown(screen.query_one("#error-message", Static)), _shown(screen.query_one("#error-title"))


async def test_markup_like_text_is_shown_literally():
    # a path with [/b] used to raise MarkupError and crash the app
    message = "model file '/data/[/b]runs/[red]x.py' does not exist; check the path"
    lines, title = await _render(message)
    assert " ".join(lines).split() == message.split()
    assert "[b]title[/b] /tmp/[x]" in title[0]


async def test_ort_prefix_kept_and_long_message_wrapped_to_the_op_name():
    lines, _ = await _render(ORT)
    flat = "".join("".join(lines).split())       # a word longer than the modal folds over lines
    assert flat.startswith("[ONNXRuntimeError]")
    assert "Resize_upsample_bilinear2d_with_a_rather_long_name" in flat  # not cut before the op name
    assert flat == "".join(ORT.split())                                  # every character shown
    assert len([line for line in lines if line.strip()]) >= 3                 # wrapped, not one cut line
    assert all(len(line) <= 80 for line in lines)


def test_run_app_returns_non_zero_after_a_crash(monkeypatch):
    from drifttui.tui import app as app_module

    def crash(self):
        raise RuntimeError("a bug in the app")

    run = app_module.DriftApp.run
    monkeypatch.setattr(app_module.DriftApp, "compose", crash)
    monkeypatch.setattr(app_module.DriftApp, "run", lambda self, **kw: run(self, headless=True, **kw))
    assert app_module.run_app(None) == 1


def test_run_app_returns_zero_after_a_normal_quit(monkeypatch):
    from drifttui.tui import app as app_module

    run = app_module.DriftApp.run
    monkeypatch.setattr(app_module.DriftApp, "on_mount", lambda self: self.exit(), raising=False)
    monkeypatch.setattr(app_module.DriftApp, "run", lambda self, **kw: run(self, headless=True, **kw))
    assert app_module.run_app(None) == 0
