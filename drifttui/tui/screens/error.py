"""A modal that shows an engine error's one-line message; the app keeps running.

The message is shown literally (never parsed as markup: a path with ``[/b]`` in it, or ORT's
``[ONNXRuntimeError]`` prefix, are text) and wrapped to the modal's width, so the op name at
the end of a long message stays visible."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from drifttui.report.escape import terminal


class ErrorScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,enter,q", "close", "Close")]

    DEFAULT_CSS = """
    ErrorScreen { align: center middle; }
    ErrorScreen > Vertical {
        width: 70; max-width: 95%; height: auto; border: thick $error; background: $surface;
        padding: 1 2;
    }
    ErrorScreen #error-title { text-style: bold; color: $error; }
    ErrorScreen #error-message { margin: 1 0; width: 100%; height: auto; max-height: 20; overflow-y: auto; }
    ErrorScreen Button { width: 100%; }
    """

    def __init__(self, message: str, title: str = "The engine reported an error") -> None:
        super().__init__()
        self.message = message
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(terminal(self.title_text), id="error-title", markup=False)
            yield Static(terminal(self.message, keep_newlines=True), id="error-message", markup=False)
            yield Button("OK (Esc)", variant="error", id="error-ok")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None)

    def action_close(self) -> None:
        self.dismiss(None)
