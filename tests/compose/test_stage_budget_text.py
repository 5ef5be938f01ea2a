"""`bisect --stages` judges a float16 stage against the stage before it by the budget its own check uses, and says
which (session 36's new-user review: "vs stage 0: ... (over the tolerance)" then "no stage drifts").  Fast: a small
MLP, TorchScript, ORT's float16 converter."""
from __future__ import annotations

import re

import torch

from drifttui.cli import main
from tests.compose import models as M
from tests.deploy.precision_models import fp16_ort


def test_a_float16_stage_s_line_and_the_summary_say_one_rule(tmp_path, capsys):
    raw = tmp_path / "raw.onnx"
    torch.onnx.export(M.mlp(), (torch.randn(4, 32),), str(raw), dynamo=False, opset_version=17)
    half = fp16_ort(raw, tmp_path / "fp16.onnx")
    code = main(["bisect", M.spec("mlp"), "--inputs", M.INPUTS["mlp"], "--samples", "2",
                 "--stages", str(raw), str(half)])
    out = capsys.readouterr().out
    line = next(s for s in out.splitlines() if s.startswith("stage 1 "))
    said = re.search(r"vs stage 0: max\|d\| (\S+) \((over|within) (.*)\)$", line)
    assert said, line
    assert said.group(3).startswith("the float16 output budget"), line
    assert float(said.group(1)) > 1e-4            # the case's premise: float32's tolerance alone would fail it
    assert code == 0 and said.group(2) == "within"
    assert "no stage drifts: all 2 files agree with torch (stage 1 float16: within its precision budget)" in out
