import json

from drifttui.cli import main

REQUIRED_LAYER_KEYS = {"module", "class", "call", "status", "onnx_values", "op_types", "metrics"}


def test_check_clean_exits_0_and_writes_report(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["check", "--example", "unet", "--samples", "2", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "OK" in text and "coverage:" in text
    data = json.loads(out.read_text())
    assert data["schema_version"] == 3
    assert data["verdict"] == "ok" and data["drift_origin"] is None
    assert data["samples"] == 2
    assert {"atol", "rtol", "rule"} <= set(data["tolerance"])
    assert all(REQUIRED_LAYER_KEYS <= set(L) for L in data["layers"])
    assert {L["status"] for L in data["layers"]} <= {"ok", "drift", "inherited", "fused", "not_exported", "unmapped"}
    env = data["environment"]
    assert {"torch", "onnx", "onnxruntime", "opset", "exporter", "ort_opt_level", "threads", "deterministic"} <= set(env)
    from drifttui.core.runtime.cpu import detect

    assert env["cpu"] == detect().summary() and env["int8_kernel"] == detect().key()     # issue 36
    assert data["precision"] is None or data["precision"]["kernels"] == ""       # a float file: no int8 line
    assert data["outputs"] and "metrics" in data["outputs"][0]
    # the time before the first stage (interpreter, imports) is timed too
    import sys

    if sys.platform.startswith("linux"):
        assert data["timings"]["startup"] > 0


def test_check_drift_exits_1_with_origin(tmp_path, capsys):
    out = tmp_path / "r.json"
    code = main(["check", "--example", "unet-resize", "--samples", "2", "--json", str(out)])
    assert code == 1
    text = capsys.readouterr().out
    assert "DRIFT" in text and "up1" in text
    origin = json.loads(out.read_text())["drift_origin"]
    assert origin["module"] == "up1" and origin["class"] == "Upsample"
    assert {"onnx_values", "op_types", "max_abs", "max_rel", "local_max_abs"} <= set(origin)
    assert origin["op_types"] == ["Resize"]


def test_json_to_stdout(capsys):
    assert main(["check", "--example", "unet", "--samples", "1", "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "ok"


def test_tolerance_shorthand_and_opt_level(capsys, tmp_path):
    out = tmp_path / "r.json"
    code = main(["check", "--example", "unet", "--samples", "1", "--tolerance", "1e-9", "--opt-level", "all",
                 "--deterministic", "--json", str(out)])
    data = json.loads(out.read_text())
    assert data["tolerance"]["atol"] == 1e-9 and data["tolerance"]["rtol"] == 1e-9
    assert data["environment"]["ort_opt_level"] == "all" and data["environment"]["deterministic"] is True
    assert code in (0, 1)   # at 1e-9 float noise may or may not pass; the flag reached the run


def test_examples_lists_every_example(capsys):
    from drifttui.core.model.examples import EXAMPLES

    assert main(["examples"]) == 0
    text = capsys.readouterr().out
    for name in EXAMPLES:
        assert name in text


def test_help_documents_exit_codes_and_rule(capsys):
    assert main(["check", "--help"]) == 0
    text = capsys.readouterr().out
    assert "exit codes" in text and "1  drift found" in text and "atol + rtol * scale" in text
