"""Inputs whose shape does not fit the ONNX graph (issue 23 item 16): the one-line error names
the graph input, the shape the graph expects and the shape given, and a spec that fits (the
TUI's error modal: tests/tui/test_shape_error.py).  Real export, real ONNX Runtime."""
from __future__ import annotations

from pathlib import Path

import pytest

from drifttui.cli import main
from tests.conftest import without_progress
from tests.engine import own_ops

HERE = Path(__file__).parent
MODEL = f"{HERE / 'own_ops.py'}:build_up"          # fully convolutional: torch runs any size


@pytest.fixture(scope="module")
def onnx_16(tmp_path_factory):
    from drifttui.core.model.export import export_model

    return str(export_model(own_ops.build_up(), (own_ops.inputs(),), {}, "dynamo", tmp_path_factory.mktemp("x")))


def test_the_cli_error_names_the_expected_and_the_given_shape(onnx_16, capsys):
    code = main(["check", MODEL, "--onnx", onnx_16, "--inputs", "shape:1x3x32x32", "--samples", "1"])
    err = without_progress(capsys.readouterr().err).strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "input x: the graph expects 1x3x16x16 float32, the inputs give 1x3x32x32 float32" in err
    assert err.endswith("(--inputs shape:1x3x16x16)")
    assert "Got invalid dimensions" not in err


def test_feed_mismatch_names_missing_inputs_dtypes_and_symbolic_dims():
    import numpy as np

    from drifttui.core.runtime.sessions import feed_mismatch

    class Arg:
        def __init__(self, name, shape, type_):
            self.name, self.shape, self.type = name, shape, type_

    class Session:
        def get_inputs(self):
            return [Arg("ids", ["batch", 16], "tensor(int64)"), Arg("mask", [1, 16], "tensor(int64)")]

    feeds = {"ids": np.zeros((2, 8), np.int64)}
    text, spec = feed_mismatch(Session(), feeds)
    assert text == ("input ids: the graph expects batchx16 int64, the inputs give 2x8 int64; "
                    "input mask (1x16 int64) is not given")
    assert spec == ""                    # a symbolic dim: no spec can be written for it
    fits = {"ids": np.zeros((4, 16), np.int64), "mask": np.zeros((1, 16), np.int64)}
    assert feed_mismatch(Session(), fits) == ("", "")
