"""Issue 10, point 9: a saved report is validated on load. A field of the wrong type, or an
index that points nowhere, is one line and exit 2 (``tui --report`` never opens the app)."""
import json

import pytest

from drifttui.cli import main
from drifttui.core.result import Result
from drifttui.report import json_report
from tests.conftest import model_spec
from tests.engine.test_bad_input import assert_one_line


@pytest.fixture(scope="module")
def report_dict(run_cache):
    result = run_cache(model=model_spec("twice"), inputs="shape:2x8", samples=2)
    return result.to_dict()


def _edit(data, path, value):
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


CORRUPTIONS = [
    (("layers", 1, "module"), 12345, "layers[1].module should be a string"),
    (("layers", 0, "metrics", "max_abs", "worst"), "big", "layers[0].metrics.max_abs.worst should be a number"),
    (("layers", 0, "onnx_values"), "relu", "layers[0].onnx_values should be a list"),
    (("layers", 0, "fails"), ["max_abs"], "layers[0].fails should be an object"),
    (("layers", 1, "parent"), 999, "layers[1].parent 999 points at no layer"),
    (("layers", 0, "status"), "weird", "layers[0].status 'weird' is not one of"),
    (("layers",), {"0": {}}, "layers should be a list"),
    (("notes",), "one note", "notes should be a list"),
    (("coverage", "localized"), "yes", "coverage.localized should be true/false"),
    (("samples",), 2.5, "samples should be an integer"),
    (("verdict",), "maybe", "verdict should be"),
    (("config",), None, "config should be an object"),
]


@pytest.mark.parametrize("path,value,needle", CORRUPTIONS, ids=[".".join(map(str, c[0])) for c in CORRUPTIONS])
def test_tui_refuses_a_damaged_report_in_one_line(capsys, tmp_path, monkeypatch, report_dict, path, value,
                                                  needle):
    def opened(*a, **kw):
        raise AssertionError("the app was opened on a damaged report")

    monkeypatch.setattr("drifttui.tui.app.run_app", opened)
    data = json.loads(json.dumps(report_dict))
    _edit(data, path, value)
    report = tmp_path / "r.json"
    report.write_text(json.dumps(data))
    code = main(["tui", "--report", str(report)])
    err = capsys.readouterr().err
    assert code == 2
    assert_one_line(err, "is damaged", needle)


def test_missing_required_field_and_origin_out_of_range(tmp_path, report_dict):
    data = json.loads(json.dumps(report_dict))
    del data["coverage"]
    (tmp_path / "a.json").write_text(json.dumps(data))
    with pytest.raises(Exception, match="has no field 'coverage'"):
        json_report.read(str(tmp_path / "a.json"))
    data = json.loads(json.dumps(report_dict))
    data["drift_origin"] = {"layer": 77, "module": "x", "class": "X", "call": 0, "onnx_values": [], "op_types": [],
                            "max_abs": 1.0, "max_rel": 1.0, "local_max_abs": None, "worst_sample": 0}
    (tmp_path / "b.json").write_text(json.dumps(data))
    with pytest.raises(Exception, match="drift_origin.layer 77 points at no layer"):
        json_report.read(str(tmp_path / "b.json"))


def test_a_report_drifttui_wrote_still_loads(tmp_path, report_dict):
    (tmp_path / "r.json").write_text(json.dumps(report_dict))
    result = json_report.read(str(tmp_path / "r.json"))
    assert isinstance(result, Result)
    assert result.to_dict() == report_dict


@pytest.mark.parametrize("text,needle", [("[1, 2]", "schema_version None"), ('{"schema_version": 7}', "schema_version 7"),
                                          ("{not json", "not a drifttui JSON report")])
def test_not_a_report(capsys, tmp_path, monkeypatch, text, needle):
    monkeypatch.setattr("drifttui.tui.app.run_app", lambda *a, **kw: 0)
    (tmp_path / "r.json").write_text(text)
    code = main(["tui", "--report", str(tmp_path / "r.json")])
    assert code == 2
    assert_one_line(capsys.readouterr().err, needle)
