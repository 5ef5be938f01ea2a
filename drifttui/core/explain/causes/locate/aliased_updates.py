"""In-place updates made through a view, found in the origin module's torch program (issue 30 point 6).

The TorchScript exporter traces the module and keeps only the data flow it sees: an in-place op on a
view of a tensor (``y.view(b, 4, -1)[:, 0] *= 3``, ``part = y[:, 8:]; part += 2``,
``y.narrow(1, 4, 8).copy_(...)``) changes the base through aliasing, which the trace may not carry
back; a view read after its base was updated in place (``head = y[:, :16]; y.mul_(0.5)``) may be read
before the update.  torch.export / the dynamo exporter functionalize both (``slice_scatter``,
``select_scatter``) and are right.  ``make_fx`` without functionalization shows each such op: an
in-place ATen op (``aten.mul_``) whose target is the output of a view op, or whose target has a view
taken before it and read after it.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Optional

import torch
import torch.fx.traceback as fx_traceback
from torch.fx.experimental.proxy_tensor import make_fx
from torch.overrides import TorchFunctionMode

from drifttui.core.explain.causes.locate.call_structure import as_called
from drifttui.core.explain.causes.locate.case import Case, call_io
from drifttui.core.explain.causes.locate.torch_call import call_name
from drifttui.core.explain.causes.locate.torch_program import target_name
from drifttui.core.model.export import quiet

VIEW_OPS = {"view", "_unsafe_view", "select", "slice", "narrow", "transpose", "t", "permute", "unsqueeze",
            "squeeze", "expand", "as_strided", "diagonal", "unfold", "alias", "reshape", "unbind", "split",
            "chunk", "movedim", "view_as", "split_with_sizes", "flatten", "unflatten"}


_USER = "drifttui_user_call"            # node.meta["custom"][_USER]: the user-level torch call that made it (torch_call)
_AUGMENTED = {"__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__",
              "__ipow__", "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__"}


class _UserCalls(TorchFunctionMode):
    """Labels each node make_fx records with the torch call the forward made (``Tensor.copy_``, ``F.pad``): a
    library function's own in-place ops (``F.pad(mode="circular")`` fills a new buffer with ``copy_``) are
    its implementation, not the user's update (the calls inside a call are not seen by the mode)."""

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
        with fx_traceback.annotate({_USER: call_name(func)}):
            return func(*args, **(kwargs or {}))


class LostUpdate(NamedTuple):
    """An in-place update through a view: in words, and the forward's call that made it (with its ATen op)."""
    words: str                  # torch.Tensor.copy_ through torch.Tensor.narrow (aten.copy_ through aten.slice)
    call: Optional[str]         # torch.Tensor.copy_ (None when make_fx's nodes carry no call)
    aten: str                   # aten.copy_


def _user(node: Any) -> Optional[str]:
    return (node.meta.get("custom") or {}).get(_USER)


def _by_user(node: Any) -> bool:
    """The in-place node was the forward's own in-place call (a method ending in ``_``, ``x[i] = v``,
    ``x += v``), not a step inside a library function; True when the call is not known."""
    full = _user(node)
    name = None if full is None else full.rsplit(".", 1)[-1]
    return name is None or name in _AUGMENTED or (name.endswith("_") and not name.startswith("_"))


def _op(node: Any) -> str:
    """``aten.mul_`` for ``aten.mul_.Tensor``."""
    parts = target_name(str(node.target)).split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else parts[0]


def _is_view(node: Any) -> bool:
    return node.op == "call_function" and _op(node).split(".")[-1] in VIEW_OPS


def _in_place(node: Any) -> bool:
    name = _op(node).split(".")[-1]
    return node.op == "call_function" and name.endswith("_") and not name.startswith("_") and bool(node.args)


def _flat(args: Any) -> list[Any]:
    out: list[Any] = []
    for a in args if isinstance(args, (list, tuple)) else [args]:
        out.extend(_flat(a) if isinstance(a, (list, tuple)) else [a])
    return out


def _chain(node: Any) -> list[Any]:
    """The view nodes ``node`` was taken through, innermost first."""
    out: list[Any] = []
    while _is_view(node) and node.args and hasattr(node.args[0], "op"):
        out.append(node)
        node = node.args[0]
    return out


def _said(op: Any, views: list[Any], how: str) -> str:
    """``aten.copy_ through aten.slice``, or, where the nodes carry the forward's calls, those first:
    ``torch.Tensor.copy_ through torch.Tensor.narrow (aten.copy_ through aten.slice)``."""
    aten = how.format(_op(op), " of ".join(_op(v) for v in views))
    calls = [_user(op)] + list(dict.fromkeys(_user(v) for v in views))
    if any(c is None for c in calls):
        return aten
    return f"{how.format(calls[0], ' of '.join(c for c in calls[1:] if c))} ({aten})"


def lost_update(gm: Any) -> Optional[LostUpdate]:
    """The first in-place update through a view in ``gm``'s graph, or None."""
    nodes = [n for n in gm.graph.nodes if n.op == "call_function"]
    order = {n: k for k, n in enumerate(nodes)}
    for k, n in enumerate(nodes):
        if not _in_place(n) or not hasattr(n.args[0], "op") or not _by_user(n):
            continue
        target = n.args[0]
        if _is_view(target):
            return LostUpdate(_said(n, _chain(target), "{} through {}"), _user(n), _op(n))
        for v in target.users:     # a view of the target taken before the update and read after it
            if v is not n and _is_view(v) and order.get(v, k) < k and \
                    any(order.get(u, -1) > k for u in v.users):
                return LostUpdate(_said(n, [v], "{} on a tensor whose view ({}) is read after it"), _user(n), _op(n))
    return None


def describe(gm: Any) -> Optional[str]:
    """The first in-place update through a view in ``gm``'s graph, in words, or None."""
    found = lost_update(gm)
    return None if found is None else found.words


def aliased_update(ctx: Any, case: Case) -> Optional[LostUpdate]:
    """The origin's first in-place update through a view (``lost_update``), None when it has none or
    make_fx cannot trace it; one per module (ctx.cache)."""
    key = f"causes:aliased:{case.module}"
    if key in ctx.cache:
        return ctx.cache[key]
    ctx.cache[key] = None
    module = ctx.modules().get(case.module) if case.module else ctx.model
    io = call_io(ctx, case)
    if module is None or io is None:
        return None
    plain = [t.clone() if isinstance(t, torch.Tensor) and t.is_inference() else t for t in io[0]]
    forward = as_called(ctx, case.call, module, ctx.sample(case.sample))

    def labelled(*args: Any) -> Any:
        with _UserCalls():
            return forward(*args)
    try:
        with quiet(), torch.no_grad(), fx_traceback.preserve_node_meta():
            gm = make_fx(labelled)(*plain)
    except Exception:  # noqa: BLE001 - a module make_fx cannot trace: no story of this kind
        return None
    ctx.cache[key] = lost_update(gm)
    return ctx.cache[key]
