"""``--html PATH``: one self-contained page from a Result -- nothing loaded from the network, no
script (inline CSS and SVG only; a Content-Security-Policy forbids anything else).

The page: the verdict and origin; the error profile as a plot (each leaf layer's error over its
allowance along the graph, the tolerance or budget line, the origin marked: report/profile.py);
the origin's drill-down (per channel, per sample); the steps and the verified cause; the
per-output agreement; the layer table with heat.  Pass/fail is the Result's (decide's), only
drawn here.  Every name from the model goes through ``escape.html_text``.
"""
from __future__ import annotations

import math
from typing import Any, Optional

from drifttui.core.result import OWN_VALUES, RULE_FORMULA, Layer, Result
from drifttui.report.escape import html_text as e
from drifttui.report.profile import BARS, Point, allowance, points, ratio
from drifttui.report.summary import layer_name, origin_errors

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
HEAT = ["#e9f5ec", "#d3ecd9", "#bfe3c7", "#f6efc4", "#fbd3a8", "#f7a889", "#ef7a6a", "#d9443a"]
CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#1d2230;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ccd}
.drift{color:#c0261a}.ok{color:#1f7a35}.dim{color:#667}code,td.n{font-family:ui-monospace,monospace}
table{border-collapse:collapse;font-size:12.5px}td,th{padding:2px 8px;text-align:left;white-space:nowrap}
th{background:#eef0f5;position:sticky;top:0}td.n{text-align:right}tr.origin td{font-weight:bold;
outline:2px solid #ff3d9a}.pill{display:inline-block;padding:0 6px;border-radius:4px;color:#fff}
.pass{background:#2e8b47}.fail{background:#c0261a}.inconclusive,.skipped{background:#8a8f99}
.scroll{max-height:520px;overflow:auto;border:1px solid #dde}svg text{font:11px system-ui,sans-serif}
"""


def _fmt(x: Optional[float]) -> str:
    if x is None:
        return "-"
    if x != x:
        return "nan"
    return "0" if x == 0 else f"{x:.2e}"


def _y(r: float, top: float, height: float) -> float:
    """log10 of error / allowance, -6..+4, onto the plot's height (the line at 1 is log 0)."""
    v = -6.0 if r <= 0 else (4.0 if not math.isfinite(r) else max(-6.0, min(4.0, math.log10(r))))
    return top + (4.0 - v) / 10.0 * height


def profile_svg(result: Result) -> str:
    """The profile plot: one dot per leaf layer in order, the line at its allowance, the origin."""
    pts = points(result)
    if not pts:
        return "<p class='dim'>no layer compared</p>"
    w, h, left, top, ph = 1040, 250, 56, 14, 200
    step = (w - left - 12) / max(1, len(pts) - 1) if len(pts) > 1 else 0
    xy = [(left + i * step, _y(p.ratio or 0.0, top, ph)) for i, p in enumerate(pts)]
    what = "budget" if result.precision is not None and result.precision.verdict else "tolerance"
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' viewBox='0 0 {w} {h}' "
           f"style='max-width:100%;height:auto' role='img' aria-label='error over the {what} per layer'>"]
    for dec in range(-6, 5, 2):
        y = _y(10.0 ** dec, top, ph)
        # the ends hold every value past them (an exact 0 is drawn on the bottom line)
        label = {-6: "≤1e-6", 4: "≥1e4"}.get(dec, f"1e{dec}")
        out.append(f"<line x1='{left}' x2='{w - 8}' y1='{y:.1f}' y2='{y:.1f}' stroke='#e4e6ee'/>"
                   f"<text x='{left - 6}' y='{y + 4:.1f}' text-anchor='end'>{label}</text>")
    y1 = _y(1.0, top, ph)
    out.append(f"<line x1='{left}' x2='{w - 8}' y1='{y1:.1f}' y2='{y1:.1f}' stroke='#c0261a' "
               f"stroke-dasharray='6 4'/><text x='{w - 10}' y='{y1 - 5:.1f}' text-anchor='end' "
               f"fill='#c0261a'>{what}</text>")
    out.append("<polyline fill='none' stroke='#8891a8' stroke-width='1.2' points='"
               + " ".join(f"{x:.1f},{y:.1f}" for x, y in xy) + "'/>")
    for (x, y), p in zip(xy, pts):
        colour = "#c0261a" if p.over else "#2e8b47"
        out.append(f"<circle cx='{x:.1f}' cy='{y:.1f}' r='{3.2 if len(pts) < 120 else 2}' fill='{colour}'>"
                   f"<title>#{p.layer.index} {e(layer_name(p.layer.module, p.layer.call))}: "
                   f"{_fmt(p.ratio)} of its {what}</title></circle>")
    origin = next(((x, y, p) for (x, y), p in zip(xy, pts) if p.origin), None)
    if origin is not None:
        x, y, p = origin
        anchor = "end" if x > w * 0.7 else "start"
        dx = -10 if anchor == "end" else 10
        out.append(f"<path d='M{x:.1f} {y - 9:.1f} L{x + 9:.1f} {y:.1f} L{x:.1f} {y + 9:.1f} L{x - 9:.1f} "
                   f"{y:.1f} Z' fill='#ff3d9a' stroke='#fff'/><text id='origin-label' x='{x + dx:.1f}' "
                   f"y='{y - 10:.1f}' text-anchor='{anchor}' font-weight='bold' fill='#b0126a'>◆ origin "
                   f"{e(layer_name(p.layer.module, p.layer.call))}</text>")
    out.append(f"<text x='{left}' y='{h - 6}' class='dim'>layers in execution order (leaf modules and the "
               f"origin) → error / {what}, log scale</text></svg>")
    return "".join(out)


def _heat(p: Optional[Point]) -> str:
    return "" if p is None or p.ratio is None else f" style='background:{HEAT[p.level]}'"


def _ops(L: Layer) -> str:
    """The layer's ONNX op types, the first four (all of them in the cell's tooltip)."""
    return e(",".join(L.op_types[:4]) + ("…" if len(L.op_types) > 4 else ""))


def layer_table(result: Result) -> str:
    origin = result.drift_origin.layer if result.drift_origin is not None else None
    rows = []
    for L in result.layers:
        m = L.metrics
        r = ratio(result, L)
        pt = Point(L, r, L.status in ("drift", "inherited"), L.index == origin) if r is not None else None
        cls = " class='origin'" if L.index == origin else ""
        name = ("◆ " if L.index == origin else "") + e(layer_name(L.module, L.call))
        rows.append(f"<tr{cls}><td class='n'>{L.index}</td><td style='padding-left:{8 + 12 * L.depth}px'>{name}</td>"
                    f"<td>{e(L.cls)}</td><td title='{e(','.join(L.op_types))}'>{_ops(L)}</td><td>{e(L.status.replace('_', ' '))}</td>"
                    f"<td class='n'{_heat(pt)}>{_fmt(m.max_abs.worst if m else None)}</td>"
                    f"<td class='n'{_heat(pt)}>{_fmt(m.max_rel.worst if m else None)}</td>"
                    f"<td class='n'>{_fmt(L.local.max_abs.worst if L.local else None)}</td>"
                    f"<td class='n'>{_fmt(r)}</td></tr>")
    return ("<div class='scroll'><table><tr><th>#</th><th>module</th><th>class</th><th>onnx ops</th><th>status</th>"
            "<th>max abs</th><th>max rel</th><th>own err</th><th>error / allowed</th></tr>"
            + "".join(rows) + "</table></div>")


def drill(result: Result) -> str:
    """The origin's error per output channel and per sample (``Layer.channels``)."""
    o = result.drift_origin
    if o is None:        # a clean run has no origin to drill into (it said "no per-channel errors for the origin")
        return "<p class='dim'>no drift origin: no layer's own error fails the tolerance</p>"
    L = next((x for x in result.layers if x.index == o.layer), None)
    if L is None or L.channels is None:
        return "<p class='dim'>no per-channel errors for the origin in this result</p>"
    ch = L.channels
    allowed = allowance(result, L) or result.tolerance.atol
    n = len(ch.max_abs)
    cw = max(1.0, min(14.0, 1040 / max(1, n)))
    bars = []
    for i, v in enumerate(ch.max_abs):
        r = v / allowed if v == v else math.inf
        level = Point(L, r, r > 1, False).level
        bars.append(f"<rect x='{i * cw:.1f}' y='0' width='{max(cw - 0.5, 0.8):.1f}' height='26' fill='{HEAT[level]}'>"
                    f"<title>channel {i * ch.group}: {_fmt(v)}</title></rect>")
    worst = sorted(range(n), key=lambda i: -(ch.max_abs[i] if ch.max_abs[i] == ch.max_abs[i] else math.inf))[:5]
    top = max((v for v in ch.sample_max_abs if v == v and math.isfinite(v)), default=0.0) or 1.0
    samples = "".join(f"<tr><td class='n'>#{s}</td><td class='n'>{_fmt(v)}</td><td><div style='background:#f0a030;"
                      f"height:10px;width:{max(1, round(300 * v / top)) if v == v and math.isfinite(v) else 300}px'>"
                      f"</div></td></tr>" for s, v in zip(ch.samples, ch.sample_max_abs))
    what = "per output channel of"
    if ch.source == OWN_VALUES:         # a root origin: its own ops' values, not the model's outputs
        ops = "; ".join(f"{n.op_type} {n.name} → {', '.join(n.outputs)}" for n in L.nodes[:4])
        what = f"per channel of the own ONNX values ({e(ops)}, fed from torch: its own error) of"
    return (f"<p>max |torch − onnx| {what} <b>{e(layer_name(L.module, L.call))}</b> ({ch.size} along axis "
            f"{'last' if ch.axis == -1 else ch.axis}; cells against its allowance {_fmt(allowed)})</p>"
            f"<svg xmlns='http://www.w3.org/2000/svg' width='{n * cw:.0f}' height='26' viewBox='0 0 {n * cw:.0f} 26' "
            f"style='max-width:100%;height:auto' preserveAspectRatio='none'>{''.join(bars)}</svg>"
            f"<p>worst channels: " + ", ".join(f"#{i * ch.group} {_fmt(ch.max_abs[i])}" for i in worst) + "</p>"
            f"<p>per sample: the {len(ch.samples)} of {result.samples} samples compared layer by layer</p>"
            f"<table><tr><th>sample</th><th>max |d|</th><th></th></tr>{samples}</table>")


def steps_and_cause(result: Result) -> str:
    verified = [f for f in result.findings if f.verified]
    parts = []
    for f in verified[:3]:
        parts.append(f"<p><span class='pill pass'>verified</span> <b>{e(f.check)}</b>"
                     f"{' at ' + e(f.module) if f.module else ''}: {e(f.message)}<br>"
                     f"<span class='dim'>fix:</span> {e(f.fix)}<br><span class='dim'>the origin's own error "
                     f"{_fmt(f.local_before)} → {_fmt(f.local_after)} with the patch</span></p>")
    if not verified and result.findings:
        f = result.findings[0]
        parts.append(f"<p><b>{e(f.check)}</b> ({e(f.severity)}, not verified): {e(f.message)}</p>")
    if not result.findings:
        parts.append("<p class='dim'>no findings in this result (run <code>drifttui diagnose</code>)</p>")
    for s in result.steps:
        parts.append(f"<p><span class='pill {e(s.verdict)}'>{e(s.verdict)}</span> <b>{s.step}. {e(s.title)}</b>"
                     f" — {e(s.summary)}" + (f"<br><span class='dim'>fix:</span> {e(s.suggestion)}" if s.suggestion else "")
                     + "</p>")
    return "".join(parts)


def outputs(result: Result) -> str:
    rows = "".join(f"<tr><td>{e(o.name)}</td><td class='n'>{_fmt(o.metrics.max_abs.worst)}</td>"
                   f"<td class='n'>{_fmt(o.metrics.max_rel.worst)}</td><td class='n'>{o.metrics.cosine.worst:.6f}</td>"
                   f"<td class='n'>{'-' if o.top1_agreement is None else f'{100 * o.top1_agreement:.1f}%'}</td>"
                   f"<td>{'fails' if o.fails else 'agrees'}</td></tr>" for o in result.outputs)
    return ("<table><tr><th>output</th><th>max abs</th><th>max rel</th><th>cosine</th><th>top-1 agreement</th>"
            f"<th>verdict</th></tr>{rows}</table>")


def _headline(result: Result) -> str:
    o = result.drift_origin
    if result.verdict != "drift":
        return f"<h1 class='ok'>OK: no drift over {result.samples} sample(s)</h1>"
    if o is None:
        return "<h1 class='drift'>DRIFT: the outputs differ, no module named as the origin</h1>"
    return (f"<h1 class='drift'>DRIFT: origin <span id='origin'>{e(layer_name(o.module, o.call))}</span> "
            f"({e(o.cls)}, ONNX {e(', '.join(o.op_types))})</h1><p>{e(origin_errors(result))}; worst sample "
            f"{o.worst_sample} of {result.samples}</p>")


def render(result: Result, decision: Any = None) -> str:
    env, tol = result.environment, result.tolerance
    gate = "" if decision is None else f"<p>CI gate: exit {decision.exit_code}</p>"
    sections = [("Where the error starts and grows", profile_svg(result)),
                ("The origin: where in its output", drill(result)),
                ("Steps and the verified cause", steps_and_cause(result)),
                ("Per output", outputs(result)),
                ("Every layer", layer_table(result))]
    body = "".join(f"<h2>{title}</h2>{html}" for title, html in sections)
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">"
            f"<title>drifttui: {e(result.verdict)}</title><style>{CSS}</style></head><body>"
            f"{_headline(result)}{gate}<p class='dim'>rule: {e(RULE_FORMULA)}, atol {tol.atol:g}, "
            f"rtol {tol.rtol:g}; torch {e(env.torch)} · onnxruntime {e(env.onnxruntime)} · opset {e(env.opset)} · "
            f"exporter {e(env.exporter)}</p>{body}</body></html>\n")


def render_error(exc: BaseException, command: str = "check") -> str:
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\"><title>drifttui: error</title></head>"
            f"<body><h1>drifttui {e(command)} failed</h1><p>{e(exc)}</p></body></html>\n")


__all__ = ["render", "render_error", "profile_svg", "BARS"]
