"""The values of a graph whose element type numpy lacks (bfloat16, float8): ONNX Runtime cannot hand them to numpy
(the whole run fails), so the sessions (``runtime/sessions.py``) and the causes' runs (``locate/evaluate.py``) read
them through an exact Cast to float32.  One rule for both.  The types come from what the caller knows (the graph
index's ``GraphIndex.elem_types``: one shape inference per index, not one per session or per case); shape inference
of the model runs only for a graph that holds such a type at all and a value the caller's types do not name (a
patched copy's new values)."""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional

from drifttui.core.base.dtypes import NUMPY_LACKS


def holds_lacking(model: Any) -> bool:
    """``model`` holds a value of a type numpy lacks: an input, output or declared value, an initializer, a Constant,
    or a Cast to one."""
    g = model.graph
    return any(v.type.tensor_type.elem_type in NUMPY_LACKS for v in [*g.input, *g.output, *g.value_info]) \
        or any(t.data_type in NUMPY_LACKS for t in g.initializer) \
        or any((a.name == "to" and a.i in NUMPY_LACKS) or (a.HasField("t") and a.t.data_type in NUMPY_LACKS)
               for n in g.node for a in n.attribute)


def lacking(model: Any, names: Optional[Iterable[str]] = None,
            known: Optional[Mapping[str, int]] = None) -> dict[str, int]:
    """Each of ``names`` (default: every value of ``model``) whose element type numpy lacks -> that type.  ``known``:
    the types the caller holds (the index's); shape inference only for a name it does not hold."""
    import onnx

    if not holds_lacking(model):
        return {}
    wanted = list(names) if names is not None else [v for n in model.graph.node for v in n.output if v] + \
        [v.name for v in model.graph.input]
    types = dict(known or {})
    if any(n not in types for n in wanted):
        try:
            typed = onnx.shape_inference.infer_shapes(model)
        except Exception:  # noqa: BLE001 - types unknown: what the caller knows, the rest fetched as it is
            typed = None
        if typed is not None:
            types.update({v.name: v.type.tensor_type.elem_type
                          for v in [*typed.graph.value_info, *typed.graph.output, *typed.graph.input]
                          if v.name not in types})
    return {n: types[n] for n in wanted if types.get(n) in NUMPY_LACKS}
