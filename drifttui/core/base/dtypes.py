"""Element types, one table for the whole engine: names, their aliases in specs, the ONNX element
type numbers, sizes, and the machine epsilon of the low precisions.

Torch dtypes are ``getattr(torch, name)`` of these names and numpy's are ``numpy.dtype(name)`` (except
bfloat16, which numpy cannot hold): nothing here imports torch, numpy or onnx, so the CLI's option
parsing stays light.
"""
from __future__ import annotations

from typing import Any, Optional

#: ONNX TensorProto element type number -> dtype name (onnx.TensorProto.DataType, lower-cased)
ONNX_ELEM: dict[int, str] = {
    1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 8: "string",
    9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64", 14: "complex64",
    15: "complex128", 16: "bfloat16", 17: "float8e4m3fn", 18: "float8e4m3fnuz", 19: "float8e5m2",
    20: "float8e5m2fnuz", 21: "uint4", 22: "int4",
}
ELEM_OF: dict[str, int] = {name: elem for elem, name in ONNX_ELEM.items()}

#: the dtypes an ``--inputs shape:...:DTYPE`` spec accepts, with their aliases
SPEC_ALIASES: dict[str, str] = {
    "float32": "float32", "float": "float32", "float16": "float16", "half": "float16",
    "float64": "float64", "double": "float64", "bfloat16": "bfloat16",
    "int64": "int64", "long": "int64", "int32": "int32", "int": "int32",
    "int16": "int16", "int8": "int8", "uint8": "uint8", "bool": "bool",
}

ITEMSIZE: dict[str, int] = {
    "float64": 8, "int64": 8, "uint64": 8, "complex64": 8, "complex128": 16, "float32": 4, "int32": 4,
    "uint32": 4, "float16": 2, "bfloat16": 2, "int16": 2, "uint16": 2, "int8": 1, "uint8": 1, "bool": 1,
    "float8e4m3fn": 1, "float8e4m3fnuz": 1, "float8e5m2": 1, "float8e5m2fnuz": 1,
}

FLOATS = frozenset({"float32", "float16", "float64", "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
                    "float8e5m2fnuz"})
#: the precisions lower than float32 that a layer can be computed or stored in
LOW_PRECISION: dict[str, float] = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}
#: the same by ONNX element type number (10: float16, 16: bfloat16): one unit in the last place, relative
LOW_PRECISION_ELEM: dict[int, float] = {ELEM_OF[n]: eps for n, eps in LOW_PRECISION.items()}
#: the element types numpy has no dtype for: ONNX Runtime cannot hand such a value to numpy (read through a Cast)
NUMPY_LACKS: frozenset[int] = frozenset(ELEM_OF[n] for n in ("bfloat16", "float8e4m3fn", "float8e4m3fnuz",
                                                             "float8e5m2", "float8e5m2fnuz"))
#: machine epsilon of float32 (torch.finfo(torch.float32).eps)
FLOAT32_EPS = 2.0 ** -23

#: ONNX element type numbers by kind: every set of them in the engine is one of these
INTS = frozenset({"uint8", "int8", "uint16", "int16", "int32", "int64", "uint32", "uint64"})
INT_ELEMS = frozenset(ELEM_OF[n] for n in INTS)                         # {2, 3, 4, 5, 6, 7, 12, 13}
FLOAT_ELEMS = frozenset(ELEM_OF[n] for n in FLOATS)
#: the floats a scalar constant of a graph is written in (float32, float16, float64, bfloat16)
SCALAR_FLOAT_ELEMS = frozenset(ELEM_OF[n] for n in ("float32", "float16", "float64", "bfloat16"))
LOW_FLOAT_ELEMS = frozenset(ELEM_OF[n] for n in LOW_PRECISION)         # {10, 16}
#: the integer types a quantized tensor is stored in: (u)int8, (u)int16, (u)int4
QUANT_ELEMS = frozenset(ELEM_OF[n] for n in ("uint8", "int8", "uint16", "int16", "uint4", "int4"))
INT8_ELEMS = frozenset(ELEM_OF[n] for n in ("uint8", "int8"))


def elem_name(elem: int) -> str:
    """'float32' for ONNX element type 1; '?' for an unknown or unset type."""
    return ONNX_ELEM.get(int(elem), f"elem{int(elem)}" if elem else "?")


def is_float_elem(elem: int) -> bool:
    return ONNX_ELEM.get(int(elem)) in FLOATS


def name_of(value: Any) -> Optional[str]:
    """'float16', 'bfloat16', ... of a torch tensor or numpy array (None when it has no dtype)."""
    dt = getattr(value, "dtype", None)
    if dt is None:
        return None
    return str(dt).replace("torch.", "")


def rounding_of(arr: Any, torch_values: Any = None) -> Optional[str]:
    """The one rounding detector: "bfloat16" / "float16" when the float32 ``arr`` holds values rounded
    to that precision, None otherwise.

    With ``torch_values`` (the torch tensor ``arr`` should equal): every value must be representable
    at the lower precision and within its rounding step (2**-8 / 2**-11 relative) of the torch value
    (the torch side may be a fold computed in another order than the exporter's, so exact equality
    of the rounded values is too strict).  Without it: every non-zero value is exactly representable
    there, over at least 16 non-zero values with 8 distinct ones and not all integers (zeros, a
    constant fill or integers are exact in any format: nothing to say)."""
    import numpy as np   # lazy: the dtype table stays importable without numpy (the CLI's option parsing)

    a = np.ascontiguousarray(arr)
    if torch_values is not None:
        a = a.astype(np.float32, copy=False)
        t = np.ascontiguousarray(torch_values, dtype=np.float32)
        if a.shape != t.shape or not a.size:
            return None
        step = np.maximum(np.abs(t), np.finfo(np.float32).tiny)
        if not (a.view(np.uint32) & 0xFFFF).any() and np.all(np.abs(a - t) <= step * 2.0 ** -8 * 1.01):
            return "bfloat16"
        if np.array_equal(a.astype(np.float16).astype(np.float32), a) and np.all(np.abs(a - t) <= step * 2.0 ** -11 * 1.01):
            return "float16"
        return None
    if a.dtype != np.float32 or a.size < 16:
        return None
    bits = a.view(np.uint32).ravel()
    nz = bits[(bits & 0x7FFFFFFF) != 0]
    if nz.size < 16 or np.unique(nz).size < 8:
        return None
    vals = a.ravel()
    if np.all(vals == np.round(vals)):
        return None
    if np.all((nz & 0xFFFF) == 0):
        return "bfloat16"
    if np.all((nz & 0x1FFF) == 0):
        return "float16"
    return None


def held_as(arr: Any, name: str) -> Any:
    """``arr`` (float32 / float64 numbers that a ``name`` value was widened to, so exactly representable) in that
    dtype: compared at its precision's floor.  bfloat16, which numpy has no type for, as a torch tensor."""
    import numpy as np

    if name == "float16":
        return np.asarray(arr).astype(np.float16)
    if name == "bfloat16":
        import torch

        return torch.from_numpy(np.ascontiguousarray(arr, dtype=np.float32)).to(torch.bfloat16)
    return arr
