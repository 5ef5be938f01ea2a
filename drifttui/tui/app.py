"""The drifttui Textual app.

``DriftApp(engine, config=None, result=None)``: with ``result`` it shows that result
(browse mode); with ``config`` and no result it starts ``engine.run(config)`` in a
background thread worker at once.  Every rerun (toggles, ``r``) runs in an exclusive
thread worker with a fresh :class:`CancelToken`; starting a new run cancels the
previous token.  Workers report back with typed messages; engine errors open a modal
and the app keeps running.  The app never imports torch / onnx / onnxruntime.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Container
from textual.events import Resize
from textual.message import Message
from textual.widgets import Footer, Input

from drifttui.api import CancelToken, Engine, Progress
from drifttui.core.result import Config, Result, Step
from drifttui.errors import Cancelled
from drifttui.tui.quit_on_signal import signals_quit
from drifttui.tui.screens.error import ErrorScreen
from drifttui.tui.screens.help import HelpScreen
from drifttui.tui.widgets.inspector import Inspector
from drifttui.tui.widgets.layer_table import LayerTable
from drifttui.tui.widgets.status import StatusLine
from drifttui.tui.widgets.steps_bar import StepsBar

OPT_LEVELS = ("disable", "basic", "extended", "all")
NARROW_WIDTH = 120      # below this the inspector goes under the table
NO_ENGINE = "reruns need a model: start with `drifttui tui MODEL` (this is a saved report)"


# -- messages from the worker threads ------------------------------------------------
class RunProgress(Message):
    def __init__(self, progress: Progress, token: CancelToken) -> None:
        self.progress, self.token = progress, token
        super().__init__()


class RunDone(Message):
    def __init__(self, result: Result, token: CancelToken) -> None:
        self.result, self.token = result, token
        super().__init__()


class RunFailed(Message):
    def __init__(self, message: str, token: CancelToken, cancelled: bool = False) -> None:
        self.message, self.token, self.cancelled = message, token, cancelled
        super().__init__()


class StepDone(Message):
    def __init__(self, number: int, step: Optional[Step], result: Result, message: str = "",
                 error: bool = False) -> None:
        self.number, self.step, self.result, self.message, self.error = number, step, result, message, error
        super().__init__()


class FilterInput(Input):
    BINDINGS = [Binding("escape", "clear", "Clear filter", show=False)]

    def action_clear(self) -> None:
        self.value = ""
        self.post_message(self.Submitted(self, ""))


class DriftApp(App[int]):
    """The TUI.  ``engine`` may be None to browse a saved result without reruns."""

    CSS_PATH = "app.tcss"
    TITLE = "drifttui"
    ENABLE_COMMAND_PALETTE = False

    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("g", "origin", "Origin"),
        Binding("slash", "filter", "Filter"),
        Binding("f", "only_drift", "Drifting"),
        Binding("i", "toggle_inspector", "Inspector", show=False),
        *[Binding(str(n), f"step({n})", f"Step {n}", show=False) for n in range(1, 7)],
        Binding("n", "step_move(1)", "Next step", show=False),
        Binding("p", "step_move(-1)", "Prev step", show=False),
        Binding("l", "step_layers", "Step layers", show=False),
        Binding("d", "determinism", "Determinism", show=False),
        Binding("o", "opt_level", "Opt level", show=False),
        Binding("plus", "tolerance(10)", "Tol ×10", show=False),
        Binding("minus", "tolerance(0.1)", "Tol ÷10", show=False),
        Binding("z", "zero_input", "Zero input", show=False),
        Binding("r", "rerun", "Rerun"),
        Binding("x", "cancel_run", "Cancel run", show=False),
    ]

    def __init__(self, engine: Optional[Engine] = None, config: Optional[Config] = None,
                 result: Optional[Result] = None) -> None:
        super().__init__()
        self.engine = engine
        self.result = result
        self.config = config if config is not None else (result.config if result is not None else None)
        self.running = False
        self.run_tokens: list[CancelToken] = []     # every run's token, in order (tests look)
        self._token: Optional[CancelToken] = None
        self._layer_cycle = 0

    # -- layout ------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        with Container(id="main"):
            yield LayerTable(id="table")
            yield Inspector(id="inspector")
        yield FilterInput(placeholder="filter: module or class name (Enter keeps, Esc clears)",
                          id="filter", classes="hidden")
        yield StepsBar(id="steps")
        yield Footer()

    @property
    def table(self) -> LayerTable:
        return self.query_one(LayerTable)

    @property
    def inspector(self) -> Inspector:
        return self.query_one(Inspector)

    @property
    def steps_bar(self) -> StepsBar:
        return self.query_one(StepsBar)

    @property
    def status(self) -> StatusLine:
        return self.query_one(StatusLine)

    def on_mount(self) -> None:
        self._apply_layout(self.size.width)
        self.table.focus()
        self.status.set_state(config=self.config)
        if self.result is not None:
            self._show(self.result)
        elif self.config is not None and self.engine is not None:
            self.start_run(self.config)
        elif self.config is None:
            self.status.set_state(message="nothing to show: give a model or a report")

    def on_resize(self, event: Resize) -> None:
        self._apply_layout(event.size.width)

    def _apply_layout(self, width: int) -> None:
        self.query_one("#main").set_class(width < NARROW_WIDTH, "narrow")

    def _show(self, result: Result) -> None:
        self.table.set_result(result)
        self.steps_bar.set_steps(result.steps)
        self.status.set_state(result=result)

    def on_layer_table_cursor_moved(self, event: LayerTable.CursorMoved) -> None:
        self.inspector.show(self.table.result, event.layer)

    # -- runs ----------------------------------------------------------------------
    @property
    def can_rerun(self) -> bool:
        return self.engine is not None and self.config is not None

    def start_run(self, config: Config) -> Optional[CancelToken]:
        """Cancel the current run (if any) and start ``engine.run(config)`` in a worker."""
        if self.engine is None:
            self.status.set_state(message=NO_ENGINE)
            return None
        if self._token is not None:
            self._token.cancel()
        token = CancelToken()
        self._token = token
        self.run_tokens.append(token)
        self.config = config
        self.running = True
        self.status.set_state(config=config, running=True, message="")
        self._run_worker(config, token)
        return token

    @work(thread=True, exclusive=True, group="run", exit_on_error=False)
    def _run_worker(self, config: Config, token: CancelToken) -> None:
        assert self.engine is not None

        def progress(p: Progress) -> None:
            if not token.cancelled:
                self.post_message(RunProgress(p, token))

        try:
            result = self.engine.run(config, progress, token)
        except Cancelled:
            self.post_message(RunFailed("cancelled", token, cancelled=True))
            return
        except BaseException as err:  # noqa: BLE001 - any engine failure becomes a modal
            self.post_message(RunFailed(str(err) or type(err).__name__, token))
            return
        if token.cancelled:
            self.post_message(RunFailed("cancelled", token, cancelled=True))
        else:
            self.post_message(RunDone(result, token))

    def on_run_progress(self, message: RunProgress) -> None:
        if message.token is not self._token:
            return
        self.status.set_state(progress=message.progress)
        if message.progress.partial is not None:
            self.table.set_result(message.progress.partial)
            self.status.set_state(result=message.progress.partial)

    def on_run_done(self, message: RunDone) -> None:
        if message.token is not self._token:
            return
        self.running = False
        self.result = message.result
        self.status.set_state(running=False, message="")
        self._show(message.result)

    def on_run_failed(self, message: RunFailed) -> None:
        if message.token is not self._token:
            return
        self.running = False
        self.status.set_state(running=False, message="run cancelled" if message.cancelled else "run failed")
        if not message.cancelled:
            self.push_screen(ErrorScreen(message.message))

    def _rerun_with(self, **changes) -> None:
        if not self.can_rerun:
            self.status.set_state(message=NO_ENGINE)
            self.notify(NO_ENGINE, severity="warning")
            return
        assert self.config is not None
        self.start_run(dataclasses.replace(self.config, **changes))

    def action_rerun(self) -> None:
        self._rerun_with()

    def action_determinism(self) -> None:
        if self.config is not None:
            self._rerun_with(deterministic=not self.config.deterministic)

    def action_opt_level(self) -> None:
        if self.config is not None:
            cur = self.config.opt_level
            nxt = OPT_LEVELS[(OPT_LEVELS.index(cur) + 1) % len(OPT_LEVELS)] if cur in OPT_LEVELS else OPT_LEVELS[0]
            self._rerun_with(opt_level=nxt)

    def action_tolerance(self, factor: float) -> None:
        if self.config is not None:
            self._rerun_with(atol=float(f"{self.config.atol * factor:.3g}"),
                             rtol=float(f"{self.config.rtol * factor:.3g}"))

    def action_zero_input(self) -> None:
        if self.config is not None:
            self._rerun_with(zero_input=not self.config.zero_input)

    def action_cancel_run(self) -> None:
        if self._token is not None and self.running:
            self._token.cancel()
            self.running = False
            self.status.set_state(running=False, message="run cancelled")

    # -- steps ---------------------------------------------------------------------
    def action_step(self, number: int) -> None:
        bar = self.steps_bar
        already_shown = bar.selected == number
        bar.selected = number
        self._layer_cycle = 0
        if number in bar.running or (number in bar.steps and not already_shown):
            bar.refresh_view()
            return
        result = self.table.result if self.result is None else self.result
        if self.engine is None or result is None:
            if number not in bar.steps:
                bar.messages[number] = (f"step {number} not available: "
                                        + ("no result yet" if result is None else "no engine (saved report)"))
            bar.refresh_view()
            return
        bar.running.add(number)
        bar.messages.pop(number, None)
        bar.refresh_view()
        self._step_worker(number, result)

    @work(thread=True, group="steps", exit_on_error=False)
    def _step_worker(self, number: int, result: Result) -> None:
        assert self.engine is not None
        try:
            step = self.engine.step(number, result)
        except (NotImplementedError, ModuleNotFoundError, ImportError):
            self.post_message(StepDone(number, None, result, f"step {number} not available yet"))
            return
        except Cancelled:
            self.post_message(StepDone(number, None, result, f"step {number} cancelled"))
            return
        except BaseException as err:  # noqa: BLE001
            self.post_message(StepDone(number, None, result, str(err) or type(err).__name__, error=True))
            return
        self.post_message(StepDone(number, step, result))

    def on_step_done(self, message: StepDone) -> None:
        bar = self.steps_bar
        bar.running.discard(message.number)
        current = self.result if self.result is not None else self.table.result
        if message.result is not current:
            bar.refresh_view()
            return
        if message.step is not None:
            bar.steps[message.number] = message.step
        else:
            bar.messages[message.number] = message.message
            if message.error:
                self.push_screen(ErrorScreen(message.message, title=f"Step {message.number} failed"))
        bar.refresh_view()

    def action_step_move(self, delta: int) -> None:
        cur = self.steps_bar.selected or (0 if delta > 0 else 7)
        self.action_step(max(1, min(6, cur + delta)))

    def action_step_layers(self) -> None:
        bar = self.steps_bar
        step = bar.steps.get(bar.selected) if bar.selected else None
        if step is None or not step.layers:
            self.notify("the shown step names no layer", severity="information")
            return
        layer = step.layers[self._layer_cycle % len(step.layers)]
        self._layer_cycle += 1
        self.table.go_to_layer(layer)
        self.table.focus()

    # -- view ----------------------------------------------------------------------
    def action_origin(self) -> None:
        if not self.table.go_to_origin():
            self.notify("no drift origin in this result", severity="information")
        self.table.focus()

    def action_filter(self) -> None:
        box = self.query_one(FilterInput)
        box.remove_class("hidden")
        box.value = self.table.layer_tree.filter_text
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if isinstance(event.input, FilterInput):
            self.table.set_filter(text=event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if isinstance(event.input, FilterInput):
            self.table.set_filter(text=event.value)
            if not event.value:
                event.input.add_class("hidden")
            self.table.focus()

    def action_only_drift(self) -> None:
        self.table.set_filter(only_drift=not self.table.layer_tree.only_drift)
        self.status.set_state(message="only drifting/inherited rows" if self.table.layer_tree.only_drift else "all rows")

    def action_toggle_inspector(self) -> None:
        self.inspector.toggle_class("hidden")
        if self.inspector.has_class("hidden") and self.focused is self.inspector:
            self.table.focus()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())


def run_app(engine: Optional[Engine] = None, config: Optional[Config] = None,
            result: Optional[Result] = None) -> int:
    """Run the TUI until the user quits; returns the app's return code (0 after a normal quit,
    non-zero after a crash: Textual sets it when an exception ends the app)."""
    app = DriftApp(engine, config=config, result=result)
    with signals_quit(app):
        code = app.run()
    return int(app.return_code or code or 0)
