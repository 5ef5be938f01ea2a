"""Heat scale: bands around the tolerance, glyph and number readable without colour."""
from __future__ import annotations

import math

from drifttui.core.result import Tolerance
from drifttui.tui.heat import CELL_WIDTH, EMPTY_CELL, GLYPHS, band, fmt_value, heat_cell, thresholds


def test_bands_are_log_scale_around_threshold():
    assert band(1e-9, 1e-4) == 0
    assert band(5e-6, 1e-4) == 1
    assert band(5e-5, 1e-4) == 2
    assert band(5e-4, 1e-4) == 3
    assert band(5e-3, 1e-4) == 4
    assert band(1.0, 1e-4) == 5
    assert band(math.nan, 1e-4) == 5 and band(math.inf, 1e-4) == 5


def test_cells_have_fixed_width_glyph_and_number():
    for v in (0.0, 1e-12, 3.1e-2, 12.0, 1e-120, math.nan, math.inf):
        text, _ = heat_cell(v, 1e-4)
        assert len(text) == CELL_WIDTH, (v, text)
    text, style = heat_cell(3.1e-2, 1e-4)
    assert text == GLYPHS[5] + "3e-02" and style.bold
    assert heat_cell(None, 1e-4)[0] == EMPTY_CELL
    assert fmt_value(0.0).strip() == "0"


def test_thresholds_per_column():
    th = thresholds(Tolerance(1e-3, 1e-2))
    assert th["max_abs"] == 1e-3 and th["local"] == 1e-3 and th["max_rel"] == 1e-2
    assert math.isclose(th["cos"], 5e-5)
    assert thresholds(Tolerance(1e-4, 1e-4))["cos"] == 1e-6   # float32 floor
