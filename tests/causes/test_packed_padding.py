"""A packed sequence's padding value (``propose/edits/packed_padding.py``, ``onnx/edit/lowerings/packed_padding.py``;
batch 41D): the TorchScript exporter lowers ``pack_padded_sequence`` -> GRU -> ``pad_packed_sequence(padding_value=v)``
as one ONNX GRU with ``sequence_lens``, whose padded steps are 0 (pytorch/pytorch#28423); the rewrite writes ``v``
there and the file computes torch's values, bidirectional and batch-major alike."""
from __future__ import annotations

import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from torch import nn

from drifttui.core.onnx.edit.patches import Patch, apply


class Tagger(nn.Module):
    def __init__(self, pad: float, bidirectional: bool) -> None:
        super().__init__()
        self.rnn = nn.GRU(4, 3, batch_first=True, bidirectional=bidirectional)
        self.pad = pad

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        return nn.utils.rnn.pad_packed_sequence(self.rnn(packed)[0], batch_first=True, padding_value=self.pad)[0]


def _run(model: onnx.ModelProto, x: torch.Tensor, lengths: torch.Tensor) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, dict(zip(names, (x.numpy(), lengths.numpy()))))[0]


@pytest.mark.parametrize("pad,bidirectional", [(-1.0, False), (float("-inf"), True)])
def test_the_padded_steps_hold_torch_padding_value(tmp_path, pad, bidirectional):
    torch.manual_seed(0)
    module, x, lengths = Tagger(pad, bidirectional).eval(), torch.randn(3, 6, 4), torch.tensor([6, 2, 4])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (x, lengths), str(tmp_path / "m.onnx"), dynamo=False)
    model = onnx.load(str(tmp_path / "m.onnx"))
    want = module(x, lengths).detach().numpy()
    assert not np.array_equal(_run(model, x, lengths), want)       # the file's padded steps are 0
    gru = next(n for n in model.graph.node if n.op_type == "GRU")
    spec = {"op": "rewrite", "rewrite": "packed_padding", "node": gru.name, "value": pad if pad > -1e9 else "-inf"}
    fixed = apply(model, Patch(spec, "lowering", "", ""))
    np.testing.assert_allclose(_run(fixed, x, lengths), want, rtol=1e-5, atol=1e-6)
