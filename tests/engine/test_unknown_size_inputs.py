"""A call input paired with a value whose size the file does not know.  transformers' Funnel hands its layers the
position embeddings, a (4, 8) class mask and more; in the TorchScript file the mask's value has unknown dims, so by
shape alone it "fit" the (8, 32) position embeddings, which the layer's nodes never read.  The local run then fed
the (8, 32) tensor as the mask: ONNX Runtime refused the local graph (exit 3 on a clean file); where the shapes
broadcast, the layer's own error on a clean file is wrong (17.3 here, inf at the root).  A value that fits an
input only because its size is unknown is paired when its sample-0 shape is the input's, never by shape alone."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import numpy_helper
from torch import nn

from drifttui.core.pipeline import run_once
from drifttui.core.result import Config

SPEC = f"{__file__}:masked"
INPUTS = "shape:2x8x32"


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(32, 32)

    def forward(self, x: torch.Tensor, pos: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        # ``pos`` is taken and not used (Funnel's layers take every attention input)
        return self.fc(x) * mask.sum(-1, keepdim=True)


class Masked(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = Layer()
        self.out = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[1]
        mask = torch.ones(n, n, dtype=x.dtype, device=x.device).tril()      # (L, L): dims the file does not know
        return self.out(self.layer(x, x[0], mask))                           # x[0] is (L, 32): (8, 32) here


def masked() -> nn.Module:
    torch.manual_seed(0)
    return Masked().eval()


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("masked") / "masked_ts.onnx"
    torch.onnx.export(masked(), (torch.randn(2, 8, 32),), str(path), dynamo=False, opset_version=17,
                      input_names=["x"], dynamic_axes={"x": {0: "batch", 1: "length"}})
    return path


def test_the_mask_has_no_known_size(exported: Path):
    m = onnx.shape_inference.infer_shapes(onnx.load(str(exported)))
    reads = {i for n in m.graph.node if n.name.startswith("/layer/") for i in n.input}
    sizes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in m.graph.value_info}
    unknown = [v for v in reads if v in sizes and len(sizes[v]) == 2 and 0 in sizes[v]]
    assert unknown, sorted(reads)     # the premise: the layer reads a 2-D value of unknown size


def test_a_clean_file_is_ok(exported: Path):
    r = run_once(Config(model=SPEC, inputs=INPUTS, onnx=str(exported), samples=2)).result
    assert r.verdict == "ok", r.drift_origin
    for L in r.layers:      # each call's own error, its local run fed torch's own inputs: the (8, 8) mask
        assert L.status == "ok" and L.local is not None and L.local.max_abs.worst < 1e-4, (L.module, L.local)


def test_a_weight_in_the_layer_is_named_there(exported: Path, tmp_path: Path):
    model = onnx.load(str(exported))
    w = masked().layer.fc.weight.detach().numpy()
    init = next(i for i in model.graph.initializer if numpy_helper.to_array(i).shape == w.T.shape
                and np.allclose(numpy_helper.to_array(i), w.T))
    init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init) * np.float32(1.05), init.name))
    planted = tmp_path / "planted.onnx"
    onnx.save(model, str(planted))
    r = run_once(Config(model=SPEC, inputs=INPUTS, onnx=str(planted), samples=2)).result
    assert r.verdict == "drift" and r.drift_origin.module == "layer.fc", r.drift_origin
