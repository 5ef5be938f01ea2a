"""A one-line prompt (a path to save to, a name to search): Enter answers, Esc cancels.

The Input is Textual's *compact* one (no border, one row): a bordered Input is 3 rows high,
and its focus border (``Input:focus``, more specific than any type selector here) would take
the prompt's only row, leaving the typed text and the default path invisible."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class PromptScreen(ModalScreen[str]):
    """Dismisses with the text entered, or "" when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    DEFAULT_CSS = """
    PromptScreen { align: center bottom; }
    PromptScreen > Vertical { width: 100%; height: auto; background: $panel; padding: 0 1; }
    PromptScreen #prompt-label { width: 100%; }
    PromptScreen #prompt-input { height: 1; padding: 0 1; background: $boost; }
    """

    def __init__(self, question: str, value: str = "") -> None:
        super().__init__()
        self.question = question
        self.value = value

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question + "  (Enter ok, Esc cancel)", id="prompt-label")
            yield Input(value=self.value, id="prompt-input", compact=True)

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss("")
