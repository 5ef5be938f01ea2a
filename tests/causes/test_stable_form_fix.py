"""A stable-form rewrite's fix names the source change (issue 30 point 2): ONNX has no Expm1 / Log1p, so no
exporter or opset writes the accurate form; the fix says the lowering is the exporter's and to report it with the
case ``drifttui repro`` writes, beside ``repair``'s rewrite (before: "let `drifttui repair` write the accurate form"
alone, which ``repair`` then printed as the fix at the source)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from drifttui.core.explain.causes.propose.edits import rewrites


def _case(op: str) -> tuple[SimpleNamespace, object]:
    one = numpy_helper.from_array(np.array(1.0, np.float32), "one")
    if op == "expm1":
        nodes = [helper.make_node("Exp", ["x"], ["e"], name="n_exp"), helper.make_node("Sub", ["e", "one"], ["y"], name="n_sub")]
    else:
        nodes = [helper.make_node("Add", ["one", "x"], ["u"], name="n_add"), helper.make_node("Log", ["u"], ["y"], name="n_log")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [one])
    model = helper.make_model(g)
    return SimpleNamespace(model=model, module="phi", opset=20), model.graph.node[-1]


def test_the_expm1_and_log1p_fixes_name_the_upstream_report_not_only_repair():
    for op, propose in (("expm1", rewrites.expm1), ("log1p", rewrites.log1p)):
        case, node = _case(op)
        patches = list(propose(case, node, None, {}))
        assert len(patches) == 1, (op, patches)
        fix = patches[0].fix
        assert "drifttui repro" in fix and "torch.onnx" in fix, (op, fix)
