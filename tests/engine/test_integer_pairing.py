"""Content pairing of a call's same-shaped inputs (``plan/pairing.pair_inputs_by_content``): a float value takes the
closest torch input (it may have drifted), an integer value (indices, lengths) only the one it equals.  Session 40's
packed LSTM (batch 41D): the file's int32 ``sequence_lens`` took torch's sorted indices, the closer of the two
``PackedSequence`` index tensors, and the local graph fed them to ONNX Runtime's LSTM as an int64 input: exit 3."""
from __future__ import annotations

import numpy as np

from drifttui.core.prepare.plan.pairing import pair_inputs_by_content


def _pair(onnx_value: np.ndarray) -> dict:
    torch_values = {(1, 2): np.array([0, 3, 1, 2]), (1, 3): np.array([0, 2, 3, 1])}    # sorted / unsorted indices
    return pair_inputs_by_content({1: [([2, 3], ["v"])]}, {}, lambda names: {"v": onnx_value},
                                  lambda keys: {k: torch_values[k] for k in keys})


def test_an_integer_value_equal_to_no_input_is_left_unpaired():
    assert _pair(np.array([1, 3, 1, 2], dtype=np.int32)) == {}     # 1 from the sorted indices, 2 from the others


def test_an_integer_value_is_paired_with_the_input_it_equals():
    assert _pair(np.array([0, 2, 3, 1], dtype=np.int32)) == {"v": (1, 3)}


def test_a_float_value_still_takes_the_closest_input():
    assert _pair(np.array([0.01, 3.0, 1.0, 2.0], dtype=np.float32)) == {"v": (1, 2)}


def test_the_one_integer_value_that_fits_the_one_input_is_paired_though_it_drifted():
    # batch 44M's padded k-NN: TopK's indices (a size unknown in the TorchScript file) are the embedding's only input;
    # their tie order differs from torch's, and left unpaired the embedding computed TopK itself: a false origin
    pair = pair_inputs_by_content({1: [([2], ["v"])]}, {}, lambda names: {"v": np.array([0, 5, 1], dtype=np.int64)},
                                  lambda keys: {k: np.array([0, 1, 5]) for k in keys})
    assert pair == {"v": (1, 2)}


def test_an_integer_value_of_another_shape_is_still_not_the_one_input():
    pair = pair_inputs_by_content({1: [([2], ["v"])]}, {}, lambda names: {"v": np.array([0, 5], dtype=np.int64)},
                                  lambda keys: {k: np.array([0, 1, 5]) for k in keys})
    assert pair == {}
