"""Graph edit: a float16 / bfloat16 ``LSTM`` / ``GRU`` / ``RNN`` node computed as torch's CPU cell computes it
(``causes/propose/numerics/half_recurrence.py``).

ONNX Runtime has no float16 recurrent kernel: it runs the node through float32 Casts, so the state stays in float32
over every step.  torch's float16 CPU layer rounds each op of each step to float16: the input projection of the whole
sequence (a 3-D ``matmul``, rounded, then ``+ b_ih``, rounded), the recurrent projection ``linear(h, R, b_hh)``
(rounded once), their sum, each gate's activation, and the state update op by op (LSTM: ``f * c``, ``i * g``, their
sum, ``tanh(c)``, ``o * tanh(c)``; GRU: ``hn * r``, ``in + .``, ``h - n``, ``. * z``, ``. + n``).  ``half_recurrence``
replaces the node by that computation in float32 with each of those results rounded to float16's precision (``round``),
one ``Scan`` per direction over the steps (a reverse direction scans
backwards); its outputs are Cast back to the node's type under their own names.  No ``sequence_lens``, peepholes,
``clip`` or activations other than torch's.  Spec: ``node``.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from drifttui.core.onnx.edit.rewriting import find_node, input_dtype, replace_with

FLOAT = 1
LOW = {np.dtype("float16"): 10}
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
SPLIT = 2.0 ** 13 + 1      # float32's 24 bits split into float16's 11 and 13


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def elem_dtype(model: Any, value: str) -> Any:
    """The numpy dtype of ``value``, from the file's annotations or, for an intermediate without one, shape
    inference."""
    import onnx

    if any(vi.name == value for vi in [*model.graph.input, *model.graph.value_info, *model.graph.output]) or \
            any(t.name == value for t in model.graph.initializer):
        return np.dtype(input_dtype(model, value))
    try:
        return np.dtype(input_dtype(onnx.shape_inference.infer_shapes(model), value))
    except Exception:  # noqa: BLE001 - no type known: not a low-precision node
        return np.dtype("float32")


def _check(model: Any, node: Any, attrs: dict[str, Any]) -> int:
    """The low type's ONNX elem of ``node``'s input; ValueError for a node torch's cell does not compute."""
    low = LOW.get(elem_dtype(model, node.input[0]))
    if low is None:
        raise ValueError(f"{node.name} is not a float16 {node.op_type}")
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset < 13:
        raise ValueError("opset below 13")
    if (len(node.input) > 4 and node.input[4]) or (len(node.input) > 7 and node.input[7]):
        raise ValueError(f"{node.name} reads sequence_lens or peepholes")
    acts = [a.decode() if isinstance(a, bytes) else a for a in attrs.get("activations", [])]
    want = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"], "RNN": ["Tanh"]}[node.op_type]
    if "clip" in attrs or attrs.get("input_forget", 0) or attrs.get("layout", 0) or \
            (acts and acts[:len(want)] != want and not (node.op_type == "RNN" and acts[:1] == ["Relu"])):
        raise ValueError(f"{node.name} computes otherwise than torch's cell")
    if node.op_type == "GRU" and not attrs.get("linear_before_reset", 0):
        raise ValueError(f"{node.name} is not torch's GRU (linear_before_reset=0)")
    return low


class _Builder:
    """Nodes and constants of one graph (the outer one, or a Scan body), named under ``p``."""

    def __init__(self, p: str, low: int) -> None:
        self.p, self.low, self.nodes, self.k = p, low, [], 0

    def op(self, kind: str, ins: list[str], **attrs: Any) -> str:
        from onnx import helper

        self.k += 1
        out = f"{self.p}/{kind.lower()}{self.k}"
        self.nodes.append(helper.make_node(kind, ins, [out], name=out, **attrs))
        return out

    def const(self, value: Any, dtype: Any = np.int64) -> str:
        from onnx import helper, numpy_helper

        self.k += 1
        out = f"{self.p}/c{self.k}"
        self.nodes.append(helper.make_node("Constant", [], [out], name=out,
                                           value=numpy_helper.from_array(np.asarray(value, dtype), out)))
        return out

    def round(self, v: str) -> str:
        """``v`` rounded to float16's 11 significant bits in float32 arithmetic (Veltkamp's split: ``s - (s - v)``,
        ``s = v * (2**13 + 1)``): a Cast pair inside a Scan body crashes ONNX Runtime's optimizers at level all
        (its NchwcTransformer).  float16's subnormal range (below 6.1e-5) keeps 11 bits where float16 keeps fewer: an
        absolute difference below 3e-8."""
        s = self.op("Mul", [v, self.const(SPLIT, np.float32)])
        return self.op("Sub", [s, self.op("Sub", [s, v])])

    def cols(self, v: str, k: int, hidden: int) -> str:
        """Columns ``k * hidden`` .. ``(k + 1) * hidden`` of the last axis."""
        return self.op("Slice", [v, self.const([k * hidden]), self.const([(k + 1) * hidden]), self.const([-1])])


def _cell(b: _Builder, kind: str, act: str, ig: str, h: str, c: Optional[str], rt: str, rb: str,
          hidden: int) -> tuple[str, Optional[str]]:
    """One step of torch's float16 cell on float32 values rounded as torch rounds them: (h', c')."""
    hg = b.round(b.op("Add", [b.op("MatMul", [h, rt]), rb]))          # linear(h, R, b_hh): one rounding
    if kind == "GRU":
        ir, iz, inn = (b.cols(ig, k, hidden) for k in (1, 0, 2))       # ONNX's gate order: z, r, h
        hr, hz, hn = (b.cols(hg, k, hidden) for k in (1, 0, 2))
        r = b.round(b.op("Sigmoid", [b.round(b.op("Add", [hr, ir]))]))
        z = b.round(b.op("Sigmoid", [b.round(b.op("Add", [hz, iz]))]))
        n = b.round(b.op("Tanh", [b.round(b.op("Add", [inn, b.round(b.op("Mul", [hn, r]))]))]))
        d = b.round(b.op("Mul", [b.round(b.op("Sub", [h, n])), z]))
        return b.round(b.op("Add", [d, n])), None
    gates = b.round(b.op("Add", [hg, ig]))
    if kind == "RNN":
        return b.round(b.op(act, [gates])), None
    i, o, f, g = (b.cols(gates, k, hidden) for k in range(4))          # ONNX's gate order: i, o, f, c
    i, o, f = (b.round(b.op("Sigmoid", [v])) for v in (i, o, f))
    g = b.round(b.op("Tanh", [g]))
    c2 = b.round(b.op("Add", [b.round(b.op("Mul", [f, c])), b.round(b.op("Mul", [i, g]))]))
    return b.round(b.op("Mul", [o, b.round(b.op("Tanh", [c2]))])), c2


def _body(p: str, low: int, kind: str, act: str, hidden: int, inputs: int) -> Any:
    """The Scan body: states (h[, c], R^T, b_hh, W^T, b_ih) then the step's input; states out, then h'.  The input
    projection is the step's, ``round(round(x_t W^T) + b_ih)``: the sequence's projection outside the Scan (a
    MatMul read through the rounding) crashes ONNX Runtime's optimizers at level all (its NchwcTransformer)."""
    from onnx import TensorProto, helper

    b = _Builder(p, low)
    lstm = kind == "LSTM"
    names = (["h", "c"] if lstm else ["h"]) + ["rt", "rb", "wt", "wb"]
    ins = {n: f"{p}/in_{n}" for n in names + ["x"]}
    ig = b.round(b.op("Add", [b.round(b.op("MatMul", [ins["x"], ins["wt"]])), ins["wb"]]))
    h2, c2 = _cell(b, kind, act, ig, ins["h"], ins.get("c"), ins["rt"], ins["rb"], hidden)
    outs = [b.op("Identity", [h2])] + ([b.op("Identity", [c2])] if lstm else []) + \
        [b.op("Identity", [ins[n]]) for n in ("rt", "rb", "wt", "wb")] + [b.op("Identity", [h2])]
    gates = GATES[kind] * hidden
    dims = {"h": ["batch", hidden], "c": ["batch", hidden], "rt": [hidden, gates], "rb": [gates],
            "wt": [inputs, gates], "wb": [gates], "x": ["batch", inputs]}
    vi = (lambda n, d: helper.make_tensor_value_info(n, TensorProto.FLOAT, d))
    body_outs = [vi(o, dims[n]) for o, n in zip(outs, names + ["h"])]
    return helper.make_graph(b.nodes, f"{p}_body", [vi(ins[n], dims[n]) for n in names + ["x"]], body_outs)


def _direction(b: _Builder, node: Any, kind: str, act: str, x: str, d: int, reverse: bool, hidden: int,
               inputs: int, zeros: str) -> tuple[str, str, Optional[str]]:
    """Direction ``d``'s Scan: (Y [T, B, H], final h, final c) in float32."""
    from onnx import helper

    gates = GATES[kind] * hidden
    take = (lambda v: b.op("Cast", [b.op("Gather", [v, b.const(d)], axis=0)], to=FLOAT))
    w, r = take(node.input[1]), take(node.input[2])
    if len(node.input) > 3 and node.input[3]:
        bias = take(node.input[3])
        wb, rb = b.cols(bias, 0, gates), b.cols(bias, 1, gates)
    else:
        wb = rb = b.const(np.zeros(gates, np.float32), np.float32)
    init = (lambda i: b.op("Gather", [b.op("Cast", [node.input[i]], to=FLOAT), b.const(d)], axis=0)
            if len(node.input) > i and node.input[i] else zeros)
    states = [init(5)] + ([init(6)] if kind == "LSTM" else []) + \
        [b.op("Transpose", [r], perm=[1, 0]), rb, b.op("Transpose", [w], perm=[1, 0]), wb]
    body = _body(f"{b.p}/d{d}", b.low, kind, act, hidden, inputs)
    n_out = len(states) + 1
    outs = [f"{b.p}/scan{d}_{k}" for k in range(n_out)]
    b.nodes.append(helper.make_node("Scan", states + [x], outs, name=f"{b.p}/scan{d}", body=body,
                                    num_scan_inputs=1, scan_input_directions=[int(reverse)],
                                    scan_output_directions=[int(reverse)]))
    return outs[-1], outs[0], outs[1] if kind == "LSTM" else None


def _input_size(model: Any, node: Any) -> Any:
    """The size of W's last axis (the input size), or a symbolic one when W is computed."""
    w = next((t for t in model.graph.initializer if t.name == node.input[1]), None)
    return int(w.dims[-1]) if w is not None else "inputs"


def apply_half_recurrence(model: Any, spec: dict[str, Any]) -> None:
    node = find_node(model, spec["node"], "LSTM|GRU|RNN")
    attrs = _attrs(node)
    low = _check(model, node, attrs)
    kind, hidden = node.op_type, int(attrs["hidden_size"])
    acts = [a.decode() if isinstance(a, bytes) else a for a in attrs.get("activations", [])]
    act = acts[0] if kind == "RNN" and acts else "Tanh"
    direction = attrs.get("direction", b"forward")
    direction = direction.decode() if isinstance(direction, bytes) else direction
    b = _Builder(node.name or node.output[0], low)
    x = b.op("Cast", [node.input[0]], to=FLOAT)
    batch = b.op("Slice", [b.op("Shape", [x]), b.const([1]), b.const([2])])
    zeros = b.op("ConstantOfShape", [b.op("Concat", [batch, b.const([hidden])], axis=0)])
    dirs = [(0, direction == "reverse")] + ([(1, True)] if direction == "bidirectional" else [])
    inputs = _input_size(model, node)
    runs = [_direction(b, node, kind, act, x, d, rev, hidden, inputs, zeros) for d, rev in dirs]
    stack = (lambda vs, axis: b.op("Concat", [b.op("Unsqueeze", [v, b.const([axis])]) for v in vs], axis=axis))
    made = [stack([y for y, _, _ in runs], 1), stack([h for _, h, _ in runs], 0)]
    if kind == "LSTM":
        made.append(stack([c for _, _, c in runs], 0))
    from onnx import helper
    for value, name in zip(made, node.output):
        if name:
            b.nodes.append(helper.make_node("Cast", [value], [name], name=f"{name}/drifttui_back", to=low))
    replace_with(model, node, b.nodes)


APPLY = {"half_recurrence": apply_half_recurrence}
