"""`bisect` and `tolerance` on bad input: one line naming the problem and the fix, exit 2, nothing written."""
from __future__ import annotations

from drifttui.cli import main
from tests.compose import models as M


def test_bisect_needs_two_existing_stages(tmp_path, capsys):
    one = tmp_path / "a.onnx"
    one.write_bytes(b"")
    assert main(["bisect", M.spec("mlp"), "--stages", str(one)]) == 2
    err = capsys.readouterr().err
    assert "at least two files" in err and "Traceback" not in err
    assert main(["bisect", M.spec("mlp"), "--stages", str(one), str(tmp_path / "missing.onnx")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_bisect_refuses_onnx(tmp_path, capsys):
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    a.write_bytes(b"")
    b.write_bytes(b"")
    assert main(["bisect", M.spec("mlp"), "--onnx", str(a), "--stages", str(a), str(b)]) == 2
    assert "--stages" in capsys.readouterr().err


def test_tolerance_word_other_than_auto_is_refused(capsys):
    assert main(["check", M.spec("mlp"), "--tolerance", "tight"]) == 2
    assert "not a number or auto" in capsys.readouterr().err
