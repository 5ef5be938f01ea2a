"""The wrapping integer product: an int32/int64 ``ReduceProd`` whose value ONNX Runtime saturates.

torch's integer ``prod`` (``torch.prod`` of a long tensor, ``aten.prod.dim_int``) multiplies in the integer type
and wraps on overflow, as numpy and the ONNX reference implementation do; ONNX Runtime's CPU ``ReduceProd``
kernel saturates an overflowing int64 product at the type's bounds, so the localisation names the kernel (kind
``runtime``).  Its ``Mul`` wraps, and a product modulo 2**n is the same in any order, so the reduction written as
a tree of ``Mul`` computes torch's value exactly (``onnx/edit/lowerings/int_prod.py``).  Proposed for each integer
``ReduceProd`` of the origin whose value on the case differs from the wrapped product of its input (none
otherwise); verified like any patch.  Class ``op-compat``: the kernel computes the op otherwise than its spec.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import picked_values
from drifttui.core.onnx.edit.patches import Patch
from drifttui.core.onnx.edit.rewriting import static_value


def _axes(case: Case, node: Any, rank: int) -> Optional[list[int]]:
    """The node's reduced axes, non-negative (all of them when it names none); None when they are not static."""
    attrs = {a.name: a for a in node.attribute}
    if len(node.input) > 1 and node.input[1]:
        given = static_value(case.model, node.input[1])
        if given is None:
            return None
        axes = [int(a) for a in np.asarray(given).reshape(-1)]
    else:
        axes = list(attrs["axes"].ints) if "axes" in attrs else []
    if not axes:
        if "noop_with_empty_axes" in attrs and attrs["noop_with_empty_axes"].i:
            return None
        axes = list(range(rank))
    return sorted({a % rank for a in axes}) if rank else None


def wrapped_product(x: np.ndarray, axes: list[int], keepdims: bool) -> np.ndarray:
    """torch's integer product: multiplication in the integer type, wrapping on overflow."""
    with np.errstate(over="ignore"):
        return np.prod(x, axis=tuple(axes), keepdims=keepdims, dtype=x.dtype)


def int_prod_patches(case: Case) -> list[Patch]:
    """One patch per integer ReduceProd of the origin whose value is not the wrapped product of its input."""
    prods, known = picked_values(case, lambda n: n.op_type == "ReduceProd" and n.input and n.output)
    out = []
    for node in prods:
        x, got = known.get(node.input[0]), known.get(node.output[0])
        if x is None or got is None or np.asarray(x).dtype.kind not in "iu":
            continue
        x = np.asarray(x)
        axes = _axes(case, node, x.ndim)
        keep = next((a.i for a in node.attribute if a.name == "keepdims"), 1)
        if axes is None or min((x.shape[a] for a in axes), default=0) < 1:
            continue
        want = wrapped_product(x, axes, bool(keep))
        if want.shape != np.shape(got) or not (want != got).any():
            continue
        out.append(_patch(case, node, x, axes, bool(keep), int((want != got).sum()), want.size))
    return out


def _patch(case: Case, node: Any, x: np.ndarray, axes: list[int], keep: bool, wrong: int, size: int) -> Patch:
    kind = x.dtype.name
    why = (f"ONNX Runtime's ReduceProd kernel does not wrap an overflowing {kind} product as torch's integer prod "
           f"does (multiplication in {kind}, two's complement, as the ONNX reference implementation computes it): "
           f"{wrong} of the {size} values of {node.name} differ; with the product written as a tree of {kind} Mul "
           "nodes, which wrap, the file computes what torch computes")
    fix = ("deploy the file with the product as Mul nodes (`drifttui repair` applies it), or keep the product in "
           "range in the model (a float64 or modular product); report the kernel's integer ReduceProd to onnxruntime "
           "with `drifttui repro`")
    spec = {"op": "rewrite", "rewrite": "int_prod_exact", "node": node.name, "axes": axes,
            "sizes": [int(x.shape[a]) for a in axes], "keepdims": int(keep)}
    return Patch(spec, "op-compat", why, fix, "runtime", module=case.module, nodes=[node.name])
