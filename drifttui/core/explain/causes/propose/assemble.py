"""The candidate patches for a drift origin, assembled from every proposer (``verify`` tries them).

``candidate_patches(ctx, case, findings, loc)``: the checks' own patches at the origin's nodes, the
runtime workarounds and guards the localisation points at (``rewrites``, ``singular``, ``nan_select``),
graph candidates named by the torch op they re-tell, the FX constants, the catalogue rewrites, and
the weights compared through their folds; one patch per spec (``key``), in that order.
"""
from __future__ import annotations

import json
from typing import Any, Optional

import onnx
from onnx import helper

from drifttui.core.explain.causes.locate.case import Case, at_export_shapes
from drifttui.core.explain.causes.locate.evaluate import Localisation
from drifttui.core.explain.causes.locate.torch_program import torch_calls
from drifttui.core.explain.causes.locate.torch_op import name_torch_ops
from drifttui.core.explain.causes.propose.edits import constants, rewrites
from drifttui.core.explain.causes.propose.numerics.accumulate64 import accumulate64_patches
from drifttui.core.explain.causes.propose.numerics.kernel64 import kernel64_patches
from drifttui.core.explain.causes.propose.numerics.half_recurrence import half_recurrence_patches
from drifttui.core.explain.causes.propose.edits.candidates import graph_candidates
from drifttui.core.explain.causes.propose.numerics.cast_first import cast_first_patches, narrowing_patches
from drifttui.core.explain.causes.propose.numerics.double_scalar import double_scalar_patches
from drifttui.core.explain.causes.propose.numerics.wide_operand import wide_operand_patches
from drifttui.core.explain.causes.propose.edits.fast_path import fast_path_patches
from drifttui.core.explain.causes.propose.edits.crossed_clip import crossed_clip_patches
from drifttui.core.explain.causes.propose.edits.dropped_addend import dropped_addend_patches
from drifttui.core.explain.causes.propose.edits.packed_padding import packed_padding_patches
from drifttui.core.explain.causes.propose.edits.folded_constant import folded_patches
from drifttui.core.explain.causes.propose.edits.frozen_window import frozen_window_patches
from drifttui.core.explain.causes.propose.reexport.frozen_ints import traced_int_patches
from drifttui.core.explain.causes.propose.edits.int_pow import int_pow_patches
from drifttui.core.explain.causes.propose.edits.int_prod import int_prod_patches
from drifttui.core.explain.causes.propose.edits.int_wrap import int_wrap_patches
from drifttui.core.explain.causes.propose.edits.mask_select import mask_select_patches
from drifttui.core.explain.causes.propose.edits.nan_grid import nan_grid_patches
from drifttui.core.explain.causes.propose.edits.nan_select import nan_select_patches
from drifttui.core.explain.causes.propose.numerics.opmath import opmath_patches
from drifttui.core.explain.causes.propose.numerics.opmath_scalar import held_numbers, opmath_scalar_patches
from drifttui.core.explain.causes.propose.numerics.opmath_stacked import stacked_opmath
from drifttui.core.explain.causes.propose.edits.quantize_torch import quantize_patches
from drifttui.core.explain.causes.propose.edits.resize_map import resize_scales_patches
from drifttui.core.explain.causes.propose.edits.singular import singular_patches, truncated_quotient_patches
from drifttui.core.explain.causes.propose.edits.nan_compare import nan_compare_patches
from drifttui.core.explain.causes.propose.edits.topk_order import unsorted_topk_patches
from drifttui.core.explain.causes.propose.edits.shift_count import shift_count_patches
from drifttui.core.explain.causes.propose.edits.weights import torch_tensors, weight_candidates
from drifttui.core.onnx.edit.patches import Patch
from drifttui.core.prepare.plan.folding import conv_bn_folds
from drifttui.core.result import Finding


def key(spec: dict[str, Any]) -> str:
    return json.dumps({k: spec.get(k) for k in ("op", "node", "name", "value", "rewrite", "form", "scales", "shortcut",
                                                 "nodes", "input", "patches")}, sort_keys=True, default=str)


def _origin_module(ctx: Any, case: Case) -> Any:
    return ctx.modules().get(case.module)


def _folds(ctx: Any, case: Case) -> list[tuple[str, Any, str, Any]]:
    """(conv name, conv, bn name, bn) for the BatchNorms in the origin an exporter folds into a Conv: those that
    read that Conv's output with as many channels (``folding.conv_bn_folds``; call order alone is no fold)."""
    inside = (lambda name: case.module == "" or name == case.module or name.startswith(case.module + "."))
    return [(cc.module, conv, bc.module, bn) for cc, bc, conv, bn in conv_bn_folds(ctx.model, ctx.calls)
            if inside(bc.module)]


def candidate_patches(ctx: Any, case: Case, findings: list[Finding], loc: Optional[Localisation] = None) -> list[Patch]:
    module = _origin_module(ctx, case)
    nodes = set(case.nodes)
    out: list[Patch] = []
    for f in findings:
        if f.patch and f.patch.get("op") in ("set_attribute", "remove_cast", "rewrite", "replace_constant") \
                and f.patch.get("node", f.patch.get("name")) in nodes | {v for n in case.model.graph.node for v in n.input}:
            out.append(Patch(dict(f.patch), f.check, f.message, f.fix, f.kind if f.kind != "unknown" else "export",
                             module=f.module, nodes=list(f.onnx_nodes)))
    out.extend(fast_path_patches(case, module))
    out.extend(frozen_window_patches(case, ctx.index.shapes))      # a pool's window of the example's size
    out.extend(traced_int_patches(ctx, case))       # a trace's ints of the example's size (traced at other sizes)
    out.extend(crossed_clip_patches(case))             # two clamps fused into one Clip with crossed bounds
    out.extend(packed_padding_patches(ctx, case) + unsorted_topk_patches(case))   # padded steps; TopK(sorted=0)
    out.extend(half_recurrence_patches(case))          # a float16 recurrent node: torch's per-step rounding
    out.extend(scalars := opmath_scalar_patches(case, lambda t: torch_calls(ctx, case, t), held_numbers(module)))
    out.extend(double_scalar_patches(case, lambda t: torch_calls(ctx, case, t)))   # a float64 op's float32 number
    out.extend(wide_operand_patches(case, module, loc.torch_op.name if loc is not None and loc.torch_op is not None
                                    else None, ctx.index.flavour))     # a float64 buffer held at float32
    if loc is not None:
        out.extend(folded_patches(case, loc))      # a folded constant of another element count: torch's value
        out.extend(rewrites.workaround_patches(case, loc.first_node, loc.kind, loc.torch_calls))
        out.extend(kernel64_patches(case, loc))       # a kernel off its reference by its own error, in float64
        out.extend(dropped_addend_patches(case, loc))     # before the guards: log(0) of a dropped eps
        out.extend(mask_select_patches(case, loc))     # before the guards: a selection by a 0/1 mask, not a point
        out.extend(nan_compare_patches(case, loc))     # before the guards: a NaN the mask keeps, not made by the lowering
        out.extend(singular_patches(case, loc))
        out.extend(nan_select_patches(case, loc))
        out.extend(accumulate64_patches(case))
        out.extend(int_pow_patches(case))
        out.extend(int_prod_patches(case))
        out.extend(int_wrap_patches(case) + shift_count_patches(case))    # a << b as a * Cast(2 ** b)
        out.extend(quantize_patches(case))
        out.extend(stacked_opmath(case, scalars, opmath_patches(case, getattr(loc.torch_op, "name", None))))
        out.extend(cast_first_patches(case, loc.torch_op.name if loc.torch_op is not None else None))
        out.extend(narrowing_patches(case))
        out.extend(nan_grid_patches(case))
    dynamic = any(d.dim_param for i in ctx.index.model.graph.input for d in i.type.tensor_type.shape.dim)
    out.extend(rewrites.resize_gather_patches(case, loc.kind if loc is not None else "unknown", dynamic))
    out.extend(name_torch_ops(list(graph_candidates(case, module, ctx.index.elem_types, ctx.index.shapes)),
                              lambda t: torch_calls(ctx, case, t)))
    # a constant a check already explains (an epsilon) is that check's story, not a second one
    explained = {p.spec.get("name") for p in out if p.spec.get("op") == "replace_constant"}
    out.extend(p for p in constants.fx_constant_patches(case) if p.spec.get("name") not in explained)
    out.extend(rewrites.candidates(case, module, _types(ctx, case), lambda t: torch_calls(ctx, case, t)))
    if loc is not None:     # after the catalogue's floor_cast, which tells a truncation of a negative quotient
        out.extend(truncated_quotient_patches(case, loc))
    if loc is not None:     # after the catalogue's Resize attributes (verify tries torch's measured map last)
        out.extend(resize_scales_patches(ctx, case))
    if at_export_shapes(ctx):      # a size baked in at export time is no story when nothing was resized
        out = [p for p in out if "baked" not in p.spec]
    out.extend(weight_candidates(case, torch_tensors(module, case.module, _folds(ctx, case))))
    seen: set[str] = set()
    unique: list[Patch] = []
    for p in out:
        k = key(p.spec)
        if k not in seen:
            seen.add(k)
            unique.append(p)
    return unique


def _types(ctx: Any, case: Case) -> dict[str, int]:
    types = dict(ctx.index.elem_types)
    try:
        inferred = onnx.shape_inference.infer_shapes(case.model)
        for vi in inferred.graph.value_info:
            if vi.type.tensor_type.elem_type:
                types.setdefault(vi.name, vi.type.tensor_type.elem_type)
    except Exception:  # noqa: BLE001 - inference is a help, not a requirement
        pass
    for k, arr in case.feeds.items():
        types.setdefault(k, helper.np_dtype_to_tensor_dtype(arr.dtype))
    return types


__all__ = ["candidate_patches", "key"]
