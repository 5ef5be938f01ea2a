"""The tie between two calls that claim one absorbed value at the same distance (prepare/plan/absorbed.choose):
of a container and its child the child keeps it (LeViT's ``q`` and ``q.ln``: the container is paired through the
child's scope); of two unrelated calls (tied weight modules in two branches reading one folded constant) depth says
nothing, and the first claimant keeps it, as a module called twice does.  Before, the deeper call won either way."""
from __future__ import annotations

import numpy as np
import pytest

from drifttui.core.prepare.plan.absorbed import View, choose

SHAPE = (4, 4)


def _view(call: int, module: str, depth: int, folded: bool) -> View:
    return View(call, "v", (1, 0), SHAPE, (7,), -1 - depth if folded else depth, module)


def _chosen(views: list[View]) -> list[int]:
    value = np.arange(16, dtype=np.float32).reshape(SHAPE)
    torch_out = lambda calls: {c: value for c in calls}                     # noqa: E731 - every call: the same output
    resolve = lambda names: {n: value.T.copy() for n in names}              # noqa: E731 - the file holds its transpose
    return [v.call for v in choose({v.call: [v] for v in views}, torch_out, resolve)]


@pytest.mark.parametrize("folded", [False, True])
def test_a_container_and_its_child_tie_to_the_child(folded):
    assert _chosen([_view(1, "q", 1, folded), _view(2, "q.ln", 2, folded)]) == [2]
    assert _chosen([_view(1, "", 0, folded), _view(2, "blocks.0.ln", 2, folded)]) == [2]


@pytest.mark.parametrize("folded", [False, True])
def test_two_unrelated_calls_tie_to_the_first_claimant_not_the_deeper(folded):
    assert _chosen([_view(1, "enc.tw", 2, folded), _view(2, "dec.blk.tw", 3, folded)]) == [1]
    assert _chosen([_view(1, "dec.blk.tw", 3, folded), _view(2, "enc.tw", 2, folded)]) == [1]
    # a sibling whose name begins like the other's is not its child
    assert _chosen([_view(1, "q", 1, folded), _view(2, "qk.ln", 2, folded)]) == [1]


def test_a_closer_view_wins_whatever_the_nesting():
    value = np.arange(16, dtype=np.float32).reshape(SHAPE)
    near, far = _view(1, "enc.tw", 2, False), View(2, "v", None, SHAPE, (7,), 3, "dec.blk.tw")
    got = choose({1: [near], 2: [far]}, lambda calls: {c: value for c in calls}, lambda names: {"v": value.T.copy()})
    assert [v.call for v in got] == [1]
