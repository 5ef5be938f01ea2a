"""The short Rich table `drifttui check` prints: the origin first, the layers around it, coverage."""
from __future__ import annotations

from typing import Any, Optional

from rich.console import Console, Group
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from drifttui.core.result import DRIFT, INHERITED, RULE_FORMULA, Layer, Result, own_op_types
from drifttui.core.base.dtypes import LOW_PRECISION
from drifttui.core.base.tolerance import K_EPS
from drifttui.report.console import UNWRAPPED_WIDTH, report_console
from drifttui.report.escape import plain, terminal
from drifttui.report.gate import Decision, Gate
from drifttui.report.profile import MAX_WIDTH, profile_line
from drifttui.report.summary import (alerts, drift_word, layer_name, origin_errors, origin_layer, origin_numbers,
                                     precision_story)
from drifttui.report.served_text import served_lines

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


def render(result: Result, context: int = 4, width: int = 80, decision: Optional[Decision] = None,
           gate: Optional[Gate] = None) -> Group:
    """The report's parts in print order: headline (with the CI gate's outcome when ``decision``
    is given), the tolerance rule in one line, the layers around the origin, outputs, coverage,
    notes, environment."""
    said = alerts(result)       # under the headline: torch differs from itself, NaN/Inf, another dtype
    parts: list = [*_headline(result, decision, gate), *(indented(plain(a, style="bold red")) for a in said),
                   _tolerance_line(result), *_precision(result),
                   *(plain(line, style="bold" if not line.startswith("  ") else "") for line in served_lines(result))]
    parts.extend(_profile(result, width))
    rows = _rows(result, context)
    if rows:
        parts.append(_layer_table(result, rows, width))
    parts.append(_outputs_table(result))
    c = result.coverage
    parts.append(Text(f"coverage: {c.modules} module calls — {c.mapped} mapped, {c.fused} fused, "
                      f"{c.not_exported} not exported, {c.unmapped} unmapped", style="dim"))
    parts.extend(_unmapped(result))
    parts.extend(hanging("note:", plain(note, style="yellow"), "yellow") for note in result.notes if note not in said)
    parts.append(_environment(result))
    return Group(*parts)


UNMAPPED_SAID = 3       # unmapped calls named under the coverage line (the JSON lists every one)


def _unmapped(result: Result) -> list:
    """The unmapped calls by name and why, so that "1 unmapped" can be found in the table and the file."""
    missing = [L for L in result.layers if L.status == "unmapped"]
    if not missing:
        return []
    more = f" and {len(missing) - UNMAPPED_SAID} more (in the JSON report)" if len(missing) > UNMAPPED_SAID else ""
    said = "; ".join(f"{L.module or '(root)'} ({L.cls}){': ' + L.note if L.note else ''}"
                     for L in missing[:UNMAPPED_SAID])
    return [indented(plain(f"unmapped: {said}{more}", style="dim"))]


def _profile(result: Result, width: int) -> list:
    """Where the error starts and grows, one character per layer (report/profile.py)."""
    line = profile_line(result, max(16, min(MAX_WIDTH, width - 12)))
    if not line:
        return []
    head, legend = line.split("  ", 1)
    text = Text(head)
    text.append(f"  {legend}", style="dim")
    return [text]


def _precision(result: Result) -> list[Text]:
    """The deployed file's precision, in every report; the budget rule when it is reduced."""
    p = result.precision
    if p is None:
        return []
    out = [plain(f"precision: {p.summary}", style="bold" if p.verdict else "dim")]
    if p.verdict:
        out[0].append(f" — {p.verdict}", style="bold green" if p.verdict == "within budget" else "bold red")
        out.append(plain(f"  budget rule: {p.rule}", style="dim"))
        budgets = [L.budget for L in result.layers if L.budget is not None and L.budget.own_budget > 0]
        if budgets:
            m = sum(1 for b in budgets if own_budget_cell(b).endswith("m"))
            out.append(plain(f"  own budgets: {m} of {len(budgets)} layers measured (m: from the layer recomputed by "
                             "PyTorch in the file's precision), the others the worst-case bound (b)", style="dim"))
    if p.kernels:        # an int8 file: its verdict holds for this processor's kernels (docs/deploy.md)
        out.append(plain(f"  {p.kernels}", style="yellow" if "may saturate" in p.kernels else "dim"))
    return out


def indented(text: Text, indent: int = 2) -> Padding:
    """``text`` with its wrapped continuation lines at the same indent (never at column 0)."""
    return Padding(text, (0, 0, 0, indent), expand=False)


def hanging(label: str, text: Text, style: str = "") -> Table:
    """``label text`` with the text's wrapped lines under its first word, not under the label."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, style=style)
    grid.add_column()
    grid.add_row(label, text)
    return grid


def _tolerance_line(result: Result) -> Text:
    """The rule in one line (the whole of it: `drifttui check --help`, docs/cli.md); the
    float16 / bfloat16 floor only when the model holds such values."""
    low = any(d in LOW_PRECISION for L in result.layers
              for d in [i.dtype for i in L.initializers] + [p.dtype.replace("torch.", "") for p in L.params])
    if low and result.tolerance.dtype:
        return Text(f"rule: {RULE_FORMULA} (scale: layer max |torch|; {'/'.join(LOW_PRECISION)}: "
                    f"rtol >= {K_EPS} eps; see --help)", style="dim")
    return Text(f"rule: {RULE_FORMULA}, scale = layer max |torch| (see --help)", style="dim")


def _headline(result: Result, decision: Optional[Decision] = None, gate: Optional[Gate] = None) -> list:
    """The first lines: the verdict, and when a gate decided, whether it fails, why, and the fix
    of the finding that fails it (a gate that fails without a drift must not start with OK)."""
    tol = result.tolerance
    clean = f"no drift at atol={tol.atol:g}, rtol={tol.rtol:g} over {result.samples} sample(s)"
    failures = [r for r in (decision.failures if decision else []) if not r.startswith("drift: ")]
    head = Text()
    if result.verdict != "drift" and decision is not None and failures:
        why = f"; --fail-on {gate.fail_on} fails on the finding" if gate and decision.findings else ""
        return [hanging("GATE FAILED", plain(f"(exit {decision.exit_code}): {failures[0]}"), "bold red"),
                *_fixes(decision), indented(Text(f"{clean}: the outputs agree{why}", style="dim")),
                *_gate_detail(failures[1:], decision, gate)]
    budgeted = result.precision is not None and bool(result.precision.verdict)
    if result.verdict == "ok":
        if budgeted:
            head.append("WITHIN BUDGET", style="bold green")
            head.append(f": every layer within its {result.precision.format} precision budget over "  # type: ignore[union-attr]
                        f"{result.samples} sample(s)")
        else:
            head.append("OK", style="bold green")
            head.append(f": {clean}")
        return [head, *(_gate_detail([], decision, gate) if decision is not None else [])]
    head.append(drift_word(result), style="bold red")
    o = result.drift_origin
    if o is None:
        head.append(": the model outputs differ, but no module could be named as the origin")
    else:
        ops = ", ".join(own_op_types(origin_layer(result), o.op_types)) or "-"
        head.append(terminal(f": origin {layer_name(o.module, o.call)} ({o.cls}, ONNX {ops})"))
    lines: list = [head]
    if o is not None:       # the numbers on a line of their own: the headline fits 80 columns
        numbers = origin_numbers(result)
        if numbers.startswith("max |d|"):
            numbers = f"{origin_errors(result)}; worst sample {o.worst_sample} of {result.samples}"
        lines.append(indented(Text(numbers)))
    if precision_story(result):       # both stories: the precision origin beside the genuine drift
        lines.append(indented(Text(terminal(precision_story(result)), style="yellow")))
    if decision is not None:
        lines += _gate_detail(failures, decision, gate) + _fixes(decision)
        if decision.passed:
            why = "known drift, carried by the baseline" if decision.tolerated else f"--fail-on {gate.fail_on if gate else '?'}"
            lines.append(indented(Text(f"gate passes (exit 0): {why}", style="yellow")))
    return lines


def _fixes(decision: Decision) -> list:
    """The fix of each error finding that fails the gate."""
    return [indented(plain(f"fix ({f.check}{f' at {f.module}' if f.module else ''}): {f.fix}", style="cyan"))
            for f in decision.findings[:3] if f.fix]


def _gate_detail(failures: list[str], decision: Decision, gate: Optional[Gate]) -> list:
    """One line per further reason the gate fails and, with a baseline, what changed."""
    lines = [indented(plain(f"gate fails: {r}", style="red")) for r in failures]
    if gate is not None and gate.baseline is not None:
        changes = [c for c in decision.changes if c not in decision.failures]
        lines += [indented(plain(f"baseline: {c}", style="dim")) for c in changes]
        if not decision.changes:
            lines.append(indented(Text("baseline: nothing changed", style="dim")))
    return lines


_FIXED = {"#": 4, "class": 14, "onnx ops": 18, "status": 9, "max abs": 8, "max rel": 8, "own err": 8, "1-cos": 8,
          "own dB": 6, "share": 5}


def db(x: Optional[float]) -> str:
    if x is None:
        return "-"
    return "inf" if x == float("inf") else f"{x:.1f}"


def budget_cells(L: Layer) -> list:
    """Own loss in dB (red when over its budget and a drift; yellow when over but decide left it ok: a
    layer held to the worst-case bound alone whose output is within), the measured share of the output
    error, and its own budget."""
    b = L.budget
    if b is None or b.format == "float32":
        return ["-", "-", "-"]
    share = "-" if b.share is None or b.share != b.share else f"{100 * b.share:.0f}%"     # NaN: not measurable
    style = ("bold red" if L.status == DRIFT else "yellow") if b.over else ""
    return [Text(db(b.own_loss_db), style=style), share, own_budget_cell(b)]


def own_budget_cell(b: Any) -> str:
    """A layer's own budget and how it was derived: ``m`` measured (SAFETY x its recomputation in the
    file's precision), ``b`` the worst-case bound (not recomputed)."""
    if b.own_budget <= 0:
        return "-"
    return f"{b.own_budget:.1e} {'m' if b.derived == 'measured' else 'b'}"


def _layer_table(result: Result, rows: list[Layer], width: int) -> Table:
    wide = width >= 110
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    cols = [("#", "right"), ("module", "left")]
    if wide:
        cols += [("class", "left"), ("onnx ops", "left")]
    cols += [("status", "left"), ("max abs", "right"), ("max rel", "right"), ("own err", "right"),
             ("1-cos", "right")]
    budgeted = result.precision is not None and bool(result.precision.verdict)
    if budgeted:
        cols += [("own dB", "right"), ("share", "right"), ("own budget", "right")]
    unwrapped = width >= UNWRAPPED_WIDTH      # piped: every op of every layer, as the README says
    for col, just in cols:
        table.add_column(col, justify=just, no_wrap=True, overflow="ellipsis",  # type: ignore[arg-type]
                         min_width=_FIXED.get(col),
                         max_width=_FIXED.get(col) if col in ("class", "onnx ops") and not unwrapped else None)
    room = max(12, width - sum(_FIXED[c] + 2 for c, _ in cols if c in _FIXED) - 1)
    origin = result.drift_origin.layer if result.drift_origin else None
    for L in rows:
        m = L.metrics
        name = ("◆ " if L.index == origin else "") + _name(L)
        if len(name) > room:
            name = "…" + name[-(room - 1):]
        cells: list = [str(L.index), Text(name)]       # Text: a name is never read as markup
        if wide:
            ops = L.op_types if unwrapped else L.op_types[:3]
            cells += [plain(L.cls), plain(",".join(ops) + ("…" if len(L.op_types) > len(ops) else ""))]
        cells += [Text(L.status.replace("_", " "), style=STATUS_STYLE.get(L.status, "")),
                  fmt(m.max_abs.worst if m else None), fmt(m.max_rel.worst if m else None),
                  fmt(L.local.max_abs.worst if L.local else None),
                  fmt(max(0.0, 1 - m.cosine.worst) if m else None)]
        if budgeted:
            cells += budget_cells(L)
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


def print_report(result: Result, console: Optional[Console] = None, decision: Optional[Decision] = None,
                 gate: Optional[Gate] = None) -> None:
    console = console or report_console()
    console.print(render(result, width=console.width, decision=decision, gate=gate))


__all__ = ["render", "print_report", "INHERITED"]
