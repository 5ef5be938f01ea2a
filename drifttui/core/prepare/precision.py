"""The deployed file's precision: float16 / bfloat16 conversions and int8 quantization, per node.

Read from the graph alone (no run): a node computes in reduced precision when it outputs a
float16 / bfloat16 value (ORT's and onnxconverter-common's float16 converters: Casts at the
edges, float16 initializers), or when it is a quantized op (DynamicQuantizeLinear +
MatMulInteger / ConvInteger from ``quantize_dynamic``; QLinear* from the QOperator format;
QuantizeLinear -> DequantizeLinear pairs from the QDQ format, where the float op fed by a
DequantizeLinear computes on quantized values).

For each such node the module records what the precision budget needs (core/tolerance.py,
``budget_rtol``): the format, the depth of accumulation (the length of the sums the node
computes: K of a MatMul, Cin/groups x kernel of a Conv, the reduced axes of a reduction or a
normalisation) and, for int8, the relative rounding steps of its quantized inputs (the scale
over the dynamic range: ``scale / max|x|``; a weight's from its own int8 values, an activation's
from the file's own quantizer: 1 / max|q - zero point| on sample 0, act_levels.py).
Tolerance-free and static: computed once per prepared file.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from drifttui.core.base.dtypes import QUANT_ELEMS
from drifttui.core.onnx.graph import common_prefix, tensor_array
from drifttui.core.onnx.nbits import NBITS_OPS, bits_of, weight_step
from drifttui.core.onnx.qviews import is_view_node

FLOAT16, BFLOAT16 = 10, 16
_LOW = {FLOAT16: "float16", BFLOAT16: "bfloat16"}
LOW_NAMES = frozenset(_LOW.values())     # the reduced float types, by name
QDQ_OPS = {"QuantizeLinear", "DequantizeLinear"}
DYNAMIC_OPS = {"DynamicQuantizeLinear", "MatMulInteger", "ConvInteger", "DynamicQuantizeMatMul",
               "MatMulIntegerToFloat", "DynamicQuantizeLSTM"}
QOPERATOR_PREFIX = ("QLinear", "QGemm", "QAttention")
ACCUMULATING = {"MatMul", "Gemm", "Conv", "ConvTranspose", "MatMulInteger", "ConvInteger", "QLinearMatMul",
                "QLinearConv", "QGemm", "MatMulIntegerToFloat", "DynamicQuantizeMatMul", "Einsum",
                "DynamicQuantizeLSTM"}
REDUCING = {"ReduceSum", "ReduceMean", "ReduceSumSquare", "ReduceL2", "ReduceLogSumExp", "Softmax",
            "LogSoftmax", "LayerNormalization", "SimplifiedLayerNormalization", "GroupNormalization",
            "InstanceNormalization", "CumSum"}
# ops whose float16 initializer inputs are the model's parameters (a converter's weights), even when filled
_PARAMETER_READERS = ACCUMULATING | REDUCING | {"BatchNormalization", "PRelu"}
# the relative rounding step of an activation quantizer when it cannot be measured (act_levels.py
# measures 1 / max|q - zero point| on sample 0): 8 bits over a range that includes 0 (uint8
# [min(x,0), max(x,0)] / 255: at most 2 max|x| / 255 when the range is symmetric)
ACT_STEP_U8 = 2.0 / 255.0
ACT_STEP_I8 = 1.0 / 127.0


@dataclass(frozen=True)
class NodePrecision:
    """What one reduced-precision node costs: its format, accumulation depth, int8 steps."""

    fmt: str                 # "float16" | "bfloat16" | "int8"
    depth: int = 1           # length of the sums it computes (1: elementwise)
    act_step: float = 0.0    # int8: relative rounding step of its quantized activation input(s)
    weight_step: float = 0.0  # int8: relative rounding step of its quantized weight (scale / max|w|)


@dataclass
class PrecisionScan:
    """The file's precision, per node (node index -> NodePrecision) and as counts for the report."""

    nodes: dict[int, NodePrecision] = field(default_factory=dict)
    ops: dict[str, int] = field(default_factory=dict)     # evidence: op / initializer counts
    schemes: list[str] = field(default_factory=list)      # e.g. "float16", "int8 dynamic", "int8 QDQ"
    total: int = 0
    views: int = 0           # nodes drifttui added to read quantized values (qviews.py), not the file's
    reduced_views: int = 0   # ... of them in ``nodes`` (the QuantizeLinear back to the readers)
    levels: dict[str, int] = field(default_factory=dict)  # int8: quantized value -> max|q - zero point| on sample 0
    own: frozenset[int] = frozenset()   # QuantizeLinear / DequantizeLinear nodes that are the model's own (qat.py)
    sizes: Optional[frozenset[int]] = None   # element counts of the torch model's parameters and buffers

    @property
    def formats(self) -> list[str]:
        return sorted({p.fmt for p in self.nodes.values()})

    @property
    def reduced(self) -> bool:
        return bool(self.nodes)

    def summary(self) -> str:
        ev = ", ".join(f"{k} {v}" for k, v in sorted(self.ops.items()))
        if self.own:
            qat = (f"{len(self.own)} QuantizeLinear / DequantizeLinear nodes are the model's own fake quantisation "
                   "(QAT: PyTorch rounds to the same int8 codes, so they have no budget)")
            if not self.nodes:
                return f"{' + '.join(self.schemes)} as the model quantises it ({ev}): {qat}; held to the float32 rule"
            return f"{self._reduced_summary(ev)}; {qat}"
        if not self.nodes:
            if self.ops:
                return f"float32 weights ({ev} inside the graph: held to the float32 rule)"
            return "float32 (no reduced-precision values, no quantized ops)"
        return self._reduced_summary(ev)

    def _reduced_summary(self, ev: str) -> str:
        return (f"{' + '.join(self.schemes)}: {len(self.nodes) - self.reduced_views} of {self.total - self.views} nodes "
                f"compute in reduced precision ({ev})")


def scan(index: Any, levels: Optional[dict[str, int]] = None, own: frozenset[int] = frozenset(),
         sizes: Optional[frozenset[int]] = None) -> PrecisionScan:
    """Classify every node of ``index`` (a GraphIndex); ``levels``: the largest integer level
    |q - zero point| each quantizer's output reaches on sample 0 (act_levels.py), for the
    activations' steps (without it: the assumed 2/255 of the range); ``own``: the QuantizeLinear /
    DequantizeLinear nodes that are the model's own fake quantisation (qat.py): not reduced, and a
    float op that reads only their values computes as PyTorch does (no budget); ``sizes``: the element
    counts of the torch model's parameters and buffers (model_sizes), without which every float16
    initializer is a weight."""
    levels = levels or {}
    out = PrecisionScan(total=len(index.nodes), levels=dict(levels), own=own, sizes=sizes)
    _count_evidence(index, out)
    if not any(k.endswith(" initializers") or k in DYNAMIC_OPS or k in QDQ_OPS or k.startswith(QOPERATOR_PREFIX)
               or k in NBITS_OPS for k in out.ops):
        # Casts to float16 without float16 weights or quantized ops: not a converter's file but a
        # precision change inside the graph (the dtype check's business), held to float32's rule
        out.schemes = []
        return out
    gathered = _gathered_weights(index)
    dq_out = {o for n in index.nodes if n.op_type == "DequantizeLinear" and n.index not in gathered
              and n.index not in own for o in n.outputs}
    for node in index.nodes:
        op = node.op_type
        if node.index in gathered:      # rows of an int8 table dequantized: the table's rounding is here
            out.nodes[node.index] = NodePrecision("int8", 1, 0.0, gathered[node.index])
            continue
        if op in NBITS_OPS:             # weight-only blocks (int4): float32 activations
            out.nodes[node.index] = _nbits_node(index, node)
            continue
        if op in DYNAMIC_OPS or op.startswith(QOPERATOR_PREFIX) or op in QDQ_OPS:
            if node.index in own:       # the model's own quantisation: PyTorch rounds there too
                continue
            if op in ACCUMULATING or op.startswith(QOPERATOR_PREFIX):
                out.nodes[node.index] = _int8_node(index, node, levels)
            elif op in ("DynamicQuantizeLinear", "QuantizeLinear"):
                out.nodes[node.index] = NodePrecision("int8", 1, _act_step(index, node, levels), 0.0)
            continue
        if any(i in dq_out for i in node.inputs):       # QDQ: a float op on dequantized values
            out.nodes[node.index] = _int8_node(index, node, levels, own)
            continue
        low = _low_output(index, node)
        if low is not None:
            out.nodes[node.index] = NodePrecision(low, depth(index, node))
        elif node.op_type == "Cast":
            low_in = next((_LOW[index.elem_types[i]] for i in node.inputs if index.elem_types.get(i) in _LOW), None)
            if low_in is not None:       # widening a float16 value: exact (depth 0: no budget)
                out.nodes[node.index] = NodePrecision(low_in, 0)
    out.reduced_views = sum(1 for k in out.nodes if is_view_node(index.nodes[k]))
    return out


def _gathered_weights(index: Any) -> dict[int, float]:
    """DequantizeLinear nodes of rows gathered from an int8 initializer (quantize_dynamic quantizes
    an embedding table so: Gather on the int8 table, then DequantizeLinear) -> the table's step."""
    out: dict[int, float] = {}
    for n in index.nodes:
        if n.op_type != "DequantizeLinear" or not n.inputs:
            continue
        p = index.producer.get(n.inputs[0])
        if p is None or index.nodes[p].op_type != "Gather" or not index.nodes[p].inputs:
            continue
        src = _quantized_source(index, index.nodes[p].inputs[0], {})
        if src is not None and src[0] == "weight":
            out[n.index] = src[1]
    return out


def model_sizes(model: Any) -> Optional[frozenset[int]]:
    """The element counts of a torch module's parameters and buffers (None for anything else)."""
    try:
        return frozenset(t.numel() for t in (*model.parameters(), *model.buffers()))
    except AttributeError:
        return None


def _count_evidence(index: Any, out: PrecisionScan) -> None:
    ops: dict[str, int] = {}
    for n in index.nodes:
        op = n.op_type
        if is_view_node(n):
            out.views += 1      # drifttui's own views of a QOperator file's integers: not the file's evidence
            continue
        if op in DYNAMIC_OPS or op in QDQ_OPS or op.startswith(QOPERATOR_PREFIX) or op in NBITS_OPS:
            ops[op] = ops.get(op, 0) + 1
        elif op == "Cast":
            to = next((a.i for a in n.proto.attribute if a.name == "to"), 0)
            if to in _LOW:
                key = f"Cast to {_LOW[to]}"
                ops[key] = ops.get(key, 0) + 1
    for name, t in index.initializers.items():
        if t.data_type in _LOW:
            key = f"{_LOW[t.data_type]} {_initializer_kind(index, name, t, out.sizes)}"
            ops[key] = ops.get(key, 0) + 1
    out.ops = ops
    if any(k.startswith(("Cast to float16", "float16")) for k in ops):
        out.schemes.append("float16")
    if any(k.startswith(("Cast to bfloat16", "bfloat16")) for k in ops):
        out.schemes.append("bfloat16")
    if any(k in DYNAMIC_OPS for k in ops):
        out.schemes.append("int8 dynamic (quantize_dynamic)")
    for b in sorted({bits_of(n) for n in index.nodes if n.op_type in NBITS_OPS}):
        out.schemes.append(f"int{b} weight-only (MatMulNBits)")
    if any(k.startswith(QOPERATOR_PREFIX) for k in ops):
        out.schemes.append("int8 QOperator")
    if any(n.op_type == "DequantizeLinear" and not is_view_node(n) and any(index.consumers.get(o) for o in n.outputs)
           for n in index.nodes):     # a QOperator file's last DequantizeLinear feeds a graph output only
        out.schemes.append("int8 QDQ")


def _initializer_kind(index: Any, name: str, t: Any, sizes: Optional[set] = None) -> str:
    """What a float16 / bfloat16 initializer is evidence of.  A one-element constant is a Python number the exporter
    typed as the model's float16 tensor (``x.half() + 8.0``); one the size of none of the model's tensors (``sizes``)
    is a value of the forward the exporter folded (the model's float32 constant repeated over the batch and cast:
    StyleGAN's ``const.repeat(n, ...).to(float16)``, batch 48B); a tensor of one repeated value is a fill the model
    made in float16 (``torch.full(..., -inf, dtype=half)``, ``zeros_like``: the dynamo exporter stores them as
    initializers, TorchScript as Constant nodes, batch 48A): evidence, but none of a converter's file (its converted
    weights are "initializers").  With the model's sizes known, a fill the size of one of its tensors is that tensor
    cast (a weight of ones, ``self.weight.half()``, forms40k's RMSNorm): a fill is told by its value only without
    them."""
    if math.prod(t.dims) == 1:
        return "scalar constants"
    if sizes is not None:
        return "folded values" if math.prod(t.dims) not in sizes else "initializers"
    readers = {index.nodes[i].op_type for i in index.consumers.get(name, [])}
    if readers & _PARAMETER_READERS:     # a weight or a norm's scale / shift (a fresh LayerNorm's ones and zeros)
        return "initializers"
    a = tensor_array(index, name)
    if a is not None and a.size and bool(np.all((a == a.flat[0]) | (np.isnan(a) & np.isnan(a.flat[0])))):
        return "filled constants"
    return "initializers"


def _low_output(index: Any, node: Any) -> Optional[str]:
    for o in node.outputs:
        name = _LOW.get(index.elem_types.get(o, 0))
        if name is not None:
            return name
    for i in node.inputs:
        t = index.constant_tensor(i)
        if t is not None and t.data_type in _LOW:
            return _LOW[t.data_type]
    return None


def depth(index: Any, node: Any) -> int:
    """The length of the sums ``node`` computes (1 for an elementwise op), from shapes and weights."""
    op = node.op_type
    try:
        if op in ("Conv", "ConvTranspose", "ConvInteger"):
            w = _shape(index, node.inputs[1])
            return max(1, int(np.prod(w[1:]))) if w else 1
        if op == "QLinearConv":
            w = _shape(index, node.inputs[3])
            return max(1, int(np.prod(w[1:]))) if w else 1
        if op in ("MatMul", "MatMulInteger", "MatMulIntegerToFloat", "DynamicQuantizeMatMul"):
            a = _shape(index, node.inputs[0])
            return _pos(a[-1]) if a else 1
        if op == "QLinearMatMul":
            a = _shape(index, node.inputs[0])
            return _pos(a[-1]) if a else 1
        if op in ("Gemm", "QGemm"):
            a = _shape(index, node.inputs[0])
            trans = next((x.i for x in node.proto.attribute if x.name == "transA"), 0)
            return _pos(a[0 if trans else -1]) if a else 1
        if op in REDUCING:
            a = _shape(index, node.inputs[0])
            axis = next((x.i for x in node.proto.attribute if x.name == "axis"), -1)
            if not a:
                return 1
            if op in ("LayerNormalization", "SimplifiedLayerNormalization"):
                return max(1, int(np.prod([_pos(d) for d in a[axis:]])))
            if op.startswith("Reduce"):
                return max(1, int(np.prod([_pos(d) for d in a])) // max(1, _numel(index, node.outputs[0])))
            return _pos(a[axis])
    except (IndexError, TypeError, ValueError):
        return 1
    return 1


def _pos(d: Any) -> int:
    return int(d) if isinstance(d, int) and d > 0 else 1


def _numel(index: Any, name: str) -> int:
    s = _shape(index, name)
    return int(np.prod([_pos(d) for d in s])) if s else 1


def _shape(index: Any, name: str) -> list[Any]:
    if name in index.initializers:
        return list(index.initializers[name].dims)
    return list(index.shapes.get(name, []))


def _nbits_node(index: Any, node: Any) -> NodePrecision:
    """A MatMulNBits node: depth K, its weight's block step, no activation rounding."""
    arrays = {i: a for i in node.inputs[1:4] if i and (a := tensor_array(index, i)) is not None}
    k = next((a.i for a in node.proto.attribute if a.name == "K"), 1)
    return NodePrecision(f"int{bits_of(node)}", max(1, k), 0.0, weight_step(node, arrays))


def _int8_node(index: Any, node: Any, levels: dict[str, int], own: frozenset[int] = frozenset()) -> NodePrecision:
    """An int8 compute node: its depth, and the rounding steps of its quantized inputs (not those the model's own
    quantisation rounded, ``own``: PyTorch computes on the same values)."""
    act, wt = 0.0, 0.0
    op = node.op_type
    if op.startswith(QOPERATOR_PREFIX):
        data = [node.inputs[k] for k in (0, 3) if k < len(node.inputs)]
    elif op in DYNAMIC_OPS:
        data = node.inputs[:2]
    else:                      # a float op of the QDQ format: its dequantized inputs
        data = [i for i in node.inputs if index.producer.get(i) is not None
                and index.nodes[index.producer[i]].op_type == "DequantizeLinear" and index.producer[i] not in own]
    for name in data:
        src = _quantized_source(index, name, levels)
        if src is None:
            continue
        kind, step = src
        if kind == "weight":
            wt = max(wt, step)
        else:
            act = max(act, step)
    return NodePrecision("int8", depth(index, node), act or ACT_STEP_U8, wt)


def _quantized_source(index: Any, name: str, levels: dict[str, int]) -> Optional[tuple[str, float]]:
    """('weight', scale/max|w|) for an int8 initializer (directly or through a DequantizeLinear),
    ('act', step) for a value a quantizer made at run time; None for anything else."""
    p = index.producer.get(name)
    if p is not None and index.nodes[p].op_type == "DequantizeLinear":
        name = index.nodes[p].inputs[0]
        p = index.producer.get(name)
    t = index.constant_tensor(name)
    if t is not None and t.data_type in QUANT_ELEMS:        # (u)int8, (u)int16, (u)int4
        q = np.asarray(tensor_array(index, name)).astype(np.int64)
        zp = 128 if t.data_type == 2 else 0     # uint8 weights are stored around 128
        m = int(np.max(np.abs(q - zp))) if q.size else 0
        return ("weight", 1.0 / m) if m else None
    if p is not None and index.nodes[p].op_type in ("DynamicQuantizeLinear", "QuantizeLinear"):
        return ("act", _act_step(index, index.nodes[p], levels))
    if p is not None and index.nodes[p].op_type.startswith(QOPERATOR_PREFIX):     # a QOperator output
        return ("act", 1.0 / levels[name] if levels.get(name) else ACT_STEP_U8)
    return None


def _act_step(index: Any, node: Any, levels: dict[str, int]) -> float:
    """Relative rounding step of an activation quantizer: its scale over the largest value it
    dequantizes to on sample 0, scale / (scale * max|q - zp|) = 1 / max|q - zp| (the file's own
    static scale, or the one DynamicQuantizeLinear computes from the tensor's min/max); without a
    measured level, assumed: uint8 over a range that holds 0 (2/255), or int8 (1/127)."""
    level = levels.get(node.outputs[0]) if node.outputs else None
    if level:
        return 1.0 / level
    if node.op_type == "QuantizeLinear" and len(node.inputs) > 2:
        zp = index.constant_tensor(node.inputs[2])
        if zp is not None and zp.data_type == 3:
            return ACT_STEP_I8
    return ACT_STEP_U8


def rescope_quantizers(index: Any) -> int:
    """A DynamicQuantizeLinear quantizes the input of the op it feeds (``quantize_dynamic`` puts it
    after the producer, named or scoped like it): give it its consumers' common scope, so that the
    producer's module keeps its float output as its boundary value.  Returns how many moved."""
    moved = 0
    for node in index.nodes:
        if node.op_type != "DynamicQuantizeLinear":
            continue
        scopes = [index.nodes[c].scope for o in node.outputs for c in index.consumers.get(o, [])
                  if index.nodes[c].scope is not None]
        if not scopes:
            continue
        prefix = common_prefix(scopes)
        if prefix != node.scope:
            node.scope = prefix
            moved += 1
    return moved
