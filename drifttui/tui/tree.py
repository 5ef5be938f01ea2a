"""The layer tree as pure data: parent/children, roll-ups, expand/collapse, filters and
the flattened list of visible rows.  No Textual here, so it is tested without a UI.

Rows are layer indices.  ``rebuild()`` recomputes ``rows`` (the visible layers, in
execution order) in O(number of layers); everything per-row is O(1) after that.
"""
from __future__ import annotations

import math
from typing import Iterable, Optional, Sequence

from drifttui.core.result import DRIFT, FAIL_COLUMNS, INHERITED, ROOT_NAME, UNATTRIBUTED, Layer, display_name  # noqa: F401

DRIFTING = (DRIFT, INHERITED, UNATTRIBUTED)
Values = tuple[Optional[float], Optional[float], Optional[float], Optional[float]]
Fails = tuple[Optional[bool], Optional[bool], Optional[bool], Optional[bool]]
Key = tuple[str, int]
SORTS = (None, "local", "max_abs", "cos")     # the `w` key cycles through these


def own_fails(layer: Layer) -> Fails:
    """The engine's pass/fail per column (Layer.fails); None where it did not say (old reports)."""
    if not layer.fails:
        return (None, None, None, None)
    return tuple(layer.fails.get(c) for c in FAIL_COLUMNS)  # type: ignore[return-value]


def _any_fail(a: Optional[bool], b: Optional[bool]) -> Optional[bool]:
    if a or b:
        return True
    if a is None or b is None:
        return None
    return False


def _worst(a: Optional[float], b: Optional[float]) -> Optional[float]:
    if a is None:
        return b
    if b is None:
        return a
    if a != a or b != b:
        return math.nan
    return a if a >= b else b


def own_values(layer: Layer) -> Values:
    """(max abs, max rel, local max abs, 1 - cosine), worst over samples; None if absent."""
    m = layer.metrics
    local = layer.local.max_abs.worst if layer.local is not None else None
    if m is None:
        return (None, None, local, None)
    return (m.max_abs.worst, m.max_rel.worst, local, max(0.0, 1.0 - m.cosine.worst))


def key_of(layer: Layer) -> Key:
    return (layer.module, layer.call)


class LayerTree:
    def __init__(self, layers: Sequence[Layer], origin: Optional[int] = None) -> None:
        self.layers = list(layers)
        n = len(self.layers)
        self.origin = origin if origin is not None and 0 <= origin < n else None
        self.children: list[list[int]] = [[] for _ in range(n)]
        self.parent: list[Optional[int]] = [None] * n
        self.roots: list[int] = []
        for i, layer in enumerate(self.layers):
            p = layer.parent
            if p is not None and 0 <= p < n and p != i:
                self.children[p].append(i)
                self.parent[i] = p
            else:
                self.roots.append(i)
        self.order = self._preorder(range(n))
        self.own: list[Values] = [own_values(l) for l in self.layers]
        self.rolled: list[Values] = list(self.own)
        self.own_fails: list[Fails] = [own_fails(l) for l in self.layers]
        self.rolled_fails: list[Fails] = list(self.own_fails)
        self.has_drift: list[bool] = [l.status in DRIFTING for l in self.layers]
        for i in reversed(self.order):          # children before parents
            p = self.parent[i]
            if p is not None:
                a, b = self.rolled[p], self.rolled[i]
                self.rolled[p] = tuple(_worst(x, y) for x, y in zip(a, b))  # type: ignore[assignment]
                self.rolled_fails[p] = tuple(_any_fail(x, y) for x, y in  # type: ignore[assignment]
                                             zip(self.rolled_fails[p], self.rolled_fails[i]))
                self.has_drift[p] = self.has_drift[p] or self.has_drift[i]
        self.expanded: set[int] = {i for i in range(n) if self.children[i]}
        self._lower = [(l.module.lower(), l.cls.lower()) for l in self.layers]    # what a name filter reads
        self._drifting = [l.status in DRIFTING for l in self.layers]
        self.filter_text = ""
        self.only_drift = False
        self.sort: Optional[str] = None
        self._kids = self.children
        self._roots = self.roots
        self.rows: list[int] = []
        self._row_of: dict[int, int] = {}
        self.rebuild()

    # -- structure ---------------------------------------------------------
    def _preorder(self, _all: Iterable[int]) -> list[int]:
        out: list[int] = []
        stack = list(reversed(self.roots))
        seen = set()
        while stack:
            i = stack.pop()
            if i in seen:          # guards against malformed parent cycles
                continue
            seen.add(i)
            out.append(i)
            stack.extend(reversed(self.children[i]))
        return out

    def has_children(self, i: int) -> bool:
        return bool(self.children[i])

    def is_expanded(self, i: int) -> bool:
        return i in self.expanded

    def ancestors(self, i: int) -> list[int]:
        out = []
        p = self.parent[i]
        while p is not None and p not in out:
            out.append(p)
            p = self.parent[p]
        return out

    # -- filtering -----------------------------------------------------------
    @property
    def filtering(self) -> bool:
        return bool(self.filter_text) or self.only_drift

    def matches(self, i: int) -> bool:
        return self._matching()[i]

    def _matching(self) -> list[bool]:
        """Per layer: does it pass the filter (one pass over the lowercased names)."""
        text, drift = self.filter_text.lower(), self.only_drift
        if not text:
            return list(self._drifting) if drift else [True] * len(self.layers)
        if drift:
            return [d and (text in m or text in c) for (m, c), d in zip(self._lower, self._drifting)]
        return [text in m or text in c for m, c in self._lower]

    def set_filter(self, text: str | None = None, only_drift: bool | None = None) -> None:
        if text is not None:
            self.filter_text = text.strip()
        if only_drift is not None:
            self.only_drift = only_drift
        self.rebuild(reveal_matches=True)

    # -- rows ----------------------------------------------------------------
    def rebuild(self, reveal_matches: bool = False) -> None:
        if self.filtering:
            keep = self._matching()
            parent, reveal = self.parent, (self.expanded.add if reveal_matches else None)
            for i in reversed(self.order):      # a kept layer keeps (and with reveal opens) its parent
                if keep[i]:
                    p = parent[i]
                    if p is not None:
                        keep[p] = True
                        if reveal is not None:
                            reveal(p)
        else:
            keep = None
        rows: list[int] = []
        stack = list(reversed(self._roots))
        expanded = self.expanded
        children = self._kids
        while stack:
            i = stack.pop()
            if keep is not None and not keep[i]:
                continue
            rows.append(i)
            if i in expanded and children[i]:
                stack.extend(reversed(children[i]))
        self.rows = rows
        self._row_of = {layer: r for r, layer in enumerate(rows)}

    def set_sort(self, column: Optional[str]) -> None:
        """Order siblings by their subtree's worst value in ``column`` (worst first), or by
        execution order (None)."""
        self.sort = column
        if column is None:
            self._kids, self._roots = self.children, self.roots
        else:
            col = FAIL_COLUMNS.index(column)

            def key(i: int) -> tuple:
                v = self.rolled[i][col]
                return (v is None, -(v if v is not None and v == v else math.inf), i)

            self._kids = [sorted(kids, key=key) for kids in self.children]
            self._roots = sorted(self.roots, key=key)
        self.rebuild()

    def values_fails(self, i: int) -> tuple[Values, Fails]:
        """Values shown for layer ``i`` and the engine's pass/fail for them."""
        values, rolled = self.values(i)
        return values, (self.rolled_fails[i] if rolled else self.own_fails[i])

    def search(self, text: str, after: Optional[int], direction: int = 1) -> Optional[int]:
        """The next (``direction`` 1) or previous (-1) layer, in execution order, whose module
        or class name contains ``text``, starting after layer ``after``; wraps around."""
        text = text.strip().lower()
        if not text:
            return None
        order = self.order
        n = len(order)
        if not n:
            return None
        pos = {layer: k for k, layer in enumerate(order)}
        start = pos[after] if after in pos else (-1 if direction > 0 else n)
        for step in range(1, n + 1):
            layer = order[(start + direction * step) % n]
            if text in self.layers[layer].module.lower() or text in self.layers[layer].cls.lower():
                return layer
        return None

    def row_of(self, i: int) -> Optional[int]:
        return self._row_of.get(i)

    def values(self, i: int) -> tuple[Values, bool]:
        """Values shown for layer ``i`` and whether they are rolled up (collapsed container)."""
        if self.children[i] and (i not in self.expanded or self.own[i] == (None, None, None, None)):
            return self.rolled[i], True
        return self.own[i], False

    # -- expand / collapse ---------------------------------------------------
    def expand(self, i: int) -> bool:
        if self.children[i] and i not in self.expanded:
            self.expanded.add(i)
            self.rebuild()
            return True
        return False

    def collapse(self, i: int) -> bool:
        if self.children[i] and i in self.expanded:
            self.expanded.discard(i)
            self.rebuild()
            return True
        return False

    def toggle(self, i: int) -> bool:
        return self.collapse(i) if i in self.expanded else self.expand(i)

    def expand_all(self) -> None:
        self.expanded = {i for i in range(len(self.layers)) if self.children[i]}
        self.rebuild()

    def collapse_all(self) -> None:
        """Collapse everything below the top level (roots stay open)."""
        self.expanded = {r for r in self.roots if self.children[r]}
        self.rebuild()

    def reveal(self, i: int) -> None:
        """Expand the ancestors of ``i`` (and drop filters hiding it) so it gets a row."""
        changed = False
        for a in self.ancestors(i):
            if a not in self.expanded:
                self.expanded.add(a)
                changed = True
        if self.filtering and not self.matches(i):
            self.filter_text, self.only_drift = "", False
            changed = True
        if changed or self.row_of(i) is None:
            self.rebuild()

    # -- state kept across results (reruns, partial results) --------------------
    def state(self) -> dict:
        return {
            "collapsed": {key_of(self.layers[i]) for i in range(len(self.layers))
                          if self.children[i] and i not in self.expanded},
            "filter_text": self.filter_text,
            "only_drift": self.only_drift,
            "sort": self.sort,
        }

    def restore(self, state: dict) -> None:
        collapsed = state.get("collapsed", set())
        self.expanded = {i for i in range(len(self.layers))
                         if self.children[i] and key_of(self.layers[i]) not in collapsed}
        self.filter_text = state.get("filter_text", "")
        self.only_drift = state.get("only_drift", False)
        self.set_sort(state.get("sort"))

    def index_of_key(self, key: Key) -> Optional[int]:
        for i, layer in enumerate(self.layers):
            if key_of(layer) == key:
                return i
        return None
