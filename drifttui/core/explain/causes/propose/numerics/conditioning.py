"""An origin whose float32 computation is ill-conditioned: torch's own float32 result is over the
tolerance from its float64 value, and in float64 the file computes what torch computes.

Neither side is right there to the tolerance (a normalisation of values with a large common offset and
a small spread: ``E[(x - mean)^2]`` of numbers that agree in most of their bits; pytorch/pytorch#60582,
microsoft/onnxruntime#20478): the drift is float32 rounding, each side rounding its own way, not a
mistranslation, and no graph edit computes torch's rounding.  The counterfactual is the precision: the
origin module computed in float64 by torch (a copy) and the origin's nodes computed in float64 by the
ONNX reference implementation (``onnx/edit/numerics/widen.py``) agree; that verifies the class ``stability``.  A file can
hold constants its exporter folded in float32 (the dynamo exporter folds a ``cdist``'s prototype side,
``[-2 b, 1, |b|^2]``, into one initializer): widened, it keeps that float32 rounding, and on an ill-conditioned
function that rounding alone can be over the tolerance.  Then, and only when torch's own float32 is over it, the
origin module is exported in float64 by the file's own exporter (``module.double()``, float64 inputs, the file's
opset: one export) and, when that export is the same lowering (the same computing nodes, op for op), its float64
value stands for the file's: the lowering computed without the float32 folding.
Tried when no graph patch verified, on origins of at most ``MAX_NODES`` nodes: before the re-exports when torch's
own float32 error is of the file's size (``conditioned_first``: the re-exports are then said skipped), else after
them.  ``repair`` has nothing to apply (the fix is the model's: condition the input, or compute the module in float64).
"""
from __future__ import annotations

import contextlib
import copy
import tempfile
from pathlib import Path
from typing import Any, Optional

import numpy as np
import onnx
import torch

from drifttui.core.explain.causes.locate.case import Case, call_io
from drifttui.core.explain.causes.locate.evaluate import Eval, Localisation, float64_values, run_reference
from drifttui.core.explain.causes.propose.nopatch import explain_no_patch
from drifttui.core.explain.causes.propose.numerics.kernel64 import deviating_kernels, said
from drifttui.core.model.export import export_model
from drifttui.core.onnx.edit.patches import Patch
from drifttui.core.prepare.reference import run_exporter
from drifttui.core.runtime.torch_hooks import tensors_of, to_numpy
from drifttui.core.result import display_name

MAX_NODES = 400


class _Float64Factories(torch.overrides.TorchFunctionMode):
    """A tensor the forward makes in the default float32 (``torch.arange(0.0, n, 0.01)``, ``torch.zeros(...)``)
    made in float64: the module in float64 is its factories too (torch's vectorised float32 ``arange`` is a unit in
    the last place off its float64 value).  And a cast of a float64 value to float32 (``.float()``,
    ``.to(torch.float32)``, ``.type(torch.float32)``) keeps it float64, as the file's widening keeps its ``Cast`` to
    float32 (``onnx/edit/numerics/widen.py``): else the rest of the module computes in float32 and torch's "float64"
    value is its float32 one.  A cast to float16 or bfloat16 is a precision the model chose, kept.  A function mode:
    this thread only."""

    FACTORIES = frozenset({torch.arange, torch.linspace, torch.logspace, torch.zeros, torch.ones, torch.full,
                           torch.empty, torch.tensor, torch.eye, torch.scalar_tensor})
    CASTS = frozenset({torch.Tensor.to, torch.Tensor.float, torch.Tensor.type, torch.Tensor.type_as})

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func in self.CASTS and args and isinstance(args[0], torch.Tensor) and args[0].dtype == torch.float64 \
                and isinstance(out, torch.Tensor) and out.dtype == torch.float32 and out.shape == args[0].shape:
            return args[0]
        if func in self.FACTORIES and "dtype" not in kwargs and isinstance(out, torch.Tensor) \
                and out.dtype == torch.float32:
            return func(*args, **{**kwargs, "dtype": torch.float64})
        return out


class _Through(torch.overrides.TorchFunctionMode):
    """A function mode that changes nothing: what torch computes under any mode (``_faithful``)."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return func(*args, **(kwargs or {}))


def _faithful(module: Any, ins: list[Any]) -> bool:
    """Whether the module computes the same under a function mode: a call whose ``__torch_function__`` dispatch
    loses an argument (``F.l1_loss``'s ``weight=``) computes otherwise under any mode, and a float64 counterfactual
    run under one would agree with a file that lost it too."""
    plain = [to_numpy(t) for t in tensors_of(module(*ins))]
    with _Through():
        moded = [to_numpy(t) for t in tensors_of(module(*ins))]
    return len(plain) == len(moded) and all(a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
                                            for a, b in zip(plain, moded))


def _torch64(module: Any, ins: list[Any]) -> Optional[list[np.ndarray]]:
    """The module and its inputs in float64, the forward's float32 factories made float64 too where a function mode
    leaves what torch computes unchanged (``_faithful``)."""
    try:
        m64 = copy.deepcopy(module).double()
        args = [t.double() if t.is_floating_point() else t for t in ins]
        with torch.no_grad():
            mode = _Float64Factories() if _faithful(module, ins) else contextlib.nullcontext()
            with mode:
                return [to_numpy(t) for t in tensors_of(m64(*args))]
    except Exception:  # noqa: BLE001 - a module that does not run in float64: no counterfactual
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


def _worse(file_err: float, own32: float, loc: Optional[Localisation] = None) -> str:
    """Said when the file's float32 error is far larger than torch's own: the runtime's kernels lose more digits
    on the same ill-conditioned inputs (an FFT's float32 twiddles), though both sides agree in float64; the kernel
    that computes otherwise than the ONNX op by its own error (``kernel64.deviating_kernels``) named when there is
    one."""
    if not own32 or file_err < WORSE * own32:
        return ""
    which = "ONNX Runtime's float32 kernels lose more of it than torch's"
    off = deviating_kernels(loc) if loc is not None else []
    if off:
        which = (f"ONNX Runtime's {off[0]['op_type']} kernel at {off[0]['node']} computes otherwise than the ONNX op "
                 f"(fed the ONNX reference implementation's values of its inputs, it {said(off[0])})")
    return f"; the file's error is {file_err / own32:.0f} times torch's own: {which}"


def _exported64(ctx: Any, case: Case, module: Any, ins: list[Any]) -> Optional[list[np.ndarray]]:
    """The origin module exported in float64 by the file's own exporter (``module.double()``, float64 inputs, the
    file's opset) and run in float64 by the ONNX reference implementation: the file's lowering free of the
    constants its exporter folded in float32 (a ``cdist``'s prototype side, ``[-2 b, 1, |b|^2]``, folded into a
    float32 initializer: widening the file keeps that rounding).  Only when it is the same lowering: the nodes that
    compute (Casts and constants aside) are the file's, op for op; None otherwise."""
    exporter = run_exporter(ctx.index, ctx.cfg)
    if exporter not in ("dynamo", "torchscript"):
        return None
    try:
        m64 = copy.deepcopy(module).double()
        args = [t.double() if t.is_floating_point() else t for t in ins]
        with tempfile.TemporaryDirectory(prefix="drifttui-float64-") as d:
            model = onnx.load(str(export_model(m64, tuple(args), {}, exporter, Path(d), "origin64.onnx",
                                               opset=case.opset)))
        if _lowering(model) != _lowering(case.model):
            return None
        inits = {t.name for t in model.graph.initializer}
        names = [i.name for i in model.graph.input if i.name not in inits]
        got = run_reference(model, {n: to_numpy(t) for n, t in zip(names, args)})
        return [np.asarray(got[o.name]) for o in model.graph.output]
    except Exception:  # noqa: BLE001 - a module that does not export or run in float64: no counterfactual
        return None


def _lowering(model: Any) -> list[str]:
    return sorted(n.op_type for n in model.graph.node if n.op_type not in _PLUMBING)


_PLUMBING = ("Constant", "ConstantOfShape", "Identity", "Cast", "CastLike")


def _agreement(t64: list[np.ndarray], outs: dict[str, np.ndarray], pairs: list[tuple[str, int]],
               bounds: dict[str, float]) -> Optional[float]:
    """The largest difference of ``outs`` (by the case's output names) from torch's float64 values when each is
    within its bound; None otherwise (or when a value is missing)."""
    worst = 0.0
    for name, k in pairs:
        o = outs.get(name)
        if o is None or np.shape(o) != t64[k].shape:
            return None
        d = float(np.abs(np.asarray(o, dtype=np.float64) - t64[k]).max(initial=0.0))
        if d > bounds[name]:
            return None
        worst = max(worst, d)
    return worst


def float64_trial(ctx: Any, case: Case, loc: Localisation) -> Optional[tuple[Patch, Eval]]:
    """The conditioning counterfactual (never a graph patch) and its figure, or None when it does not hold; computed
    once per case (``conditioned_first`` may have asked before the re-exports).  Not where the origin's TopK selects
    among tied values (propose/nopatch.py): float64 breaks float32's ties (scores saturated at 1.0) and both sides
    then agree, but the two float32 sides round alike and order the ties otherwise; that story is the ties'."""
    key = f"causes:float64:{case.module}:{case.sample}:{len(case.model.graph.node)}"
    if key not in ctx.cache:
        ctx.cache[key] = None if explain_no_patch(case) is not None else _float64_trial(ctx, case, loc)
    return ctx.cache[key]


Side = tuple[Any, list[tuple[str, int]], list[np.ndarray], dict[str, float]]


def _torch_side(ctx: Any, case: Case) -> Optional[Side]:
    """The origin module's call (inputs, float32 outputs), each expected value's torch output, torch's float64 values
    and each value's bound; None where there is no such counterfactual (a module that does not run in float64).
    Computed once per case."""
    key = f"causes:torch64:{case.module}:{case.sample}:{len(case.model.graph.node)}"
    if key not in ctx.cache:
        ctx.cache[key] = _side(ctx, case)
    return ctx.cache[key]


def _side(ctx: Any, case: Case) -> Optional[Side]:
    module = ctx.modules().get(case.module)
    if module is None or len(case.model.graph.node) > MAX_NODES:
        return None
    io = call_io(ctx, case)
    if io is None or not all(isinstance(t, torch.Tensor) and t.dtype in (torch.float32, torch.int64, torch.bool)
                             for t in io[0]):
        return None
    pairs = _pairs(case, io[1])
    t64 = _torch64(module, io[0]) if pairs else None
    if t64 is None or any(k >= len(t64) or t64[k].shape != io[1][k].shape or not np.isfinite(t64[k]).all()
                          for _, k in pairs):
        return None
    bounds = {n: case.atol + case.rtol * float(np.abs(t64[k]).max(initial=0.0)) for n, k in pairs}
    return io, pairs, t64, bounds


def torch_own_error(ctx: Any, case: Case) -> Optional[float]:
    """torch's own float32 error at the origin (its float64 value the truth) when it is over the tolerance; None
    when torch's float32 holds the tolerance, or there is no float64 counterfactual."""
    side = _torch_side(ctx, case)
    if side is None:
        return None
    io, pairs, t64, bounds = side
    errs = {n: float(np.abs(io[1][k].astype(np.float64) - t64[k]).max(initial=0.0)) for n, k in pairs}
    return max(errs.values()) if any(errs[n] > bounds[n] for n in errs) else None


def _float64_trial(ctx: Any, case: Case, loc: Localisation) -> Optional[tuple[Patch, Eval]]:
    if loc.ort.nonfinite:
        return None
    own32, side = torch_own_error(ctx, case), _torch_side(ctx, case)
    if own32 is None or side is None:
        return None                 # torch's float32 holds the tolerance: not ill-conditioned here
    io, pairs, t64, bounds = side
    module = ctx.modules().get(case.module)
    o64, exported = float64_values(case), False
    both64 = _agreement(t64, o64, pairs, bounds) if o64 is not None else None
    if both64 is None:              # the file's float32-folded constants stay float32 when widened: export in float64
        outs = _exported64(ctx, case, module, io[0])
        both64 = _agreement(t64, {n: outs[k] for n, k in pairs if k < len(outs)}, pairs, bounds) if outs else None
        exported = both64 is not None
    if both64 is None:
        return None
    return _patch(case, loc, own32, both64, exported)


def conditioned_first(ctx: Any, case: Case, loc: Localisation) -> Optional[tuple[Patch, Eval]]:
    """The conditioning counterfactual tried before the re-exports, when it verifies and torch's own float32 error is
    of the file's size (the file's error under ``WORSE`` times torch's own): there torch's float32 rounding is what
    differs, a re-export that computes torch's values would have to round as torch's kernels do, and each costs an
    export; None otherwise (the re-exports are tried first, the counterfactual after them as before)."""
    got = float64_trial(ctx, case, loc)
    if got is None or loc.ort.max_abs >= WORSE * float(got[0].spec.get("torch_own_error") or 0.0):
        return None
    return got


# functions whose slope is infinite at their domain's edge (+-1): a cosine of a vector with itself, rounded past 1
_EDGES = ("Acos", "Asin", "Atanh")


def _patch(case: Case, loc: Localisation, own32: float, both64: float, exported: bool) -> tuple[Patch, Eval]:
    norm = any(n.op_type in _NORMS for n in case.model.graph.node)
    how = ("the file's lowering (the module exported in float64 by the file's exporter: the file holds constants it "
           "folded in float32) by the ONNX reference implementation" if exported else
           "the file (its nodes, by the ONNX reference implementation)")
    why = (f"{display_name(case.module)} computes an ill-conditioned function in float32 on these inputs: torch's own float32 "
           f"result is {own32:.3g} off its float64 value (over the tolerance), the file's {loc.ort.max_abs:.3g} off "
           f"torch's; computed in float64, torch (the module) and {how} agree to {both64:.3g}: each side rounds its "
           f"float32 otherwise, neither mistranslates"
           + (" (a normalisation of values with a large common offset and a small spread loses the variance so)"
              if norm else "") + _worse(loc.ort.max_abs, own32, loc))
    edge = [n.op_type for n in case.model.graph.node if n.op_type in _EDGES]
    fix = (("condition the input (subtract the common offset before the module, e.g. normalise centred values)"
            if norm else f"keep {edge[0].lower()}'s argument inside its domain's edge (clamp it to [-1 + 1e-6, 1 - 1e-6]"
            f" first: at +-1 its slope is infinite, so each side's last float32 bit of the argument moves the result "
            "far)" if edge else "condition the computation (keep values away from where the function loses its "
            "digits: a log of values near 0, a difference of large values)") +
           " or compute the module in float64; no file computes torch's float32 rounding, so `drifttui repair` has "
           "nothing to apply")
    patch = Patch({"op": "float64", "module": case.module, "torch_own_error": own32, "float64_error": both64,
                   **({"float64_export": True} if exported else {})},
                  "stability", why, fix, "model", module=case.module)
    return patch, Eval(both64, False)
