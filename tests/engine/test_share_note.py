"""A negative share of the output error is said, not left bare (session 36's new-user review): the layer computed in
float32 makes the outputs' error larger.  Named with its share, three at most, said once; nothing when none is."""
from __future__ import annotations

from drifttui.core.capture.shares import negative_note
from drifttui.core.runtime.torch_hooks import Call


def _calls(*names):
    return [Call(index=i, module=n, cls="Linear", call=0, depth=1, parent=0) for i, n in enumerate(names)]


def test_a_negative_share_is_explained_once_with_the_worst_first():
    calls = _calls("", "a", "b", "c", "d", "e")
    note = negative_note({1: 0.4, 2: -0.02, 3: -0.18, 4: -0.01, 5: -0.05, 0: -0.3}, calls)
    assert len(note) == 1
    assert note[0].startswith("a negative share ((root) -30%, c -18%, e -5% and 2 more): computing that layer in "
                              "float32 makes the outputs' error larger")


def test_no_negative_share_no_note():
    assert negative_note({1: 0.4, 2: 0.0}, _calls("", "a", "b")) == []
    assert negative_note({}, _calls("")) == []
