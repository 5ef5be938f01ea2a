"""The inspector: everything about the layer under the cursor.

Module (class, parameters and buffers), metric details across samples with a small
histogram, local error, note, findings, ONNX nodes and initializers.
"""
from __future__ import annotations

from typing import Any, Optional

from rich.console import Group, RenderableType
from rich.text import Text
from rich.segment import Segment
from textual.events import Resize
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from drifttui.core.result import HIST_EDGES, Layer, Metrics, Result
from drifttui.tui.heat import band, BAND_STYLES, fmt_value, thresholds
from drifttui.tui.widgets.layer_table import STATUS_STYLES, STATUS_TEXT

SPARK = " ▁▂▃▄▅▆▇█"


def _num(v: Optional[float]) -> str:
    if v is None:
        return "—"
    if v != v:
        return "nan"
    if v == 0:
        return "0"
    if 1e-3 <= abs(v) < 1e4:
        return f"{v:.4g}"
    return f"{v:.2e}"


def _short(value: Any, limit: int = 40) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Grid:
    """A cheap aligned table rendered as one Text (Rich's Table is ~10x slower)."""

    def __init__(self, headers: list[str], justify: str = "") -> None:
        self.headers = headers
        self.justify = justify or "l" * len(headers)     # one "l"/"r" per column
        self.rows: list[list[Text]] = []

    def add_row(self, *cells: "str | Text") -> None:
        self.rows.append([c if isinstance(c, Text) else Text(str(c)) for c in cells])

    def text(self, max_col: int = 28) -> Text:
        widths = [len(h) for h in self.headers]
        for row in self.rows:
            for i, cell in enumerate(row):
                widths[i] = min(max_col, max(widths[i], cell.cell_len))
        out = Text(no_wrap=True, overflow="ellipsis")
        lines = [[Text(h, style="bold") for h in self.headers]] + self.rows
        for n, row in enumerate(lines):
            if n:
                out.append("\n")
            for i, cell in enumerate(row):
                cell = cell.copy()
                if cell.cell_len > widths[i]:
                    cell.truncate(widths[i], overflow="ellipsis")
                pad = " " * (widths[i] - cell.cell_len)
                if i:
                    out.append("  ")
                if self.justify[i] == "r":
                    out.append(pad)
                    out.append_text(cell)
                else:
                    out.append_text(cell)
                    if i < len(row) - 1:
                        out.append(pad)
        return out


def _tail(name: str) -> str:
    """The last two dotted components of a long qualified name."""
    bits = name.split(".")
    return ".".join(bits[-2:]) if len(bits) > 2 else name


def bin_label(i: int) -> str:
    """Decade of histogram bin ``i`` (see HIST_EDGES)."""
    edges = HIST_EDGES
    if i <= 0:
        return f"<1e{int(edges[0])}"
    if i >= len(edges):
        return f"≥1e{int(edges[-1])}"
    return f"1e{int(edges[i - 1])}..1e{int(edges[i])}"


def histogram_line(hist: tuple[int, ...] | list[int]) -> Text:
    """Sparkline of Metrics.histogram with its decade labels (1e-9 .. 1e1)."""
    text = Text()
    if not hist or not any(hist):
        return Text("no histogram", style="dim")
    top = max(hist)
    for count in hist:
        level = 0 if count == 0 else max(1, round(count / top * (len(SPARK) - 1)))
        text.append(SPARK[level], style="#f0a030" if count else "dim")
    lo, hi = int(HIST_EDGES[0]), int(HIST_EDGES[-1])
    text.append(f"  <1e{lo} … ≥1e{hi}", style="dim")
    worst_bin = max((i for i, c in enumerate(hist) if c), default=0)
    text.append(f"  worst in {bin_label(worst_bin)}", style="dim")
    return text


def metrics_table(m: Metrics, local: Optional[Metrics], result: Result) -> Text:
    th = thresholds(result.tolerance)
    table = Grid(["metric", "worst", "sample", "median"], "lrrr")

    def row(name: str, s, thr: Optional[float] = None, transform=lambda v: v) -> None:
        worst = transform(s.worst)
        style = BAND_STYLES[band(worst, thr)] if thr is not None else ""
        table.add_row(name, Text(_num(worst), style=style), f"#{s.worst_sample}", _num(transform(s.median)))

    row("max abs", m.max_abs, th["max_abs"])
    row("max rel", m.max_rel, th["max_rel"])
    row("mean abs", m.mean_abs)
    row("rmse", m.rmse)
    row("1-cos", m.cosine, th["cos"], lambda v: max(0.0, 1.0 - v))
    row("out of tol", m.frac_out)
    if local is not None:
        row("local max abs", local.max_abs, th["local"])
    return table.text()


class Inspector(ScrollView, can_focus=True):
    """Scrollable detail pane, line-rendered: the layer's renderable is rendered to
    strips once per cursor move (no Textual re-layout), and only visible lines are
    drawn.  Focus it with Tab to scroll with the arrow keys."""

    DEFAULT_CSS = """
    Inspector { overflow-x: hidden; overflow-y: auto; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.layer_index: Optional[int] = None
        self.renderable: RenderableType = Text("no layer", style="dim")
        self._lines: list[Strip] = []
        self._width = 0

    def show(self, result: Optional[Result], layer: Optional[int]) -> None:
        self.layer_index = layer
        if result is None or layer is None or not 0 <= layer < len(result.layers):
            self.renderable = Text("no layer under the cursor", style="dim")
        else:
            self.renderable = render_layer(result, result.layers[layer])
        self._width = 0          # re-render lazily, at the current width
        self.scroll_to(y=0, animate=False, immediate=True)
        self._layout_lines()
        self.refresh()

    @property
    def text(self) -> str:
        """Plain text of what the inspector shows (for tests)."""
        self._layout_lines()
        return "\n".join(strip.text for strip in self._lines)

    def _layout_lines(self) -> None:
        width = max(10, self.scrollable_content_region.width - 2) if self.is_mounted else 60
        if width == self._width and self._lines:
            return
        self._width = width
        console = self.app.console
        options = console.options.update(width=width, min_width=width, max_width=width, height=None)
        lines = console.render_lines(self.renderable, options, pad=True)
        pad = [Segment(" ")]
        self._lines = [Strip(pad + line + pad, width + 2) for line in lines]
        self.virtual_size = Size(width + 2, len(self._lines))

    def on_resize(self, event: Resize) -> None:
        self._width = 0
        self._layout_lines()
        self.refresh()

    def render_line(self, y: int) -> Strip:
        self._layout_lines()
        index = round(self.scroll_y) + y
        width = self.scrollable_content_region.width
        base = self.rich_style
        if 0 <= index < len(self._lines):
            return self._lines[index].apply_style(base).adjust_cell_length(width, base)
        return Strip.blank(width, base)


def render_layer(result: Result, layer: Layer) -> RenderableType:
    parts: list[RenderableType] = []
    is_origin = result.drift_origin is not None and result.drift_origin.layer == layer.index
    head = Text()
    if is_origin:
        head.append("◆ ", style="bold #ff3d9a")
    head.append(layer.module or "(root)", style="bold")
    head.append(f"  {layer.cls}", style="italic")
    if layer.call:
        head.append(f"  call {layer.call}")
    head.append("  ")
    head.append(STATUS_TEXT.get(layer.status, layer.status), style=STATUS_STYLES.get(layer.status, ""))
    parts.append(head)
    meta = Text(style="dim")
    shapes = ", ".join(str(s) for s in layer.output_shapes) or "—"
    meta.append(f"layer #{layer.index} · depth {layer.depth} · output {shapes}")
    if layer.onnx_values:
        meta.append(f" · values {_short(', '.join(layer.onnx_values), 50)}")
    parts.append(meta)
    if layer.metrics is not None:
        th = thresholds(result.tolerance)
        m = layer.metrics
        line = Text()
        for label, value, thr in (("max abs", m.max_abs.worst, th["max_abs"]),
                                  ("rel", m.max_rel.worst, th["max_rel"]),
                                  ("local", layer.local.max_abs.worst if layer.local else None, th["local"])):
            if value is None:
                continue
            line.append(f"{label} ", style="dim")
            line.append(fmt_value(value).strip(), style=BAND_STYLES[band(value, thr)])
            line.append("  ")
        line.append(f"worst sample #{m.max_abs.worst_sample}", style="dim")
        parts.append(line)
    if is_origin:
        parts.append(Text("drift origin: the first module whose own computation fails the tolerance",
                          style="#ff3d9a"))
    if layer.note:
        parts.append(Text(f"note: {layer.note}", style="italic"))

    if layer.metrics is not None:
        parts.append(Text(f"\nMetrics over {layer.metrics.samples} samples", style="bold underline"))
        parts.append(metrics_table(layer.metrics, layer.local, result))
        hist = Text("histogram of per-sample max abs: ")
        hist.append_text(histogram_line(layer.metrics.histogram))
        parts.append(hist)
        if layer.metrics.nan_mismatch:
            parts.append(Text(f"NaN/Inf mismatches: {layer.metrics.nan_mismatch}", style="bold red"))
    else:
        parts.append(Text("\nno metrics for this module (" + STATUS_TEXT.get(layer.status, layer.status) + ")",
                          style="dim"))
        if layer.local is not None:
            parts.append(Text(f"local max abs {_num(layer.local.max_abs.worst)}"))

    findings = [f for f in result.findings if f.module == layer.module]
    if findings:
        parts.append(Text("\nFindings", style="bold underline"))
        for f in findings:
            line = Text()
            sev_style = {"error": "bold red", "warning": "#f0a030", "info": "#6aa0d8"}.get(f.severity, "")
            line.append(f"[{f.severity}] ", style=sev_style)
            line.append(f"{f.check}: ", style="bold")
            line.append(f.message)
            if f.fix:
                line.append(f"\n  fix: {f.fix}", style="italic")
            parts.append(line)

    if layer.params:
        parts.append(Text("\nParameters and buffers", style="bold underline"))
        t = Grid(["name", "kind", "shape", "dtype"])
        prefix = layer.module + "." if layer.module else ""
        for p in layer.params:
            name = p.name[len(prefix):] if p.name.startswith(prefix) else p.name
            t.add_row(name, p.kind, str(p.shape), p.dtype)
        parts.append(t.text(max_col=20))

    if layer.nodes:
        parts.append(Text(f"\nONNX nodes ({len(layer.nodes)})", style="bold underline"))
        for node in layer.nodes[:50]:
            line = Text()
            line.append(node.op_type, style="bold")
            if node.domain:
                line.append(f" ({node.domain})", style="dim")
            line.append(f"  {node.name}", style="dim")
            if node.attributes:
                attrs = " ".join(f"{k}={_short(v, 24)}" for k, v in node.attributes.items())
                line.append(f"\n  {attrs}")
            for label, names in (("in", node.inputs), ("out", node.outputs)):
                vals = ", ".join(f"{n} {node.shapes[n]}" if n in node.shapes else n for n in names)
                line.append(f"\n  {label}: {vals}", style="" if label == "out" else "dim")
            parts.append(line)
        if len(layer.nodes) > 50:
            parts.append(Text(f"… {len(layer.nodes) - 50} more", style="dim"))
    elif layer.op_types:
        parts.append(Text(f"\nONNX ops: {', '.join(layer.op_types)}", style="dim"))

    if layer.initializers:
        parts.append(Text(f"\nInitializers ({len(layer.initializers)})", style="bold underline"))
        t = Grid(["name", "dtype", "dims", "min", "max", "mean", "std", "Δ torch"], "lllrrrrr")
        for init in layer.initializers:
            diff = init.torch_max_abs_diff
            diff_text = Text("—" if diff is None else fmt_value(diff).strip(),
                             style="bold #e8503a" if diff else "")
            t.add_row(_tail(init.name), init.dtype, str(init.dims), _num(init.min), _num(init.max), _num(init.mean),
                      _num(init.std), diff_text)
        parts.append(t.text(max_col=22))
        params = [i for i in layer.initializers if i.torch_param]
        if params:
            parts.append(Text("\n".join(f"{_tail(i.name)} ← torch {i.torch_param}" for i in params[:12]),
                              style="dim"))
    return Group(*parts)
