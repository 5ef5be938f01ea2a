"""The six steps' keys: run a step in the background (1-6, [ and ]), follow its progress, take the cursor to
the layers it names, open its detail.  A mixin of :class:`drifttui.tui.app.DriftApp`; a step's result stays
on the steps bar across reruns and is marked stale when it ran on another configuration."""
from __future__ import annotations

from drifttui.api import CancelToken
from drifttui.report.escape import terminal_data
from drifttui.tui import runner
from drifttui.tui.runner import StepDone, StepProgress
from drifttui.tui.screens.detail import step_detail
from drifttui.tui.screens.error import ErrorScreen


class StepActionsMixin:
    """Step actions and messages; the app provides ``steps_bar``, ``table``, ``engine`` and ``shown_result``."""

    def action_step(self, number: int) -> None:
        bar = self.steps_bar
        already_shown = bar.selected == number
        bar.selected = number
        self._layer_cycle = 0
        if number in bar.running or (number in bar.steps and not already_shown):
            bar.refresh_view()
            return
        result = self.shown_result
        if self.engine is None or result is None:
            if number not in bar.steps:
                bar.messages[number] = (f"step {number} not available: "
                                        + ("no result yet" if result is None else "no engine (saved report)"))
            bar.refresh_view()
            return
        token = CancelToken()
        self._step_tokens[number] = token
        bar.running.add(number)
        bar.progress.pop(number, None)
        bar.messages.pop(number, None)
        bar.refresh_view()
        runner.step_in_thread(self, self.engine, number, result, token)

    def on_step_progress(self, message: StepProgress) -> None:
        bar = self.steps_bar
        if message.number in bar.running:
            bar.set_progress(message.number, message.progress)
            bar.refresh_view()

    def on_step_done(self, message: StepDone) -> None:
        bar = self.steps_bar
        if message.number not in bar.running:      # cancelled meanwhile
            return
        bar.running.discard(message.number)
        if message.step is not None:
            bar.set_step(message.step, message.result.config, message.result)
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

    def action_step_detail(self) -> None:
        bar = self.steps_bar
        step = bar.steps.get(bar.selected) if bar.selected else None
        if step is None:
            self.notify("no step result shown: press 1-6 first", severity="information")
            return
        self.push_screen(step_detail(terminal_data(step), terminal_data(self.shown_result), bar.stale(step.step)))
