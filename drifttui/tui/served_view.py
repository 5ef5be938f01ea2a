"""What the TUI says about the served model (Triton: docs/triton.md) and the batch sweep, as Rich
renderables (no widget here): the status line's badge, the outputs table (the file's outputs and,
beside them, the served ones), the config fields that changed the run and what this machine
cannot reproduce, the served run's cost, and a layer's batch-sweep figures.

Every verdict shown is the result's (``Result.served.verdict`` / ``reason``, ``BatchSweep.invariant``:
decided by ``core/decide/served.py``); this module only renders.  Names are untrusted: the app
hands it the escaped copy of the result (``terminal_data``), and every Text is built without markup.
"""
from __future__ import annotations

from typing import Optional

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from drifttui.core.result import Layer, Result

GOOD, BAD, WARN = "#5fb36b", "#e8503a", "#f0a030"
SERVED_TIMINGS = ("served_reference", "served_requests", "batch_sweep")


def _num(v: Optional[float], compact: bool = False) -> str:
    if v is None:
        return "—"
    if v != v:
        return "nan"
    if compact:
        return "0" if v == 0 else (f"{v:.3g}" if 1e-2 <= abs(v) < 1e3 else f"{v:.1e}")
    return "0" if v == 0 else (f"{v:.4g}" if 1e-3 <= abs(v) < 1e4 else f"{v:.2e}")


def _pct(v: Optional[float], compact: bool = False) -> str:
    if v is None:
        return "—"
    return f"{100 * v:.1f}%" if compact else f"{100 * v:.2f}%"


def badge(result: Optional[Result]) -> Text:
    """One short piece for the status line: ``served = file`` / ``served ≠ file: <reason>`` /
    ``served: repository`` and the batch sweep's verdict; empty when the run served nothing."""
    text = Text(no_wrap=True, overflow="ellipsis")
    if result is None:
        return text
    s, b = result.served, result.batch_sweep
    if s is not None:
        text.append("  ⇄ ", style="dim")
        if s.verdict == "same":
            text.append("served = file", style=f"bold {GOOD}")
        elif s.verdict == "differs":
            text.append(f"served ≠ file: {s.reason}", style=f"bold {BAD}")
        else:
            text.append(f"served: {s.source} (not compared live)", style="dim")
        if s.unreproducible:
            text.append(" (not reproduced here)", style=WARN)
    if b is not None and not b.note:
        if b.invariant:
            text.append("  batch invariant", style="dim")
        else:
            where = f" from #{b.first_layer}" if b.first_layer is not None else ""
            text.append(f"  batch-dependent{where}", style=f"bold {BAD}")
    return text


def served_cost(result: Optional[Result], short: bool = False) -> str:
    """The served run's own time (its references, its requests, the sweep; not in ``total``):
    itemised, or ``short`` as one sum."""
    if result is None:
        return ""
    t = result.timings or {}
    parts = [(k, t[k]) for k in SERVED_TIMINGS if t.get(k)]
    if not parts:
        return ""
    if short:
        return f"served {sum(v for _, v in parts):.1f}s"
    return ", ".join(f"{k.replace('_', ' ')} {v:.1f}s" for k, v in parts)


def outputs_table(result: Result, compact: bool = False) -> Table:
    """Per output: the file's row (ONNX Runtime here, vs torch), then the served rows beside it:
    max |d| against torch and against the file's local run (worst sample), top-1 agreement with
    torch.  ``compact``: the inspector's narrow form (the output's name on a row of its own)."""
    t = Table(box=None, header_style="bold", pad_edge=False, padding=(0, 1))
    heads = [("run", "left"), ("|d| torch" if not compact else "torch", "right"),
             ("|d| file" if not compact else "file", "right"), ("top-1", "right"), ("", "left")]
    if not compact:
        heads.insert(0, ("output", "left"))
    for name, justify in heads:
        t.add_column(name, justify=justify, overflow="fold" if name == "output" else "ellipsis",  # type: ignore[arg-type]
                     no_wrap=name != "output", min_width={"output": 6, "": 4}.get(name))
    s = result.served
    served = {o.name: o for o in (s.outputs if s is not None else [])}
    # per loop: the runs' figures are over every output, so they are this output's when there is one
    loops = {r.mode: r.max_abs_vs_local for r in s.runs} if s is not None and len(s.outputs) == 1 else None
    rows: list[tuple[str, list]] = []
    for o in result.outputs:
        fails = Text("over", style=BAD) if o.fails else Text("ok", style=GOOD)
        rows.append((o.name, ["file, ORT here", _num(o.metrics.max_abs.worst, compact), "—",
                              _pct(o.top1_agreement, compact), "" if compact else fails]))
        so = served.pop(o.name, None)
        if so is not None:
            rows += [(o.name, r) for r in _served_rows(so, loops, compact)]
    for so in served.values():          # a served output the file's outputs do not name
        rows += [(so.name, r) for r in _served_rows(so, loops, compact)]
    last = None
    for name, cells in rows:
        if compact and name != last:
            t.add_row(Text(f"output {name}", style="bold"), "", "", "", "")
        elif not compact:
            cells = [Text(name) if name != last else Text(""), *cells]
        last = name
        t.add_row(*cells)
    return t


def _served_rows(so, loops: Optional[dict], compact: bool) -> list[list]:
    """One row per request loop when the loops' figures are this output's, else the worst of both."""
    mark = Text("≠", style=f"bold {BAD}") if so.fails else Text("=", style=GOOD)
    if loops is None:
        rows = [["served (both loops)", _num(so.max_abs_vs_torch, compact), _num(so.max_abs_vs_local, compact),
                 _pct(so.top1_vs_torch, compact), mark]]
        if so.batched_top1_vs_torch is not None:
            rows.append(["served, batched", "", "", _pct(so.batched_top1_vs_torch, compact), ""])
        return rows
    return [["served, 1 by 1", _num(so.max_abs_vs_torch, compact), _num(loops.get("sequential"), compact),
             _pct(so.top1_vs_torch, compact), ""],
            ["served, batched", "", _num(loops.get("concurrent"), compact), _pct(so.batched_top1_vs_torch, compact),
             mark]]


def config_lines(result: Result) -> list[Text]:
    """The served file, the config fields that changed the run, and what cannot be reproduced here."""
    s = result.served
    if s is None:
        return []
    where = s.url if s.source == "server" else s.repo
    head = Text(f"served model {s.model}", style="bold")
    if s.version is not None:
        head.append(f" version {s.version}")
    head.append(f"  ({s.source} {where})", style="dim")
    out = [head]
    if s.file:
        out.append(Text(f"file: {s.file}" + (f" ({s.why_file})" if s.why_file else ""), style="dim"))
    batching = f"max_batch_size {s.max_batch_size}, dynamic batching {'on' if s.dynamic_batching else 'off'}"
    out.append(Text(batching, style="dim"))
    out.append(Text("config fields that changed the run:", style="bold"))
    out += [Text(f"  • {f}") for f in s.fields_shown()]
    if s.unreproducible:
        line = Text("not reproduced here (the served numbers may differ): ", style=f"bold {WARN}")
        line.append("; ".join(s.unreproducible), style=WARN)
        out.append(line)
    return out


def verdict_lines(result: Result) -> list[Text]:
    s = result.served
    out: list[Text] = []
    if s is not None and s.verdict:
        style = GOOD if s.verdict == "same" else BAD
        word = "the served model computes what the file computes" if s.verdict == "same" \
            else f"served ≠ file: {s.reason}"
        out.append(Text(word, style=f"bold {style}"))
        if s.detail:
            out.append(Text(s.detail))
    elif s is not None:
        out.append(Text("repository only: the file ran with the served settings; no server was asked "
                        "(give --triton-url to compare its answers)", style="dim"))
    for r in (s.runs if s is not None else []):
        per = 1000 * r.seconds / r.requests if r.requests else 0.0
        out.append(Text(f"{r.mode}: {r.requests} requests in {r.seconds:.2f} s ({per:.1f} ms each), "
                        f"max |d| vs the file {_num(r.max_abs_vs_local)}", style="dim"))
    return out


def sweep_lines(result: Result) -> list[Text]:
    b = result.batch_sweep
    if b is None:
        return []
    if b.note:
        return [Text(f"batch sweep {b.sizes}: {b.note}", style="dim")]
    sizes = ", ".join(f"{k}: {_num(d)}" for k, d in zip(b.sizes, b.outputs_max_abs))
    if b.invariant:
        return [Text(f"batch sweep {b.sizes}: batch invariant (outputs max |alone - batched| {sizes})",
                     style=GOOD)]
    line = Text(f"batch sweep {b.sizes}: the outputs depend on the batch (max |alone - batched| {sizes})",
                style=f"bold {BAD}")
    if b.first_layer is not None:
        line.append(f"; first layer: #{b.first_layer} {b.first_module or '(root)'}", style=BAD)
    return [line]


def served_screen(result: Result) -> RenderableType:
    """The `v` screen: the verdict, the outputs side by side, the config, the sweep, the cost."""
    parts: list[RenderableType] = []
    parts += verdict_lines(result)
    parts += [Text(""), Text("Outputs", style="bold underline"), outputs_table(result)]
    if result.served is not None:
        parts += [Text("")] + config_lines(result)
    if result.batch_sweep is not None:
        parts += [Text("")] + sweep_lines(result)
    cost = served_cost(result)
    if cost:
        parts += [Text(""), Text(f"served run's cost: {cost}", style="dim")]
    if result.served is None and result.batch_sweep is None:
        parts += [Text(""), Text("no served model in this run: start with --triton-repo REPO --model NAME or "
                                 "--triton-url URL --model NAME (docs/triton.md)", style="dim")]
    return Group(*parts)


def layer_lines(result: Result, layer: Layer) -> list[RenderableType]:
    """The inspector's served part: on the root, the verdict, the outputs side by side and the
    served config; on any layer the batch sweep compared, its max |alone - batched| per size."""
    out: list[RenderableType] = []
    if layer.parent is None and result.served is not None:
        out += [Text("\nServed model (Triton)  ·  v: the served screen", style="bold underline")]
        out += verdict_lines(result)[:2]
        if result.served.outputs:
            out.append(outputs_table(result, compact=True))
        out += config_lines(result)
    b = result.batch_sweep
    if b is None:
        return out
    if layer.parent is None:
        out += [Text("\nBatch sweep", style="bold underline")] + sweep_lines(result)
    lay = next((x for x in b.layers if x.layer == layer.index), None)
    if lay is not None and layer.parent is not None:      # the root's figure is the outputs' (above)
        figs = ", ".join(f"{k}: {_num(d)}" for k, d in zip(b.sizes, lay.max_abs))
        line = Text(f"batch sweep: max |alone - batched| {figs}", style=BAD if lay.depends else "dim")
        if b.first_layer == layer.index:
            line.append("  ← the first layer that depends on the batch", style=f"bold {BAD}")
        elif lay.depends:
            line.append("  (depends on the batch)", style=BAD)
        out.append(line)
    return out
