"""A container that changes its child's output in place (``y += 1``), and the same model without it."""
import torch


class Block(torch.nn.Module):
    def __init__(self, add: bool) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)
        self.add = add

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x)
        if self.add:
            y += 1.0          # in place on the child's output tensor
        return y


class Net(torch.nn.Module):
    def __init__(self, add: bool) -> None:
        super().__init__()
        self.block = Block(add)
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.block(x))


def _build(add: bool) -> Net:
    torch.manual_seed(0)
    return Net(add).eval()


def with_add() -> Net:
    return _build(True)


def without_add() -> Net:
    return _build(False)
