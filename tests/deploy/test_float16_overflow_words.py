"""A float16 file whose activations pass 65504 says so (deployO's note, session 36: MobileOne's float16 copy was
told as "over (precision)" with no word of the range).  The precision finding names the overflow: torch's largest
value at the origin, float16's largest finite number and the count past it.  A share the file cannot measure (the
layer kept in float32 alone leaves the outputs NaN) is said as not measurable, not "nan%"."""
from __future__ import annotations

import asyncio

import pytest
import torch

from tests.compose import models as M
from tests.compose import pipelines as P
from tests.deploy.conftest import needs


def test_an_overflowing_float16_origin_is_told_as_an_overflow(tmp_path):
    needs("onnxconverter_common")
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config

    raw = tmp_path / "raw.onnx"
    torch.onnx.export(M.wide(), (torch.randn(2, 16),), str(raw), dynamo=False, opset_version=17)
    half = P.float16(raw, tmp_path / "fp16.onnx")
    engine = Pipeline()
    run = engine.run(Config(model=M.spec("wide"), inputs=M.INPUTS["wide"], onnx=str(half), samples=2))
    assert run.result.drift_origin is not None and run.result.drift_origin.module == "fc1"
    found = engine.explain(run.result).result.findings
    said = next(f for f in found if f.check == "precision")
    assert "its output overflows float16: torch's values reach" in said.message, said.message
    assert "float16's largest finite number 65504" in said.message
    over = said.evidence["overflow"]
    assert over["torch max |x|"] > 65504 and over["elements past it"] > 0
    assert "nan%" not in said.message


@pytest.mark.deploy
@pytest.mark.timm
def test_mobileone_s_float16_copy_says_where_it_overflows(tmp_path):
    """Session 36's MobileOne-S0 (seeded, 32x32, dynamo) through ORT's float16 converter: over budget at
    ``stages.1.6``, the first block whose torch output passes 65504.  Its share of the output error is not
    measured (not among the layers of lowest SQNR), so no precision finding was made: the overflow went unsaid."""
    from drifttui.core.explain.causes.propose.numerics.precision_loss import precision_finding
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config
    from tests.deploy import unseen_matrix as U
    from tests.deploy import unseen_matrix4 as U4

    raw = U.export("mobileone", "dynamo", tmp_path)
    half = U.tool("fp16", "mobileone", raw, tmp_path / "fp16.onnx")
    engine = Pipeline()
    result = engine.run(Config(model=U4.spec("mobileone"), inputs=U4.spec("img32"), onnx=str(half), samples=2)).result
    assert result.drift_origin is not None and result.drift_origin.module == "stages.1.6"
    said = precision_finding(engine.context(result))
    assert said is not None and "its output overflows float16" in said.message, said
    assert said.evidence["overflow"]["torch max |x|"] > 65504


def test_the_numbers_line_names_the_overflow_in_every_output(tmp_path):
    """Session 37 left it: the headline's numbers line said "max |d| inf, 15 element(s) inf/NaN on one side only"
    and only the finding named the overflow.  The engine counts the overflows (``Metrics.overflow``: torch past
    65504 where the float16 file holds inf); the text headline, the JSON and the TUI's status line render it."""
    needs("onnxconverter_common")
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config, Result
    from drifttui.report.summary import origin_errors
    from drifttui.tui.app import DriftApp

    raw = tmp_path / "raw.onnx"
    torch.onnx.export(M.wide(), (torch.randn(2, 16),), str(raw), dynamo=False, opset_version=17)
    half = P.float16(raw, tmp_path / "fp16.onnx")
    result = Pipeline().run(Config(model=M.spec("wide"), inputs=M.INPUTS["wide"], onnx=str(half), samples=2)).result
    origin = result.layers[result.drift_origin.layer]
    assert origin.metrics.overflow > 0 and origin.metrics.overflow_limit == 65504.0
    assert "a float16 overflow, torch past 65504" in origin_errors(result), origin_errors(result)
    back = Result.from_dict(result.to_dict())
    assert back.layers[origin.index].metrics.overflow == origin.metrics.overflow

    async def status_line() -> str:
        app = DriftApp(None, result=result)
        async with app.run_test(size=(160, 24)) as pilot:
            await pilot.pause()
            return app.status.first_line().plain

    line = asyncio.run(status_line())
    assert "(float16 overflow)" in line, line
