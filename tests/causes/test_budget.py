"""The patch budget: a fixed number of candidate patches per origin, fewer for a large origin, the
checks' own patches always kept, then the ones at the nodes the localisation names."""
from __future__ import annotations

from types import SimpleNamespace


def _case(n_nodes: int):
    from onnx import helper

    nodes = [helper.make_node("Relu", [f"v{k}"], [f"v{k + 1}"], name=f"n{k}") for k in range(n_nodes)]
    return SimpleNamespace(model=helper.make_model(helper.make_graph(nodes, "g", [], [])))


def test_a_large_origin_gets_fewer_patches_and_never_none():
    from drifttui.core.explain.causes import MAX_PATCHES, MIN_PATCHES, budget

    assert budget(_case(10)) == MAX_PATCHES
    assert budget(_case(2000)) == 12
    assert budget(_case(100_000)) == MIN_PATCHES


def test_a_large_origin_is_re_exported_the_likeliest_way_only():
    from drifttui.core.explain.causes import MAX_EXPORTS, export_budget

    assert export_budget(_case(50)) == MAX_EXPORTS
    assert export_budget(_case(800)) == 2
    assert export_budget(_case(2000)) == 1


def test_the_checks_patches_then_the_localised_nodes_patches_come_first():
    from drifttui.core.explain.causes import by_likelihood
    from drifttui.core.explain.causes.patches import Patch

    def p(node: str, check: str = "op-compat") -> Patch:
        return Patch({"op": "set_attribute", "node": node}, check, "", "", nodes=[node])

    own, a, b, wrong = p("n5", "padding"), p("n1"), p("n2"), p("n9")
    loc = SimpleNamespace(first_node="n9", fx=None)
    ordered = by_likelihood([own, a, b, wrong], loc, checks=1)
    assert ordered == [own, wrong, a, b]
    fx = SimpleNamespace(wrong=SimpleNamespace(nodes=["n2"]))
    assert by_likelihood([own, a, b, wrong], SimpleNamespace(first_node=None, fx=fx), checks=1) == [own, b, a, wrong]
