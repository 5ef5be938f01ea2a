"""A lowering that drops torch's NaN (a held-out form of session 28): torchlib's real-input ``aten.angle``
is ``Where(x < 0, pi, 0)``, finite where torch's ``angle(NaN)`` is NaN.  The model fills the NaN with -1
after the call, so torch's output stays finite (pytorch/pytorch#162570's family: angle/atan2 lowerings)."""
import torch
from torch import nn


class Angle(nn.Module):
    def forward(self, h):
        a = torch.angle(torch.sqrt(h))                      # NaN where h < 0, in torch
        return h + torch.where(torch.isnan(a), -1.0, a)


class Shallow(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.op = Angle()
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.op(self.lin(x)))


def angle_shallow():
    torch.manual_seed(0)
    m = Shallow()
    for p in m.parameters():
        nn.init.normal_(p, std=0.3)
    return m.eval()


def inputs():
    torch.manual_seed(1)
    return torch.randn(8, 16)
