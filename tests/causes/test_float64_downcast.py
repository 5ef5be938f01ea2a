"""The float64 counterfactual of torch (``conditioning._torch64``) keeps a module's own casts to float32 in float64.

The fuzzer's source-derived pool, seed 30019 (fuzzH, both exporters): ``aten.log2`` then ``aten.tan`` with the
result brought back to float32 in between (``y.to(torch.float32)``, as a model written for float32 does with
``.float()``).  ``tan`` near its poles amplifies the last bit of ``log2`` past the tolerance: torch and ONNX Runtime
each round their float32 otherwise, an ill-conditioned function (``stability``).  The counterfactual ran the module in
float64 but the cast brought it back to float32 before ``tan``, so torch's "float64" value was its float32 one, its own
error 0, and the story unverified (told as the lowering of ``tan``).  The file's side already widens every ``Cast`` to
float32 (``onnx/edit/numerics/widen.py``); torch's side now does the same: a cast of a float64 tensor to float32 keeps
it float64.  A cast to float16 is a precision the model chose, kept.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn


class Downcast(nn.Module):
    """``.float()`` / ``.to(torch.float32)`` / ``.type(torch.float32)`` between two float computations."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.log2(x.abs())
        y = {"float": lambda t: t.float(), "to": lambda t: t.to(torch.float32),
             "to_kw": lambda t: t.to(dtype=torch.float32), "type": lambda t: t.type(torch.float32)}[self.how](y)
        return torch.tan(y)


class Half(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tan(torch.log2(x.abs()).half().to(torch.float32))


@pytest.mark.parametrize("how", ["float", "to", "to_kw", "type"])
def test_a_cast_to_float32_stays_float64_in_the_counterfactual(how):
    from drifttui.core.explain.causes.propose.numerics.conditioning import _torch64

    torch.manual_seed(0)
    x = torch.randn(6, 32)
    (got,) = _torch64(Downcast(how), [x])
    want = np.tan(np.log2(np.abs(x.double().numpy())))
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_cast_to_float16_is_the_models_precision_and_kept():
    from drifttui.core.explain.causes.propose.numerics.conditioning import _torch64

    torch.manual_seed(0)
    x = torch.randn(6, 32)
    (got,) = _torch64(Half(), [x])
    want = Half()(x.double()).double().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)


class Body(nn.Module):
    """30019's call: ``log2`` brought back to float32, then ``tan`` (near its poles on some elements)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tan(torch.log2(x.abs()).to(torch.float32))


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem, self.body = nn.Linear(32, 32), Body()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x) * 3.0)


def model() -> nn.Module:
    torch.manual_seed(30019)
    return Model().eval()


def rows() -> torch.Tensor:
    return torch.randn(6, 32)


@pytest.mark.drifts        # the explanation's re-exports
@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
def test_an_ill_conditioned_call_after_a_cast_to_float32_is_stability_verified(tmp_path, dynamo):
    from tests.causes.conftest import explained_small

    _, _, _, res, exp = explained_small(tmp_path, __file__, model, rows, dynamo=dynamo, samples=3)
    assert res.verdict != "ok" and res.drift_origin is not None and res.drift_origin.module == "body"
    head = exp.findings[0]
    assert head.verified and head.check == "stability", head.message
    assert "tan" in head.message and "ill-conditioned" in head.message, head.message
