"""Integer ``Div`` nodes whose truncation towards zero cannot differ from torch's floor division.

ONNX's ``Div`` of integers truncates; torch's ``//`` / ``div(rounding_mode="floor")`` floors.  The two differ only
on a negative quotient that is not whole, so an integer Div is harmless when:

* its operands are never negative: sizes read from a ``Shape`` / ``Size`` (every ``chunk`` / ``split`` in a
  TorchScript file divides one), non-negative constants, and what sums, products, gathers, slices and casts of such
  values keep non-negative (an ``Abs`` or a ``Relu`` is non-negative whatever it reads, and so are the indices a
  ``TopK`` / ``MaxPool`` / ``Unique`` returns: ``unravel_index`` of top-k indices), and a power of a
  non-negative base or an even power (TorchScript lowers ``a >> k`` as ``a / Cast(Pow(2, k))``);
* the file corrects its quotient itself, as TorchScript's integer floor division does: ``Where(test, q - 1, q)``
  or ``q - fix``, the test or the fix computed from a sign test (``Less`` ...) or a ``Mod`` of the same dividend:
  ``Where(Xor(a < 0, b < 0) And Mod(a, b) != 0, Div - 1, Div)``.
"""
from __future__ import annotations

from typing import Any, Optional

from drifttui.core.onnx.graph import GraphIndex, tensor_array

# ops whose output is non-negative when the inputs at these positions are
_THROUGH = {"Gather": (0,), "GatherElements": (0,), "GatherND": (0,), "Slice": (0,), "Unsqueeze": (0,),
            "Squeeze": (0,), "Reshape": (0,), "Identity": (0,), "Expand": (0,), "Flatten": (0,), "Transpose": (0,),
            "Tile": (0,), "Cast": (0,), "Where": (1, 2)}
# ops whose output is non-negative when every input is
_ALL = ("Add", "Mul", "Div", "Min", "Concat", "ReduceSum", "ReduceProd", "ReduceMin", "ReduceMax", "Sum")
_ALWAYS = ("Shape", "Size", "Abs", "Relu", "ArgMax", "ArgMin", "NonZero")
# ops whose outputs at these positions are indices (never negative) whatever the op reads
_INDICES = {"TopK": (1,), "MaxPool": (1,), "Unique": (1, 2, 3)}
_TESTS = ("Mod", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Sign")
_DEPTH = 12


def non_negative(index: GraphIndex, value: str, depth: int = _DEPTH) -> bool:
    """``value`` can never hold a negative number, by how the graph computes it (within ``depth`` producers)."""
    arr = tensor_array(index, value) if index.is_static(value) else None
    if arr is not None:
        return bool(arr.size == 0 or (arr >= 0).all())
    ni = index.producer.get(value)
    if ni is None or depth <= 0:
        return False
    node = index.nodes[ni]
    op = node.op_type if node.domain in ("", "ai.onnx") else ""
    if op in _ALWAYS or any(i < len(node.outputs) and node.outputs[i] == value for i in _INDICES.get(op, ())):
        return True
    if op == "Max":
        return any(non_negative(index, v, depth - 1) for v in node.inputs if v)
    if op == "Pow":
        return non_negative(index, node.inputs[0], depth - 1) or _even(index, node.inputs[1])
    if op in _ALL:
        return all(non_negative(index, v, depth - 1) for v in node.inputs if v)
    picks = _THROUGH.get(op)
    return picks is not None and all(non_negative(index, node.inputs[i], depth - 1)
                                     for i in picks if i < len(node.inputs))


def _even(index: GraphIndex, value: str) -> bool:
    """``value`` is a constant whose every entry is an even whole number (``x ** 2``'s exponent)."""
    arr = tensor_array(index, value) if index.is_static(value) else None
    return arr is not None and arr.size > 0 and bool((arr % 2 == 0).all())


def _tests_sign_of(index: GraphIndex, value: str, dividend: str, depth: int = 6) -> bool:
    """``value`` is computed (within ``depth`` producers) from a sign test or a ``Mod`` of ``dividend``."""
    ni = index.producer.get(value)
    if ni is None or depth <= 0:
        return False
    node = index.nodes[ni]
    if node.op_type in _TESTS and dividend in node.inputs:
        return True
    return any(_tests_sign_of(index, v, dividend, depth - 1) for v in node.inputs if v)


def _shifted(index: GraphIndex, value: str, quotient: str) -> bool:
    """``value`` is the quotient plus or minus something (``q - 1``)."""
    ni = index.producer.get(value)
    return ni is not None and index.nodes[ni].op_type in ("Sub", "Add") and quotient in index.nodes[ni].inputs


def floor_corrected(index: GraphIndex, node: Any) -> bool:
    """The file turns this Div's truncated quotient into a floor itself (TorchScript's ``_floor_divide``):
    ``Where(test, q - 1, q)`` or ``q - fix``, the test or the fix computed from a sign test or a Mod of the
    dividend."""
    dividend, quotient = node.inputs[0], node.outputs[0]
    for ci in index.consumers.get(quotient, []):
        c = index.nodes[ci]
        if (c.op_type == "Where" and quotient in c.inputs[1:] and _tests_sign_of(index, c.inputs[0], dividend)
                and any(_shifted(index, v, quotient) for v in c.inputs[1:] if v != quotient)):
            return True
        if c.op_type == "Sub" and c.inputs[0] == quotient and _tests_sign_of(index, c.inputs[1], dividend):
            return True
    return False


def truncation_is_floor(index: GraphIndex, node: Any) -> Optional[str]:
    """Why this integer Div's truncation equals torch's floor division, or None when it may not."""
    if all(non_negative(index, v) for v in node.inputs[:2]):
        return "its operands are never negative"
    if floor_corrected(index, node):
        return "the file corrects its quotient to the floor"
    return None
