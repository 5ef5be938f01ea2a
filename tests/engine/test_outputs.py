"""Every output path is checked before the run and written atomically (report/outputs.py)."""
import os
import stat

import pytest

from drifttui.errors import InputError
from drifttui.report.outputs import check_output, write_atomic


def test_refuses_an_output_that_names_an_input(tmp_path):
    model = tmp_path / "model.py"
    model.write_text("x = 1\n")
    with pytest.raises(InputError, match="is an input of this run"):
        check_output(str(model), "--json", [str(model)])
    link = tmp_path / "alias.py"
    link.symlink_to(model)
    with pytest.raises(InputError, match="is an input of this run"):
        check_output(str(link), "--json", [str(model)])
    assert model.read_text() == "x = 1\n"


def test_new_file_mode_follows_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        write_atomic(str(tmp_path / "r.json"), "{}\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "r.json").stat().st_mode) == 0o644


def test_replacing_keeps_the_mode_and_leaves_no_temp_file(tmp_path):
    target = tmp_path / "r.json"
    target.write_text("old")
    target.chmod(0o640)
    write_atomic(str(target), "new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_cli_refuses_json_over_the_model_file(tmp_path, capsys):
    from drifttui.cli import main

    model = tmp_path / "model.py"
    source = "import torch\n\ndef build():\n    return torch.nn.Linear(4, 2)\n"
    model.write_text(source)
    code = main(["check", f"{model}:build", "--inputs", "shape:1x4", "--samples", "1", "--json", str(model)])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is an input of this run" in err[0]
    assert model.read_text() == source
