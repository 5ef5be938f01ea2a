"""``>=`` / ``<=`` lowered as a negated strict comparison (drifttui/core/onnx/edit/lowerings/nan_compare.py and
propose/edits/nan_compare.py): the TorchScript exporter at opset 11 writes ``Not(Less(a, b))``, true for NaN where
torch's comparison is false.  Real TorchScript exports at a pinned opset, run in real ONNX Runtime."""
from __future__ import annotations

import io
import warnings

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import run_ort
from drifttui.core.explain.causes.propose.edits.nan_compare import nan_compare_patches
from drifttui.core.onnx.edit.patches import Patch, PatchError, apply


class RangeMask(torch.nn.Module):
    """a range mask over a ratio that is 0 / 0 (NaN) where nothing was counted, the NaN filled by the mask."""

    def forward(self, s: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
        r = s / n
        valid = (r >= 0.5) & (r <= 2.0)
        return torch.where(valid, r, torch.zeros_like(r))


def _export(opset: int) -> onnx.ModelProto:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(RangeMask(), (torch.ones(6), torch.ones(6)), buf, dynamo=False, opset_version=opset)
    model = onnx.load_from_string(buf.getvalue())
    for k, n in enumerate(model.graph.node):
        n.name = n.name or f"n{k}"
    return model


def _feeds(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    s, n = np.array([0, 1, 3, 0, 5, 2], np.float32), np.array([0, 1, 2, 4, 1, 0], np.float32)
    return dict(zip([i.name for i in model.graph.input], (s, n)))


def _want(feeds: dict[str, np.ndarray]) -> np.ndarray:
    return RangeMask()(*(torch.from_numpy(v) for v in feeds.values())).numpy()


def test_opset_11_keeps_the_nan_torchs_mask_drops_and_the_rewrite_computes_what_torch_computes():
    model = _export(11)
    feeds = _feeds(model)
    out = model.graph.output[0].name
    assert np.isnan(run_ort(model, feeds)[out][0]) and _want(feeds)[0] == 0      # the drift, at opset 11 only
    at12 = _export(12)
    assert np.array_equal(run_ort(at12, _feeds(at12))[at12.graph.output[0].name], _want(feeds))
    case = Case(model, feeds, {out: _want(feeds)}, "body", 0, 0, 1e-5, 1e-5,
                nodes=[n.name for n in model.graph.node])
    patches = nan_compare_patches(case, None)
    joint = patches[0]
    assert joint.spec["rewrite"] == "nan_compare" and len(joint.spec["nodes"]) == 2 and joint.check == "lowering"
    assert "opset 11" in joint.why and "aten.ge" in joint.why and "opset_version=12" in joint.fix
    fixed = apply(model, joint)
    assert np.array_equal(run_ort(fixed, feeds)[out], _want(feeds))
    assert next(i.version for i in fixed.opset_import if i.domain in ("", "ai.onnx")) == 11      # the file's opset


def test_nothing_is_proposed_without_a_nan_or_at_opset_12():
    model = _export(11)
    feeds = dict(zip([i.name for i in model.graph.input], (np.array([1, 3, 9, 2, 5, 2], np.float32),
                                                            np.ones(6, np.float32))))
    out = model.graph.output[0].name
    case = Case(model, feeds, {out: _want(feeds)}, "body", 0, 0, 1e-5, 1e-5,
                nodes=[n.name for n in model.graph.node])
    assert nan_compare_patches(case, None) == []
    at12 = _export(12)
    f12 = _feeds(at12)
    case12 = Case(at12, f12, {at12.graph.output[0].name: _want(f12)}, "body", 0, 0, 1e-5, 1e-5,
                  nodes=[n.name for n in at12.graph.node])
    assert nan_compare_patches(case12, None) == []      # GreaterOrEqual: no negation to rewrite


def test_the_rewrite_refuses_a_not_of_anything_but_a_float_comparison():
    ins = [helper.make_tensor_value_info("b", TensorProto.BOOL, [2])]
    model = helper.make_model(helper.make_graph([helper.make_node("Not", ["b"], ["y"], name="not")], "g", ins,
                                                [helper.make_tensor_value_info("y", TensorProto.BOOL, [2])]),
                              opset_imports=[helper.make_opsetid("", 11)])
    with pytest.raises(PatchError):
        apply(model, Patch({"op": "rewrite", "rewrite": "nan_compare", "node": "not"}, "lowering", "", ""))
