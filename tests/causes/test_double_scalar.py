"""A Python number of a float64 op held at float32 precision (``causes/propose/numerics/double_scalar.py``).

torch keeps ``t_double * 0.1`` 's number in double; the dynamo exporter writes it as a float32 constant Cast to
double (torchlib's ``aten_scalar_tensor``), TorchScript's ``round(decimals=)`` writes ``10 ** d`` in float32.  On a
hand-made graph the proposer finds torch's number for the constant and the patch restores it; on real exports of
one-line modules (dynamo: torch's program's ``aten.scalar_tensor`` numbers; TorchScript: the shortest decimal of
the float32 value) the patched file computes what torch computes; a number float32 holds (600.0), a float32 file
and a float64 file whose constants are torch's own give no patch."""
from __future__ import annotations

import contextlib
import io
import math
import warnings
from types import SimpleNamespace

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from drifttui.cli_causes import _describe
from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.torch_program import numeric_calls, program
from drifttui.core.explain.causes.propose.numerics.double_scalar import as_float32, double_scalar_patches
from drifttui.core.onnx.edit.patches import Patch, apply

TWO_PI = 2 * math.pi


class Phase(torch.nn.Module):
    """a time-of-day phase of float64 Unix times: ``sin(2 * math.pi * t / 86400.0)``."""

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        return torch.sin(2 * math.pi * t / 86400.0)


class Bucket(torch.nn.Module):
    """the offset of float64 times within their 10 s bucket: ``t - torch.round(t, decimals=-1)``."""

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        return t - torch.round(t, decimals=-1)


class Minutes(torch.nn.Module):
    def forward(self, t: torch.Tensor) -> torch.Tensor:
        return torch.sin(t * 600.0)


class SessionPhase(torch.nn.Module):
    """times from a float64 base buffer, clamped to a session start written in the code, their phase in the second:
    the dynamo optimizer shares one initializer between the buffer (1.7e9) and the start rounded to float32."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("base", torch.tensor(1.7e9, dtype=torch.float64))

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        start = 1_700_000_000.25
        return torch.remainder((self.base + t).clamp(min=start) - start, 1.0)


def _times() -> torch.Tensor:
    return 1.7e9 + torch.rand(6, 8, dtype=torch.float64) * 1e6


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


def _export(module: torch.nn.Module, x: torch.Tensor, dynamo: bool, path: str) -> onnx.ModelProto:
    quiet = contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO())
    with warnings.catch_warnings(), quiet[0], quiet[1]:
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (x,), path, dynamo=dynamo)
    return onnx.load(path, load_external_data=True)


def _calls(module: torch.nn.Module, x: torch.Tensor):
    gm = program(SimpleNamespace(cache={}), "m", module, [x])
    return lambda prefix: numeric_calls(gm, prefix)


def _case(model: onnx.ModelProto, x: torch.Tensor, want: torch.Tensor) -> Case:
    for k, n in enumerate(model.graph.node):
        n.name = n.name or f"n{k}"
    return Case(model, {model.graph.input[0].name: x.numpy()}, {model.graph.output[0].name: want.numpy()},
                "", 0, 0, 1e-4, 1e-4)


def _hand_made() -> onnx.ModelProto:
    held = numpy_helper.from_array(np.asarray(as_float32(TWO_PI), np.float64), "two_pi")   # 2 pi as float32 holds it
    nodes = [helper.make_node("Mul", ["t", "two_pi"], ["p"], name="mul"),
             helper.make_node("Sin", ["p"], ["y"], name="sin")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("t", TensorProto.DOUBLE, [6, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [6, 8])], [held])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _applied(case: Case, patch: Patch) -> np.ndarray:
    return _run(apply(case.model, patch), next(iter(case.feeds.values())))


def test_the_hand_made_constant_gets_torchs_number_back_in_double():
    t = _times() / 86400.0
    want = torch.sin(TWO_PI * t)
    model = _hand_made()
    case = _case(model, t, want)
    assert np.abs(_run(model, t.numpy()) - want.numpy()).max() > 1e-4          # the drift: 2e4 * 1.7e-7
    patches = double_scalar_patches(case, lambda prefix: [[TWO_PI]] if prefix == "aten.scalar_tensor" else [])
    assert patches and patches[0].check == "dtype"
    assert patches[0].spec == {"op": "replace_constant", "name": "two_pi", "node": "mul", "input": 1, "value": TWO_PI}
    assert "held at float32 precision" in patches[0].why
    assert np.abs(_applied(case, patches[0]) - want.numpy()).max() < 1e-9


def test_without_torchs_number_the_shortest_decimal_is_proposed_and_nothing_for_an_exact_number():
    case = _case(_hand_made(), _times(), torch.zeros(6, 8, dtype=torch.float64))
    assert [p.spec["value"] for p in double_scalar_patches(case, lambda prefix: [])] == [6.2831855]
    held = numpy_helper.from_array(np.asarray(600.0, np.float64), "two_pi")
    case.model.graph.initializer[0].CopyFrom(held)
    assert double_scalar_patches(case, lambda prefix: [[600.0], [0.1]]) == []


@pytest.mark.drifts
def test_a_dynamo_export_gets_torchs_scalar_tensor_number(tmp_path):
    t = _times()
    model = _export(Phase(), t, True, str(tmp_path / "phase.onnx"))
    want = Phase()(t)
    case = _case(model, t, want)
    assert np.abs(_run(model, t.numpy()) - want.numpy()).max() > 1e-3
    patches = double_scalar_patches(case, _calls(Phase(), t))
    assert patches and patches[0].spec["value"] == TWO_PI
    assert np.abs(_applied(case, patches[0]) - want.numpy()).max() < 1e-7


def test_torchscripts_round_decimals_gets_the_decimal_back(tmp_path):
    t = _times()
    model = _export(Bucket(), t, False, str(tmp_path / "bucket.onnx"))
    want = Bucket()(t)
    case = _case(model, t, want)
    assert np.abs(_run(model, t.numpy()) - want.numpy()).max() > 1.0        # every bucket some 25 s off
    patches = double_scalar_patches(case, _calls(Bucket(), t))
    assert [p.spec["value"] for p in patches] == [0.1]
    assert np.abs(_applied(case, patches[0]) - want.numpy()).max() < 1e-6


@pytest.mark.drifts
def test_no_patch_where_float32_holds_the_number_or_the_file_is_float32(tmp_path):
    t = _times()
    exact = _export(Minutes(), t, True, str(tmp_path / "minutes.onnx"))
    assert double_scalar_patches(_case(exact, t, Minutes()(t)), _calls(Minutes(), t)) == []
    t32 = torch.rand(6, 8) * 1e4
    single = _export(Phase(), t32, True, str(tmp_path / "phase32.onnx"))
    assert double_scalar_patches(_case(single, t32, Phase()(t32)), _calls(Phase(), t32)) == []


def test_repair_says_each_restored_number():
    one = {"op": "replace_constant", "name": "c", "node": "mul", "input": 1, "value": 0.1}
    two = {**one, "name": "d", "node": "sub", "value": 37.7749}
    assert _describe(one) == "constant c of node mul set to 0.1"
    assert _describe({"op": "sequence", "patches": [one, two]}) == \
        "constant c of node mul set to 0.1 then constant d of node sub set to 37.7749"


@pytest.mark.drifts
def test_a_buffer_sharing_the_rounded_numbers_initializer_keeps_its_value(tmp_path):
    t = torch.rand(6, 8, dtype=torch.float64) * 1e3 - 100.0
    model = _export(SessionPhase(), t, True, str(tmp_path / "session.onnx"))
    want = SessionPhase()(t)
    case = _case(model, t, want)
    assert np.abs(_run(model, t.numpy()) - want.numpy()).max() > 0.2               # the start 0.25 s off
    patches = double_scalar_patches(case, _calls(SessionPhase(), t))
    assert patches[0].spec["op"] == "sequence"
    assert [(q["node"], q["value"]) for q in patches[0].spec["patches"]] == \
        [(n.name, 1_700_000_000.25) for n in model.graph.node if n.op_type in ("Max", "Sub")][:2]
    assert np.abs(_applied(case, patches[0]) - want.numpy()).max() < 1e-6


class Window(torch.nn.Module):
    """times clamped to a window written in the code and a keyword number: a Clip's bounds and ``add``'s
    ``alpha``, each a float64 op's Python number."""

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        w = t.clamp(1_700_200_000.3, 1_700_800_000.3) - 1.7e9
        return torch.add(w, t - 1.7e9, alpha=0.1)


@pytest.mark.drifts
def test_a_clips_bounds_and_a_keyword_number_are_restored_together(tmp_path):
    t = _times()
    model = _export(Window(), t, True, str(tmp_path / "window.onnx"))
    want = Window()(t)
    case = _case(model, t, want)
    assert np.abs(_run(model, t.numpy()) - want.numpy()).max() > 1.0
    patches = double_scalar_patches(case, _calls(Window(), t))
    assert patches[0].spec["op"] == "sequence"
    assert {q["value"] for q in patches[0].spec["patches"]} >= {1_700_200_000.3, 1_700_800_000.3, 0.1}
    assert np.abs(_applied(case, patches[0]) - want.numpy()).max() < 1e-6
