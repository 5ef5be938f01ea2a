"""A module whose output is bfloat16: ONNX Runtime cannot hand a bfloat16 value to numpy, and before, fetching it
as a layer's value failed the whole run (exit 3, "No corresponding Numpy type for Tensor Type. bfloat16").  It is
read through an exact Cast to float32 and compared like any float value."""
import warnings

import pytest
import torch
from torch import nn


class _ToBfloat(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x * 3.0).bfloat16()


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.narrow = _ToBfloat()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.narrow(self.fc(x)).float() + 1.0


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_a_bfloat16_module_output_is_compared_not_a_crash(tmp_path, exporter):
    import drifttui

    torch.manual_seed(0)
    model, x = _Net().eval(), torch.randn(4, 8)
    path = tmp_path / "net.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), str(path), dynamo=exporter == "dynamo")
    r = drifttui.check(model, str(path), inputs=x, samples=2)
    by = {L.module: L for L in r.layers}
    assert r.verdict == "ok", (r.verdict, r.drift_origin)
    assert by["narrow"].status == "ok" and by["narrow"].metrics is not None


def test_the_bfloat16_values_types_come_from_the_index_not_a_shape_inference_per_session(tmp_path, monkeypatch):
    """The element types are the index's (``GraphIndex.elem_types``, one shape inference): a session that fetches a
    bfloat16 value, and a causes' case run on the same values, infer no shapes of their own (before: one inference
    per session and per case run, of the whole graph, on every run of a bfloat16 file)."""
    import numpy as np
    import onnx

    import drifttui
    from drifttui.core.explain.causes.locate.case import Case
    from drifttui.core.explain.causes.locate.evaluate import node_values
    from drifttui.core.onnx.graph import build_index

    torch.manual_seed(0)
    model, x = _Net().eval(), torch.randn(4, 8)
    path = tmp_path / "net.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), str(path))
    inferred, real = [], onnx.shape_inference.infer_shapes

    def counted(proto, *args, **kwargs):
        inferred.append(len(proto.graph.node))
        return real(proto, *args, **kwargs)

    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", counted)
    assert drifttui.check(model, str(path), inputs=x, samples=2).verdict == "ok"
    assert len(inferred) == 1, inferred          # the index's own
    index = build_index(onnx.load(str(path)))
    inferred.clear()
    case = Case(index.model, {index.graph_inputs[0]: x.numpy()}, {}, "", 0, 0, 1e-4, 1e-4,
                elem_types=index.elem_types)
    vals = node_values(case)
    narrow = next(v for v, t in index.elem_types.items() if t == onnx.TensorProto.BFLOAT16)
    assert inferred == [] and vals[narrow].dtype == np.float32
