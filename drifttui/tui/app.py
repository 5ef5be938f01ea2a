"""The drifttui Textual app.

``DriftApp(engine, config=None, result=None)``: with ``result`` it shows that result
(browse mode); with ``config`` and no result it starts ``engine.run(config)`` at once.
Engine calls run in daemon threads (drifttui.tui.runner) with a fresh CancelToken each;
a new run cancels the previous one.  The state on screen is honest: the configuration line
is the configuration of the result shown (a rerun in progress shows as "→ change"), step
results are kept across reruns and marked stale when they ran on another configuration.
The app never imports torch / onnx / onnxruntime.
"""
from __future__ import annotations

import dataclasses
import sys
import time
from typing import Optional

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Container, Horizontal
from textual.events import DescendantFocus, Resize
from textual.widgets import Label

from drifttui.api import CancelToken, Engine, LocalEngine
from drifttui.core.result import OPT_LEVELS, Config, Result
from drifttui.report.escape import terminal_data
from drifttui.signals import end_now
from drifttui.tui import runner
from drifttui.tui.keymap import bindings_spec
from drifttui.tui.runner import RunDone, RunFailed, RunProgress
from drifttui.tui.quit_on_signal import signals_quit
from drifttui.tui.compose import ComposeMixin
from drifttui.tui.drill import DrillMixin
from drifttui.tui.filtering import FilterInput, FilterMixin
from drifttui.tui.screens.error import ErrorScreen
from drifttui.tui.screens.help import HelpScreen
from drifttui.tui.step_actions import StepActionsMixin
from drifttui.tui.tools import ToolsMixin
from drifttui.tui.widgets.inspector import Inspector
from drifttui.tui.widgets.key_footer import KeyFooter
from drifttui.tui.widgets.layer_table import LayerTable
from drifttui.tui.widgets.profile import ProfileStrip
from drifttui.tui.widgets.status import StatusLine
from drifttui.tui.widgets.steps_bar import StepsBar

NARROW_WIDTH = 120      # below this the inspector is hidden (i shows it under the table)
NO_ENGINE = "reruns need a model: start with `drifttui tui MODEL` (this is a saved report)"
ANYWHERE = {"quit", "command_palette", "toggle_theme", "save_svg"}     # keys that work on every screen
QUIT_WAIT = 0.5         # seconds run_app waits for engine threads to notice a cancel


class DriftApp(FilterMixin, DrillMixin, ComposeMixin, ToolsMixin, StepActionsMixin, App[int]):
    """The TUI.  ``engine`` may be None to browse a saved result without reruns."""

    CSS_PATH = "app.tcss"
    TITLE = "drifttui"

    BINDINGS = [
        *[Binding(keys, action, title, show=show) for keys, action, title, show in bindings_spec()],
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
    ]

    def __init__(self, engine: Optional[Engine] = None, config: Optional[Config] = None,
                 result: Optional[Result] = None, stages: Optional[list[str]] = None) -> None:
        super().__init__()
        self.engine = engine
        self.stages = list(stages or [])        # --stages: the pipeline `b` bisects
        self.result = result
        self.config = result.config if result is not None else config   # of the result on screen
        self.pending: Optional[Config] = None                           # of the run in progress
        self._token: Optional[CancelToken] = None
        self._step_tokens: dict[int, CancelToken] = {}
        self._layer_cycle = 0
        self._inspector_wanted: Optional[bool] = None   # None: by width
        self._progress = None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The main screen's keys act only on the main screen: over the help, a dialog, a
        prompt or a detail screen, `d` must not start a rerun behind the user's back."""
        if action in ANYWHERE or self.screen is self.screen_stack[0]:
            return True
        return False

    # -- layout ------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        yield ProfileStrip(id="profile")
        with Container(id="main"):
            yield LayerTable(id="table")
            yield Inspector(id="inspector")
        with Horizontal(id="filter-bar", classes="hidden"):
            yield Label("filter /", id="filter-label")
            yield FilterInput(placeholder="module or class name (Enter keeps, Esc clears)", id="filter",
                              compact=True)
        yield StepsBar(id="steps")
        yield KeyFooter(id="footer")

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

    @property
    def running(self) -> bool:
        return self.pending is not None

    @property
    def shown_result(self) -> Optional[Result]:
        """The result on screen: the finished one, or the first run's partial one."""
        return self.result if self.result is not None else self.table.result

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

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        """The footer follows the focused pane."""
        pane = {Inspector: "inspector", FilterInput: "filter"}.get(type(event.widget), "table")
        for footer in self.query(KeyFooter):
            footer.show_for(pane)

    def on_resize(self, event: Resize) -> None:
        self._apply_layout(event.size.width)

    def _apply_layout(self, width: int) -> None:
        narrow = width < NARROW_WIDTH
        self.query_one("#main").set_class(narrow, "narrow")
        show = self._inspector_wanted if self._inspector_wanted is not None else not narrow
        self.inspector.set_class(not show, "hidden")

    def _show(self, result: Result) -> None:
        self.config = result.config
        shown = terminal_data(result)       # names are untrusted: the screen gets them escaped
        self.table.set_result(shown)
        self.query_one(ProfileStrip).show(shown)
        bar = self.steps_bar
        bar.show_result(result)
        bar.notes = list(shown.notes)          # escaped for the screen
        bar.refresh_view()
        self.status.set_state(result=shown, config=result.config)

    def on_layer_table_cursor_moved(self, event: LayerTable.CursorMoved) -> None:
        partial = self._progress if self.result is None and self.running else None
        for inspector in self.query(Inspector):      # none while the app shuts down
            inspector.show(self.table.result, event.layer, progress=partial)

    # -- runs ----------------------------------------------------------------------
    def start_run(self, config: Config) -> Optional[CancelToken]:
        """Cancel the current run (if any) and start ``engine.run(config)`` in a thread."""
        if self.engine is None:
            self.status.set_state(message=NO_ENGINE)
            return None
        if self._token is not None:
            self._token.cancel()
        token = CancelToken()
        self._token = token
        self.pending = config
        self._progress = None
        self.status.set_state(pending=config, running=True, message="")
        runner.run_in_thread(self, self.engine, config, token)
        return token

    def on_run_progress(self, message: RunProgress) -> None:
        if message.token is not self._token or not self.running:
            return
        self._progress = message.progress
        self.status.set_state(progress=message.progress)
        # partial results only while nothing else is on screen: a rerun keeps the shown result
        # (and its configuration line) until it is done
        if message.progress.partial is not None and self.result is None:
            partial = terminal_data(message.progress.partial)
            self.table.set_result(partial)
            self.query_one(ProfileStrip).show(partial)
            self.status.set_state(result=partial)
        elif self.result is None and self.table.result is not None:
            # the inspector's "partial result: the run is at 7/20" follows the run
            for inspector in self.query(Inspector):
                if inspector.display:
                    inspector.show(self.table.result, self.table.cursor_layer, progress=message.progress)

    def on_run_done(self, message: RunDone) -> None:
        if message.token is not self._token or not self.running:
            return
        self.pending = None
        self.result = message.result
        self.status.set_state(running=False, message="")
        self._show(message.result)

    def on_run_failed(self, message: RunFailed) -> None:
        if message.token is not self._token or not self.running:
            return
        self.pending = None
        self.status.set_state(running=False, message="run cancelled" if message.cancelled else "run failed")
        if not message.cancelled:
            self.push_screen(ErrorScreen(message.message))

    def _rerun_with(self, **changes) -> None:
        base = self.pending or self.config
        if self.engine is None or base is None:
            self.status.set_state(message=NO_ENGINE)
            self.notify(NO_ENGINE, severity="warning")
            return
        self.start_run(dataclasses.replace(base, **changes))

    def _base(self) -> Optional[Config]:
        return self.pending or self.config

    def action_rerun(self) -> None:
        self._rerun_with()

    def action_determinism(self) -> None:
        if (base := self._base()) is not None:
            self._rerun_with(deterministic=not base.deterministic)

    def action_opt_level(self) -> None:
        if (base := self._base()) is not None:
            cur = base.opt_level
            nxt = OPT_LEVELS[(OPT_LEVELS.index(cur) + 1) % len(OPT_LEVELS)] if cur in OPT_LEVELS else OPT_LEVELS[0]
            self._rerun_with(opt_level=nxt)

    def action_tolerance(self, factor: float) -> None:
        if (base := self._base()) is not None:
            self._rerun_with(atol=float(f"{base.atol * factor:.3g}"), rtol=float(f"{base.rtol * factor:.3g}"))

    def action_zero_input(self) -> None:
        if (base := self._base()) is not None:
            self._rerun_with(zero_input=not base.zero_input)

    def action_cancel(self) -> None:
        """Cancel the running capture; if none, the running step(s)."""
        if self._token is not None and self.running:
            self._token.cancel()
            self.pending = None
            self.status.set_state(running=False, message="run cancelled: the result on screen is unchanged")
            return
        bar = self.steps_bar
        if bar.running:
            for n in sorted(bar.running):
                self._step_tokens[n].cancel()
                bar.messages[n] = f"step {n} cancelled"
            bar.running.clear()
            bar.refresh_view()
            return
        self.notify("nothing is running", severity="information")   # a toast: it stayed in the status line

    # -- view ----------------------------------------------------------------------
    def action_origin(self) -> None:
        if not self.table.go_to_origin():
            self.notify("no drift origin in this result", severity="information")
        self.table.focus()

    def action_toggle_inspector(self) -> None:
        self._inspector_wanted = self.inspector.has_class("hidden")
        self._apply_layout(self.size.width)
        if self.inspector.has_class("hidden") and self.focused is self.inspector:
            self.table.focus()

    def action_table(self, name: str) -> None:
        """A layer-table action from the command palette (its keys work in the table itself)."""
        getattr(self.table, f"action_{name}")()
        self.table.focus()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def live_tokens(self) -> list[CancelToken]:
        """The cancel tokens of the run and the steps that may still be working."""
        return [t for t in [self._token, *self._step_tokens.values()] if t is not None]

    async def action_quit(self) -> None:
        """Quit at once: cancel what runs; run_app waits a moment for the threads."""
        busy = self.running or bool(self.steps_bar.running)
        for token in self.live_tokens():
            token.cancel()
        if busy:
            self.status.set_state(running=False, message="stopping…")
            # the engine thread holds the GIL between its C calls: hand it over 10x more often
            # so that the UI's shutdown is not starved on a loaded machine (issue 23, item 19)
            sys.setswitchinterval(0.0005)
        self._leave_drill()
        self.exit(0)


def run_app(engine: Optional[Engine] = None, config: Optional[Config] = None,
            result: Optional[Result] = None, stages: Optional[list[str]] = None) -> int:
    """Run the TUI until the user quits; returns the app's return code (0 after a normal quit,
    non-zero after a crash, 128 + signum after SIGTERM/SIGHUP).

    If an engine thread is still busy after the app exits (a capture between two
    cancellation checks), say "stopping…", give it QUIT_WAIT seconds, then leave without
    waiting for it: nothing is being written, and a quit must never look like a hang.

    With the real engine (``LocalEngine``, torch and ONNX Runtime loaded) the process then ends
    at once (``os._exit``, after flushing): the interpreter's own teardown of torch modules and
    ORT sessions (one of them mid-run on a cancelled thread) took 14 s on a loaded machine
    after the screen had already gone (issue 23, item 19).  Every file the app writes is
    written atomically and closed before this point."""
    app = DriftApp(engine, config=config, result=result, stages=stages)
    with signals_quit(app):
        ran = app.run()
    # Textual sets return_code when an exception ends the app: a crash exits non-zero
    code = int(app.return_code or ran or 0)
    threads = runner.alive_threads()
    if threads:
        sys.stderr.write("drifttui: stopping…\n")
        sys.stderr.flush()
        deadline = time.monotonic() + QUIT_WAIT
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        if runner.alive_threads():
            end_now(code)
    if isinstance(engine, LocalEngine) and runner.started_any():
        end_now(code)
    return code
