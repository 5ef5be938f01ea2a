"""The nodes of an input's lowering that go on inside a later call's group include the ones they are computed from.

TorchScript lowers ``atan2(y, x)`` as ``Atan(y / x)`` plus a quadrant fix-up after it: ``Greater(y, 0)`` picks
``Atan + pi`` or ``Atan - pi`` (``Where``), ``Less(x, 0)`` picks that or the bare ``Atan`` (``Where_1``).  When the
fix-up's branch ``Add`` holds torch's atan2 by coincidence (every ``x`` negative), atan2 is found there and the
next call (``* x``) is the first wrong one; its group reaches back over the fix-up, and ``align_graph.leaked`` gives
the fix-up back to atan2.  Only the nodes that read inside atan2's found value (``Sub``, ``Where_1``) were given
back: ``Greater(y, 0)`` reads ``y`` itself, so a verified boundary patch there was told as torch's ``mul`` (forms33
``atan2_zero``, once ``relu``'s zeros were found at its own ``Relu`` and not the ``Atan`` of them)."""
from __future__ import annotations

from onnx import TensorProto, helper


def _case():
    from drifttui.core.explain.causes.locate.case_data import Case

    n = helper.make_node
    nodes = [n("Relu", ["s"], ["y"], name="Relu"), n("Div", ["y", "x"], ["q"], name="Div"),
             n("Atan", ["q"], ["a"], name="Atan"), n("Add", ["a", "pi"], ["plus"], name="Add"),
             n("Greater", ["y", "zero"], ["g"], name="Greater"), n("Sub", ["a", "pi"], ["minus"], name="Sub_2"),
             n("Where", ["g", "plus", "minus"], ["w"], name="Where"), n("Less", ["x", "zero"], ["neg"], name="Less"),
             n("Where", ["neg", "w", "a"], ["t"], name="Where_1"), n("Mul", ["t", "s"], ["out"], name="Mul")]
    vi = [helper.make_tensor_value_info(v, TensorProto.FLOAT, [4]) for v in ("s", "x", "out")]
    inits = [helper.make_tensor("pi", TensorProto.FLOAT, [], [3.14159265]),
             helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])]
    model = helper.make_model(helper.make_graph(nodes, "g", vi[:2], vi[2:], inits))
    return Case(model=model, feeds={}, expected={}, module="body", call=0, sample=0, atol=1e-4, rtol=1e-4,
                nodes=[x.name for x in nodes])


def test_the_quadrant_test_goes_back_to_the_atan2_with_the_rest_of_its_fix_up():
    from drifttui.core.explain.causes.locate.align_graph import leaked

    ops = [("placeholder", "s", None, [], "float32"), ("placeholder", "x", None, [], "float32"),
           ("call_function", "torch.relu", None, [0], "float32"),
           ("call_function", "torch.atan2", None, [2, 1], "float32"),
           ("call_function", "torch.Tensor.mul", None, [3, 0], "float32")]
    found = {0: "s", 1: "x", 2: "y", 3: "plus"}
    group = ["Greater", "Sub_2", "Where", "Less", "Where_1", "Mul"]
    assert leaked(_case(), ops, found, 4, group) == (3, ["Greater", "Sub_2", "Where", "Less", "Where_1"])
