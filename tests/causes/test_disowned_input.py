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


def test_a_fused_node_reading_the_inputs_own_input_disowns_nothing():
    """The TorchScript exporter fuses ``nll_loss(log_softmax(scores))`` into one ``SoftmaxCrossEntropyLoss`` that reads
    the scores: the node computes the log-softmax itself, so its found value vouches for the call (forms40w's
    ``clip_nll``: else the right row term's log_softmax was the first call not right, and the drifting column term
    was told by it)."""
    node = helper.make_node("SoftmaxCrossEntropyLoss", ["scores", "labels"], ["loss"], name="sce")
    scores = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]])
    logp = scores - np.log(np.exp(scores).sum(1, keepdims=True))
    vals = {"scores": scores, "labels": np.array([0, 2])}
    assert disowns(logp, "loss", vals, {"loss": node})
    assert not disowns(logp, "loss", vals, {"loss": node}, frozenset({"scores"}))
