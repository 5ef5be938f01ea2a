"""Integers a TorchScript trace took from the example's sizes (propose/reexport/frozen_ints.py,
onnx/edit/lowerings/runtime_int.py; batch 41E of session 40).

``torch.roll(x, x.size(1) // 2, 1)`` traced by TorchScript with a dynamic length is two ``Slice`` nodes whose bounds
hold ``-(T // 2)`` of the example's ``T``.  Real ONNX Runtime against real torch: the traces of a roll at three
lengths fit ``-(d // 2)`` (and a line from two), the rewrite computes the bounds from the runtime shape and gives
torch's roll at every length, and the whole file's two slices rewritten at once by the proposer's patch do too."""
from __future__ import annotations

import io
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from torch import nn

from drifttui.core.explain.causes.propose.reexport.frozen_ints import _aligned, _fit, _slots
from drifttui.core.onnx.edit.patches import Patch, apply


class Roll(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.roll(x, x.size(1) // 2, 1) * 1.0


def _trace(length: int) -> onnx.ModelProto:
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Roll(), (torch.randn(2, length, 4),), f, dynamo=False, input_names=["x"],
                          dynamic_axes={"x": {1: "T"}})
    return onnx.load_from_string(f.getvalue())


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def test_a_size_fits_a_floor_from_three_traces_and_a_line_from_two():
    assert _fit([(16, -8), (30, -15), (39, -19)]) == (-1, 1, 0, 2, 0)
    assert _fit([(16, 15), (20, 19)]) == (1, 1, 0, 1, -1)
    assert _fit([(16, 12), (30, 24), (39, 31)]) == (1, 4, 0, 5, 0)             # int(0.8 * d)
    assert _fit([(16, 5), (30, 7), (39, 2)]) is None            # no size: a number that merely differs


@pytest.mark.parametrize("length", [9, 23, 40])
def test_the_rolls_slices_computed_from_the_runtime_length_are_torchs_roll(length):
    model = _trace(16)
    x = np.random.default_rng(length).standard_normal((2, length, 4)).astype(np.float32)
    want = torch.roll(torch.from_numpy(x), length // 2, 1).numpy()
    assert not np.array_equal(_run(model, x), want)         # the file rolls by the example's 8
    # the slices read the example's -8, and traces at other lengths (aligned in order) move with the length
    mine = _slots(model)
    frozen = [(n, j, v) for (n, j, v), *others in zip(mine, *[_aligned(mine, _slots(_trace(t))) for t in (30, 39)])
              if len({int(v.ravel()[0]), *(int(o.ravel()[0]) for o in others)}) > 1]
    assert [(n.op_type, j, v.tolist()) for n, j, v in frozen] == [("Slice", 1, [-8]), ("Slice", 2, [-8])]
    specs = [{"op": "rewrite", "node": n.name, "rewrite": "runtime_int", "name": n.input[j],
              "elements": [{"k": 0, "input": "x", "axis": 1, "s": -1, "r": 0, "q": 2, "b": 0}]} for n, j, _ in frozen]
    fixed = apply(model, Patch({"op": "sequence", "patches": specs}, "dynamic-axes", "", ""))
    np.testing.assert_array_equal(_run(fixed, x), want)
