"""A TorchScript file pinned at an older opset (propose/reexport/pinned_opset.py, variants.next_opset): the same
exporter one opset up is tried before another exporter, and a verified re-export there tells what the pinned
opset computes otherwise (integer ops through a float Cast).  Real TorchScript exports, real ONNX Runtime."""
from __future__ import annotations

import io
import warnings
from types import SimpleNamespace

import numpy as np
import onnx
import torch

from drifttui.core.explain.causes.locate.evaluate import run_ort
from drifttui.core.explain.causes.propose.reexport.pinned_opset import pinned_story, through_float
from drifttui.core.explain.causes.propose.reexport.variants import TORCHSCRIPT_TOP, next_opset


class SessionStart(torch.nn.Module):
    """int64 millisecond timestamps clamped to the session's first (``torch.maximum``), the gaps in seconds."""

    def forward(self, ts: torch.Tensor) -> torch.Tensor:
        t = torch.maximum(ts, ts[:, :1])
        return (t[:, 1:] - t[:, :-1]) // 1000


def _export(opset: int, ts: torch.Tensor) -> onnx.ModelProto:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(SessionStart(), (ts,), buf, dynamo=False, opset_version=opset)
    return onnx.load_from_string(buf.getvalue())


def _ts() -> torch.Tensor:
    return 1_700_000_000_000 + torch.tensor([[0, 1500, 4000, 61000], [0, 200, 900, 30000]])


def test_opset_11_computes_the_int64_maximum_in_float32_and_the_story_says_so():
    ts = _ts()
    want = SessionStart()(ts).numpy()
    at11, at12 = _export(11, ts), _export(12, ts)
    got11 = run_ort(at11, {at11.graph.input[0].name: ts.numpy()})[at11.graph.output[0].name]
    got12 = run_ort(at12, {at12.graph.input[0].name: ts.numpy()})[at12.graph.output[0].name]
    assert not np.array_equal(got11, want) and np.array_equal(got12, want)     # the drift, at opset 11 only
    assert through_float(at11, at12) == [("Max", "float32")]
    said = pinned_story(at11, at12, 11, 12, "torchscript")
    assert "opset 11" in said and "Max in float32" in said and "2**24" in said and "opset 12" in said
    assert pinned_story(at12, at12, 12, 13, "torchscript") == ""        # nothing through float: no story


def test_the_next_opset_is_tried_only_for_a_users_file_below_the_newest_opset():
    def ctx(onnx_file, opset):
        return SimpleNamespace(cfg=SimpleNamespace(onnx=onnx_file), index=SimpleNamespace(opset=opset))

    v = next_opset(ctx("model.onnx", 11))
    assert (v.exporter, v.opset) == ("torchscript", 12) and "next above the file's 11" in v.why
    assert next_opset(ctx("model.onnx", TORCHSCRIPT_TOP)) is None
    assert next_opset(ctx(None, 11)) is None                     # drifttui's own export: no opset pinned
    assert next_opset(ctx("model.onnx", None)) is None
