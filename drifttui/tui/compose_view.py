"""The compositions in the TUI, as Rich renderables (no widget here): the stage bisect (`b`,
docs/bisect.md) and the tolerance from the measured noise floor (`a`).

Both render the plain dicts the engine returns (``LocalEngine.bisect`` / ``.tolerance``: exactly
what ``drifttui bisect --json`` / ``drifttui tolerance --json`` write), escaped by the app
(``terminal_data``); every verdict in them is the engine's (``core.decide``), this only renders.
"""
from __future__ import annotations

from pathlib import PurePath
from typing import Any, Optional

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

GOOD, BAD = "#5fb36b", "#e8503a"
WORST_LAYERS = 8          # the tolerance screen lists the layers with the highest relative floor


def _num(v: Optional[float]) -> str:
    if v is None:
        return "—"
    if v != v:
        return "nan"
    return "0" if v == 0 else (f"{v:.4g}" if 1e-3 <= abs(v) < 1e4 else f"{v:.2e}")


def _table(*columns: tuple[str, str]) -> Table:
    t = Table(box=None, header_style="bold", pad_edge=False, padding=(0, 1))
    for name, justify in columns:
        t.add_column(name, justify=justify, overflow="fold")   # type: ignore[arg-type]
    return t


def _vs_previous(vs: Optional[dict[str, Any]]) -> Text:
    if vs is None:
        return Text("—", style="dim")
    if not vs.get("compared"):
        return Text(str(vs.get("why", "not compared")), style="dim")
    return Text(_num(vs.get("max_abs")) + (" over" if vs.get("fails") else ""), style=BAD if vs.get("fails") else "")


def stage_table(bis: dict[str, Any]) -> Table:
    """One row per stage: its file, torch vs it (verdict, outputs max |d|, origin), it vs the stage before."""
    t = _table(("", "left"), ("stage", "left"), ("file", "left"), ("precision", "left"), ("vs torch", "left"),
               ("outputs max |d|", "right"), ("vs previous", "right"), ("origin", "left"))
    first = bis.get("first")
    for row in bis.get("stages", []):
        drifts = row.get("verdict") != "ok"
        mark = Text("◆", style=f"bold {BAD}") if row.get("index") == first else Text("")
        t.add_row(mark, str(row.get("index")), Text(PurePath(str(row.get("path", ""))).name),
                  str(row.get("precision", "")),
                  Text(str(row.get("verdict", "")).upper(), style=f"bold {BAD if drifts else GOOD}"),
                  _num(row.get("outputs_max_abs")), _vs_previous(row.get("vs_previous")),
                  Text(str(row.get("origin") or "—")))
    return t


def bisect_screen(bis: dict[str, Any]) -> RenderableType:
    """The `b` screen: the stages, the first drifting one, its origin and cause, the pass behind it."""
    first = bis.get("first")
    head = Text(str(bis.get("summary", "")), style=f"bold {BAD if first is not None else GOOD}")
    parts: list[RenderableType] = [head, Text(""), stage_table(bis)]
    if first is not None:
        parts.append(Text(""))
        parts.append(Text(f"first drifting stage: {first}", style="bold"))
        parts.append(Text(f"origin: {bis.get('origin') or '(the outputs only)'}"))
        if bis.get("cause"):
            parts.append(Text(f"cause: {bis['cause']}"))
    ps = bis.get("pass")
    if ps:
        parts += [Text(""), Text("ONNX Runtime pass", style="bold underline")]
        culprits = ", ".join(ps.get("culprits") or []) or "none isolated"
        parts.append(Text(f"culprit(s): {culprits}" + (" (verified: disabled alone, the drift is gone)"
                                                       if ps.get("verified") else "")))
        if ps.get("reason"):
            parts.append(Text(str(ps["reason"]), style="dim"))
        for how, setting in (ps.get("settings") or {}).items():
            parts.append(Text(f"  {how}: {setting}"))
        off = ps.get("offline")
        if off:
            gone = "gone" if off.get("drift_gone") else "still there"
            parts.append(Text(f"offline: the previous file optimised at {off.get('level')} without "
                              f"{', '.join(off.get('disabled') or [])}: drift {gone}"))
    sim = bis.get("sim")
    if sim:
        parts += [Text(""), Text(f"{sim.get('tool', 'simplifier')} pass", style="bold underline")]
        if sim.get("culprit"):
            parts.append(Text(f"culprit: {sim['culprit']}" + (" (verified)" if sim.get("verified") else "")))
        if sim.get("setting"):
            parts.append(Text(f"setting that avoids it: {sim['setting']}"))
        elif sim.get("why"):
            parts.append(Text(str(sim["why"]), style="dim"))
    counts = bis.get("counts") or {}
    if counts:
        parts += [Text(""), Text("cost: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items()),
                                 style="dim")]
    return Group(*parts)


def tolerance_screen(tol: dict[str, Any]) -> RenderableType:
    """The `a` screen: the advice against the current tolerance, then the floor per output and for
    the layers with the highest relative floor."""
    adv = tol.get("advice") or {}
    cur = adv.get("current") or {}
    ratio = cur.get("rtol_over_floor")
    parts: list[RenderableType] = []
    for i, line in enumerate(adv.get("lines") or []):
        style = "bold" if i == 1 else ""
        if line.startswith("your rtol") and ratio is not None:     # tighter than the floor: a clean model may fail
            style = BAD if ratio < 1 else GOOD
        parts.append(Text(line, style=style))
    t = _table(("", "left"), ("atol", "right"), ("rtol", "right"))
    t.add_row("current", _num(cur.get("atol")), _num(cur.get("rtol")))
    t.add_row(Text("advised", style="bold"), _num(adv.get("atol")), _num(adv.get("rtol")))
    parts += [Text(""), t]
    floors = tol.get("floors") or []
    outputs = [f for f in floors if f.get("kind") == "output"]
    layers = sorted((f for f in floors if f.get("kind") == "layer"), key=lambda f: -(f.get("max_rel") or 0.0))
    for title, rows in (("Noise floor per output", outputs),
                        (f"Noise floor per layer (the {min(WORST_LAYERS, len(layers))} highest of {len(layers)})",
                         layers[:WORST_LAYERS])):
        if not rows:
            continue
        ft = _table(("name", "left"), ("max |d|", "right"), ("relative", "right"), ("1-cos", "right"),
                    ("scale", "right"), ("worst at", "left"))
        for f in rows:
            ft.add_row(Text(str(f.get("name", ""))), _num(f.get("max_abs")), _num(f.get("max_rel")),
                       _num(f.get("one_minus_cos")), _num(f.get("scale")), str(f.get("worst_variant", "")))
        parts += [Text(""), Text(title, style="bold underline"), ft]
    variants = tol.get("variants") or []
    if variants:
        parts += [Text(""), Text(f"measured at: {'; '.join(variants)}; ORT run twice: max |d| "
                                 f"{_num(tol.get('repeat_max_abs'))}", style="dim")]
    parts.append(Text("the advice is not applied here: rerun with `drifttui check --tolerance auto`, or +/- to "
                      "re-decide at another tolerance", style="dim"))
    return Group(*parts)
