"""Is the torch side its own reference? (issue 22, item 8)

A model left with dropout active (``F.dropout(training=True)``, a module in train mode) or with
random ops computes other numbers on every forward: comparing it with ONNX would blame the
export for torch's own noise. :func:`self_check` runs sample 0 through torch once more and, when
the outputs differ from the first forward, runs two hooked forwards to name the first module
(in the order modules finish) whose output differs. Tolerance-free: any difference counts.
"""
from __future__ import annotations

from typing import Any, Optional

import torch

from drifttui.core.runtime.guards import safe_forward

PREFIX = "the torch side is not deterministic"


def _differ(a: list[Any], b: list[Any]) -> float:
    """Largest |a - b| over the tensors of two forwards (inf when shapes or counts differ)."""
    if len(a) != len(b):
        return float("inf")
    worst = 0.0
    for x, y in zip(a, b):
        if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)):
            continue
        if x.shape != y.shape:
            return float("inf")
        if torch.equal(x, y):
            continue
        if not (x.is_floating_point() or x.is_complex()):
            return float("inf")
        d = (x.detach().double() - y.detach().double()).abs()
        d = torch.nan_to_num(d, nan=float("inf"))
        worst = max(worst, float(d.max()) if d.numel() else 0.0)
    return worst


def _module_outputs(model: Any, sample: Any) -> list[tuple[str, Any]]:
    """(module name, its first output tensor) in the order the modules finish.  One global hook routed by module
    (as ``runtime/torch_hooks.py`` observes): a module that inspects its own hooks takes its plain path."""
    seen: list[tuple[str, Any]] = []
    names: dict[int, str] = {}
    for name, m in model.named_modules():
        names.setdefault(id(m), name)

    def record(m: Any, _i: Any, out: Any) -> None:
        name = names.get(id(m))
        t = out if isinstance(out, torch.Tensor) else next(
            (o for o in (out if isinstance(out, (list, tuple)) else []) if isinstance(o, torch.Tensor)), None)
        if name is not None and t is not None:
            seen.append((name, t.detach().clone()))

    handle = torch.nn.modules.module.register_module_forward_hook(record)
    try:
        safe_forward(model, sample, versioned=False)
    finally:
        handle.remove()
    return seen


def first_differing_module(model: Any, sample: Any) -> Optional[str]:
    if not isinstance(model, torch.nn.Module) or isinstance(model, torch.jit.ScriptModule):
        return None
    try:
        a, b = _module_outputs(model, sample), _module_outputs(model, sample)
    except Exception:       # noqa: BLE001 - a model that cannot be hooked: say only that it differs
        return None
    for (name, x), (_, y) in zip(a, b):
        if _differ([x], [y]) > 0:
            return name
    return None


def _scale(outs: list[Any]) -> float:
    vals = [float(t.detach().abs().max()) for t in outs
            if isinstance(t, torch.Tensor) and t.numel() and (t.is_floating_point() or t.is_complex())]
    return max(vals, default=0.0)


def self_check(model: Any, sample: Any, first: list[Any], again: Optional[list] = None) -> tuple[str, float, float]:
    """(note, max |d|, max |torch|) when a second torch forward of ``sample`` (``again``, or one run
    now) differs from ``first``; ("", 0, 0) when it agrees bit for bit. decide weighs the difference
    against the tolerance."""
    if again is None:
        again = safe_forward(model, sample, versioned=False)
    diff = _differ(first, again)
    if diff == 0:
        return "", 0.0, 0.0
    where = first_differing_module(model, sample)
    at = f"; the first module whose output differs between two forwards: {where or '(root)'}" if where is not None else ""
    return (f"{PREFIX}: two torch forwards of sample 0 differ by up to {diff:.3g}{at}; dropout left active "
            "(F.dropout(training=True), a module in train mode) or random ops make torch differ from itself, "
            "so no drift origin is blamed on the export: make the model deterministic (model.eval(), no "
            "random ops) and compare again"), diff, _scale(first)
