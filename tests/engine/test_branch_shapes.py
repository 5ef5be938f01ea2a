"""TorchScript's ``scatter_reduce`` wraps its result in an ``If`` whose else branch declares the flattened shape
({48} of a (6, 8) value): ONNX Runtime at level disable (drifttui's capture level), where the If runs, allocates the
branch's output by that hint and fails, while the deployed file (default level: the If folded) runs.  drifttui's
loaded copy clears the shapes declared on subgraph outputs (``onnx/branch_shapes.py``) and runs the file's numbers;
the file is unchanged."""
from __future__ import annotations

import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from drifttui.core.model.loading import load_onnx
from drifttui.core.onnx.branch_shapes import clear_branch_shapes


class _Bins(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bins = (x.abs() * 2).long() % 8
        return torch.full((6, 8), -10.0).scatter_reduce(1, bins, x, reduce="amax") * 2


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    path = tmp_path_factory.mktemp("branch") / "bins.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(_Bins(), (torch.randn(6, 32),), str(path), dynamo=False)
    return path


def _run(proto, x):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(proto.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return session.run(None, {proto.graph.input[0].name: x})[0]


def test_the_exporters_branch_shape_fails_at_level_disable_as_written(exported):
    x = torch.randn(6, 32).numpy()
    with pytest.raises(Exception, match="computed output shape"):
        _run(onnx.load(str(exported)), x)


def test_the_loaded_copy_clears_branch_shapes_and_runs_the_files_numbers(exported):
    before = exported.read_bytes()
    proto, _ = load_onnx(exported)
    x = torch.randn(6, 32)
    np.testing.assert_allclose(_run(proto, x.numpy()), _Bins()(x).numpy(), rtol=0, atol=0)
    branches = [a.g for n in proto.graph.node if n.op_type == "If" for a in n.attribute]
    assert branches and all(o.type.tensor_type.elem_type and not o.type.tensor_type.HasField("shape")
                            for g in branches for o in g.output)      # the element types stay
    assert exported.read_bytes() == before and clear_branch_shapes(proto) == 0
