"""A Python scalar written in float16 AND ONNX Runtime's dropped float16 roundings at one origin
(``causes/propose/residual.py``; held-out batch 43J's ``fourier_proj`` / ``fourier_unet``).

diffusers' ``GaussianFourierProjection`` in float16 computes ``log(sigma)[:, None] * W * 2 * np.pi`` and its
``cos`` / ``sin``: the phase reaches hundreds of radians.  Both exporters write ``np.pi`` as the float16 constant
3.140625 (torch holds the Python number in float32 and rounds the product once), and ONNX Runtime's CPU runs the
float16 ``Mul`` chain through float32 Casts, dropping the rounding torch applies after each product.  Each moves the
phase by about as much as the other: neither patch alone removes the drift, and neither removes ten times the error
(the gain the composition of two mechanisms asked of its first patch).  The scalar's patch is not a hypothesis (the
file holds another number than torch's call), so it is composed with the rounding patches of what it leaves whatever
it gained alone, and the pair verifies; its story is the scalar's node's call (``conclude``: the patch's decisive
node), torch's ``mul`` of pi, not the ``cos`` whose value is the first wrong one."""
from __future__ import annotations

import contextlib
import io
import warnings
from types import SimpleNamespace

import numpy as np
import onnx
import pytest
import torch

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import ort_error
from drifttui.core.explain.causes.locate.torch_program import numeric_calls, program
from drifttui.core.explain.causes.propose.numerics.opmath import opmath_patches
from drifttui.core.explain.causes.propose.numerics.opmath_scalar import opmath_scalar_patches
from drifttui.core.explain.causes.propose.residual import residual_patches
from drifttui.core.explain.causes.verify import verify


class HalfPhase(torch.nn.Module):
    """``GaussianFourierProjection(16, scale=16, log=True)`` written out, in float16."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter((torch.randn(16) * 16.0).half(), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        sigma = (x[:, 0].abs() * 20 + 0.002).half()
        phase = torch.log(sigma)[:, None] * self.weight[None, :] * 2 * np.pi
        return torch.cat([torch.cos(phase), torch.sin(phase)], -1).float()


def _case(module: torch.nn.Module, x: torch.Tensor, dynamo: bool, path: str) -> Case:
    quiet = contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO())
    with warnings.catch_warnings(), quiet[0], quiet[1]:
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (x,), path, dynamo=dynamo)
    model = onnx.load(path)
    return Case(model, {model.graph.input[0].name: x.numpy()}, {model.graph.output[0].name: module(x).numpy()},
                "", 0, 0, 1e-4, 1e-4)


@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
def test_a_float16_scalar_is_composed_with_the_dropped_roundings_whatever_it_gained_alone(tmp_path, dynamo):
    torch.manual_seed(0)
    module = HalfPhase().eval()
    x = torch.randn(6, 32) * 3.0
    case = _case(module, x, dynamo, str(tmp_path / "f.onnx"))
    gm = program(SimpleNamespace(cache={}), "m", module, [x])
    scalars = opmath_scalar_patches(case, lambda prefix: numeric_calls(gm, prefix))
    assert [p.spec["value"] for p in scalars] == [np.pi]                 # 2 is held exactly in float16
    before = ort_error(case)
    assert before.fails and before.max_abs > 0.05
    singles = verify(case, [*scalars, *opmath_patches(case)])
    assert singles and not any(t.after.ok and not t.after.fails for t in singles)
    composed = residual_patches(case, singles, before)
    assert composed and all(p.spec["op"] == "sequence" for p in composed)
    assert composed[0].spec["patches"][0]["rewrite"] == "opmath_scalar" and composed[0].check == "dtype"
    assert composed[0].spec["decisive"] == scalars[0].spec["node"]       # the story names torch's mul, not the cos
    after = verify(case, composed[:1])[0].after
    assert after.ok and not after.fails, after.text()
