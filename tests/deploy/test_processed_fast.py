"""Processed files that used to fail: the fast subset (make test).  The matrix is test_processed_matrix.py."""
from __future__ import annotations

import pytest

from tests.deploy.conftest import needs
from tests.deploy import processed as P
from drifttui.core.result import DRIFT, FUSED, OK


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    cache: dict = {}

    def get(name: str, exporter: str):
        if (name, exporter) not in cache:
            cache[(name, exporter)] = P.export(name, exporter, tmp_path_factory.mktemp(f"{name}-{exporter}"))
        return cache[(name, exporter)]
    return get


def _layer(result, module):
    return next(l for l in result.layers if l.module == module)


def test_nchwc_file_is_compared_in_nchw_no_false_alarm(raw, tmp_path):
    """ORT ENABLE_ALL saves com.microsoft.nchwc Convs: their values are read through ReorderOutput."""
    src = raw("cnn", "torchscript")
    dep = P.ort_offline("all")(src, tmp_path / "all.onnx")
    result = P.check("cnn", dep)
    assert result.verdict == OK, result.drift_origin
    assert any("mapped through a reference export" in n for n in result.notes)
    assert P.covered(result) >= 0.95 * P.covered(P.check("cnn", src, samples=1))
    assert _layer(result, "b2.act").status == OK and _layer(result, "b2.act").metrics is not None


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_activation_fused_into_the_conv_is_not_a_false_drift(raw, tmp_path, exporter):
    """A functional torch.relu after a BatchNorm: ORT extended's FusedConv outputs the Relu of the
    BN's value, which the file no longer has. Compared raw it was a false drift at ``bn2``; now the BN
    is fused into the root's call, and a weight drift after the pipeline is still found."""
    src = raw("frelu", exporter)
    dep = P.ort_offline("extended")(src, tmp_path / "ext.onnx")
    result = P.check("frelu", dep, reference=src)
    assert result.verdict == OK, (result.drift_origin, [(l.module, l.status, l.note) for l in result.layers])
    assert _layer(result, "bn2").status == FUSED and "FusedConv" in _layer(result, "bn2").note
    drifted = P.scale_weight(dep, P.frelu().conv2.weight.detach().numpy(), 1.05, tmp_path / "drifted.onnx")
    result = P.check("frelu", drifted, reference=src)
    assert result.verdict == DRIFT and result.drift_origin.module in ("", "conv2", "bn2"), result.drift_origin


def test_bias_gelu_swallows_the_linear_named_not_a_false_drift(raw, tmp_path):
    """The transformers optimizer's BiasGelu takes the Linear's bias: the MatMul is not its output."""
    needs("onnxruntime.transformers")
    dep = P.transformers_optimizer(raw("tf", "torchscript"), tmp_path / "opt.onnx")
    result = P.check("tf", dep)
    assert result.verdict == OK, result.drift_origin
    lin = _layer(result, "layers.0.mlp.0")
    assert lin.status == FUSED and "BiasGelu" in lin.note
    assert "layers.0.mlp.0" in _layer(result, "layers.0.mlp.1").note


def test_torchscript_transformer_at_ort_all_runs_without_exit_3(raw, tmp_path):
    """ORT's MatMulAddFusion Gemm on a flattened batch: its cut used to be fed a rank-3 tensor (exit 3)."""
    dep = P.ort_offline("all")(raw("tf", "torchscript"), tmp_path / "all.onnx")
    result = P.check("tf", dep)
    assert result.verdict == OK, result.drift_origin
    assert P.covered(result) >= 0.95 * result.coverage.modules


def test_a_linear_whose_reshape_ort_basic_merged_into_the_head_split_is_mapped(raw, tmp_path):
    """ORT basic's MatMulAddFusion + ReshapeFusion (Whisper's encoder at 92% of its raw export): the
    value Linear's own value is gone, only its flattened Gemm output is left, read by ORT's scope-less
    merged Reshape.  The Linear is compared through a Reshape view of that Gemm output (the way back in the
    reader's filled-in scope, not the Linear's), clean, and a weight x1.05 in it is named there, not at
    the output Linear that reads the attention."""
    import onnx

    dep = P.ort_offline("basic")(raw("heads", "torchscript"), tmp_path / "basic.onnx")
    ops = [n.op_type for n in onnx.load(str(dep)).graph.node]
    assert "Gemm" in ops and "Add" not in ops      # the tool did fuse (else this tests nothing)
    result = P.check("heads", dep)
    assert result.verdict == OK, (result.drift_origin, [(l.module, l.status, l.note) for l in result.layers])
    v = _layer(result, "v_proj")
    assert v.status == OK and v.onnx_values[0].endswith("::absorbed"), (v.status, v.note)
    assert v.metrics is not None and v.metrics.max_abs.worst < 1e-5
    assert P.covered(result) == result.coverage.modules
    drifted = P.check("heads", P.scale_weight(dep, P.heads().v_proj.weight.detach().numpy(), 1.05,
                                              tmp_path / "v.onnx"))
    assert drifted.verdict == DRIFT and drifted.drift_origin.module == "v_proj", drifted.drift_origin


def test_weight_drift_after_onnxsim_has_the_raw_files_origin(raw, tmp_path):
    needs("onnxsim")
    src = raw("cnn", "dynamo")
    weight = P.cnn().b2.conv.weight.detach().numpy()
    dep = P.onnxsim(src, tmp_path / "sim.onnx")
    drifted = P.check("cnn", P.scale_weight(dep, weight, 1.05, tmp_path / "sim-drift.onnx"))
    expected = P.check("cnn", P.scale_weight(src, weight, 1.05, tmp_path / "raw-drift.onnx"))
    assert expected.verdict == DRIFT and drifted.verdict == DRIFT
    assert drifted.drift_origin.module == expected.drift_origin.module


@pytest.mark.parametrize("exporter", ["torchscript", pytest.param("dynamo", marks=pytest.mark.deploy)])
def test_transposed_value_is_compared_through_the_transpose_back(raw, tmp_path, exporter):
    """ORT's transpose optimiser cancels a permute pair around a ReLU: the ReLU's value in the file is
    NCHW, torch's NHWC, the same shape.  Compared raw it was a false DRIFT at `act` (TorchScript) or
    not compared at all (dynamo); it is compared through a Transpose to torch's axis order, and a
    weight drift before or after it keeps the raw file's origin."""
    src = raw("perm", exporter)
    dep = P.ort_offline("basic")(src, tmp_path / "basic.onnx")
    assert "Transpose" not in [n.op_type for n in __import__("onnx").load(str(dep)).graph.node]
    result = P.check("perm", dep)
    assert result.verdict == OK, (result.drift_origin, result.notes)
    act = _layer(result, "act")
    assert act.status == OK and act.metrics is not None and act.metrics.max_abs.worst < 1e-5
    assert act.onnx_values[0].endswith("::perm0231")      # NCHW read as NHWC
    model = P.perm()
    for module in ("conv", "conv2"):
        w = getattr(model, module).weight.detach().numpy()
        drifted = P.check("perm", P.scale_weight(dep, w, 1.05, tmp_path / f"{module}.onnx"))
        assert drifted.verdict == DRIFT and drifted.drift_origin.module == module, drifted.drift_origin
        # downstream of the drift its numbers differ, yet it is still compared through the Transpose
        # (the reference's permute says the axis order), never raw
        assert _layer(drifted, "act").onnx_values[0].endswith("::perm0231")


def test_reference_onnx_is_said_in_the_report(raw, tmp_path):
    needs("onnxslim")
    src = raw("tf", "dynamo")
    dep = P.onnxslim(src, tmp_path / "slim.onnx")
    result = P.check("tf", dep, reference=src)
    assert result.verdict == OK
    assert any(f"--reference-onnx {src.name}" in n for n in result.notes)
    assert P.covered(result) == result.coverage.modules


def test_reference_onnx_without_onnx_is_a_usage_error(capsys):
    from drifttui.cli import main

    assert main(["check", P.spec("cnn"), "--reference-onnx", "raw.onnx", "--inputs", P.INPUTS["cnn"]]) == 2
    err = capsys.readouterr().err
    assert "--reference-onnx needs --onnx" in err and "Traceback" not in err


def test_a_unet_attention_output_projection_after_ort_basic_is_mapped(raw, tmp_path):
    """diffusers' UNet attention (issue 33: 115 of 121 calls, the `to_out.0` Linears unmapped): ORT basic
    merges the Linear's output Reshape with the way back to NCHW into one scope-less Reshape, which also
    produces the value the Linear hands on, and moves the Transpose after it.  The view named after that
    scope-less node had no scope either, was filled outside the Linear, and the Linear stayed unmapped.
    It is compared through a Reshape view of the merged Reshape's output, clean, and a weight x1.05 in it
    is named there, not at the block that reads it."""
    import onnx

    dep = P.ort_offline("basic")(raw("uattn", "torchscript"), tmp_path / "basic.onnx")
    nodes = onnx.load(str(dep)).graph.node
    gemm = next(n for n in nodes if n.op_type == "Gemm" and n.name.startswith("/to_out.0/"))
    after = [n for n in nodes if gemm.output[0] in n.input]
    assert [n.op_type for n in after] == ["Reshape"] and not after[0].name.startswith("/")  # the merged Reshape
    result = P.check("uattn", dep)
    assert result.verdict == OK, (result.drift_origin, [(l.module, l.status, l.note) for l in result.layers])
    out = _layer(result, "to_out.0")
    assert out.status == OK and out.onnx_values[0].endswith("::absorbed"), (out.status, out.note)
    assert out.metrics is not None and out.metrics.max_abs.worst < 1e-5
    assert P.covered(result) == P.covered(P.check("uattn", raw("uattn", "torchscript")))
    w = P.uattn().to_out[0].weight.detach().numpy()
    drifted = P.check("uattn", P.scale_weight(dep, w, 1.05, tmp_path / "out.onnx"))
    assert drifted.verdict == DRIFT and drifted.drift_origin.module == "to_out.0", drifted.drift_origin
