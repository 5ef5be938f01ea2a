"""Graph edit: an integer Cast that narrows, written as the wrap it computes (``causes/propose/edits/int_wrap.py``).

torch narrows an integer by keeping its low bits (``.long().int()`` wraps modulo 2**32, two's complement), and so
does a ``Cast`` by the spec.  ONNX Runtime's always-on RemoveDuplicateCastTransformer (run by its
InsertCastTransformer, at every optimisation level) merges ``Cast(float -> int64) -> Cast(int64 -> int32)`` into one
``Cast(float -> int32)`` (it judges the second Cast's reverse, int32 -> int64, safe), unless the int64 value is a
graph output; a float past the narrow type's range then converts to the CPU's "integer indefinite" (INT_MIN on x86;
0 for int16) instead of wrapping.  ``int_wrap`` computes the wrap in the wide type before the narrowing Cast::

    w = Mod(x + 2**(n-1), 2**n) - 2**(n-1)        (signed n bits; unsigned: Mod(x, 2**n))

(``Mod`` of integers takes the divisor's sign, Python's rule; an int64 sum that overflows is still congruent modulo
2**n), so the Cast reads a value in its range, and non-Cast nodes stand between the two Casts: nothing is left for
the transformer to merge.  Spec: ``node`` (the narrowing Cast), ``wide`` (the numpy name of its input's type).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from drifttui.core.onnx.edit.rewriting import find_node, splice_sorted

INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def narrowing(wide: Any, narrow: Any) -> bool:
    """An integer conversion that keeps only the low bits: both integer types, the target narrower."""
    wide, narrow = np.dtype(wide), np.dtype(narrow)
    return wide.name in INTS and narrow.name in INTS and narrow.itemsize < wide.itemsize


def wrap(values: np.ndarray, narrow: Any) -> np.ndarray:
    """torch's (and numpy's) narrowing of integers: the low bits, two's complement."""
    return np.asarray(values).astype(np.dtype(narrow))


def apply_int_wrap(model: Any, spec: dict[str, Any]) -> None:
    from onnx import helper, numpy_helper

    node = find_node(model, spec["node"], "Cast")
    to = next(a.i for a in node.attribute if a.name == "to")
    narrow, wide = helper.tensor_dtype_to_np_dtype(to), np.dtype(spec["wide"])
    if not narrowing(wide, narrow):
        raise ValueError(f"{node.name} does not narrow {wide.name} to a smaller integer type")
    bits, signed = 8 * np.dtype(narrow).itemsize, np.dtype(narrow).kind == "i"
    p, x = f"{node.name}/drifttui_wrap", node.input[0]
    half = 1 << (bits - 1) if signed else 0
    inits = [numpy_helper.from_array(np.asarray(v, wide), f"{p}/{k}") for k, v in (("span", 1 << bits),
                                                                                   ("half", half))]
    new = [helper.make_node("Add", [x, f"{p}/half"], [f"{p}/shifted"], name=f"{p}/shifted"),
           helper.make_node("Mod", [f"{p}/shifted", f"{p}/span"], [f"{p}/low"], name=f"{p}/low", fmod=0),
           helper.make_node("Sub", [f"{p}/low", f"{p}/half"], [f"{p}/wrapped"], name=f"{p}/wrapped")]
    node.input[0] = f"{p}/wrapped"
    splice_sorted(model, new, inits, anchor=node)


APPLY = {"int_wrap": apply_int_wrap}
