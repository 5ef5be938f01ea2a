"""A drift made by ONNX Runtime's graph optimiser: the file is right as written (every layer agrees at
ORT_DISABLE_ALL, where the per-layer pass runs by default) and drifts at the deployed level.  The layers are
compared again at the deployed level and the module whose nodes the optimiser changed is named
(``decide/level.py``); its cut-out nodes run at that level, so the cause is verified where the drift is made
(``evaluate.at_level``), and ``repair``'s file passes ``check``.  Before: "OVER BUDGET: no module could be named",
and a note about int8 kernels in a float16 file (held-out batch 41G's ``level_loss``)."""
from __future__ import annotations

import warnings

import pytest

from drifttui.core.pipeline import Pipeline
from drifttui.core.result import Config

SPEC = "tests/causes/forms41g.py"


@pytest.fixture(scope="module")
def level_file(tmp_path_factory):
    import torch

    from tests.causes import forms41g

    path = tmp_path_factory.mktemp("level") / "level_loss.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(forms41g.level_loss(), (forms41g.rows_inputs(),), str(path), dynamo=False)
    return path


def _cfg(path, **kw) -> Config:
    return Config(model=f"{SPEC}:level_loss", onnx=str(path), inputs=f"{SPEC}:rows_inputs", samples=2, **kw)


def test_a_drift_made_by_the_optimiser_is_named_at_the_deployed_level(level_file):
    pipe = Pipeline()
    result = pipe.run(_cfg(level_file)).result
    assert result.drift_origin is not None and result.drift_origin.module == "body", result.notes
    assert result.config.opt_level == "all"
    assert any("compared again at level all" in n for n in result.notes), result.notes
    head = pipe.explain(result).result.findings[0]
    assert head.verified and head.check == "dtype", head.message
    assert "float16 rounding" in head.message


def test_the_file_as_written_still_agrees_layer_by_layer(level_file):
    """At the deployed level disable the file computes what torch computes: no second pass, no origin."""
    result = Pipeline().run(_cfg(level_file, output_opt_level="disable")).result
    assert result.verdict == "ok" and result.config.opt_level == "disable"


def test_cases_run_at_the_level_asked():
    from onnx import TensorProto, helper

    from drifttui.core.explain.causes.locate.evaluate import LEVEL, _session, at_level

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])

    def level() -> str:
        return str(_session(model).get_session_options().graph_optimization_level)

    assert level().endswith("ORT_DISABLE_ALL")
    with at_level("all"):
        assert LEVEL.get() == "all" and level().endswith("ORT_ENABLE_ALL")
    assert LEVEL.get() == "disable" and level().endswith("ORT_DISABLE_ALL")
