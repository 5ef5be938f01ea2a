"""ONNX <-> ONNX with no torch model (`check --onnx NEW --reference-onnx OLD`): the old file's
modules name the layers, on both exporters; a weight changed in the new file is the origin."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from drifttui.cli import main
from drifttui.core.compose.onnx_pair import compare_files
from tests.compose import models as M
from tests.compose import pipelines as P
from tests.deploy.conftest import needs


def _scaled_conv2(src, dst):
    m = onnx.load(str(src))
    t = next(t for t in m.graph.initializer if list(t.dims) == [8, 8, 3, 3])     # conv2's weight, by shape
    t.CopyFrom(numpy_helper.from_array((numpy_helper.to_array(t) * 1.01).astype(np.float32), t.name))
    onnx.save(m, str(dst))
    return dst


@pytest.mark.parametrize("exporter,origin", [("torchscript", "conv2"), ("dynamo", "bn2")])
def test_processed_file_against_the_raw_export(tmp_path, exporter, origin):
    """dynamo's export folds conv2 into bn2's scope: the old file's own module names are used."""
    needs("onnxslim")
    raw = P.raw("cnn", exporter, tmp_path)
    slim = P.onnxslim(raw, tmp_path / "slim.onnx")
    clean = compare_files(str(slim), str(raw), M.INPUTS["cnn"], 2, 0, 1e-4, 1e-4)
    assert not clean.drifts and {L.module for L in clean.layers} >= {"act1", "act2", "fc"}
    bad = compare_files(str(_scaled_conv2(slim, tmp_path / "bad.onnx")), str(raw), M.INPUTS["cnn"], 2, 0, 1e-4, 1e-4)
    assert bad.origin == origin
    assert next(L for L in bad.layers if L.module == "act2").inherited
    assert main(["check", "--onnx", str(tmp_path / "bad.onnx"), "--reference-onnx", str(raw),
                 "--inputs", M.INPUTS["cnn"], "--samples", "2"]) == 1


def test_a_reference_without_module_names_is_refused(tmp_path, capsys):
    raw = P.raw("cnn", "torchscript", tmp_path)
    m = onnx.load(str(raw))
    for n in m.graph.node:
        n.name = ""
    bare = tmp_path / "bare.onnx"
    onnx.save(m, str(bare))
    assert main(["check", "--onnx", str(raw), "--reference-onnx", str(bare), "--inputs", M.INPUTS["cnn"]]) == 2
    assert "no exporter metadata" in capsys.readouterr().err
