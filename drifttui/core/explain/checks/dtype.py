"""Drift class ``dtype``: precision lost or changed on the way to ONNX.

* float32 initializers whose low mantissa bits are all zero (the values are bfloat16- or
  float16-rounded) while the matching torch tensor's are not: a constant folded or stored at
  the wrong precision;
* low-precision initializers (float16/bfloat16) in a float32 model;
* ``Cast`` nodes to float16/bfloat16/float64 (implicit precision paths);
* ``Div`` on integer tensors (truncation instead of torch's true or floor division), unless its operands are never
  negative or the file corrects its quotient to the floor itself (``onnx/intdiv.py``).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.base.dtypes import ELEM_OF, INT_ELEMS, rounding_of

from drifttui.core.onnx.graph import elem_type_name, fx_target, tensor_array
from drifttui.core.onnx.intdiv import truncation_is_floor
from drifttui.core.result import Finding, display_name
from drifttui.core.explain.context import Context, clean

CHECK = "dtype"
STATIC = True
_LOW = {ELEM_OF[n]: n for n in ("float16", "bfloat16", "float64")}


def _torch_tensor(ctx: Context, name: str) -> Any:
    """The torch parameter, buffer or plain tensor attribute with this qualified name, if any."""
    import torch

    obj: Any = ctx.model
    for part in name.split("."):
        if obj is None:
            return None
        obj = getattr(obj, part, None)
    return obj if isinstance(obj, torch.Tensor) else None


def _owner(ctx: Context, value: str) -> tuple[Optional[str], list[str]]:
    consumers = ctx.index.consumers.get(value, [])
    nodes = [ctx.index.nodes[ni].name for ni in consumers]
    owners = [ctx.node_module(ni) for ni in consumers]
    owners = [o for o in owners if o is not None]
    return (owners[0] if owners else None), nodes


def check(ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    index = ctx.index
    for name, init in index.initializers.items():
        if init.data_type in _LOW and init.data_type != 11:
            module, nodes = _owner(ctx, name)
            out.append(Finding(CHECK, "warning", module, nodes,
                               f"initializer {name} is stored as {_LOW[init.data_type]}",
                               clean({"initializer": name, "dtype": _LOW[init.data_type], "dims": list(init.dims)}),
                               "export in float32 (model.float()) unless low precision is intended, and compare "
                               "against a model in the same precision"))
            continue
        if init.data_type != 1:
            continue
        arr = tensor_array(index, name)
        kind = rounding_of(arr)
        if kind is None:
            continue
        t = _torch_tensor(ctx, name)
        module, nodes = _owner(ctx, name)
        ev: dict[str, Any] = {"initializer": name, "looks_like": kind, "dims": list(init.dims),
                              "torch_tensor": name if t is not None else None}
        if t is not None:
            tv = t.detach().float().cpu().numpy()
            if rounding_of(tv) is not None:
                continue                   # the torch side holds the same precision: consistent
            if tv.shape == arr.shape:
                ev["max_abs_diff_vs_torch"] = float(np.max(np.abs(tv.astype(np.float64) - arr)))
            out.append(Finding(CHECK, "error", module, nodes,
                               f"initializer {name} holds {kind}-rounded values (low mantissa bits all zero) while "
                               f"the torch tensor {name} is full float32: precision was lost in the export",
                               clean(ev), f"keep the weights in float32 when exporting (no {kind} cast or "
                                          "quantisation before torch.onnx.export), or compare against the "
                                          f"{kind} model"))
        else:
            out.append(Finding(CHECK, "warning", module, nodes,
                               f"initializer {name} holds {kind}-rounded values (low mantissa bits all zero)",
                               clean(ev), "check that the weights were not cast to low precision on the way"))
    for node in index.nodes:
        if node.op_type == "Cast":
            to = next((a.i for a in node.proto.attribute if a.name == "to"), 0)
            if to in _LOW:
                out.append(_cast(ctx, node, to))
        elif (node.op_type == "Div" and any(index.elem_types.get(v) in INT_ELEMS for v in node.inputs)
              and truncation_is_floor(index, node) is None):
            out.append(Finding(CHECK, "warning", ctx.node_module(node.index), [node.name],
                               f"integer Div in {node.name}: ONNX truncates towards zero, torch's // floors "
                               "(negative values differ)",
                               clean({"node": node.name, "inputs": node.inputs}),
                               "cast to float before dividing, or use torch.div(..., rounding_mode='trunc') "
                               "where truncation is meant"))
    return out


_CONVERSIONS = ("_to_copy", "convert_element_type", "aten.to.")


def _float64_tensors(ctx: Context, module: Optional[str], most: int = 3) -> list[str]:
    """The float64 parameters and buffers of ``module`` (with its children's), at most ``most`` names."""
    mod = ctx.modules().get(module) if module is not None else None
    if mod is None:
        return []
    named = [*mod.named_parameters(), *mod.named_buffers()]
    return [name for name, t in named if str(getattr(t, "dtype", "")) == "torch.float64"][:most]


def _cast(ctx: Context, node: Any, to: int) -> Finding:
    """A ``Cast`` to float16, bfloat16 or float64.  When the dynamo exporter recorded it as a conversion of torch's
    own program (``aten._to_copy``, ``prims.convert_element_type``: a ``.double()``, or torch's type promotion of a
    float32 op with a float64 buffer), torch converts there too: a float64 one is information, not a hazard (torch
    computes that op in float64 as well), and a float16 one is the model's own reduced precision, whose kernels may
    still round otherwise in ONNX Runtime.  A file with no record (TorchScript's) whose Cast to float64 sits in a
    module holding float64 parameters or buffers: torch's type promotion with them, information too.  Otherwise the
    file changes the dtype where torch's record says nothing: an implicit precision path."""
    target = fx_target(node.proto) or ""
    ev = clean({"node": node.name, "to": elem_type_name(to), "fx_target": target or None})
    module = ctx.node_module(node.index)
    wide = _float64_tensors(ctx, module) if _LOW[to] == "float64" and not target else []
    if wide:            # no record (a TorchScript file), but torch promotes with the module's own float64 tensors
        return Finding(CHECK, "info", module, [node.name],
                       f"Cast to float64 in {node.name}: {display_name(module)} holds float64 tensors ({', '.join(wide)}), and "
                       "torch's type promotion computes with them in float64 too", {**ev, "float64_tensors": wide},
                       "nothing to change: torch computes with these tensors in float64 as well")
    if not any(c in target for c in _CONVERSIONS):
        return Finding(CHECK, "warning", module, [node.name],
                       f"Cast to {_LOW[to]} in {node.name}: an implicit precision path", ev,
                       "remove the dtype change from the model (or autocast) before exporting")
    said = f"Cast to {_LOW[to]} in {node.name}: a conversion torch's program makes too ({target})"
    if _LOW[to] == "float64":
        return Finding(CHECK, "info", module, [node.name], said + ", computed in float64 on both sides", ev,
                       "nothing to change: torch computes this op in float64 as well")
    return Finding(CHECK, "warning", module, [node.name],
                   said + f": the model computes in {_LOW[to]} here, and ONNX Runtime's {_LOW[to]} kernels may "
                          "round otherwise than torch's", ev,
                   f"keep this part of the model in float32 if the {_LOW[to]} path is not intended")
