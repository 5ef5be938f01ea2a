"""The arguments a torch function's ``__torch_function__`` dispatch drops (issue 30: a why that generalizes).

A Python-level torch function (``torch.nn.functional.l1_loss``) hands itself to the active torch-function modes
and subclasses through ``handle_torch_function(public_api, relevant_args, *args, **kwargs)``, passing its
arguments on by hand.  One it forgets never reaches a mode: ``torch.export`` (which traces through such modes)
records the call without it, so the dynamo exporter's file computes the call as if it had its default, while the
forward run plainly uses it (pytorch/pytorch#193003: ``F.l1_loss(..., weight=w)`` dispatched without ``weight``).
``torch_align`` records the forward under a mode too, and would compute, and align, that same wrong call.

``completed`` reads the arguments back from the public function's own frame (the caller of
``handle_torch_function``): a parameter of its signature that the dispatch left out and that does not hold its
default is a dropped argument.  The call made with it computes what the plain forward computes.
"""
from __future__ import annotations

import inspect
import sys
from typing import Any

_DEPTH = 8          # frames from the mode's __torch_function__ up to handle_torch_function


def _dispatching_frame(func: Any) -> Any:
    """The frame of ``func`` (a Python function) that called ``handle_torch_function``, or None."""
    import torch.overrides as overrides

    code = getattr(inspect.unwrap(func), "__code__", None)
    if code is None:
        return None
    f = sys._getframe(2)
    for _ in range(_DEPTH):
        if f is None:
            return None
        if f.f_code is overrides.handle_torch_function.__code__:
            return f.f_back if f.f_back is not None and f.f_back.f_code is code else None
        f = f.f_back
    return None


def _is_default(value: Any, default: Any) -> bool:
    import torch

    if value is default:
        return True
    if default is inspect.Parameter.empty or isinstance(value, torch.Tensor) or isinstance(default, torch.Tensor):
        return False
    try:
        return bool(value == default)
    except Exception:  # noqa: BLE001 - a value that does not compare: not the default
        return False


def completed(func: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict, list[str]]:
    """``(args, kwargs, dropped)``: the call's arguments with those its dispatch dropped put back (by name), and
    their names; the call unchanged (``[]``) when nothing was dropped or it is not told."""
    frame = _dispatching_frame(func)
    if frame is None:
        return args, kwargs, []
    try:
        sig = inspect.signature(func)
        bound = sig.bind_partial(*args, **kwargs)
    except (TypeError, ValueError):
        return args, kwargs, []
    local = frame.f_locals
    dropped = [name for name, p in sig.parameters.items()
               if name not in bound.arguments and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               and name in local and not _is_default(local[name], p.default)]
    if not dropped:
        return args, kwargs, []
    return args, {**kwargs, **{name: local[name] for name in dropped}}, dropped
