"""A float64 tensor of the module that the file holds at float32 and computes with in float32 (issue 30 point 8; a
generic patch, no catalogue entry).

torch computes an op of a float32 tensor and a float64 buffer (statistics from numpy, ``torch.from_numpy`` of a
float64 array) in float64, its common dtype; an in-place op (``x.sub_(buf)``, ``x -= buf``) keeps ``x``'s float32
type and rounds the float64 result once.  The TorchScript exporter's ``ImplicitCastForBinaryInplaceOps`` (run by
``RemoveInplaceOpsForONNX`` before the in-place ops become out-of-place ones) casts the other operand of an in-place
``add_`` / ``sub_`` / ``mul_`` / ``div_`` to self's type (``type_as``) so the result keeps it: the float64 operand is
rounded to float32 before the op (folded: the buffer becomes a float32 initializer), and the file computes
``x - fl32(buf)`` in float32.  Where the result cancels
(a reading minus a nearby reference, a level minus its mean) the operand's float32 rounding is the whole error.

For each float32 constant an elementwise node of the origin reads whose values are exactly a float64 tensor of the
origin module (parameter, buffer or plain tensor attribute) rounded to float32, and which float32 does not hold
exactly, one patch computes that node in float64 with the tensor's own values and casts its result back
(``onnx/edit/numerics/operand_wide.py``); where several nodes are so held, each alone comes first (a node that reads
the tensor's float32 copy, ``buf.float()``, computes torch's float32 there: the file folds both to one constant),
then one ``sequence`` of them all.
Nothing is assumed about the op or the exporter: the patch verifies only where the file's rounding is the drift.
Class ``dtype`` (the precision the operand is held in), kind ``export``; ``repair`` applies it.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.propose.edits.constants import read_constants
from drifttui.core.onnx.edit.numerics.operand_wide import ELEMENTWISE
from drifttui.core.onnx.edit.patches import Patch
from drifttui.core.onnx.weights import read_tensor

FLOAT, DOUBLE = 1, 11
MAX = 6                       # single patches per origin
SIZE = 1 << 16                # elements: a larger tensor's values would not travel in the patch's spec
UPSTREAM = "pytorch/pytorch#64233 appended a type_as to fill_ the same way"


def wide_tensors(module: Any, prefix: str) -> list[tuple[str, np.ndarray]]:
    """(label, float64 values) of every float64 parameter, buffer and plain tensor attribute of ``module``."""
    import torch

    if module is None:
        return []
    q = f"{prefix}." if prefix else ""
    out = [(f"parameter {q}{n}", p) for n, p in module.named_parameters()]
    out += [(f"buffer {q}{n}", b) for n, b in module.named_buffers()]
    out += [(f"tensor attribute {q}{mn + '.' if mn else ''}{an}", v) for mn, m in module.named_modules()
            for an, v in vars(m).items() if isinstance(v, torch.Tensor) and not an.startswith("_")]
    return [(label, t.detach().cpu().numpy()) for label, t in out if t.dtype == torch.float64]


def _source(arr: np.ndarray, tensors: list[tuple[str, np.ndarray]]) -> Optional[tuple[str, np.ndarray]]:
    """The float64 tensor whose float32 rounding is ``arr`` (same size, row-major) and which float32 does not hold."""
    for label, t in tensors:
        if t.size != arr.size or t.size > SIZE or not np.all(np.isfinite(t)):
            continue
        flat = t.reshape(-1)
        rounded = flat.astype(np.float32)
        if np.array_equal(rounded, arr.reshape(-1)) and not np.array_equal(rounded.astype(np.float64), flat):
            return label, flat
    return None


def _constants(model: Any) -> dict[str, Any]:
    """Value name -> TensorProto of every float32 constant a node reads, and of every ``Identity`` of one (TorchScript
    writes one initializer for equal folded constants and an Identity for each further reader)."""
    consts = {name: t for name, t in read_constants(model) if t.data_type == FLOAT}
    for n in model.graph.node:
        if n.op_type == "Identity" and n.input and n.input[0] in consts and n.output:
            consts[n.output[0]] = consts[n.input[0]]
    return consts


def _story(node: Any, name: str, label: str, op: Optional[str], exporter: str) -> tuple[str, str]:
    inplace = f"torch's {op}" if op and op.endswith("_") and not op.startswith("_") else "`x -= buf`, `x.sub_(buf)`"
    by = (" (the TorchScript exporter's ImplicitCastForBinaryInplaceOps, run by RemoveInplaceOpsForONNX, casts the "
          "other operand of an in-place add_ / sub_ / mul_ / div_ to self's type with `type_as` before the op: the "
          f"float64 operand is rounded to float32 first; {UPSTREAM})") if exporter == "torchscript" else ""
    why = (f"{node.op_type} {node.name} reads the float64 {label} as the float32 constant {name}: torch computes an op "
           f"of a float32 tensor and a float64 one in float64 (the common dtype), and an in-place op ({inplace}) keeps "
           f"its self's float32 type, rounding that result once; the file holds the {label} rounded to float32 and "
           f"computes in float32{by}; with {node.op_type} computed in float64 on the tensor's own values the file "
           "computes what torch computes")
    fix = (f"cast explicitly where you mean float32 (`x - {label.split(' ')[-1]}.float()`), or keep the op out of "
           "place and cast its result (`(x - buf).float()`: both exporters then compute it in float64), or export "
           "with dynamo=True; `drifttui repair` computes the node in float64 with the tensor's values")
    return why, fix


def wide_operand_patches(case: Case, module: Any, op: Optional[str] = None, exporter: str = "") -> list[Patch]:
    """One patch per (node, operand) of the origin reading a float64 tensor held at float32, then a ``sequence`` of
    them all (when more than one); none when the origin module holds no float64 tensor.  ``op``: the torch op the
    localisation named, ``exporter``: the file's (``GraphIndex.flavour``), for the story."""
    tensors = wide_tensors(module, case.module)
    if not tensors:
        return []
    consts = _constants(case.model)
    singles: list[Patch] = []
    for node in case.model.graph.node:
        if node.op_type not in ELEMENTWISE or not node.name:
            continue
        for pos, name in enumerate(node.input):
            found = _source(read_tensor(consts[name]), tensors) if name in consts else None   # a case holds its weights
            if found is None:
                continue
            label, values = found
            spec = {"op": "rewrite", "rewrite": "operand_wide", "node": node.name, "input": pos, "name": name,
                    "values": values.tolist(), "shape": list(consts[name].dims), "wide": DOUBLE, "narrow": FLOAT,
                    "source": label}
            why, fix = _story(node, name, label, op, exporter)
            singles.append(Patch(spec, "dtype", why, fix, "export", module=case.module, nodes=[node.name]))
    if len(singles) < 2:
        return singles[:MAX]
    # each node alone first: a node reading the tensor's float32 copy (``buf.float()``) is torch's float32 there
    names = ", ".join(f"{p.spec['node']} ({p.spec['source']})" for p in singles)
    why = (f"{len(singles)} nodes read float64 tensors held at float32: {names}; " + singles[0].why.split(": ", 1)[1])
    both = Patch({"op": "sequence", "patches": [p.spec for p in singles]}, "dtype", why, singles[0].fix, "export",
                 module=case.module, nodes=[p.spec["node"] for p in singles])
    return singles[:MAX] + [both]
