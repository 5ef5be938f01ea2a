"""Conv+BatchNorm folding, decided by graph structure (never by a node or value name).

TorchScript folds a BatchNorm into the preceding Conv and keeps the *Conv's* node name: the
Conv module then owns one node that computes the BatchNorm's value, and the BatchNorm owns
none.  The value moves to the BatchNorm only when the structure says so:

- the BatchNorm owns no node itself (its children, an activation, may);
- in PyTorch, the BatchNorm's input is exactly the Conv call's output;
- the Conv call is a leaf (no child call claims the value) and computes the value in one
  linear node (Conv / ConvTranspose / Gemm / MatMul) fed from outside its scope;
- that node does not read the Conv's own parameters (it carries the folded weight) and the
  value has the BatchNorm output's shape;
- no other call is paired with the value.

A module with parameters and no node of its own whose output feeds a call owning a linear
node that reads the module's *input* value (the dynamo exporter gives the folded Conv node the
BatchNorm's scope, e.g. timm's ``BatchNormAct2d``) is ``fused`` into that call.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Optional

import numpy as np

from drifttui.core.runtime.torch_hooks import Call
from drifttui.core.onnx.graph import GraphIndex
from drifttui.core.prepare.plan.plan import Plan
from drifttui.core.result import FUSED, OK, UNMAPPED


LINEAR_OPS = {"Conv", "ConvTranspose", "Gemm", "MatMul", "ConvInteger", "QLinearConv"}


def _children(calls: list[Call]) -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for c in calls:
        if c.parent is not None:
            kids.setdefault(c.parent, []).append(c.index)
    return kids


def innermost(calls: list[Call], where: Optional[tuple[int, int]]) -> Optional[tuple[int, int]]:
    """The call that made a tensor, through the containers that hand it on unchanged (timm's deep stem: a
    Sequential whose last Conv's output the next BatchNorm reads, outside it)."""
    seen = 0
    while where is not None and where[0] < len(calls) and where[1] < len(calls[where[0]].outputs) and seen < 64:
        inner = calls[where[0]].outputs[where[1]].inner
        if inner is None:
            break
        where, seen = inner, seen + 1
    return where


def _static(index: GraphIndex, value: str, depth: int = 0) -> bool:
    """An initializer or constant, or computed from those only (``Identity(weight)``)."""
    if index.is_static(value):
        return True
    p = index.producer.get(value)
    if p is None or depth > 8:
        return False
    return all(_static(index, v, depth + 1) for v in index.nodes[p].inputs if v)


def _weights(index: GraphIndex, values: list[str], depth: int = 0) -> set[str]:
    """The initializers a node reads, directly or through static nodes."""
    out: set[str] = set()
    for v in values:
        if v in index.initializers or v in index.constant_values:
            out.add(v)
        elif depth < 8 and (p := index.producer.get(v)) is not None and _static(index, v):
            out |= _weights(index, index.nodes[p].inputs, depth + 1)
    return out


def _claimed(calls: list[Call], plan: Plan, value: str, conv: int) -> bool:
    """Another call (not the Conv, nor a container enclosing it) is paired with ``value``."""
    enclosing = {conv}
    p = calls[conv].parent
    while p is not None:
        enclosing.add(p)
        p = calls[p].parent
    return any(v == value for cm in plan.calls if cm.call not in enclosing for v in cm.outputs.values())


def _folded_value(index: GraphIndex, calls: list[Call], plan: Plan, bn: int, kids: dict[int, list[int]],
                  has_params: dict[str, bool]) -> Optional[tuple[int, int, str]]:
    """(conv call, its output position, value) when ``bn``'s value sits in the Conv's node."""
    call = calls[bn]
    if plan.calls[bn].own or not has_params.get(call.module) or not call.inputs or not call.outputs:
        return None     # the BatchNorm has a node of its own (or nothing to fold)
    prod = innermost(calls, call.inputs[0].producer)
    if prod is None:
        return None
    conv_i, pos = prod
    src, src_call = plan.calls[conv_i], calls[conv_i]
    value = src.outputs.get(pos)
    if value is None or kids.get(conv_i) or len(src.outputs) != 1:
        return None
    p = index.producer.get(value)
    if p is None or p not in src.own or index.nodes[p].op_type not in LINEAR_OPS:
        return None
    node = index.nodes[p]
    inside = set(src.nodes)
    if any(index.producer.get(v) in inside for v in node.inputs if v and not _static(index, v)):
        return None     # computed from values of the Conv's own nodes: not one folded node
    own_params = {n for n, kind, _, _ in src_call.params if kind == "parameter"}
    if not own_params or own_params & _weights(index, node.inputs):
        return None     # the node reads the Conv's own weight: nothing was folded into it
    shape = index.shapes.get(value)
    if shape is not None and len(shape) != len(call.outputs[0].shape):
        return None
    if any(isinstance(a, int) and a != b for a, b in zip(shape or [], call.outputs[0].shape)):
        return None
    if _claimed(calls, plan, value, conv_i):
        return None
    return conv_i, pos, value


@dataclass(frozen=True)
class Fold:
    """A TorchScript Conv+BatchNorm fold: the Conv's node computes ``value``, the BatchNorm's output."""

    conv: int
    bn: int
    value: str


def torchscript_folds(index: GraphIndex, calls: list[Call], plan: Plan, has_params: dict[str, bool]) -> Iterator[Fold]:
    """The folded Conv+BN nodes whose value moves from the Conv to the BatchNorm (structure checks
    above), one at a time: build_plan applies each before the next is looked for."""
    kids = _children(calls)
    for cm in plan.calls:
        found = _folded_value(index, calls, plan, cm.call, kids, has_params)
        if found is None:
            continue
        conv_i, _pos, value = found
        if cm.nodes and not any(c in cm.nodes for c in index.consumers.get(value, [])):
            continue    # the BatchNorm's children (its activation) have nodes: the folded value must feed them
        yield Fold(conv_i, cm.call, value)


def fused_into(index: GraphIndex, calls: list[Call], plan: Plan, ci: int) -> Optional[int]:
    """The call a node-less module with parameters was folded into (dynamo): structure only.

    Its output feeds call Q; Q owns a linear node reading the value that carries this module's
    input (or the graph input it came from).
    """
    call = calls[ci]
    if not call.inputs:
        return None
    ref = call.inputs[0]
    source: Optional[str] = None
    if ref.producer is not None:
        source = plan.calls[ref.producer[0]].outputs.get(ref.producer[1])
    elif plan.calls[ci].inputs.get(0):
        source = plan.calls[ci].inputs[0]
    if source is None and ref.producer is None and len(index.graph_inputs) == 1:
        source = index.graph_inputs[0]
    if source is None:
        return None
    readers = {index.nodes[c].index for c in index.consumers.get(source, [])
               if index.nodes[c].op_type in LINEAR_OPS}
    for q in calls:
        if q.index == ci or not any(innermost(calls, r.producer) == (ci, 0) for r in q.inputs):
            continue
        if readers & set(plan.calls[q.index].nodes) and plan.calls[q.index].status == OK:
            return q.index
    return None


def _encloses(calls: list[Call], outer: int, ci: Optional[int]) -> bool:
    while ci is not None:
        if ci == outer:
            return True
        ci = calls[ci].parent
    return False


def containers_of_folds(calls: list[Call], plan: Plan) -> None:
    """A container whose output is the very tensor of a call folded into a node outside it (timm's ResNet-D deep
    stem: ``conv1``, a Sequential whose last Conv is folded with the ``bn1`` after it) has no value of its own
    either: the file never computes the Conv's output.  It is fused like that call, into the same node, and keeps no
    output (it was unmapped, or paired with another value of the file).  Structure only: the tensor identity the
    hooks saw (``TensorRef.inner``) and the inner call's fold."""
    for cm in plan.calls:
        call = calls[cm.call]
        if cm.status not in (OK, UNMAPPED) or len(call.outputs) != 1:
            continue
        maker = innermost(calls, (cm.call, 0))
        if maker is None or maker[0] == cm.call:
            continue
        inner = plan.calls[maker[0]]
        into = inner.folded_into
        if inner.status != FUSED or into is None or _encloses(calls, cm.call, into):
            continue
        cm.outputs, cm.status, cm.folded_into = {}, FUSED, into
        cm.note = (f"its output is {calls[maker[0]].module}'s, which the file computes folded into "
                   f"{calls[into].module or '(root)'}'s node: no value of its own (its calls inside are compared)")


def bn_scale(bn: Any) -> Any:
    """The per-channel factor an eval-mode BatchNorm multiplies by, gamma / sqrt(var + eps), in float64
    (gamma = 1 for a BatchNorm without affine weights): the one fold arithmetic's scale."""
    var = bn.running_var.detach().double()
    gamma = bn.weight.detach().double() if getattr(bn, "weight", None) is not None else var.new_ones(var.shape)
    return gamma / (var + bn.eps).sqrt()


def fold_conv_bn(conv: Any, bn: Any) -> tuple[np.ndarray, np.ndarray]:
    """The Conv weight and bias that absorb an eval-mode BatchNorm (float64, then float32)."""
    w = conv.weight.detach().double()
    b = conv.bias.detach().double() if conv.bias is not None else w.new_zeros(w.shape[0])
    scale = bn_scale(bn)
    shape = [-1] + [1] * (w.ndim - 1)
    wf = w * scale.reshape(shape)
    beta = bn.bias.detach().double() if getattr(bn, "bias", None) is not None else scale.new_zeros(scale.shape)
    bf = (b - bn.running_mean.detach().double()) * scale + beta
    return wf.float().numpy(), bf.float().numpy()


def conv_bn_folds(model: Any, calls: list[Call]) -> Iterator[tuple[Call, Call, Any, Any]]:
    """(Conv call, BatchNorm call, conv, bn) of each eval-mode BatchNorm an exporter can fold into the Conv
    called right before it: the BatchNorm reads exactly that Conv's output (its producer, when the trace
    knows it) and normalises as many channels as the Conv makes.  Call order alone is not a fold: in a
    DenseNet each layer's last Conv (growth-rate channels) is followed by the next layer's BatchNorm of the
    concatenation (all the channels so far)."""
    import torch

    mods = dict(model.named_modules()) if isinstance(model, torch.nn.Module) else {}
    for prev, call in zip(calls, calls[1:]):
        conv, bn = mods.get(prev.module), mods.get(call.module)
        if not isinstance(bn, torch.nn.modules.batchnorm._BatchNorm) \
                or not isinstance(conv, torch.nn.modules.conv._ConvNd):
            continue
        if bn.training or bn.running_var is None or bn.num_features != conv.out_channels:
            continue
        producer = innermost(calls, call.inputs[0].producer) if call.inputs else None
        if producer is not None and producer[0] != prev.index:
            continue
        yield prev, call, conv, bn
