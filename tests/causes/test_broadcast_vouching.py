"""A found output of a call with several outputs vouches for its own input only (``forward_record.own_inputs``,
session 46).  ``torch.distributions.Bernoulli(probs=p).log_prob(y)`` broadcasts its logits ``log(p) - log1p(-p)``
with the labels (``broadcast_tensors(logits, y)``): the file holds the broadcast labels, which are torch's, and the
record said that output came from the logits too, so the logits, ``log`` and ``log1p`` counted as right and the
TorchScript file's drift (ONNX Runtime's ``Sigmoid`` tail, read by ``log(p)``) was told by the
``binary_cross_entropy_with_logits`` after them (forms46v's ``bern_probs``), not by ``torch.sigmoid``."""
from __future__ import annotations

import numpy as np
import torch

from drifttui.core.explain.causes.locate.forward_record import record
from drifttui.core.explain.causes.locate.torch_align import _right


class _Broadcasts(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("y", torch.tensor([0.0, 1.0, 0.0, 1.0]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = x.sigmoid().log()
        a, b = torch.broadcast_tensors(logits, self.y)
        return a * b


def _ops() -> list:
    with torch.no_grad():
        return record(_Broadcasts(), (torch.randn(3, 4),))[0]


def test_each_output_of_broadcast_tensors_comes_from_its_own_input_only():
    ops = _ops()
    k = {op[1]: i for i, op in enumerate(ops)}
    outs = [i for i, op in enumerate(ops) if op[1] == "torch.broadcast_tensors"]
    assert len(outs) == 2, [op[1] for op in ops]
    assert ops[outs[0]][3] == [k["torch.Tensor.log"]]
    assert ops[outs[1]][3] == [], ops[outs[1]][3]      # the buffer: not a recorded value


def test_the_found_broadcast_labels_do_not_make_the_logits_right():
    ops = _ops()
    idx = {op[1]: i for i, op in enumerate(ops)}
    labels = [i for i, op in enumerate(ops) if op[1] == "torch.broadcast_tensors"][1]
    # the file holds the input, the sigmoid and the broadcast labels; its log is another value
    found = {0: "x", idx["torch.Tensor.sigmoid"]: "s", labels: "b"}
    vals = {"x": ops[0][2], "s": ops[idx["torch.Tensor.sigmoid"]][2], "b": ops[labels][2]}
    right = _right(ops, found, {k: np.asarray(v) for k, v in vals.items()})
    assert idx["torch.Tensor.log"] not in right, right
