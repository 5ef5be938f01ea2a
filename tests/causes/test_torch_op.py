"""The op named in a message is the torch op that was called (issue 30 point 3), for a TorchScript file too.

A TorchScript file does not record which torch op each ONNX node computes; ``locate/torch_align.py`` records the
origin module's torch calls as its forward made them (a TorchFunctionMode), aligns their values with the file's
and names the first call whose ONNX nodes differ (pool_level: a long mean whose error a subtracted level
amplifies, named at the mean).  Before it, a TorchScript file's messages named the lowering's ONNX ops only (a float16 ``var``
told by ``ReduceMean, Sub, Mul, Div``).  Forms of different families, exported by the TorchScript exporter and
run in real ONNX Runtime: a float16 reduction and an amplified float32 reduction inside deep models, an integer
lowering, a NaN lowering, a lowering whose value equals torch's mid-way (``atan2``'s quadrant fix-up).  The
field, the message, the fix, the JSON, ``diagnose``, ``check --fail-on error`` and the Python API say the same.
"""
from __future__ import annotations

import json
import warnings

import pytest

from tests.causes.form_suite import explained_forms

# (suite, model) -> (the call the forward made, its name in the message); all TorchScript
NAMED = {
    ("forms39", "half_var"): ("torch.Tensor.var", "torch's var"),             # float16 reduction, deep
    ("forms30", "shift"): ("torch.Tensor.__rshift__", "torch's __rshift__"),   # integer lowering, deep
    ("forms_nan", "masked_amax"): ("torch.Tensor.amax", "torch's amax"),      # NaN lowering
    ("forms37", "pool_level"): ("torch.nn.functional.adaptive_avg_pool2d", "torch's adaptive_avg_pool2d"),
    ("forms33", "atan2_zero"): ("torch.atan2", "torch's atan2"),              # equal to torch's mid-way
    # session 30: named otherwise before (doubtful) or not at all
    # was torch.Tensor.float (a widening cast), then torch.cumsum; since decisive_rounding (sessions 44-46) the op
    # whose float16 rounding ONNX Runtime drops is named: the ``+ 8.0`` CumSum reads unrounded (as forms46x's stencil)
    ("forms39", "half_cumsum"): ("torch.Tensor.add", "torch's add"),
    ("forms34", "baddbmm_attention"): ("torch.baddbmm", "torch's baddbmm"),   # was softmax (0 * bias in its group)
    ("forms33", "argmax_nan"): ("torch.Tensor.argmax", "torch's argmax"),     # was none (a value equal by chance)
    ("forms39", "half_sum"): ("torch.Tensor.sum", "torch's sum"),             # was none (every value fetched agrees)
    ("forms33", "empty_bag_max"): ("torch.nn.functional.embedding_bag", "torch's embedding_bag"),  # was none (a Loop)
    # session 31: was torch.Tensor.mul, ``self.prototypes * 3``: a constant of the module's state the exporter folded
    ("forms40f", "cdist_mm_shallow"): ("torch.cdist", "torch's cdist"),
    # session 42: was torch.Tensor.flatten (the Atan, pi off on half the elements, was taken for atan2's value
    # before the lowering's end, 2 pi off on the DC bin's few: align_graph.share_off)
    ("forms42h", "stft_phase"): ("torch.atan2", "torch's atan2"),
    # session 45: was torch.nn.functional.linear (the shift is on the module's state alone, left in the file as a
    # truncating Div: torch_align._right took it for a folded constant, call_group its nodes for size arithmetic)
    ("forms45q", "nibble_signext"): ("torch.Tensor.__rshift__", "torch's __rshift__"),
}
ORIGIN = {"empty_bag_max": "body.bag"}
FOUND_BY = {"empty_bag_max": "sole"}
FAST = {("forms39", "half_var"), ("forms30", "shift"), ("forms33", "argmax_nan"), ("forms40f", "cdist_mm_shallow"),
        ("forms42h", "stft_phase"), ("forms45q", "nibble_signext")}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    suites: dict[str, object] = {}

    def go(suite: str, model: str):
        if suite not in suites:
            suites[suite] = explained_forms(tmp_path_factory, suite)
        return suites[suite](model, "torchscript")             # type: ignore[operator]
    return go


@pytest.mark.parametrize("form", [pytest.param(f, id=f[1], marks=() if f in FAST else pytest.mark.drifts)
                                  for f in NAMED])
def test_the_headline_names_the_torch_op_that_was_called(explained, form):
    target, words = NAMED[form]
    _, _, _, result, exp = explained(*form)
    origin = ORIGIN.get(form[1], "body")
    assert result.verdict == "drift" and result.drift_origin.module == origin
    head = exp.findings[0]
    assert head.severity == "error" and head.module == origin
    assert head.torch_op == target, (head.torch_op, head.message)
    assert words in head.message, head.message
    assert head.evidence["torch_op_found_by"] == FOUND_BY.get(form[1], "values") and head.evidence["torch_op_nodes"]


def test_the_float16_var_is_told_by_var_not_by_its_onnx_ops(explained):
    head = explained("forms39", "half_var")[4].findings[0]
    assert head.message.startswith("in torch's var (torch.Tensor.var, aten.var.correction; ONNX ReduceMean, Sub, Mul, "
                                   "Div): "), head.message
    assert head.aten_op == "aten.var.correction"
    assert "x.float().var(...).half()" in head.fix and head.verified is True
    # the op's ONNX nodes are the variance's arithmetic, not the count's Shape/Gather/Cast
    nodes = head.evidence["torch_op_nodes"]
    assert not any(n.split("/")[-1].startswith(("Shape", "Gather", "Cast")) for n in nodes), nodes


# (suite, model) -> (the call, its ATen op): one mechanism, both exporters, one name (session 30: the dynamo file
# said the ATen target, ``aten.atan2.default``, the TorchScript file the call, ``torch.atan2``)
BOTH = {("forms33", "atan2_zero"): ("torch.atan2", "aten.atan2.default"),
        ("forms34", "baddbmm_attention"): ("torch.baddbmm", "aten.baddbmm.default"),
        ("forms39", "suffix_sum"): ("torch.cumsum", "aten.cumsum.default"),
        ("forms_nan", "amax_nan"): ("torch.Tensor.amax", "aten.amax.default")}


@pytest.mark.parametrize("form", [pytest.param(f, id=f[1], marks=() if f[1] == "atan2_zero" else pytest.mark.drifts)
                                  for f in BOTH])
def test_both_exporters_name_the_call_the_forward_made_the_same_way(explained_both, form):
    """What the user reads, the JSON's ``torch_op`` / ``aten_op`` and the message, for the TorchScript and the
    dynamo file of one form."""
    call, aten = BOTH[form]
    for exporter in ("torchscript", "dynamo"):
        head = json.loads(explained_both(*form, exporter)[3].to_json())["findings"][0]
        assert (head["torch_op"], head["aten_op"]) == (call, aten), (exporter, head["torch_op"], head["message"])
        assert call in head["message"] or f"torch's {call.rsplit('.', 1)[-1]}" in head["message"], head["message"]


@pytest.fixture(scope="module")
def explained_both(tmp_path_factory):
    suites: dict[str, object] = {}

    def go(suite: str, model: str, exporter: str):
        if suite not in suites:
            suites[suite] = explained_forms(tmp_path_factory, suite)
        return suites[suite](model, exporter)             # type: ignore[operator]
    return go


@pytest.mark.drifts
def test_a_dynamo_file_keeps_its_own_record(tmp_path):
    """A dynamo file's FX record names the op (fx_localise): the same field, told by it."""
    import torch

    from drifttui.core.result import Config
    from tests.causes import forms30
    from tests.causes.conftest import explained_run

    path = tmp_path / "logaddexp.onnx"
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(forms30.logaddexp(), (forms30.rows_inputs(),), str(path), dynamo=True)
    head = explained_run(Config(model="tests/causes/forms30.py:logaddexp", onnx=str(path),
                                inputs="tests/causes/forms30.py:rows_inputs", samples=3))[3].findings[0]
    assert (head.torch_op, head.aten_op) == ("torch.logaddexp", "aten.logaddexp.default"), (head.torch_op, head.message)
    assert head.evidence["torch_op_found_by"] == "fx" and "torch's logaddexp" in head.message, head.message


def test_the_cli_json_gate_and_python_api_name_the_same_op(explained, tmp_path, capsys):
    import drifttui
    from drifttui.cli import main

    engine, cfg, *_ = explained("forms39", "half_var")
    args = [cfg.model, "--onnx", cfg.onnx, "--inputs", cfg.inputs, "--samples", "3"]
    report = tmp_path / "r.json"
    assert main(["diagnose", *args, "--json", str(report)]) == 1
    said = capsys.readouterr().out
    assert "in torch's var (torch.Tensor.var" in said
    assert json.loads(report.read_text())["findings"][0]["torch_op"] == "torch.Tensor.var"
    assert main(["check", *args, "--fail-on", "error"]) == 1
    gate = capsys.readouterr()
    assert "torch's var (torch.Tensor.var" in gate.out + gate.err
    api = drifttui.diagnose(cfg.model, cfg.onnx, cfg.inputs, samples=3)
    assert api.findings[0].torch_op == "torch.Tensor.var" and "torch's var" in api.findings[0].message


def test_no_op_is_claimed_when_the_values_cannot_be_aligned():
    """The module's inputs are not among the case's values: None, and a message keeps its ONNX ops."""
    from drifttui.core.explain.causes.locate.torch_align import TorchOp, torch_op

    class NoModule:
        cache: dict = {}

        def modules(self):
            return {}

    class Case:
        module, sample, call = "body", 0, 0

    assert torch_op(NoModule(), Case()) is None
    op = TorchOp("torch.Tensor.var", ["/body/ReduceMean"], ["ReduceMean"])
    assert op.told("x: torch.Tensor.var lowered otherwise") == "x: torch.Tensor.var lowered otherwise"
    assert op.told("the file rounds") == "in torch's var (torch.Tensor.var; ONNX ReduceMean): the file rounds"
