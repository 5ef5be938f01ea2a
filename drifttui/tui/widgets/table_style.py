"""The layer table's words and widths: status texts and styles (dark, light, NO_COLOR), the
origin marker, and the column widths for a table width (each text column as wide as its
content needs)."""
from __future__ import annotations

from rich.style import Style

from drifttui.core.result import DRIFT, FUSED, INHERITED, NOT_EXPORTED, OK, UNATTRIBUTED, UNMAPPED
from drifttui.tui.heat import CELL_WIDTH, COLUMNS
from drifttui.tui.tree import ROOT_NAME

ORIGIN_MARK = "◆"
HOLDS_ORIGIN_MARK = "◇"      # a collapsed module with the origin inside (it showed no mark at all)
STATUS_TEXT = {OK: "ok", DRIFT: "drift", INHERITED: "inherited", FUSED: "fused",
               NOT_EXPORTED: "not exported", UNMAPPED: "unmapped", UNATTRIBUTED: "unattributed"}
STATUS_SHORT = {NOT_EXPORTED: "not exp.", UNATTRIBUTED: "unattrib."}
STATUS_STYLES = {
    OK: Style(color="#5fb36b"), DRIFT: Style(color="#e8503a", bold=True),
    INHERITED: Style(color="#f0a030"), FUSED: Style(color="#6aa0d8", italic=True),
    NOT_EXPORTED: Style(color="#8a8a8a", italic=True), UNMAPPED: Style(color="#b07ad8", italic=True),
    UNATTRIBUTED: Style(color="#f0a030", bold=True, underline=True),
}
LIGHT_STATUS_STYLES = {      # the same hues, dark enough for the light theme's background
    OK: Style(color="#2f7a3d"), DRIFT: Style(color="#b3200f", bold=True),
    INHERITED: Style(color="#a35400"), FUSED: Style(color="#2d5f99", italic=True),
    NOT_EXPORTED: Style(color="#5c5c5c", italic=True), UNMAPPED: Style(color="#7a3fa3", italic=True),
    UNATTRIBUTED: Style(color="#a35400", bold=True, underline=True),
}
NO_COLOR_STATUS = {DRIFT: Style(bold=True, reverse=True), UNATTRIBUTED: Style(bold=True, underline=True),
                   INHERITED: Style(bold=True)}
SORT_LABEL = {"local": "local", "max_abs": "abs", "cos": "1-cos"}


def origin_style(no_color: bool) -> Style:
    """The ◆ origin marker: magenta, or bold and reversed without colour (a colour-less magenta
    is bright black on bright black in xterm's palette)."""
    return Style(bold=True, reverse=True) if no_color else Style(color="#ff3d9a", bold=True)


def origin_style_for(no_color: bool, light: bool) -> Style:
    return Style(color="#b0006a", bold=True) if light and not no_color else origin_style(no_color)


def _fit(text: str, width: int) -> str:
    if width <= 0:
        return ""
    if len(text) > width:
        return text[: max(0, width - 1)] + "…"
    return text.ljust(width)


class Columns:
    """Column widths for one table width: each text column as wide as its longest entry needs
    (``needs``: module, class, onnx ops), the module first, then the class, then the ONNX op
    types (from 100 columns); what is left stays blank at the right."""

    def __init__(self, width: int, needs: tuple[int, int, int] = (24, 14, 16)) -> None:
        self.width = width
        name_w, cls_w, ops_w = needs
        heat = len(COLUMNS) * (CELL_WIDTH + 1)
        wide = width + 1 >= 100          # + the scroll track's column: the table's own width
        self.status = 12 if wide else 9
        rest = width - 1 - heat - (self.status + 1)
        self.module = max(8, min(name_w, rest - 12 if rest >= 32 else rest))
        rest -= self.module
        self.cls = min(cls_w, rest - 1) if rest - 1 >= 8 else 0
        rest -= self.cls + (1 if self.cls else 0)
        self.ops = min(ops_w, rest - 1) if wide and rest - 1 >= 8 else 0


def column_needs(layers) -> tuple[int, int, int]:
    """The widths the module (indent, fold mark and name), class and onnx-ops columns need."""
    name_w, cls_w, ops_w = 8, 5, 8
    for layer in layers:
        name = layer.module.rsplit(".", 1)[-1] if layer.module else ROOT_NAME
        name_w = max(name_w, 2 * min(layer.depth, 12) + 2 + len(name) + (len(f"#{layer.call}") if layer.call else 0))
        cls_w = max(cls_w, len(layer.cls))
        ops_w = max(ops_w, len(",".join(dict.fromkeys(layer.op_types))))
    return name_w, min(cls_w, 24), min(ops_w, 120)
