"""The layer tree as pure data: parent/children, roll-ups, expand/collapse, filters and
the flattened list of visible rows.  No Textual here, so it is tested without a UI.

Rows are layer indices.  ``rebuild()`` recomputes ``rows`` (the visible layers, in
execution order) in O(number of layers); everything per-row is O(1) after that.
"""
from __future__ import annotations

import math
from typing import Iterable, Optional, Sequence

from drifttui.core.result import DRIFT, INHERITED, Layer

DRIFTING = (DRIFT, INHERITED)
Values = tuple[Optional[float], Optional[float], Optional[float], Optional[float]]
Key = tuple[str, int]


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
        self.has_drift: list[bool] = [l.status in DRIFTING for l in self.layers]
        for i in reversed(self.order):          # children before parents
            p = self.parent[i]
            if p is not None:
                a, b = self.rolled[p], self.rolled[i]
                self.rolled[p] = tuple(_worst(x, y) for x, y in zip(a, b))  # type: ignore[assignment]
                self.has_drift[p] = self.has_drift[p] or self.has_drift[i]
        self.expanded: set[int] = {i for i in range(n) if self.children[i]}
        self.filter_text = ""
        self.only_drift = False
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
        layer = self.layers[i]
        if self.only_drift and layer.status not in DRIFTING:
            return False
        if self.filter_text:
            text = self.filter_text.lower()
            return text in layer.module.lower() or text in layer.cls.lower()
        return True

    def set_filter(self, text: str | None = None, only_drift: bool | None = None) -> None:
        if text is not None:
            self.filter_text = text.strip()
        if only_drift is not None:
            self.only_drift = only_drift
        self.rebuild(reveal_matches=True)

    # -- rows ----------------------------------------------------------------
    def rebuild(self, reveal_matches: bool = False) -> None:
        n = len(self.layers)
        if self.filtering:
            keep = [self.matches(i) for i in range(n)]
            for i in reversed(self.order):
                p = self.parent[i]
                if keep[i] and p is not None and not keep[p]:
                    keep[p] = True
                    if reveal_matches:
                        self.expanded.add(p)
                elif keep[i] and p is not None and reveal_matches:
                    self.expanded.add(p)
        else:
            keep = None
        rows: list[int] = []
        stack = list(reversed(self.roots))
        expanded = self.expanded
        children = self.children
        while stack:
            i = stack.pop()
            if keep is not None and not keep[i]:
                continue
            rows.append(i)
            if i in expanded and children[i]:
                stack.extend(reversed(children[i]))
        self.rows = rows
        self._row_of = {layer: r for r, layer in enumerate(rows)}

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
        }

    def restore(self, state: dict) -> None:
        collapsed = state.get("collapsed", set())
        self.expanded = {i for i in range(len(self.layers))
                         if self.children[i] and key_of(self.layers[i]) not in collapsed}
        self.filter_text = state.get("filter_text", "")
        self.only_drift = state.get("only_drift", False)
        self.rebuild()

    def index_of_key(self, key: Key) -> Optional[int]:
        for i, layer in enumerate(self.layers):
            if key_of(layer) == key:
                return i
        return None
