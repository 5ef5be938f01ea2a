"""The detail screens at 80x24 (issue 23, items 3 and 4): the layer detail shows one block per
initializer (no name wrapped every 9 characters, no number cut mid-digit); the step detail shows
opt_levels as a level x metric table and each finding's local error before -> after and patch."""
from __future__ import annotations

import io
import re
from collections import Counter

import pytest

from drifttui.tui.app import DriftApp
from drifttui.tui.evidence import fmt
from drifttui.tui.layer_view import _num


async def _text(result, *keys) -> list[str]:
    app = DriftApp(None, result=result)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press(*keys)
        await pilot.pause()
        return app.screen.text.splitlines()


async def test_layer_detail_initializers_one_block_each(result):
    origin = result.layers[result.drift_origin.layer]
    lines = await _text(result, "enter")
    stripped = [line.strip() for line in lines]
    for init in origin.initializers:
        assert init.name in stripped                      # the full name, on a line of its own
        stats = next(line for line in stripped if line.startswith(f"min {_num(init.min)} "))
        for label, value in (("max", init.max), ("mean", init.mean), ("std", init.std)):
            assert f"{label} {_num(value)}" in stats      # every number whole, on one line


async def test_step_detail_opt_levels_table_and_finding_verification(result):
    step = next(s for s in result.steps if s.step == 3)
    levels = step.evidence["opt_levels"]["levels"]
    lines = [" ".join(line.split()) for line in await _text(result, "3", "s")]
    header = next(line for line in lines if line.startswith("level "))
    assert "final_max_abs" in header and "nodes" in header and "origin_max_abs" in header
    for level, row in levels.items():                    # one row per level, one column per metric
        assert any(line.startswith(f"{level} {fmt(row['final_max_abs'])}") and f" {row['nodes']} " in f" {line} "
                   for line in lines), level
    headline = result.findings[0]
    want = f"local before → after {fmt(headline.local_before)} → {fmt(headline.local_after)}"
    assert want in lines
    assert any(line.startswith("patch op: replace_initializer") for line in lines)
    assert any("[ms.FusedConv," in line for line in lines)    # brackets are text, not markup


async def test_step_detail_keeps_op_names_whole_at_80_columns(result):
    """(fourth pass) the levels table folded ``com.microsoft.nchwc.C|onv`` mid-word: every op name
    of the evidence is on one line, its contrib domain shortened (``ms.nchwc.Conv``)."""
    from drifttui.tui.evidence import short_ops

    finding = next(f for f in result.findings if f.evidence.get("fused_op_types"))
    ops = set(finding.evidence["fused_op_types"])
    assert any(op.startswith("com.microsoft.") for op in ops)
    names = ops | {short_ops(op) for op in ops}
    lines = await _text(result, "3", "s")
    for line in lines:
        for word in line.replace(",", " ").replace("[", " ").replace("]", " ").split():
            if "microsoft" in word or "nchwc" in word or word.startswith("ms."):
                assert word in names, (word, line)
    text = "\n".join(lines)
    for op in ops:
        assert short_ops(op) in text and len(short_ops(op)) < len(op)


def _words(text: str) -> Counter:
    return Counter(re.findall(r"[^\s,\[\]]+", text))


@pytest.mark.parametrize("name", ["resnet18-bf16", "transformer-ln-eps", "root-drift"])
@pytest.mark.parametrize("step", ["3", "6"])
async def test_step_detail_long_tables_are_not_cut_at_80_columns(name, step):
    """(fifth pass) a records table wider than 80 columns was cropped at its right edge: the fusion
    levels' new_op_types ended in ``ms.nchwc.ReorderOutpu``.  At 80x24 every word the step detail
    shows at 1000 columns is on screen whole, as often; a table too wide is one block per row."""
    from rich.console import Console

    from drifttui.tui.step_view import render_step
    from tests.tui.replay import load_fixture

    result = load_fixture(name)
    wide = Console(width=1000, record=True, color_system=None, file=io.StringIO())
    wide.print(render_step(next(s for s in result.steps if str(s.step) == step), result))
    app = DriftApp(None, result=result)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press(step, "s")
        await pilot.pause()
        text, drawn = app.screen.text, app.screen.query_one("#detail-body").content_region.width
    assert 70 <= drawn < 80 and max(len(line.rstrip()) for line in text.splitlines()) <= drawn
    want, got = _words(wide.export_text()), _words(text)
    lost = {w for w in want if got[w] < want[w]}
    assert lost <= {"key", "level"}, lost          # headers of a table shown as blocks (each block names its key)
    if "fused_op_types" in wide.export_text() and "ms.nchwc.ReorderOutput" in wide.export_text():
        assert "one block per row: the table is wider than the screen" in text
