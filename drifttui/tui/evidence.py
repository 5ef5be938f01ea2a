"""Step evidence and finding patches as readable tables (never a Python repr, never cut).

``evidence_renderable(evidence)`` turns the engine's plain-data dicts into Rich tables:
scalars become a key/value table; a list of records (dicts) becomes a table with one column
per key; a dict of records becomes a table keyed by the outer key.  Cells fold, so long
values wrap instead of ending in ``…``; every cell is a ``Text`` (a value is never read as markup).
A records table whose columns cannot fit the width without cutting a word (at 80 columns the
fusion levels' ``new_op_types`` ended in ``ms.nchwc.ReorderOutpu``) is shown one block per
record instead, with a line saying so (``Fitted``).
"""
from __future__ import annotations

import re
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderResult, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text


def fmt(value: Any) -> str:
    """One value, in full: 4 significant digits for floats, lists joined, dicts as k: v."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value != value:
            return "nan"
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, dict) for v in value):
            return "; ".join(fmt(v) for v in value)
        return "[" + ", ".join(fmt(v) for v in value) + "]"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {fmt(v)}" for k, v in value.items())
    return str(value)


def _is_records(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _is_record_map(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and all(isinstance(v, dict) for v in value.values())


def _columns(records: list[dict]) -> list[str]:
    cols: dict[str, None] = {}
    for r in records:
        cols.update(dict.fromkeys(r))
    return list(cols)


MS_DOMAIN = re.compile(r"\bcom\.microsoft\.")
WORD_MAX = 28       # a column is never narrower than its longest word, up to this many cells


def short_ops(text: str) -> str:
    """ONNX Runtime's contrib domain shortened in a table cell: ``com.microsoft.nchwc.Conv`` is
    ``ms.nchwc.Conv`` (at 80 columns it was folded mid-word, ``com.microsoft.nchwc.C|onv``)."""
    return MS_DOMAIN.sub("ms.", text)


def add_row(table: Table, *cells: "str | Text") -> None:
    """The one place evidence text enters a table: as plain Text, never as Rich markup (a list
    printed as "[a, b]" or a node name with brackets is text, not a style tag).  Each column
    keeps its longest word whole (up to ``WORD_MAX``): it wraps between op names, not inside one."""
    texts = [c if isinstance(c, Text) else Text(short_ops(str(c))) for c in cells]
    for column, text in zip(table.columns, texts):
        longest = max((len(w) for w in text.plain.split()), default=0)
        column.min_width = max(column.min_width or 0, min(longest, WORD_MAX))
    table.add_row(*texts)


def _table(headers: list[str]) -> Table:
    table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold", expand=False)
    for h in headers:
        table.add_column(h, overflow="fold")
    return table


WIDE = 5       # records with more fields than this are shown one block per record


def records_blocks(records: list[dict], key: str = "") -> RenderableType:
    parts: list[RenderableType] = []
    for n, r in enumerate(records, 1):
        label = fmt(r["__key__"]) if key else f"#{n}"
        table = _table(["", ""])
        table.show_header = False
        for k, v in r.items():
            if k != "__key__":
                add_row(table, Text(str(k), style="dim"), fmt(v))
        parts.append(Text(f"  {label}", style="italic"))
        parts.append(table)
    return Group(*parts)


def min_width(table: Table) -> int:
    """The narrowest ``table`` is without cutting a word: per column its longest word (``add_row``'s
    min_width, the header's) and its padding.  Rich crops a table that needs more."""
    pad = table.padding[1] + table.padding[3]
    return sum(max(c.min_width or 0, max((len(w) for w in str(c.header).split()), default=0)) + pad
               for c in table.columns)


class Fitted:
    """A records table where its columns fit the width it is drawn at; one block per record, under
    a line saying why, where they do not (the width is known only when drawn: the TUI's is the
    terminal's)."""

    def __init__(self, records: list[dict], key: str, table: Table) -> None:
        self.records, self.key, self.table = records, key, table

    def _choice(self, width: int) -> RenderableType:
        if min_width(self.table) <= width:
            return self.table
        return Group(Text("  one block per row: the table is wider than the screen", style="dim"),
                     records_blocks(self.records, self.key))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self._choice(options.max_width)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self._choice(options.max_width))


def records_table(records: list[dict], key: str = "") -> RenderableType:
    cols = [c for c in _columns(records) if c != "__key__"]
    if len(cols) > WIDE:
        return records_blocks(records, key)
    table = _table(([key] if key else []) + cols)
    for r in records:
        add_row(table, *([fmt(r.get("__key__"))] if key else []), *[fmt(r.get(c)) for c in cols])
    return Fitted(records, key, table)


def _nested(value: dict[str, Any]) -> list[RenderableType]:
    """A dict inside the evidence: its scalars as key/value rows, its record maps and record
    lists as tables of their own (step 3's ``opt_levels.levels``: one row per ORT level, one
    column per metric), never one comma-joined paragraph."""
    inner = _table(["key", "value"])
    tables: list[RenderableType] = []
    for k, v in value.items():
        if _is_record_map(v):
            tables += [Text(f"  {k}", style="italic"), records_table([{"__key__": kk, **vv} for kk, vv in v.items()],
                                                                    key=str(k).rstrip("s") or "key")]
        elif _is_records(v):
            tables += [Text(f"  {k} ({len(v)})", style="italic"), records_table(v)]
        else:
            add_row(inner, str(k), fmt(v) if v != [] else "none")
    return ([inner] if inner.row_count else []) + tables


def evidence_renderable(evidence: dict[str, Any], empty: str = "no evidence recorded") -> RenderableType:
    if not evidence:
        return Text(empty, style="dim")
    parts: list[RenderableType] = []
    scalars = _table(["key", "value"])
    has_scalars = False
    for name, value in evidence.items():
        if _is_records(value):
            parts.append(Text(f"{name} ({len(value)})", style="bold"))
            parts.append(records_table(value))
        elif _is_record_map(value):
            parts.append(Text(name, style="bold"))
            parts.append(records_table([{"__key__": k, **v} for k, v in value.items()], key="key"))
        elif isinstance(value, dict) and value:
            parts.append(Text(name, style="bold"))
            parts += _nested(value)
        else:
            add_row(scalars, str(name), fmt(value) if value != [] else "none")
            has_scalars = True
    if has_scalars:
        parts.insert(0, scalars)
    return Group(*parts)
