"""`repair` into a pipe (issue 35): a line per stage while it works (it was silent for 79 s on a
real model), and the fix at the source beside the patch."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINE = re.compile(r"^\[ *\d+\.\ds\] ")


def test_repair_into_a_pipe_says_each_stage_and_ends_with_the_source_fix(exports, tmp_path):
    from tests.causes.conftest import SPEC

    src = exports("multi", "dynamo", "eps")
    out = tmp_path / "fixed.onnx"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "drifttui", "repair", f"{SPEC}:multi", "--onnx", str(src),
                        "--inputs", f"{SPEC}:multi_inputs", "--samples", "2", "--out", str(out)],
                       capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr[-800:]
    lines = p.stderr.splitlines()
    assert all(LINE.match(line) for line in lines), p.stderr
    text = "\n".join(lines)
    assert "causes: localising the error inside" in text and "causes: trying" in text
    assert "repaired copy: run done" in text          # the check of the copy is not silent either
    said = p.stdout.splitlines()
    # an epsilon restored: the export or a later edit lost it, so no claim that a re-export writes it again
    head = said.index("fix the source too, where the file came from it:")
    # the file is a dynamo export: the call that wrote it is no fix (fourth pass), the finding's words are
    assert not said[head + 1].strip().startswith("torch.onnx.export"), said[head + 1]
    assert "epsilon" in said[head + 1]


def test_the_source_fix_of_each_patch_kind():
    from drifttui.core.explain.causes.deliver.source_fix import source_fix

    assert source_fix({"op": "rewrite", "rewrite": "resize_opset11"}, 9, "torchscript") == \
        'torch.onnx.export(model, args, "model.onnx", dynamo=False, opset_version=11)'
    assert source_fix({"op": "reexport", "exporter": "dynamo", "opset": 18}, 13, "torchscript") == \
        'torch.onnx.export(model, args, "model.onnx", dynamo=True, opset_version=18)'
    assert source_fix({"op": "set_attribute", "name": "coordinate_transformation_mode", "value": "half_pixel"},
                      10, "user file") == 'torch.onnx.export(model, args, "model.onnx", opset_version=11)'
    assert source_fix({"op": "rewrite", "rewrite": "gelu_tanh"}, 17, "dynamo") is None
    # the export without the dynamo optimizer: the call says so, or it writes the drift again
    assert source_fix({"op": "reexport", "exporter": "dynamo", "opset": 20, "optimize": False}, 20, "dynamo") == \
        'torch.onnx.export(model, args, "model.onnx", dynamo=True, opset_version=20, optimize=False)'
    # a decomposition or re-trace first: no bare export call (it would be the file's own setup)
    assert source_fix({"op": "reexport", "exporter": "dynamo", "opset": 20, "decompose": "core_aten"}, 20,
                      "dynamo") is None


def test_no_export_call_that_repeats_the_files_own_setup():
    """An attribute, constant or initializer restored in an opset-20 dynamo file: the call with the
    file's own exporter and opset wrote it, so it is not said as the fix (the finding's words are)."""
    from drifttui.core.explain.causes.deliver.source_fix import source_fix, source_fixes

    for spec in ({"op": "set_attribute", "node": "ln", "name": "epsilon", "value": 1e-5},
                 {"op": "replace_initializer", "name": "layer3.1.conv1.weight"},
                 {"op": "replace_constant", "node": "c", "value": 0.25},
                 {"op": "set_attribute", "node": "r", "name": "coordinate_transformation_mode", "value": "half_pixel"}):
        assert source_fix(spec, 20, "dynamo") is None, spec

    class Finding:
        patch = {"op": "set_attribute", "node": "ln", "name": "epsilon", "value": 1e-5}
        fix = "set eps=1e-05 on the module"

    assert source_fixes([dict(Finding.patch)], [Finding()], 20, "dynamo") == [("", "set eps=1e-05 on the module")]
