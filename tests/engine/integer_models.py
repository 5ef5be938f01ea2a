"""Models whose integers step (tests/engine/test_integer_steps.py): a box head makes int64 coordinates of scale ~1000
from floats and an embedding looks them up (LayoutLM's 2-D positions, batch 47A)."""
from __future__ import annotations

import torch
from torch import nn

WIDTH = 256


class Lookup(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(50, 16)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.emb(ids % 50)


class OwnBoxes(nn.Module):
    """The float16 box head and its truncation in one call: ONNX Runtime drops the float16 rounding of the product
    the Sigmoid reads, one coordinate of ~1000 lands on the next integer (1e-3 of its scale: inside a float16
    budget), and the lookup (fed torch's coordinates, it agrees) takes another row."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(WIDTH, 8) / 16)
        self.look = Lookup()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=torch.float16):
            boxes = torch.sigmoid(x @ self.w) * 1000
        return self.look(boxes.long())


class UpstreamBoxes(nn.Module):
    """The same coordinates from a float32 ``Linear`` child: the step is crossed by float32 noise the child's output
    carries within the tolerance, not by anything the call computes (no module owns it: ``unattributed``)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(WIDTH, 8)
        self.look = Lookup()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.look((self.lin(x) * 1e7).long())


class Net(nn.Module):
    def __init__(self, body: nn.Module) -> None:
        super().__init__()
        self.body = body
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


def own_boxes() -> nn.Module:
    torch.manual_seed(0)
    return Net(OwnBoxes()).eval()


def upstream_boxes() -> nn.Module:
    torch.manual_seed(0)
    return Net(UpstreamBoxes()).eval()


def rows() -> torch.Tensor:
    return torch.randn(16, WIDTH)
