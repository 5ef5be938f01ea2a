"""What ONNX Runtime's CPU kernels do on this processor, probed: MLAS picks its kernels by the CPU's features, and some
forms drift on some processors only (docs/drift-catalogue.md, session 40: ``Softmax`` flushed probabilities below
float32's smallest normal number to 0 on the AVX2 machine of session 39, and keeps them as subnormal numbers on an
AVX-512 one)."""
from __future__ import annotations

import functools

import numpy as np


@functools.lru_cache(maxsize=None)
def softmax_flushes() -> bool:
    """ONNX Runtime's float32 ``Softmax`` returns 0 for a probability torch keeps as a subnormal number (a logit
    gap of 95)."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("Softmax", ["z"], ["p"], axis=-1)], "g",
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 2])],
                          [helper.make_tensor_value_info("p", TensorProto.FLOAT, [1, 2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    p = sess.run(None, {"z": np.asarray([[0.0, -95.0]], np.float32)})[0]
    return bool(p[0, 1] == 0)


SOFTMAX_KEEPS = ("ONNX Runtime's Softmax keeps subnormal probabilities on this processor (MLAS picks its exponential "
                 "by the CPU's features): the flush this form drifts by does not happen here")
