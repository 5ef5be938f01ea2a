"""The report's dataclasses to JSON values and back (``Result.to_dict`` / ``Result.from_dict``):
generic over any dataclass tree, so the schema lives in ``result.py`` alone.  Non-finite floats are
written as the strings "nan", "inf", "-inf" (JSON has none); a field named ``cls`` is ``class``."""
from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import Any, Optional, get_args, get_origin, get_type_hints

_RENAMES = {"cls": "class"}
_BACK = {v: k for k, v in _RENAMES.items()}


def to_json(obj: Any) -> Any:
    if is_dataclass(obj):
        return {_RENAMES.get(f.name, f.name): to_json(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_json(v) for v in obj]
    if isinstance(obj, float):
        if obj != obj:
            return "nan"
        if obj in (float("inf"), float("-inf")):
            return "inf" if obj > 0 else "-inf"
        return obj
    return obj


def from_json(tp: Any, data: Any) -> Any:
    if data is None:
        return None
    origin = get_origin(tp)
    if origin is Optional or (origin is not None and type(None) in get_args(tp)):
        inner = [a for a in get_args(tp) if a is not type(None)]
        return from_json(inner[0], data)
    if is_dataclass(tp):
        hints = get_type_hints(tp)
        kwargs = {}
        for key, value in data.items():
            name = _BACK.get(key, key)
            if name in hints:
                kwargs[name] = from_json(hints[name], value)
        return tp(**kwargs)
    if origin in (list,):
        (arg,) = get_args(tp) or (Any,)
        return [from_json(arg, v) for v in data]
    if origin is tuple:
        args = get_args(tp)
        arg = args[0] if args else Any
        return tuple(from_json(arg, v) for v in data)
    if origin is dict:
        return dict(data)
    if tp is float:
        return float(data)  # accepts "nan", "inf"
    return data


def clean(obj: Any) -> Any:
    """Make evidence JSON-friendly: numpy scalars to Python, tuples to lists, round floats."""
    import numpy as np   # lazy: the result types load without numpy (a report read by the TUI)

    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [clean(v) for v in obj]
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        return float(f"{f:.4g}") if f == f and f not in (float("inf"), float("-inf")) else f
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return clean(obj.tolist())
    return obj
