"""The ``fmod_remainder`` edit (onnx/edit/lowerings/remainder.py) on a real ONNX graph run by ONNX Runtime: both exporters
lower ``torch.remainder`` of floats as ``a - Floor(a / b) * b`` (the formula torch's kernel dropped in
pytorch/pytorch#38293); where ``a / b`` is large the product is rounded at ``a``'s magnitude.  Rewritten as
``fmod`` with the sign moved, the graph computes torch's remainder; the edit refuses a Sub that is no remainder,
and the proposal offers it only on the remainder's Sub."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tests.causes.test_fmod_floor import _remainder_graph, _run


@pytest.mark.parametrize("b", [2 * math.pi, -2 * math.pi, 0.7, -0.3])
def test_the_edited_remainder_of_large_values_is_torchs(b):
    import onnx
    import torch

    from drifttui.core.onnx.edit.lowerings.remainder import apply_fmod_remainder

    torch.manual_seed(0)
    a = torch.randn(4096) * 1e5                      # a phase t * omega, far past one period
    want = torch.remainder(a, b).numpy()
    model = _remainder_graph()
    r0, _ = _run(model, a.numpy(), b)
    assert np.abs(r0 - want).max() > 1e-3            # the lowering: the product rounded at |a| ~ 1e5
    apply_fmod_remainder(model, {"node": "/body/Sub"})
    onnx.checker.check_model(model)
    r, _ = _run(model, a.numpy(), b)
    assert np.array_equal(r, want)                   # torch's value, to the bit


def test_a_sub_that_is_no_remainder_is_refused():
    from onnx import TensorProto, helper

    from drifttui.core.onnx.edit.lowerings.remainder import apply_fmod_remainder, remainder_of

    model = _remainder_graph()
    model.graph.node.append(helper.make_node("Sub", ["a", "fa"], ["d"], name="/body/Sub_1"))
    model.graph.output.append(helper.make_tensor_value_info("d", TensorProto.FLOAT, [None]))
    assert remainder_of(model, model.graph.node[-1]) is None
    with pytest.raises(ValueError, match="is not a remainder"):
        apply_fmod_remainder(model, {"node": "/body/Sub_1"})
