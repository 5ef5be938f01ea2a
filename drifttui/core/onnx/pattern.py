"""The same computation in two graphs, matched node by node: which constant of one sits where a constant
of the other does.

A deployment tool keeps the exporter's pattern of compute nodes and changes the precision around them: it
adds QuantizeLinear / DequantizeLinear pairs and Casts, replaces a float op by its QOperator form
(``QLinearAdd`` for ``Add``, its quantization parameters beside its data inputs), and stores constants
rounded (float16, or int8 behind a DequantizeLinear).  Walking back from an output through those precision
nodes on both sides, two subgraphs match when their compute nodes have the same ops, wired alike (a
commutative op's two inputs in either order), with the same number of compute nodes on each side.  Each
constant input and each float / string attribute of one then has its counterpart in the other, at the same
position of the pattern.  A constant read through precision nodes carries what they do to it: a
DequantizeLinear of stored integers rounds it to half its scale, a float16 / bfloat16 tensor to its format;
a QuantizeLinear or a Cast applied to a float constant in the graph is the file's own rounding at run time
(the constant before it is what the file computes with).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from drifttui.core.onnx.graph import tensor_array

# nodes that change a value's precision or name, not what it stands for: walked through
PRECISION_OPS = ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "Cast", "Identity")
# QOperator ops -> (their float op, the positions of their data inputs)
QOPERATOR_FORMS = {"QLinearAdd": ("Add", (0, 3)), "QLinearMul": ("Mul", (0, 3)), "QLinearSigmoid": ("Sigmoid", (0,)),
                   "QLinearLeakyRelu": ("LeakyRelu", (0,)), "QLinearSoftmax": ("Softmax", (0,)),
                   "QLinearGlobalAveragePool": ("GlobalAveragePool", (0,)),
                   "QLinearAveragePool": ("AveragePool", (0,))}
COMMUTATIVE = ("Add", "Mul", "Max", "Min", "Sum", "Mean")
MAX_NODES = 40          # an activation's pattern: larger subgraphs are not matched
_FLOAT16, _BFLOAT16, _INTS = 10, 16, (2, 3, 4, 5, 6, 7, 12, 13)


@dataclass(frozen=True)
class Const:
    """A constant as the graph computes with it: its value (float64), its storage and the rounding the
    file did to it (absolute, per element: half a quantization step; 0 for a float tensor)."""

    value: np.ndarray
    fmt: str            # "float32" | "float16" | "bfloat16" | "float64" | "int8" (integers dequantized) |
    #                     "int" (an integer tensor read as such: a shape, an axis)
    step: float = 0.0
    name: str = ""      # the float tensor holding it (an initializer or a Constant): "" behind a DequantizeLinear


@dataclass(frozen=True)
class Pair:
    """One position of the matched pattern: ``node`` (an index of the first graph) reads ``found`` where the
    second graph's node reads ``want`` (both Const, or both attribute values)."""

    node: int
    what: str           # "input 1" | an attribute's name
    found: Any
    want: Any


def compute_op(node: Any) -> Optional[tuple[str, tuple[int, ...]]]:
    """(the float op a node computes, its data inputs' positions); None for a precision node or a Constant."""
    if node.op_type in PRECISION_OPS or node.op_type == "Constant":
        return None
    if node.op_type in QOPERATOR_FORMS:
        return QOPERATOR_FORMS[node.op_type]
    return node.op_type, tuple(range(len(node.inputs)))


def _source(ix: Any, value: str, nodes: set[int]) -> tuple[str, Any]:
    """What ``value`` is, through precision nodes: ("node", index) of ``nodes``; ("const", Const); ("input",
    None): a value from outside ``nodes``."""
    for _ in range(8):
        t = ix.constant_tensor(value) if value else None
        if t is not None:
            return "const", _const(ix, value, t)
        p = ix.producer.get(value)
        if p is None:
            return "input", None
        node = ix.nodes[p]
        if node.op_type not in PRECISION_OPS or not node.inputs:
            return ("node", p) if p in nodes else ("input", None)
        if node.op_type == "DequantizeLinear":
            stored = ix.constant_tensor(node.inputs[0])
            if stored is not None and stored.data_type in _INTS:
                return "const", _dequantized(ix, node)
        value = node.inputs[0]
    return "input", None


def _array(ix: Any, name: str) -> Optional[np.ndarray]:
    try:
        a = tensor_array(ix, name)
    except Exception:        # noqa: BLE001 - unreadable data: not a constant this match can compare
        return None
    return None if a is None else np.asarray(a)


def _const(ix: Any, name: str, t: Any) -> Const:
    a = _array(ix, name)
    fmt = {1: "float32", _FLOAT16: "float16", _BFLOAT16: "bfloat16", 11: "float64"}.get(t.data_type, "int")
    if a is None or a.dtype.kind not in "fiub":
        return Const(np.array([np.nan]), "none")
    return Const(a.astype(np.float64), fmt, 0.0, name)


def _dequantized(ix: Any, node: Any) -> Const:
    q, s = _array(ix, node.inputs[0]), _array(ix, node.inputs[1])
    z = _array(ix, node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    if q is None or s is None or s.size != 1 or (z is not None and z.size != 1):
        return Const(np.array([np.nan]), "none")       # per-axis scales: not an activation's scalar
    scale = float(s.reshape(-1)[0])
    zero = float(z.reshape(-1)[0]) if z is not None else 0.0
    return Const((q.astype(np.float64) - zero) * scale, "int8", abs(scale) / 2)


def _attributes(node: Any) -> dict[str, Any]:
    """A node's float and string attributes (the constants an activation declares: alpha, beta, approximate)."""
    out = {}
    for a in node.proto.attribute:
        if a.type == 1:           # FLOAT
            out[a.name] = float(a.f)
        elif a.type == 3:         # STRING
            out[a.name] = a.s.decode("utf-8", "replace")
    return out


class _Matcher:
    def __init__(self, a: Any, a_nodes: set[int], b: Any, b_nodes: set[int]) -> None:
        self.a, self.b, self.a_nodes, self.b_nodes = a, b, a_nodes, b_nodes
        self.pairs: list[Pair] = []
        self.mapped: dict[int, int] = {}

    def values(self, va: str, vb: str, na: Optional[int] = None, pos: int = 0) -> bool:
        """Do ``va`` and ``vb`` stand for the same value of the pattern (a constant read by node ``na`` at
        input ``pos`` is paired)?"""
        (ka, sa), (kb, sb) = _source(self.a, va, self.a_nodes), _source(self.b, vb, self.b_nodes)
        if ka != kb:
            return False
        if ka == "const":
            if sa.fmt == "none" or sb.fmt == "none":
                return False
            if na is not None:
                self.pairs.append(Pair(na, f"input {pos}", sa, sb))
            return True
        return ka == "input" or self.nodes(sa, sb)

    def nodes(self, na: int, nb: int) -> bool:
        if na in self.mapped:
            return self.mapped[na] == nb
        if nb in self.mapped.values():
            return False
        oa, ob = compute_op(self.a.nodes[na]), compute_op(self.b.nodes[nb])
        if oa is None or ob is None or oa[0] != ob[0] or len(oa[1]) != len(ob[1]):
            return False
        self.mapped[na] = nb
        ins_a = [self.a.nodes[na].inputs[k] for k in oa[1]]
        ins_b = [self.b.nodes[nb].inputs[k] for k in ob[1]]
        orders = [list(range(len(ins_b)))]
        if oa[0] in COMMUTATIVE and len(ins_b) == 2:
            orders.append([1, 0])
        for order in orders:
            saved = (dict(self.mapped), len(self.pairs))
            if all(self.values(ins_a[k], ins_b[j], na, oa[1][k]) for k, j in enumerate(order)):
                self._attrs(na, nb)
                return True
            self.mapped, self.pairs = saved[0], self.pairs[:saved[1]]
        del self.mapped[na]
        return False

    def _attrs(self, na: int, nb: int) -> None:
        mine, theirs = _attributes(self.a.nodes[na]), _attributes(self.b.nodes[nb])
        for name in sorted(set(mine) & set(theirs)):
            self.pairs.append(Pair(na, name, mine[name], theirs[name]))


def compute_nodes(ix: Any, nodes: Any) -> set[int]:
    """The compute nodes among ``nodes`` (precision nodes and Constants left out)."""
    return {k for k in nodes if compute_op(ix.nodes[k]) is not None}


def match(a: Any, a_nodes: Any, a_out: str, b: Any, b_nodes: Any, b_out: str) -> Optional[list[Pair]]:
    """Every constant position of the subgraph of ``a`` (GraphIndex) computing ``a_out`` from ``a_nodes``,
    with its counterpart in ``b``'s subgraph computing ``b_out`` from ``b_nodes``; None when the two are not
    the same pattern (another op, another wiring, a node left over on either side)."""
    sa, sb = compute_nodes(a, a_nodes), compute_nodes(b, b_nodes)
    if not sa or len(sa) != len(sb) or len(sa) > MAX_NODES:
        return None
    m = _Matcher(a, sa, b, sb)
    if not m.values(a_out, b_out) or len(m.mapped) != len(sa):
        return None
    return m.pairs
