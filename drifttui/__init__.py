"""drifttui: find where a PyTorch model and its ONNX export stop computing the same numbers.

``import drifttui`` is cheap: torch, onnx and onnxruntime load on the first call.

    import drifttui
    result = drifttui.check(model, "deployed.onnx", inputs=x, samples=100)
    drifttui.assert_no_drift(model, "deployed.onnx", inputs=x)

See docs/python-api.md.
"""
from __future__ import annotations

from typing import Any

__all__ = ["check", "diagnose", "assert_no_drift", "bisect", "tolerance", "Result", "DriftTuiError", "InputError", "ModelError",
           "CancelToken", "Progress"]

_LAZY = {
    "check": ("drifttui.python_api", "check"),
    "diagnose": ("drifttui.python_api", "diagnose"),
    "assert_no_drift": ("drifttui.python_api", "assert_no_drift"),
    "bisect": ("drifttui.python_compose", "bisect"),
    "tolerance": ("drifttui.python_compose", "tolerance"),
    "Result": ("drifttui.core.result", "Result"),
    "DriftTuiError": ("drifttui.errors", "DriftTuiError"),
    "InputError": ("drifttui.errors", "InputError"),
    "ModelError": ("drifttui.errors", "ModelError"),
    "CancelToken": ("drifttui.core.base.progress", "CancelToken"),
    "Progress": ("drifttui.core.base.progress", "Progress"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'drifttui' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
