"""The drill-down of one layer, as Rich renderables: where in its output the error sits.

``render_drill(result, layer, channels)``: the error per output channel as a heat strip (one
glyph per channel, the same bands as the table's cells), the channels holding the largest
errors, the per-sample errors with the worst sample marked, and how the channels spread over
the error decades.  Everything here is measured (tolerance-free, ``Layer.channels`` from the
capture or from one per-layer pass on the worst sample); the bands are intensity only, as in
the table: pass/fail stays the engine's.
"""
from __future__ import annotations

import math
from typing import Any, Optional

from rich.console import Group, RenderableType
from rich.text import Text

from drifttui.core.result import HIST_EDGES, OWN_VALUES, Layer, Result
from drifttui.report.profile import allowance
from drifttui.tui.heat import BAND_STYLES, GLYPHS, band, fmt_value, thresholds
from drifttui.tui.layer_view import bin_label

STRIP_WIDTH = 64        # channels per line of the heat strip (fits 80 columns with its label)
TOP = 5                 # channels named as the worst
MAX_SAMPLES = 40        # per-sample lines at most (the worst ones; a line says how far the rest go)


def _strip(values: list[float], threshold: float, group: int, width: int) -> Text:
    text = Text(no_wrap=True)
    per_line = max(8, min(STRIP_WIDTH, width - 8))
    for start in range(0, len(values), per_line):
        if start:
            text.append("\n")
        text.append(f"{start * group:>6} ", style="dim")
        for v in values[start:start + per_line]:
            b = band(v, threshold)
            glyph = GLYPHS[b] if GLYPHS[b] != " " else "·"
            text.append(glyph, style=BAND_STYLES[b])
    return text


def _worst_channels(values: list[float], group: int) -> Text:
    order = sorted(range(len(values)), key=lambda i: -(values[i] if values[i] == values[i] else math.inf))
    text = Text()
    label = "channels" if group == 1 else f"channel groups of {group}"
    text.append(f"worst {label}: ", style="bold")
    for n, i in enumerate(order[:TOP]):
        if n:
            text.append("  ")
        name = f"#{i}" if group == 1 else f"#{i * group}-{i * group + group - 1}"
        text.append(name, style="bold" if n == 0 else "")
        text.append(f" {fmt_value(values[i]).strip()}")
    finite = sorted(v for v in values if v == v and not math.isinf(v))
    if len(values) > 1 and finite:
        worst, median = values[order[0]], finite[len(finite) // 2]
        second = values[order[1]]
        if worst == worst and second > 0 and median > 0 and worst / second < 1.5:
            # "the worst is 1× the next" said nothing: the error is spread over the channels
            text.append(f"\nno single channel stands out: the worst is {worst / median:,.1f}× the median channel",
                        style="dim")
        elif worst == worst and second > 0 and median > 0:
            text.append(f"\nthe worst is {worst / second:,.0f}× the next and {worst / median:,.0f}× the median "
                        f"channel", style="dim")
    return text


def _per_sample(samples: list[int], errors: list[float], width: int) -> Text:
    text = Text(no_wrap=True)
    if not samples:
        return Text("no per-sample errors recorded", style="dim")
    worst = max(range(len(errors)), key=lambda i: errors[i] if errors[i] == errors[i] else math.inf)
    top = max((e for e in errors if e == e and not math.isinf(e)), default=0.0) or 1.0
    bar_room = max(10, min(40, width - 30))
    shown = set(range(len(samples)))
    if len(samples) > MAX_SAMPLES:      # the worst ones, in sample order
        shown = set(sorted(range(len(errors)), key=lambda i: -(errors[i] if errors[i] == errors[i]
                                                                 else math.inf))[:MAX_SAMPLES])
    for n, (s, e) in enumerate(zip(samples, errors)):
        if n not in shown:
            continue
        if text.plain:
            text.append("\n")
        mark = "◆" if n == worst else " "
        text.append(f"{mark} sample #{s:<5} ", style="bold #ff3d9a" if n == worst else "")
        text.append(f"{e:>9.3g} ")
        length = max(1, round(e / top * bar_room)) if e == e and e > 0 and not math.isinf(e) else 0
        text.append("█" * length, style="#f0a030")
        if n == worst:
            text.append("  ← worst", style="bold")
    if len(shown) < len(samples):
        rest = max((errors[i] for i in range(len(errors)) if i not in shown), default=0.0)
        text.append(f"\n… {len(samples) - len(shown)} more samples, each at most {fmt_value(rest).strip()}",
                    style="dim")
    return text


def _per_sample_head(result: Result, channels: Any, every: str) -> Text:
    """The per-sample block's title: which samples and how many of the run's (issue 35: "3 of 20")."""
    n, total = len(channels.samples), result.samples
    title = f"all {total} samples" if n >= total else f"{n} of {total} samples"
    text = Text("\n")
    text.append(f"Per sample: {title}", style="bold underline")
    text.append("  max |torch - onnx| of its own values" if channels.source == OWN_VALUES
                else "  max |torch - onnx| of the output", style="dim")
    if channels.source == "worst-sample pass":
        why = "one pass on the worst sample"
    elif n < total:
        why = "the layers were compared on sample 0 and the worst outputs"
    else:
        why = ""
    if every:
        text.append(f"\n{every}", style="italic #f0a030")
    elif why and channels.source == OWN_VALUES:     # a root's own values: the capture's layer samples only
        text.append(f"\n{why} · --layer-samples all: every sample", style="dim")
    elif why:
        text.append(f"\n{why} · a: all {total}", style="dim")
    return text


def _decades(values: list[float]) -> Text:
    """How many channels fall in each error decade (the bins of Metrics.histogram)."""
    bins = [0] * (len(HIST_EDGES) + 1)
    for v in values:
        if v != v or math.isinf(v):
            bins[-1] += 1
            continue
        exp = math.log10(v) if v > 0 else -math.inf
        i = sum(1 for e in HIST_EDGES if exp >= e)
        bins[i] += 1
    text = Text(no_wrap=True)
    top = max(bins) or 1
    for i, count in enumerate(bins):
        if not count:
            continue
        if text.plain:
            text.append("\n")
        text.append(f"{bin_label(i):>14} {count:>6}  ")
        text.append("█" * max(1, round(count / top * 30)), style="#f0a030")
    return text


def own_ops(layer: Layer) -> str:
    """``Mul node_mul → mul, ReduceMean node_mean → mean``: the layer's own nodes and their values."""
    said = [f"{n.op_type} {n.name} → {', '.join(n.outputs)}" for n in layer.nodes[:4]]
    more = f", +{len(layer.nodes) - 4}" if len(layer.nodes) > 4 else ""
    return "(" + "; ".join(said) + more + ")" if said else f"({', '.join(layer.onnx_nodes[:4])})"


def render_drill(result: Result, layer: Layer, channels: Optional[Any], width: int = 78,
                 waiting: str = "", every: str = "") -> RenderableType:
    """The drill-down section of ``layer``; ``channels`` None: ``waiting`` says why (computing,
    not in this report...); ``every``: how the every-sample comparison (``a``) is doing."""
    parts: list[RenderableType] = [Text("Where the error sits", style="bold underline")]
    if channels is None:
        parts.append(Text(every or waiting or "no per-channel errors for this layer", style="italic #f0a030"))
        return Group(*parts)
    allowed = allowance(result, layer)          # its budget in a reduced-precision file, not atol
    th = allowed if allowed is not None else thresholds(result.tolerance)["max_abs"]
    against = ("its precision budget" if layer.budget is not None and layer.budget.out_budget > 0
               else "its tolerance") if allowed is not None else "atol"
    axis = "last" if channels.axis == -1 else str(channels.axis)
    how = {"capture": "from the capture",
           "every-sample pass": f"from one per-layer pass on each of the {len(channels.samples)} samples"}.get(
        channels.source, f"from one per-layer pass on sample #{channels.samples[0] if channels.samples else '?'}")
    if channels.source == OWN_VALUES:           # a root: its own ops, not the model's outputs
        parts.append(Text(f"its own ONNX ops {own_ops(layer)}, fed from torch (its own error; its output is "
                          "the model's output)", style="bold"))
        what = f"max |torch - onnx| per channel of its own values ({channels.size} along axis {axis}, " \
               "from the capture's own-error run)"
    else:
        what = f"max |torch - onnx| per output channel ({channels.size} along axis {axis}, {how})"
    parts.append(Text(f"{what}; glyphs as in the table, against {against} ({fmt_value(th).strip()})", style="dim"))
    parts.append(_strip(list(channels.max_abs), th, channels.group, width))
    parts.append(_worst_channels(list(channels.max_abs), channels.group))
    parts.append(_per_sample_head(result, channels, every))
    parts.append(_per_sample(list(channels.samples), list(channels.sample_max_abs), width))
    parts.append(Text("\nChannels per error decade", style="bold underline"))
    parts.append(_decades(list(channels.max_abs)))
    return Group(*parts)
