"""A torch call on the module's state alone that the file computes otherwise is not taken for a folded constant
(forms45q: AutoGPTQ's ``qweight >> shifts`` and a nibble's ``p.to(int8) >> 4`` on buffers, which the TorchScript
exporter leaves in the file as a truncating ``Div`` on the initializer).  ``torch_align._right`` took every
state-only call for right (an exporter folds ``self.prototypes * 3`` into an initializer of its own layout, so not
finding its value says nothing), and ``call_group`` dropped the nodes that read constants only as size arithmetic:
the headline named the first call fed by the module's input (``torch's linear``), whose weight was already wrong."""
from __future__ import annotations

import numpy as np

from drifttui.core.explain.causes.locate.torch_align import _right

SHIFTED = np.array([[-2, 3], [5, -7]], dtype=np.int8)


def _ops():
    # x (placeholder); w >> 1 on a buffer (state alone, not found); linear(x, that)
    return [("placeholder", "input", np.ones((2, 2), np.float32), [], "float32"),
            ("call_function", "torch.Tensor.__rshift__", SHIFTED, [], "int8"),
            ("call_function", "torch.nn.functional.linear", np.ones((2, 2), np.float32), [0, 1], "float32")]


def test_a_state_call_the_file_computes_otherwise_is_not_right():
    file_value = np.array([[-1, 3], [5, -6]], dtype=np.int8)       # truncated where torch floors
    right = _right(_ops(), {0: "x"}, {"x": np.ones((2, 2), np.float32)}, {}, [file_value])
    assert 1 not in right and 0 in right


def test_a_state_call_the_file_folded_or_holds_is_still_right():
    ops, vals = _ops(), {"x": np.ones((2, 2), np.float32)}
    assert 1 in _right(ops, {0: "x"}, vals, {}, [])                                 # folded: nothing computed
    assert 1 in _right(ops, {0: "x"}, vals, {}, [SHIFTED.copy()])                   # computed as torch does
    assert 1 in _right(ops, {0: "x"}, vals, {}, [np.zeros((3, 2), np.int8)])       # another layout: no say
