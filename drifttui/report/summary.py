"""The sentences every CI output shares: the verdict, the origin, the headline cause.

JUnit, Markdown, GitHub/GitLab annotations and ``assert_no_drift`` all say the same thing in
the same words; they take them from here. Plain data in, plain strings out (no rich, no torch).
"""
from __future__ import annotations

from typing import Optional

from drifttui.core.result import ATTRIBUTE_NOT_THE_MODELS, UNATTRIBUTED, WEIGHT_NOT_THE_MODELS, Finding, Layer, Output, Result, own_op_types
from drifttui.report.escape import terminal


def fmt(x: Optional[float]) -> str:
    if x is None:
        return "-"
    if x != x:
        return "nan"
    return "0" if x == 0 else f"{x:.2e}"


def layer_name(module: str, call: int = 0) -> str:
    base = module or "(root)"
    return f"{base} (call {call + 1})" if call else base


def origin_layer(result: Result) -> Optional[Layer]:
    o = result.drift_origin
    if o is None or not (0 <= o.layer < len(result.layers)):
        return None
    return result.layers[o.layer]


def origin_name(result: Result) -> str:
    o = result.drift_origin
    return layer_name(o.module, o.call) if o is not None else "no module"


def origin_text(result: Result) -> str:
    """``layers.1.norm2 (LayerNorm; ONNX LayerNormalization node_x): max |d| ..., own error ...``"""
    o = result.drift_origin
    if o is None:
        unattributed = [L for L in result.layers if L.status == UNATTRIBUTED]
        if unattributed:
            names = ", ".join(layer_name(L.module, L.call) for L in unattributed[:3])
            return f"no module owns the error; unattributed layer(s): {names}"
        return "the model outputs differ, but no module could be named as the origin"
    layer = origin_layer(result)
    nodes = layer.onnx_nodes[:3] if layer is not None else []
    ops = ", ".join(own_op_types(layer, o.op_types)) or "no ONNX op"
    where = f"ONNX {ops}" + (f" at {', '.join(nodes)}" if nodes else "")
    return f"{layer_name(o.module, o.call)} ({o.cls}; {where}): {origin_numbers(result)}"


def origin_numbers(result: Result) -> str:
    """The origin's numbers, or, for a weight compared by content (no value of its own in the file,
    so no numbers), what differs: never ``max |d| nan``."""
    o = result.drift_origin
    layer = origin_layer(result)
    note = layer.note if layer is not None else ""
    for said in (WEIGHT_NOT_THE_MODELS, ATTRIBUTE_NOT_THE_MODELS):
        if o.max_abs != o.max_abs and said in note:      # NaN: no value compared
            return terminal(note[note.index(said):])
    return (f"{origin_errors(result)} (worst sample {o.worst_sample})")


def nonfinite_said(n: object, metrics: object = None) -> str:
    """`` (23 element(s) inf/NaN on one side only)`` for a count of such elements, "" for none; with the
    ``metrics`` that counted them, the overflows among them said (``overflow_said``)."""
    return f" ({n} element(s) inf/NaN on one side only{overflow_said(metrics, n)})" if n else ""


FORMAT_LIMITS = {65504.0: "float16", 3.3895313892515355e38: "bfloat16"}     # largest finite number -> format


def overflow_name(limit: float) -> str:
    """The format whose largest finite number is ``limit`` (65504: float16), or "its format"."""
    return FORMAT_LIMITS.get(float(limit), "its format")


def overflow_said(metrics: object, n: object = None) -> str:
    """``: all a float16 overflow, torch past 65504``: the elements the file holds as
    inf where torch's finite values pass its format's largest number (``Metrics.overflow``, counted by the
    engine); "" when none is."""
    over, limit = getattr(metrics, "overflow", 0), getattr(metrics, "overflow_limit", 0.0)
    if not over or not limit:
        return ""
    name = overflow_name(limit)
    what = "an overflow" if name == "its format" else f"a {name} overflow"
    return f": {'all' if over == n else f'{over} of them'} {what}, torch past {limit:.6g}"


def overflow_word(result: Result) -> str:
    """``float16 overflow`` when the origin's error is one (its output or its own error counts an overflow)."""
    layer = origin_layer(result) if result.drift_origin is not None else None
    found = [m for m in ((layer.metrics, layer.local) if layer is not None else ()) if getattr(m, "overflow", 0)]
    return f"{overflow_name(found[0].overflow_limit)} overflow" if found else ""


def origin_errors(result: Result) -> str:
    """``max |d| inf (23 element(s) inf/NaN on one side only), max rel inf, own error inf (22 ...)``: an error
    that is inf or NaN says how many elements made it so (issue 30 point 1)."""
    o = result.drift_origin
    layer = origin_layer(result)

    def count(metrics: object) -> str:
        return nonfinite_said(getattr(metrics, "nan_mismatch", 0), metrics)

    return (f"max |d| {fmt(o.max_abs)}{count(layer.metrics if layer else None)}, max rel {fmt(o.max_rel)}, "
            f"own error {fmt(o.local_max_abs)}{count(layer.local if layer else None)}")


def alerts(result: Result) -> list[str]:
    """What the verdict alone would hide, said next to it in every output (text headline, Markdown,
    annotations): torch differs from itself, ONNX Runtime gave NaN/Inf, an output's dtype differs, a
    --reference-onnx that is the --onnx file or matches only part of its weights."""
    from drifttui.core.capture.determinism import PREFIX
    from drifttui.core.decide.notes import output_notes
    from drifttui.core.prepare.reference_check import ALERT

    return [n for n in result.notes if n.startswith((PREFIX, ALERT))] + output_notes(result.outputs)


def headline(result: Result) -> Optional[Finding]:
    """The engine's headline cause, when it is one (an info finding or an empty list is not)."""
    f = result.headline
    if f is None or (f.severity == "info" and f.verified is not True):
        return None
    return f


def verification(f: Finding) -> str:
    if f.verified is True:
        return (f"verified: the patch brings the origin's own error from {fmt(f.local_before)} "
                f"to {fmt(f.local_after)}")
    if f.verified is False:
        return "not verified: the patch did not remove the drift"
    return "not verified by a patch"


def cause_text(result: Result) -> Optional[str]:
    """``cause: <check> at <module>: <message> (verified ...); fix: <fix>``, or None."""
    f = headline(result)
    if f is None:
        return None
    at = f" at {f.module}" if f.module else ""
    fix = f"; fix: {f.fix}" if f.fix else ""
    return f"cause: {f.check}{at}: {f.message} ({verification(f)}){fix}"


def output_fails(o: Output) -> bool:
    """Whether the engine decided that this output fails the tolerance (Output.fails)."""
    return o.fails


def top1_text(o: Output) -> str:
    return "-" if o.top1_agreement is None else f"{100 * o.top1_agreement:.1f}%"


def genuine(result: Result) -> bool:
    """decide's word: a reduced-precision file over budget through a genuine drift, not its precision."""
    p = result.precision
    return result.verdict == "drift" and p is not None and p.cause == "genuine drift"


def drift_word(result: Result) -> str:
    """The headline's word for a drifting result: OVER BUDGET (the precision's story), DRIFT IN THE
    <fmt> FILE (a genuine drift in a reduced-precision file: a wrong weight or attribute), DRIFT."""
    p = result.precision
    if genuine(result):
        return f"DRIFT IN THE {p.format.upper()} FILE"         # type: ignore[union-attr]
    return "OVER BUDGET" if p is not None and p.verdict else "DRIFT"


def verdict_title(result: Result) -> str:
    p = result.precision
    fmt = f"{p.format} " if p is not None and p.verdict else ""
    if result.verdict != "drift":
        return f"within the {fmt}precision budget" if fmt else "no drift"
    o = result.drift_origin
    what = f"over the {fmt}precision budget" if fmt else "drift"
    if genuine(result):
        what = f"genuine drift in the {fmt}file"
    return f"{what} at {layer_name(o.module, o.call)} ({o.cls})" if o is not None else f"{what} in the outputs"


def precision_story(result: Result) -> str:
    """The second story of a reduced-precision file whose origin is a genuine drift (Result.precision_origin,
    decided in core decide): the first layer over its precision budget, with its evidence.  "" otherwise."""
    o, p = result.precision_origin, result.precision
    if o is None or p is None or not (0 <= o.layer < len(result.layers)):
        return ""
    b = result.layers[o.layer].budget
    own = ""
    if b is not None:
        db = f"{b.own_loss_db:.1f} dB, " if b.own_loss_db is not None else ""
        share = "" if b.share is None else f", share of the output error {b.share:.0%}" + \
            (" (in float32 the outputs' error grows)" if b.share < 0 else "")
        own = f" (own error {db}budget {b.own_budget:.3g} of its scale{share})"
    return (f"also over the {p.format} precision budget, from {layer_name(o.module, o.call)}{own}: the file's "
            f"precision, a separate story from the drift at {origin_name(result)}; fix the drift first, then "
            "`drifttui repair` gives the keep-in-float32 list for the copy")


def run_label(result: Result) -> str:
    """What was compared, in a few words: the model spec and the ONNX file (or "exported")."""
    cfg = result.config
    model = cfg.example and f"example {cfg.example}" or cfg.model
    if model.startswith("python-object:"):       # an nn.Module handed to the Python API
        model = f"{model.split(':', 1)[1].split('#')[0]} (Python object)"
    return f"{model} vs {cfg.onnx or f'its {result.environment.exporter} export'}"


def assertion_message(result: Result, decision: object) -> str:
    """``assert_no_drift``'s message: what failed, the origin and its errors, the cause; each line
    escaped for a terminal (the names in it are the model's)."""
    tol = result.tolerance
    lines = [f"drifttui: the gate fails for {run_label(result)} (atol={tol.atol:g}, rtol={tol.rtol:g}, "
             f"{result.samples} sample(s))"]
    if result.verdict == "drift":
        lines.append(f"  origin: {origin_text(result)}")
    cause = cause_text(result)
    if cause:
        lines.append(f"  {cause}")
    for reason in getattr(decision, "failures", []):
        if not (reason.startswith("drift: ") and result.verdict == "drift"):   # the origin line says it
            lines.append(f"  - {reason}")
    usage = getattr(decision, "usage", "")
    if usage:
        lines.append(f"  - {usage}")
    return "\n".join(terminal(line) for line in lines)     # pytest prints it on a terminal
