"""A module called inside a ``torch.autocast`` region of a dynamo file is no orphan of its parent's output.

torch.export keeps an autocast region as a ``wrap_with_autocast`` higher-order op; the dynamo exporter inlines it,
and the nodes of the calls inside it carry the scope of the module that opened the region only (the float16
``Gemm`` of ``body.lin`` is scoped ``body``).  ``prepare/plan/orphans.py`` stood an Identity for such a call (no
node, a computed float output) on its parent's output when it was the parent's last child, although the parent
computes more after it: the Linear was then compared with the parent's final value (1-cos 0.9) and named a false
origin in a file within its float16 budget (forms41g's ``rbf_scores`` and ``intensity`` in the screen).  A call's
output is its parent's output only when the parent hands that very tensor back (``TensorRef.inner``)."""
from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F
from torch import nn

HERE = __file__


class _Body(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=torch.float16):
            y = self.lin(x)
        return torch.log(torch.cumsum(torch.exp(F.relu(y.float())), -1))


class _Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(16, 16)
        self.body = _Body()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x))


def tiny_autocast() -> nn.Module:
    torch.manual_seed(0)
    return _Tiny().eval()


def rows_inputs() -> torch.Tensor:
    return torch.randn(6, 16)


def test_a_call_inside_an_autocast_region_is_not_given_its_parents_output(tmp_path):
    from drifttui.core.prepare.stage import prepare
    from drifttui.core.result import Config

    path = tmp_path / "tiny.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(tiny_autocast(), (rows_inputs(),), str(path), dynamo=True)
    pr = prepare(Config(model=f"{HERE}:tiny_autocast", inputs=f"{HERE}:rows_inputs", onnx=str(path), samples=1))
    lin = next(c.index for c in pr.calls if c.module == "body.lin")
    assert not any("drifttui_orphan" in n.name for n in pr.index.nodes), "no Identity stands for body.lin"
    assert not pr.plan.calls[lin].outputs, "body.lin is compared with no value (its parent's output is not its own)"
