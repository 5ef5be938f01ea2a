"""The deviating kernel counterfactual: one node ONNX Runtime computes otherwise than its spec, run in float64.

When the ONNX reference implementation computes what torch computes on the origin's nodes and ONNX Runtime does not
(kind ``runtime``), the graph is right and a kernel is wrong.  ``localise`` runs every node alone in ONNX Runtime on
the reference evaluator's values of its inputs (``locate/localise_nodes.own_errors``): a node that computes one short
formula per element (no sum over an axis) is within a few units in the last place of the reference there, so one
that is ``ULP_BAR`` or more off, or that returns 0 where the reference holds a nonzero subnormal value (a flush to
zero), is a kernel that computes otherwise, however small its error is next to the tolerance: what reads it
amplifies it (a phase, a truncating ``Cast``, a ``Log``).  Measured: ONNX Runtime's ``Range`` adds ``delta`` to a
float32 running value (the spec: ``start + i * delta``), 100 .. 300 units off over a few thousand steps; its
``Softmax`` flushes probabilities below float32's smallest normal number to 0, which torch keeps (a logit gap of
87.3 .. 103.3), and ``log(p)`` turns them into -inf.  The same node run in float64 and cast back
(``onnx/edit/numerics/origin64.py`` on a region of one node: ONNX Runtime's double kernel, whose running value and
subnormal range are far wider) computes what the reference and torch compute: the patch verifies exactly when that
kernel's deviation is the drift.  No catalogue: any op with a double kernel, except those the runtime workarounds
(``onnx/edit/lowerings/ort_workarounds.py``) already rewrite into an equivalent form (``Sigmoid``, ``Tanh``, ...).

Class ``op-compat`` (ONNX Runtime's kernel does not compute what the ONNX op means), kind ``runtime``; ``repair``
applies it.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
from onnx import TensorProto

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import picked_values
from drifttui.core.onnx.edit.lowerings.ort_workarounds import forms_for
from drifttui.core.onnx.edit.numerics.accumulate64 import SUMS
from drifttui.core.explain.causes.propose.numerics.double_kernels import expanding
from drifttui.core.onnx.edit.patches import Patch

ULP_BAR = 64.0          # a kernel of one short formula per element is within a few units (MLAS's Tanh: ~10)
MOST = 2                # nodes tried, the furthest off first
# ops whose outputs sum many inputs: their order of summation is theirs, and a cancellation leaves few digits, so
# units in the last place do not tell a wrong kernel from a right one
SUMMING = {*SUMS, "MatMul", "Gemm", "Conv", "ConvTranspose", "Einsum", "MatMulInteger", "QLinearMatMul",
           "QLinearConv", "AveragePool", "LpPool", "GlobalLpPool", "LogSoftmax", "LayerNormalization",
           "GroupNormalization", "InstanceNormalization", "BatchNormalization", "RMSNormalization",
           "MeanVarianceNormalization", "LpNormalization", "Attention", "MultiHeadAttention", "GRU", "LSTM", "RNN",
           "Softmax"}


def _off(e: dict[str, Any]) -> bool:
    """A node's own error is a kernel's that computes otherwise: a flush to zero, or far off in units of the last
    place for a node that sums nothing."""
    return e.get("flushed", 0) > 0 or (e["op_type"] not in SUMMING and e.get("own_ulps", 0.0) >= ULP_BAR)


def deviating_kernels(loc: Any) -> list[dict[str, Any]]:
    """The origin's nodes whose own error (fed the reference evaluator's inputs) is a wrong kernel's, flushes first,
    then the furthest off; [] unless the reference computes what torch computes and ONNX Runtime does not, or
    ONNX Runtime's error dwarfs the graph's own (``Localisation.dwarfed``: two mechanisms stacked)."""
    if getattr(loc, "kind", None) != "runtime" and not getattr(loc, "dwarfed", False):
        return []
    off = [e for e in getattr(loc, "own_errors", None) or [] if _off(e)]
    return sorted(off, key=lambda e: (-e.get("flushed", 0), -e.get("own_ulps", 0.0)))[:MOST]


def said(e: dict[str, Any]) -> str:
    if e.get("flushed", 0):
        return (f"returns {e['flushed']} value(s) as 0 where the reference holds a nonzero subnormal number (a flush "
                f"to zero torch's kernel does not make)")
    grows = (", and its error grows along the output, as a value accumulated step by step (each element from the "
             "one before) does where the op defines each element on its own") if e.get("grows") else ""
    return (f"is up to {e['own_ulps']:.0f} units in the last place off the reference, where a kernel of one short "
            f"formula per element is within a few{grows}")


def _patch(case: Case, node: Any, e: dict[str, Any], known: dict[str, Any], dwarfed: bool = False) -> Optional[Patch]:
    stored = {t.name for t in case.model.graph.initializer if t.data_type == TensorProto.FLOAT}

    def single(v: str) -> bool:
        return v in stored or (v in known and np.asarray(known[v]).dtype == np.float32)

    inputs = sorted({v for v in node.input if v and single(v)})
    outputs = sorted(v for v in node.output if v and single(v))
    if not outputs:
        return None
    op = node.op_type
    near = " (far closer than ONNX Runtime: this kernel adds most of the drift)" if dwarfed else ""
    why = (f"ONNX Runtime's {op} kernel computes otherwise than the ONNX op at {node.name}: fed the ONNX reference "
           f"implementation's values of its inputs, it {said(e)}; the reference computes what torch computes{near}, and "
           f"what reads the {op} amplifies the difference into the drift: the graph is right, the bug is in ONNX "
           f"Runtime's kernel; the same {op} computed in float64 and cast back computes what torch computes")
    fix = (f"deploy the file with {node.name} computed in float64 (`drifttui repair` applies it: its inputs cast to "
           f"double, its output cast back to float32), and report the {op} kernel to onnxruntime with `drifttui repro`")
    spec = {"op": "rewrite", "rewrite": "kernel_float64", "node": node.name, "nodes": [node.name],
            "inputs": inputs, "outputs": outputs, **expanding(case.model, [node])}
    return Patch(spec, "op-compat", why, fix, "runtime", module=case.module, nodes=[node.name])


def kernel64_patches(case: Case, loc: Any) -> list[Patch]:
    """One patch per deviating kernel of the origin (at most ``MOST``): that node computed in float64."""
    found = deviating_kernels(loc)
    names = {e["node"] for e in found}
    if not names:
        return []
    # a kernel the runtime workarounds rewrite (Sigmoid, Tanh, Softplus, ...) is told by their equivalent forms
    nodes, known = picked_values(case, lambda n: n.name in names and next(forms_for(n), None) is None)
    by_name = {n.name: n for n in nodes}
    dwarfed = getattr(loc, "kind", None) != "runtime"
    out = [_patch(case, by_name[e["node"]], e, known, dwarfed) for e in found if e["node"] in by_name]
    return [p for p in out if p is not None]
