"""Heat scale for error cells: colour on a log scale around the tolerance, plus a glyph
and a number so that a cell reads without colour (16-colour terminals, screenshots
printed in grey, colour-blind readers).

A value is compared with its threshold (``ratio = value / threshold``) and falls in one
of six bands; each band has a ramp glyph (`` ``, ``░``, ``▒``, ``▓``, ``█``, ``█``) and a
colour.  Bands 0-2 are within the tolerance, 3-5 fail it (shown bold).
"""
from __future__ import annotations

import math
from typing import Optional

from rich.style import Style

from drifttui.core.result import Tolerance

# upper ratio bound of each band (the last one is open)
BAND_BOUNDS = (1e-2, 1e-1, 1.0, 10.0, 100.0)
GLYPHS = (" ", "░", "▒", "▓", "█", "█")
COLOURS = ("#4e8a5a", "#5fb36b", "#a8c256", "#f0a030", "#e8503a", "#ff3d9a")
BAND_STYLES = tuple(
    Style(color=c, bold=i >= 3) for i, c in enumerate(COLOURS)
)
# the light theme: the same ramp, dark enough to read on a white background and on the cursor row
LIGHT_COLOURS = ("#35603e", "#2a6e37", "#4c5900", "#8f4a00", "#a01c0d", "#93004f")
LIGHT_BAND_STYLES = tuple(Style(color=c, bold=i >= 3) for i, c in enumerate(LIGHT_COLOURS))
EMPTY_STYLE = Style(dim=True)
CELL_WIDTH = 6          # glyph + "3e-02"
EMPTY_CELL = "   ·  "

COS_NOISE = 1e-6       # float32 resolution of 1 - cosine

COLUMNS = ("max_abs", "max_rel", "local", "cos")
COLUMN_TITLES = {"max_abs": "abs", "max_rel": "rel", "local": "local", "cos": "1-cos"}


def thresholds(tol: Tolerance) -> dict[str, float]:
    """Threshold per heat column: atol for absolute errors, rtol for relative ones and
    rtol²/2 for 1-cosine (1 - cos ≈ rel²/2 for a small relative error), floored at
    COS_NOISE: a cosine computed in float32 is not resolved below ~1e-6."""
    atol = tol.atol if tol.atol > 0 else 1e-12
    rtol = tol.rtol if tol.rtol > 0 else 1e-12
    return {"max_abs": atol, "max_rel": rtol, "local": atol, "cos": max(rtol * rtol / 2, COS_NOISE)}


def band(value: float, threshold: float) -> int:
    """Band 0..5 of ``value`` against ``threshold`` (NaN and inf are the worst band)."""
    if value != value or math.isinf(value):
        return len(BAND_BOUNDS)
    if threshold <= 0:
        threshold = 1e-12
    ratio = abs(value) / threshold
    for i, bound in enumerate(BAND_BOUNDS):
        if ratio < bound:
            return i
    return len(BAND_BOUNDS)


def fmt_value(value: float) -> str:
    """Five characters: ``3e-02``, ``0e+00`` shown as ``    0``, ``  nan``."""
    if value != value:
        return "  nan"
    if math.isinf(value):
        return "  inf"
    if value == 0:
        return "    0"
    text = f"{abs(value):.0e}"
    if len(text) > 5:          # 1e-100 and beyond
        text = text[:1] + "e" + text[-3:]
    return text


FAIL_BAND = 3          # first band that fails the tolerance
NO_COLOR_FAIL = Style(bold=True, reverse=True)


def cell_style(b: int, fails: Optional[bool] = None, no_color: bool = False, light: bool = False) -> Style:
    """Style of a value in band ``b``.  ``fails`` is the engine's decision (Layer.fails); None
    (an old report without it) falls back to the band.  Without colour, failing values are
    bold and reversed: never fainter than passing ones.  ``light``: the light theme's ramp."""
    failing = b >= FAIL_BAND if fails is None else fails
    if no_color:
        return NO_COLOR_FAIL if failing else Style()
    styles = LIGHT_BAND_STYLES if light else BAND_STYLES
    if failing:
        return styles[max(b, FAIL_BAND)]
    return styles[min(b, FAIL_BAND - 1)]


def heat_cell(value: Optional[float], threshold: float, fails: Optional[bool] = None,
              no_color: bool = False, light: bool = False) -> tuple[str, Style]:
    """Text (CELL_WIDTH cells) and style of one heat cell; ``None`` is a dim dot."""
    if value is None:
        return EMPTY_CELL, EMPTY_STYLE
    b = band(value, threshold)
    # the engine's decision wins: the glyph never says "fails" where the engine says it passes
    # (the band is intensity only: its threshold is atol alone, the engine's rule atol + rtol * scale)
    if fails is False:
        b = min(b, FAIL_BAND - 1)
    elif fails is True:
        b = max(b, FAIL_BAND)
    return GLYPHS[b] + fmt_value(value), cell_style(b, fails, no_color, light)


def legend() -> list[tuple[str, Style]]:
    """(text, style) pairs explaining the bands, for the help screen."""
    names = ("<1% of tol", "<10%", "<tol", "<10x tol", "<100x", ">=100x")
    return [(f"{GLYPHS[i] if GLYPHS[i] != ' ' else '·'} {names[i]}", BAND_STYLES[i]) for i in range(6)]
