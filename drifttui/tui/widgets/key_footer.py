"""The footer: one line with the keys of the focused pane (table, inspector, filter box).

One widget drawing one Text (Textual's Footer is a widget per key: every layout of the screen
arranged them all, a third of a full frame on a 10,000-row table)."""
from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from drifttui.tui.keymap import footer_keys

KEEP = ("?", "q")       # the keys a footer never leaves out: everything else is in the help


class KeyFooter(Static):
    DEFAULT_CSS = """
    KeyFooter { height: 1; background: $panel; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.pane = ""
        self.show_for("table")

    def show_for(self, pane: str) -> None:
        if pane == self.pane:
            return
        self.pane = pane
        self.update(self.keys_text())

    def keys_text(self) -> Text:
        """The pane's keys, in their short forms when the long ones do not fit the width."""
        width = self.content_region.width if self.is_mounted and self.content_region.width > 10 else 78
        text = _keys(footer_keys(self.pane))
        if text.cell_len <= width:
            return text
        pairs = footer_keys(self.pane, short=True)
        # still too wide (60 columns): leave out keys from the right, never Help or Quit
        while _keys(pairs).cell_len > width and len(pairs) > 2:
            droppable = [i for i, (key, _) in enumerate(pairs) if key not in KEEP]
            if not droppable:
                break
            del pairs[droppable[-1]]
        return _keys(pairs)

    def on_resize(self) -> None:
        self.update(self.keys_text())


def _keys(pairs: list[tuple[str, str]]) -> Text:
    text = Text(no_wrap=True, overflow="crop")
    for n, (key, title) in enumerate(pairs):
        if n:
            text.append("  ")
        text.append(key, style="bold reverse")
        text.append(f" {title}")
    return text
