"""Where a linear or cubic Resize samples (issue 30 point 2): counterfactuals read from the torch call itself.

A ``Resize`` stands for one of torch's upsample calls (``upsample_bilinear2d``, ``_upsample_bicubic2d_aa``,
...); its attributes and its scales-or-sizes input say where it samples, and an exporter can get that wrong in
ways no catalogue entry lists: output sizes where torch samples at ``1 / scale_factor`` (the dynamo lowering of
the antialiased kernels), an antialiased ``align_corners`` call (torch keeps half-pixel centres and stretches the
scale to ``(in - 1) / (out - 1)``), a coordinate mode.  The origin's torch program (``torch_program``) holds the
call: its ATen target and arguments.  For each linear/cubic Resize of the origin whose value differs from that
call's on the case, two patches, the narrower first:

* ``resize_scales``: the call's own scale factors given to the Resize instead of its sizes (proposed when the
  call has scale factors that are not out/in);
* ``resize_matmul``: the call's sampling weights for the file's shapes, measured by running the ATen call on
  basis images (a separable map: one matrix per resized axis), applied as two MatMuls; proposed only when
  those matrices reproduce the call on the case's own input.

Either verifies like any patch; its class is ``lowering`` (the exporter's lowering of that ATen op computes
otherwise than torch) and the story names what the verifying patch changed.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
import torch

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import picked_values
from drifttui.core.explain.causes.locate.torch_program import call_args, program_targets
from drifttui.core.onnx.edit.patches import Patch
from drifttui.core.onnx.edit.lowerings.resize_map import MAX_ENTRIES
from drifttui.core.onnx.graph import attribute_values

MODES = ("linear", "cubic")
MAX_BASIS = 1 << 24             # elements of one basis batch (h images of h x w): 64 MiB of float32
AA_THREAD = "microsoft/onnxscript#2916"     # the antialiased lowering's two xfails (scales, align_corners)


def resize_scales_patches(ctx: Any, case: Case) -> list[Patch]:
    """The call's scales for each linear/cubic Resize of the origin that differs from its call (a candidate)."""
    return [p for p in resize_map_patches(ctx, case) if p.spec["rewrite"] == "resize_scales"]


def measured_map_patches(ctx: Any, case: Case) -> list[Patch]:
    """torch's measured weights for each such Resize: an equivalent computation that verifies wherever any
    right Resize would, so it is the last resort (``verify`` tries it after the re-exports)."""
    return [p for p in resize_map_patches(ctx, case) if p.spec["rewrite"] == "resize_matmul"]


def resize_map_patches(ctx: Any, case: Case) -> list[Patch]:
    """The scales and measured-map patches of each linear/cubic Resize of the origin that differs from its call
    (one reading of the torch program and one ORT run per origin: ``ctx.cache``)."""
    key = f"causes:resize_map:{case.module}:{case.call}:{case.sample}"
    if key not in ctx.cache:
        ctx.cache[key] = _resize_map_patches(ctx, case)
    return ctx.cache[key]


def _resize_map_patches(ctx: Any, case: Case) -> list[Patch]:
    pick = (lambda n: n.op_type == "Resize" and attribute_values(n).get("mode", "nearest") in MODES)
    if not any(pick(n) for n in case.model.graph.node):
        return []
    calls = [(t, args, kw) for t in program_targets(ctx, case) if "upsample" in t
             for args, kw in call_args(ctx, case, t)]
    if not calls:
        return []
    nodes, known = picked_values(case, pick)
    out: list[Patch] = []
    for node in nodes:
        x, y = known.get(node.input[0]), known.get(node.output[0])
        if x is None or y is None or np.asarray(x).ndim != 4:
            continue
        x = np.asarray(x)
        for target, args, kw in calls:
            want = _run(target, args, kw, x)
            if want is None or want.shape != np.asarray(y).shape or _close(want, np.asarray(y)):
                continue
            out.extend(_patches(case, node, target, args, kw, x, want))
            break
    return out


def _op(target: str) -> Any:
    """``aten._upsample_bilinear2d_aa.default`` -> the torch OpOverload."""
    obj: Any = torch.ops
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _run(target: str, args: tuple, kw: dict, x: np.ndarray) -> Optional[np.ndarray]:
    """The ATen call on ``x`` (its other arguments as the program called it), or None when it does not run."""
    try:
        with torch.no_grad():
            return _op(target)(torch.from_numpy(np.ascontiguousarray(x)), *args[1:], **kw).numpy()
    except Exception:  # noqa: BLE001 - a call this proposer cannot re-run: no patch
        return None


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.abs(a.astype(np.float64) - b).max() <= 1e-5 * (1.0 + np.abs(a).max()))


def _call_scales(args: tuple) -> Optional[list[float]]:
    """The call's scale factors (``scales_h, scales_w`` after ``align_corners``, or a ``scale_factors`` list)."""
    flat = [a for a in args[1:] if isinstance(a, float)]
    lists = [a for a in args[1:] if isinstance(a, (list, tuple)) and a and all(isinstance(v, float) for v in a)]
    got = flat or (list(lists[0]) if lists else [])
    return got if len(got) == 2 else None


def _weights(target: str, args: tuple, kw: dict, shape: tuple) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """(rows, cols): the call's weights along each spatial axis, measured on basis images (row k of a basis
    batch is 1 at position k of one axis, constant along the other); None when the call is not separable so."""
    _, _, h, w = shape
    if h * h * w > MAX_BASIS or w * h * w > MAX_BASIS:      # the basis batches themselves: a large map is no patch
        return None
    eye_h = np.broadcast_to(np.eye(h, dtype=np.float32)[:, None, :, None], (h, 1, h, w))
    eye_w = np.broadcast_to(np.eye(w, dtype=np.float32)[:, None, None, :], (w, 1, h, w))
    ys, xs = _run(target, args, kw, eye_h), _run(target, args, kw, eye_w)
    if ys is None or xs is None:
        return None
    rows, cols = ys[:, 0, :, 0].T, xs[:, 0, 0, :].T
    if rows.size > MAX_ENTRIES or cols.size > MAX_ENTRIES:
        return None
    if not (np.allclose(ys, ys[..., :1], atol=1e-6) and np.allclose(xs, xs[:, :, :1, :], atol=1e-6)):
        return None
    return rows, cols


def _patches(case: Case, node: Any, target: str, args: tuple, kw: dict, x: np.ndarray,
             want: np.ndarray) -> list[Patch]:
    a = attribute_values(node)
    n, c, h, w = x.shape
    ho, wo = want.shape[2:]
    op = target.rsplit(".", 1)[0]
    said = (f"Resize {node.name} ({a.get('mode')}, {a.get('coordinate_transformation_mode', 'half_pixel')}"
            f"{', antialias' if a.get('antialias') else ''}) samples otherwise than torch's {target} "
            f"({h}x{w} -> {ho}x{wo})")
    aa = f"; its family: {AA_THREAD}" if "_aa" in op else ""
    out: list[Patch] = []
    scales = _call_scales(args)
    sized = len(node.input) > 3 and bool(node.input[3])
    if scales and sized and any(abs(s - o / i) > 1e-9 for s, o, i in zip(scales, (ho, wo), (h, w))):
        why = (f"the exporter's lowering of torch's {op} computes otherwise than torch: {said}: it gives the Resize "
               f"the output sizes {ho}x{wo}, so ONNX Runtime samples at in/out ({h / ho:.4g}, {w / wo:.4g}) where "
               f"torch samples at 1/scale_factor ({1 / scales[0]:.4g}, {1 / scales[1]:.4g}); given the call's "
               f"scales {scales} instead, the Resize computes what torch computes")
        fix = (f"pass `size=` (or `recompute_scale_factor=True`) instead of a scale_factor whose output size is not "
               f"whole, so torch samples at in/out as the file does; `drifttui repair` gives the Resize the call's "
               f"scales; report the lowering of {op} to torch.onnx with `drifttui repro`{aa}")
        out.append(Patch({"op": "rewrite", "node": node.name, "rewrite": "resize_scales",
                          "scales": [1.0, 1.0, *scales], "target": target},
                         "lowering", why, fix, "export", module=case.module, nodes=[node.name]))
    got = _weights(target, args, kw, x.shape)
    if got is not None:
        rows, cols = got
        mapped = np.einsum("oh,nchw,pw->ncop", rows, x.astype(np.float32), cols)
        if _close(want, mapped):
            corners = ("; with antialias and align_corners torch keeps half-pixel centres and stretches the "
                       "scale to (in - 1) / (out - 1)" if a.get("antialias") and args[2:3] == (True,) else "")
            why = (f"the exporter's lowering of torch's {op} computes otherwise than torch: {said}{corners}; torch's "
                   f"own sampling weights for these shapes, measured from the call and applied as two MatMuls, compute "
                   "what torch computes (no Resize attribute, scales or sizes says them)")
            fix = (f"deploy the repaired file (`drifttui repair` replaces the Resize by torch's weights, static "
                   f"shapes {h}x{w} -> {ho}x{wo}); in the model, a call the exporter lowers right (`size=` with "
                   f"align_corners=False, or no antialias) avoids it; report the lowering of {op} to torch.onnx "
                   f"with `drifttui repro`{aa}")
            out.append(Patch({"op": "rewrite", "node": node.name, "rewrite": "resize_matmul", "target": target,
                              "rows": rows.tolist(), "cols": cols.tolist()},
                             "lowering", why, fix, "export", module=case.module, nodes=[node.name]))
    return out
