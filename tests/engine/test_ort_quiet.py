"""ONNX Runtime's own error log does not reach the terminal: a run that fails is raised and said by
drifttui in one line (its candidate patches and bisections fail on purpose; each failure printed
ORT's multi-line kernel error, coloured, before the report)."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from drifttui.core.runtime import sessions
from drifttui.errors import ModelError


def test_a_failing_run_is_raised_without_ort_printing_it(tmp_path, capfd):
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [3, 5])       # 4 elements cannot be 3x5
    g = helper.make_graph([helper.make_node("Reshape", ["x", "shape"], ["y"], name="bad_reshape")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=[shape])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    sess = sessions.make_session(model, "disable", False, "CPUExecutionProvider", tmp_path, "bad.onnx")
    with pytest.raises(ModelError, match="ONNX Runtime failed"):
        sessions.run(sess, {"x": np.ones(4, np.float32)})
    err = capfd.readouterr().err
    assert "onnxruntime" not in err and "Reshape" not in err, err
