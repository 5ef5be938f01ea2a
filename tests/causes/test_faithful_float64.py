"""The float64 counterfactual of torch (``conditioning._torch64``) is torch's own computation in float64: a call
whose ``__torch_function__`` dispatch drops an argument (``F.l1_loss(..., weight=w)``, pytorch/pytorch#193003)
computes otherwise under any function mode, so the mode that makes the forward's factories float64 is not used for
it (under it the counterfactual lost the weight as the dynamo file did, and "verified" a stability story for a
dropped argument: forms40o's weighted_l1)."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


class Weighted(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.l1_loss(x, y, reduction="none", weight=torch.sigmoid(y))


class Grid(nn.Module):
    """a float32 factory in the forward: made float64 in the counterfactual."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.arange(0.0, 0.32, 0.01)[: x.shape[-1]]


def test_the_float64_counterfactual_keeps_an_argument_a_function_mode_drops():
    from drifttui.core.explain.causes.propose.numerics.conditioning import _torch64

    torch.manual_seed(0)
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    want = Weighted()(x.double(), y.double()).numpy()
    (got,) = _torch64(Weighted(), [x, y])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_the_forwards_float32_factories_are_still_made_float64():
    from drifttui.core.explain.causes.propose.numerics.conditioning import _torch64

    x = torch.randn(2, 32)
    (got,) = _torch64(Grid(), [x])
    want = x.double().numpy() + np.arange(0.0, 0.32, 0.01)[:32]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-15)
