"""JUnit XML for CI (``--junit PATH``): one test suite per run.

Test cases: one per model output (fails when the output fails the tolerance, or is below
``--min-top1``), one for the per-layer verdict (fails on drift, naming the origin module, its
class, ONNX ops and errors, and the headline cause and fix when diagnosed), and one per
error-severity finding. A drift the ``--baseline`` already carries is reported as skipped.
Every attribute and text passes :func:`drifttui.report.escape.xml` before it is written: a name
with a control character still gives a well-formed XML 1.0 file.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Optional

from drifttui.core.result import Result
from drifttui.report.escape import xml
from drifttui.report.gate import Decision, Gate, error_findings
from drifttui.report.summary import (cause_text, fmt, layer_name, origin_text, output_fails, run_label, top1_text)


def _serialize(root: ET.Element) -> str:
    """The document, every attribute and text made legal XML 1.0 first."""
    for el in root.iter():
        el.attrib.update({k: xml(v) for k, v in el.attrib.items()})
        if el.text:
            el.text = xml(el.text)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _case(suite: ET.Element, classname: str, name: str, time: float = 0.0) -> ET.Element:
    return ET.SubElement(suite, "testcase", classname=classname, name=name, time=f"{max(0.0, time):.3f}")


def _fail(case: ET.Element, message: str, body: str, kind: str = "drift") -> None:
    el = ET.SubElement(case, "failure", message=message, type=kind)
    el.text = body


def _skip(case: ET.Element, message: str) -> None:
    ET.SubElement(case, "skipped", message=message)


def _layers_body(result: Result, decision: Decision) -> str:
    from drifttui.report.text import _rows

    lines = [f"origin: {origin_text(result)}"]
    cause = cause_text(result)
    if cause:
        lines.append(cause)
    lines += [f"gate: {r}" for r in decision.failures if not r.startswith("drift: ")]
    lines += [f"baseline: {c}" for c in decision.changes]
    lines.append("layers around the origin (index, module, class, ONNX ops, status, max |d|, max rel, own error):")
    for L in _rows(result, 3):
        m = L.metrics
        lines.append(f"  {L.index:>4} {layer_name(L.module, L.call)} {L.cls} {','.join(L.op_types[:3]) or '-'} "
                     f"{L.status} {fmt(m.max_abs.worst if m else None)} {fmt(m.max_rel.worst if m else None)} "
                     f"{fmt(L.local.max_abs.worst if L.local else None)}")
    lines += [f"note: {n}" for n in result.notes]
    return "\n".join(lines)


def _served_case(suite: ET.Element, result: Result) -> None:
    """The served model (Triton) and the batch sweep: one test case, failed as the gate fails it."""
    from drifttui.report.gate import served_failures
    from drifttui.report.served_text import served_lines

    if result.served is None and result.batch_sweep is None:
        return
    case = _case(suite, "drifttui.served", "served model" if result.served is not None else "batch sweep",
                 sum(r.seconds for r in result.served.runs) if result.served is not None else 0.0)
    failing = served_failures(result)
    if failing:
        _fail(case, "; ".join(failing), "\n".join(served_lines(result)), "served")
    else:
        ET.SubElement(case, "system-out").text = "\n".join(served_lines(result))


def render(result: Result, decision: Decision, gate: Optional[Gate] = None, command: str = "check") -> str:
    gate = gate or Gate()
    tol = result.tolerance
    suite = ET.Element("testsuite", name=f"drifttui {command}: {run_label(result)}",
                       time=f"{result.timings.get('total', 0.0):.3f}")
    props = ET.SubElement(suite, "properties")
    env = result.environment
    for key, value in (("atol", f"{tol.atol:g}"), ("rtol", f"{tol.rtol:g}"), ("samples", str(result.samples)),
                       ("verdict", result.verdict), ("exporter", env.exporter), ("opset", str(env.opset)),
                       ("torch", env.torch), ("onnxruntime", env.onnxruntime), ("fail_on", gate.fail_on),
                       ("min_top1", "-" if gate.min_top1 is None else f"{gate.min_top1:g}")):
        ET.SubElement(props, "property", name=key, value=value)

    for o in result.outputs:
        case = _case(suite, "drifttui.outputs", f"output {o.name}")
        m = o.metrics
        stats = (f"max |d| {fmt(m.max_abs.worst)}, max rel {fmt(m.max_rel.worst)}, cosine {m.cosine.worst:.6f}, "
                 f"top-1 agreement {top1_text(o)}, worst in sample {m.max_abs.worst_sample}")
        low_top1 = (gate.min_top1 is not None and o.top1_agreement is not None
                    and o.top1_agreement < gate.min_top1)
        if low_top1:
            _fail(case, f"top-1 agreement {top1_text(o)} is below --min-top1 {gate.min_top1:g}", stats, "top1")
        elif output_fails(o) and decision.tolerated:
            _skip(case, f"known drift, carried by the baseline: {stats}")
        elif output_fails(o):
            _fail(case, f"output {o.name} fails the tolerance (atol={tol.atol:g}, rtol={tol.rtol:g}): {stats}",
                  f"{stats}\norigin: {origin_text(result)}")

    case = _case(suite, "drifttui.layers", "per-layer verdict", result.timings.get("samples", 0.0))
    if result.verdict == "drift":
        message = f"drift at {origin_text(result)}" if result.drift_origin else f"drift: {origin_text(result)}"
        cause = cause_text(result)
        if cause:
            message += f"; {cause}"
        if decision.tolerated:
            _skip(case, f"known drift, carried by the baseline: {message}")
        else:
            _fail(case, message, _layers_body(result, decision))

    _served_case(suite, result)

    for f in error_findings(result):
        case = _case(suite, "drifttui.findings", f"{f.check} at {f.module or 'the graph'}")
        _fail(case, f"{f.message}; fix: {f.fix}" if f.fix else f.message,
              f"check {f.check}, ONNX nodes {', '.join(f.onnx_nodes[:5]) or '-'}, kind {f.kind}", "finding")

    cases = suite.findall("testcase")
    failures = sum(1 for c in cases if c.find("failure") is not None)
    skipped = sum(1 for c in cases if c.find("skipped") is not None)
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
    root = ET.Element("testsuites", name="drifttui", tests=str(len(cases)), failures=str(failures), errors="0",
                      time=suite.get("time", "0"))
    root.append(suite)
    return _serialize(root)


def render_error(exc: Exception, command: str = "check") -> str:
    """The report of a run that could not compare: one test case with an <error>."""
    exit_code = getattr(exc, "exit_code", 3)
    suite = ET.Element("testsuite", name=f"drifttui {command}", tests="1", failures="0", errors="1", skipped="0",
                       time="0.000")
    case = _case(suite, "drifttui.run", "compare PyTorch with ONNX")
    el = ET.SubElement(case, "error", message=str(exc), type=type(exc).__name__)
    el.text = f"drifttui exited {exit_code}: {exc}"
    root = ET.Element("testsuites", name="drifttui", tests="1", failures="0", errors="1", time="0.000")
    root.append(suite)
    return _serialize(root)
