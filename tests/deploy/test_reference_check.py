"""Issue 34, item 2: a --reference-onnx must be of this model.

A reference of another model, or one whose weights match none of the deployed file's, mapped the
file to nothing ("(root)" as the origin, modules "not exported") with a hint at the end of a note.
"""
from __future__ import annotations

import shutil

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from tests.ci.conftest import run_cli
from tests.deploy import processed as P


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("refcheck")
    for sub in ("tf", "cnn"):
        (d / sub).mkdir()
    return {"tf": P.export("tf", "torchscript", d / "tf"), "cnn": P.export("cnn", "torchscript", d / "cnn"), "dir": d}


def _redrawn(src, dst, every=1):
    """A copy of ``src`` whose float weights (every ``every``-th, in file order) are redrawn at random:
    the same architecture, another checkpoint."""
    m = onnx.load(str(src))
    rng = np.random.default_rng(5)
    weights = [t for t in m.graph.initializer if t.data_type == 1 and np.prod(t.dims) >= 2]
    for k, t in enumerate(weights):
        if k % every == 0:
            a = numpy_helper.to_array(t)
            t.CopyFrom(numpy_helper.from_array(rng.standard_normal(a.shape).astype(np.float32), t.name))
    onnx.save(m, str(dst))
    return dst


def _check(name, onnx_path, reference):
    return run_cli(["check", P.spec(name), "--inputs", P.INPUTS[name], "--onnx", str(onnx_path),
                    "--reference-onnx", str(reference), "--samples", "2"])


def test_a_reference_of_another_model_is_exit_2_naming_the_mismatch(files):
    run = _check("tf", files["tf"], files["cnn"])
    assert run.code == 2, (run.code, run.out, run.err)
    assert "is not a reference of --onnx" in run.err and "none of the deployed file's" in run.err, run.err
    assert "Traceback" not in run.err and "(root)" not in run.out


def test_a_reference_whose_weights_match_none_is_exit_2(files):
    other = _redrawn(files["tf"], files["dir"] / "other-checkpoint.onnx")
    run = _check("tf", files["tf"], other)
    assert run.code == 2, (run.code, run.out, run.err)
    assert "other-checkpoint.onnx" in run.err and "weights" in run.err


def test_a_reference_that_matches_part_of_the_weights_is_said_under_the_headline(files):
    half = _redrawn(files["tf"], files["dir"] / "half.onnx", every=2)
    run = _check("tf", files["tf"], half)
    assert run.code in (0, 1), (run.code, run.err)
    lines = run.out.splitlines()
    at = next(i for i, line in enumerate(lines) if "matches only part of --onnx" in line)
    rule = next(i for i, line in enumerate(lines) if line.startswith("rule:"))
    assert at < rule, run.out             # in the headline block, before the rule and the table
    block = " ".join(lines[at:rule])
    assert "% of their elements" in block and " of " in block and "weights of the deployed file" in block


def test_a_reference_equal_to_the_onnx_file_is_said_as_such(files):
    run = _check("tf", files["tf"], files["tf"])
    assert run.code == 0, (run.code, run.err)
    assert "is the --onnx file itself" in run.out
    copy = files["dir"] / "copy.onnx"
    shutil.copy(files["tf"], copy)
    run = _check("tf", files["tf"], copy)        # the same bytes under another name
    assert run.code == 0 and "is the --onnx file itself" in run.out
