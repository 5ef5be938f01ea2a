"""Functional constants: a number of the forward (``x * 0.25``, an attention scale ``1/sqrt(d)``, an
offset) that the file holds with another value.

No module attribute holds such a number, so the torch side's value comes from the torch
computation itself:

* a dynamo file records each node's FX call (``pkg.torch.onnx.fx_node``, e.g.
  ``aten.mul.Tensor(%x, 0.25)``): a scalar input of an arithmetic node that matches none of the
  call's numbers is replaced by each of them (``fx_constant_patches``);
* any file, once a re-export of the origin verified (it computes what torch computes): a scalar
  input of the node the re-export names as wrong that the re-export never holds is replaced by
  each scalar the re-export holds and the file does not (``witness_constant_patches``).

A patch replaces only that node's input (``{"op": "replace_constant", "name": C, "node": N,
"input": K, "value": V}``: a constant shared with other nodes keeps its value for them) and is
verified like any other; its class is ``custom-module`` (a value of the model's code that the
file holds otherwise, like a plain tensor attribute).
"""
from __future__ import annotations

from typing import Any, Iterator, Optional

import numpy as np

from drifttui.core.base.dtypes import SCALAR_FLOAT_ELEMS
from drifttui.core.explain.causes.locate.fx_localise import fx_of, fx_scalars
from drifttui.core.onnx.edit.patches import Patch
from drifttui.core.onnx.weights import read_tensor

ARITH = {"Mul": "aten.mul", "Div": "aten.div", "Add": "aten.add", "Sub": "aten.sub", "Pow": "aten.pow"}
MAX = 12                 # constant patches per origin


def read_constants(model: Any) -> list[tuple[str, Any]]:
    """(value name, TensorProto) of every initializer and Constant (``value``) that a node of ``model``
    reads (an edited file may keep the old, now unread, Constant)."""
    read = {v for n in model.graph.node for v in n.input}
    tensors = [(t.name, t) for t in model.graph.initializer]
    tensors += [(n.output[0], a.t) for n in model.graph.node if n.op_type == "Constant"
                for a in n.attribute if a.name == "value"]
    return [(name, t) for name, t in tensors if name in read]


def constant_arrays(model: Any, names: Optional[set[str]] = None) -> dict[str, np.ndarray]:
    """Value name -> the array of every initializer and Constant of ``model`` (a case: its weights are in
    the proto), or of those ``names`` only."""
    out = {t.name: read_tensor(t) for t in model.graph.initializer if names is None or t.name in names}
    for n in model.graph.node:
        if (n.op_type == "Constant" and n.attribute and n.attribute[0].HasField("t")
                and (names is None or n.output[0] in names)):
            out[n.output[0]] = read_tensor(n.attribute[0].t)
    return out


def scalars(model: Any) -> dict[str, float]:
    """Value name -> the float of every one-element float initializer or Constant that a node of
    ``model`` reads."""
    return {name: float(read_tensor(t).ravel()[0]) for name, t in read_constants(model)
            if t.data_type in SCALAR_FLOAT_ELEMS and int(np.prod(t.dims)) == 1}


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))


def _patch(case: Any, node: Any, pos: int, name: str, got: float, want: float, source: str, fix: str) -> Patch:
    return Patch({"op": "replace_constant", "name": name, "node": node.name, "input": pos, "value": want},
                 "custom-module",
                 f"{node.op_type} {node.name} reads the constant {got:.6g} ({name}) where {source} has "
                 f"{want:.6g}: a number of the forward held otherwise by the file",
                 fix, "export", module=case.module, nodes=[node.name])


def fx_constant_patches(case: Any) -> Iterator[Patch]:
    """Dynamo files: each arithmetic node's scalar constant against the numbers of its FX call."""
    consts = scalars(case.model)
    seen = 0
    for node in case.model.graph.node:
        fx = fx_of(node)
        if node.op_type not in ARITH or fx is None or not fx[1].startswith(ARITH[node.op_type]):
            continue
        numbers = [s for s in fx_scalars(node) if s is not None]
        for pos, name in enumerate(node.input):
            got = consts.get(name)
            if got is None or not numbers or any(_close(got, s) for s in numbers):
                continue
            for want in numbers[:2]:
                if seen >= MAX:
                    return
                seen += 1
                yield _patch(case, node, pos, name, got, want, f"torch's call {fx[1]} (FX node {fx[0]})",
                             "re-export from the model you compare: the file holds another number than the "
                             "forward computes with (an edited or stale file, or a number changed since the export)")


def witness_constant_patches(case: Any, node_name: Optional[str], witness: Any, exporter: str) -> Iterator[Patch]:
    """Any file: the scalar inputs of the node a verified re-export names as wrong (all arithmetic
    nodes when it names none) against the re-export's scalars: first those the file does not hold,
    then those the re-export's nodes of the same op read (the right number may still be read by
    another node of the file: ``x + 0.3`` twice, one of them edited)."""
    mine, theirs = scalars(case.model), scalars(witness)
    fresh = [v for v in dict.fromkeys(theirs.values()) if not any(_close(v, m) for m in mine.values())]
    nodes = [n for n in case.model.graph.node if n.op_type in ARITH and (node_name is None or n.name == node_name)]
    seen = 0
    for node in nodes:
        same_op = [theirs[v] for n in witness.graph.node if n.op_type == node.op_type for v in n.input if v in theirs]
        for pos, name in enumerate(node.input):
            got = mine.get(name)
            if got is None or any(_close(got, v) for v in theirs.values()):
                continue
            wants = [v for v in dict.fromkeys(fresh + same_op) if not _close(v, got)]
            for want in wants[:4]:
                if seen >= MAX:
                    return
                seen += 1
                yield _patch(case, node, pos, name, got, want, f"the {exporter} re-export of "
                             f"{case.module or '(root)'} (which computes what torch computes)",
                             f"re-export from the model you compare (the {exporter} export holds {want:.6g}); "
                             "a number of the forward was changed in the file or since its export")
