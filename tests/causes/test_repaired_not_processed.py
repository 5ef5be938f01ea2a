"""A file ``repair`` wrote is still the exporter's file (``prepare/reference.processed_by``).

The schema pool's ``aten.cumsum(x, -1, dtype=torch.float16)`` (seed 26058 of session 41's range, TorchScript):
``repair`` computed the ``CumSum`` in float32 (``opmath_float32``), whose rounding Cast it names after the value it
writes (``/body/CumSum_output_0/drifttui_f32/rounded``).  ``processed_by`` reads a TorchScript node named as its
own output as ORT's transpose optimiser's, so ``check`` of the repaired file mapped it through a reference export,
which paired ``body`` with the unrounded float32 ``CumSum``: "drift at body" on a file whose outputs agree with
torch to 6e-8.  drifttui's own nodes (``.../drifttui_...``) are no tool's processing.
"""
from __future__ import annotations

import warnings

import onnx
import torch
from torch import nn


class Half(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.aten.cumsum.default(x * 2.0, -1, dtype=torch.float16).float()


def test_a_file_drifttui_rewrote_is_not_read_as_processed_by_a_tool(tmp_path):
    from drifttui.core.onnx.edit.numerics.opmath import apply_opmath_float32
    from drifttui.core.onnx.graph import build_index
    from drifttui.core.prepare.reference import processed_by

    path = tmp_path / "half.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Half(), (torch.randn(2, 8),), str(path), dynamo=False)
    model = onnx.load(str(path))
    assert processed_by(build_index(model)) == ""
    cast, cumsum = [n for n in model.graph.node if n.op_type in ("Cast", "CumSum")][:2]
    assert (cast.op_type, cumsum.op_type) == ("Cast", "CumSum")
    low = {cast.output[0]: 10, cumsum.output[0]: 10}
    apply_opmath_float32(model, {"nodes": [cast.name, cumsum.name], "low": low, "inputs": {},
                                 "round": [cast.output[0], cumsum.output[0]]})
    assert any("drifttui_" in n.name and n.name in n.output for n in model.graph.node)    # a node named as its value
    assert processed_by(build_index(model)) == ""
