"""Where in a layer's output the error sits (the drill-down): part of the Result, tolerance-free."""
from __future__ import annotations

from dataclasses import dataclass


MAX_CHANNELS = 1024     # Channels.max_abs entries at most: wider outputs are pooled in groups


# Channels.source of the root's own values (its own ONNX nodes fed from torch, from the capture's
# local run): a root origin's drill-down shows them, not the model's outputs (its output).
OWN_VALUES = "own values"


@dataclass(frozen=True)
class Channels:
    """Where in a layer's output the error sits: tolerance-free, from the per-layer pass.

    The capture keeps these for every compared layer; a Result carries them for the drift origin
    and the layers around it (``CHANNELS_AROUND`` on each side), the TUI asks the engine for the
    others (``Engine.drill``: from the capture it holds, else one per-layer pass on the layer's
    worst sample; ``every_sample``: one pass per sample of the run, the TUI's ``a`` key)."""

    axis: int                   # the channel axis of the output: 1 (N, C, ...) or -1 (features last)
    size: int                   # channels along it
    group: int                  # channels per entry of max_abs (1 unless pooled to MAX_CHANNELS entries)
    max_abs: list[float]        # max |torch - onnx| per channel (group), over the samples below
    samples: list[int]          # the samples the per-layer pass covered
    sample_max_abs: list[float]  # max |torch - onnx| of the layer's output in each of them
    source: str = "capture"     # "capture" | "worst-sample pass" | "every-sample pass" | OWN_VALUES


CHANNELS_AROUND = 3     # a Result carries Channels for the origin and this many layers each side
