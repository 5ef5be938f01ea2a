"""docs/tui.md tells the demo's story as the example and the engine do (issue 23 item 20): the
PyTorch weights are float32, the ONNX file holds bfloat16-rounded copies (not the reverse)."""
from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _demo_paragraph() -> str:
    text = (ROOT / "docs" / "tui.md").read_text()
    start = text.index("`drifttui demo` runs the bf16 ResNet-18")
    return " ".join(text[start:text.index("\n\n", start)].split())


def test_the_engine_sees_float32_torch_weights_and_bfloat16_rounded_onnx_weights():
    """The facts, from the real engine's recorded result of the demo (tests/tui/fixtures)."""
    data = json.loads((ROOT / "tests" / "tui" / "fixtures" / "resnet18-bf16.json").read_text())
    params = {p["name"]: p["dtype"] for L in data["layers"] for p in L.get("params", [])}
    assert params["layer3.1.conv1.weight"].replace("torch.", "") == "float32"
    dtype = next(f for f in data["findings"] if f["check"] == "dtype")
    assert "rounded to bfloat16" in dtype["message"] or "bfloat16-rounded" in dtype["message"], dtype["message"]


def test_the_docs_say_the_same():
    from drifttui.core.model.examples import CATALOGUE

    para = _demo_paragraph()
    assert "trained in bfloat16" not in para and "exported with float32 copies" not in para
    assert "PyTorch model is float32" in para and "ONNX file holds" in para and "bfloat16" in para
    assert "stored at bfloat16 precision in the ONNX file" in CATALOGUE["resnet18-bf16"].description
