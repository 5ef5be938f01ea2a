"""A verified patch written into a hazard finding of a child of the origin (the dtype check's ``Cast to float16`` /
float16 initializer warning at ``body.lin``) tells the origin's story, so it is the origin's finding and is told
by the origin's torch op (conclude.merge): forms45t's ``frame_diff`` TorchScript, an autocast Linear whose float16
sum with a DC level ONNX Runtime reads unrounded, was headed at ``body.lin`` naming no torch op, while the same
drift in the dynamo file (no such hazard shares the patch's nodes) opened "in torch's add"."""
from __future__ import annotations

import torch
from torch import nn

from tests.causes.conftest import explained_small


class Body(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=torch.float16):
            f = self.lin(x).view(x.shape[0], 8, 4) + 300.0
            d = f[:, 1:] - f[:, :-1]
        return d.float().flatten(1)


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem, self.body = nn.Linear(32, 32), Body()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x) * 3.0)


def model() -> nn.Module:
    torch.manual_seed(0)
    return Model().eval()


def rows() -> torch.Tensor:
    return torch.randn(6, 32)


def test_a_childs_hazard_carrying_the_verified_story_is_the_origins_and_names_its_torch_op(tmp_path):
    _, _, _, result, exp = explained_small(tmp_path, __file__, model, rows, samples=3)
    assert result.verdict == "drift" and result.drift_origin.module == "body"
    head = exp.findings[0]
    assert (head.check, head.verified, head.module) == ("dtype", True, "body"), (head.module, head.message)
    assert head.message.startswith("in torch's add"), head.message
