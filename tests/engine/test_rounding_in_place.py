"""capture/rounding.py recomputes a module that computes in place (timm's MobileNetV3 ``act2``,
``ReLU(inplace=True)``) from its input as it was before its forward, as it does an out-of-place one.

Before session 27 it gave up on it ("its input is gone"): the layer kept the worst-case bound, was judged
with its output, and an alpha planted in an int8 MobileNetV3's ``act2`` (its own error 3.2x that bound)
passed under the output budget (tests/deploy/test_drift_matrix.py, QDQ / QOperator alpha)."""
from __future__ import annotations

import torch
from torch import nn

from drifttui.core.capture.rounding import RoundingSink, Target
from drifttui.core.runtime.guards import safe_forward
from drifttui.core.runtime.torch_hooks import Hooks


class TwoActs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.act_in_place = nn.Hardswish(inplace=True)
        self.act = nn.Hardswish()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        return self.act_in_place(y.clone()) + self.act(y)


def _calls(hooks: Hooks, sample) -> dict[str, int]:
    with hooks.installed():
        hooks.begin(None, tracing=True)
        safe_forward(hooks.model, sample, versioned=True)
    return {c.module: c.index for c in hooks.calls}


def test_an_in_place_activation_is_recomputed_from_its_input_as_an_out_of_place_one_is():
    torch.manual_seed(0)
    model = TwoActs().eval()
    sample = ((torch.randn(4, 16),), {})
    expected = model(*sample[0])
    hooks = Hooks(model)
    calls = _calls(hooks, sample)
    # int8: inputs on a grid of 1/127 of their max, the output on its own quantizer's grid
    want = {calls[m]: Target("int8", 1 / 127, 0.0, False, out_step=1 / 127) for m in ("act_in_place", "act")}
    sink = RoundingSink(want)
    with hooks.installed():
        hooks.begin(sink)
        got = safe_forward(model, sample, versioned=True)
    hooks.begin(None)
    same, in_place = sink.rel.get(calls["act"]), sink.rel.get(calls["act_in_place"])
    assert same is not None and same > 0, sink.rel
    assert in_place == same, (in_place, same)           # the same input, the same rounding: the same measure
    assert torch.equal(got[0], expected)                # the model's own values untouched by the recomputation
    assert not sink._before                             # nothing kept past its call
