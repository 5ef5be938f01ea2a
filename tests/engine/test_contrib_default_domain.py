"""A file onnx's checker refuses only because of an ONNX Runtime contrib op written in the default
domain (ORT's SimplifiedLayerNormalization: LLaMA's RMSNorm at ENABLE_EXTENDED and above, the
transformers optimizer's) is taken as ONNX Runtime runs it; an op nobody registers is still an input error."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from drifttui.core.model.loading import load_onnx
from drifttui.errors import InputError


def _file(tmp_path, op: str):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 4])
    scale = numpy_helper.from_array(np.linspace(0.5, 1.5, 4).astype(np.float32), "scale")
    node = helper.make_node(op, ["x", "scale"], ["y"], axis=-1, epsilon=1e-6)
    model = helper.make_model(helper.make_graph([node], "g", [x], [y], [scale]),
                              opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / f"{op}.onnx"
    onnx.save(model, str(path))
    return path


def test_ort_contrib_op_in_the_default_domain_loads_with_a_note(tmp_path):
    path = _file(tmp_path, "SimplifiedLayerNormalization")
    with pytest.raises(Exception, match="No Op registered"):
        onnx.checker.check_model(str(path))
    notes: list[str] = []
    proto, got = load_onnx(path, notes=notes)
    assert got == path and proto.graph.node[0].op_type == "SimplifiedLayerNormalization"
    assert any("ONNX Runtime loads it" in n for n in notes), notes


def test_an_op_nobody_registers_is_still_an_input_error(tmp_path):
    with pytest.raises(InputError, match="is invalid: .*No Op registered for NoSuchNorm"):
        load_onnx(_file(tmp_path, "NoSuchNorm"))
