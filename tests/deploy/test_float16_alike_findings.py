"""A float16 file says "stored as float16" once, not once per weight.  The ``dtype`` check warns of each float16
initializer ("initializer X is stored as float16") and step 6's weight comparison of each parameter ("X is float32 in
torch but float16 in the ONNX file"): about a hundred WARNING lines on MobileBERT through onnxconverter-common's
converter, fifty on smaller files.  Findings of one check, severity and fix whose sentences differ only by the names
they quote are one finding (core/explain/alike.py): the count, a few names, every member exact in the JSON.
The names stay untrusted text: the terminal and Markdown renderers escape the summary as any sentence."""
from __future__ import annotations

import json

import onnx
import torch
from torch import nn

from tests.deploy.precision_models import fp16_ort
from tests.models import off_identity

HOSTILE = "w\x1b]52;c;SGk=\x07|<script>"


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.norm, self.fc2, self.fc3 = nn.Linear(16, 32), nn.LayerNorm(32), nn.Linear(32, 32), \
            nn.Linear(32, 4)

    def forward(self, x):
        return self.fc3(torch.relu(self.fc2(self.norm(self.fc1(x)))))


def model() -> nn.Module:
    return off_identity(Net)


def inputs() -> torch.Tensor:
    torch.manual_seed(1)
    return torch.randn(2, 16)


def _diagnose(path):
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config

    engine = Pipeline()
    run = engine.run(Config(model=f"{__file__}:model", inputs=f"{__file__}:inputs", onnx=str(path), samples=2))
    return engine.explain(run.result).result


def _half(tmp_path, dynamo: bool = False):
    raw = tmp_path / "raw.onnx"
    torch.onnx.export(model(), (inputs(),), str(raw), dynamo=dynamo, opset_version=17, input_names=["x"])
    return fp16_ort(raw, tmp_path / "fp16.onnx")


def test_one_finding_per_sentence_with_every_weight_in_its_evidence(tmp_path):
    from drifttui.report import json_report

    half = _half(tmp_path)
    stored = sorted(t.name for t in onnx.load(str(half)).graph.initializer if t.data_type == onnx.TensorProto.FLOAT16)
    assert len(stored) >= 6
    result = _diagnose(half)
    said = [f for f in result.findings if f.check == "dtype" and "stored as float16" in f.message]
    assert len(said) == 1, [f.message for f in said]
    f = said[0]
    assert f.severity == "warning" and f.message.startswith(f"{len(stored)} alike: initializer … is stored as float16")
    assert f"and {len(stored) - 3} more" in f.message
    members = f.evidence["members"]
    assert sorted(m["evidence"]["initializer"] for m in members) == stored
    assert all(m["message"] == f"initializer {m['evidence']['initializer']} is stored as float16" for m in members)
    # the JSON report keeps every member exact
    path = tmp_path / "r.json"
    json_report.write(result, str(path))
    saved = json.loads(path.read_text())
    kept = next(x for x in saved["findings"] if "stored as float16" in x["message"])
    assert len(kept["evidence"]["members"]) == len(stored)
    # nothing else of the file is said once per weight
    sentences = [x.message for x in result.findings if x.severity == "warning"]
    assert len(sentences) <= 4, sentences


def test_a_hostile_name_in_the_summary_is_escaped_in_every_medium(tmp_path):
    from rich.console import Console

    from drifttui.report import markdown
    from drifttui.report.gate import decide
    from drifttui.report.steps_text import render_findings

    half = _half(tmp_path)
    m = onnx.load(str(half))
    first = next(t for t in m.graph.initializer if t.data_type == onnx.TensorProto.FLOAT16)
    for n in m.graph.node:
        n.input[:] = [HOSTILE if i == first.name else i for i in n.input]
    first.name = HOSTILE
    onnx.save(m, str(tmp_path / "hostile.onnx"))
    result = _diagnose(tmp_path / "hostile.onnx")
    f = next(f for f in result.findings if "stored as float16" in f.message)
    assert HOSTILE in f.message         # the first weight is one of the names the sentence says
    assert HOSTILE in {x["evidence"]["initializer"] for x in f.evidence["members"]}      # exact in the data
    console = Console(record=True, width=400, color_system=None)
    console.print(render_findings(result.findings, None))
    shown = console.export_text()
    assert "alike" in shown and "\x1b" not in shown and "\x07" not in shown and "\\x1b]52" in shown
    md = markdown.render(result, decide(result))
    assert "alike" in md and "\x1b" not in md and "\x07" not in md and "<script>" not in md
