"""Of the ONNX values that hold a torch call's value equally well, the call's own is the first the graph computes.

TorchScript's ``atan2(x > 0, y)`` writes the mask's ``Greater`` (``/body/Greater``) and, inside the atan2 lowering,
``Greater(Cast(mask), 0)`` (``/body/Greater_1``): both hold ``gt``'s value exactly.  The tie was broken by name, and
``Greater_1`` sorts before ``Greater``, so ``gt`` was found at the atan2's quadrant test and owned it: a verified
boundary patch there was told as torch's ``gt``, not ``atan2`` (fuzzK 36039, TorchScript)."""
from __future__ import annotations

import numpy as np


def test_a_tie_goes_to_the_value_computed_first():
    from drifttui.core.explain.causes.locate.value_match import found_values

    x = np.array([[0.5, -1.0, 2.0], [-3.0, 0.0, 1.5]], np.float32)
    mask = x > 0
    ops = [("placeholder", "x", x, [], "float32"),
           ("call_function", "torch.Tensor.gt", mask, [0], "bool")]
    vals = {"x": x, "/body/Greater_output_0": mask, "/body/Cast_1_output_0": mask.astype(np.int64),
            "/body/Greater_1_output_0": mask.copy()}
    found, _, others = found_values(ops, vals, 1e-4)
    assert found[1] == "/body/Greater_output_0"
    assert "/body/Greater_1_output_0" in others[1]
