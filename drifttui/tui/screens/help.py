"""The help screen: every key, and how to read the heat cells."""
from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from drifttui.tui.heat import legend
from drifttui.tui.keymap import KEYMAP


def help_renderable() -> Group:
    parts: list = []
    for section, keys in KEYMAP:
        parts.append(Text(section, style="bold underline"))
        table = Table(box=None, show_header=False, padding=(0, 1), expand=False)
        table.add_column("key", style="bold", no_wrap=True, width=20)
        table.add_column("what")
        for key, what in keys:
            table.add_row(key, what)
        parts.append(table)
    cells = Text()
    for text, style in legend():
        cells.append(text, style=style)
        cells.append("  ")
    parts.append(Text("Heat cells (glyph + value; bold fails the tolerance)", style="bold underline"))
    parts.append(cells)
    parts.append(Text("abs and local vs atol, rel vs rtol, 1-cos vs max(rtol²/2, 1e-6); a collapsed module shows "
                      "its subtree's worst.  ◆ marks the drift origin: the first module whose own "
                      "error fails the tolerance.", style="dim"))
    return Group(*parts)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 90; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll() as scroll:
            scroll.border_title = "drifttui keys (Esc closes)"
            yield Static(help_renderable())

    def action_close(self) -> None:
        self.dismiss(None)
