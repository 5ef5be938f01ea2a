"""The form a parameterless activation module computes, read from the module itself: is a GELU in the
file the erf form or the tanh form the module computes?

attr_check.py compares the attributes torch.nn's own classes declare.  Other libraries' activation
modules (timm's ``GELU`` calls ``F.gelu(x)``) declare nothing: the form is in their code.  It is read
by running the module once on a fixed probe (float32, -4..4) and comparing with both forms: the two
differ by up to 2e-4 there, 100 times float32's rounding.  A file whose ``Gelu`` node computes the
other form is a drift in the file itself, which in a float16 or int8 file sits far below the layer's
precision budget (erf and tanh forms differ by 1e-4 of the value; float16 rounds at 5e-4), so only
this evidence can name it: it counts where the call's numbers fail the float32 tolerance without the
file's dtype floor (``AttrCheck.floor``; a looser tolerance they pass passes it).  Undecided (neither form within float32's rounding, or the module fails
on the probe): no evidence.
"""
from __future__ import annotations

import math
from typing import Any, Optional

from drifttui.core.prepare.plan.plan import AttrCheck

_PROBE = 257
_CLOSE = 1e-5          # the module computes a form when its values are this close to it (float32 on -4..4)
# op -> (domain, the form it computes: its attribute's value, or a fixed form)
_FORMS = {("Gelu", ""): None, ("Gelu", "ai.onnx"): None, ("Gelu", "com.microsoft"): "none",
          ("BiasGelu", "com.microsoft"): "none", ("FastGelu", "com.microsoft"): "tanh"}


def module_form(module: Any) -> Optional[str]:
    """"none" (erf) or "tanh": the GELU form ``module`` computes on the probe; None when neither."""
    import torch

    x = torch.linspace(-4.0, 4.0, _PROBE, dtype=torch.float32)
    try:
        with torch.no_grad():
            y = module(x.clone())
    except Exception:       # noqa: BLE001 - not an elementwise activation: no evidence
        return None
    if not isinstance(y, torch.Tensor) or y.shape != x.shape:
        return None
    xd, yd = x.double(), y.double()
    erf = 0.5 * xd * (1 + torch.erf(xd / math.sqrt(2.0)))
    tanh = 0.5 * xd * (1 + torch.tanh(math.sqrt(2.0 / math.pi) * (xd + 0.044715 * xd ** 3)))
    d_erf, d_tanh = float((yd - erf).abs().max()), float((yd - tanh).abs().max())
    if d_erf <= _CLOSE < d_tanh:
        return "none"
    if d_tanh <= _CLOSE < d_erf:
        return "tanh"
    return None


def node_form(node: Any) -> Optional[str]:
    """The GELU form a node computes ("none" / "tanh"), None for another op."""
    key = (node.op_type, node.domain or "")
    if key not in _FORMS:
        return None
    if _FORMS[key] is not None:
        return _FORMS[key]
    for a in getattr(node.proto, "attribute", []):
        if a.name == "approximate":
            return a.s.decode() if isinstance(a.s, bytes) else str(a.s)
    return "none"


def form_checks(index: Any, nodes: list[int], module: Any, label: str) -> list[AttrCheck]:
    """The GELU nodes among ``nodes`` that compute another form than ``module`` does (the module
    declares no ``approximate`` of its own: attr_check.py compares that one)."""
    gelus = [ni for ni in nodes if node_form(index.nodes[ni]) is not None]
    if not gelus or hasattr(module, "approximate") or any(True for _ in module.parameters()):
        return []
    want = module_form(module)
    if want is None:
        return []
    out = []
    for ni in gelus:
        node = index.nodes[ni]
        found = node_form(node)
        if found != want:
            restore = want if node.op_type == "Gelu" and (node.domain or "") in ("", "ai.onnx") else None
            out.append(AttrCheck(f"{node.op_type} node {node.name}", "approximate", repr(found),
                                 f"{label} computes the {'erf' if want == 'none' else 'tanh'} form of GELU "
                                 f"(approximate={want!r}, read from the module on a probe)", ni, restore=restore,
                                 floor=False))
    return out
