"""torch's own float32 kernel of one function (elementwise or a reduction), not correctly rounded where the file's is.

On this CPU build torch's vectorised float32 ``sqrt`` is a unit in the last place off its correctly rounded value for
about one value in six (numpy's and ONNX Runtime's are exact); a value rescaling ``h^-1`` then cancels twice after
it and amplifies that last bit past the tolerance (batch 47B's ``value_inv``).  No node of the file is wrong, no
lowering either, and a float64 file "verifies" only at the tolerance's edge, because the file was right all along.

The counterfactual is torch's: the origin module run again with each float32 result of one elementwise function
replaced by its correctly rounded value (the function computed in float64 on the same float32 inputs, rounded once
to float32; a dispatch mode on the ATen op, nothing else changed).  When that alone brings torch onto the file's
values (within the tolerance, at most half the error before), the drift is torch's kernel of that function, its
class ``stability`` (the computation after it amplifies a last-bit difference), verified in the model, and
``repair`` has nothing to apply: the file computes the function as exactly as float32 can.  Tried first among the
counterfactuals no graph patch gives (before the re-exports: no export computes torch's kernel's rounding); the
functions torch rounds otherwise on these inputs, most deviating values first, at most ``MOST``.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from drifttui.core.explain.causes.locate.case import Case, call_io
from drifttui.core.explain.causes.locate.evaluate import Eval, Localisation, run_ort
from drifttui.core.explain.causes.propose.numerics.conditioning import _pairs
from drifttui.core.onnx.edit.patches import Patch
from drifttui.core.result import display_name
from drifttui.core.runtime.torch_hooks import tensors_of, to_numpy

# functions whose float64 value rounded once is float32's correctly rounded one (to float64's precision)
FUNCTIONS = ("sqrt", "rsqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "tanh", "sigmoid", "sin",
             "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc",
             "erfinv", "pow", "div", "reciprocal", "hypot", "logit", "softplus", "silu", "mish", "gelu", "elu",
             "lgamma", "digamma",
             # reductions: the float64 sum of the float32 values, rounded once (a mean of identical values is them)
             "mean", "sum", "var", "std", "linalg_vector_norm", "logsumexp", "cumsum", "_softmax", "_log_softmax")
MOST = 4            # functions tried, most deviating first


def _packets() -> dict[Any, str]:
    aten = torch.ops.aten
    return {getattr(aten, n): n for n in FUNCTIONS if hasattr(aten, n)}


class _Rounded(TorchDispatchMode):
    """Counts, per function, the float32 results torch's kernel rounds otherwise than the correctly rounded value
    (without ``exact``); returns the correctly rounded one for the functions in ``exact`` (and counts only those)."""

    def __init__(self, exact: frozenset = frozenset()) -> None:
        super().__init__()
        self.exact = exact
        self.packets = _packets()
        self.off: dict[str, list[int]] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = self.packets.get(func.overloadpacket)
        if name is None or not isinstance(out, torch.Tensor) or out.dtype != torch.float32 or "out" in kwargs \
                or (self.exact and name not in self.exact):
            return out
        wide = [a.double() if isinstance(a, torch.Tensor) and a.dtype == torch.float32 else a for a in args]
        rounded = func(*wide, **kwargs).float()
        same = (rounded == out) | (torch.isnan(rounded) & torch.isnan(out))
        tally = self.off.setdefault(name, [0, 0])
        tally[0] += int((~same).sum())
        tally[1] += out.numel()
        return rounded if name in self.exact else out


def _run(module: Any, ins: list[Any], exact: frozenset = frozenset()) -> tuple[list[np.ndarray], dict]:
    mode = _Rounded(exact)
    with torch.no_grad(), mode:
        outs = [to_numpy(t) for t in tensors_of(module(*ins))]
    return outs, mode.off


def _gap(outs: list[np.ndarray], pairs: list[tuple[str, int]], file: dict[str, np.ndarray]) -> Optional[float]:
    worst = 0.0
    for name, k in pairs:
        if k >= len(outs) or name not in file or outs[k].shape != np.shape(file[name]):
            return None
        worst = max(worst, float(np.abs(outs[k].astype(np.float64) - np.asarray(file[name], np.float64)).max(initial=0)))
    return worst


def kernel_trial(ctx: Any, case: Case, loc: Localisation) -> Optional[tuple[Patch, Eval]]:
    """The counterfactual (a ``model`` patch) when torch's kernel of one function is the drift; None otherwise.
    Computed once per case."""
    key = f"causes:torch-kernel:{case.module}:{case.sample}:{len(case.model.graph.node)}"
    if key not in ctx.cache:
        try:
            ctx.cache[key] = _trial(ctx, case, loc)
        except Exception:  # noqa: BLE001 - a module that does not run under a dispatch mode: no counterfactual
            ctx.cache[key] = None
    return ctx.cache[key]


def _trial(ctx: Any, case: Case, loc: Localisation) -> Optional[tuple[Patch, Eval]]:
    module = ctx.modules().get(case.module)
    io = call_io(ctx, case) if module is not None and loc.ort.ok and not loc.ort.nonfinite else None
    pairs = _pairs(case, io[1]) if io is not None else None
    if not pairs:
        return None
    file = run_ort(case.model, case.feeds, [n for n, _ in pairs])
    bounds = {n: case.atol + case.rtol * float(np.abs(io[1][k]).max(initial=0.0)) for n, k in pairs}
    found = decisive_kernel(module, io[0], pairs, file, bounds, io[1])
    if found is None:
        return None
    name, tally, before, after = found
    return _patch(case, name, tally, before, after), Eval(after, False)


def decisive_kernel(module: Any, ins: list[Any], pairs: list[tuple[str, int]], file: dict[str, np.ndarray],
                    bounds: dict[str, float], plain: Optional[list[np.ndarray]] = None
                    ) -> Optional[tuple[str, list[int], float, float]]:
    """(function, [values off, values], error before, after) of the first function (most deviating first) whose
    correctly rounded values alone bring torch's outputs (``pairs``: output name, index) onto ``file``'s within
    ``bounds`` and at most half the error before; None when none does or the mode changes what torch computes
    (``plain``: torch's outputs without the mode, when the caller has them)."""
    outs, off = _run(module, ins)
    if plain is None:
        with torch.no_grad():
            plain = [to_numpy(t) for t in tensors_of(module(*ins))]
    if len(plain) != len(outs) or any(not np.array_equal(a, b, equal_nan=True) for a, b in zip(plain, outs)):
        return None
    before = _gap(outs, pairs, file)
    if before is None:
        return None
    for name in sorted((n for n in off if off[n][0]), key=lambda n: -off[n][0])[:MOST]:
        fixed, _ = _run(module, ins, frozenset({name}))
        after = _gap(fixed, pairs, file)
        if after is not None and after <= 0.5 * before and all(
                _gap(fixed, [(n, k)], file) <= bounds[n] for n, k in pairs):
            return name, off[name], before, after
    return None


def _patch(case: Case, name: str, tally: list[int], before: float, after: float) -> Patch:
    where = display_name(case.module)
    nodes = [n.name for n in case.model.graph.node if n.op_type.lower() == name]
    why = (f"torch's own float32 result of {name} is not correctly rounded on these inputs (its kernel gives {tally[0]} "
           f"of {tally[1]} values off the correctly rounded float32 value, the function computed in float64 and "
           f"rounded once), and "
           f"{where} amplifies that last bit past the tolerance; run with the correctly rounded {name} in place of "
           f"its kernel's, torch computes what the file computes (the origin's error falls from {before:.3g} to "
           f"{after:.3g}): no node and no lowering is wrong")
    fix = (f"nothing in the file to repair (`drifttui repair` has nothing to apply): the difference is torch's {name} "
           f"kernel; if it matters, condition what follows {name} in {where} (it amplifies a last-bit difference: "
           "a cancellation, a large gain) or compute the module in float64")
    return Patch({"op": "torch_kernel", "function": name, "module": case.module, "off": tally[0], "of": tally[1]},
                 "stability", why, fix, "model", module=case.module, nodes=nodes,
                 torch_op=(f"torch.{name}", f"aten.{name}"))
