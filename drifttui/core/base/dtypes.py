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
#: machine epsilon of float32 (torch.finfo(torch.float32).eps)
FLOAT32_EPS = 2.0 ** -23


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
