"""Drift class ``interpolation``: Resize attributes against the torch call.

For modules that expose the interpolate arguments (``nn.Upsample`` and friends: ``mode``,
``align_corners``, ``scale_factor``, ``size``) the Resize node inside the module must have
the matching ``mode``, ``coordinate_transformation_mode``, ``nearest_mode``/``cubic_coeff_a``
and no ``antialias``.  Resize nodes outside such modules are checked for combinations torch
never produces.
"""
from __future__ import annotations

from typing import Any, Optional

from drifttui.core.onnx.graph import attribute_values, tensor_array
from drifttui.core.result import Finding
from drifttui.core.explain.context import Context, clean

CHECK = "interpolation"
STATIC = True
_HALF = ("half_pixel", "pytorch_half_pixel")
_ONNX_MODE = {"nearest": "nearest", "nearest-exact": "nearest", "linear": "linear", "bilinear": "linear",
              "trilinear": "linear", "bicubic": "cubic"}


def expected(mode: str, align_corners: Optional[bool]) -> dict[str, Any]:
    """The Resize attributes that reproduce ``F.interpolate(mode=..., align_corners=...)``."""
    exp: dict[str, Any] = {"mode": _ONNX_MODE.get(mode, mode)}
    if mode == "nearest":
        exp["coordinate_transformation_mode"] = ("asymmetric",)
        exp["nearest_mode"] = ("floor",)
    elif mode == "nearest-exact":
        exp["coordinate_transformation_mode"] = _HALF
        exp["nearest_mode"] = ("round_prefer_ceil",)
    else:
        exp["coordinate_transformation_mode"] = ("align_corners",) if align_corners else _HALF
        if mode == "bicubic":
            exp["cubic_coeff_a"] = -0.75
    exp["antialias"] = 0
    return exp


def _get(attrs: dict[str, Any], key: str) -> Any:
    defaults = {"mode": "nearest", "coordinate_transformation_mode": "half_pixel",
                "nearest_mode": "round_prefer_floor", "cubic_coeff_a": -0.75, "antialias": 0}
    return attrs.get(key, defaults.get(key))


def _effective(attrs: dict[str, Any], opset: Optional[int]) -> dict[str, Any]:
    """Resize before opset 11 has no coordinate modes: it is always asymmetric (and floors nearest)."""
    if opset is not None and opset < 11:
        return {**attrs, "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor",
                "opset_note": f"opset-{opset} Resize is always asymmetric"}
    return attrs


def _patch(node: Any, key: str, want: Any, opset: Optional[int]) -> dict[str, Any]:
    if opset is not None and opset < 11:
        ctm = want if key == "coordinate_transformation_mode" else "half_pixel"
        return {"op": "rewrite", "node": node.name, "rewrite": "resize_opset11", "mode": ctm,
                "outputs": list(node.outputs)}
    return {"op": "set_attribute", "node": node.name, "name": key, "value": want}


def _fix(mode: str, align: Optional[bool], exp: dict[str, Any]) -> str:
    return (f"re-export so the Resize matches F.interpolate(mode={mode!r}, align_corners={align}): "
            f"coordinate_transformation_mode={exp['coordinate_transformation_mode'][0]}; do not edit the "
            "attribute by hand, and for opset < 11 exports upgrade the opset (old Upsample ops have no "
            "coordinate modes)")


def check(ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    mods = ctx.modules()
    seen: set[int] = set()
    for c in ctx.calls:
        m = mods.get(c.module)
        if m is None or not hasattr(m, "mode") or not hasattr(m, "align_corners"):
            continue
        mode = str(getattr(m, "mode"))
        align = getattr(m, "align_corners")
        exp = expected(mode, align)
        for ni in ctx.plan.calls[c.index].nodes:
            node = ctx.index.nodes[ni]
            if node.op_type != "Resize" or ni in seen:
                continue
            seen.add(ni)
            attrs = _effective(attribute_values(node.proto), ctx.index.opset)
            bad = {}
            for key, want in exp.items():
                got = _get(attrs, key)
                ok = got in want if isinstance(want, tuple) else (
                    abs(float(got) - float(want)) < 1e-6 if isinstance(want, float) else got == want)
                if not ok:
                    bad[key] = {"onnx": got, "torch_expects": list(want) if isinstance(want, tuple) else want}
            scale_note = _scale_vs_size(ctx, node, m)
            ev = {"node": node.name, "torch": {"mode": mode, "align_corners": align,
                                                "scale_factor": getattr(m, "scale_factor", None),
                                                "size": getattr(m, "size", None)},
                  "onnx": attrs, "mismatches": bad}
            if bad:
                what = ", ".join(f"{k}={v['onnx']} (torch: {v['torch_expects']})" for k, v in bad.items())
                key = next(iter(bad))
                want = exp[key][0] if isinstance(exp[key], tuple) else exp[key]
                out.append(Finding(CHECK, "error", c.module, [node.name],
                                   f"Resize {node.name} does not match {type(m).__name__}(mode={mode!r}, "
                                   f"align_corners={align}): {what}", clean(ev), _fix(mode, align, exp),
                                   patch=_patch(node, key, want, ctx.index.opset)))
            elif scale_note:
                out.append(Finding(CHECK, "warning", c.module, [node.name], scale_note, clean(ev),
                                   "pass size= instead of a non-integer scale_factor, or recompute_scale_factor=True"))
    for node in ctx.index.nodes:
        if node.op_type != "Resize" or node.index in seen:
            continue
        attrs = _effective(attribute_values(node.proto), ctx.index.opset)
        ctm = _get(attrs, "coordinate_transformation_mode")
        if _get(attrs, "mode") in ("linear", "cubic") and ctm in ("asymmetric", "tf_crop_and_resize",
                                                                   "tf_half_pixel_for_nn"):
            out.append(_never_produced(ctx, node, attrs, ctm))
    return out


def _never_produced(ctx: Context, node: Any, attrs: dict[str, Any], ctm: str) -> Finding:
    """A linear or cubic Resize sampling as F.interpolate never does; before opset 11 told by its opset (the
    attribute does not exist there: the op is always asymmetric), with the opset fix."""
    mode = _get(attrs, "mode")
    if "opset_note" in attrs:
        return Finding(CHECK, "warning", ctx.node_module(node.index), [node.name],
                       f"{attrs['opset_note']}: {node.name} samples mode={mode} asymmetrically, which "
                       "F.interpolate never does", clean({"node": node.name, "onnx": attrs}),
                       "export with opset >= 11 (the old Resize has no coordinate modes)")
    return Finding(CHECK, "warning", ctx.node_module(node.index), [node.name],
                   f"Resize {node.name} uses mode={mode} with coordinate_transformation_mode={ctm}, which "
                   "F.interpolate never produces", clean({"node": node.name, "onnx": attrs}),
                   "check the interpolate call (align_corners) and re-export without editing the graph")


def _scale_vs_size(ctx: Context, node: Any, module: Any) -> Optional[str]:
    """A non-integer output size from scale_factor, exported as sizes: the two sample differently."""
    sf = getattr(module, "scale_factor", None)
    if sf is None or len(node.inputs) < 4 or not node.inputs[3]:
        return None
    sizes = tensor_array(ctx.index, node.inputs[3])
    shape = ctx.index.shapes.get(node.inputs[0])
    if sizes is None or not shape:
        return None
    factors = sf if isinstance(sf, (tuple, list)) else [sf] * (len(shape) - 2)
    for d, f in zip(shape[2:], factors):
        if isinstance(d, int) and abs(d * float(f) - round(d * float(f))) > 1e-6:
            return (f"Resize {node.name} uses sizes while torch scales by {f}: input {d} * {f} is not an integer, "
                    "so the sampling positions differ")
    return None
