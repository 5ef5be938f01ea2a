"""The pure layer tree: rows, collapse, filters, roll-ups (no UI)."""
from __future__ import annotations

from drifttui.core.result import DRIFT, INHERITED
from drifttui.testing.synthetic import synthetic_result
from drifttui.tui.tree import LayerTree


def make(n=60):
    r = synthetic_result(n)
    return r, LayerTree(r.layers, r.drift_origin.layer)


def test_all_expanded_rows_are_execution_order():
    r, t = make()
    assert t.rows == list(range(len(r.layers)))
    assert t.row_of(r.drift_origin.layer) == r.drift_origin.layer


def test_collapse_hides_subtree_and_expand_restores():
    r, t = make()
    block = next(l.index for l in r.layers if l.cls == "Block")
    kids = t.children[block]
    assert kids
    assert t.collapse(block)
    assert all(t.row_of(k) is None for k in kids)
    assert t.row_of(block) is not None
    assert not t.collapse(block)
    assert t.expand(block)
    assert all(t.row_of(k) is not None for k in kids)


def test_collapsed_container_rolls_up_worst_values():
    r, t = make()
    o = r.drift_origin.layer
    block = t.parent[o]
    t.collapse(block)
    values, rolled = t.values(block)
    assert rolled
    worst_child = max(t.own[k][0] for k in t.children[block] if t.own[k][0] is not None)
    assert values[0] >= worst_child
    assert values[2] >= r.layers[o].local.max_abs.worst


def test_collapse_all_keeps_root_open():
    r, t = make()
    t.collapse_all()
    assert t.rows[0] == 0
    assert all(r.layers[i].depth <= 1 for i in t.rows)


def test_filter_by_name_keeps_ancestors():
    r, t = make()
    t.set_filter(text="attn")
    names = [r.layers[i].module for i in t.rows]
    assert any(n.endswith("attn") for n in names)
    for i in t.rows:
        layer = r.layers[i]
        assert "attn" in layer.module or any(t.children[i])
    t.set_filter(text="")
    assert len(t.rows) == len(r.layers)


def test_only_drift_filter():
    r, t = make()
    t.set_filter(only_drift=True)
    leaves = [i for i in t.rows if not t.children[i]]
    assert leaves and all(r.layers[i].status in (DRIFT, INHERITED) for i in leaves)
    t.set_filter(only_drift=False)
    assert len(t.rows) == len(r.layers)


def test_reveal_expands_ancestors_and_clears_hiding_filter():
    r, t = make()
    o = r.drift_origin.layer
    t.collapse_all()
    assert t.row_of(o) is None
    t.reveal(o)
    assert t.row_of(o) is not None
    t.set_filter(text="no-such-module")
    t.reveal(o)
    assert t.row_of(o) is not None and not t.filtering


def test_state_survives_a_new_result():
    r, t = make()
    block = next(l.index for l in r.layers if l.cls == "Block")
    t.collapse(block)
    t.set_filter(only_drift=True)
    t2 = LayerTree(synthetic_result(60, seed=1).layers)
    t2.restore(t.state())
    assert block not in t2.expanded and t2.only_drift


def test_empty_and_malformed_parents():
    assert LayerTree([]).rows == []
    r = synthetic_result(10)
    import dataclasses
    layers = [dataclasses.replace(l, parent=99) if i == 3 else l for i, l in enumerate(r.layers)]
    t = LayerTree(layers)
    assert 3 in t.rows and 3 in t.roots


def test_ten_thousand_rows_rebuild_fast():
    import time
    r = synthetic_result(10_000)
    t = LayerTree(r.layers, r.drift_origin.layer)
    assert len(t.rows) == 10_000
    start = time.perf_counter()
    t.collapse_all()
    t.expand_all()
    assert time.perf_counter() - start < 0.5
