"""A node replaced by its op's ONNX definition: the schema's function body, instantiated with the node's attributes.

ONNX defines many ops as functions of simpler ones (``Celu`` as ``Div``, ``Elu``, ``Mul``; ``Elu`` as ``Exp``,
``Sub``, ``Where``...).  ONNX Runtime has no float64 kernel for several of them (``Elu``, ``Selu``, ``HardSigmoid``,
``Softsign``...; ``Celu`` is float32 only before opset 28), so a region widened to float64
(``origin64.py``) that holds one cannot run: expanded into its definition, the same computation runs in double
with kernels that exist.  ``spec["expand"]`` names the op types to expand (``causes/propose/numerics/double_kernels``
probes which); an expansion's own nodes of those types are expanded in turn.
"""
from __future__ import annotations

from typing import Any, Optional

MAX_DEPTH = 4        # Celu -> Elu -> primitives: a definition nests a few levels at most


def _opset(model: Any) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 17)


def function_of(node: Any, opset: int) -> Optional[Any]:
    """The FunctionProto defining ``node``'s op at ``opset``, for float64 inputs (None: a primitive op).  A
    context-dependent definition (``Celu``'s) is built for the node's attributes."""
    import onnx
    import onnx.defs
    from onnx import TensorProto, helper

    try:
        schema = onnx.defs.get_schema(node.op_type, opset, "")
    except Exception:  # noqa: BLE001 - an op unknown at this opset: nothing to expand
        return None
    if schema.has_function:
        return schema.function_body
    if not schema.has_context_dependent_function:
        return None
    double = helper.make_tensor_type_proto(TensorProto.DOUBLE, None).SerializeToString()
    try:
        raw = schema.get_context_dependent_function(node.SerializeToString(), [double for v in node.input if v])
    except Exception:  # noqa: BLE001 - the definition does not build for these inputs
        return None
    body = onnx.FunctionProto()
    body.ParseFromString(raw)
    return body if body.node else None


def _attrs(node: Any, op: str, opset: int) -> dict[str, Any]:
    """The node's attributes by name, the schema's defaults for those it leaves out."""
    import onnx.defs

    schema = onnx.defs.get_schema(op, opset, "")
    out = {name: a.default_value for name, a in schema.attributes.items() if a.default_value.name}
    out.update({a.name: a for a in node.attribute})
    return out


def expand_node(node: Any, opset: int, prefix: str) -> list[Any]:
    """``node``'s definition: the function body's nodes, formal inputs/outputs bound to the node's, intermediates
    renamed under ``prefix``, attribute references bound to the node's attributes ([] when it has no body)."""
    from onnx import AttributeProto, NodeProto

    body = function_of(node, opset)
    if body is None:
        return []
    attrs = _attrs(node, node.op_type, opset)
    names = {f: a for f, a in zip(body.input, node.input)}
    names.update({f: a for f, a in zip(body.output, node.output)})
    out = []
    for k, fn in enumerate(body.node):
        new = NodeProto()
        new.CopyFrom(fn)
        new.name = f"{prefix}/{fn.op_type}_{k}"
        new.input[:] = [names.get(v, f"{prefix}/{v}") if v else "" for v in fn.input]
        new.output[:] = [names.get(v, f"{prefix}/{v}") if v else "" for v in fn.output]
        kept = []
        for a in new.attribute:
            if a.ref_attr_name:
                if a.ref_attr_name not in attrs:
                    continue
                bound = AttributeProto()
                bound.CopyFrom(attrs[a.ref_attr_name])
                bound.name = a.name
                a = bound
            kept.append(a)
        del new.attribute[:]
        new.attribute.extend(kept)
        out.append(new)
    return out


def _expanded(node: Any, ops: set[str], opset: int, depth: int = 0) -> list[Any]:
    parts = expand_node(node, opset, f"{node.name}/drifttui_def") if node.op_type in ops and depth < MAX_DEPTH else []
    return [m for p in parts for m in _expanded(p, ops, opset, depth + 1)] if parts else [node]


def expand_region(model: Any, names: set[str], ops: set[str]) -> set[str]:
    """The nodes named ``names`` of a type in ``ops`` replaced in ``model``'s graph by their definitions
    (recursively); the region's node names after it."""
    if not ops:
        return names
    opset = _opset(model)
    nodes, region = [], set()
    for n in model.graph.node:
        parts = _expanded(n, ops, opset) if n.name in names else [n]
        nodes.extend(parts)
        region |= {p.name for p in parts} if n.name in names else set()
    if region == names:
        return names
    kept = [type(n)() for n in nodes]
    for k, n in zip(kept, nodes):
        k.CopyFrom(n)
    del model.graph.node[:]
    model.graph.node.extend(kept)
    return region
