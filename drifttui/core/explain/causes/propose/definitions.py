"""The story of a re-trace that verifies through one of drifttui's own definitions of an ATen op (issue 30
point 2: the stable forms of special functions, ``core/model/special_forms.py``; the reductions ONNX has
none for, ``core/model/scatter_forms.py``; the degrees-of-freedom reductions, ``core/model/dof_forms.py``).

The class follows from what the verifying patch changed: a stable form of the same function verifies
(``stability``: the exporter's lowering is the function's unstable textbook form), or torch's definition
of a reduction ONNX lacks does, or torch's ``max(0, N - correction)`` divisor (``lowering``: the exporter's
lowering computes another function), or torch's division by ``divisor_override`` (``core/model/pool_forms.py``), or torch's
fixed-point resize of uint8 images (``core/model/resize_forms.py``).  The
fix names the source change: the call written in the form that verified, and the upstream thread.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

from drifttui.core.model.dof_forms import WRONG as DOF
from drifttui.core.model.pool_forms import WRONG as POOL
from drifttui.core.model.resize_forms import WRONG as RESIZE
from drifttui.core.model.scatter_forms import WRONG
from drifttui.core.model.special_forms import UNSTABLE

# where each lowering is reported upstream (the fix text names it)
UPSTREAM = {"aten.erfc.default": "microsoft/onnxscript#822", "aten.special_erfc.default": "microsoft/onnxscript#822",
            "aten.special_erfcx.default": "microsoft/onnxscript#1223",
            "aten.special_log_ndtr.default": "microsoft/onnxscript#1223",
            "aten.scatter_reduce.two": "onnx/onnx#5100, pytorch/pytorch#147617"}
# torch's divisor is documented in pytorch/pytorch#109186; nvFuser and TVM fixed the same lowering
_DOF_REF = ("torch's max(0, N - correction): pytorch/pytorch#109186; the same divisor fixed in NVIDIA/Fuser#873 "
            "and apache/tvm#19512; not reported to torch.onnx / onnxscript yet: file it with `drifttui repro`")
_SOURCE = {
    "stability": ("compute {op} in a stable form the exporter lowers right (drifttui's is "
                  "`drifttui.core.model.special_forms.{fn}`: the scaled tail t*exp(P(t)), never exp(x^2) or 1 - erf), "
                  "or re-trace the module with `make_fx(model, decomposition_table=drifttui.core.model.retrace."
                  "reference_table())` before `torch.onnx.export`; the lowering is reported upstream ({ref})"),
    "lowering": ("write {op} by its definition (two `scatter_add`: of the values and of ones, the counts, "
                 "then divide; `drifttui.core.model.scatter_forms.scatter_reduce`), or re-trace the module with "
                 "`make_fx(model, decomposition_table=drifttui.core.model.retrace.reference_table())` before "
                 "`torch.onnx.export`; the lowering is reported upstream ({ref})"),
    "pool": ("divide the window sums by the override yourself (`F.avg_pool2d(x, k, s, p, count_include_pad=True) * "
             "(window volume / divisor)` where ceil_mode clips no window, or a depthwise conv by ones / divisor: "
             "`drifttui.core.model.pool_forms.{fn}`), or re-trace the module with `make_fx(model, decomposition_table="
             "drifttui.core.model.retrace.reference_table())` before `torch.onnx.export`; reported upstream as "
             "pytorch/pytorch#105349 (export refused then, silently dropped today: file it with `drifttui repro`)"),
    "resize": ("resize the width, then the height, each pass rounded to uint8 in torch's fixed point "
               "(`drifttui.core.model.resize_forms.upsample_bilinear2d_vec`), or resize a float copy where one "
               "level of difference is acceptable, or re-trace the module with "
               "`make_fx(model, decomposition_table=drifttui.core.model.retrace.reference_table())` before "
               "`torch.onnx.export`; not reported to torch.onnx / onnxscript yet: file it with `drifttui repro`"),
    "dof": ("keep the correction below the reduced size N (where torch's value is finite), or write {op} by its definition (the squared "
            "deviations summed, divided by `max(0, N - correction)`: `drifttui.core.model.dof_forms.{fn}`), or "
            "re-trace the module with `make_fx(model, decomposition_table=drifttui.core.model.retrace."
            "reference_table())` before `torch.onnx.export` ({ref})"),
}


def _torch_name(op: str) -> str:
    """The torch call of an ATen op's name: special_erfcx -> torch.special.erfcx, erfc -> torch.erfc."""
    return f"torch.special.{op[len('special_'):]}" if op.startswith("special_") else f"torch.{op}"


class Told(NamedTuple):
    check: str          # stability | lowering
    why: str            # what the exporter's lowering computes, in words
    fix: str            # the source change


def _dof(t: str, op: str, exporter: str) -> Told:
    """A degrees-of-freedom reduction: torch's divisor max(0, N - correction), the lowering's N - correction."""
    return Told("lowering", f"the {exporter} exporter lowers torch's {t} as {DOF[t]}; torch's definition "
                            f"(divided by max(0, N - correction)) computes what torch computes: ",
                _SOURCE["dof"].format(op=f"{_torch_name(op)}(..., correction=...)",
                                      fn="var_mean" if "_mean" in op else "var", ref=_DOF_REF))


def told(targets: list[str], exporter: str) -> Optional[Told]:
    """The story of the first target drifttui defines itself, None when none is."""
    for t in targets:
        op = t.split(".")[1] if t.startswith("aten.") else t
        if t in UNSTABLE or f"aten.{op}.default" in UNSTABLE:
            key = t if t in UNSTABLE else f"aten.{op}.default"
            fn = "erfcx" if "erfcx" in op or "log_ndtr" in op else "erfc"
            return Told("stability",
                        f"the {exporter} exporter lowers torch's {t} as {UNSTABLE[key]}, where torch's kernel is "
                        f"accurate; its numerically stable form computes what torch computes: ",
                        _SOURCE["stability"].format(op=_torch_name(op), fn=fn,
                                                    ref=UPSTREAM.get(key, "torch.onnx")))
        if t in WRONG:
            return Told("lowering", f"the {exporter} exporter lowers torch's {t} as {WRONG[t]}; torch's definition "
                                    f"(sums and counts by scatter_add, include_self honoured) computes what torch "
                                    f"computes: ",
                        _SOURCE["lowering"].format(op=f"torch.{op}(..., reduce='mean')", ref=UPSTREAM[t]))
        if t in DOF:
            return _dof(t, op, exporter)
        if t in POOL:
            return Told("lowering", f"the {exporter} exporter lowers torch's {t} with divisor_override as {POOL[t]}; "
                                    "torch's definition (each window's sum divided by the override) computes what "
                                    "torch computes: ", _SOURCE["pool"].format(fn=op))
        if t in RESIZE:
            return Told("lowering", f"the {exporter} exporter lowers torch's {t} of a uint8 image as {RESIZE[t]}; "
                                    "torch's definition computes what torch computes: ", _SOURCE["resize"])
    return None
