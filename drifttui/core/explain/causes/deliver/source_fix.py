"""The change to make at the source beside a patch ``repair`` applied to the file: a patched graph
is a stopgap, and a re-export of the same model with the same settings writes the same mistake
again.  Only what the patch itself tells is said (its spec, the file's opset and exporter); a
patch whose source change is not known gets its finding's fix in words.

An export call is code only when it changes something: a higher opset, or the exporter and opset of
a verified re-export (drifttui's own export of the origin translated it right).  An attribute,
constant or initializer the file lost does not say whether the export or a later edit lost it, and
the call that wrote the file (its exporter and opset) is no fix (fourth pass: `repair` printed
``torch.onnx.export(..., dynamo=True, opset_version=20)`` for an opset-20 dynamo file): the
finding's fix in words.
"""
from __future__ import annotations

from typing import Any, Optional

# graph edits that restore a value the module holds (an attribute, a constant, an initializer)
_RESTORES = {"set_attribute", "replace_constant", "replace_initializer"}
RESIZE_MODES_OPSET = 11     # the first opset whose Resize has coordinate modes


def _export_call(opset: Optional[int], exporter: str, extra: str = "") -> str:
    dynamo = {"dynamo": "dynamo=True", "torchscript": "dynamo=False"}.get(exporter)
    args = ", ".join(a for a in ("model, args, \"model.onnx\"", dynamo, f"opset_version={opset}" if opset else "",
                                 extra) if a)
    return f"torch.onnx.export({args})"


def exporter_of(label: str) -> str:
    """``dynamo`` / ``torchscript`` from the exporter the run records, a user's file's told by how it was read
    ("torchscript (from the file's node names)"); "" when neither."""
    head = str(label).split(" ", 1)[0]
    return head if head in ("dynamo", "torchscript") else ""


def source_fix(spec: dict[str, Any], opset: Optional[int], exporter: str) -> Optional[str]:
    """The source change for the applied patch ``spec`` as code, or None when it is not known."""
    op = spec.get("op")
    exporter = exporter_of(exporter)
    if op == "reexport" and spec.get("script"):       # the module compiled by torch.jit.script (reexport.py)
        return _export_call(spec.get("opset"), "torchscript").replace("(model,", "(torch.jit.script(model),", 1)
    if op == "reexport" and spec.get("static"):       # a lowering on a dynamic size (dynamic_lowering.py)
        made = str(spec.get("exporter", ""))
        return _export_call(None, made, "dynamic_shapes=None" if made == "dynamo" else "dynamic_axes=None")
    if op == "reexport" and spec.get("eval"):         # a file exported in training mode (train_mode.py)
        made = exporter_of(str(spec.get("made_by", exporter)))
        return "model.eval(); " + _export_call(None, made, "training=torch.onnx.TrainingMode.EVAL"
                                               if made == "torchscript" else "")
    if op == "reexport" and (spec.get("decompose") or spec.get("retrace") or spec.get("peephole") is False):
        return None         # a decomposition, a re-trace, a pass torch cannot switch off: the finding's fix says how
    if op == "reexport":
        return _export_call(spec.get("opset"), str(spec.get("exporter", "")),
                            "optimize=False" if spec.get("optimize") is False else "")
    if op == "rewrite" and spec.get("rewrite") == "resize_opset11":
        return _export_call(max(RESIZE_MODES_OPSET, opset or RESIZE_MODES_OPSET), exporter)
    if op in _RESTORES and spec.get("name") == "coordinate_transformation_mode" \
            and opset is not None and opset < RESIZE_MODES_OPSET:
        return _export_call(RESIZE_MODES_OPSET, exporter)
    return None


def source_fixes(applied: list[dict[str, Any]], findings: list[Any], opset: Optional[int],
                 exporter: str) -> list[tuple[str, str]]:
    """(code or "", the finding's fix in words) of each applied patch, in order, each said once."""
    words = {repr(sorted(f.patch.items(), key=str)): f.fix for f in findings if f.patch}
    out: list[tuple[str, str]] = []
    for spec in applied:
        found = {k: v for k, v in spec.items() if k != "cut_at"}       # how repair grafted it, not the finding's
        item = (source_fix(spec, opset, exporter) or "", words.get(repr(sorted(found.items(), key=str)), ""))
        if any(item) and item not in out:
            out.append(item)
    return out
