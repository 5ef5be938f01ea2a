"""Forms whose right answer names the torch call by the nodes the verifying patch changed (issue 30 point 3, "the op
named in a message is the torch op that was called"), each a planted drift whose call is known:

* ``clamped_logit`` (deep): ``torch.logit(torch.sigmoid(20 s), eps=1e-3)``, the file's clamp bound ``1 - eps`` edited
  from 0.999 to 0.99 (``edit_clamp``, onnx.helper on the exported file).  The file's Sigmoid holds torch's value
  within a few ulps (ONNX Runtime's kernel rounds otherwise, which the alignment used to name as the amplified
  op); the re-export that verifies changes the clamp: ``torch.logit`` is the call.
* ``linear_logit`` (deep): ``torch.logit(torch.sigmoid(20 lin(x)), eps=1e-3)`` with ``lin`` a child module, the same
  edit.  ``logit(sigmoid(z))`` is ``z`` within the tolerance, so the file's ``z`` (the child's output the case is
  fed) holds the logit's value by coincidence: it cannot be the logit's, being computed before the logit's input.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from tests.causes.forms30 import seeded_deep as _deep

WIDTH = 32
BOUND, EDITED = 0.999, 0.99         # the clamp's upper bound 1 - eps, and the planted one


class ClampedLogit(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logit(torch.sigmoid(x * 20.0), eps=1e-3)


class LinearLogit(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logit(torch.sigmoid(self.lin(x) * 20.0), eps=1e-3)


def clamped_logit() -> nn.Module: return _deep(ClampedLogit)          # noqa: E704
def linear_logit() -> nn.Module: return _deep(LinearLogit)            # noqa: E704


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, WIDTH)


def edit_clamp(path: str) -> int:
    """The file at ``path`` with every scalar constant equal to ``BOUND`` set to ``EDITED`` (a TorchScript file's
    Constant node, a dynamo file's initializer); the number edited."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(path)
    tensors = [t for t in model.graph.initializer] + \
        [a.t for n in model.graph.node if n.op_type == "Constant" for a in n.attribute if a.name == "value"]
    edited = 0
    for t in tensors:
        a = numpy_helper.to_array(t)
        if a.size == 1 and a.dtype.kind == "f" and abs(float(a.reshape(-1)[0]) - BOUND) < 1e-6:
            t.CopyFrom(numpy_helper.from_array(np.full(a.shape, EDITED, a.dtype), t.name))
            edited += 1
    onnx.save(model, path)
    return edited
