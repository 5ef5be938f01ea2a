"""A float16 file whose activations pass 65504 says so (deployO's note, session 36: MobileOne's float16 copy was
told as "over (precision)" with no word of the range).  The precision finding names the overflow: torch's largest
value at the origin, float16's largest finite number and the count past it.  A share the file cannot measure (the
layer kept in float32 alone leaves the outputs NaN) is said as not measurable, not "nan%"."""
from __future__ import annotations

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
