"""`drifttui repro` and `drifttui repair` from the command line."""
from __future__ import annotations

import onnx
import pytest

from drifttui.cli import main


def test_repair_cli_writes_a_copy_that_passes(run, exports, tmp_path, capsys):
    from tests.causes.conftest import SPEC

    src = exports("multi", "dynamo", "eps")
    before = src.read_bytes()
    out = tmp_path / "fixed.onnx"
    code = main(["repair", f"{SPEC}:multi", "--onnx", str(src), "--inputs", f"{SPEC}:multi_inputs",
                 "--samples", "2", "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "origin local max |d|" in text and "output max |d|" in text and "top-1 agreement" in text
    assert "check on the repaired copy: ok" in text
    assert src.read_bytes() == before                       # the user's file is untouched
    node = next(n for n in onnx.load(str(out)).graph.node if n.op_type == "LayerNormalization")
    assert next(a.f for a in node.attribute if a.name == "epsilon") == pytest.approx(1e-5)
    assert main(["check", f"{SPEC}:multi", "--onnx", str(out), "--inputs", f"{SPEC}:multi_inputs",
                 "--samples", "2"]) == 0


def test_repair_refuses_out_naming_the_input(exports, capsys):
    from tests.causes.conftest import SPEC

    src = exports("multi", "dynamo", "eps")
    before = src.read_bytes()
    code = main(["repair", f"{SPEC}:multi", "--onnx", str(src), "--inputs", f"{SPEC}:multi_inputs",
                 "--samples", "2", "--out", str(src)])
    err = capsys.readouterr().err
    assert code == 2 and "is an input of this run" in err and "Traceback" not in err
    assert src.read_bytes() == before


def test_repro_cli_writes_the_case_and_refuses_a_full_folder(exports, tmp_path, capsys):
    from tests.causes.conftest import SPEC

    src = exports("multi", "torchscript", "pool")
    out = tmp_path / "case"
    args = ["repro", f"{SPEC}:multi", "--onnx", str(src), "--inputs", f"{SPEC}:multi_inputs", "--samples", "2",
            "--out", str(out) + "/"]                            # a folder as people type it
    assert main(args) == 1
    text = capsys.readouterr().out
    assert "the drift reproduces" in text
    assert f"{out}/README.md" in text and "//" not in text      # issue 35: case//README.md
    assert (out / "model.onnx").is_file() and (out / "test_data_set_0" / "input_0.pb").is_file()
    assert (out / "test_data_set_0" / "output_0.pb").is_file()
    assert main(args) == 2                                    # the folder exists now: refused
    assert "not an empty folder" in capsys.readouterr().err


def test_repro_on_a_clean_model_writes_nothing(exports, tmp_path, capsys):
    from tests.causes.conftest import SPEC

    out = tmp_path / "case"
    code = main(["repro", f"{SPEC}:multi", "--onnx", str(exports("multi", "dynamo")), "--inputs",
                 f"{SPEC}:multi_inputs", "--samples", "2", "--out", str(out)])
    assert code == 0 and "nothing to reproduce" in capsys.readouterr().out
    assert not out.exists()


def test_repair_names_the_copys_origin_when_a_second_drift_remains(exports, tmp_path, capsys):
    """(fourth new-user pass) with two drifts, `repair` fixed the first and said only "check on the
    repaired copy: drift"; it names the copy's origin now, and top-1 as `check` says it (a %)."""
    from tests.causes.conftest import MULTI_VARIANTS, SPEC

    proto = onnx.load(str(exports("multi", "dynamo", "eps")))        # norm's epsilon 1e-2
    MULTI_VARIANTS["leaky"][1](proto)                                  # and act's alpha, earlier
    two = tmp_path / "two.onnx"
    onnx.save(proto, str(two))
    code = main(["repair", f"{SPEC}:multi", "--onnx", str(two), "--inputs", f"{SPEC}:multi_inputs",
                 "--samples", "2", "--out", str(tmp_path / "fixed.onnx")])
    text = capsys.readouterr().out
    assert code == 1, text
    # the attribute is put back from the module (restore.py: LeakyReLU's negative_slope), by content
    assert "applied 1 patch(es): alpha of node" in text and "set back to 0.2" in text
    assert "check on the repaired copy: drift at norm (repair the copy again for it)" in text
    top1 = next(line for line in text.splitlines() if line.startswith("top-1 agreement"))
    assert top1.split()[-1].endswith("%") or top1.split()[-1] == "-"


def test_repair_says_when_no_module_owns_what_is_left():
    """(fuzzI, the schema pool's 32010: remainder(-1e4, x) after 16 Linear layers) the patched origin's own error
    is 0, but the stem's last-bit rounding, amplified by the remainder's slope a / b, still fails at the output with
    no module owning it; `repair` said only "check on the repaired copy: drift", as if a second origin were left to
    repair.  It says no module owns what is left and that no patch of the file removes it."""
    from types import SimpleNamespace as NS

    from drifttui.cli_causes import _still

    unowned = NS(verdict="drift", drift_origin=None, layers=[NS(status="ok"), NS(status="unattributed")])
    assert "no module owning what is left" in _still(unowned) and "no patch of this file" in _still(unowned)
    second = NS(verdict="drift", drift_origin=NS(module="norm"), layers=[NS(status="drift")])
    assert _still(second) == " at norm (repair the copy again for it)"
    assert _still(NS(verdict="ok", drift_origin=None, layers=[])) == ""
