"""Attributes told by a verified re-export: the wrong node's attributes against its counterpart's.

A re-export of the origin that computes what torch computes is a correct graph to diff against
(``constants.witness_constant_patches`` diffs its numbers).  When the node it names as wrong leaves out an
attribute (the ONNX default holds) that a node of the same op in the re-export sets to another value (a
``BatchNormalization`` without the ``training_mode=1`` of a ``batch_norm(training=True)`` call,
pytorch/pytorch#49229; a mode, an axis, a flag the export did not write), each such attribute is a
``set_attribute`` patch, verified like any other.  An attribute the file writes itself is left to the checks
that know what it should be (an epsilon, a Cast's type): the file's exporter chose it.  One that verifies
says which attribute the export got wrong, its class is the node's own (``reexport_story.lowering_class``: a normalization node's
attribute is ``normalization``), and ``repair`` sets that attribute instead of grafting the re-export.
No catalogue entry per op: the re-export says what the attribute should be.
"""
from __future__ import annotations

from typing import Any, Iterator, Optional

from drifttui.core.explain.causes.locate.fx_localise import fx_of
from drifttui.core.explain.causes.propose.reexport.story import lowering_class
from drifttui.core.onnx.edit.patches import Patch

MAX = 4                     # attribute patches tried per verified re-export
_FREE = {"domain"}          # never compared


def _opset(model: Any) -> int:
    return next((i.version for i in model.opset_import if i.domain in ("", "ai.onnx")), 13)


def _attributes(node: Any, opset: int) -> dict[str, Any]:
    """The node's attributes, the schema's defaults for the ones it leaves out (none for a custom domain)."""
    from onnx import defs, helper

    out: dict[str, Any] = {}
    if node.domain in ("", "ai.onnx"):
        try:
            schema = defs.get_schema(node.op_type, opset)
        except Exception:   # noqa: BLE001 - an op the installed onnx does not know at that opset
            schema = None
        for name, a in (schema.attributes.items() if schema is not None else ()):
            if a.default_value is not None and a.default_value.type:
                out[name] = helper.get_attribute_value(a.default_value)
    out.update({a.name: helper.get_attribute_value(a) for a in node.attribute})
    return {k: _plain(v) for k, v in out.items() if _plain(v) is not None}


def _plain(v: Any) -> Any:
    """A number, a string or a list of them (a JSON-able patch value); None for a tensor or a graph."""
    if isinstance(v, bytes):
        return v.decode(errors="replace")
    if isinstance(v, (int, float, str)):
        return v
    if isinstance(v, (list, tuple)) and all(isinstance(x, (int, float)) for x in v):
        return list(v)
    return None


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        try:
            return abs(float(a) - float(b)) <= 1e-6 * max(1.0, abs(float(a)), abs(float(b)))
        except (TypeError, ValueError):
            return False
    return a == b


def _shown(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def witness_attribute_patches(case: Any, node_name: Optional[str], witness: Any, exporter: str) -> Iterator[Patch]:
    """``set_attribute`` patches for the attributes of the node a verified re-export names as wrong that
    the re-export's nodes of the same op hold otherwise (the re-export's value; at most MAX)."""
    if witness is None or node_name is None:
        return
    node = next((n for n in case.model.graph.node if n.name == node_name), None)
    if node is None:
        return
    mine, held = _attributes(node, _opset(case.model)), {a.name for a in node.attribute}
    seen: set[tuple[str, str]] = set()
    for other in (n for n in witness.graph.node if n.op_type == node.op_type and n.domain == node.domain):
        for name, want in _attributes(other, _opset(witness)).items():
            got = mine.get(name)
            if name in _FREE or name in held or (got is not None and _same(got, want)) or (name, repr(want)) in seen:
                continue        # only what the export left out (the default) and the re-export sets otherwise
            seen.add((name, repr(want)))
            if len(seen) > MAX:
                return
            yield _patch(case, node, name, got, want, exporter, len(other.output))


def _patch(case: Any, node: Any, name: str, got: Any, want: Any, exporter: str, outputs: int) -> Patch:
    held = f"{name}={_shown(got)}" if got is not None else f"no {name}"
    module = case.module or "(root)"
    fx = fx_of(node)        # a dynamo file records the torch call each node lowers
    call = f"torch's {fx[1]} (called by {module})" if fx is not None else f"{module}'s torch call"
    more = {"outputs": outputs} if outputs > len(node.output) else {}   # the counterpart's outputs, unread
    return Patch({"op": "set_attribute", "node": node.name, "name": name, "value": want, **more},
                 lowering_class("", [node.op_type]),
                 f"{node.op_type} {node.name} has {held} where the {exporter} re-export of {module} (which "
                 f"computes what torch computes) sets {name}={_shown(want)} on its {node.op_type}: the export "
                 f"lowered {call} with that attribute otherwise than the call implies",
                 f"export with --exporter {exporter} (its lowering sets {name}={_shown(want)}) and report the "
                 "lowering to torch.onnx with `drifttui repro`; `drifttui repair` sets the attribute in the file",
                 "export", module=case.module, nodes=[node.name])


__all__ = ["witness_attribute_patches"]
