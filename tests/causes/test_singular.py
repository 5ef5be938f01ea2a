"""The graph edits of a lowering that decides a singular point otherwise than torch
(drifttui/core/onnx/edit/lowerings/singular.py), the proposals that use them (propose/edits/singular.py) and two
crashes found on the forms33 drifts: real ONNX models run in real ONNX Runtime."""
from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import TensorProto, helper

from drifttui.core.explain.causes.locate.case import Case
from drifttui.core.explain.causes.locate.evaluate import run_ort
from drifttui.core.explain.causes.propose.edits.singular import singular_patches
from drifttui.core.onnx.edit.patches import Patch, PatchError, apply


def _model(nodes, inputs=("x",)):
    ins = [helper.make_tensor_value_info(i, TensorProto.FLOAT, [4]) for i in inputs]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    return helper.make_model(helper.make_graph(nodes, "g", ins, [out]), opset_imports=[helper.make_opsetid("", 17)])


def _div_model():
    return _model([helper.make_node("Div", ["x", "d"], ["q"], name="div"),
                   helper.make_node("Identity", ["q"], ["y"], name="id")], ("x", "d"))


def test_the_guard_puts_torchs_value_where_the_node_makes_nan_or_inf_and_keeps_the_rest():
    model = apply(_div_model(), Patch({"op": "rewrite", "rewrite": "nonfinite_guard", "node": "div", "value": 0.0},
                                      "lowering", "", ""))
    x, d = np.array([0, 1, -2, 6], np.float32), np.array([0, 0, 4, 3], np.float32)
    got = run_ort(model, {"x": x, "d": d})["y"]
    assert got.tolist() == [0.0, 0.0, -0.5, 2.0]


def test_the_boundary_flip_decides_the_tie_on_the_other_side_and_refuses_a_non_comparison():
    model = _model([helper.make_node("Greater", ["x", "z"], ["b"], name="gt"),
                    helper.make_node("Cast", ["b"], ["y"], name="cast", to=TensorProto.FLOAT)], ("x", "z"))
    feeds = {"x": np.array([0, 1, -1, 0], np.float32), "z": np.zeros(4, np.float32)}
    assert run_ort(model, feeds)["y"].tolist() == [0, 1, 0, 0]
    flipped = apply(model, Patch({"op": "rewrite", "rewrite": "boundary", "node": "gt"}, "lowering", "", ""))
    assert run_ort(flipped, feeds)["y"].tolist() == [1, 1, 0, 1]
    with pytest.raises(PatchError):
        apply(model, Patch({"op": "rewrite", "rewrite": "boundary", "node": "cast"}, "lowering", "", ""))


def _case(model, feeds, expected):
    return Case(model, feeds, {"y": expected}, "body", 0, 0, 1e-4, 1e-4, nodes=[n.name for n in model.graph.node])


def test_a_guard_is_proposed_at_the_node_that_makes_the_nan_only_where_torch_is_finite():
    feeds = {"x": np.array([0, 1, -2, 6], np.float32), "d": np.array([0, 1, 4, 3], np.float32)}
    finite = _case(_div_model(), feeds, np.array([0, 1, -0.5, 2], np.float32))
    guards = [p for p in singular_patches(finite, None) if p.spec["rewrite"] == "nonfinite_guard"]
    assert [p.spec["node"] for p in guards] == ["div"] and guards[0].check == "lowering"
    same_nan = _case(_div_model(), feeds, np.array([np.nan, 1, -0.5, 2], np.float32))
    assert not [p for p in singular_patches(same_nan, None) if p.spec["rewrite"] == "nonfinite_guard"]


def test_an_error_near_floats_max_has_an_sqnr_and_no_math_domain_error():
    from drifttui.core.base.metrics import Stats

    st = Stats(n=4, sum_sq=math.inf, norm_t=4.0)
    assert st.sqnr_db == -math.inf
    assert math.isnan(Stats(n=4, sum_sq=math.inf, norm_t=math.inf).sqnr_db)


def _log_sigmoid_model(fx: bool = False):
    """``Log(Sigmoid(x))``; with ``fx``, the dynamo exporter's records: the Sigmoid is ``torch.sigmoid``'s, the Log is
    ``log_sigmoid(x)``'s lowering sharing it (the Log's FX node reads ``x``, not the sigmoid)."""
    sig = helper.make_node("Sigmoid", ["x"], ["s"], name="sig")
    log = helper.make_node("Log", ["s"], ["y"], name="log")
    if fx:
        helper.set_metadata_props(sig, {"pkg.torch.onnx.fx_node": "%sigmoid : [num_users=2] = call_function["
                                        "target=torch.ops.aten.sigmoid.default](args = (%x,), kwargs = {})"})
        helper.set_metadata_props(log, {"pkg.torch.onnx.fx_node": "%log_sigmoid : [num_users=1] = call_function["
                                        "target=torch.ops.aten.log_sigmoid.default](args = (%x,), kwargs = {})"})
    return _model([sig, log])


def test_no_guard_tells_a_singular_point_where_float32_underflowed_and_one_does_at_a_true_pole():
    """``Log(Sigmoid(-200))`` is -inf in float32 (the Sigmoid underflows to 0) and -200 exactly: no singular point, no
    guard (its 0 would only be near torch's value after a vanishing factor); ``Log(0)`` is a pole in any precision."""
    x = np.array([-200.0, -150.0, 0.0, 3.0], np.float32)
    under = _case(_log_sigmoid_model(), {"x": x}, -np.logaddexp(0, -x).astype(np.float32))
    assert run_ort(under.model, under.feeds)["y"][0] == -np.inf
    assert not [p for p in singular_patches(under, None) if p.spec["rewrite"] == "nonfinite_guard"]
    pole = _case(_model([helper.make_node("Log", ["x"], ["y"], name="log")]), {"x": np.array([0, 1, 2, 3], np.float32)},
                 np.array([0, 0, np.log(2), np.log(3)], np.float32))
    assert [p.spec["node"] for p in singular_patches(pole, None) if p.spec["rewrite"] == "nonfinite_guard"] == ["log"]


def test_a_workaround_names_every_node_it_replaces_and_a_shared_sigmoid_is_one_calls_unstable_lowering():
    """The log_sigmoid rewrite replaces the Log that reads the Sigmoid: its patch names both (the likelihood order and
    the headline read ``nodes``).  A Sigmoid the dynamo optimiser shared between ``torch.sigmoid`` and
    ``log_sigmoid``'s lowering is that lowering's unstable composite (``stability``), not ONNX Runtime's kernel."""
    from drifttui.core.explain.causes.propose.edits.rewrites import workaround_patches

    x = np.array([-200.0, -150.0, 0.0, 3.0], np.float32)
    for fx in (False, True):
        case = _case(_log_sigmoid_model(fx), {"x": x}, -np.logaddexp(0, -x).astype(np.float32))
        logsig = next(p for p in workaround_patches(case, "log", "runtime") if p.spec["form"] == "log_sigmoid")
        assert logsig.nodes == ["sig", "log"]
        assert logsig.check == "stability"


def _long(nodes, n: int):
    """``nodes`` after ``n`` exact steps (``Neg`` pairs) on ``x``: an origin of more than ``n`` nodes."""
    chain = [helper.make_node("Neg", [f"v{k}" if k else "x"], [f"v{k + 1}"], name=f"neg{k}") for k in range(n)]
    for node in nodes:
        node.input[:] = [f"v{n}" if v == "x" else v for v in node.input]
    return _model(chain + nodes)


@pytest.mark.parametrize("steps", [450, 1200])
def test_the_float64_check_holds_on_an_origin_past_400_nodes_at_a_bounded_cost(steps):
    """Past 400 nodes the float64 check used to be skipped: the underflowed ``Log(Sigmoid(x))`` got a guard whose story
    (a singular point torch defines) is wrong.  The check now runs on the nodes before the guarded one (the nearest
    400, fed the file's own values past them): no guard at the underflow, a guard at a true pole, in about the time
    of a 400-node origin."""
    import time

    x = np.array([-200.0, -150.0, 0.0, 3.0], np.float32)
    under = _case(_long([helper.make_node("Sigmoid", ["x"], ["s"], name="sig"),
                         helper.make_node("Log", ["s"], ["y"], name="log")], steps), {"x": x},
                  -np.logaddexp(0, -x).astype(np.float32))
    assert len(under.model.graph.node) > 400 and run_ort(under.model, under.feeds)["y"][0] == -np.inf
    start = time.perf_counter()
    assert not [p for p in singular_patches(under, None) if p.spec["rewrite"] == "nonfinite_guard"]
    took = time.perf_counter() - start
    pole = _case(_long([helper.make_node("Log", ["x"], ["y"], name="log")], steps),
                 {"x": np.array([0, 1, 2, 3], np.float32)}, np.array([0, 0, np.log(2), np.log(3)], np.float32))
    assert [p.spec["node"] for p in singular_patches(pole, None) if p.spec["rewrite"] == "nonfinite_guard"] == ["log"]
    assert took < 10.0, took


def test_the_cone_is_the_nearest_nodes_and_the_values_that_feed_it():
    from drifttui.core.explain.causes.locate.cone import cone

    model = _long([helper.make_node("Log", ["x"], ["y"], name="log")], 10)
    nodes, outside = cone(model, ["y"], 4)
    assert [n.name for n in nodes] == ["neg7", "neg8", "neg9", "log"] and outside == ["v7"]
    nodes, outside = cone(model, ["y"], 100)
    assert len(nodes) == 11 and outside == ["x"]
