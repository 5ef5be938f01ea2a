"""capture/readers.py: torch's saturated value and a file's finite stand-in agree only when the file's own readers
cannot tell them apart (a real ONNX Runtime run of an Add -> Softmax, no mock)."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import torch
from onnx import TensorProto, helper

from drifttui.core.capture.readers import readers_agree, saturated_only, with_file_values

MIN = float(torch.finfo(torch.float32).min)


def _softmax_run():
    g = helper.make_graph([helper.make_node("Add", ["s", "m"], ["x"]), helper.make_node("Softmax", ["x"], ["y"])],
                          "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4]) for n in ("s", "m")],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    sess = ort.InferenceSession(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString(),
                                providers=["CPUExecutionProvider"])
    return lambda feeds: dict(zip(["y"], sess.run(["y"], feeds)))


def test_only_elements_where_torch_saturates_are_candidates():
    t = torch.tensor([1.0, MIN, 2.0, MIN])
    mask = saturated_only(t, np.array([1.0, -1e4, 2.0, -1e4], np.float32))
    assert mask is not None and mask.tolist() == [False, True, False, True]
    assert saturated_only(t, np.array([1.5, -1e4, 2.0, -1e4], np.float32)) is not None    # a finite error: measured
    assert saturated_only(torch.tensor([7e4, 1.0]), np.array([np.inf, 1.0], np.float32)) is None   # an overflow
    assert saturated_only(t, np.array([1.0, -np.inf, np.nan, -1e4], np.float32)) is None           # NaN elsewhere
    fixed = with_file_values(t, np.array([1.0, -1e4, 2.0, -1e4], np.float32), mask)
    assert fixed.tolist() == [1.0, -1e4, 2.0, -1e4]


def test_a_softmax_reader_tells_a_stand_in_from_minus_infinity_only_when_it_sees_it():
    run = _softmax_run()
    s = np.array([[0.5, -1.0, 2.0, 0.1]], np.float32)
    torch_mask = np.array([[0.0, 0.0, MIN, MIN]], np.float32)
    feeds = {"s": s, "m": torch_mask}
    first = run(feeds)
    assert readers_agree(run, feeds, first, {"m": np.array([[0.0, 0.0, -1e4, -1e4]], np.float32)})
    assert not readers_agree(run, feeds, first, {"m": np.array([[0.0, 0.0, -5.0, -5.0]], np.float32)})
    every = {"s": s, "m": np.full((1, 4), MIN, np.float32)}           # a fully masked row: the Softmax reads them
    assert not readers_agree(run, every, run(every), {"m": np.full((1, 4), -1e4, np.float32)})
