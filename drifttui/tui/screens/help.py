"""The help screen: every key, every status, every column, and how to read the heat cells."""
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
from drifttui.tui.keymap import ACTIONS, COLUMN_HELP, RERUN, STATUS_HELP, STEPS


def _two_columns(rows, width: int = 18) -> Table:
    table = Table(box=None, show_header=False, padding=(0, 1), expand=False)
    table.add_column("key", style="bold", no_wrap=True, width=width)
    table.add_column("what")
    for key, what in rows:
        table.add_row(key, what)
    return table


def help_renderable() -> Group:
    from drifttui.tui.widgets.layer_table import STATUS_STYLES, STATUS_TEXT

    parts: list = []
    sections: dict[str, list[tuple[str, str]]] = {}
    for a in ACTIONS:
        if a.action.startswith("step(") and a.action != "step(1)":
            continue
        row = ("1 … 6", "run (or show) step N; pressing the shown step again reruns it") \
            if a.action == "step(1)" else (a.shown, a.help)
        sections.setdefault(a.section, []).append(row)
    # the debugger's main job first: the six step keys and the reruns (determinism...) fit the
    # first page at 80x24; navigation follows
    for section in [STEPS, RERUN, *[s for s in sections if s not in (STEPS, RERUN)]]:
        parts.append(Text(section, style="bold underline"))
        parts.append(_two_columns(sections[section]))
    parts.append(Text("Statuses", style="bold underline"))
    status_rows = [(Text(STATUS_TEXT.get(s, s), style=STATUS_STYLES.get(s, "")), what) for s, what in STATUS_HELP]
    parts.append(_two_columns(status_rows))
    parts.append(Text("Columns", style="bold underline"))
    parts.append(_two_columns(COLUMN_HELP))
    cells = Text()
    for text, style in legend():
        cells.append(text, style=style)
        cells.append("  ")
    parts.append(Text("Heat cells (glyph + value; bold fails the tolerance)", style="bold underline"))
    parts.append(cells)
    parts.append(Text("Pass/fail is the engine's decision (Layer.fails); a collapsed module shows its "
                      "subtree's worst.  Without colour (NO_COLOR) failing cells are bold and reversed.",
                      style="italic"))
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
