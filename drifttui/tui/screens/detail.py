"""Full-screen, scrollable detail views: a layer's every number, a step's every line.

Both are plain screens over the main one (Esc or q goes back); ↑ ↓ PgUp PgDn Home End
scroll, and ``c`` / ``y`` copy the module name / the fix to the clipboard (OSC 52); on the
layer detail ``a`` compares the layer on every sample (drifttui.tui.drill).
"""
from __future__ import annotations

from typing import Optional

from rich.console import RenderableType
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from drifttui.report.escape import terminal


class DetailScreen(Screen[None]):
    BINDINGS = [
        Binding("escape,q", "close", "Back"),
        Binding("c", "copy_name", "Copy name"),
        Binding("y", "copy_fix", "Copy fix"),
        Binding("a", "every_sample", "All samples"),
    ]

    DEFAULT_CSS = """
    DetailScreen > VerticalScroll { height: 1fr; padding: 0 1; }
    DetailScreen > #detail-title { height: 1; background: $panel; padding: 0 1; text-style: bold; }
    """

    def __init__(self, title: str, renderable: RenderableType, name_to_copy: str = "",
                 fix_to_copy: str = "", on_close=None) -> None:
        super().__init__()
        self.title_text = title
        self.renderable = renderable
        self.name_to_copy = name_to_copy
        self.fix_to_copy = fix_to_copy
        self.on_close = on_close        # called when the screen is left (cancels work it waits for)
        self.on_every_sample = None     # the layer detail: `a` compares the layer on every sample

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """``a`` is the layer detail's alone (the footer shows it there only)."""
        return self.on_every_sample is not None if action == "every_sample" else True

    def action_every_sample(self) -> None:
        if self.on_every_sample is not None:
            self.on_every_sample()

    def update_body(self, renderable: RenderableType) -> None:
        """Replace what the screen shows (a background computation finished)."""
        self.renderable = renderable
        for body in self.query("#detail-body"):
            body.update(renderable)

    def compose(self) -> ComposeResult:
        yield Static(terminal(self.title_text) + "   (Esc back · ↑↓ PgUp PgDn scroll)", id="detail-title",
                     markup=False)
        with VerticalScroll(id="detail-scroll"):
            yield Static(self.renderable, id="detail-body")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()

    @property
    def text(self) -> str:
        """Plain text of the whole body (for tests): every line, scrolled or not, at the width the
        body is drawn at (the screen's less the padding and the scrollbar)."""
        from rich.console import Console

        bodies = self.query("#detail-body")
        drawn = bodies.first().content_region.width if bodies else 0
        width = drawn or max(40, self.size.width - 2)
        console = Console(width=width, record=True, file=_Null(), color_system=None)
        console.print(self.renderable)
        return console.export_text()

    def action_close(self) -> None:
        if self.on_close is not None:
            self.on_close()
        self.dismiss(None)

    def _copy(self, text: str, what: str) -> None:
        if not text:
            self.notify(f"no {what} to copy here", severity="warning")
            return
        text = terminal(text)
        self.app.copy_to_clipboard(text)
        self.notify(f"copied {what}: {text[:60]}", markup=False)

    def action_copy_name(self) -> None:
        self._copy(self.name_to_copy, "name")

    def action_copy_fix(self) -> None:
        self._copy(self.fix_to_copy, "fix")


class _Null:
    def write(self, _: str) -> int:
        return 0

    def flush(self) -> None:
        return None


def layer_body(result, layer, channels=None, waiting: str = "", width: int = 78,
               no_color: bool = False, every: str = "") -> RenderableType:
    """The layer detail: the drill-down (per-channel and per-sample errors) first, then every
    metric, the histogram, nodes and initializers.  ``every``: how the every-sample comparison
    is doing (said in the per-sample block)."""
    from rich.console import Group
    from rich.text import Text

    from drifttui.tui.drill_view import render_drill
    from drifttui.tui.layer_view import render_layer

    return Group(render_layer(result, layer, full=True, head_only=True, no_color=no_color), Text(""),
                 render_drill(result, layer, channels, width=width, waiting=waiting, every=every), Text(""),
                 render_layer(result, layer, full=True, skip_head=True, no_color=no_color))


def layer_detail(result, layer_index: int, channels=None, waiting: str = "", on_close=None,
                 width: int = 78, no_color: bool = False) -> Optional[DetailScreen]:
    from drifttui.tui.tree import display_name

    if result is None or not 0 <= layer_index < len(result.layers):
        return None
    layer = result.layers[layer_index]
    fixes = [f.fix for f in result.findings if f.module == layer.module and f.fix]
    return DetailScreen(f"Layer #{layer.index} {display_name(layer.module)} ({layer.cls})",
                        layer_body(result, layer, channels, waiting, width, no_color),
                        name_to_copy=display_name(layer.module), fix_to_copy=fixes[0] if fixes else "",
                        on_close=on_close)


def step_detail(step, result, stale: str = "") -> DetailScreen:
    from drifttui.tui.step_view import render_step

    from drifttui.tui.tree import display_name

    fix = step.suggestion or (result.headline.fix if result is not None and result.headline else "")
    # a root origin's module is "": it is copied as "(root)", as everywhere else, not refused
    origin = display_name(result.drift_origin.module) if result is not None and result.drift_origin else ""
    return DetailScreen(f"Step {step.step}: {step.title}", render_step(step, result, stale),
                        name_to_copy=origin, fix_to_copy=fix)
