"""Tiny models for the engine tests, built in code."""
from __future__ import annotations

import torch
from torch import nn


class BnInplace(nn.Module):
    """Conv -> BatchNorm -> ReLU(inplace): without a clone the BN capture sees post-ReLU values."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(8, 4, 3, padding=1)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
            self.bn.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2(self.relu(self.bn(self.conv(x))))


class Twice(nn.Module):
    """One module called twice with a functional op in between; a tuple-returning child."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 8)
        self.act = nn.Tanh()
        self.split = Split()
        self.fc2 = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor):
        h = self.act(self.fc1(x))
        h = self.act(h * 2.0 + 1.0)
        a, b = self.split(h)
        return self.fc2(a) + self.fc2(b), a


class Split(nn.Module):
    def forward(self, x: torch.Tensor):
        return x[:, :4] * 3.0, x[:, 4:] - 1.0


class Scaled(nn.Module):
    """A functional op inside a container whose semantics we perturb in tests."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.out = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.sigmoid(self.fc(x)) * 4.0)


def bn_inplace() -> nn.Module:
    torch.manual_seed(0)
    return BnInplace().eval()


def twice() -> nn.Module:
    torch.manual_seed(0)
    return Twice().eval()


def scaled() -> nn.Module:
    torch.manual_seed(0)
    return Scaled().eval()


def raises() -> nn.Module:
    raise RuntimeError("weights are missing\n  looked for them in ckpt/latest.pt")     # a detail on a second line


def not_a_module():
    return {"weights": 1}


def nan_model() -> nn.Module:
    class NanOut(nn.Module):
        def forward(self, x):
            return x * float("nan")
    return NanOut().eval()


def inputs_8() -> torch.Tensor:
    return torch.randn(2, 8)


def inputs_img() -> torch.Tensor:
    return torch.randn(1, 3, 16, 16)


class TwoInputs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 4)
        self.b = nn.Linear(6, 4)

    def forward(self, left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
        return self.a(left) * self.b(right)


def two_inputs() -> nn.Module:
    torch.manual_seed(0)
    return TwoInputs().eval()


def two_inputs_dict():
    return {"right": torch.randn(2, 6), "left": torch.randn(2, 8)}


class Swapped(nn.Module):
    """Returns two same-shaped values in the reverse of the order they are computed."""

    def forward(self, x):
        b = x + 1.0
        a = x * 2.0
        return a, b


class SwappedOuter(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l = nn.Linear(8, 8)
        self.f = Swapped()
        self.o = nn.Linear(8, 2)

    def forward(self, x):
        a, b = self.f(self.l(x))
        return self.o(a - 3 * b)


class PassThrough(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 8)

    def forward(self, x):
        return x, self.a(x)


class PassOuter(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.p = PassThrough()
        self.o = nn.Linear(8, 2)

    def forward(self, x):
        x0, y = self.p(x)
        return self.o(x0 + y)


class SharedLinear(nn.Module):
    """One Linear registered under two names and called twice."""

    def __init__(self) -> None:
        super().__init__()
        lin = nn.Linear(8, 8)
        self.p = lin
        self.q = lin
        self.o = nn.Linear(8, 2)

    def forward(self, x):
        return self.o(self.q(torch.relu(self.p(x))))


class HalfLinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 8).half()
        self.b = nn.Linear(8, 2)

    def forward(self, x):
        return self.b(self.a(x.half()).float())


class MixesDim0(nn.Module):
    """dim 0 is a token axis, not a batch: a softmax runs over it."""

    def __init__(self) -> None:
        super().__init__()
        self.l1 = nn.Linear(8, 8)
        self.l2 = nn.Linear(8, 2)

    def forward(self, x):
        return self.l2(torch.softmax(self.l1(x), dim=0) * 10)


def off_identity(cls) -> nn.Module:
    """``cls()`` seeded, its 1-D parameters moved off their initial values (norms that are not the identity,
    biases that are not 0: a value that equals another would tie in the mapping), in eval mode."""
    torch.manual_seed(0)
    m = cls()
    with torch.no_grad():
        for p in m.parameters():
            if p.ndim == 1:
                p.add_(torch.randn(p.shape) * 0.3)
    return m.eval()


def _seeded(cls):
    def build():
        torch.manual_seed(0)
        return cls().eval()
    return build


swapped = _seeded(SwappedOuter)
passthrough = _seeded(PassOuter)
shared_linear = _seeded(SharedLinear)
half_linear = _seeded(HalfLinear)
mixes_dim0 = _seeded(MixesDim0)
