"""Check a JSON report's structure before anything reads it.

A report is data from a file: a field of the wrong type (``"module": 12345``) or an index that
points nowhere must end the load with one line (exit 2), not crash the app that browses it.
The expected types are the :mod:`drifttui.core.result` dataclasses' own annotations.
"""
from __future__ import annotations

from dataclasses import MISSING, fields, is_dataclass
from typing import Any, Union, get_args, get_origin, get_type_hints

from drifttui.core.result import STATUSES, Result

_RENAMES = {"cls": "class"}
_FLOAT_WORDS = ("nan", "inf", "-inf")


class ReportShapeError(ValueError):
    """``str(err)`` names the field and what was wrong with it."""


def check_report(data: Any) -> None:
    """Raise :class:`ReportShapeError` when ``data`` is not a well-formed report."""
    _check(Result, data, "the report")
    _check_references(data)


def _name(tp: Any) -> str:
    if tp is type(None):
        return "null"
    if is_dataclass(tp):
        return "an object"
    origin = get_origin(tp)
    if origin in (list, tuple):
        return "a list"
    if origin is dict:
        return "an object"
    return {str: "a string", int: "an integer", float: "a number", bool: "true/false"}.get(tp, str(tp))


def _found(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "true/false", int: "an integer",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__) + f" ({value!r:.40})"


def _check(tp: Any, value: Any, where: str) -> None:
    if tp is Any:
        return
    origin = get_origin(tp)
    if origin is Union:
        args = get_args(tp)
        if value is None and type(None) in args:
            return
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            _check(inner[0], value, where)
            return
        return                      # no wider unions in the schema
    if is_dataclass(tp):
        _check_object(tp, value, where)
    elif origin in (list, tuple):
        if not isinstance(value, list):
            raise ReportShapeError(f"{where} should be a list, found {_found(value)}")
        args = [a for a in get_args(tp) if a is not Ellipsis] or [Any]
        for i, item in enumerate(value):
            _check(args[0], item, f"{where}[{i}]")
    elif origin is dict:
        if not isinstance(value, dict):
            raise ReportShapeError(f"{where} should be an object, found {_found(value)}")
        args = get_args(tp)
        if len(args) == 2:
            for k, item in value.items():
                _check(args[1], item, f"{where}.{k}")
    elif tp is float:
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)) or value in _FLOAT_WORDS
        if not ok:
            raise ReportShapeError(f"{where} should be a number, found {_found(value)}")
    elif tp is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise ReportShapeError(f"{where} should be an integer, found {_found(value)}")
    elif tp in (str, bool):
        if not isinstance(value, tp):
            raise ReportShapeError(f"{where} should be {_name(tp)}, found {_found(value)}")


def _check_object(tp: Any, value: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise ReportShapeError(f"{where} should be an object, found {_found(value)}")
    hints = get_type_hints(tp)
    for f in fields(tp):
        key = _RENAMES.get(f.name, f.name)
        if key not in value:
            if f.default is MISSING and f.default_factory is MISSING:   # type: ignore[misc]
                raise ReportShapeError(f"{where} has no field {key!r}")
            continue
        _check(hints[f.name], value[key], f"{where}.{key}" if where != "the report" else key)


def _check_references(data: dict[str, Any]) -> None:
    """Indices and words the browser looks up: they must point at something that exists."""
    layers = data.get("layers", [])
    n = len(layers)
    if data.get("verdict") not in ("ok", "drift"):
        raise ReportShapeError(f"verdict should be \"ok\" or \"drift\", found {_found(data.get('verdict'))}")
    for i, layer in enumerate(layers):
        if layer["status"] not in STATUSES:
            raise ReportShapeError(f"layers[{i}].status {layer['status']!r} is not one of {', '.join(STATUSES)}")
        parent = layer.get("parent")
        if parent is not None and not 0 <= parent < n:
            raise ReportShapeError(f"layers[{i}].parent {parent} points at no layer (the report has {n})")
    for key in ("drift_origin", "precision_origin"):
        origin = data.get(key)
        if origin is not None and not 0 <= origin["layer"] < n:
            raise ReportShapeError(f"{key}.layer {origin['layer']} points at no layer (the report has {n})")
    for i, step in enumerate(data.get("steps", [])):
        bad = [x for x in step.get("layers", []) if not 0 <= x < n]
        if bad:
            raise ReportShapeError(f"steps[{i}].layers {bad[0]} points at no layer (the report has {n})")
    for i, window in enumerate(data.get("windows", [])):
        if len(window) != 2:
            raise ReportShapeError(f"windows[{i}] should be [first, last], found {_found(window)}")
