"""SVG snapshots (pytest-textual-snapshot). Regenerate with ``--snapshot-update``.

Results are synthetic with frozen timings, so the pictures are deterministic.
"""
from __future__ import annotations

from drifttui.testing.synthetic import synthetic_result
from drifttui.tui.app import DriftApp

from .conftest import CONFIG, FakeEngine


def make_app() -> DriftApp:
    return DriftApp(FakeEngine(), result=synthetic_result(60, config=CONFIG))


def test_main_80x24(snap_compare):
    assert snap_compare(make_app(), terminal_size=(80, 24))


def test_main_120x40(snap_compare):
    assert snap_compare(make_app(), terminal_size=(120, 40))


def test_step_view(snap_compare):
    assert snap_compare(make_app(), terminal_size=(120, 40), press=["3"])


def test_inspector_initializers(snap_compare):
    app = make_app()

    async def run_before(pilot) -> None:
        attn = next(l.index for l in app.table.result.layers if l.module.endswith("block2.attn"))
        app.table.go_to_layer(attn)
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_help(snap_compare):
    assert snap_compare(make_app(), terminal_size=(100, 40), press=["question_mark"])


def test_filtered_only_drift_80x24(snap_compare):
    assert snap_compare(make_app(), terminal_size=(80, 24), press=["f", "C"])
