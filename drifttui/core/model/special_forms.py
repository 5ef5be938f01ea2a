"""Numerically stable definitions, in core ATen ops, of the special functions whose exporter lowering
loses them at large arguments (issue 30 point 2: "for numerically unstable lowerings, the stable forms
of the same function").

The exporters lower ``erfc`` as ``1 - Erf(x)`` (microsoft/onnxscript#822/#823), which cancels to 0 for
x > ~3.9 where torch's erfc is still 1e-7 .. 1e-38, and ``special.erfcx`` as ``Exp(x^2) * (1 - Erf(x))``
(microsoft/onnxscript#1223, still open; #3038 proposes a stable form), which is 0 or inf * 0 = NaN for
x > ~4; ``special.log_ndtr`` is decomposed by torch into those two, and inherits both.  torch itself
decomposes them only into prims (``prims.erfc``) that no exporter lowers, so neither the other exporter
nor torch's decompositions compute them right.

Each entry here is the function's definition by a uniformly accurate approximation written in ops every
exporter lowers right (Exp, Mul, Add, Where, Reciprocal): the Chebyshev-fitted erfc of Numerical Recipes
(``erfcc``, fractional error < 1.2e-7 for every x >= 0), whose form ``t * exp(-x^2 + P(t))`` gives
``erfcx(x) = t * exp(P(t))`` for x >= 0 without ever forming ``exp(x^2)``; ``exp(-x^2)`` is computed as
``exp(-m^2) * exp(-(x-m)(x+m))`` with m = x rounded to 1/128, so the square is exact (Cephes' ``expx2``).
Used by ``retrace.reference_table``: the module is re-traced through these definitions and exported.
"""
from __future__ import annotations

from typing import Any, Callable

from drifttui.core.model.op_definition import RETRACE, OpDefinition, aten_op, torch_name

# Numerical Recipes' erfcc: erfc(z) = t * exp(-z^2 + P(t)), t = 1 / (1 + z/2), z >= 0
_P = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398, 1.48851587,
      -0.82215223, 0.17087277)


def _scaled_tail(z: Any) -> Any:
    """t * exp(P(t)) for z >= 0: erfc(z) * exp(z^2), bounded (1 at 0, ~1/(z sqrt(pi)) at large z)."""
    import torch

    t = torch.reciprocal(1.0 + 0.5 * z)
    p = torch.full_like(z, _P[-1])
    for c in reversed(_P[:-1]):
        p = p * t + c
    return t * torch.exp(p)


def _exp_square(z: Any, sign: float) -> Any:
    """exp(sign * z^2) with z^2 split as m^2 + (z-m)(z+m), m = z rounded to 1/128: m^2 is exact in float32,
    so the result keeps float32's relative precision where exp(sign * z * z) would lose ~z^2 ulps."""
    import torch

    m = torch.round(z * 128.0) / 128.0
    return torch.exp(sign * (m * m)) * torch.exp(sign * ((z - m) * (z + m)))


def erfc(x: Any) -> Any:
    """torch.special.erfc: the scaled tail times exp(-x^2) for x >= 0, 2 - erfc(-x) below."""
    import torch

    z = x.abs()
    tail = _scaled_tail(z) * _exp_square(z, -1.0)
    return torch.where(x < 0, 2.0 - tail, tail)


def erfcx(x: Any) -> Any:
    """torch.special.erfcx = exp(x^2) erfc(x): the scaled tail for x >= 0 (no exp(x^2) at all); for x < 0,
    2 exp(x^2) - erfcx(-x) (inf where exp(x^2) is, as in torch)."""
    import torch

    z = x.abs()
    tail = _scaled_tail(z)
    return torch.where(x < 0, 2.0 * _exp_square(z, 1.0) - tail, tail)


def _float(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``fn`` for a float tensor; an integer one is promoted first (torch's INT_TO_FLOAT rule)."""

    def run(x: Any) -> Any:
        import torch

        return fn(x if x.is_floating_point() else x.to(torch.get_default_dtype()))

    run.__doc__ = fn.__doc__
    return run


def stable_table() -> dict[Any, Callable[..., Any]]:
    """The ATen ops defined here, by their stable forms (``special.log_ndtr`` needs none of its own: torch's
    decomposition writes it with erfcx and erfc, which are then these)."""
    import torch

    aten = torch.ops.aten
    return {aten.erfc.default: _float(erfc), aten.special_erfcx.default: _float(erfcx)}


# what the exporters lower them as (the message names it): the unstable form each replaces
UNSTABLE = {"aten.erfc.default": "1 - Erf(x), which cancels to 0 for x > ~3.9",
            "aten.special_erfc.default": "1 - Erf(x), which cancels to 0 for x > ~3.9",
            "aten.special_erfcx.default": "Exp(x^2) * (1 - Erf(x)), 0 or NaN (inf * 0) for x > ~4",
            "aten.special_log_ndtr.default": "Log of Exp(x^2/2) * (1 - Erf) forms, -inf or NaN in both tails"}


# where each lowering is reported upstream (the fix text names it)
UPSTREAM = {"aten.erfc.default": "microsoft/onnxscript#822", "aten.special_erfc.default": "microsoft/onnxscript#822",
            "aten.special_erfcx.default": "microsoft/onnxscript#1223",
            "aten.special_log_ndtr.default": "microsoft/onnxscript#1223"}


def _fix(key: str) -> str:
    op = aten_op(key)
    fn = "erfcx" if "erfcx" in op or "log_ndtr" in op else "erfc"
    return (f"compute {torch_name(op)} in a stable form the exporter lowers right (drifttui's is "
            f"`drifttui.core.model.special_forms.{fn}`: the scaled tail t*exp(P(t)), never exp(x^2) or 1 - erf), "
            f"or {RETRACE}; the lowering is reported upstream ({UPSTREAM.get(key, 'torch.onnx')})")


DEFINITION = OpDefinition(
    "stability", UNSTABLE, stable_table,
    "the {exporter} exporter lowers torch's {target} as {lowered}, where torch's kernel is accurate; its "
    "numerically stable form computes what torch computes: ", _fix)
