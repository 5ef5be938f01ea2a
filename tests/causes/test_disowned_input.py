"""A found value vouches for no input the file computes otherwise (``locate/torch_align.py``'s ``disowns``;
held-out batch 42H, tests/causes/forms42h.py's ``frame_stats``).

``count.clamp(min=1)`` of frame counts ``(L - 64) // 16 + 1`` is found in a TorchScript file where torch's count is 0
and the file's 1 (its int ``//`` truncates): the clamp maps both to 1.  Before, the found clamp vouched for every call
it was computed from, so the first call "not right" was the ``[:, None]`` after the count, and the verified
``floor_div`` rewrite was told "in torch's __getitem__"; ``test_forms42h.py``'s ``frame_stats`` asserts
"in torch's __floordiv__" (failed before)."""
from __future__ import annotations

import numpy as np
from onnx import helper

from drifttui.core.explain.causes.locate.torch_align import disowns


def _clip() -> dict:
    node = helper.make_node("Clip", ["count", "one"], ["clamped"], name="clip")
    return {"clamped": node}


def test_a_found_value_disowns_an_input_the_file_holds_otherwise():
    torch_count = np.array([0, 3, 7, 12, 0, 1])
    vals = {"count": np.array([1, 3, 7, 12, 1, 1]), "one": np.array(1)}
    assert disowns(torch_count, "clamped", vals, _clip())


def test_an_input_held_in_another_layout_is_not_disowned():
    torch_count = np.array([[0, 3, 7], [12, 0, 1]])
    vals = {"count": torch_count.T.copy(), "one": np.array(1)}
    assert not disowns(torch_count, "clamped", vals, _clip())


def test_an_input_the_node_does_not_read_at_its_size_is_not_disowned():
    vals = {"count": np.arange(4), "one": np.array(1)}      # a reduction's input, another element count
    assert not disowns(np.array([0, 3, 7, 12, 0, 1]), "clamped", vals, _clip())
