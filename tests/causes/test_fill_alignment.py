"""The alignment by value (``torch_align``) is not fooled by a mask fill at float32's extreme, nor by a mask.

The fuzzer's program 3047 (``benchmarks/fuzz_drifts.py``): ``F.pairwise_distance(x, y, p=inf)`` exported by the
TorchScript exporter is ``Pow(sum(Pow(d, inf)), 0)``, 1 where torch's is 66, and the row then goes through
``x.tril(-1).masked_fill(x.tril(-1) == 0, finfo.min).softmax(-1)``.  Two things vouched for the wrong distance:

* the masked value's error was floored at 1% of its largest magnitude, the fill's 3.4e38, so 66 against 1 was
  "equal" (``fx_localise.floored_rel``: an element at its dtype's extreme is now left out of the floor and agrees
  only with one saturated on the same side);
* the mask ``== 0`` was found, and a found value vouched for the calls it is computed from: a boolean says only
  which side of 0 they are (``torch_align._right``).

The finding named ``softmax``, then ``tril``; it must name the call that was wrong.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

FILL = float(np.finfo(np.float32).min)


def test_a_fill_at_the_dtypes_extreme_does_not_floor_the_other_elements_errors():
    from drifttui.core.explain.causes.locate.fx_localise import floored_rel

    torch_side = np.array([FILL, 66.0, -27.0, FILL], dtype=np.float32)
    file_side = np.array([FILL, 1.0, -27.0, FILL], dtype=np.float32)
    assert floored_rel(torch_side, file_side) > 0.9            # 65 / (66 + 0.66)
    assert floored_rel(torch_side, torch_side.copy()) == 0.0
    half = np.array([-np.inf, 66.0, -27.0, -65504.0], dtype=np.float16)   # the float16 file's fill, either way
    assert floored_rel(torch_side, half) == 0.0
    lost = np.array([0.0, 66.0, -27.0, FILL], dtype=np.float32)      # a fill the file lost is an error
    assert floored_rel(torch_side, lost) > 0.9


def test_a_fill_is_no_value_holds_scale():
    from drifttui.core.explain.causes.locate.value_match import _holds, _top

    want = np.array([[FILL, FILL], [66.0, FILL]], dtype=np.float32)
    assert _top(want) == 66.0
    assert _holds(want, "float32", np.array([[FILL, FILL], [1.0, FILL]], dtype=np.float32), 1e-4, _top(want)) is None
    assert _holds(want, "float32", want.copy(), 1e-4, _top(want)) == 0.0


class DistanceThenMaskedSoftmax(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem(x) * 10.0
        d = F.pairwise_distance(h, h.flip(-1) * 0.75 - 0.1, p=float("inf"), eps=0.5, keepdim=True)
        z = torch.cat([d, h[:, 1:]], 1).tril(-1)
        return z.masked_fill(z == 0, torch.finfo(z.dtype).min).softmax(-1)


def model() -> nn.Module:
    torch.manual_seed(0)
    return DistanceThenMaskedSoftmax().eval()


def rows() -> torch.Tensor:
    return torch.randn(6, 32)


@pytest.mark.drifts        # the re-exports the explanation tries
def test_the_wrong_distance_is_named_not_the_masked_softmax_after_it(tmp_path):
    from tests.causes.conftest import explained_small

    _, _, _, res, exp = explained_small(tmp_path, __file__, model, rows)
    head = exp.findings[0]
    assert head.verified, head.message
    assert head.torch_op == "torch.pairwise_distance", head.message
