"""A float64 tensor of the module held at float32 by the file (``causes/propose/numerics/wide_operand.py``).

torch computes ``x.sub_(buf)`` of a float32 ``x`` and a float64 buffer in float64 and rounds once; the TorchScript
file casts the buffer to float32 (``ImplicitCastForBinaryInplaceOps``' ``type_as``) and subtracts in float32.  On real one-line exports: the proposer finds the node,
the patched file computes what torch computes where the original is off; a float32 buffer, and the dynamo file
(which holds the buffer in float64), give no patch; a constant TorchScript shares through an ``Identity`` is found."""
from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from drifttui.core.explain.causes.propose.numerics.wide_operand import wide_operand_patches
from drifttui.core.onnx.edit.patches import apply

LEVEL = 1000.0 + np.arange(8) * 0.1234567891


class Centre(torch.nn.Module):
    """readings near 1000 centred in place on float64 (or float32) reference levels, in hundredths."""

    def __init__(self, dtype: torch.dtype = torch.float64, copy: bool = False) -> None:
        super().__init__()
        self.register_buffer("level", torch.from_numpy(LEVEL.copy()).to(dtype))
        self.copy = copy

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x + self.level.float() if self.copy else x + 1000.0     # a float32 copy of the levels: torch's float32
        y.sub_(self.level)
        return y * 100.0


def _export(module: torch.nn.Module, x: torch.Tensor, path: Path, dynamo: bool = False) -> onnx.ModelProto:
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (x,), str(path), dynamo=dynamo)
    return onnx.load(str(path))


def _run(model: onnx.ModelProto, x: torch.Tensor) -> np.ndarray:
    s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, {s.get_inputs()[0].name: x.numpy()})[0]


def _inputs() -> torch.Tensor:
    torch.manual_seed(0)
    return torch.randn(6, 8) * 0.01


@pytest.mark.parametrize("copy", [False, True], ids=["alone", "shared-with-a-float32-copy"])
def test_the_patch_computes_the_node_in_float64_with_the_buffers_values(copy, tmp_path):
    module, x = Centre(copy=copy).eval(), _inputs()
    model = _export(module, x, tmp_path / "ts.onnx")
    want = module(x).numpy()
    assert np.abs(_run(model, x) - want).max() > 1e-3          # the file subtracts the level rounded to float32
    patches = wide_operand_patches(SimpleNamespace(model=model, module=""), module, "sub_", "torchscript")
    subs = [p for p in patches if p.spec.get("rewrite") == "operand_wide"
            and next(n for n in model.graph.node if n.name == p.spec["node"]).op_type == "Sub"]
    assert len(subs) == 1 and subs[0].check == "dtype" and subs[0].spec["source"] == "buffer level"
    assert "in-place op (torch's sub_)" in subs[0].why and "ImplicitCastForBinaryInplaceOps" in subs[0].why
    assert np.abs(_run(apply(model, subs[0]), x) - want).max() < 1e-5
    if copy:        # the Add of the float32 copy reads the same folded constant: patched, it is wrong
        others = [p for p in patches if p.spec.get("rewrite") == "operand_wide" and p is not subs[0]]
        assert others and all(np.abs(_run(apply(model, p), x) - want).max() > 1e-3 for p in others)


def test_a_float32_buffer_gives_no_patch(tmp_path):
    f32 = Centre(torch.float32).eval()
    assert wide_operand_patches(SimpleNamespace(model=_export(f32, _inputs(), tmp_path / "f32.onnx"), module=""),
                                f32) == []


@pytest.mark.drifts
def test_the_dynamo_file_gives_no_patch(tmp_path):
    x, f64 = _inputs(), Centre().eval()
    dyn = _export(f64, x, tmp_path / "dyn.onnx", dynamo=True)
    assert np.abs(_run(dyn, x) - f64(x).numpy()).max() < 1e-5   # the dynamo file holds the buffer in float64
    assert wide_operand_patches(SimpleNamespace(model=dyn, module=""), f64) == []
