"""The change to make at the source beside a patch ``repair`` applied to the file: a patched graph
is a stopgap, and a re-export of the same model with the same settings writes the same mistake
again.  Only what the patch itself tells is said (its spec, the file's opset and exporter); a
patch whose source change is not known gets its finding's fix in words.
"""
from __future__ import annotations

from typing import Any, Optional

# graph edits that a plain re-export of the unchanged torch model undoes: the file lost a value
# the module holds (an attribute, a constant, an initializer)
_REEXPORT_UNDOES = {"set_attribute", "replace_constant", "replace_initializer"}


def _export_call(opset: Optional[int], exporter: str, extra: str = "") -> str:
    dynamo = {"dynamo": "dynamo=True", "torchscript": "dynamo=False"}.get(exporter)
    args = ", ".join(a for a in ("model, args, \"model.onnx\"", dynamo, f"opset_version={opset}" if opset else "",
                                 extra) if a)
    return f"torch.onnx.export({args})"


def source_fix(spec: dict[str, Any], opset: Optional[int], exporter: str) -> Optional[str]:
    """The source change for the applied patch ``spec`` as code, or None when it is not known."""
    op = spec.get("op")
    exporter = exporter if exporter in ("dynamo", "torchscript") else ""
    if op == "reexport":
        return _export_call(spec.get("opset"), str(spec.get("exporter", "")))
    if op == "rewrite" and spec.get("rewrite") == "resize_opset11":
        return _export_call(max(11, opset or 11), exporter)
    if op in _REEXPORT_UNDOES:
        resize = spec.get("name") == "coordinate_transformation_mode"
        return _export_call(max(opset or 0, 11) if resize else opset, exporter)
    return None


def source_fixes(applied: list[dict[str, Any]], findings: list[Any], opset: Optional[int],
                 exporter: str) -> list[tuple[str, str]]:
    """(code or "", the finding's fix in words) of each applied patch, in order, each said once."""
    words = {repr(sorted(f.patch.items(), key=str)): f.fix for f in findings if f.patch}
    out: list[tuple[str, str]] = []
    for spec in applied:
        item = (source_fix(spec, opset, exporter) or "", words.get(repr(sorted(spec.items(), key=str)), ""))
        if any(item) and item not in out:
            out.append(item)
    return out
