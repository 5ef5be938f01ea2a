"""Each node's attributes against what its torch module declares: is a LayerNorm's epsilon, a Conv's
padding, a LeakyReLU's slope in the file the model's?

A converter rounds weights and activations; it never changes a constant the module declares. An
epsilon, a padding, a stride, a dilation, a group count or a slope that differs from the module's is a
drift in the file itself, and like a wrong weight (qweight_check.py) it needs no activation to be seen:
in a saturating int8 file (u8s8 kernels without VNNI) every quantized layer is over its budget, and a
Conv whose padding was shifted by one row has an own error like its neighbours' (issue 33, point 8:
the origin went to the first saturating layer).  The evidence holds in every format a tool leaves the
node in (Conv, FusedConv, NCHWc Conv, ConvInteger, QLinearConv; LayerNormalization and its Skip /
Simplified fusions; LeakyRelu, QLinearLeakyRelu...), because it is read by attribute name.

Compared: the hyperparameters torch's own module classes (``torch.nn``) declare, by their ONNX
attribute names (``DECLARED``), on the nodes the module's call owns (a Conv folded with its BatchNorm
included).  A padding is compared only where the file pads the same amount in total along each axis
(a tool that folded a Pad node into the Conv changes the total; a shifted padding keeps it).  Each
difference becomes an ``AttrCheck`` of the call that computes the node; decide fails it as it fails
a weight that is not the model's (a genuine drift: no precision budget applies).
"""
from __future__ import annotations

from typing import Any, Optional

from drifttui.core.prepare.attr_probe import form_checks
from drifttui.core.prepare.plan.plan import AttrCheck

# torch module attribute -> the ONNX attribute of the node computing it
DECLARED = (("eps", "epsilon"), ("variance_epsilon", "epsilon"), ("negative_slope", "alpha"), ("alpha", "alpha"),
            ("approximate", "approximate"), ("padding", "pads"), ("stride", "strides"),
            ("dilation", "dilations"), ("groups", "group"))
_REL = 1e-4            # a float attribute is float32 in the file: equal up to its rounding


def _torch_class(module: Any) -> bool:
    """An instance of one of torch.nn's own module classes (their hyperparameters mean what ONNX's do)."""
    return any(c.__module__.startswith("torch.nn.modules") and c.__name__ != "Module" for c in type(module).__mro__)


def _spatial(value: Any, n: int) -> Optional[list[int]]:
    if isinstance(value, bool) or isinstance(value, str):
        return None
    if isinstance(value, int):
        return [value] * n
    if isinstance(value, (tuple, list)) and len(value) == n and all(isinstance(v, int) for v in value):
        return list(value)
    return None


def _differs(name: str, found: Any, declared: Any) -> Optional[str]:
    """How ``found`` (the node's) differs from ``declared`` (the module's), or None when it does not or
    cannot be compared."""
    if name == "pads":
        n = len(found) // 2
        want = _spatial(declared, n)
        if want is None or not n:
            return None
        if any(found[k] + found[k + n] != 2 * want[k] for k in range(n)):
            return None       # another total: a Pad folded in (or a padding the node does not do alone)
        return None if list(found) == want * 2 else f"{list(found)}"
    if name in ("strides", "dilations"):
        want = _spatial(declared, len(found))
        return None if want is None or list(found) == want else f"{list(found)}"
    if name == "group":
        return None if not isinstance(declared, int) or found == declared else f"{found}"
    if name == "approximate":
        text = found.decode() if isinstance(found, bytes) else str(found)
        return None if not isinstance(declared, str) or text == declared else repr(text)
    if isinstance(declared, bool) or not isinstance(declared, (int, float)) or not isinstance(found, (int, float)):
        return None
    return None if abs(found - declared) <= _REL * max(abs(declared), 1e-30) else f"{found:.6g}"


def _onnx_value(name: str, declared: Any, n: int) -> Any:
    """The module's ``declared`` value as the node's attribute ``name`` (``n``: the node's length)."""
    if name == "pads":
        return _spatial(declared, n // 2) * 2
    if name in ("strides", "dilations"):
        return _spatial(declared, n)
    if name in ("group", "approximate"):
        return declared
    return float(declared)


def _node_checks(node: Any, module: Any, label: str, ni: int) -> list[AttrCheck]:
    import onnx

    out = []
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in getattr(node.proto, "attribute", [])}
    kernel = _spatial(getattr(module, "kernel_size", None), len(attrs.get("kernel_shape", [])))
    if "kernel_shape" in attrs and kernel is not None and list(attrs["kernel_shape"]) != kernel:
        return out          # another op's node (the module's kernel is not this one)
    for torch_name, onnx_name in DECLARED:
        if onnx_name not in attrs or not hasattr(module, torch_name):
            continue
        declared = getattr(module, torch_name)
        found = _differs(onnx_name, attrs[onnx_name], declared)
        if found is not None:
            size = len(attrs[onnx_name]) if isinstance(attrs[onnx_name], (list, tuple)) else 0
            out.append(AttrCheck(f"{node.op_type} node {node.name}", onnx_name, found,
                                 f"{label}.{torch_name} = {declared!r}", ni,
                                 restore=_onnx_value(onnx_name, declared, size)))
    return out


def _weighted(index: Any, ni: int) -> bool:
    """The node reads a constant tensor of 2 dims or more (directly or through one DequantizeLinear / Cast)."""
    for name in index.nodes[ni].inputs[1:]:
        t = index.constant_tensor(name) if name else None
        if t is None and name in index.producer:
            src = index.nodes[index.producer[name]]
            t = index.constant_tensor(src.inputs[0]) if src.op_type in ("DequantizeLinear", "Cast") else None
        if t is not None and len(t.dims) >= 2:
            return True
    return False


def _producer(index: Any, value: str) -> int:
    """The node computing ``value``, through drifttui's own views (an NCHWc value read back through
    ReorderOutput: the blocked Conv before it)."""
    p = index.producer[value]
    while index.nodes[p].name.startswith("drifttui_") and index.nodes[p].inputs \
            and index.nodes[p].inputs[0] in index.producer:
        p = index.producer[index.nodes[p].inputs[0]]
    return p


def _nodes_of(index: Any, plan: Any, cm: Any, has_params: bool) -> list[int]:
    """The nodes computing a call: its own; for a module with weights, also the weighted nodes of the call
    it is folded into and the weighted node producing its mapped output (a Conv that ORT fused with the
    activation after it is owned by the activation's call).  A module without weights (a MaxPool fused
    into the quantized Conv before it) is read on its own nodes only."""
    nodes = list(cm.own)
    if not has_params:
        return nodes
    calls = [cm] + ([plan.calls[cm.folded_into]] if cm.folded_into is not None else [])
    more = [ni for c in calls[1:] for ni in c.own]
    more += [_producer(index, v) for c in calls for v in c.outputs.values() if v in index.producer]
    return nodes + [ni for ni in dict.fromkeys(more) if ni not in nodes and _weighted(index, ni)]


def attr_checks(index: Any, calls: list[Any], plan: Any, model: Any) -> dict[int, list[AttrCheck]]:
    """Call -> the attributes of its nodes that differ from its torch module's."""
    if model is None or not plan.localized:
        return {}
    mods = dict(model.named_modules())
    out: dict[int, list[AttrCheck]] = {}
    for cm in plan.calls:
        module = mods.get(calls[cm.call].module)
        if module is not None and not _torch_class(module) and cm.own and not list(module.children()):
            found = form_checks(index, list(cm.own), module, calls[cm.call].module or "(root)")
            if found:                # another library's activation: its GELU form read from the module
                out.setdefault(cm.call, []).extend(found)
        if module is None or not _torch_class(module):
            continue
        target = cm.call if cm.folded_into is None else cm.folded_into     # a Conv folded with its BatchNorm
        for ni in _nodes_of(index, plan, cm, any(True for _ in module.parameters(recurse=False))):
            checks = _node_checks(index.nodes[ni], module, calls[cm.call].module or "(root)", ni)
            if checks:
                out.setdefault(target, []).extend(checks)
    return out
