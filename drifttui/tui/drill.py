"""The drill-down flow of the app (Enter on a layer): a mixin of DriftApp.

The layer detail opens at once.  Its first section says where in the output the error sits:
from ``Layer.channels`` when the result holds them (the origin and the layers around it),
else the engine computes them in a background thread (``engine.drill``: from the capture it
still holds, or one per-layer pass on the worst sample); leaving the screen cancels it."""
from __future__ import annotations

from drifttui.core.base.progress import CancelToken
from drifttui.tui import runner
from drifttui.tui.runner import DrillDone
from drifttui.tui.screens.detail import DetailScreen, layer_body, layer_detail

NOT_HELD = ("no per-channel errors in this report for this layer (a report holds them for the drift origin "
            "and the layers around it; older reports for none): open it with its model (drifttui tui "
            "MODEL) to compute them")


class DrillMixin:
    _drill: tuple = ()          # (layer, token, screen) of the drill-down being computed

    def action_layer_detail(self) -> None:
        table = self.table  # type: ignore[attr-defined]
        layer, result = table.cursor_layer, table.result
        if layer is None or result is None:
            self.notify("no layer under the cursor", severity="information")  # type: ignore[attr-defined]
            return
        width = max(40, self.size.width - 2)  # type: ignore[attr-defined]
        channels = getattr(result.layers[layer], "channels", None)
        engine = self.engine  # type: ignore[attr-defined]
        if channels is not None or engine is None or not hasattr(engine, "drill"):
            waiting = "" if channels is not None else NOT_HELD
            self.push_screen(layer_detail(result, layer, channels, waiting, width=width,  # type: ignore[attr-defined]
                                          no_color=self.no_color))  # type: ignore[attr-defined]
            return
        token = CancelToken()
        screen = layer_detail(result, layer, None, width=width, on_close=token.cancel,
                              no_color=self.no_color,  # type: ignore[attr-defined]
                              waiting="computing the per-channel errors (one per-layer pass on the worst "
                                      "sample, in the background; Esc cancels)…")
        self._drill = (layer, token, screen, result, width)
        self.push_screen(screen)  # type: ignore[attr-defined]
        runner.drill_in_thread(self, engine, layer, result, token)

    def on_drill_done(self, message: DrillDone) -> None:
        if not self._drill or message.token is not self._drill[1]:
            return
        layer, token, screen, result, width = self._drill
        self._drill = ()
        if token.cancelled or not isinstance(screen, DetailScreen):
            return
        waiting = "" if message.channels is not None else f"per-channel errors not computed: {message.message}"
        screen.update_body(layer_body(result, result.layers[layer], message.channels, waiting, width,
                                      self.no_color))  # type: ignore[attr-defined]
