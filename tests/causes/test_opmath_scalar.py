"""A Python scalar of a float16 arithmetic op (``causes/propose/numerics/opmath_scalar.py``,
``onnx/edit/numerics/opmath_scalar.py``).

torch's CPU ``x_half / 86400.0`` divides in float32 by 86400 and rounds the quotient once; both exporters write
86400 as a float16 constant, inf, so the file's quotient is 0.  On a hand-made graph the edit computes the node
in float32 with torch's number; on real exports of a one-line module (both exporters) the proposer finds the
number (the FX call's for dynamo, the torch program's calls for TorchScript) and proposes nothing for a number
float16 holds (3600)."""
from __future__ import annotations

import contextlib
import io
import warnings
from types import SimpleNamespace

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.torch_program import numeric_calls, program
from drifttui.core.explain.causes.propose.numerics.opmath_scalar import opmath_scalar_patches, rounded
from drifttui.core.onnx.edit.patches import Patch, apply


class Fraction(torch.nn.Module):
    def __init__(self, period: float) -> None:
        super().__init__()
        self.period = period

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (torch.round(x.abs() * 500.0).half() / self.period).float()


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


def _hand_made() -> onnx.ModelProto:
    inf = numpy_helper.from_array(np.asarray(np.inf, np.float16), "period")      # 86400 as float16 holds it
    nodes = [helper.make_node("Cast", ["x"], ["h"], name="half", to=10),
             helper.make_node("Div", ["h", "period"], ["q"], name="div"),
             helper.make_node("Cast", ["q"], ["y"], name="widen", to=1)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6, 32])], [inf])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _export(module: torch.nn.Module, x: torch.Tensor, dynamo: bool, path: str) -> onnx.ModelProto:
    quiet = contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO())
    with warnings.catch_warnings(), quiet[0], quiet[1]:
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (x,), path, dynamo=dynamo)
    return onnx.load(path)


def _calls(module: torch.nn.Module, x: torch.Tensor):
    """the module's torch program (torch.export, decomposed as the dynamo exporter does): its numeric calls."""
    gm = program(SimpleNamespace(cache={}), "m", module, [x])
    return lambda prefix: numeric_calls(gm, prefix)


def _case(model: onnx.ModelProto, x: torch.Tensor, want: torch.Tensor) -> Case:
    return Case(model, {model.graph.input[0].name: x.numpy()}, {model.graph.output[0].name: want.numpy()},
                "", 0, 0, 1e-4, 1e-4)


def test_rounded_holds_what_float16_and_bfloat16_hold():
    assert rounded(86400.0, 10) == np.inf and rounded(1e-8, 10) == 0.0 and rounded(3600.0, 10) == 3600.0
    assert rounded(0.1, 10) == float(np.float16(0.1))
    assert rounded(86400.0, 16) == float(torch.tensor(86400.0).bfloat16()) and rounded(1e39, 16) == np.inf
    assert rounded(0.1, 16) == float(torch.tensor(0.1).bfloat16())


def test_the_node_computed_in_float32_with_torchs_number_computes_what_torch_computes():
    x = torch.randn(6, 32).abs().mul(500.0).round()
    want = (x.half() / 86400.0).float().numpy()
    assert np.abs(_run(_hand_made(), x.numpy())).max() == 0.0                  # divided by inf
    fixed = apply(_hand_made(), Patch({"op": "rewrite", "rewrite": "opmath_scalar", "node": "div", "input": 1,
                                       "value": 86400.0, "low": 10}, "dtype", "", ""))
    onnx.checker.check_model(fixed, full_check=True)
    assert np.abs(_run(fixed, x.numpy()) - want).max() <= 2e-4 * np.abs(want).max()   # one float16 rounding
    assert np.abs(want).max() > 0.005


@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
def test_the_proposer_finds_torchs_number_and_the_patch_removes_the_drift(tmp_path, dynamo):
    x = torch.randn(6, 32)
    module = Fraction(86400.0).eval()
    want = module(x)
    model = _export(module, x, dynamo, str(tmp_path / "f.onnx"))
    patches = opmath_scalar_patches(_case(model, x, want), _calls(module, x))
    assert [(p.check, p.spec["rewrite"], p.spec["value"]) for p in patches] == [("dtype", "opmath_scalar", 86400.0)]
    assert "86400" in patches[0].why and "inf" in patches[0].why
    assert np.abs(_run(model, x.numpy())).max() == 0.0
    fixed = _run(apply(model, patches[0]), x.numpy())
    assert np.abs(fixed - want.numpy()).max() <= 2e-4 * want.abs().max().item()


@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
def test_a_number_float16_holds_gets_no_patch(tmp_path, dynamo):
    x = torch.randn(6, 32)
    module = Fraction(3600.0).eval()
    model = _export(module, x, dynamo, str(tmp_path / "f.onnx"))
    assert opmath_scalar_patches(_case(model, x, module(x)), _calls(module, x)) == []


@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
def test_every_scalar_of_a_float16_chain_is_put_back_in_one_patch(tmp_path, dynamo):
    """forms42i's ``half_scaled_topk``: ``(l.half() * 1.7 + 0.3) / 0.6`` then a top-k cut.  Each of the three numbers
    is written in float16; torch holds each in float32, so the values that tie at the cut in float16 are others.  No
    one number put back removes the drift (the other two still move values across the cut); the three together do,
    in one ``sequence`` patch tried first (as double_scalar.py does for float64 constants).  The TorchScript file
    compares the float16 quotient with a float16 ``Less``, which ONNX Runtime's CPU runs through float32 Casts it
    inserts, merging the patch's rounding Cast into them: the comparison read the unrounded quotient until a
    comparison reading a rewritten node's result read it through explicit Casts to float32 (the same numbers)."""
    from tests.causes.forms42i import HalfScaledTopK

    torch.manual_seed(0)
    module = HalfScaledTopK().eval()
    x = torch.randn(6, 32) * 3.0
    want = module(x)
    model = _export(module, x, dynamo, str(tmp_path / "f.onnx"))
    patches = opmath_scalar_patches(_case(model, x, want), _calls(module, x))
    first = patches[0].spec
    assert first["op"] == "sequence" and sorted(p["value"] for p in first["patches"]) == [0.3, 0.6, 1.7]
    assert patches[0].check == "dtype" and all(w in patches[0].why for w in ("1.7", "0.3", "0.6"))
    assert np.abs(_run(model, x.numpy()) - want.numpy()).max() > 1e-3
    assert np.abs(_run(apply(model, patches[0]), x.numpy()) - want.numpy()).max() <= 1e-6
    singles = [p for p in patches[1:] if p.spec.get("op") != "sequence"]
    assert len(singles) == 3 and all(np.abs(_run(apply(model, p), x.numpy()) - want.numpy()).max() > 1e-3
                                     for p in singles)
