"""Step 2 on a model whose outputs are NaN on zero inputs (a norm of zero divides by zero; an all-zero attention
mask masks every position): the run's own inputs were finite, so the step says that its own zero inputs made the
NaN, inconclusive, instead of telling the user to check their --inputs (the new-user review of session 36)."""
from __future__ import annotations

import textwrap

import torch

MODEL = textwrap.dedent("""
    import torch
    from torch import nn

    class Normed(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, x):
            y = self.lin(x) - self.lin.bias          # zero at a zero input
            return y / y.norm(dim=-1, keepdim=True)

    def build():
        torch.manual_seed(0)
        return Normed().eval()
""")


def test_zero_inputs_that_make_nan_are_said_as_the_steps_own(tmp_path):
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config

    spec = tmp_path / "normed.py"
    spec.write_text(MODEL)
    ns: dict = {}
    exec(MODEL, ns)
    onnx_path = tmp_path / "normed.onnx"
    torch.onnx.export(ns["build"](), (torch.randn(2, 8),), str(onnx_path), dynamo=False)
    engine = Pipeline()
    result = engine.run(Config(model=f"{spec}:build", onnx=str(onnx_path), inputs="shape:2x8", samples=2)).result
    assert result.verdict == "ok"
    step = engine.step(2, result)
    assert step.verdict == "inconclusive", step.summary
    assert step.summary.startswith("on this step's own zero inputs") and "NaN" in step.summary, step.summary
    assert "--inputs" not in step.summary and "--inputs" not in step.suggestion
