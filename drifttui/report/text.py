"""The short Rich table `drifttui check` prints: the origin first, the layers around it, coverage."""
from __future__ import annotations

from typing import Optional

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from drifttui.core.result import DRIFT, INHERITED, Layer, Result
from drifttui.report.escape import plain, terminal
from drifttui.report.summary import alerts

STATUS_STYLE = {"ok": "green", "drift": "bold red", "inherited": "yellow", "fused": "cyan",
                "not_exported": "dim", "unmapped": "magenta", "unattributed": "bold yellow"}


def fmt(x: Optional[float]) -> str:
    if x is None:
        return "-"
    if x != x:
        return "nan"
    if x == 0:
        return "0"
    return f"{x:.2e}"


def _name(L: Layer) -> str:
    base = terminal(L.module) or "(root)"
    return f"{base} (call {L.call + 1})" if L.call else base


def render(result: Result, context: int = 4, width: int = 80) -> Group:
    """The report's parts in print order: headline, the layers around the origin, outputs,
    coverage, notes, environment."""
    tol = result.tolerance
    said = alerts(result)       # under the headline: torch differs from itself, NaN/Inf, another dtype
    parts: list = [_headline(result), *(plain(a, style="bold red") for a in said),
                   plain(f"tolerance rule: {tol.rule}", style="dim")]
    if tol.dtype:
        parts.append(plain(f"  {tol.dtype}", style="dim"))
    rows = _rows(result, context)
    if rows:
        parts.append(_layer_table(result, rows, width))
    parts.append(_outputs_table(result))
    c = result.coverage
    parts.append(Text(f"coverage: {c.modules} module calls — {c.mapped} mapped, {c.fused} fused, "
                      f"{c.not_exported} not exported, {c.unmapped} unmapped", style="dim"))
    parts.extend(plain(f"note: {note}", style="yellow") for note in result.notes if note not in said)
    parts.append(_environment(result))
    return Group(*parts)


def _headline(result: Result) -> Text:
    tol = result.tolerance
    head = Text()
    if result.verdict == "ok":
        head.append("OK", style="bold green")
        head.append(f": no drift at atol={tol.atol:g}, rtol={tol.rtol:g} over {result.samples} sample(s)")
        return head
    head.append("DRIFT", style="bold red")
    o = result.drift_origin
    if o is None:
        head.append(": the model outputs differ, but no module could be named as the origin")
        return head
    head.append(terminal(f": origin {o.module or '(root)'} ({o.cls}"))
    head.append(terminal(f", ONNX {', '.join(o.op_types) or '-'}) "))
    head.append(f"max_abs={fmt(o.max_abs)} max_rel={fmt(o.max_rel)} own={fmt(o.local_max_abs)} "
                f"(worst sample {o.worst_sample})")
    return head


_FIXED = {"#": 4, "class": 14, "onnx ops": 18, "status": 9, "max abs": 8, "max rel": 8, "own err": 8, "1-cos": 8}


def _layer_table(result: Result, rows: list[Layer], width: int) -> Table:
    wide = width >= 110
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    cols = [("#", "right"), ("module", "left")]
    if wide:
        cols += [("class", "left"), ("onnx ops", "left")]
    cols += [("status", "left"), ("max abs", "right"), ("max rel", "right"), ("own err", "right"),
             ("1-cos", "right")]
    for col, just in cols:
        table.add_column(col, justify=just, no_wrap=True, overflow="ellipsis",  # type: ignore[arg-type]
                         min_width=_FIXED.get(col),
                         max_width=_FIXED.get(col) if col in ("class", "onnx ops") else None)
    room = max(12, width - sum(_FIXED[c] + 2 for c, _ in cols if c in _FIXED) - 1)
    origin = result.drift_origin.layer if result.drift_origin else None
    for L in rows:
        m = L.metrics
        name = ("◆ " if L.index == origin else "") + _name(L)
        if len(name) > room:
            name = "…" + name[-(room - 1):]
        cells: list = [str(L.index), Text(name)]       # Text: a name is never read as markup
        if wide:
            cells += [plain(L.cls), plain(",".join(L.op_types[:3]) + ("…" if len(L.op_types) > 3 else ""))]
        cells += [Text(L.status.replace("_", " "), style=STATUS_STYLE.get(L.status, "")),
                  fmt(m.max_abs.worst if m else None), fmt(m.max_rel.worst if m else None),
                  fmt(L.local.max_abs.worst if L.local else None),
                  fmt(max(0.0, 1 - m.cosine.worst) if m else None)]
        table.add_row(*cells)
    return table


def _outputs_table(result: Result) -> Table:
    out_t = Table(show_header=True, header_style="bold", box=None, title=None, pad_edge=False)
    for col in ("output", "max abs", "max rel", "cosine", "top-1 agree"):
        out_t.add_column(col)
    for o in result.outputs:
        out_t.add_row(plain(o.name), fmt(o.metrics.max_abs.worst), fmt(o.metrics.max_rel.worst),
                      f"{o.metrics.cosine.worst:.6f}",
                      "-" if o.top1_agreement is None else f"{100 * o.top1_agreement:.1f}%")
    return out_t


def _environment(result: Result) -> Text:
    env = result.environment
    out_level = env.ort_output_opt_level
    levels = env.ort_opt_level + (f" (outputs: {out_level})" if out_level and out_level != env.ort_opt_level else "")
    return plain(f"torch {env.torch} · onnx {env.onnx} · onnxruntime {env.onnxruntime} · opset {env.opset} · "
                f"exporter {env.exporter} · ORT level {levels}"
                f"{' · deterministic' if env.deterministic else ''}", style="dim")


def _rows(result: Result, context: int) -> list[Layer]:
    layers = result.layers
    if not layers:
        return []
    if result.drift_origin is None:
        worst = sorted((L for L in layers if L.metrics), key=lambda L: -L.metrics.max_rel.worst)[:context]  # type: ignore[union-attr]
        return sorted(worst, key=lambda L: L.index)
    o = result.drift_origin.layer
    mapped = [L for L in layers if L.metrics is not None]
    pos = next((k for k, L in enumerate(mapped) if L.index == o), 0)
    window = mapped[max(0, pos - context): pos + context + 1]
    others = [L for L in layers if L.status == DRIFT and L not in window]
    rows = sorted(window + others[:5], key=lambda L: L.index)
    return rows


def print_report(result: Result, console: Optional[Console] = None) -> None:
    console = console or Console()
    console.print(render(result, width=console.width))


__all__ = ["render", "print_report", "INHERITED"]
