"""A float16 weight kept in the file's external data (the dynamo exporter writes every initializer there) is read
where it lies by the low-precision weight scan: before, ``qweights`` read it with ``numpy_helper.to_array`` on the
path-less proto and ``diagnose`` stopped with exit 3 ("should be stored in ....onnx.data, but it is not regular
file") on any dynamo file holding a 2-D float16 constant (held-out batch X, session 37)."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from drifttui.core.model.loading import load_onnx
from drifttui.core.onnx.graph import build_index
from drifttui.core.onnx.qweights import low_precision_weights


def test_an_external_float16_weight_is_read_from_its_data_file(tmp_path, monkeypatch):
    values = (np.arange(64, dtype=np.float32).reshape(8, 8) / 7).astype(np.float16)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2, 8])],
                              [numpy_helper.from_array(values, "w")])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), str(path),
              save_as_external_data=True, location="m.onnx.data", size_threshold=0)
    monkeypatch.chdir(tmp_path.parent)            # the external file is relative to the model, not to the cwd
    proto, where = load_onnx(path)
    found = list(low_precision_weights(build_index(proto, where)))
    assert [w.name for w in found] == ["w"]
    assert np.array_equal(found[0].values, values.astype(np.float32))
