"""--batch-sweep: the same samples alone and batched through the file; the first layer whose output
depends on the batch is named (a model that normalises over dim 0), a per-sample model passes."""
import json

from drifttui.cli import main
from tests.triton.conftest import NETS


def test_sweep_names_the_layer_that_mixes_the_batch(files, capsys):
    code = main(["check", f"{NETS}:batch_dependent", "--onnx", files["bd"], "--inputs", "shape:1x16",
                 "--samples", "3", "--batch-sweep", "1,4,8", "--json", "-"])
    sweep = json.loads(capsys.readouterr().out)["batch_sweep"]
    assert code == 1                                 # a dynamic batcher is not safe: the gate fails
    assert sweep["sizes"] == [1, 4, 8] and not sweep["invariant"]
    first = next(L for L in sweep["layers"] if L["layer"] == sweep["first_layer"])
    assert first["class"] == "BatchCentre" and first["depends"]
    before = [L for L in sweep["layers"] if L["class"] in ("Linear", "ReLU") and L["module"] in ("0", "1")]
    assert before and not any(L["depends"] for L in before)      # the layers before it are per sample
    assert sweep["outputs_max_abs"][0] == 0.0 and sweep["outputs_max_abs"][2] > 1e-2


def test_sweep_passes_a_per_sample_model(files, capsys):
    code = main(["check", f"{NETS}:mlp", "--onnx", files["mlp"], "--inputs", "shape:1x16", "--samples", "3",
                 "--batch-sweep", "1,8"])
    out = capsys.readouterr().out
    assert code == 0 and "batch sweep [1, 8]: batch invariant" in out


def test_sweep_sizes_are_checked(capsys):
    assert main(["check", f"{NETS}:mlp", "--batch-sweep", "1,x"]) == 2
    assert "--batch-sweep '1,x' is not a list of batch sizes" in capsys.readouterr().err


def test_ci_reports_carry_the_sweep_and_the_served_fields(files, repo, tmp_path, capsys):
    import xml.etree.ElementTree as ET

    root = repo("params", {1: ("bd", "model.onnx")})
    md, junit = tmp_path / "summary.md", tmp_path / "junit.xml"
    code = main(["check", f"{NETS}:batch_dependent", "--triton-repo", root, "--model", "m", "--samples", "2",
                 "--batch-sweep", "1,4", "--markdown", str(md), "--junit", str(junit)])
    capsys.readouterr()
    assert code == 1
    text = md.read_text()
    assert "**Served:** served\\: m version 1" in text and "execution\\_mode parallel" in text
    assert "first layer that depends on it" in text
    case = ET.parse(junit).getroot().find(".//testcase[@classname='drifttui.served']")
    assert case is not None and "batch sweep [1, 4]" in case.find("failure").get("message")
