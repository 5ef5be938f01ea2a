"""A per_op opmath patch (propose/numerics/opmath.py) that verifies while no single rounding it restores removes the drift
alone (a float16 flow warp's coordinate chain: forms45p's ``flow_warp`` / ``gather_warp``): decisive_rounding leaves
each rounding out of the verified set in turn and marks the one whose omission brings back the most of the drift, so
the story names that op, not the first call whose value differs (the ``linear`` before it)."""
from __future__ import annotations

from types import SimpleNamespace

from onnx import TensorProto, helper

from drifttui.core.explain.causes.conclude import Trial
from drifttui.core.explain.causes.locate.evaluate import Eval
from drifttui.core.explain.causes.propose.numerics.decisive_rounding import decisive
from drifttui.core.onnx.edit.patches import Patch


def _case() -> SimpleNamespace:
    nodes = [helper.make_node("Cast", ["x"], ["c"], name="Cast", to=TensorProto.FLOAT16),
             helper.make_node("Mul", ["c", "c"], ["m"], name="Mul"),
             helper.make_node("Add", ["m", "c"], ["a"], name="Add"),
             helper.make_node("Floor", ["a"], ["f"], name="Floor")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("f", TensorProto.FLOAT16, [4])])
    return SimpleNamespace(model=helper.make_model(graph))


def _trial(round_: list[str]) -> Trial:
    spec = {"op": "rewrite", "rewrite": "opmath_float32", "form": "per_op", "node": "Cast", "round": round_}
    return Trial(Patch(spec, "dtype", "", ""), Eval(0.0, False))


# the drift each set of restored roundings leaves: one alone never enough; without the add's, most of it is back
def _left(round_: set[str]) -> float:
    if len(round_) == 1:
        return 1.0
    return {"a": 0.9, "m": 0.2}.get(next(iter({"c", "m", "a", "f"} - round_), ""), 0.0)


def _check(patches: list[Patch]) -> list[Trial]:
    left = _left(set(patches[0].spec["round"]))
    return [Trial(patches[0], Eval(left, left > 0.0))]


def test_the_rounding_whose_omission_brings_the_drift_back_is_marked_when_none_is_enough_alone():
    marked = decisive(_case(), [_trial(["c", "m", "a", "f"])], _check, 1.0)
    assert marked[0].patch.spec.get("decisive") == "Add", marked[0].patch.spec


def test_nothing_is_marked_when_each_rounding_left_out_is_harmless():
    marked = decisive(_case(), [_trial(["c", "m", "a", "f"])],
                      lambda ps: [Trial(ps[0], Eval(1.0 if len(ps[0].spec["round"]) == 1 else 0.0,
                                                    len(ps[0].spec["round"]) == 1))], 1.0)
    assert "decisive" not in marked[0].patch.spec


def test_the_rounding_that_alone_leaves_fewest_elements_over_tolerance_is_marked_when_no_omission_matters():
    """A float16 field around 300 (forms46x's ``heat_stencil``): the ``+ 300``'s rounding alone leaves 3 elements
    off by a double rounding (its max |d| unchanged), every other alone as many as none restored, and a later
    rounding puts each one left out back: the count of elements names the add, not the ``linear`` before it."""
    def check(patches: list[Patch]) -> list[Trial]:
        r = patches[0].spec["round"]
        left = 0 if len(r) > 1 else (3 if r == ["a"] else 190)
        return [Trial(patches[0], Eval(1.0 if left else 0.0, left > 0, n_out=left))]

    marked = decisive(_case(), [_trial(["c", "m", "a", "f"])], check, 1.0)
    assert marked[0].patch.spec.get("decisive") == "Add", marked[0].patch.spec
