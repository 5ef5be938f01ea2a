"""What the TUI says about one layer, as Rich renderables (no widget here).

``render_layer(result, layer)`` is the inspector pane's summary; ``full=True`` is the
layer detail screen: every metric, the histogram bin by bin, every node attribute and the
initializer table with min/max/mean/std/Δ torch, nothing cut.
"""
from __future__ import annotations

from typing import Any, Optional

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from drifttui.core.base.progress import Progress
from drifttui.core.result import DRIFT, HIST_EDGES, Layer, Metrics, Result
from drifttui.report.profile import allowance
from drifttui.report.summary import overflow_said
from drifttui.tui import served_view
from drifttui.tui.heat import band, cell_style, fmt_value, thresholds
from drifttui.tui.tree import display_name, own_fails
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
    """One cell per decade bin of Metrics.histogram (<1e-9 … ≥1e1): a bar at each bin's
    real position, dots for empty bins, and the decade of the worst non-empty bin."""
    text = Text()
    if not hist or not any(hist):
        return Text("no histogram", style="dim")
    top = max(hist)
    for count in hist:
        level = 0 if count == 0 else max(1, round(count / top * (len(SPARK) - 1)))
        text.append(SPARK[level] if count else "·", style="#f0a030" if count else "dim")
    lo, hi = int(HIST_EDGES[0]), int(HIST_EDGES[-1])
    text.append(f"  (<1e{lo} … ≥1e{hi})", style="dim")
    worst_bin = max((i for i, c in enumerate(hist) if c), default=0)
    text.append(f"  worst in {bin_label(worst_bin)}", style="dim")
    return text


def histogram_bars(hist: tuple[int, ...] | list[int], width: int = 30) -> RenderableType:
    """The histogram bin by bin: decade, count and a bar (full detail)."""
    if not hist or not any(hist):
        return Text("no histogram", style="dim")
    top = max(hist)
    table = Table(box=None, padding=(0, 1), show_header=True, header_style="bold")
    table.add_column("per-sample max abs", no_wrap=True)
    table.add_column("samples", justify="right")
    table.add_column("")
    for i, count in enumerate(hist):
        bar = "█" * max(1, round(count / top * width)) if count else ""
        table.add_row(bin_label(i), str(count), Text(bar, style="#f0a030"))
    return table


def metrics_table(m: Metrics, local: Optional[Metrics], result: Result, layer: Optional[Layer] = None,
                  full: bool = True, no_color: bool = False) -> Text:
    """Worst / worst sample / median per metric (``full``: and its threshold).  The max |d| is held to
    the rule at the layer's scale, atol + rtol * scale (its budget in a reduced-precision file), as the
    drill-down strip above it says, not to atol (the fourth pass read "threshold 1e-04" under
    "against its tolerance (6e-03)")."""
    th = thresholds(result.tolerance)
    allowed = allowance(result, layer) if layer is not None else None
    if allowed is not None:
        th = dict(th, max_abs=allowed)
    fails = dict(zip(("max_abs", "max_rel", "local", "cos"), own_fails(layer))) if layer is not None else {}
    table = Grid(["metric", "worst", "sample", "median", "threshold"][:5 if full else 4], "lrrrr")

    def row(name: str, s, col: Optional[str] = None, transform=lambda v: v) -> None:
        worst = transform(s.worst)
        thr = th[col] if col else None
        style = cell_style(band(worst, thr), fails.get(col), no_color) if thr is not None else ""
        cells = [name, Text(_num(worst), style=style), f"#{s.worst_sample}", _num(transform(s.median))]
        table.add_row(*cells, *([_num(thr) if thr is not None else ""] if full else []))

    row("max abs", m.max_abs, "max_abs")
    row("max rel", m.max_rel, "max_rel")
    row("mean abs", m.mean_abs)
    row("rmse", m.rmse)
    row("1-cos", m.cosine, "cos", lambda v: max(0.0, 1.0 - v))
    row("error spread", m.frac_out)
    if local is not None:
        row("local max abs", local.max_abs, "local")
    return table.text(max_col=40)


def _samples_line(m: Metrics, result: Result, progress: Optional[Progress]) -> Text:
    text = Text(f"Metrics over {m.samples} sample{'s' if m.samples != 1 else ''}", style="bold underline")
    if progress is not None and progress.total:
        text.append(f"  (partial result: the run is at {progress.done}/{progress.total})", style="italic #f0a030")
    elif m.samples != result.samples:
        text.append(f" of {result.samples}", style="bold underline")
    return text


def _head(result: Result, layer: Layer, is_origin: bool, no_color: bool = False) -> list[RenderableType]:
    """The name line (without colour the ◆ and a drift status are bold reversed, never the
    faintest text) and the layer's place."""
    head = Text()
    if is_origin:
        head.append("◆", style="bold reverse" if no_color else "bold #ff3d9a")
        head.append(" ")
    head.append(display_name(layer.module), style="bold")
    head.append(f"  {layer.cls}", style="italic")
    if layer.call:
        head.append(f"  call {layer.call}")
    head.append("  ")
    status_style = ("bold reverse" if layer.status == "drift" else "bold" if layer.status == "inherited" else "") \
        if no_color else STATUS_STYLES.get(layer.status, "")
    head.append(STATUS_TEXT.get(layer.status, layer.status), style=status_style)
    meta = Text(style="dim")
    shapes = ", ".join(str(s) for s in layer.output_shapes) or "—"
    meta.append(f"layer #{layer.index} · depth {layer.depth} · output {shapes}")
    if layer.onnx_values:
        meta.append(f" · values {', '.join(layer.onnx_values)}")
    return [head, meta]


def _quick_line(result: Result, layer: Layer, no_color: bool = False) -> Text:
    th = thresholds(result.tolerance)
    m = layer.metrics
    fails = dict(zip(("max_abs", "max_rel", "local"), own_fails(layer)))
    line = Text()
    for label, col, value in (("max abs", "max_abs", m.max_abs.worst), ("rel", "max_rel", m.max_rel.worst),
                              ("local", "local", layer.local.max_abs.worst if layer.local else None)):
        if value is None:
            continue
        line.append(f"{label} ", style="dim")
        line.append(fmt_value(value).strip(), style=cell_style(band(value, th[col]), fails.get(col), no_color))
        line.append("  ")
    # of the layer samples only: after `a` the every-sample list may name another (fourth pass)
    of = f" of {m.samples} compared" if m.samples < result.samples else ""
    line.append(f"worst sample #{m.max_abs.worst_sample}{of}", style="dim")
    return line


def derivation(b: Any) -> str:
    """How the engine derived a layer's own budget (its fields, rendered)."""
    if b.derived == "measured" and b.measured:
        return (f"{b.own_budget / b.measured:.0f} x {b.measured:.1e} measured: the layer recomputed by PyTorch in "
                f"{b.format}; worst-case bound {b.own_bound or 0.0:.1e}")
    if b.measured:
        return f"the worst-case bound, tighter than its recomputation in {b.format} allows (measured {b.measured:.1e})"
    return "the worst-case bound: not recomputed"


def budget_line(layer: Layer) -> Text:
    """A reduced-precision layer: its budget, own loss in dB, measured share of the output error and
    the engine's verdict (rendered, never re-derived)."""
    b = layer.budget
    assert b is not None
    line = Text()
    line.append(f"{b.format} ", style="bold")
    line.append("budget ", style="dim")
    line.append(f"{b.own_budget:.1e}")
    line.append(f" ({derivation(b)})", style="dim")
    if b.own_loss_db is not None:
        line.append("  own loss ", style="dim")
        line.append("inf dB" if b.own_loss_db == float("inf") else f"{b.own_loss_db:.1f} dB")
    if b.share is not None and b.share == b.share:      # NaN: not measurable
        line.append("  share of output error ", style="dim")
        line.append(f"{100 * b.share:.0f}%")
        if b.share < 0:
            line.append(" (in float32 the outputs' error grows: see the run notes)", style="dim")
    line.append("  ")
    if b.over and layer.status != DRIFT:
        # its own error is over its worst-case bound (not measured: not judged alone) but its output is
        # within its own, or another rule set its status: not part of the verdict
        line.append("own error over budget, output within", style="#d7a64a")
    else:
        line.append("OVER BUDGET" if b.over else "within budget", style="bold #e8503a" if b.over else "#5fb36b")
    return line


def _findings(result: Result, layer: Layer) -> list[RenderableType]:
    findings = [f for f in result.findings if f.module == layer.module]
    if not findings:
        return []
    parts: list[RenderableType] = [Text("\nFindings", style="bold underline")]
    for f in findings:
        line = Text()
        sev_style = {"error": "bold red", "warning": "#f0a030", "info": "#6aa0d8"}.get(f.severity, "")
        line.append(f"[{f.severity}] ", style=sev_style)
        line.append(f"{f.check}: ", style="bold")
        line.append(f.message)
        if f.torch_op:
            line.append(f"\n  torch op: {f.torch_op}" + (f" ({f.aten_op})" if f.aten_op and f.aten_op != f.torch_op else ""))
        if f.verified is not None:
            line.append(f"\n  verified: {'yes' if f.verified else 'no'}", style="bold" if f.verified else "")
        if f.fix:
            line.append(f"\n  fix: {f.fix}", style="italic")
        parts.append(line)
    return parts


def _nodes(layer: Layer, full: bool) -> list[RenderableType]:
    if not layer.nodes:
        return [Text(f"\nONNX ops: {', '.join(layer.op_types)}", style="dim")] if layer.op_types else []
    parts: list[RenderableType] = [Text(f"\nONNX nodes ({len(layer.nodes)})", style="bold underline")]
    limit = len(layer.nodes) if full else 50
    for node in layer.nodes[:limit]:
        line = Text()
        line.append(node.op_type, style="bold")
        if node.domain:
            line.append(f" ({node.domain})", style="dim")
        line.append(f"  {node.name}", style="" if full else "dim")
        if node.attributes:
            if full:
                for k, v in node.attributes.items():
                    line.append(f"\n  {k} = {v}")
            else:
                line.append("\n  " + " ".join(f"{k}={v}" for k, v in node.attributes.items()))
        for label, names in (("in", node.inputs), ("out", node.outputs)):
            vals = ", ".join(f"{n} {node.shapes[n]}" if n in node.shapes else n for n in names)
            line.append(f"\n  {label}: {vals}", style="" if label == "out" else "dim")
        parts.append(line)
    if len(layer.nodes) > limit:
        parts.append(Text(f"… {len(layer.nodes) - limit} more (Enter: the full detail)", style="dim"))
    return parts


def _initializers(layer: Layer, full: bool) -> list[RenderableType]:
    if not layer.initializers:
        return []
    parts: list[RenderableType] = [Text(f"\nInitializers ({len(layer.initializers)})", style="bold underline")]
    for init in layer.initializers:    # one block per initializer: nothing wraps mid-name or mid-number
        diff = init.torch_max_abs_diff
        line = Text()
        line.append(init.name if full else _tail(init.name), style="bold")
        line.append(f"\n  {init.dtype} {init.dims}\n  ")
        for label, v in (("min", init.min), ("max", init.max), ("mean", init.mean), ("std", init.std)):
            line.append(f"{label} {_num(v)}  ", style="dim")
        line.append("Δ torch ", style="dim")
        line.append("—" if diff is None else fmt_value(diff).strip(), style="bold #e8503a" if diff else "")
        parts.append(line)
    params = [i for i in layer.initializers if i.torch_param]
    if params:
        shown = params if full else params[:12]
        parts.append(Text("\n".join(f"{i.name if full else _tail(i.name)} ← torch {i.torch_param}" for i in shown),
                          style="dim"))
    return parts


def render_layer(result: Result, layer: Layer, full: bool = False,
                 progress: Optional[Progress] = None, head_only: bool = False,
                 skip_head: bool = False, no_color: bool = False) -> RenderableType:
    """The inspector's summary (``full``: the layer detail).  ``head_only`` / ``skip_head``: the
    name line and the quick metrics line alone / everything after them (the detail screen puts
    the drill-down between the two)."""
    is_origin = result.drift_origin is not None and result.drift_origin.layer == layer.index
    parts: list[RenderableType] = _head(result, layer, is_origin, no_color)
    if layer.metrics is not None:
        parts.append(_quick_line(result, layer, no_color))
    if layer.budget is not None and layer.budget.format != "float32":
        parts.append(budget_line(layer))
    if is_origin:
        parts.append(Text("drift origin: the first module whose own computation fails the tolerance",
                          style="bold" if no_color else "#ff3d9a"))
    if layer.note:
        parts.append(Text(f"note: {layer.note}", style="italic"))
    if head_only:
        return Group(*parts)
    if skip_head:
        parts = []
    if layer.metrics is not None:
        parts.append(Text(""))
        parts.append(_samples_line(layer.metrics, result, progress))
        parts.append(metrics_table(layer.metrics, layer.local, result, layer, full=full, no_color=no_color))
        if full:
            parts.append(Text("\nHistogram of per-sample max abs", style="bold underline"))
            parts.append(histogram_bars(layer.metrics.histogram))
        else:
            hist = Text("histogram: ")
            hist.append_text(histogram_line(layer.metrics.histogram))
            parts.append(hist)
        if layer.metrics.nan_mismatch:
            parts.append(Text(f"NaN/Inf mismatches: {layer.metrics.nan_mismatch}"
                              f"{overflow_said(layer.metrics, layer.metrics.nan_mismatch)}", style="bold red"))
    else:
        parts.append(Text("\nno metrics for this module (" + STATUS_TEXT.get(layer.status, layer.status) + ")",
                          style="dim"))
        if layer.local is not None:
            parts.append(Text(f"local max abs {_num(layer.local.max_abs.worst)}"))
    if layer.parent is None and result.notes:      # run-level notes (e.g. the observer effect) on the root
        parts.append(Text("\nRun notes", style="bold underline"))
        parts += [Text(f"⚠ {note}", style="#f0a030") for note in result.notes]
    parts += served_view.layer_lines(result, layer)      # the served model, the batch sweep (docs/triton.md)
    parts += _findings(result, layer)
    if layer.params:
        parts.append(Text("\nParameters and buffers", style="bold underline"))
        t = Grid(["name", "kind", "shape", "dtype"])
        prefix = layer.module + "." if layer.module else ""
        for p in layer.params:
            name = p.name[len(prefix):] if p.name.startswith(prefix) else p.name
            t.add_row(name, p.kind if full else {"parameter": "param"}.get(p.kind, p.kind), str(p.shape), p.dtype)
        parts.append(t.text(max_col=60 if full else 24))
    parts += _nodes(layer, full)
    parts += _initializers(layer, full)
    if not full:
        parts.append(Text("\nEnter: the full detail of this layer", style="dim italic"))
    return Group(*parts)
