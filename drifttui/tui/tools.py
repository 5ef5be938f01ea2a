"""The app's tool actions: copy (OSC 52), save JSON / SVG, search-and-jump, sort, theme, and
the command palette entries.  A mixin of :class:`drifttui.tui.app.DriftApp`."""
from __future__ import annotations

import os
from functools import partial
from typing import Iterable, Optional

from textual.app import SystemCommand
from textual.screen import Screen

from drifttui.core.result import Config
from drifttui.errors import DriftTuiError
from drifttui.report import json_report
from drifttui.report.escape import terminal
from drifttui.report.outputs import check_output, write_atomic
from drifttui.tui.contrast import LightContrast
from drifttui.tui.keymap import palette_entries
from drifttui.tui.screens.prompt import PromptScreen
from drifttui.tui.tree import SORTS, display_name
from drifttui.tui.widgets.layer_table import SORT_LABEL

LIGHT, DARK = "textual-light", "textual-dark"


def run_inputs(config: Optional[Config]) -> list[str]:
    """The run's input files (model file, --onnx, --inputs): a save never overwrites one."""
    if config is None:
        return []
    files = []
    for spec in (config.model, config.inputs, config.onnx):
        if not spec or spec.startswith(("example:", "shape:")):
            continue
        head = spec.rsplit(":", 1)[0] if ":" in spec and not os.path.exists(spec) else spec
        files.append(head)
    return files


class ToolsMixin:
    search_text: str = ""
    _light_filter: Optional[LightContrast] = None

    # -- the light theme ---------------------------------------------------------------
    def get_line_filters(self):
        """Textual's filters, then the light theme's contrast floor (drifttui.tui.contrast)."""
        if self._light_filter is None:
            self._light_filter = LightContrast(self)
        return [*super().get_line_filters(), self._light_filter]  # type: ignore[misc]

    # -- command palette ---------------------------------------------------------------
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        for a in palette_entries():
            yield SystemCommand(f"{a.title}  ({a.shown})", a.help, partial(self._palette_run, a.action))
        yield from super().get_system_commands(screen)  # type: ignore[misc]

    def _palette_run(self, action: str) -> None:
        self.call_later(self.run_action, action)  # type: ignore[attr-defined]

    # -- copy ------------------------------------------------------------------------
    def _copy(self, text: str, what: str) -> None:
        if not text:
            self.notify(f"nothing to copy: no {what} here", severity="warning")  # type: ignore[attr-defined]
            return
        text = terminal(text)       # a pasted name must not carry a terminal escape
        self.copy_to_clipboard(text)  # type: ignore[attr-defined]
        self.notify(f"copied {what}: {text[:70]}", markup=False)  # type: ignore[attr-defined]

    def _cursor_layer(self):
        table = self.table  # type: ignore[attr-defined]
        i = table.cursor_layer
        return table.result.layers[i] if table.result is not None and i is not None else None

    def action_copy_module(self) -> None:
        layer = self._cursor_layer()
        self._copy(display_name(layer.module) if layer is not None else "", "module name")

    def action_copy_nodes(self) -> None:
        layer = self._cursor_layer()
        self._copy(", ".join(layer.onnx_nodes) if layer is not None else "", "ONNX node name(s)")

    def shown_fix(self) -> str:
        bar = self.steps_bar  # type: ignore[attr-defined]
        step = bar.steps.get(bar.selected) if bar.selected else None
        if step is not None and step.suggestion:
            return step.suggestion
        result = self.shown_result  # type: ignore[attr-defined]
        return result.headline.fix if result is not None and result.headline is not None else ""

    def action_copy_fix(self) -> None:
        self._copy(self.shown_fix(), "fix")

    # -- save ------------------------------------------------------------------------
    def _save(self, path: str, text: str, what: str) -> bool:
        try:
            check_output(path, what, run_inputs(self.config))  # type: ignore[attr-defined]
            write_atomic(path, text, what)
        except (DriftTuiError, OSError) as exc:
            self.notify(terminal(f"not saved: {exc}"), severity="error", timeout=8, markup=False)  # type: ignore[attr-defined]
            return False
        self.notify(terminal(f"saved {what} to {path}"), markup=False)  # type: ignore[attr-defined]
        return True

    def action_save_json(self) -> None:
        result = self.result  # type: ignore[attr-defined]
        if result is None:
            self.notify("no finished result to save yet", severity="warning")  # type: ignore[attr-defined]
            return
        steps = self.steps_bar.steps  # type: ignore[attr-defined]
        if steps:      # the steps run in the app belong to the result on screen
            result = result.with_(steps=[steps[k] for k in sorted(steps)])

        def done(path: Optional[str]) -> None:
            if path:
                self._save(path, json_report.dumps(result) + "\n", "JSON report")

        self.push_screen(PromptScreen("save the result as a JSON report to", "drifttui-report.json"),  # type: ignore[attr-defined]
                         done)

    def action_save_svg(self) -> None:
        def done(path: Optional[str]) -> None:
            if path:
                self.call_after_refresh(lambda: self._save(path, self.export_screenshot(), "SVG screenshot"))  # type: ignore[attr-defined]

        self.push_screen(PromptScreen("save the screen as SVG to", "drifttui-screen.svg"), done)  # type: ignore[attr-defined]

    # -- search, sort, theme -----------------------------------------------------------
    def action_search(self) -> None:
        def done(text: Optional[str]) -> None:
            if text:
                self.search_text = text
                self.action_search_move(1)

        self.push_screen(PromptScreen("search module or class name (then ] next, [ previous)",  # type: ignore[attr-defined]
                                      self.search_text), done)

    def action_search_move(self, direction: int) -> None:
        if not self.search_text:
            self.notify("nothing to search for: ctrl+f first", severity="information")  # type: ignore[attr-defined]
            return
        found = self.table.search(self.search_text, direction)  # type: ignore[attr-defined]
        if found is None:
            self.status.set_state(message=f"no module or class matches {self.search_text!r}")  # type: ignore[attr-defined]
        else:
            self.status.set_state(message=f"search {self.search_text!r}: ] next, [ previous")  # type: ignore[attr-defined]
        self.table.focus()  # type: ignore[attr-defined]

    def action_sort(self) -> None:
        table = self.table  # type: ignore[attr-defined]
        nxt = SORTS[(SORTS.index(table.layer_tree.sort) + 1) % len(SORTS)]
        table.set_sort(nxt)
        self.status.set_state(message="tree order" if nxt is None  # type: ignore[attr-defined]
                              else f"sorted: worst {SORT_LABEL[nxt]} first (w: next order)")

    def action_toggle_theme(self) -> None:
        self.theme = DARK if self.theme == LIGHT else LIGHT  # type: ignore[attr-defined]
