"""The patch budget: a fixed number of candidate patches per origin, fewer for a large origin, the
checks' own patches always kept, then the ones at the nodes the localisation names."""
from __future__ import annotations

from types import SimpleNamespace


def _case(n_nodes: int):
    from onnx import helper

    nodes = [helper.make_node("Relu", [f"v{k}"], [f"v{k + 1}"], name=f"n{k}") for k in range(n_nodes)]
    return SimpleNamespace(model=helper.make_model(helper.make_graph(nodes, "g", [], [])))


def test_a_large_origin_gets_fewer_patches_and_never_none():
    from drifttui.core.explain.causes.propose.patch_budget import MAX_PATCHES, MIN_PATCHES, budget

    assert budget(_case(10)) == MAX_PATCHES
    assert budget(_case(2000)) == 12
    assert budget(_case(100_000)) == MIN_PATCHES


def test_a_large_origin_is_re_exported_the_cheap_ways_only():
    from drifttui.core.explain.causes.propose.patch_budget import affordable
    from drifttui.core.explain.causes.propose.reexport.variants import Variant

    every = [Variant("dynamo", "d"), Variant("dynamo", "dd", decompose=True), Variant("torchscript", "t20", opset=20)]
    assert affordable(every, _case(50)) == (every, [])
    tried, skipped = affordable(every, _case(2000))
    assert tried == [every[2]] and skipped == ["d", "dd"]          # no minute-long dynamo export
    tried, skipped = affordable(every, _case(600))
    assert tried == [every[0], every[2]] and skipped == ["dd"]
    # a make_fx re-trace before a TorchScript export costs a second trace; a dynamo one stays dynamo's
    traced = [Variant("torchscript", "rt", retrace=True), Variant("dynamo", "rd", retrace=True),
              Variant("torchscript", "t20", opset=20)]
    assert affordable(traced, _case(2000)) == ([traced[0], traced[2]], ["rd"])
    assert affordable(traced, _case(2500)) == ([traced[0]], ["rd", "t20"])


def test_the_checks_patches_then_the_localised_nodes_patches_come_first():
    from drifttui.core.explain.causes.propose.patch_budget import by_likelihood
    from drifttui.core.onnx.edit.patches import Patch

    def p(node: str, check: str = "op-compat") -> Patch:
        return Patch({"op": "set_attribute", "node": node}, check, "", "", nodes=[node])

    own, a, b, wrong = p("n5", "padding"), p("n1"), p("n2"), p("n9")
    loc = SimpleNamespace(first_node="n9", fx=None)
    ordered = by_likelihood([own, a, b, wrong], loc, checks=1)
    assert ordered == [own, wrong, a, b]
    fx = SimpleNamespace(wrong=SimpleNamespace(nodes=["n2"]))
    assert by_likelihood([own, a, b, wrong], SimpleNamespace(first_node=None, fx=fx), checks=1) == [own, b, a, wrong]


def test_where_no_node_is_named_one_patch_of_each_kind_comes_in_turn():
    """400 like nodes (a workaround at every Tanh) do not fill the budget before the one edit of
    another kind: kinds in turn, each kind's patches in their order."""
    from drifttui.core.explain.causes.propose.patch_budget import by_likelihood
    from drifttui.core.onnx.edit.patches import Patch

    def w(node: str, form: str = "tanh_exp") -> Patch:
        return Patch({"op": "rewrite", "node": node, "rewrite": "workaround", "form": form}, "stability", "", "",
                     nodes=[node])

    alpha = Patch({"op": "set_attribute", "node": "hs", "name": "alpha", "value": 1 / 6}, "op-compat", "", "",
                  nodes=["hs"])
    tanhs = [w(f"t{k}") for k in range(4)]
    other = w("t0", "tanh_sigmoid")
    loc = SimpleNamespace(first_node=None, fx=None)
    assert by_likelihood([*tanhs, other, alpha], loc, checks=0) == [tanhs[0], other, alpha, *tanhs[1:]]
    # a named node still comes first, whatever its kind
    named = SimpleNamespace(first_node="t3", fx=None)
    assert by_likelihood([*tanhs, other, alpha], named, checks=0)[:3] == [tanhs[3], tanhs[0], other]


def _lstm_case(steps: int, bidirectional: bool = False):
    """A TorchScript export of a batch-first nn.LSTM (a Transpose then an ONNX LSTM node), fed (2, steps, 8)."""
    import io

    import numpy as np
    import onnx
    import torch

    torch.manual_seed(0)
    lstm = torch.nn.LSTM(8, 8, batch_first=True, bidirectional=bidirectional).eval()
    buf = io.BytesIO()
    x = torch.randn(2, steps, 8)
    torch.onnx.export(lstm, (x,), buf, dynamo=False, input_names=["x"], dynamic_axes={"x": {1: "T"}})
    model = onnx.load_from_string(buf.getvalue())
    assert any(n.op_type == "LSTM" for n in model.graph.node)
    return SimpleNamespace(model=model, feeds={"x": np.zeros((2, steps, 8), np.float32)})


def test_a_long_recurrence_is_not_decomposed_step_by_step():
    """torch's core ATen decompositions unroll an LSTM's every step (300 steps: 6331 ATen ops, minutes to export):
    the decomposing re-exports of a long recurrence are skipped by the budget and said so; a short one keeps them."""
    from drifttui.core.explain.causes.propose.patch_budget import affordable, unrolled_steps
    from drifttui.core.explain.causes.propose.reexport.variants import Variant

    every = [Variant("dynamo", "d"), Variant("dynamo", "dd", decompose=True),
             Variant("torchscript", "rt", retrace=True), Variant("torchscript", "t20", opset=20)]
    long, short = _lstm_case(300), _lstm_case(6)
    assert unrolled_steps(long) == 300 and unrolled_steps(short) == 6
    assert unrolled_steps(_lstm_case(40, bidirectional=True)) == 80
    assert affordable(every, long) == ([every[0], every[3]], ["dd", "rt"])
    assert affordable(every, short) == (every, [])
    assert unrolled_steps(_case(50)) == 0
