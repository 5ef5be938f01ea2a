"""A layer's precision budget derived from what the conversion does to it, and judged on either test
(issue 33, points 4a and 4b).

The drifts here have no weight evidence: the layer's output is multiplied by a factor inside the deployed
file (tests/deploy/scaled_output.py), its weights stay the model's, so only the budget can catch them.  Each
factor is read from the clean file's own result (between two of its budgets), not tuned:
- float16: between the derived own budget (3x the layer recomputed by PyTorch in float16) and the worst-case
  bound it replaced: the bound let it pass, the derived budget fails it;
- int8 (quantize_dynamic, reduce_range): between the own budget and the (looser) output budget: the output
  test passes it, the own test fails it, and either test failing is a drift.
"""
from __future__ import annotations

import pytest

from tests.deploy.conftest import needs
from tests.deploy.precision_models import export_local, fp16_ort, int8_dynamic, local_spec
from tests.deploy.scaled_output import before_bias, scale_output

MODULE = "layers.1.mlp.0"


def check(path):
    from drifttui.core.pipeline import run_once
    from drifttui.core.result import Config

    return run_once(Config(model=local_spec("small_tf"), inputs=local_spec("seq8"), onnx=str(path),
                           samples=3)).result


def layer(result, module=MODULE):
    return next(L for L in result.layers if L.module == module)


def assert_caught(bad, module=MODULE):
    from drifttui.core.result import WEIGHT_NOT_THE_MODELS

    B = layer(bad, module)
    assert WEIGHT_NOT_THE_MODELS not in B.note          # no weight evidence: the budget caught it
    assert B.budget.over and B.status == "drift" and B.fails["local"]
    assert bad.verdict == "drift" and bad.precision.verdict == "over budget"
    assert bad.drift_origin is not None and bad.drift_origin.module == module
    return B


def test_float16_budget_is_measured_and_catches_what_the_worst_case_bound_passed(tmp_path):
    from drifttui.report.text import own_budget_cell
    from drifttui.tui.layer_view import budget_line

    needs("onnxruntime.transformers.float16")
    fp16 = fp16_ort(export_local("small_tf", "seq8", "dynamo", tmp_path / "raw"), tmp_path / "fp16.onnx")
    clean = check(fp16)
    assert clean.verdict == "ok" and clean.precision.verdict == "within budget"
    L = layer(clean)
    b = L.budget
    assert b.derived == "measured" and b.measured is not None and b.own_budget == pytest.approx(3 * b.measured)
    assert b.own_budget < b.own_bound / 2                # tighter than the worst case
    assert L.local.max_rel.worst <= b.own_budget         # and the clean layer within it
    assert own_budget_cell(b).endswith(" m") and "measured" in budget_line(L).plain
    factor = 1.0 + (b.own_budget + b.own_bound) / 2      # the bound passes it, the measured budget does not
    B = assert_caught(check(scale_output(fp16, tmp_path / "bad.onnx", L.onnx_values[0], factor)))
    assert B.local.max_rel.worst < B.budget.own_bound


def test_int8_layer_over_its_own_budget_with_its_output_within_is_a_drift(tmp_path):
    needs("onnxruntime.quantization")
    q = int8_dynamic(export_local("small_tf", "seq8", "torchscript", tmp_path / "raw"), tmp_path / "q.onnx",
                     reduce_range=True)
    clean = check(q)
    assert clean.verdict == "ok" and clean.precision.verdict == "within budget"
    L = layer(clean)
    own_b, out_b = L.budget.own_budget, L.budget.out_budget
    assert out_b > 1.5 * own_b, (own_b, out_b)
    # the product before the bias: the layer's own value stays the one its output is (a Mul after the layer's
    # output leaves the unscaled value closer to torch's, which the mapping then takes)
    product = before_bias(q, L.onnx_values[0])
    B = assert_caught(check(scale_output(q, tmp_path / "bad.onnx", product, 1.0 + (own_b + out_b) / 2)))
    assert not B.fails["max_rel"] and B.metrics.max_rel.worst < B.budget.out_budget    # the output test passes


@pytest.mark.parametrize("factor", [1.1, 1.3])
def test_a_mul_after_an_int8_layers_output_is_that_layers(tmp_path, factor):
    """The Mul after the layer's output value (named and scoped like it): the unscaled value is closer to
    torch's, but nothing reads it except the Mul, a constant the reference export does not have; the layer
    hands on the scaled value, so the Mul is its own and it is the origin (before: the GELU after it)."""
    needs("onnxruntime.quantization")
    q = int8_dynamic(export_local("small_tf", "seq8", "torchscript", tmp_path / "raw"), tmp_path / "q.onnx",
                     reduce_range=True)
    clean = check(q)
    assert clean.verdict == "ok"
    bad = check(scale_output(q, tmp_path / "bad.onnx", layer(clean).onnx_values[0], factor))
    assert bad.verdict == "drift" and bad.drift_origin is not None and bad.drift_origin.module == MODULE
    assert layer(bad).onnx_values == layer(clean).onnx_values       # the value the GELU reads
    assert layer(bad, "layers.1.mlp.1").status != "drift"
