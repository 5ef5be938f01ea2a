"""The torch op a candidate patch's story names is the one the model called.

A catalogue candidate recognises an ONNX pattern (an integer ``Div``), and its story names the torch
op that usually lowers to it (``//``, floor_divide).  Another torch op can lower to the same pattern
(``>>`` on a signed integer: the TorchScript exporter divides by ``2**n``).  ``name_torch_ops`` reads
the origin's torch program (``fx_localise.torch_calls``: torch.export of the origin module, cached)
and re-tells such a patch by the op that was called, with the class of its mechanism: the
exporter's lowering of that op.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from drifttui.core.onnx.edit.patches import Patch

# rewrite -> ((aten prefixes of the usual op), [({aten prefix of another op: its call}, torch spelling, story, fix)])
_OTHERS = {
    "floor_div": (("aten.floor_divide", "aten.div"), [
        ({"aten.__rshift__": "torch.Tensor.__rshift__", "aten.bitwise_right_shift": "torch.bitwise_right_shift",
          "aten.rshift": "torch.Tensor.__rshift__"}, ">> (bitwise_right_shift)",
         "the exporter lowers torch's >> on a signed integer as a division by 2**n, which truncates towards zero "
         "where torch's arithmetic shift floors (off by one for negative values)",
         "export with --exporter dynamo (it lowers the shift with the sign handled), or write "
         "torch.div(x, 2 ** n, rounding_mode='floor') in the forward; `drifttui repair` applies the floor division"),
    ]),
}


def name_torch_ops(patches: list[Patch], calls: Callable[[str], list[Any]]) -> list[Patch]:
    """``patches`` with each catalogue story re-told by the torch op called (``calls(prefix)``: the
    origin's torch program's calls of that target); a patch whose op the program does not hold keeps
    its story."""
    out = []
    for p in patches:
        entry = _OTHERS.get(_rewrite(p.spec))
        if entry is None:
            out.append(p)
            continue
        usual, others = entry
        if any(calls(prefix) for prefix in usual):
            out.append(p)
            continue
        for prefixes, spelled, story, fix in others:
            hit = next((prefix for prefix in prefixes if calls(prefix)), None)
            if hit is not None:     # the finding names that call too (not the op a value alignment gives the nodes)
                node = p.nodes[0] if p.nodes else ""
                p = dataclasses.replace(p, check="lowering", why=f"{node}: {story} (torch called {spelled}, not //)",
                                        fix=fix, torch_op=(prefixes[hit], hit))
                break
        out.append(p)
    return out


def _rewrite(spec: dict) -> str:
    """The patch's rewrite; a sequence's, when every step is that one rewrite (the floor division at every
    integer ``Div``: ``int_sites.every_int_div``)."""
    steps = spec.get("patches") if spec.get("op") == "sequence" else None
    if steps:
        kinds = {s.get("rewrite", "") if s.get("op") == "rewrite" else "" for s in steps}
        return kinds.pop() if len(kinds) == 1 else ""
    return spec.get("rewrite", "")
