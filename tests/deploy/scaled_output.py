"""A drift with no weight evidence: a layer's output multiplied by a factor inside the deployed file (a Mul
after the node that makes its mapped value, named and scoped like it).  The weights stay the model's, so
the weight-content comparison (core/prepare/qweight_check.py) has nothing to say: only the layer's budget
can catch it."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper


def scale_output(src: Path, dst: Path, value: str, factor: float) -> Path:
    m = onnx.load(str(src))
    inferred = onnx.shape_inference.infer_shapes(m)
    types = {v.name: v.type.tensor_type.elem_type for v in
             list(inferred.graph.value_info) + list(inferred.graph.output) + list(inferred.graph.input)}
    dtype = np.float16 if types.get(value) == onnx.TensorProto.FLOAT16 else np.float32
    nodes = list(m.graph.node)
    k = next(i for i, n in enumerate(nodes) if value in n.output)
    prod = nodes[k]
    pre = value + "_unscaled"
    prod.output[list(prod.output).index(value)] = pre
    c = numpy_helper.from_array(np.array(factor, dtype=dtype), value + "_factor")
    m.graph.initializer.append(c)
    mul = helper.make_node("Mul", [pre, c.name], [value], name=prod.name + "_scaled")
    for p in prod.metadata_props:
        mul.metadata_props.add(key=p.key, value=p.value)
    m.graph.node.insert(k + 1, mul)
    onnx.save(m, str(dst))
    return dst


def before_bias(src: Path, value: str) -> str:
    """The product a layer adds its bias to (the non-constant input of the Add that makes ``value``): scaling
    it moves the layer's own computation, where the value itself could be matched before the Mul."""
    m = onnx.load(str(src), load_external_data=False)
    consts = {t.name for t in m.graph.initializer} | {o for n in m.graph.node if n.op_type == "Constant" for o in n.output}
    prod = next(n for n in m.graph.node if value in n.output)
    assert prod.op_type == "Add", prod.op_type
    return next(i for i in prod.input if i not in consts)
