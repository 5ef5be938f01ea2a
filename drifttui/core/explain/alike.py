"""Findings that say one thing of many names, said once (findings.py).

A float16 file stores every weight in float16: the ``dtype`` check says "initializer X is stored as float16"
once per initializer (about a hundred on MobileBERT through onnxconverter-common's converter), and step 6's
weight comparison "X is float32 in torch but float16 in the ONNX file" once more per parameter.  Findings of
one check, severity, kind and fix whose messages are the same once the names they quote are taken out (the
names of the file's values, nodes and initializers, and of the model's modules, parameters and buffers) are
one finding: the sentence, the count, a few names, and every member exact in its evidence (the JSON report
holds them all).

Never grouped: an error (each names a defect to fix), a finding a patch was tried for (verified or not), and
one at the drift origin's module (the origin's own findings rank first and stay whole).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Optional

from drifttui.core.result import Finding

MIN_ALIKE = 4          # this many alike findings or more become one
EXAMPLES = 3           # names said in the sentence; all of them are in the evidence
MARK = "…"             # a name taken out of a sentence


def _names(ctx: Any) -> set[str]:
    """Every name the file and the model give: what a sentence quotes and a template leaves out."""
    index = ctx.index
    out = set(index.initializers) | set(index.producer) | {n.name for n in index.nodes if n.name}
    model = getattr(ctx, "model", None)
    if model is not None and hasattr(model, "named_modules"):
        for prefix, m in model.named_modules():
            out.add(prefix)
            out.update(f"{prefix}.{n}" if prefix else n for n, _ in m.named_parameters(recurse=False))
            out.update(f"{prefix}.{n}" if prefix else n for n, _ in m.named_buffers(recurse=False))
    out.discard("")
    return out


def _quoted(f: Finding, names: set[str]) -> list[str]:
    """The names ``f``'s message quotes: its module, its nodes and the names its evidence holds, longest first."""
    said = [f.module or "", *f.onnx_nodes, *(v for v in f.evidence.values() if isinstance(v, str))]
    return sorted({s for s in said if s and s in names and s in f.message}, key=len, reverse=True)


def _template(f: Finding, names: set[str]) -> tuple[str, list[str]]:
    """(the message with its names taken out, the names in the order the message says them)."""
    text, kept = f.message, []
    for s in _quoted(f, names):
        if s in text:             # not only a part of a longer name said (a module in its parameter's name)
            kept.append(s)
            text = text.replace(s, MARK)
    return text, sorted(kept, key=lambda s: f.message.find(s))


def _member(f: Finding) -> dict[str, Any]:
    return {"module": f.module, "onnx_nodes": list(f.onnx_nodes), "message": f.message, "evidence": f.evidence}


def _summary(group: list[Finding], template: str, said: list[list[str]]) -> Finding:
    first = group[0]
    shown = "; ".join(", ".join(s) for s in said[:EXAMPLES])
    more = len(group) - min(EXAMPLES, len(group))
    modules = {f.module for f in group}
    message = (f"{len(group)} alike: {template} ({shown}" + (f" and {more} more" if more else "")
               + ": every one in the JSON report's evidence)")
    evidence = {"alike": len(group), "template": template, "members": [_member(f) for f in group]}
    return dataclasses.replace(first, module=first.module if len(modules) == 1 else None, onnx_nodes=[],
                               message=message, evidence=evidence)


def _groupable(f: Finding, origin: Optional[str]) -> bool:
    return (f.severity != "error" and f.verified is None and f.patch is None
            and (origin is None or f.module != origin))


def collapse(ctx: Any, findings: list[Finding]) -> list[Finding]:
    """``findings`` with each set of alike ones (``MIN_ALIKE`` or more) replaced by one, where its first was."""
    origin = ctx.result.drift_origin.module if ctx.result.drift_origin is not None else None
    names = _names(ctx) if sum(_groupable(f, origin) for f in findings) >= MIN_ALIKE else set()
    groups: dict[tuple, list[int]] = {}
    said: dict[int, list[str]] = {}
    templates: dict[int, str] = {}
    for i, f in enumerate(findings):
        if not names or not _groupable(f, origin):
            continue
        templates[i], said[i] = _template(f, names)
        if said[i]:
            groups.setdefault((f.check, f.severity, f.kind, f.fix, templates[i]), []).append(i)
    head: dict[int, Finding] = {}
    gone: set[int] = set()
    for members in groups.values():
        if len(members) >= MIN_ALIKE:
            head[members[0]] = _summary([findings[i] for i in members], templates[members[0]],
                                        [said[i] for i in members])
            gone.update(members[1:])
    return [head.get(i, f) for i, f in enumerate(findings) if i not in gone]
