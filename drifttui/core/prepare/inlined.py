"""A file whose modules are ONNX local functions, inlined in drifttui's in-memory copy with each node named by its
module (``onnx/functions.py``), as ONNX Runtime inlines them before it runs the graph; the file is unchanged."""
from __future__ import annotations

from typing import Any

from drifttui.core.onnx.functions import inline_functions


def class_names(model: Any) -> dict[str, str]:
    """The torch model's qualified module names -> class names, in module order (a scripted module's original
    class name); empty for a model without a module tree."""
    named = getattr(model, "named_modules", None)
    if named is None:
        return {}
    return {n: getattr(m, "original_name", None) or type(m).__name__ for n, m in named()}


def inline_local_functions(proto: Any, model: Any) -> list[str]:
    """Inline ``proto``'s model-local functions in place; the note that says so (none when it has none)."""
    if not len(proto.functions):
        return []
    made = sorted({f.name for f in proto.functions})
    calls = inline_functions(proto, class_names(model))
    if not calls:
        return []
    listed = ", ".join(made[:6]) + (", ..." if len(made) > 6 else "")
    return [f"the file's modules are ONNX local functions ({listed}: export_modules_as_functions); drifttui inlined "
            f"their {calls} calls in its in-memory copy, each node named by the module it was called in, as ONNX "
            "Runtime inlines them before it runs the graph (the file is unchanged; a repaired file is written inlined)"]
