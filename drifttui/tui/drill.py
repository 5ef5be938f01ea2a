"""The drill-down flow of the app (Enter on a layer): a mixin of DriftApp.

The layer detail opens at once.  Its first section says where in the output the error sits:
from ``Layer.channels`` when the result holds them (the origin and the layers around it),
else the engine computes them in a background thread (``engine.drill``: from the capture it
still holds, or one per-layer pass on the worst sample); leaving the screen cancels it.
``a`` on the detail compares the layer on every sample of the run (the capture compared the
layers on the layer samples only): ``engine.drill(every_sample=True)``, in the background, the
per-sample block saying how far it is."""
from __future__ import annotations

from typing import Any, Optional

from drifttui.core.base.progress import CancelToken
from drifttui.tui import runner
from drifttui.tui.runner import DrillDone, DrillProgress
from drifttui.tui.screens.detail import DetailScreen, layer_body, layer_detail

NOT_HELD = ("no per-channel errors in this report for this layer (a report holds them for the drift origin "
            "and the layers around it; older reports for none): open it with its model (drifttui tui "
            "MODEL) to compute them")
COMPUTING = ("computing the per-channel errors (one per-layer pass on the worst sample, in the background; "
             "Esc cancels)…")
NO_MODEL = "comparing every sample needs the model: open it with `drifttui tui MODEL`"


class _Drill:
    """The drill-down on screen: its layer, what it shows, and the computation it waits for."""

    def __init__(self, result: Any, layer: int, screen: DetailScreen, width: int, channels: Any) -> None:
        self.result, self.layer, self.screen, self.width = result, layer, screen, width
        self.channels = channels
        self.token: Optional[CancelToken] = None
        self.every = False          # the computation running is the every-sample one

    def cancel(self) -> None:
        if self.token is not None:
            self.token.cancel()


class DrillMixin:
    _drill: Optional[_Drill] = None
    _every: Optional[tuple[Any, dict]] = None      # (result, layer -> every-sample Channels) of the last `a`s

    def action_layer_detail(self) -> None:
        table = self.table  # type: ignore[attr-defined]
        layer, result = table.cursor_layer, table.result
        if layer is None or result is None:
            self.notify("no layer under the cursor", severity="information")  # type: ignore[attr-defined]
            return
        width = max(40, self.size.width - 2)  # type: ignore[attr-defined]
        channels = getattr(result.layers[layer], "channels", None)
        if self._every is not None and self._every[0] is result and layer in self._every[1]:
            channels = self._every[1][layer]        # `a` ran on this layer of this result: kept
        engine = self.engine  # type: ignore[attr-defined]
        computes = channels is None and engine is not None and hasattr(engine, "drill")
        waiting = "" if channels is not None else COMPUTING if computes else NOT_HELD
        screen = layer_detail(result, layer, channels, waiting, width=width, on_close=self._leave_drill,
                              no_color=self.no_color)  # type: ignore[attr-defined]
        if screen is None:
            return
        drill = _Drill(result, layer, screen, width, channels)
        screen.on_every_sample = lambda: self._every_sample(drill)
        self._drill = drill
        self.push_screen(screen)  # type: ignore[attr-defined]
        if computes:
            self._start_drill(drill, every=False)

    def _start_drill(self, drill: _Drill, every: bool) -> None:
        drill.cancel()
        drill.token, drill.every = CancelToken(), every
        runner.drill_in_thread(self, self.engine, drill.layer, drill.result, drill.token,  # type: ignore[attr-defined]
                               every_sample=every)

    def _leave_drill(self) -> None:
        if self._drill is not None:
            self._drill.cancel()
            self._drill = None

    def _every_sample(self, drill: _Drill) -> None:
        """``a`` on the layer detail: the layer compared on every sample, in the background."""
        engine, ch = self.engine, drill.channels  # type: ignore[attr-defined]
        if ch is not None and len(ch.samples) >= drill.result.samples:
            self.notify(f"the per-sample block already covers all {drill.result.samples} samples",
                        severity="information")  # type: ignore[attr-defined]
            return
        if engine is None or not hasattr(engine, "drill"):
            self.notify(NO_MODEL, severity="warning")  # type: ignore[attr-defined]
            return
        if drill.every and drill.token is not None and not drill.token.cancelled:
            return                      # already comparing
        self._start_drill(drill, every=True)
        self._redraw(drill, every=f"every sample, in the background: 0/{drill.result.samples} (Esc cancels)…")

    def _redraw(self, drill: _Drill, waiting: str = "", every: str = "") -> None:
        drill.screen.update_body(layer_body(drill.result, drill.result.layers[drill.layer], drill.channels,
                                            waiting, drill.width, self.no_color,  # type: ignore[attr-defined]
                                            every=every))

    def _current(self, token: CancelToken) -> Optional[_Drill]:
        drill = self._drill
        if drill is None or token is not drill.token or token.cancelled:
            return None
        return drill

    def on_drill_progress(self, message: DrillProgress) -> None:
        drill = self._current(message.token)
        if drill is None or not drill.every or not message.progress.total:
            return
        p = message.progress
        left = f", about {p.eta:.0f} s left" if p.eta is not None and p.done else ""
        self._redraw(drill, every=f"every sample, in the background: {p.done}/{p.total}{left} (Esc cancels)…")

    def on_drill_done(self, message: DrillDone) -> None:
        drill = self._current(message.token)
        if drill is None:
            return
        drill.token = None
        if message.channels is not None:
            drill.channels = message.channels
            if drill.every:
                if self._every is None or self._every[0] is not drill.result:
                    self._every = (drill.result, {})
                self._every[1][drill.layer] = message.channels
            self._redraw(drill)
        elif drill.every:
            self._redraw(drill, every=f"every-sample comparison failed: {message.message}")
        else:
            self._redraw(drill, waiting=f"per-channel errors not computed: {message.message}")
