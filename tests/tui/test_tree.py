"""The pure layer tree: rows, collapse, filters, roll-ups (no UI)."""
from __future__ import annotations

import dataclasses

from drifttui.core.result import DRIFT, INHERITED, UNATTRIBUTED
from tests.tui.replay import load_fixture, tiled
from drifttui.tui.tree import LayerTree


def make(name="resnet18-bf16"):
    r = load_fixture(name)
    return r, LayerTree(r.layers, r.drift_origin.layer)


def test_all_expanded_rows_are_execution_order():
    r, t = make()
    assert t.rows == list(range(len(r.layers)))
    assert t.row_of(r.drift_origin.layer) == r.drift_origin.layer


def test_collapse_hides_subtree_and_expand_restores():
    r, t = make()
    block = next(l.index for l in r.layers if l.cls == "BasicBlock")
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
    subtree = _subtree(t, block)
    for col in (0, 2):       # max |d| and the local error: the worst of the block and everything in it
        want = max(t.own[k][col] for k in subtree if t.own[k][col] is not None)
        assert values[col] == want
    assert values[2] == max(r.layers[k].local.max_abs.worst for k in subtree if r.layers[k].local is not None)


def test_collapse_all_keeps_root_open():
    r, t = make()
    t.collapse_all()
    assert t.rows[0] == 0
    assert all(r.layers[i].depth <= 1 for i in t.rows)


def _subtree(t, i):
    out, todo = [], [i]
    while todo:
        k = todo.pop()
        out.append(k)
        todo.extend(t.children[k])
    return out


def _with_ancestors(t, rows):
    """``rows`` and every ancestor of them, in execution order."""
    want = set(rows)
    for i in rows:
        p = t.parent[i]
        while p is not None:
            want.add(p)
            p = t.parent[p]
    return sorted(want)


def test_filter_by_name_keeps_ancestors():
    """The rows kept are exactly the matching layers and their ancestors, in execution order."""
    r, t = make()
    t.set_filter(text="relu")
    matching = {L.index for L in r.layers if "relu" in L.module}
    assert matching
    assert t.rows == _with_ancestors(t, matching)
    t.set_filter(text="")
    assert len(t.rows) == len(r.layers)


def test_only_drift_filter():
    """Both halves: every drifting layer is shown (with its ancestors, to keep the tree readable), and
    nothing else is: a row that does not drift itself is an ancestor of one that does."""
    from drifttui.tui.tree import DRIFTING

    r, t = make()
    drifting = {i for i, layer in enumerate(r.layers) if layer.status in DRIFTING}
    assert drifting and len(drifting) < len(r.layers)
    t.set_filter(only_drift=True)
    assert t.rows == _with_ancestors(t, drifting)
    assert all(r.layers[i].status in DRIFTING or any(t.parent[j] == i for j in t.rows) for i in t.rows)
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
    block = next(l.index for l in r.layers if l.cls == "BasicBlock")
    t.collapse(block)
    t.set_filter(only_drift=True)
    t2 = LayerTree(load_fixture("resnet18").layers)      # another run of the same model
    t2.restore(t.state())
    assert block not in t2.expanded and t2.only_drift


def test_empty_and_malformed_parents():
    assert LayerTree([]).rows == []
    r = load_fixture()
    layers = [dataclasses.replace(l, parent=99) if i == 3 else l for i, l in enumerate(r.layers)]
    t = LayerTree(layers)
    assert 3 in t.rows and 3 in t.roots


def test_ten_thousand_rows_rebuild_fast():
    import time
    r = tiled(load_fixture(), 134)
    t = LayerTree(r.layers, r.drift_origin.layer)
    assert len(t.rows) == len(r.layers) >= 10_000
    start = time.perf_counter()
    t.collapse_all()
    t.expand_all()
    assert time.perf_counter() - start < 0.5


def test_sort_by_worst_local_puts_the_origin_first_among_siblings_and_back():
    r, t = make()
    t.set_sort("local")
    o = r.drift_origin.layer
    # every ancestor of the origin is its parent's first child: worst local first
    chain = [o, *t.ancestors(o)]
    for child in chain[:-1]:
        parent = t.parent[child]
        visible_kids = [i for i in t.rows if t.parent[i] == parent]
        assert visible_kids[0] == child, (r.layers[child].module, [r.layers[i].module for i in visible_kids])
    t.set_sort(None)
    assert t.rows == list(range(len(r.layers)))


def test_search_next_previous_wraps_in_execution_order():
    r, t = make()
    hits = [i for i in range(len(r.layers)) if "bn1" in r.layers[i].module]
    assert t.search("BN1", None) == hits[0]
    assert t.search("bn1", hits[0]) == hits[1]
    assert t.search("bn1", hits[-1]) == hits[0]          # wraps
    assert t.search("bn1", hits[1], -1) == hits[0]
    assert t.search("bn1", hits[0], -1) == hits[-1]
    assert t.search("no-such-name", None) is None and t.search("", None) is None


def test_engine_fails_are_rendered_and_rolled_up_not_rederived():
    r = load_fixture()
    o = r.drift_origin.layer
    # the engine says the origin's abs passes and its 1-cos fails (unlike the bands would)
    layers = [dataclasses.replace(l, fails={"max_abs": False, "max_rel": True, "local": True, "cos": True})
              if l.index == o else dataclasses.replace(l, fails={c: False for c in l.fails or
                                                                  ("max_abs", "max_rel", "local", "cos")})
              for l in r.layers]
    t = LayerTree(layers, o)
    assert t.values_fails(o)[1] == (False, True, True, True)
    parent = t.parent[o]
    t.collapse(parent)
    values, fails = t.values_fails(parent)
    assert fails == (False, True, True, True)          # any failing descendant
    old = LayerTree([dataclasses.replace(l, fails={}) for l in r.layers], o)   # an old report: no Layer.fails
    assert old.values_fails(o)[1] == (None, None, None, None)


def test_unattributed_counts_as_drifting():
    r = load_fixture()
    layers = [dataclasses.replace(l, status=UNATTRIBUTED) if l.index == 5 else l for l in r.layers]
    t = LayerTree(layers, r.drift_origin.layer)
    t.set_filter(only_drift=True)
    assert t.row_of(5) is not None
