"""Reusing a child's comparison for its container must not hide an in-place change made in between."""
from tests.conftest import ROOT

LOST = ROOT / "tests" / "capture" / "lost_op.py"


def test_in_place_change_after_the_child_hook_is_compared_afresh(tmp_path):
    import torch

    from drifttui.core.model.export import export_model
    from drifttui.core.result import Config
    from drifttui.core.pipeline import run_once
    from tests.capture.lost_op import without_add

    # the deployed graph lost the `y += 1`: in ONNX the block's output *is* the Linear's output
    path = export_model(without_add(), (torch.randn(2, 16),), {}, "dynamo", tmp_path)
    r = run_once(Config(model=f"{LOST}:with_add", onnx=str(path), inputs="shape:2x16", samples=2)).result
    by = {L.module: L for L in r.layers}
    assert by["block"].onnx_values == by["block.lin"].onnx_values     # same ONNX value, same tensor object
    assert by["block.lin"].status == "ok" and by["block.lin"].metrics.max_abs.worst < 1e-5
    assert by["block"].status != "ok" and abs(by["block"].metrics.max_abs.worst - 1.0) < 1e-5
    assert r.verdict == "drift"
