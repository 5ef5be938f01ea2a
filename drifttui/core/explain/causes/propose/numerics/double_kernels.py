"""Which ops of a region ONNX Runtime cannot compute in float64, so that the float64 counterfactuals
(``origin64.py``, ``kernel64.py``) compute them by their ONNX definitions instead (``onnx/edit/numerics/
function_body.py``): probed once per op and opset, a one-node double model that ONNX Runtime refuses to build.
No catalogue: an op qualifies when ONNX defines it as a function and the runtime lacks its double kernel (measured:
``Elu``, ``Selu``, ``HardSigmoid``, ``Softsign``, ``ThresholdedRelu``, ``HardSwish``; ``Celu`` below opset 28).
"""
from __future__ import annotations

import functools
from typing import Any, Iterable

from drifttui.core.onnx.edit.numerics.function_body import function_of


def lacks_double(node: Any, opset: int) -> bool:
    """Whether ``node``'s op is defined as an ONNX function at ``opset`` and has no float64 kernel ONNX Runtime
    builds."""
    if function_of(node, opset) is None:
        return False
    return _refused(node.op_type, len([v for v in node.input if v]), len(node.output), opset)


@functools.lru_cache(maxsize=256)
def _refused(op: str, n_in: int, n_out: int, opset: int) -> bool:
    import onnxruntime as ort
    from onnx import TensorProto, helper

    ins = [f"x{k}" for k in range(n_in)]
    node = helper.make_node(op, ins, [f"y{k}" for k in range(n_out)])
    graph = helper.make_graph([node], "probe", [helper.make_tensor_value_info(v, TensorProto.DOUBLE, [2]) for v in ins],
                              [helper.make_tensor_value_info(v, TensorProto.DOUBLE, None) for v in node.output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 10)
    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    try:
        ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    except Exception:  # noqa: BLE001 - any refusal: the double node cannot run
        return True
    return False


def opset_of(model: Any) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 17)


def to_expand(model: Any, nodes: Iterable[Any]) -> list[str]:
    """The op types among ``nodes`` (and, in turn, among their definitions' nodes) to compute by their definitions
    in a float64 region."""
    opset, seen, out = opset_of(model), set(), set()
    todo = [n for n in nodes if n.domain in ("", "ai.onnx")]
    while todo:
        node = todo.pop()
        if node.op_type in seen:
            continue
        seen.add(node.op_type)
        if lacks_double(node, opset):
            out.add(node.op_type)
            todo.extend(function_of(node, opset).node)
    return sorted(out)


def expanding(model: Any, nodes: Iterable[Any]) -> dict[str, Any]:
    """The float64 region spec's ``expand`` entry (empty when every op has a double kernel)."""
    ops = to_expand(model, nodes)
    return {"expand": ops} if ops else {}
