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


def _own(d: float, t: float = 1.0):
    """A layer's own error as decide sees it: one sample whose max |d| is ``d`` at scale ``t``."""
    import numpy as np

    from drifttui.core.base.aggregate import Aggregate

    from drifttui.core.base.metrics import compare

    torch_side = np.zeros(16, dtype=np.float32)
    torch_side[0] = t
    onnx_side = torch_side.copy()
    onnx_side[1] = d
    agg = Aggregate()
    agg.add(0, compare(torch_side, onnx_side))
    return agg


def test_an_origin_whose_own_rounding_explains_its_error_is_precision_not_a_genuine_drift():
    """A clean ViT QDQ file was "genuine drift" at its first LayerNorm: the LayerNorm normalises an
    int8-quantized input and loses 4.9% (its recomputation in the file's precision), more than the
    worst-case bound of 3.0%, and its share of the outputs is 1.7% because later layers lose more.
    Its own error within 3x that recomputation is the file's own rounding: precision.  The same layer
    with an error far past its recomputation (a wrong constant) stays a genuine drift."""
    from drifttui.core.decide.precision import cause_of
    from drifttui.core.decide.rules import Rules
    from drifttui.core.prepare.call_budgets import CallBudget

    rules = Rules(1e-5, budgets={6: CallBudget("int8", 0.030, 0.059, 32, ("ln",), (3,), (3,))},
                  shares={6: 0.017}, rounding={6: 0.049})
    clean, wrong = _own(0.051), _own(0.4)
    assert rules.own_fails(6, clean, 1e-6) and rules.rounding_explains(6, clean, 1e-6)
    assert cause_of(rules, 6, True, rounded=rules.rounding_explains(6, clean, 1e-6)) == "precision"
    assert not rules.rounding_explains(6, wrong, 1e-6)
    assert cause_of(rules, 6, True, rounded=rules.rounding_explains(6, wrong, 1e-6)) == "genuine drift"
    unmeasured = Rules(1e-5, budgets=rules.budgets, shares=rules.shares)
    assert not unmeasured.rounding_explains(6, clean, 1e-6)
