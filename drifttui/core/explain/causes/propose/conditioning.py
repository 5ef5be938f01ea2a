"""An origin whose float32 computation is ill-conditioned: torch's own float32 result is over the
tolerance from its float64 value, and in float64 the file computes what torch computes.

Neither side is right there to the tolerance (a normalisation of values with a large common offset and
a small spread: ``E[(x - mean)^2]`` of numbers that agree in most of their bits; pytorch/pytorch#60582,
microsoft/onnxruntime#20478): the drift is float32 rounding, each side rounding its own way, not a
mistranslation, and no graph edit computes torch's rounding.  The counterfactual is the precision: the
origin module computed in float64 by torch (a copy) and the origin's nodes computed in float64 by the
ONNX reference implementation (``onnx/edit/widen.py``) agree; that verifies the class ``stability``.
Tried only when no patch or re-export verified, on origins of at most ``MAX_NODES`` nodes.  ``repair``
has nothing to apply (the fix is the model's: condition the input, or compute the module in float64).
"""
from __future__ import annotations

import copy
from typing import Any, Optional

import numpy as np
import torch

from drifttui.core.explain.causes.locate.case import Case, call_io
from drifttui.core.explain.causes.locate.evaluate import Eval, Localisation, run_reference
from drifttui.core.onnx.edit.patches import Patch
from drifttui.core.onnx.edit.widen import to_float64
from drifttui.core.runtime.torch_hooks import tensors_of, to_numpy

MAX_NODES = 400


def _torch64(module: Any, ins: list[Any]) -> Optional[list[np.ndarray]]:
    try:
        m64 = copy.deepcopy(module).double()
        args = [t.double() if t.is_floating_point() else t for t in ins]
        with torch.no_grad():
            return [to_numpy(t) for t in tensors_of(m64(*args))]
    except Exception:  # noqa: BLE001 - a module that does not run in float64: no counterfactual
        return None


def _onnx64(case: Case) -> Optional[dict[str, np.ndarray]]:
    feeds = {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in case.feeds.items()}
    try:
        return run_reference(to_float64(case.model), feeds)
    except Exception:  # noqa: BLE001 - an op the reference cannot run in float64
        return None


def _pairs(case: Case, outs32: list[np.ndarray]) -> Optional[list[tuple[str, int]]]:
    """Each expected value of the case with the torch output it is (same shape, same values)."""
    out = []
    for name, want in case.expected.items():
        k = next((k for k, o in enumerate(outs32) if o.shape == np.shape(want)
                  and np.array_equal(o, np.asarray(want), equal_nan=True)), None)
        if k is None:
            return None
        out.append((name, k))
    return out


_NORMS = ("LayerNormalization", "GroupNormalization", "InstanceNormalization", "BatchNormalization",
          "MeanVarianceNormalization", "RMSNormalization", "SimplifiedLayerNormalization")
WORSE = 10.0        # the file's error this many times torch's own: its float32 kernel rounds worse


def _worse(file_err: float, own32: float) -> str:
    """Said when the file's float32 error is far larger than torch's own: the runtime's kernels lose more digits
    on the same ill-conditioned inputs (an FFT's float32 twiddles), though both sides agree in float64."""
    if not own32 or file_err < WORSE * own32:
        return ""
    return (f"; the file's error is {file_err / own32:.0f} times torch's own: ONNX Runtime's float32 kernels lose "
            "more of it than torch's")


def float64_trial(ctx: Any, case: Case, loc: Localisation) -> Optional[tuple[Patch, Eval]]:
    """The conditioning counterfactual (never a graph patch) and its figure, or None when it does not hold."""
    module = ctx.modules().get(case.module)
    if module is None or len(case.model.graph.node) > MAX_NODES or loc.ort.nonfinite:
        return None
    io = call_io(ctx, case)
    if io is None or not all(isinstance(t, torch.Tensor) and t.dtype in (torch.float32, torch.int64, torch.bool)
                             for t in io[0]):
        return None
    pairs = _pairs(case, io[1])
    t64 = _torch64(module, io[0]) if pairs else None
    o64 = _onnx64(case) if t64 is not None else None
    if o64 is None or any(k >= len(t64) or n not in o64 for n, k in pairs):
        return None
    own32 = both64 = 0.0
    tol_own = tol_both = True
    for name, k in pairs:
        ref, t32, o = t64[k], io[1][k].astype(np.float64), np.asarray(o64[name], dtype=np.float64)
        if ref.shape != o.shape or not np.isfinite(ref).all():
            return None
        bound = case.atol + case.rtol * float(np.abs(ref).max(initial=0.0))
        own32, both64 = max(own32, float(np.abs(t32 - ref).max())), max(both64, float(np.abs(o - ref).max()))
        tol_own &= own32 <= bound
        tol_both &= both64 <= bound
    if tol_own or not tol_both:     # torch's float32 holds the tolerance, or float64 does not agree
        return None
    norm = any(n.op_type in _NORMS for n in case.model.graph.node)
    why = (f"{case.module} computes an ill-conditioned function in float32 on these inputs: torch's own float32 "
           f"result is {own32:.3g} off its float64 value (over the tolerance), the file's {loc.ort.max_abs:.3g} off "
           f"torch's; computed in float64, torch (the module) and the file (its nodes, by the ONNX reference "
           f"implementation) agree to {both64:.3g}: each side rounds its float32 otherwise, neither mistranslates"
           + (" (a normalisation of values with a large common offset and a small spread loses the variance so)"
              if norm else "") + _worse(loc.ort.max_abs, own32))
    fix = (("condition the input (subtract the common offset before the module, e.g. normalise centred values)"
            if norm else "condition the computation (keep values away from where the function loses its digits: "
            "a log of values near 0, a difference of large values)") +
           " or compute the module in float64; no file computes torch's float32 rounding, so `drifttui repair` has "
           "nothing to apply")
    patch = Patch({"op": "float64", "module": case.module, "torch_own_error": own32, "float64_error": both64},
                  "stability", why, fix, "model", module=case.module)
    return patch, Eval(both64, False)
