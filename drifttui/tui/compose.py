"""The compositions and the served model in the app: a mixin of DriftApp.

* ``v``: the served model (Triton, docs/triton.md): the verdict, the file's outputs and the served
  ones side by side, the config fields that changed the run, the batch sweep, the served run's cost.
  It only renders the result on screen (``Result.served`` / ``.batch_sweep``).
* ``b``: the stage bisect of ``drifttui tui MODEL --stages RAW.onnx ... DEPLOYED.onnx`` (docs/bisect.md);
* ``a``: the tolerance from the measured noise floor (the advice against the tolerance on screen).

``b`` and ``a`` run the engine's composition (``engine.bisect`` / ``engine.tolerance``) in a daemon
thread, like the drill-down: the screen opens at once saying what runs, the progress follows, Esc
cancels.  A finished one is kept for the configuration it ran on (shown again at once).
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from rich.text import Text
from textual.message import Message

from drifttui.core.base.progress import CancelToken, Progress
from drifttui.core.result import Config
from drifttui.errors import Cancelled
from drifttui.report.escape import terminal, terminal_data
from drifttui.tui import runner
from drifttui.tui.compose_view import bisect_screen, tolerance_screen
from drifttui.tui.screens.detail import DetailScreen
from drifttui.tui.served_view import served_screen
from drifttui.tui.widgets.status import progress_text

NO_STAGES = ("no deployment pipeline given: start with `drifttui tui MODEL --stages RAW.onnx [STEP.onnx ...] "
             "DEPLOYED.onnx` (docs/bisect.md)")
OUTER_STAGES = ("noise", "stage")     # the counted stages of a composed run (the engine's Progress.stage)
KINDS = {"bisect": ("Stage bisect", "bisecting the stages: torch against every file, each against the one before"),
         "tolerance": ("Tolerance from the noise floor",
                       "measuring the noise floor: ORT levels disable and all, 1 and many threads")}


class ComposeProgress(Message):
    def __init__(self, kind: str, progress: Progress, token: CancelToken) -> None:
        self.kind, self.progress, self.token = kind, progress, token
        super().__init__()


class ComposeDone(Message):
    """``data`` (None: ``message`` says why) of the composition ``kind`` run on ``config``."""

    def __init__(self, kind: str, config: Config, data: Optional[dict], token: CancelToken, message: str = "") -> None:
        self.kind, self.config, self.data, self.token, self.message = kind, config, data, token, message
        super().__init__()


def compose_in_thread(app: Any, kind: str, call: Callable[..., dict], config: Config, token: CancelToken) -> None:
    """``call(progress, token)``; posts ComposeProgress, then ComposeDone."""

    def progress(p: Progress) -> None:
        if not token.cancelled:
            app.post_message(ComposeProgress(kind, p, token))

    def work() -> None:
        try:
            data = call(progress, token)
        except Cancelled:
            app.post_message(ComposeDone(kind, config, None, token, "cancelled"))
            return
        except BaseException as err:  # noqa: BLE001 - any engine failure is said on the screen
            app.post_message(ComposeDone(kind, config, None, token, str(err) or type(err).__name__))
            return
        app.post_message(ComposeDone(kind, config, None if token.cancelled else data, token,
                                     "cancelled" if token.cancelled else ""))

    runner.start(work, f"drifttui-{kind}")


class ComposeMixin:
    stages: list[str] = []

    def _compose_state(self) -> dict:
        if not hasattr(self, "_compose_runs"):
            self._compose_runs: dict = {"done": {}, "running": {}}
        return self._compose_runs

    # -- v: the served model ------------------------------------------------------------
    def action_served(self) -> None:
        result = self.shown_result  # type: ignore[attr-defined]
        if result is None:
            self.notify("no result yet", severity="information")  # type: ignore[attr-defined]
            return
        shown = terminal_data(result)
        title = f"Served model {shown.served.model}" if shown.served is not None else "Outputs"
        self.push_screen(DetailScreen(title, served_screen(shown)))  # type: ignore[attr-defined]

    # -- b / a: the compositions --------------------------------------------------------
    def action_bisect(self) -> None:
        if not self.stages:
            self.notify(NO_STAGES, severity="warning", timeout=8)  # type: ignore[attr-defined]
            return
        stages = list(self.stages)
        self._open_compose("bisect", lambda engine, cfg, p, t: engine.bisect(cfg, stages, p, t))

    def action_advise_tolerance(self) -> None:
        self._open_compose("tolerance", lambda engine, cfg, p, t: engine.tolerance(cfg, p, t))

    def _open_compose(self, kind: str, call: Callable[..., dict]) -> None:
        title, doing = KINDS[kind]
        config, engine = self.config, self.engine  # type: ignore[attr-defined]
        state = self._compose_state()
        done = state["done"].get((kind, config))
        if done is not None:
            self.push_screen(DetailScreen(title, _render(kind, done)))  # type: ignore[attr-defined]
            return
        if engine is None or config is None or not hasattr(engine, kind):
            why = "no model (a saved report)" if engine is None or config is None else "this engine cannot"
            self.notify(f"{title.lower()} not available: {why}", severity="warning")  # type: ignore[attr-defined]
            return
        token = CancelToken()
        screen = DetailScreen(title, Text(f"{doing} (in the background; Esc cancels)…", style="italic"),
                              on_close=token.cancel)
        state["running"][kind] = (token, screen, doing)
        state.setdefault("outer", {}).pop(kind, None)
        self.push_screen(screen)  # type: ignore[attr-defined]
        compose_in_thread(self, kind, lambda p, t: call(engine, config, p, t), config, token)

    def on_compose_progress(self, message: ComposeProgress) -> None:
        running = self._compose_state()["running"].get(message.kind)
        if running is None or running[0] is not message.token:
            return
        token, screen, doing = running
        p = message.progress
        outer = self._compose_state().setdefault("outer", {})
        if p.total and p.stage in OUTER_STAGES:      # which setting / stage of the run this is
            outer[message.kind] = f"{terminal(p.message)} ({p.done + 1}/{p.total})"
        body = Text(f"{doing} (in the background; Esc cancels)…\n", style="italic")
        if outer.get(message.kind) and p.stage not in OUTER_STAGES:
            body.append(outer[message.kind] + " · ", style="bold")   # it said "samples 20/20" of which of 4?
        body.append_text(progress_text(p))
        screen.update_body(body)

    def on_compose_done(self, message: ComposeDone) -> None:
        state = self._compose_state()
        running = state["running"].get(message.kind)
        if running is None or running[0] is not message.token:
            return
        del state["running"][message.kind]
        token, screen, _ = running
        if message.data is None:
            if not token.cancelled:
                screen.update_body(Text(f"{KINDS[message.kind][0]} failed: {message.message}", style="bold red"))
            return
        data = terminal_data(message.data)      # file and module names are untrusted
        state["done"][(message.kind, message.config)] = data
        screen.update_body(_render(message.kind, data))


def _render(kind: str, data: dict):
    return bisect_screen(data) if kind == "bisect" else tolerance_screen(data)
