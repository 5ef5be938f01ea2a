"""A genuine drift in a quantized file is told as one (issue 33, point 6): a wrong LayerNorm epsilon
planted after quantize_dynamic.  decide names the origin and calls the over-budget verdict a genuine
drift (not the precision); the headline, step 4 and `repair`'s first line speak of that origin, not of
another layer over its budget; the layers after it are consequences (inherited), and the verified
patch brings the copy back within budget."""
from __future__ import annotations

import onnx
import pytest

from tests.deploy.conftest import needs
from tests.deploy.precision_models import export_local, int8_dynamic, local_spec

ORIGIN = "layers.0.norm2"


@pytest.fixture(scope="module")
def bad(tmp_path_factory):
    needs("onnxruntime.quantization")
    d = tmp_path_factory.mktemp("genuine")
    q = int8_dynamic(export_local("small_tf", "seq8", "torchscript", d / "raw"), d / "q.onnx", reduce_range=True)
    m = onnx.load(str(q))
    norm = next(n for n in m.graph.node if n.op_type == "LayerNormalization" and "layers.0/norm2" in n.name)
    eps = next(a for a in norm.attribute if a.name == "epsilon")
    eps.f = 0.1                       # PyTorch's is 1e-5
    onnx.save(m, str(d / "bad.onnx"))
    return d, d / "bad.onnx"


def test_a_wrong_epsilon_in_an_int8_file_is_a_genuine_drift_at_its_origin(bad, capsys):
    from drifttui.cli import main
    from drifttui.core.pipeline import Pipeline
    from drifttui.core.result import Config
    from drifttui.report.summary import verdict_title
    from drifttui.report.text import _headline

    d, path = bad
    cfg = Config(model=local_spec("small_tf"), inputs=local_spec("seq8"), onnx=str(path), samples=4)
    p = Pipeline()
    r = p.run(cfg).result
    assert r.precision.verdict == "over budget" and r.precision.cause == "genuine drift"
    assert r.drift_origin is not None and r.drift_origin.module == ORIGIN
    # one cause, one drift row: what follows inherits it
    assert [L.module for L in r.layers if L.status == "drift"] == [ORIGIN]
    headline = _headline(r)[0].plain
    assert headline.startswith(f"DRIFT IN THE INT8 FILE: origin {ORIGIN}") and "BUDGET" not in headline
    title = verdict_title(r)
    assert title.startswith("genuine drift in the int8 file at " + ORIGIN) and "budget" not in title
    step = p.step(4, r)
    assert ORIGIN in step.summary and "genuine drift" in step.summary and step.layers == [r.drift_origin.layer]
    others = [L.module for L in r.layers if L.module and L.module != ORIGIN and L.budget is not None]
    assert not any(f" {m}," in step.summary or step.summary.endswith(m) for m in others)
    code = main(["repair", local_spec("small_tf"), "--onnx", str(path), "--inputs", local_spec("seq8"),
                 "--samples", "4", "--out", str(d / "fixed.onnx")])
    out = capsys.readouterr().out
    first = out.strip().splitlines()[0]
    assert first.startswith(f"a genuine drift in the int8 file at its origin {ORIGIN}, not its precision"), out
    assert "over the int8" not in first and "nodes_to_exclude" not in out
    assert code == 0, out
