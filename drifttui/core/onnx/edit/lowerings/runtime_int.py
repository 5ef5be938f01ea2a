"""Graph edit: integers a trace took from the example's sizes, computed from the runtime shape
(``causes/propose/reexport/frozen_ints.py``).

A TorchScript trace turns an int argument that torch computes from a size (``torch.roll(x, x.size(1) // 2, 1)``'s
shift, read as an int by its symbolic; an ``int(x.size(1) * 0.8)``) into constants of the example's size: a
``Slice``'s starts and ends, a ``Pad``'s amounts, a ``Range``'s limit.  A file declared with a dynamic dim then
computes every other size with the example's numbers.  ``runtime_int`` replaces that node's constant input by the
same tensor where each frozen element ``k`` is ``s * ((a * d + r) // q) + b`` of the runtime size ``d`` of
``input``'s dim ``axis`` (the form the traces at several sizes fit)::

    d = Shape(input, start=axis, end=axis + 1)                       # int64 [1]
    value = base + onehot_k * (s * ((a * d + r) / q) + b - base[k])      # per element, then Reshape, Cast

Spec: ``node``, ``name`` (the constant it reads), ``elements`` ([{k, input, axis, s, a, r, q, b}]; ``a`` 1 when left
out).  Only that node's input changes (a constant shared with other nodes keeps its value there).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.onnx.edit.lowerings.runtime_size import _constant
from drifttui.core.onnx.edit.rewriting import find_node, splice_sorted


def apply_runtime_int(model: Any, spec: dict[str, Any]) -> None:
    from onnx import TensorProto, helper, numpy_helper

    node = find_node(model, spec["node"])
    if spec["name"] not in node.input:
        raise ValueError(f"{node.name} does not read {spec['name']!r}")
    arr = _constant(model, spec["name"])
    if arr.dtype.kind not in "iu" or not spec.get("elements"):
        raise ValueError(f"{spec['name']} holds no integer frozen from a size")
    base = arr.astype(np.int64).ravel()
    p = f"{node.name}/drifttui_int"
    mk = helper.make_node
    new, inits, value = [], [numpy_helper.from_array(base, f"{p}/base"),
                             numpy_helper.from_array(np.asarray(arr.shape, np.int64), f"{p}/to")], f"{p}/base"
    for j, e in enumerate(spec["elements"]):
        k, q = int(e["k"]), int(e["q"])
        if not 0 <= k < base.size or q < 1:
            raise ValueError(f"element {k} / divisor {q} does not fit {spec['name']}")
        onehot = np.zeros(base.size, np.int64)
        onehot[k] = 1
        e_ = f"{p}{j}"
        inits += [numpy_helper.from_array(onehot, f"{e_}/onehot"),
                  numpy_helper.from_array(np.asarray(int(e.get("a", 1)), np.int64), f"{e_}/a"),
                  numpy_helper.from_array(np.asarray(int(e["r"]), np.int64), f"{e_}/r"),
                  numpy_helper.from_array(np.asarray(q, np.int64), f"{e_}/q"),
                  numpy_helper.from_array(np.asarray(int(e["s"]), np.int64), f"{e_}/s"),
                  numpy_helper.from_array(np.asarray(int(e["b"]) - int(base[k]), np.int64), f"{e_}/b")]
        new += [mk("Shape", [e["input"]], [f"{e_}/d"], name=f"{e_}/d", start=int(e["axis"]), end=int(e["axis"]) + 1),
                mk("Mul", [f"{e_}/d", f"{e_}/a"], [f"{e_}/ad"], name=f"{e_}/ad"),
                mk("Add", [f"{e_}/ad", f"{e_}/r"], [f"{e_}/dr"], name=f"{e_}/dr"),
                mk("Div", [f"{e_}/dr", f"{e_}/q"], [f"{e_}/fl"], name=f"{e_}/fl"),     # a d + r >= 0: Div floors
                mk("Mul", [f"{e_}/fl", f"{e_}/s"], [f"{e_}/sf"], name=f"{e_}/sf"),
                mk("Add", [f"{e_}/sf", f"{e_}/b"], [f"{e_}/delta"], name=f"{e_}/delta"),
                mk("Mul", [f"{e_}/onehot", f"{e_}/delta"], [f"{e_}/at"], name=f"{e_}/at"),
                mk("Add", [value, f"{e_}/at"], [f"{e_}/value"], name=f"{e_}/value")]
        value = f"{e_}/value"
    new += [mk("Reshape", [value, f"{p}/to"], [f"{p}/shaped"], name=f"{p}/shaped"),
            mk("Cast", [f"{p}/shaped"], [f"{p}/typed"], name=f"{p}/typed",
               to=helper.np_dtype_to_tensor_dtype(arr.dtype) if arr.dtype != np.int64 else TensorProto.INT64)]
    for k, v in enumerate(node.input):
        if v == spec["name"]:
            node.input[k] = f"{p}/typed"
    splice_sorted(model, new, inits, anchor=node)


APPLY = {"runtime_int": apply_runtime_int}
