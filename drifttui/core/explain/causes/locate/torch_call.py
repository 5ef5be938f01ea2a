"""The torch call a user wrote, spelled one way whichever exporter made the file.

The TorchScript side records each call as the forward made it (``torch_align``'s TorchFunctionMode: the function
object); the dynamo side has the FX node torch.export recorded, whose ``torch_fn`` meta keeps the call it came from
(``('var_1', 'method_descriptor.var')``, ``('atan2_1', 'builtin_function_or_method.atan2')``,
``('interpolate_1', 'function.interpolate')``), through the exporter's decompositions.  Both are resolved here by the
same rule: a Tensor method is ``torch.Tensor.<name>``; a function is ``<namespace>.<name>`` for the first of
``NAMESPACES`` that holds it (``F.cosine_similarity`` *is* ``torch.cosine_similarity``: ``torch.cosine_similarity``
both ways).  ``aten_of`` picks, among the ATen ops one call dispatched, the one that is that call (``x.var()``:
``aten.var.correction``), for the message's "torch.Tensor.var (aten.var.correction)".
"""
from __future__ import annotations

import types
from typing import Any, Optional

import torch

NAMESPACES = ("torch", "torch.nn.functional", "torch.special", "torch.linalg", "torch.fft", "torch.functional")
_METHOD_KINDS = ("method_descriptor", "wrapper_descriptor", "getset_descriptor", "method-wrapper")
# dispatched ops that are never the call's own computation (a copy, an alias, a size)
PLUMBING = ("detach", "alias", "view", "_to_copy", "clone", "lift_fresh", "empty", "copy_", "sym_size",
             "_local_scalar_dense", "expand", "t", "transpose", "unsqueeze", "squeeze", "permute", "_unsafe_view")


# the ONNX nodes a plumbing call lowers to
LAYOUT_NODES = ("Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Expand", "Cast", "CastLike")


def plumbing(aten: Optional[str]) -> bool:
    """Whether a call's ATen op (``aten.t.default``) is plumbing: a copy, an alias, a layout, no arithmetic."""
    return aten is not None and len(aten.split(".")) > 1 and aten.split(".")[1] in PLUMBING


def _namespace(path: str) -> Any:
    mod: Any = torch
    for part in path.split(".")[1:]:
        mod = getattr(mod, part, None)
        if mod is None:
            return None
    return mod


def _is_method(func: Any) -> bool:
    return getattr(func, "__objclass__", None) is not None or ".Tensor" in f".{getattr(func, '__qualname__', '')}" \
        or isinstance(func, (types.MethodDescriptorType, types.WrapperDescriptorType, types.GetSetDescriptorType))


def call_name(func: Any) -> str:
    """``torch.Tensor.var``, ``torch.atan2``, ``torch.nn.functional.adaptive_avg_pool2d`` for a function object
    a TorchFunctionMode was handed; ``aten.clamp.Tensor`` for an ATen op called directly (``torch.ops.aten``: its
    ``__name__`` is ``clamp.Tensor``, whose last part is an overload's name, not the op's)."""
    if isinstance(func, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return aten_name(func)
    name = getattr(func, "__name__", None) or str(func)
    if _is_method(func):
        return f"torch.Tensor.{name}"
    sub, _, short = name.partition("_")     # torch.special.erfcx is the builtin special_erfcx
    if sub in ("special", "linalg", "fft") and getattr(_namespace(f"torch.{sub}"), short, None) is func:
        return f"torch.{sub}.{short}"
    for path in NAMESPACES:
        ns = _namespace(path)
        if ns is not None and getattr(ns, name, None) is func:
            return f"{path}.{name}"
    mod = getattr(func, "__module__", None) or "torch"
    return f"{'torch' if mod.startswith(('torch._C', 'torch._tensor')) or mod == 'torch' else mod}.{name}"


def call_from_meta(torch_fn: Any) -> Optional[str]:
    """The call an FX node came from (its ``torch_fn`` meta), spelled as ``call_name`` spells it; None for an ATen
    op called directly (``OpOverload``) or a record it cannot read."""
    if not isinstance(torch_fn, (tuple, list)) or len(torch_fn) != 2 or not isinstance(torch_fn[1], str):
        return None
    kind, _, name = torch_fn[1].partition(".")
    if not name or kind in ("OpOverload", "OpOverloadPacket"):
        return None
    if kind in _METHOD_KINDS:
        return f"torch.Tensor.{name}"
    sub, _, short = name.partition("_")     # the builtin linalg_vector_norm is torch.linalg.vector_norm
    obj = getattr(_namespace(f"torch.{sub}"), short, None) if sub in ("special", "linalg", "fft") else None
    if obj is not None and type(obj).__name__ == kind:
        return call_name(obj)
    for path in NAMESPACES:
        ns = _namespace(path)
        obj = getattr(ns, name, None) if ns is not None else None
        if obj is not None and type(obj).__name__ == kind:
            return call_name(obj)
    # a Tensor method written in Python (``x ** 2``: ``function.pow``; ``2 - x``: ``function.__rsub__``)
    return f"torch.Tensor.{name}" if kind == "function" and hasattr(torch.Tensor, name) else None


def aten_called(torch_fn: Any) -> Optional[str]:
    """The ATen op a forward called directly (``torch.ops.aten.argsort.default(...)``: its FX nodes' ``torch_fn``
    meta is ``OpOverload.argsort.default``) as ``aten.argsort.default``; None for any other record.  A composite op
    reaches the exporter decomposed (``aten.sort``), and its pieces' ``original_aten`` is the piece, not the call."""
    if not isinstance(torch_fn, (tuple, list)) or len(torch_fn) != 2 or not isinstance(torch_fn[1], str):
        return None
    kind, _, name = torch_fn[1].partition(".")
    op, _, overload = name.partition(".")
    if kind != "OpOverload" or not op or not overload:
        return None
    packet = getattr(torch.ops.aten, op, None)
    return f"aten.{op}.{overload}" if packet is not None and overload in packet.overloads() else None


def aten_name(op: Any) -> str:
    """``aten.var.correction`` for an OpOverload (or its printed target)."""
    text = str(op)
    return text[len("torch.ops."):] if text.startswith("torch.ops.") else text


def aten_of(call: str, dispatched: list[str]) -> Optional[str]:
    """The ATen op among ``dispatched`` (one call's, in order) that is the call ``call``: the one of its name
    (``aten.var.correction`` for ``torch.Tensor.var``; ``aten.__rshift__.Scalar`` for ``__rshift__``), else the ATen
    op of that name the call decomposed before dispatch (``F.layer_norm``: ``aten.layer_norm.default``, as the dynamo
    exporter's FX node has it), else the one op it dispatched that is not a copy, an alias or a size; None when it
    decomposed into several; an ATen op called directly (``aten.clamp.Tensor``) is itself."""
    if call.startswith("aten.") and call.count(".") == 2:
        return call
    name = call.rsplit(".", 1)[-1]
    bare = name.strip("_") if name.startswith("__") else name
    ops = list(dict.fromkeys(dispatched))
    own = [o for o in ops if o.split(".")[1:2] in ([name], [bare], [f"{bare}_"])]
    if own:
        return own[0]
    packet = getattr(torch.ops.aten, name, None) if not name.startswith("_") else None
    if ops and packet is not None and "default" in packet.overloads():
        return f"aten.{name}.default"       # decomposed before dispatch (F.layer_norm: native_layer_norm); its op
    work = [o for o in ops if len(o.split(".")) > 1 and o.split(".")[1] not in PLUMBING]
    return work[0] if len(work) == 1 else None
