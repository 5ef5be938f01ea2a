"""The error profile (issue 35 item 1) on results recorded from the real engine: where the error
starts and grows, in the text report and above the TUI's table, readable without colour."""
from __future__ import annotations

import dataclasses

from drifttui.report.profile import BARS, ORIGIN, points, profile_line, strip
from drifttui.tui.app import DriftApp
from drifttui.tui.widgets.profile import ProfileStrip

from .replay import load_fixture


def test_the_profile_jumps_over_the_line_at_the_origin():
    for name, origin in (("transformer-ln-eps", "layers.1.norm2"), ("resnet18-bf16", "layer3.1.bn1")):
        result = load_fixture(name)
        pts = points(result)
        k = next(i for i, p in enumerate(pts) if p.origin)
        assert pts[k].layer.module == origin
        assert all(not p.over for p in pts[:k])                   # before it: within
        assert all(p.level <= 3 for p in pts[:k]) and pts[k].level >= 4
        line = strip(pts)
        assert line.count(ORIGIN) == 1 and line.index(ORIGIN) == k
        assert set(line[:k]) <= set(BARS[:4]) and set(line[k + 1:]) <= set(BARS[4:])


def test_containers_are_not_drawn_and_a_long_model_is_pooled():
    result = load_fixture("resnet18-bf16")
    parents = {L.parent for L in result.layers}
    assert all(p.layer.index not in parents or p.origin for p in points(result))
    line = strip(points(result), 10)
    assert len(line) == 10 and ORIGIN in line


def test_a_clean_result_has_no_origin_and_every_bar_within():
    result = load_fixture("resnet18")
    line = profile_line(result)
    bars = line.split()[1]
    assert ORIGIN not in bars and set(bars) <= set(BARS[:4])


async def test_the_tui_shows_the_profile_above_the_table_and_without_colour(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    result = load_fixture("transformer-ln-eps")
    app = DriftApp(None, result=result)
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        strip_widget = app.query_one(ProfileStrip)
        text = strip_widget.render_text()
        assert text.plain.startswith("profile ") and ORIGIN in text.plain
        assert strip_widget.region.y < app.table.region.y                  # above the table
        assert all(not span.style or "#" not in str(span.style) for span in text.spans)   # no colour
        assert text.cell_len <= 58


def test_a_partial_result_draws_what_it_has():
    result = load_fixture("resnet18-bf16", partial=True)
    assert profile_line(result)
    empty = dataclasses.replace(result, layers=[])
    assert profile_line(empty) == ""


def test_the_drill_down_of_a_layer_within_its_budget_shows_no_hot_channel():
    """A reduced-precision layer is judged against its budget, not atol (issue 35 item 5)."""
    from drifttui.core.result.precision import LayerBudget
    from drifttui.tui.drill_view import render_drill
    from drifttui.tui.heat import GLYPHS

    result = load_fixture("resnet18-bf16")
    origin = result.layers[result.drift_origin.layer]
    m = origin.metrics
    scale = m.max_abs.worst / m.max_rel.worst
    roomy = LayerBudget("int8", own_budget=1.0, out_budget=10 * m.max_abs.worst / scale, depth=1)
    within = dataclasses.replace(origin, budget=roomy)
    from rich.console import Console

    def shown(layer):
        console = Console(width=100, record=True, file=open("/dev/null", "w"))
        console.print(render_drill(result, layer, layer.channels, width=100))
        return console.export_text()

    text = shown(within)
    strip_line = next(line for line in text.splitlines() if line.strip().startswith("0 "))
    assert "against its precision budget" in text
    assert GLYPHS[4] not in strip_line and GLYPHS[3] not in strip_line      # nothing hot
    hot = shown(origin)                                                       # float32: the tolerance
    assert "against its tolerance" in hot and GLYPHS[4] in next(
        line for line in hot.splitlines() if line.strip().startswith("0 "))
    assert "Per sample: 3 of 8 samples" in text and "compared on sample 0 and the worst outputs" in text
