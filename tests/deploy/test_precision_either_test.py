"""A weight drift hidden between a layer's two budgets (issue 33, points 4a and 4b): a layer of a
reduced-precision file whose own error is over its own budget while its output stays within its (looser)
output budget.  The file is the user's kind: quantize_dynamic on a transformer, then one Linear's weight
scale multiplied after conversion, by a factor put between the layer's two budgets (read from the clean
file's own result, not tuned).

The either test is in place where the layer's budget is measured (the layer recomputed by PyTorch in the
file's precision, core/capture/rounding.py; test_precision_derived.py holds a drift with no weight evidence
to it).  This drift is caught by its evidence too: the int8 weight, dequantized with its
reader's scale, is not a rounding of the model's tensor (core/prepare/qweight_check.py), so the layer is
a drift and the origin, whatever its values' budgets."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from tests.deploy.conftest import needs
from tests.deploy.precision_models import export_local, int8_dynamic, local_spec

SAMPLES = 4


def check(path):
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    return run_once(Config(model=local_spec("small_tf"), inputs=local_spec("seq8"), onnx=str(path),
                           samples=SAMPLES)).result


def weight_scale_of(model: onnx.ModelProto, node_names: list[str]) -> onnx.TensorProto:
    """The scale initializer of the layer's quantized weight (MatMulInteger's int8 input or a
    DequantizeLinear of an int8 matrix)."""
    inits = {t.name: t for t in model.graph.initializer}
    for n in (n for n in model.graph.node if n.name in set(node_names)):
        for i in n.input:
            t = inits.get(i)
            if t is not None and t.data_type in (2, 3) and len(t.dims) == 2:
                return inits[n.input[1] if n.op_type == "DequantizeLinear" else i.replace("_quantized", "_scale")]
    raise AssertionError(f"no quantized weight among {node_names}")


def scaled(src, dst, node_names: list[str], factor: float):
    m = onnx.load(str(src))
    t = weight_scale_of(m, node_names)
    t.CopyFrom(numpy_helper.from_array((numpy_helper.to_array(t) * factor).astype(np.float32), t.name))
    onnx.save(m, str(dst))
    return dst


@pytest.mark.parametrize("module", ["layers.1.mlp.0", pytest.param("layers.0.mlp.2", marks=pytest.mark.deploy)])
def test_a_weight_drift_between_the_two_budgets_is_a_drift_at_its_layer(tmp_path, module):
    from drifttui.core.result import WEIGHT_NOT_THE_MODELS
    from drifttui.report.text import budget_cells
    from drifttui.tui.layer_view import budget_line

    needs("onnxruntime.quantization")
    raw = export_local("small_tf", "seq8", "torchscript", tmp_path / "raw")
    q = int8_dynamic(raw, tmp_path / "q.onnx", reduce_range=True)
    clean = check(q)
    assert clean.precision.verdict == "within budget" and clean.drift_origin is None
    L = next(L for L in clean.layers if L.module == module)
    own_b, out_b = L.budget.own_budget, L.budget.out_budget
    assert out_b > 1.5 * own_b, (own_b, out_b)          # room between the two budgets
    # the weight off by the middle of the two budgets: the layer's output moves by about that much
    bad = check(scaled(q, tmp_path / "bad.onnx", L.onnx_nodes, 1.0 + (own_b + out_b) / 2))
    B = next(x for x in bad.layers if x.module == module)
    assert B.local.max_rel.worst > B.budget.own_budget                 # the own test fails
    assert not B.fails["max_rel"] and B.metrics.max_rel.worst < B.budget.out_budget   # the output test passes
    assert B.budget.over and B.status == "drift"
    assert WEIGHT_NOT_THE_MODELS in B.note and bad.precision.cause == "genuine drift"
    assert bad.verdict == "drift" and bad.precision.verdict == "over budget"
    assert bad.drift_origin is not None and bad.drift_origin.module == module
    assert "OVER BUDGET" in budget_line(B).plain and str(budget_cells(B)[0].style) == "bold red"
