"""The table's filters in the app (/ by name, f drifting only, Esc clears): a mixin of DriftApp."""
from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Input


class FilterInput(Input):
    BINDINGS = [Binding("escape", "clear", "Clear filter")]

    def action_clear(self) -> None:
        self.value = ""
        self.post_message(self.Submitted(self, ""))


class FilterMixin:
    """Needs the app's ``table`` and ``status`` (drifttui.tui.app.DriftApp)."""

    def action_filter(self) -> None:
        box = self.query_one(FilterInput)
        self.query_one("#filter-bar").remove_class("hidden")
        box.value = self.table.layer_tree.filter_text
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if isinstance(event.input, FilterInput):
            self.table.set_filter(text=event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if isinstance(event.input, FilterInput):
            self.table.set_filter(text=event.value)
            if not event.value:
                self.query_one("#filter-bar").add_class("hidden")
            self.table.focus()

    def action_clear_filter(self) -> None:
        """Esc in the table: drop a kept filter (name and drifting-only) and its line."""
        tree = self.table.layer_tree
        if not tree.filtering:
            return
        self.query_one(FilterInput).value = ""
        self.query_one("#filter-bar").add_class("hidden")
        self.table.set_filter(text="", only_drift=False)
        self.status.set_state(message="filter cleared: all rows")

    def action_only_drift(self) -> None:
        self.table.set_filter(only_drift=not self.table.layer_tree.only_drift)
        self.status.set_state(message="only drifting rows" if self.table.layer_tree.only_drift else "all rows")
