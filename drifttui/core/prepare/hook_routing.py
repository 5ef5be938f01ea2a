"""Whether drifttui's per-module hooks change what the model computes, and so how they are registered.

A module may choose its path by its own hooks: ``nn.TransformerEncoderLayer`` in eval takes a fused fast path
(one kernel; its submodules are not called) unless a forward hook or pre-hook sits on it or on a submodule.  With
hooks on every module, the observed forward takes the slow path, whose submodules are compared one by one; that is
what the exported file computes too, and it is what torch computes when both paths agree.  Where they do not (a
float ``src_mask`` the fast path reads as boolean, pytorch/pytorch#118628), the observed forward is not the
model's: every layer matched the file while the outputs drifted.  So the trace forward is run a second time with no
hook at all, and when its outputs differ from the observed ones beyond the tolerance, the hooks are registered
globally and routed by module (``Hooks.routed``): the model computes what it computes unobserved, and a submodule
its fast path does not call has no value to compare.  Cost: one plain forward of sample 0, only for a model one of
whose module classes reads its hooks in its ``forward`` (``inspects_hooks``: its source names ``_forward_hooks`` or
``_forward_pre_hooks``); any other model computes the same with or without them."""
from __future__ import annotations

from typing import Any, Optional

import inspect

import numpy as np
import torch

from drifttui.core.base.metrics import elementwise_gap
from drifttui.core.runtime.guards import safe_forward


def inspects_hooks(model: Any) -> bool:
    """Whether a module class of ``model`` reads its own hooks in its ``forward`` (its source says so; a class whose
    source cannot be read counts as not)."""
    for cls in {type(m) for m in model.modules()}:
        try:
            src = inspect.getsource(cls.forward)
        except (OSError, TypeError):
            continue
        if "_forward_hooks" in src or "_forward_pre_hooks" in src:
            return True
    return False


def observation_changes(model: Any, sample0: Any, observed: list, atol: float, rtol: float) -> Optional[float]:
    """The largest difference between the outputs of ``model`` on ``sample0`` with no hook and ``observed`` (the
    hooked forward's), when one passes ``atol + rtol * scale`` (inf where a shape or a NaN differs); else None."""
    plain = safe_forward(model, sample0)
    if len(plain) != len(observed):
        return float("inf")
    worst, over = 0.0, False
    for a, b in zip(plain, observed):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.is_complex() or b.is_complex():
            continue
        if a.shape != b.shape:
            return float("inf")
        x, y = a.detach().double().numpy(), b.detach().double().numpy()
        m = elementwise_gap(x, y)       # a NaN on one side only, or unequal infinities: inf
        scale = float(np.abs(x[np.isfinite(x)]).max(initial=0.0))
        worst, over = max(worst, m), over or m > atol + rtol * scale
    return worst if over else None


def routed_note(diff: float) -> str:
    return (f"the model computes otherwise when its modules carry forward hooks (outputs {diff:.3g} apart): a module "
            "chooses its path by its hooks (e.g. nn.TransformerEncoderLayer's fused fast path); it is observed "
            "through global hooks, as it computes unobserved, and a submodule that path does not call is not compared")
