"""The Python API takes the served model like the CLI."""
import pytest

import drifttui
from tests.triton.conftest import NETS


def test_check_with_a_repository_and_a_sweep(repo):
    root = repo("levels_off")
    result = drifttui.check(f"{NETS}:mlp", triton_repo=root, triton_model="m", samples=3, batch_sweep=[8, 1])
    assert result.served is not None and result.served.version == 1
    assert result.config.output_opt_level == "disable" and result.batch_sweep.sizes == [1, 8]
    assert result.batch_sweep.invariant


def test_check_refuses_a_repository_without_a_model(repo):
    with pytest.raises(drifttui.InputError, match="need --model NAME"):
        drifttui.check(f"{NETS}:mlp", triton_repo=repo("params"), samples=2)


def test_served_sections_survive_the_json_report(repo, tmp_path):
    from drifttui.core.result import Result
    from drifttui.report import json_report

    result = drifttui.check(f"{NETS}:mlp", triton_repo=repo("params"), triton_model="m", samples=2, batch_sweep=[1, 2])
    path = tmp_path / "report.json"
    json_report.write(result, str(path))
    back = json_report.read(str(path))
    assert isinstance(back, Result) and back.served == result.served and back.batch_sweep == result.batch_sweep
    assert back.config.session == result.config.session and back.config.batch_sweep == (1, 2)
